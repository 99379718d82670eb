// Golden byte-level BPE ids from transformers.js for squint's Qwen3 tokenizer
// parity test (test_qwen3_parity.c): the tokenizer.json of
// <shared-data>/qwen3-tokenizer, local files only, add_special_tokens false.
// Usage: node gen_qwen3_golden.mjs <shared-data-dir> <out-dir>
// Sentence extraction mirrors tests/tokenizer/sentences.c (tk_qwen3_sources).
import fs from 'node:fs';
import path from 'node:path';
import { AutoTokenizer, env } from '@huggingface/transformers';

const [dataDir, outDir] = process.argv.slice(2);
if (!dataDir || !outDir) {
  console.error('usage: node gen_qwen3_golden.mjs <shared-data-dir> <out-dir>');
  process.exit(2);
}
env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = path.resolve(dataDir) + '/';

// Same order and rules as tk_qwen3_sources / rules / jsonl_rules in sentences.c.
const SOURCES = [
  ['stsb-glue/train.tsv', { columns: ['sentence1', 'sentence2'] }],
  ['stsb-glue/dev.tsv', { columns: ['sentence1', 'sentence2'] }],
  ['stsb-glue/test.tsv', { columns: ['sentence1', 'sentence2'] }],
  ['scifact/beir-format/queries.jsonl', { jsonl: ['text'], maxLines: 0 }],
  ['scifact/beir-format/corpus.jsonl', { jsonl: ['title', 'text'], maxLines: 1000 }],
  ['sst2-glue/train.tsv', { columns: ['sentence'] }],
  ['squint:edge_strings.json', { json: true }],
  ['squint:qwen3_edge_strings.json', { json: true }],
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
const tok = await AutoTokenizer.from_pretrained('qwen3-tokenizer');

// tokenizers (Rust) runs the Split pattern with Oniguruma, whose \s is
// Unicode White_Space (U+0085 in, U+FEFF out) and whose (?i:'s) also matches
// U+017F; JavaScript's \s is WhiteSpace + LineTerminator (U+FEFF in, U+0085
// out) and transformers.js spells the case-insensitive group with [sS]. squint
// follows Rust (what the models were trained with), so the golden does too:
// the Split regex is rebuilt here with Oniguruma's classes. The texts whose
// ids this changes are listed (they are the disagreements of the two).
const WS = '\\t-\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const QWEN2 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const rustQwen2 = "(?:'([sS\\u017f]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD]))" +
  QWEN2.slice("(?i:'s|'t|'re|'ve|'m|'ll|'d)".length)
    .replaceAll('[^\\s\\p{L}\\p{N}]', `[^${WS}\\p{L}\\p{N}]`)
    .replaceAll('\\s', `[${WS}]`).replaceAll('\\S', `[^${WS}]`);
const split = tok.pre_tokenizer?.tokenizers?.[0];
if (!split || split.config?.pattern?.Regex !== QWEN2)
  throw new Error('qwen3-tokenizer: the first pre-tokenizer is not the Qwen2 Split pattern');
const jsPattern = split.pattern;
const rustPattern = new RegExp(rustQwen2, 'gu');

const lines = [];
let count = 0, differ = 0;
for (const [rel, rule] of SOURCES) {
  const sentences = extract(fs.readFileSync(sourcePath(rel), 'utf8'), rule, rel);
  lines.push(`@ ${rel} ${sentences.length}`);
  sentences.forEach((s, k) => {
    split.pattern = rustPattern;
    const ids = tok.encode(s, { add_special_tokens: false }).join(' ');
    split.pattern = jsPattern;
    if (tok.encode(s, { add_special_tokens: false }).join(' ') !== ids) {
      differ++;
      console.log(`  Rust classes change the ids of ${rel} text ${k + 1}: ${JSON.stringify(s)}`);
    }
    lines.push(ids);
  });
  count += sentences.length;
}
console.log(`qwen3: ${differ} texts where transformers.js's own regex would give other ids`);
const header = `# squint byte-level BPE golden ids (add_special_tokens false): transformers.js ${version}, ` +
  `qwen3-tokenizer/tokenizer.json, Split regex with Oniguruma's \\s and (?i) (${differ} texts differ from JS's own). ` +
  `Regenerate: tests/tokenizer/regen-qwen3-golden.sh\n`;
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, 'qwen3.ids'), header + lines.join('\n') + '\n');
console.log(`qwen3: ${count} texts; wrote ${path.join(outDir, 'qwen3.ids')}`);
