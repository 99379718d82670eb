// Golden ids of the ModernBERT-shaped fixture tokenizer (byte-level BPE with a
// TemplateProcessing post-processor; tests/tokenizer/gen_modernbert_fixture.py)
// for squint's parity test (test_modernbert_parity.c): transformers.js reads
// <tokenizer-dir>/tokenizer.json (local files only) and encodes every text
// WITH its special tokens ([CLS] ... [SEP]), and the pairs untruncated
// ([CLS] a [SEP] b [SEP] with token types) for gen_modernbert_pairs.py, which
// adds Hugging Face's longest_first truncation (tokenizers, Rust).
// Writes <out-dir>/modernbert.ids, modernbert.pairs.jsonl and
// modernbert.texts.jsonl (every text with its ids, for the Rust cross-check).
// Usage: node gen_modernbert_golden.mjs <shared-data-dir> <tokenizer-dir> <out-dir>
// Sentence extraction mirrors tests/tokenizer/sentences.c (tk_modernbert_sources);
// the pairs mirror test_modernbert_parity.c (make_pairs).
import fs from 'node:fs';
import path from 'node:path';
import { AutoTokenizer, env } from '@huggingface/transformers';

const [dataDir, tokDir, outDir] = process.argv.slice(2);
if (!dataDir || !tokDir || !outDir) {
  console.error('usage: node gen_modernbert_golden.mjs <shared-data-dir> <tokenizer-dir> <out-dir>');
  process.exit(2);
}
env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = path.dirname(path.resolve(tokDir)) + '/';

// Same order and rules as tk_modernbert_sources / rules / jsonl_rules in sentences.c.
const SOURCES = [
  ['stsb-glue/train.tsv', { columns: ['sentence1', 'sentence2'] }],
  ['stsb-glue/dev.tsv', { columns: ['sentence1', 'sentence2'] }],
  ['stsb-glue/test.tsv', { columns: ['sentence1', 'sentence2'] }],
  ['scifact/beir-format/queries.jsonl', { jsonl: ['text'], maxLines: 0 }],
  ['scifact/beir-format/corpus.jsonl', { jsonl: ['title', 'text'], maxLines: 1000 }],
  ['sst2-glue/dev.tsv', { columns: ['sentence'] }],
  ['squint:edge_strings.json', { json: true }],
  ['squint:modernbert_edge_strings.json', { json: true }],
];
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
  const lines = text.split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  const out = [];
  if (rule.jsonl) {
    let objects = 0;
    lines.forEach((raw, i) => {
      const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
      if (line === '' || (rule.maxLines && objects >= rule.maxLines)) return;
      objects++;
      const o = JSON.parse(line);
      for (const k of rule.jsonl) {
        if (typeof o[k] !== 'string') throw new Error(`${rel}: line ${i + 1} has no string "${k}"`);
        out.push(o[k]);
      }
    });
    return out;
  }
  let idx = null;
  lines.forEach((raw, i) => {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line === '') return;
    const f = line.split('\t');
    if (i === 0) {
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
const tok = await AutoTokenizer.from_pretrained(path.basename(path.resolve(tokDir)));

// tokenizers (Rust) runs ByteLevel's GPT-2 regex with Oniguruma, whose \s is
// Unicode White_Space (U+0085 in, U+FEFF out); JavaScript's \s differs.
// squint follows Rust, so the regex is rebuilt with Oniguruma's classes (as
// gen_qwen3_golden.mjs does); the texts this changes are listed.
const WS = '\\t-\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const rustGpt2 = GPT2.replaceAll('[^\\s\\p{L}\\p{N}]', `[^${WS}\\p{L}\\p{N}]`)
  .replaceAll('\\s', `[${WS}]`).replaceAll('\\S', `[^${WS}]`);
const pre = tok.pre_tokenizer;
if (!pre || pre.constructor.name !== 'ByteLevelPreTokenizer' || pre.pattern.source !== GPT2)
  throw new Error('modernbert fixture: the pre-tokenizer is not ByteLevel with the GPT-2 regex');
const jsPattern = pre.pattern;
const rustPattern = new RegExp(rustGpt2, 'gu');
const enc = (s) => {
  pre.pattern = rustPattern;
  const ids = tok.encode(s);
  pre.pattern = jsPattern;
  return ids;
};

const lines = [];
const textLines = [];
const bySource = {};
let count = 0, differ = 0;
for (const [rel, rule] of SOURCES) {
  const sentences = extract(fs.readFileSync(sourcePath(rel), 'utf8'), rule, rel);
  bySource[rel] = sentences;
  lines.push(`@ ${rel} ${sentences.length}`);
  sentences.forEach((s, k) => {
    const ids = enc(s).join(' ');
    if (tok.encode(s).join(' ') !== ids) {
      differ++;
      console.log(`  Rust classes change the ids of ${rel} text ${k + 1}: ${JSON.stringify(s)}`);
    }
    lines.push(ids);
    textLines.push(JSON.stringify({ text: s, ids }));
  });
  count += sentences.length;
}

// The pairs (make_pairs in test_modernbert_parity.c): STS-B dev rows, SciFact
// query k with corpus abstract k (k < 300), edge string i with edge string
// (7 i + 3) mod n; each with its max_length from a fixed cycle.
const STSB_LENS = [6, 8, 9, 12, 16, 17, 24, 33, 8192];
const SCI_LENS = [32, 33, 64, 127, 256, 8192];
const pairs = [];
const dev = bySource['stsb-glue/dev.tsv'];
for (let i = 0; 2 * i + 1 < dev.length; i++)
  pairs.push([dev[2 * i], dev[2 * i + 1], STSB_LENS[i % STSB_LENS.length]]);
const q = bySource['scifact/beir-format/queries.jsonl'];
const c = bySource['scifact/beir-format/corpus.jsonl'];
for (let k = 0; k < 300; k++)
  pairs.push([q[k], c[2 * k + 1], SCI_LENS[k % SCI_LENS.length]]);
const e = bySource['squint:modernbert_edge_strings.json'];
for (let i = 0; i < e.length; i++)
  pairs.push([e[i], e[(7 * i + 3) % e.length], 5 + (i % 20)]);
const pairLines = pairs.map(([a, b, maxLen]) => {
  pre.pattern = rustPattern;
  const r = tok(a, { text_pair: b, return_tensor: false, return_token_type_ids: true });
  pre.pattern = jsPattern;
  return JSON.stringify({ a, b, max_len: maxLen, ids: r.input_ids, types: r.token_type_ids });
});

console.log(`modernbert: ${differ} texts where transformers.js's own regex would give other ids`);
const header = `# squint ModernBERT-shaped byte-level BPE golden ids (add_special_tokens true): ` +
  `transformers.js ${version}, fixture tokenizer.json (gen_modernbert_fixture.py), ByteLevel regex with ` +
  `Oniguruma's \\s (${differ} texts differ from JS's own). Regenerate: tests/tokenizer/regen-modernbert-golden.sh\n`;
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, 'modernbert.ids'), header + lines.join('\n') + '\n');
fs.writeFileSync(path.join(outDir, 'modernbert.pairs.jsonl'), pairLines.join('\n') + '\n');
fs.writeFileSync(path.join(outDir, 'modernbert.texts.jsonl'), textLines.join('\n') + '\n');
console.log(`modernbert: ${count} texts, ${pairs.length} pairs; wrote ${outDir}`);
