// Golden XLM-RoBERTa (HF Unigram) ids for squint's parity test
// (test_xlmr_parity.c): transformers.js reads <tokenizer-dir>/tokenizer.json
// (scripts/fetch_xlmr_tokenizer.py), local files only, with <s> / </s>.
// Writes <out-dir>/xlmr.js.ids (the ids) and <out-dir>/xlmr.texts.jsonl (every
// text, in order, for the Rust reference: xlmr_rust_ids.py).
// Usage: node gen_xlmr_golden.mjs <shared-data-dir> <tokenizer-dir> <out-dir>
// Sentence extraction mirrors tests/tokenizer/sentences.c (tk_xlmr_sources).
import fs from 'node:fs';
import path from 'node:path';
import { AutoTokenizer, env } from '@huggingface/transformers';

const [dataDir, tokDir, outDir] = process.argv.slice(2);
if (!dataDir || !tokDir || !outDir) {
  console.error('usage: node gen_xlmr_golden.mjs <shared-data-dir> <tokenizer-dir> <out-dir>');
  process.exit(2);
}
env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = path.dirname(path.resolve(tokDir)) + '/';

// Same order and rules as tk_xlmr_sources / rules / jsonl_rules in sentences.c.
const SOURCES = [
  ['stsb-glue/train.tsv', { columns: ['sentence1', 'sentence2'] }],
  ['stsb-glue/dev.tsv', { columns: ['sentence1', 'sentence2'] }],
  ['stsb-glue/test.tsv', { columns: ['sentence1', 'sentence2'] }],
  ['scifact/beir-format/queries.jsonl', { jsonl: ['text'], maxLines: 0 }],
  ['scifact/beir-format/corpus.jsonl', { jsonl: ['title', 'text'], maxLines: 1000 }],
  ['sst2-glue/dev.tsv', { columns: ['sentence'] }],
  ['squint:edge_strings.json', { json: true }],
  ['squint:xlmr_edge_strings.json', { json: true }],
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

const lines = [], texts = [];
let count = 0;
for (const [rel, rule] of SOURCES) {
  const sentences = extract(fs.readFileSync(sourcePath(rel), 'utf8'), rule, rel);
  lines.push(`@ ${rel} ${sentences.length}`);
  for (const s of sentences) {
    lines.push(tok.encode(s).join(' '));
    texts.push(JSON.stringify(s));
  }
  count += sentences.length;
}
const header = `# transformers.js ${version} ids (with <s> </s>) of the XLM-R test tokenizer.json\n`;
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, 'xlmr.js.ids'), header + lines.join('\n') + '\n');
fs.writeFileSync(path.join(outDir, 'xlmr.texts.jsonl'), texts.join('\n') + '\n');
console.log(`xlmr: ${count} texts; wrote ${path.join(outDir, 'xlmr.js.ids')}`);
