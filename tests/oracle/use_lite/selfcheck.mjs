// Self-checks of the USE-Lite oracle against its committed golden files.
// Usage: node selfcheck.mjs <shared-data-dir>   (after regen-golden.sh / npm ci)
//  1. determinism: embed() again in this process -> bit-identical to golden;
//  2. batching: every sentence again inside batches of 8 mixed-length texts
//     (padding up to 128 positions) -> max |diff| against the batch-of-one golden;
//  3. the README's "Graph facts", re-derived: an independent float64 JS forward
//     pass written from those facts and the raw weights -> max |diff| against
//     the golden embeddings and the golden layer tensors; plus the timing-signal
//     constant against 1e4^(-i/127) and the node-level facts (x0 = 2*E + timing);
//  4. the unmodified EnergeticAI stack (@energetic-ai/core: tfjs 4.5.0, WASM
//     backend) in a child process -> max |diff| against the golden.
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadUseLite, sparseInputs, readArtifacts } from './lib.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const dataDir = process.argv[2] ?? path.join(HERE, '../../../../shared/data');
const modelDir = path.join(dataDir, 'use-lite-tfjs');
const G = path.join(HERE, 'golden');
const DIM = 512;

const unzstd = (f) => {
  const r = spawnSync('zstd', ['-dc', f], { maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(`zstd -dc ${f}: ${r.stderr}`);
  return new Float32Array(r.stdout.buffer.slice(r.stdout.byteOffset, r.stdout.byteOffset + r.stdout.length));
};
const jsonl = (f) => fs.readFileSync(f, 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l));
const texts = jsonl(path.join(G, 'sentences.jsonl')).map((r) => r.text);
const golden = unzstd(path.join(G, 'embeddings.f32.zst'));
const goldenIds = jsonl(path.join(G, 'tokens.jsonl')).map((r) => r.ids);
const row = (a, i) => a.subarray(i * DIM, (i + 1) * DIM);
const maxAbs = (a, b) => { let m = 0; for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i])); return m; };
let failures = 0;
const check = (ok, msg) => { console.log(`${ok ? 'ok  ' : 'FAIL'} ${msg}`); if (!ok) failures++; };

const { tf, model, em } = await loadUseLite(modelDir);
check(texts.every((t, i) => JSON.stringify(em.tokenizer.encode(t)) === JSON.stringify(goldenIds[i])),
  `tokens.jsonl reproduces (${texts.length} sentences)`);

// Truncation: texts whose first 128 ids agree embed identically.
{
  const over = texts.map((_, i) => i).filter((i) => goldenIds[i].length >= 128);
  const first = goldenIds[over[0]].slice(0, 128).join();
  const same = over.every((i) => goldenIds[i].slice(0, 128).join() === first &&
    row(golden, i).every((v, j) => Object.is(v, row(golden, over[0])[j])));
  check(over.length >= 3 && same, `first-128-id truncation: texts of ${over.map((i) => goldenIds[i].length).join(', ')} ids ` +
    'share their first 128 ids and have bit-identical embeddings');
}

// 1. determinism within a process (regen-golden.sh twice covers across processes).
{
  let same = true;
  for (let i = 0; i < texts.length; i += 7) {
    const e = Float32Array.from(await em.embed(texts[i]));
    same &&= e.every((v, j) => Object.is(v, row(golden, i)[j]));
  }
  check(same, 'embed() again (every 7th sentence) is bit-identical to golden');
}

