// Helper for full_compare.sh: USE-Lite fp32 embeddings of every STS-B
// original sts-test sentence (fields 5 and 6) and every SST-2 dev sentence
// from the model's own runtime (embed() on tfjs' pure-JS CPU backend, see
// lib.mjs), and the comparison with squint's.
// Usage: node embed_all.mjs extract <shared-data-dir> <dir>   -> <dir>/sentences.jsonl
//        node embed_all.mjs embed <shared-data-dir> <dir>     -> <dir>/tfjs.f32, tfjs.ids.jsonl
//        node embed_all.mjs compare <dir>                     (reads squint.f32, squint.ids.jsonl)
// Extraction is that of tests/tokenizer/sentences.c (and ../../tokenizer/use_js):
// lines split on '\n', one trailing '\r' stripped, empty lines skipped;
// sts-test: fields 5 and 6 of every line, in order; SST-2: the "sentence"
// column (header line skipped). Embeddings: little-endian float32 [N][512].
import fs from 'node:fs';
import path from 'node:path';

const DIM = 512, BATCH = 32, MAX_IDS = 128;
const MAX_DIFF = 1e-4, MIN_COS = 0.99999;   // the issue's limits
const [mode, a, b] = process.argv.slice(2);
const dir = mode === 'compare' ? a : b;
if (!dir || !['extract', 'embed', 'compare'].includes(mode) || (mode !== 'compare' && !a)) {
  console.error('usage: node embed_all.mjs extract|embed <shared-data-dir> <dir> | compare <dir>');
  process.exit(2);
}
const out = (f) => path.join(dir, f);
const readJsonl = (f) => fs.readFileSync(out(f), 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l));

function extract(text, rel, fields, column) {
  const res = [];
  const lines = text.split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  lines.forEach((raw, i) => {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line === '') return;
    const f = line.split('\t');
    if (column && i === 0) {
      const k = f.lastIndexOf(column);
      if (k < 0) throw new Error(`${rel}: no column "${column}" in the header`);
      fields = [k];
      return;
    }
    for (const k of fields) {
      if (k >= f.length) throw new Error(`${rel}: line ${i + 1} has only ${f.length} fields`);
      res.push(f[k]);
    }
  });
  return res;
}

