// Shared loader for the USE-Lite oracle: @tensorflow/tfjs (pure JS "cpu"
// backend) runs the TF.js graph model straight from the shared data dir, and
// @energetic-ai/embeddings' own EmbeddingsModel (tokenizer + embed()) drives
// it. @energetic-ai/embeddings require()s "@energetic-ai/core", which is
// tfjs-core + tfjs-converter + the WASM backend bundled (tfjs 4.5.0); here
// that require is pointed at @tensorflow/tfjs instead, so embed()'s code runs
// unchanged on the CPU backend (embed() only uses tensor2d, tensor1d,
// util.flatten and the model's executeAsync). selfcheck.mjs runs the
// unmodified core package in a child process as a cross-check.
import fs from 'node:fs';
import path from 'node:path';
import Module, { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const origResolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request === '@energetic-ai/core') request = '@tensorflow/tfjs';
  return origResolve.call(this, request, ...rest);
};

export const tf = require('@tensorflow/tfjs');
export const { EmbeddingsModel } = require('@energetic-ai/embeddings');

export const MODEL_FILES = ['model.json', 'vocab.json',
  ...Array.from({ length: 7 }, (_, i) => `group1-shard${i + 1}of7`)];

export function pkgVersion(name) {
  return JSON.parse(fs.readFileSync(
    new URL(`./node_modules/${name}/package.json`, import.meta.url))).version;
}

// Model artifacts for tf.io.fromMemory: topology + all shards concatenated
// in manifest order (which is how tfjs' own loaders lay out weightData).
export function readArtifacts(modelDir) {
  const mj = JSON.parse(fs.readFileSync(path.join(modelDir, 'model.json'), 'utf8'));
  const weightSpecs = mj.weightsManifest.flatMap((g) => g.weights);
  const buf = Buffer.concat(mj.weightsManifest.flatMap(
    (g) => g.paths.map((p) => fs.readFileSync(path.join(modelDir, p)))));
  const weightData = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length);
  return { modelTopology: mj.modelTopology, weightSpecs, weightData };
}

export async function loadUseLite(modelDir) {
  await tf.setBackend('cpu');
  await tf.ready();
  if (tf.getBackend() !== 'cpu') throw new Error(`backend is ${tf.getBackend()}, not cpu`);
  const model = await tf.loadGraphModel(tf.io.fromMemory(readArtifacts(modelDir)));
  const vocabulary = JSON.parse(fs.readFileSync(path.join(modelDir, 'vocab.json'), 'utf8'));
  const em = new EmbeddingsModel({ vocabulary, model });
  return { tf, model, vocabulary, em };
}

// The graph inputs exactly as EmbeddingsModel.embed() builds them: sparse
// COO indices [[row, position], ...] (int32, row-major, positions from 0)
// and values = the token ids, no BOS/EOS, no truncation on the JS side.
export function sparseInputs(encodings) {
  const idx = [];
  encodings.forEach((ids, i) => ids.forEach((_, j) => idx.push([i, j])));
  return {
    indices: tf.tensor2d(idx, [idx.length, 2], 'int32'),
    values: tf.tensor1d(encodings.flat(), 'int32'),
  };
}

// STS-B original test split: sentence1 (6th field) of the first n lines.
// Lines split on '\n', one trailing '\r' stripped, empty lines skipped.
export function stsLines(dataDir) {
  const text = fs.readFileSync(
    path.join(dataDir, 'stsb-glue/original/sts-test.tsv'), 'utf8');
  const out = [];
  for (const raw of text.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line === '') continue;
    const f = line.split('\t');
    if (f.length < 7) throw new Error(`sts-test.tsv: a line has only ${f.length} fields`);
    out.push([f[5], f[6]]);
  }
  return out;
}