// 2. the same sentence alone (golden) vs inside a batch of different lengths.
{
  // Batches of 8 consecutive texts (STS lengths vary, so rows get padded),
  // over the first 96 STS sentences and all edge cases except '' (embed()
  // drops trailing empty rows), then one batch padded to the full 128
  // positions: the longest text with 7 short ones. (The tfjs CPU backend is
  // slow on 128-position batches, hence not everything padded to 128.)
  const longest = texts.reduce((a, t, i) => (goldenIds[i].length > goldenIds[a].length ? i : a), 0);
  const pick = texts.map((_, i) => i).filter((i) => (i < 96 || i >= 300) && texts[i] !== '' && i !== longest);
  const batches = [];
  for (let b = 0; b < pick.length; b += 8) batches.push(pick.slice(b, b + 8));
  batches.push([longest, 0, 301, 302, 303, 1, 2, 3]);
  let worst = 0, worstI = -1, identical = 0, n = 0;
  const t0 = performance.now();
  for (const idx of batches) {
    const out = await em.embed(idx.map((i) => texts[i]));
    idx.forEach((i, k) => {
      const d = maxAbs(out[k], row(golden, i));
      n++; if (d === 0) identical++;
      if (d > worst) { worst = d; worstI = i; }
    });
  }
  console.log(`     batched: ${n} rows in ${(performance.now() - t0) / 1000 | 0} s, ${identical} bit-identical to batch-of-one; ` +
    `max |diff| ${worst.toExponential(2)}${worstI >= 0 ? ` (sentence ${worstI}, ${goldenIds[worstI].length} ids)` : ''}`);
  check(worst < 1e-5, `batch (padded to 128) vs alone: max |diff| ${worst.toExponential(2)} < 1e-5`);
  // The quirk: a trailing '' is dropped from embed()'s result.
  const q = await em.embed(['hello world', '']);
  check(q.length === 1, `embed(['hello world', '']) returns ${q.length} row(s) (row count = last non-empty row + 1)`);
}

// 3. float64 reference forward written from the README's graph facts.
const art = readArtifacts(modelDir);
const W = {};
{
  let off = 0;
  for (const s of art.weightSpecs) {
    const n = s.shape.reduce((a, b) => a * b, 1);
    const Ctor = s.dtype === 'float32' ? Float32Array : Int32Array;
    W[s.name] = new Ctor(art.weightData.slice(off, off + 4 * n));
    off += 4 * n;
  }
  if (off !== art.weightData.byteLength) throw new Error('manifest does not cover the weight data');
}
const w = (suffix) => {
  const k = Object.keys(W).filter((n) => n.endsWith(suffix));
  if (k.length !== 1) throw new Error(`weight *${suffix}: ${k.length} matches`);
  return W[k[0]];
};
const MA = 'module_apply_default/Encoder_en/KonaTransformer/Encode/';
const TS = MA + 'TransformerStack/';
const LN_EPS = w('FFN/layer_prepostprocess/layer_norm/Cast/x')[0];
const INV = w('AddTimingSignal/TimingSignal/ExpandDims_1');
{
  let d = 0;
  for (let i = 0; i < 128; i++) d = Math.max(d, Math.abs(INV[i] - Math.fround(Math.pow(1e4, -i / 127))) / Math.pow(1e4, -i / 127));
  check(d < 1e-6, `inv_timescales[i] = 1e4^(-i/127) (max rel diff ${d.toExponential(2)}); LN eps = ${LN_EPS}`);
}
const P = (l) => ({
  lnA: [w(`Encode/Layer_${l}/TransformerLayer/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat`),
    w(`Encode/Layer_${l}/TransformerLayer/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat`)],
  qkv: [w(`Layer_${l}/TransformerLayer/MultiheadAttention/qkv_transform_single/kernel/part_0`),
    w(`Layer_${l}/TransformerLayer/MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat`)],
  out: [w(`Layer_${l}/TransformerLayer/MultiheadAttention/output_transform_single/kernel/part_0`),
    w(`Layer_${l}/TransformerLayer/MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat`)],
  scale: w(`TransformerStack/Layer_${l}/TransformerLayer/MultiheadAttention/mul/y`)[0],
  lnF: [w(`Layer_${l}/TransformerLayer/FFN/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat`),
    w(`Layer_${l}/TransformerLayer/FFN/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat`)],
  f1: [w(`TransformerStack/Layer_${l}/TransformerLayer/FFN/conv1/Tensordot/Reshape_1`),
    w(`Encode/Layer_${l}/TransformerLayer/FFN/conv1/bias/ConcatPartitions/concat`)],
  f2: [w(`TransformerStack/Layer_${l}/TransformerLayer/FFN/conv2/Tensordot/Reshape_1`),
    w(`Encode/Layer_${l}/TransformerLayer/FFN/conv2/bias/ConcatPartitions/concat`)],
});
const LAYERS = [P(0), P(1)];
const HEADS = 4;
const EMB = w('module/Embeddings_en');
const DENSE = [w('Layer_0/TransformerLayer/dense/kernel/ConcatPartitions/concat'),
  w('Layer_0/TransformerLayer/dense/bias/ConcatPartitions/concat')];
