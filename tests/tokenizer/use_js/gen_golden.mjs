// Golden SentencePiece-unigram ids from the Universal Sentence Encoder Lite JS
// tokenizer (@energetic-ai/embeddings, unmodified, as installed by npm) for
// squint's parity test (tests/tokenizer/test_unigram_parity.c).
// Usage: node gen_golden.mjs <shared-data-dir> <out-dir>
// Sentence extraction mirrors tests/tokenizer/sentences.c exactly (the same
// rules as ../js/gen_golden.mjs).
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import embeddings from '@energetic-ai/embeddings';

const [dataDir, outDir] = process.argv.slice(2);
if (!dataDir || !outDir) {
  console.error('usage: node gen_golden.mjs <shared-data-dir> <out-dir>');
  process.exit(2);
}

const VOCAB = 'use-lite-tfjs/vocab.json';
// [relative path, rule]: rules as in sentences.c.
const SOURCES = [
  ['stsb-glue/original/sts-test.tsv', { fields: [5, 6] }],
  ['sst2-glue/dev.tsv', { columns: ['sentence'] }],
  ['squint:edge_strings.json', { json: true }],
  ['squint:use_edge_strings.json', { json: true }],
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

const pkgVersion = (name) => JSON.parse(fs.readFileSync(
  new URL(`./node_modules/${name}/package.json`, import.meta.url))).version;

const vocabBytes = fs.readFileSync(path.join(dataDir, VOCAB));
const vocabulary = JSON.parse(vocabBytes.toString('utf8'));
// The package does not export its Tokenizer; EmbeddingsModel builds one from
// the vocabulary and uses nothing else of its argument until embed().
const { tokenizer } = new embeddings.EmbeddingsModel({ vocabulary, model: null });

const lines = [];
let total = 0;
for (const [rel, rule] of SOURCES) {
  const sentences = extract(fs.readFileSync(sourcePath(rel), 'utf8'), rule, rel);
  lines.push(`@ ${rel} ${sentences.length}`);
  for (const s of sentences) lines.push(tokenizer.encode(s).join(' '));
  console.log(`${rel}: ${sentences.length} sentences`);
  total += sentences.length;
}
const sha = crypto.createHash('sha256').update(vocabBytes).digest('hex');
const header = `# squint USE-lite unigram golden ids (no BOS/EOS): @energetic-ai/embeddings ` +
  `${pkgVersion('@energetic-ai/embeddings')} Tokenizer.encode on node ${process.versions.node} ` +
  `(ICU ${process.versions.icu}, Unicode ${process.versions.unicode}), ${VOCAB} sha256 ${sha}. ` +
  `Regenerate: tests/tokenizer/regen-use-golden.sh\n`;
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, 'use-lite.ids'), header + lines.join('\n') + '\n');
console.log(`wrote ${path.join(outDir, 'use-lite.ids')}: ${total} sentences`);
