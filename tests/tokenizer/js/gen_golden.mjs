// Golden WordPiece ids from transformers.js for squint's tokenizer parity test.
// Usage: node gen_golden.mjs <shared-data-dir> <out-dir>
// Sentence extraction mirrors tests/tokenizer/sentences.c exactly.
import fs from 'node:fs';
import path from 'node:path';
import { AutoTokenizer, env } from '@huggingface/transformers';

const [dataDir, outDir] = process.argv.slice(2);
if (!dataDir || !outDir) {
  console.error('usage: node gen_golden.mjs <shared-data-dir> <out-dir>');
  process.exit(2);
}

// Local files only: never reach for the Hugging Face hub.
env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = path.resolve(dataDir) + '/';

const MODELS = ['bge-small-en-v1.5', 'bge-base-en-v1.5', 'bge-large-en-v1.5'];

// [relative path, rule]: same order and rules as tk_sources / rules in sentences.c.
const SOURCES = [
  ['llamacpp-vocab-bge/ggml-vocab-bert-bge.gguf.inp', { ggml: true }],
  ['stsb-glue/train.tsv', { columns: ['sentence1', 'sentence2'] }],
  ['stsb-glue/dev.tsv', { columns: ['sentence1', 'sentence2'] }],
  ['stsb-glue/test.tsv', { columns: ['sentence1', 'sentence2'] }],
  ['stsb-glue/original/sts-train.tsv', { fields: [5, 6] }],
  ['stsb-glue/original/sts-dev.tsv', { fields: [5, 6] }],
  ['stsb-glue/original/sts-test.tsv', { fields: [5, 6] }],
  ['sst2-glue/dev.tsv', { columns: ['sentence'] }],
  ['squint:edge_strings.json', { json: true }],
];
// "squint:" sources live in tests/tokenizer/, everything else in the data dir.
const HERE = path.dirname(new URL(import.meta.url).pathname);
const sourcePath = (rel) => rel.startsWith('squint:')
  ? path.join(HERE, '..', rel.slice(7)) : path.join(dataDir, rel);

function extract(text, rule, rel) {
  if (rule.json) {
    const list = JSON.parse(text);
    if (!Array.isArray(list) || list.some((x) => typeof x !== 'string'))
      throw new Error(`${rel}: not a JSON array of strings`);
    return list;
  }
  if (rule.ggml) {
    const parts = text.split('\n__ggml_vocab_test__\n');
    if (parts.pop() !== '') throw new Error(`${rel}: text after the last separator`);
    return parts;
  }
  const out = [];
  let idx = rule.fields ?? null;
  const lines = text.split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  lines.forEach((raw, i) => {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line === '') return;
    const f = line.split('\t');
    if (rule.columns && i === 0) {
      idx = rule.columns.map((c) => {
        const k = f.lastIndexOf(c);
        if (k < 0) throw new Error(`${rel}: no column "${c}" in the header`);
        return k;
      });
      return;
    }
    for (const k of idx) {
      if (k >= f.length) throw new Error(`${rel}: line ${i + 1} has only ${f.length} fields`);
      out.push(f[k]);
    }
  });
  return out;
}

const version = JSON.parse(fs.readFileSync(
  new URL('./node_modules/@huggingface/transformers/package.json', import.meta.url))).version;

// tokenizers' Rust code (what sentence-transformers, TEI and the models'
// training ran) lowercases capital sigma per code point to U+03C3; JavaScript's
// toLowerCase applies Final_Sigma (U+03C2 at the end of a word). squint follows
// Rust, so the golden does too: U+03A3 -> U+03C3 before encoding (it has no
// decomposition, so this commutes with the rest of BertNormalizer).
const rustSigma = (s) => s.replaceAll('\u03A3', '\u03C3');

const results = {};
for (const model of MODELS) {
  const tok = await AutoTokenizer.from_pretrained(model);
  const lines = [];
  for (const [rel, rule] of SOURCES) {
    const text = fs.readFileSync(sourcePath(rel), 'utf8');
    const sentences = extract(text, rule, rel);
    lines.push(`@ ${rel} ${sentences.length}`);
    for (const s of sentences) lines.push(tok.encode(rustSigma(s)).join(' '));
  }
  results[model] = lines.join('\n') + '\n';
  console.log(`${model}: ${lines.length - SOURCES.length} sentences`);
}

// The bge tokenizer.json files differ only in the normalizer spelling; the
// ids must come out the same, so one golden file serves all three.
for (const model of MODELS.slice(1)) {
  if (results[model] !== results[MODELS[0]]) {
    console.error(`${model} gives different ids from ${MODELS[0]}: write separate golden files`);
    process.exit(1);
  }
}
const header = `# squint tokenizer golden ids (with [CLS]/[SEP], no truncation): transformers.js ${version}, ` +
  `tokenizer.json of ${MODELS.join(', ')} (identical ids). Regenerate: tests/tokenizer/regen-golden.sh\n`;
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, 'bge-en-v1.5.ids'), header + results[MODELS[0]]);
console.log(`wrote ${path.join(outDir, 'bge-en-v1.5.ids')}`);