const TANH = [w('hidden_layers/tanh_layer_0/weights'), w('hidden_layers/tanh_layer_0/bias')];
const L2_EPS = w('l2_normalize/Maximum/y')[0];

// x: [n][din] (arrays of Float64Array), kernel din x dout row-major.
const linear = (x, [k, b]) => {
  const dout = b.length, din = k.length / dout;
  return x.map((v) => {
    const y = Float64Array.from(b);
    for (let i = 0; i < din; i++) { const vi = v[i]; if (vi === 0) continue; const r = i * dout; for (let j = 0; j < dout; j++) y[j] += vi * k[r + j]; }
    return y;
  });
};
const layerNorm = (x, [g, b]) => x.map((v) => {
  const d = v.length; let mu = 0; for (const a of v) mu += a; mu /= d;
  let var_ = 0; for (const a of v) var_ += (a - mu) ** 2; var_ /= d;
  const r = 1 / Math.sqrt(var_ + LN_EPS);
  return v.map((a, i) => (a - mu) * r * g[i] + b[i]);
});
const add = (a, b) => a.map((v, i) => v.map((x, j) => x + b[i][j]));
function attention(x, p) {
  const n = x.length, qkv = linear(x, p.qkv), d = qkv[0].length / 3, dh = d / HEADS;
  const ctx = x.map(() => new Float64Array(d));
  for (let h = 0; h < HEADS; h++) {
    for (let i = 0; i < n; i++) {
      const s = new Float64Array(n);
      let mx = -Infinity;
      for (let j = 0; j < n; j++) {
        let dot = 0; for (let c = 0; c < dh; c++) dot += qkv[i][h * dh + c] * p.scale * qkv[j][d + h * dh + c];
        s[j] = dot; mx = Math.max(mx, dot);
      }
      let z = 0; for (let j = 0; j < n; j++) { s[j] = Math.exp(s[j] - mx); z += s[j]; }
      for (let j = 0; j < n; j++) for (let c = 0; c < dh; c++) ctx[i][h * dh + c] += (s[j] / z) * qkv[j][2 * d + h * dh + c];
    }
  }
  return linear(ctx, p.out);
}
const ffn = (x, p) => linear(linear(layerNorm(x, p.lnF), p.f1).map((v) => v.map((a) => Math.max(a, 0))), p.f2);
function reference(ids) {
  const n = Math.min(ids.length, 128);            // ClipToMaxLength: first 128 ids
  const T = {};
  let x = ids.slice(0, n).map((id, pos) => {
    const v = new Float64Array(256);
    for (let c = 0; c < 128; c++) {
      v[c] = 2 * EMB[id * 256 + c] + Math.sin(pos * INV[c]);
      v[128 + c] = 2 * EMB[id * 256 + 128 + c] + Math.cos(pos * INV[c]);
    }
    return v;
  });
  T.x0 = x;
  if (n > 0) {                                      // '' : nothing to pool
    // Layer 0: the residual is dense(x0) (256->512, of the pre-LayerNorm input).
    x = add(attention(layerNorm(x, LAYERS[0].lnA), LAYERS[0]), linear(x, DENSE)); T['L0.after_attn'] = x;
    x = add(ffn(x, LAYERS[0]), x); T['L0.after_ffn'] = x;
    x = add(attention(layerNorm(x, LAYERS[1].lnA), LAYERS[1]), x); T['L1.after_attn'] = x;
    x = add(ffn(x, LAYERS[1]), x); T['L1.after_ffn'] = x;   // no final LayerNorm
  }
  const pooled = new Float64Array(DIM);
  for (const v of x) for (let j = 0; j < DIM; j++) pooled[j] += v[j];
  for (let j = 0; j < DIM; j++) pooled[j] /= Math.max(n, 1);
  T.pooled = [pooled];
  const t = linear([pooled], TANH)[0].map(Math.tanh); T.tanh = [t];
  let ss = 0; for (const a of t) ss += a * a;
  T.output = [t.map((a) => a / Math.sqrt(Math.max(ss, L2_EPS)))];
  return T;
}
{
  const t0 = performance.now();
  let worst = 0, worstI = -1, cos = 1;
  for (let i = 0; i < texts.length; i++) {
    const r = reference(goldenIds[i]).output[0], g = row(golden, i);
    const d = maxAbs(r, g);
    let dot = 0; for (let j = 0; j < DIM; j++) dot += r[j] * g[j];
    cos = Math.min(cos, dot);
    if (d > worst) { worst = d; worstI = i; }
  }
  console.log(`     float64 reference: ${texts.length} sentences in ${((performance.now() - t0) / 1000).toFixed(1)} s, ` +
    `min cosine ${cos.toFixed(9)}, max |diff| ${worst.toExponential(2)} (sentence ${worstI}, ${goldenIds[worstI].length} ids)`);
  check(worst < 1e-5, `float64 forward from the graph facts vs tfjs golden: max |diff| ${worst.toExponential(2)} < 1e-5`);

  const idx = JSON.parse(fs.readFileSync(path.join(G, 'layers/index.json'), 'utf8'));
  for (const s of idx.sentences) {
    const data = unzstd(path.join(G, 'layers', s.file + '.zst'));
    const get = (key) => { const t = s.tensors.find((u) => u.key === key); const n = t.shape.reduce((a, b) => a * b, 1); return [data.subarray(t.offset, t.offset + n), t.shape]; };
    const ref = reference(s.ids);
    const parts = [];
    let ok = true;
    for (const key of ['x0', 'L0.after_attn', 'L0.after_ffn', 'L1.after_attn', 'L1.after_ffn', 'pooled', 'tanh', 'output']) {
      const [g] = get(key);
      const r = ref[key].flatMap((v) => Array.from(v));
      let scale = 0; for (const a of r) scale = Math.max(scale, Math.abs(a));
      const rel = maxAbs(r, g) / Math.max(scale, 1e-30);
      ok &&= rel < 1e-5;
      parts.push(`${key} ${rel.toExponential(1)}`);
    }
    // Node-level fact: x0 = 2 * embedding lookup + timing signal, exactly as tfjs adds it.
    const [e] = get('embed_lookup'), [ts] = get('timing_signal'), [x0] = get('x0');
    const twice = x0.every((v, j) => v === Math.fround(e[j] + Math.fround(e[j] + ts[j])));
    check(ok && twice, `layers "${s.text}": x0 == E + (E + timing) bit-exact: ${twice}; rel. max |diff| vs float64: ${parts.join(', ')}`);
  }
}

