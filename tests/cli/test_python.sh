#!/usr/bin/env bash
# The Python binding (python/squint, ctypes over libsquint, NumPy out):
# embeddings equal `squint embed`'s bytes (int8 .sqm and fp32 checkpoint),
# errors raise SquintError with the status, 4 Python threads share a model;
# Model.score / rerank give `squint rerank`'s scores and order (a bi-encoder
# and a cross-encoder), a cross-encoder refuses embed(), and a language model
# is refused with what the library does not do (generate).
# usage: test_python.sh SQUINT GEN_FIXTURE LIBSQUINT_SO SOURCE_DIR
set -uo pipefail
SQ=$1 GEN=$2 LIB=$3 SRC=$4
W=$(mktemp -d /tmp/squint-py-XXXXXX)
trap 'rm -rf "$W"' EXIT
/usr/bin/python3 -c "import numpy" 2>/dev/null || { echo "SKIPPED: no python3-numpy"; exit 77; }
"$GEN" "$W/m" --shape tiny --seed 11 --outliers 2 >/dev/null || exit 1
"$SQ" quantize "$W/m" -o "$W/m.sqm" >/dev/null 2>&1 || { echo "quantize failed"; exit 1; }
printf 'first sentence\nsecond, rather different one\n\nünïcödé text\n' >"$W/in.txt"
"$SQ" embed "$W/m.sqm" --input "$W/in.txt" --output "$W/q.npy" --quiet
"$SQ" embed "$W/m" --input "$W/in.txt" --output "$W/f.npy" --quiet
"$SQ" embed "$W/m.sqm" --input "$W/in.txt" --output "$W/q8.f32" --dimensions 8 --quiet
"$SQ" embed "$W/m.sqm" --input "$W/in.txt" --precision int8 --ranges-from "$W/in.txt" --ranges-out "$W/rg.npy" --output "$W/p8.npy" --quiet
"$SQ" embed "$W/m.sqm" --input "$W/in.txt" --precision uint8 --ranges "$W/rg.npy" --output "$W/pu.npy" --quiet
"$SQ" embed "$W/m.sqm" --input "$W/in.txt" --precision ubinary --output "$W/pb.npy" --quiet
"$SQ" embed "$W/m.sqm" --input "$W/in.txt" --precision binary --output "$W/pbs.npy" --quiet
"$GEN" "$W/ce" --shape tiny --seed 12 --cross-encoder 1 >/dev/null || exit 1
"$SQ" quantize "$W/ce" -o "$W/ce.sqm" >/dev/null 2>&1 || { echo "quantize (cross-encoder) failed"; exit 1; }
for r in m.sqm ce.sqm; do
  "$SQ" rerank "$W/$r" --query "second sentence" --docs "$W/in.txt" >"$W/$r.rank.jsonl" || exit 1
done
SQUINT_LIB=$LIB PYTHONPATH=$SRC/python /usr/bin/python3 - "$W" <<'PY'
import os, sys, threading
import numpy as np
import squint
W = sys.argv[1]
fails = 0
def check(ok, what):
    global fails
    print(("ok   - " if ok else "FAIL - ") + what)
    fails += 0 if ok else 1