if (mode === 'extract') {
  const read = (rel) => fs.readFileSync(path.join(a, rel), 'utf8');
  const sts = extract(read('stsb-glue/original/sts-test.tsv'), 'sts-test.tsv', [5, 6]);
  const sst = extract(read('sst2-glue/dev.tsv'), 'sst2-glue/dev.tsv', null, 'sentence');
  fs.writeFileSync(out('sentences.jsonl'), [...sts, ...sst].map((text) => JSON.stringify({ text }) + '\n').join(''));
  console.log(`sentences: ${sts.length + sst.length} (STS-B sts-test ${sts.length}, SST-2 dev ${sst.length})`);
} else if (mode === 'embed') {
  const { loadUseLite } = await import('./lib.mjs');
  const t0 = performance.now();
  const { tf, em } = await loadUseLite(path.join(a, 'use-lite-tfjs'));
  const texts = readJsonl('sentences.jsonl').map((r) => r.text);
  const ids = texts.map((s) => em.tokenizer.encode(s));
  // Batches of similar length (little padding; batch rows are bit-identical
  // to batch-of-one, README "Self-check results"). A text without ids is
  // embedded alone: embed() drops trailing empty rows from a batch.
  const order = texts.map((_, i) => i).sort((x, y) => Math.min(ids[x].length, MAX_IDS) - Math.min(ids[y].length, MAX_IDS) || x - y);
  const emb = new Float32Array(texts.length * DIM);
  let done = 0, next = 500;
  for (let s = 0; s < order.length;) {
    const idx = ids[order[s]].length ? order.slice(s, s + BATCH) : [order[s]];   // empties sort first
    const rows = await em.embed(idx.map((i) => texts[i]));
    if (rows.length !== idx.length) throw new Error(`embed() returned ${rows.length} rows for ${idx.length} texts`);
    idx.forEach((i, r) => emb.set(rows[r], i * DIM));
    s += idx.length;
    if ((done += idx.length) >= next) { console.error(`  tfjs: ${done}/${texts.length}`); next += 500; }
  }
  if (done !== texts.length) throw new Error(`embedded ${done} of ${texts.length}`);
  if (tf.memory().numTensors > 200) throw new Error(`tensor leak: ${tf.memory().numTensors}`);
  fs.writeFileSync(out('tfjs.f32'), Buffer.from(emb.buffer));
  fs.writeFileSync(out('tfjs.ids.jsonl'), ids.map((v) => JSON.stringify({ ids: v }) + '\n').join(''));
  console.log(`tfjs (${tf.version.tfjs}, backend ${tf.getBackend()}): ${texts.length} sentences in ` +
    `${((performance.now() - t0) / 1000).toFixed(1)} s (batches of ${BATCH} by length)`);
} else {
  const texts = readJsonl('sentences.jsonl').map((r) => r.text);
  const n = texts.length;
  const f32 = (f) => { const buf = fs.readFileSync(out(f)); return new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4); };
  const ref = f32('tfjs.f32'), got = f32('squint.f32');
  if (ref.length !== n * DIM || got.length !== n * DIM)
    throw new Error(`sizes: tfjs ${ref.length}, squint ${got.length} floats, want ${n}x${DIM}`);
  let maxDiff = -1, maxAt = -1, minCos = Infinity, minAt = -1, sumCos = 0;
  for (let i = 0; i < n; i++) {
    let dot = 0, nr = 0, ng = 0;
    for (let j = i * DIM; j < (i + 1) * DIM; j++) {
      const d = Math.abs(ref[j] - got[j]);
      if (!(d <= maxDiff)) { maxDiff = d; maxAt = i; }   // NaN counts as worst
      dot += ref[j] * got[j]; nr += ref[j] * ref[j]; ng += got[j] * got[j];
    }
    const cos = dot / Math.sqrt(nr * ng);
    sumCos += cos;
    if (!(cos >= minCos)) { minCos = cos; minAt = i; }
  }
  const tj = readJsonl('tfjs.ids.jsonl'), sq = readJsonl('squint.ids.jsonl');
  let mism = 0, long = 0, firstMism = -1;
  for (let i = 0; i < n; i++) {
    const want = tj[i].ids.slice(0, MAX_IDS);   // the graph keeps the first 128 ids
    if (tj[i].ids.length > MAX_IDS) long++;
    if (!sq[i] || JSON.stringify(sq[i].ids) !== JSON.stringify(want)) { mism++; if (firstMism < 0) firstMism = i; }
  }
  const q = (i) => JSON.stringify(texts[i]);
  console.log(`sentences:        ${n}`);
  console.log(`max |diff|:       ${maxDiff.toExponential(3)}  (sentence ${maxAt}: ${q(maxAt)})`);
  const c = (x) => `${x.toFixed(12)} (1 - cos = ${(1 - x).toExponential(2)})`;
  console.log(`min cosine:       ${c(minCos)}  (sentence ${minAt}: ${q(minAt)})`);
  console.log(`mean cosine:      ${c(sumCos / n)}`);
  console.log(`token-id mismatches: ${mism}/${n}${mism ? ` (first: sentence ${firstMism})` : ''}; ` +
    `${long} sentences over ${MAX_IDS} ids (compared on the first ${MAX_IDS})`);
  const ok = maxDiff <= MAX_DIFF && minCos >= MIN_COS;
  console.log(`${ok ? 'PASS' : 'FAIL'}: limits max |diff| <= ${MAX_DIFF}, min cosine >= ${MIN_COS}`);
  process.exit(ok ? 0 : 1);
}