// 4. the shipped EnergeticAI stack (core 0.2.0 = tfjs 4.5.0 WASM) in a child process.
{
  const tmp = fs.mkdtempSync(path.join((await import('node:os')).tmpdir(), 'use-lite-'));
  const out = path.join(tmp, 'core.f32');
  const r = spawnSync(process.execPath, [path.join(HERE, 'core_embed.cjs'), modelDir, path.join(G, 'sentences.jsonl'), out], { encoding: 'utf8' });
  if (r.status !== 0) { check(false, `core_embed.cjs failed: ${r.stderr}`); }
  else {
    const info = JSON.parse(r.stdout.trim().split('\n').pop());
    const c = new Float32Array(fs.readFileSync(out).buffer.slice(0));
    fs.rmSync(tmp, { recursive: true });
    let worst = 0, worstI = -1;
    for (let i = 0; i < texts.length; i++) {
      if (info.failed.some((f) => f.index === i)) continue;
      const d = maxAbs(row(c, i), row(golden, i));
      if (d > worst) { worst = d; worstI = i; }
    }
    console.log(`     @energetic-ai/core ${JSON.stringify(info.version)} backend ${info.backend}: ${info.seconds.toFixed(1)} s; ` +
      `failed: ${JSON.stringify(info.failed.map((f) => [f.index, f.text, f.error]))}`);
    check(worst < 1e-5, `unmodified core/WASM embed() vs golden (tfjs-cpu): max |diff| ${worst.toExponential(2)} ` +
      `(sentence ${worstI}) over ${texts.length - info.failed.length} sentences`);
  }
}
tf.disposeVariables();
console.log(failures ? `selfcheck: ${failures} FAILED` : 'selfcheck: all ok');
process.exit(failures ? 1 : 0);