texts = open(W + "/in.txt", encoding="utf-8").read().split("\n")[:-1]
with squint.Model(W + "/m.sqm") as m:
    e = m.embed(texts)
    check(e.dtype == np.float32 and e.shape == (4, m.dim) and m.quantized, "int8 .sqm: float32 [4, %d]" % m.dim)
    check(np.array_equal(e, np.load(W + "/q.npy")), "= squint embed, bit for bit (int8)")
    res = [None] * 4
    def work(i):
        res[i] = m.embed(texts * 10, threads=1 + i % 2)
    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    check(all(np.array_equal(r, np.tile(e, (10, 1))) for r in res), "4 threads on one model, same bytes")
    check(m.embed([]).shape == (0, m.dim), "no texts: an empty [0, dim] array")
    try:
        m.embed(["x"], max_seq=100000)
        check(False, "max_seq out of range raises")
    except squint.SquintError as ex:
        check(ex.status == "argument" and "max_seq" in str(ex), "max_seq out of range: SquintError(argument)")
    # issue 38 item 11: no silent wrap modulo 2**32, non-str texts and normalize=2
    # raise SquintError(argument) as the library's own checks do
    for kw, needle in ((dict(max_seq=2**32 + 8), "max_seq 4294967304 is out of range"),
                       (dict(threads=-2**40), "threads"), (dict(batch=1.5), "batch must be an integer"),
                       (dict(normalize=2), "normalize must be -1, 0 or 1")):
        try:
            m.embed(["x"], **kw)
            check(False, "%s raises" % kw)
        except squint.SquintError as ex:
            check(ex.status == "argument" and needle in str(ex), "%s: SquintError(argument) %s" % (kw, ex))
    for bad in ([1], ["a", None], [b"x"]):
        try:
            m.embed(bad)
            check(False, "texts %r raise" % bad)
        except squint.SquintError as ex:
            check(ex.status == "argument" and "must be a str" in str(ex), "texts %r: SquintError(argument)" % bad)
    check(np.array_equal(m.embed(texts, normalize=True, threads=True), m.embed(texts, normalize=1, threads=1)),
          "bools count as 0 / 1")
    e8 = m.embed(texts, dimensions=8)
    check(e8.shape == (4, 8) and np.array_equal(e8, np.fromfile(W + "/q8.f32", dtype="<f4").reshape(4, 8)),
          "dimensions=8: [4, 8], the bytes of squint embed --dimensions 8")
    r = np.load(W + "/rg.npy")
    for prec, f in (("int8", "p8.npy"), ("uint8", "pu.npy"), ("ubinary", "pb.npy"), ("binary", "pbs.npy")):
        got = m.embed(texts, precision=prec, ranges=r if prec.endswith("int8") else None)
        check(np.array_equal(got, np.load(W + "/" + f)) and got.dtype == np.load(W + "/" + f).dtype,
              "precision=%s: the bytes of squint embed --precision %s" % (prec, prec))
    z = m.embed([], precision="binary", dimensions=12)
    check(z.shape == (0, 2) and z.dtype == np.int8, "no texts, binary of 12: int8 [0, 2]")
    try:
        m.embed([], precision="bogus")
        check(False, "an unknown precision raises, even with no texts")
    except squint.SquintError as ex:
        check(ex.status == "argument", "an unknown precision: SquintError(argument), no texts too")
    try:
        m.embed(texts, precision="int8")
        check(False, "int8 without ranges raises")
    except squint.SquintError as ex:
        check(ex.status == "argument", "int8 without ranges: SquintError(argument)")
    for bad in (0, m.dim + 1):
        try:
            m.embed(texts, dimensions=bad)
            check(False, "dimensions=%d raises" % bad)
        except squint.SquintError as ex:
            check(ex.status == "argument", "dimensions=%d: SquintError(argument)" % bad)
import json
for name in ("m.sqm", "ce.sqm"):
    with squint.Model(W + "/" + name) as r:
        want = [json.loads(l) for l in open(W + "/" + name + ".rank.jsonl")]
        got = r.rerank("second sentence", texts)
        check([i for i, _ in got] == [w["index"] for w in want] and
              all("%.9g" % s == "%.9g" % w["score"] for (_, s), w in zip(got, want)),
              "%s (%s): rerank() = squint rerank, order and scores" % (name, r.kind))
        s, lg = r.score(["second sentence"] * len(texts), texts, logits=True)
        check(s.dtype == np.float64 and lg.dtype == np.float32 and
              np.array_equal(s, r.score("second sentence", texts)) and
              (np.isnan(lg).all() if r.kind == "embedding" else
               all("%.9g" % lg[w["index"]] == "%.9g" % w["logit"] for w in want)),
              "%s: score() of pairs = of one query; logits %s" % (name, "NaN" if r.kind == "embedding" else "= rerank's"))
        try:
            r.score(["a", "b"], ["c"])
            check(False, "2 queries for 1 document raise")
        except squint.SquintError as ex:
            check(ex.status == "argument", "2 queries for 1 document: SquintError(argument)")
with squint.Model(W + "/ce.sqm") as r:
    check(r.kind == "cross-encoder" and r.dim == 0, "a cross-encoder: kind cross-encoder, dim 0")
    try:
        r.embed(["x"])
        check(False, "embed() on a cross-encoder raises")
    except squint.SquintError as ex:
        check(ex.status == "model" and "scores pairs" in str(ex), "embed() on a cross-encoder: SquintError(model)")
    try:
        r.score("q", ["d"], instruction="judge this")
        check(False, "an instruction for a cross-encoder raises")
    except squint.SquintError as ex:
        check(ex.status == "argument" and "causal LM" in str(ex), "an instruction for a cross-encoder: SquintError(argument)")
with squint.Model(W + "/m") as f:
    check(np.array_equal(f.embed(texts), np.load(W + "/f.npy")) and not f.quantized, "fp32 checkpoint = squint embed")
try:
    squint.Model(W + "/nope.sqm")
    check(False, "missing model raises")
except squint.SquintError as ex:
    check(ex.status == "model" and "nope.sqm" in str(ex), "missing model: SquintError(model) naming it")
lm = os.path.join(os.environ.get("SQUINT_SHARED_DATA", "/nonexistent"), "stories260K", "stories260K.bin")
if os.path.exists(lm):
    try:
        squint.Model(lm)
        check(False, "a language model (stories260K) raises")
    except squint.SquintError as ex:
        check(ex.status == "model" and "does not generate" in str(ex) and "squint generate" in str(ex),
              "a language model: SquintError(model) saying the library does not generate")
else:
    print("SKIPPED - a language model: no stories260K under $SQUINT_SHARED_DATA")
check(squint.library_version().count(".") == 2, "library version " + squint.library_version())
print("%d failure(s)" % fails)
sys.exit(1 if fails else 0)
PY
