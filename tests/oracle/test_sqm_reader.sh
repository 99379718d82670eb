#!/usr/bin/env bash
# Second-reader agreement test: the independent NumPy reader
# (tests/oracle/sqm_reader.py, written from formats/SQM.md and formats/SPEC.md
# only) must reproduce `squint embed` on .sqm files of several kinds.
#
# usage: test_sqm_reader.sh SQUINT GEN_FIXTURE
# exit: 0 pass, 1 fail, 77 skip (no python3 with numpy)
#
# Models: two fixtures (tiny 2x32/4/64, CLS + normalize; odd-width 2x72/4/200,
# mean pooling, no normalization) x five recipes (and a tiny MPNet fixture,
# RoBERTa positions and a relative attention bias, x int8 / int4 / bf16; a tiny
# NomicBERT fixture, rotary positions and SwiGLU, x the same three) (int8 default with zero
# points and the row guard; int4-g128; fp32 linears; int8 with guard: clip;
# a mix of int8 / int4 / fp32 linears with a smoothed attn_out), plus the
# zstd form and a corrupted file. Cross-encoders (SQM.md 6.11): two tiny
# BertForSequenceClassification fixtures (sigmoid with outlier channels;
# identity) x int8 / int4 / fp32 (sigmoid) and int8 / int4 (identity), each at
# the file's max_seq and at --max-seq 24: the reader's logits and scores of
# 14 query/document pairs against `squint rerank --pairs`, and two
# deliberately wrong readers (token types all 0; truncation query first)
# that must disagree.
#
# Criterion (SQM.md 6.10): max |reader - squint| <= 1e-5 per component, for
# every text. The one documented exception is a quantizer input v_j that lies
# within a few f32 ulps of a half-integer and rounds the other way in squint;
# a text over 1e-5 passes only if the reader (--explain) finds such a v_j
# (within 8 ulps of the largest |v| of its row) whose flipped rounding (at
# most two flips) brings that text back to <= 1e-5. Everything else fails.
#
# GELU: SQM.md 6.7 defines squint's GELU operation by operation (erf by
# Abramowitz & Stegun 7.1.26, the same bits on every CPU); the reader
# follows it (--gelu spec). With the mathematical erf instead, the 1.5e-7
# erf error moves ffn_down inputs by up to ~1e-5 and flips roundings that
# are not "a few ulps" from the boundary (seen: 9.7e-3 on an embedding).
#
# Optional: SQM_READER_USE_LITE=DIR (a Universal Sentence Encoder Lite tfjs
# checkpoint) adds the pre-LN / ReLU / tanh-head / unigram / E < H model
# (about 20 s more).
set -u

SQUINT=${1:?usage: test_sqm_reader.sh SQUINT GEN_FIXTURE}
GEN=${2:?usage: test_sqm_reader.sh SQUINT GEN_FIXTURE}
HERE=$(cd "$(dirname "$0")" && pwd)
export PYTHONDONTWRITEBYTECODE=1   # nothing written into the source tree
READER="$HERE/sqm_reader.py"
TOL=1e-5

PY=""
for p in /usr/bin/python3 python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c "import numpy" >/dev/null 2>&1; then
        PY=$p
        break
    fi
done
if [ -z "$PY" ]; then
    echo "SKIP: no python3 with numpy"
    exit 77
fi
for f in "$SQUINT" "$GEN"; do
    if [ ! -x "$f" ]; then
        echo "FAIL: $f is not an executable"
        exit 1
    fi
done

W=$(mktemp -d "${TMPDIR:-/tmp}/sqm_reader_test.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT
START=$(date +%s)
fail=0

VOCAB_ARGS=()
# A real WordPiece vocabulary gives realistic token ids when present; the
# generator's synthetic one is used otherwise.
for v in "${SQM_READER_VOCAB:-}" /work/shared/data/bge-small-en-v1.5/vocab.txt; do
    if [ -n "$v" ] && [ -f "$v" ]; then
        VOCAB_ARGS=(--vocab "$v")
        break
    fi
done

cat > "$W/texts.txt" <<'EOF'
A man with a hard hat is dancing.
A young child is riding a horse.
The cat sat on the mat.
Three men are playing chess in the park.
A woman is slicing an onion.
The stock market fell sharply on Tuesday after the announcement.
Two dogs are running through a field of tall grass.
He said the report would be released next week.
A plane is taking off.
The president met with foreign leaders to discuss trade.
Someone is playing a flute.
A person is peeling a potato with a knife.
The quick brown fox jumps over the lazy dog.
I don't think that's what she meant, do you?
Scientists discovered a new species of frog in the rainforest.
The train was delayed by forty-five minutes because of snow.
Is it going to rain tomorrow?
Please send the invoice to accounting by Friday.
a

?
Hello, world!!! ... ??? ;;; -- (( ))
THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG 1234567890 3.14159 $100 50% off
Café naïve résumé — Ünïcödé straße 東京 北京 日本語 の テスト
supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis
e-mail: someone@example.com, url: https://example.org/a/b?c=d&e=f#g
x = (a + b) * c / d - e ^ f; y[i] = z{j} <tag attr="1"/>
The committee, having reviewed the evidence presented over the course of several long and contentious sessions, concluded that the proposal, while ambitious and well-intentioned, could not be adopted without substantial revisions to its budget, its timeline, and its governance structure; further study was recommended by a majority of the members present.
Protein folding is determined by the amino acid sequence of the polypeptide chain.
The defendant pleaded not guilty to all charges.
She plays the violin beautifully.
Oil prices rose 3% in early trading.
A group of children are playing soccer on the beach at sunset.
Why did the chicken cross the road? To get to the other side.
The museum is closed on Mondays and public holidays.
1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!
The new model reduces latency by half while keeping accuracy within one percent.
Water boils at 100 degrees Celsius at sea level.
He left the keys on the kitchen table before going out.
Quantum entanglement links the states of two particles regardless of distance.
This sentence is long enough to be truncated at the model's sixty-four token limit, so that the last position of the table is used: one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty twenty-one twenty-two twenty-three twenty-four twenty-five.
EOF
NTEXTS=$(wc -l < "$W/texts.txt")

printf 'weights:\n  type: int4-g128\n' > "$W/int4.yaml"
printf 'weights:\n  type: fp32\n' > "$W/fp32.yaml"
printf 'observer:\n  guard: clip\n' > "$W/clip.yaml"
printf 'attention:\n  matmul: bf16\n' > "$W/bf16.yaml"
cat > "$W/mix.yaml" <<'EOF'
weights:
  type: int8
overrides:
  - match: "layer.*.ffn_*"
    type: int4-g128
  - match: layer.1.qkv
    type: fp32
  - match: layer.0.attn_out
    smoothquant: true
EOF

gen() {  # NAME ARGS...
    local name=$1; shift
    if ! "$GEN" "$W/$name" "$@" ${VOCAB_ARGS[@]+"${VOCAB_ARGS[@]}"} > "$W/$name.gen.log" 2>&1; then
        echo "FAIL: fixture $name: $(tail -1 "$W/$name.gen.log")"
        exit 1
    fi
}
gen tiny --shape tiny --seed 3 --outliers 2
gen odd --hidden 72 --heads 4 --ffn 200 --layers 2 --seed 7 --outliers 3 \
    --pooling mean --no-normalize
# MPNet (SQM.md 6.1 RoBERTa positions, 6.5 relative attention bias)
gen mpnet --family mpnet --shape tiny --seed 9 --outliers 2 --pooling mean
# NomicBERT (SQM.md 6.12 rotary positions, 6.7 swiglu, no position table)
gen nomic --family nomic --shape tiny --seed 5 --outliers 2
# ModernBERT (SQM.md 6.13: geglu, local layers, no layer.0.ln_attn,
# encoder.final_norm) with its byte-level tokenizer
if command -v zstd >/dev/null; then
    "$HERE/../fixture/make_modernbert_fixture.sh" "$GEN" "$W/modernbert" \
        "$HERE/../tokenizer/modernbert-fixture" --shape tiny --layers 3 --hidden 64 --heads 4 \
        --ffn 96 --seed 11 --outliers 2 > "$W/modernbert.gen.log" 2>&1 ||
        { echo "FAIL: fixture modernbert: $(tail -1 "$W/modernbert.gen.log")"; exit 1; }
    # a window of 8 (keys within 4 of the query): the texts here are short
    sed -i 's/"local_attention": 128/"local_attention": 8/' "$W/modernbert/config.json"
    grep -q '"local_attention": 8' "$W/modernbert/config.json" ||
        { echo "FAIL: fixture modernbert: no local_attention to change"; exit 1; }
    MB=modernbert
else
    echo "skip ModernBERT: zstd is needed"; MB=
fi
# Calibrate each fixture once (bundled corpus, 256 samples); every recipe reuses it.
for fx in tiny odd mpnet nomic $MB; do
    if ! "$SQUINT" calibrate "$W/$fx" -o "$W/$fx.sqc" --quiet --threads 1 > "$W/$fx.cal.log" 2>&1; then
        echo "FAIL: squint calibrate $fx: $(tail -2 "$W/$fx.cal.log")"
        exit 1
    fi
done

cat > "$W/compare.py" <<'EOF'
import json, sys
import numpy as np
name, ref, got, stats, tol = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])
a = np.load(ref).astype(np.float64)
b = np.load(got).astype(np.float64)
if a.shape != b.shape:
    print("FAIL %-12s shape: squint %s, reader %s" % (name, a.shape, b.shape))
    sys.exit(1)
st = [json.loads(l) for l in open(stats)]
d = np.abs(a - b)
worst = np.unravel_index(int(np.argmax(d)), d.shape) if d.size else (0, 0)
per = d.max(axis=1) if d.size else np.zeros(0)
over = [i for i in range(len(per)) if per[i] > tol]
bad = [i for i in over if not st[i].get("explained")]
guarded = sum(s["guarded_rows"] for s in st)
rows = sum(s["rows"] for s in st)
clean = max([per[i] for i in range(len(per)) if i not in over], default=0.0)
status = "FAIL" if bad else "ok  "
print("%s %-12s max|diff| %.3g at text %d dim %d (|value| %.3g); texts %d, exact %d; "
      "guarded rows %d/%d%s"
      % (status, name, d.max() if d.size else 0.0, worst[0], worst[1],
         abs(a[worst]) if d.size else 0.0, len(per), int((per == 0).sum()), guarded, rows,
         "" if not over else "; max over the other texts %.3g" % clean))
for i in over:
    s = st[i]
    fl = ", ".join("%s%s row %d col %d v=%.9g (%g row ulps from a half-integer)"
                   % (f["linear"], "" if f["phase"] == "plain" else " guarded", f["row"],
                      f["col"], f["v"], f["ulps"]) for f in s.get("flips", []))
    if s.get("explained"):
        print("     text %d: %.3g > %g: SQM.md 6.10 rounding-boundary case, allowed: "
              "flipping %s gives %.3g" % (i, per[i], tol, fl, s["diff_after_flips"]))
    else:
        print("     text %d: %.3g > %g, NOT explained by a near-half-integer rounding "
              "(closest v: %s, %s row ulps; best after flips %s: %.3g)"
              % (i, per[i], tol, s.get("where"), s.get("min_half_ulps"), fl or "none",
                 s.get("diff_after_flips", per[i])))
sys.exit(1 if bad else 0)
EOF

GELU=$("$PY" -c "import sys; sys.path.insert(0, '$HERE'); import sqm_reader as r; print(r.resolve_gelu('auto'))")
echo "reader: $READER (gelu erf: $GELU; tolerance $TOL, $NTEXTS texts per model)"

run_model() {  # FIXTURE RECIPE(default|int4|fp32|clip|mix|bf16) [CHECKPOINT_DIR]
    local fx=$1 rc=$2 m="$W/$1-$2" ck=${3:-$W/$1}
    local rargs=()
    [ "$rc" != default ] && rargs=(--recipe "$W/$rc.yaml")
    if ! "$SQUINT" quantize "$ck" --calib "$W/$fx.sqc" ${rargs[@]+"${rargs[@]}"} -o "$m.sqm" --threads 1 \
            > "$m.q.log" 2>&1; then
        echo "FAIL $fx-$rc: squint quantize: $(tail -2 "$m.q.log")"
        return 1
    fi
    if ! "$SQUINT" embed "$m.sqm" --input "$W/texts.txt" --tokens-output "$m.ids.jsonl" \
            --output "$m.squint.npy" --quiet --threads 1 > "$m.e.log" 2>&1; then
        echo "FAIL $fx-$rc: squint embed: $(tail -2 "$m.e.log")"
        return 1
    fi
    if ! "$PY" "$READER" "$m.sqm" --ids "$m.ids.jsonl" --out "$m.reader.npy" \
            --gelu spec --stats "$m.stats.jsonl" --explain "$m.squint.npy" --tol "$TOL" \
            > "$m.r.log" 2>&1; then
        echo "FAIL $fx-$rc: reader: $(tail -3 "$m.r.log")"
        return 1
    fi
    "$PY" "$W/compare.py" "$fx-$rc" "$m.squint.npy" "$m.reader.npy" "$m.stats.jsonl" "$TOL"
}

for fx in tiny odd; do
    for rc in default int4 fp32 clip mix bf16; do
        run_model "$fx" "$rc" || fail=1
    done
done
for fx in mpnet nomic $MB; do
    for rc in default int4 bf16; do
        run_model "$fx" "$rc" || fail=1
    done
done

if [ -n "${SQM_READER_USE_LITE:-}" ]; then
    if "$SQUINT" calibrate "$SQM_READER_USE_LITE" -o "$W/use.sqc" --samples 64 --quiet --threads 1 \
            > "$W/use.cal.log" 2>&1; then
        run_model use default "$SQM_READER_USE_LITE" || fail=1
    else
        echo "FAIL: squint calibrate $SQM_READER_USE_LITE: $(tail -2 "$W/use.cal.log")"
        fail=1
    fi
else
    echo "skip USE Lite (pre-LN) model: set SQM_READER_USE_LITE=DIR to run it"
fi

# The reader reads the metadata as it expects (kinds of linears and embeddings).
info=$("$PY" "$READER" "$W/odd-mix.sqm" --info --no-verify 2>&1)
for want in "embeddings int8" "guard row" "layer\.1\.qkv +fp32" "layer\.0\.ffn_up +int4-g128" \
            "layer\.0\.attn_out +int8" "layer\.0\.ffn_down +int4-g128 .* zero 0"; do
    if ! grep -Eq -- "$want" <<< "$info"; then
        echo "FAIL --info of odd-mix.sqm lacks '$want':"; echo "$info"; fail=1
    fi
done
for pair in "tiny-fp32:embeddings fp32" "tiny-int4:embeddings int4-g128" "tiny-clip:guard clip"; do
    info=$("$PY" "$READER" "$W/${pair%%:*}.sqm" --info --no-verify 2>&1)
    if ! grep -q -- "${pair#*:}" <<< "$info"; then
        echo "FAIL --info of ${pair%%:*}.sqm lacks '${pair#*:}'"; fail=1
    fi
done

# Cross-encoders (sequence classifiers, SQM.md 6.11): the reader builds each
# pair itself ([CLS] query [SEP] document [SEP], token types 0 / 1, the
# longest_first truncation) from the two texts' `squint tokenize --ids-only`
# ids, and its logits must match `squint rerank --pairs` to TOL (the 6.10
# exception explained pair by pair, as for embeddings); scores too. Each model
# at the file's max_seq (64) and at --max-seq 24 (budget 21: long documents
# cut to 10 tokens, long queries cut to what is left, a long query beside a
# short document kept longer than half the budget).
cat > "$W/pairs.jsonl" <<'EOF'
{"query": "what causes tides", "document": "Tides are caused by the gravitational pull of the moon and the sun on the oceans of the earth, which raises the water on the side facing the moon and on the far side."}
{"query": "who wrote hamlet", "document": "Hamlet is a tragedy written by William Shakespeare sometime between 1599 and 1601."}
{"query": "how do vaccines work", "document": "The cat sat on the mat."}
{"query": "", "document": "An empty query still forms a pair."}
{"query": "a question with no document", "document": ""}
{"query": "boiling point of water", "document": "Water boils at 100 degrees Celsius at sea level, and at lower temperatures at higher altitudes because the air pressure is lower there, which is why cooking pasta in the mountains takes longer than at the coast."}
{"query": "what is the long and complicated reason that the committee gave for rejecting the ambitious proposal last week", "document": "The committee, having reviewed the evidence presented over the course of several long and contentious sessions, concluded that the proposal, while ambitious and well-intentioned, could not be adopted without substantial revisions to its budget, its timeline, and its governance structure."}
{"query": "what is the long and complicated reason that the committee gave for rejecting the ambitious proposal last week", "document": "Too expensive."}
{"query": "why is the sky blue during the day but red and orange at sunset over the ocean and the desert", "document": "Rayleigh scattering of sunlight by the molecules of the air."}
{"query": "quantum entanglement", "document": "Quantum entanglement links the states of two particles regardless of distance; measuring one instantly constrains the outcomes of measurements on the other, a correlation Einstein called spooky action at a distance."}
{"query": "Café naïve résumé 東京", "document": "Ünïcödé straße 北京 日本語 の テスト"}
{"query": "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20", "document": "21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45"}
{"query": "is it going to rain tomorrow?", "document": "Please send the invoice to accounting by Friday."}
{"query": "The quick brown fox jumps over the lazy dog.", "document": "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG 1234567890 3.14159 $100 50% off"}
EOF
NPAIRS=$(wc -l < "$W/pairs.jsonl")

cat > "$W/compare_pairs.py" <<'EOF'
# squint rerank --pairs JSONL -> logits .npy (for the reader's --explain);
# with a reader --scores-out file: the order, the lengths and the scores.
import json, sys
import numpy as np
mode = sys.argv[1]
sq = [json.loads(l) for l in open(sys.argv[2])]
if mode == "logits":
    if [s["index"] for s in sq] != list(range(len(sq))):
        print("squint rerank --pairs did not write the pairs in input order"); sys.exit(1)
    z = np.array([[s["logit"]] if not isinstance(s["logit"], list) else s["logit"] for s in sq])
    np.save(sys.argv[3], z)
    sys.exit(0)
# mode "scores": NAME SQUINT READER TOL
name, rd, tol = sys.argv[3], [json.loads(l) for l in open(sys.argv[4])], float(sys.argv[5])
ds = [float(np.max(np.abs(np.array(a["score"], float) - np.array(b["score"], float))))
      for a, b in zip(sq, rd)]
lens = " ".join("%d+%d" % (b["query_tokens"], b["document_tokens"]) for b in rd)
bad = len(sq) != len(rd) or max(ds) > tol
print("%s %-12s scores: max|diff| %.3g; pair lengths (query+document) %s"
      % ("FAIL" if bad else "ok  ", name, max(ds), lens))
sys.exit(1 if bad else 0)
EOF

run_ce() {  # FIXTURE RECIPE(default|int4|fp32) MAXSEQ(file|N)
    local fx=$1 rc=$2 ms=$3 m="$W/$1-$2" t="$W/$1-$2-$3"
    local rargs=() margs=()
    [ "$rc" != default ] && rargs=(--recipe "$W/$rc.yaml")
    [ "$ms" != file ] && margs=(--max-seq "$ms")
    if [ ! -f "$m.sqm" ] && ! "$SQUINT" quantize "$W/$fx" --calib "$W/$fx.sqc" \
            ${rargs[@]+"${rargs[@]}"} -o "$m.sqm" --threads 1 > "$m.q.log" 2>&1; then
        echo "FAIL $fx-$rc: squint quantize: $(tail -2 "$m.q.log")"
        return 1
    fi
    if ! "$SQUINT" rerank "$m.sqm" --pairs "$W/pairs.jsonl" ${margs[@]+"${margs[@]}"} \
            --threads 1 --output "$t.squint.jsonl" > "$t.rr.log" 2>&1; then
        echo "FAIL $fx-$rc-$ms: squint rerank: $(tail -2 "$t.rr.log")"
        return 1
    fi
    "$PY" "$W/compare_pairs.py" logits "$t.squint.jsonl" "$t.squint.npy" || return 1
    if ! "$PY" "$READER" "$m.sqm" --pairs "$W/$fx.q.ids.jsonl" "$W/$fx.d.ids.jsonl" \
            ${margs[@]+"${margs[@]}"} --out "$t.reader.npy" --scores-out "$t.reader.jsonl" \
            --gelu spec --stats "$t.stats.jsonl" --explain "$t.squint.npy" --tol "$TOL" \
            > "$t.r.log" 2>&1; then
        echo "FAIL $fx-$rc-$ms: reader: $(tail -3 "$t.r.log")"
        return 1
    fi
    local r=0 out
    out=$("$PY" "$W/compare.py" "$fx-$rc-$ms" "$t.squint.npy" "$t.reader.npy" \
          "$t.stats.jsonl" "$TOL") || r=1
    sed 's/ at text / at pair /; s/ dim 0 / /; s/texts /pairs /; s/     text /     pair /' <<< "$out"
    out=$("$PY" "$W/compare_pairs.py" scores "$t.squint.jsonl" "$fx-$rc-$ms" \
          "$t.reader.jsonl" "$TOL") || r=1
    echo "  $out"
    return $r
}

gen ce --shape tiny --seed 5 --outliers 2 --cross-encoder 1 --ce-activation sigmoid
gen cei --shape tiny --seed 11 --cross-encoder 1 --ce-activation identity
for fx in ce cei; do
    if ! "$SQUINT" calibrate "$W/$fx" -o "$W/$fx.sqc" --quiet --threads 1 > "$W/$fx.cal.log" 2>&1; then
        echo "FAIL: squint calibrate $fx: $(tail -2 "$W/$fx.cal.log")"
        exit 1
    fi
    # each text's ids, untruncated; the reader strips [CLS] / [SEP] and cuts
    if ! "$SQUINT" tokenize "$W/$fx" --input "$W/pairs.jsonl" --field query --ids-only \
            --max-seq 4096 > "$W/$fx.q.ids.jsonl" 2> "$W/$fx.tq.log" ||
       ! "$SQUINT" tokenize "$W/$fx" --input "$W/pairs.jsonl" --field document --ids-only \
            --max-seq 4096 > "$W/$fx.d.ids.jsonl" 2> "$W/$fx.td.log"; then
        echo "FAIL: squint tokenize $fx: $(tail -2 "$W/$fx.tq.log" "$W/$fx.td.log")"
        exit 1
    fi
done
echo "cross-encoders: $NPAIRS pairs per model, logits and scores of squint rerank --pairs"
for c in ce:default ce:int4 ce:fp32 cei:default cei:int4; do
    for ms in file 24; do
        run_ce "${c%%:*}" "${c#*:}" "$ms" || fail=1
    done
done
info=$("$PY" "$READER" "$W/cei-int4.sqm" --info --no-verify 2>&1)
for want in "num_labels 1" "classifier: 1 labels .*score_activation identity" "embeddings int4-g128"; do
    if ! grep -Eq -- "$want" <<< "$info"; then
        echo "FAIL --info of cei-int4.sqm lacks '$want':"; echo "$info"; fail=1
    fi
done
# The comparison has teeth: the reader with one 6.11 rule broken on purpose
# (token types all 0; truncation query first) must disagree with squint.
for ab in types0 query-first; do
    t="$W/ce-default-24"
    if "$PY" "$READER" "$W/ce-default.sqm" --pairs "$W/ce.q.ids.jsonl" "$W/ce.d.ids.jsonl" \
            --max-seq 24 --out "$W/ab.npy" --ablate "$ab" > "$W/ab.log" 2>&1 &&
       d=$("$PY" -c "
import numpy as np
print('%.3g' % np.abs(np.load('$W/ab.npy').astype(float) - np.load('$t.squint.npy')).max())") &&
       "$PY" -c "import sys; sys.exit(0 if $d > 1e-2 else 1)"; then
        echo "ok   ablation $ab (deliberately wrong reader) disagrees: max|logit diff| $d"
    else
        echo "FAIL ablation $ab: the wrong reader was not caught (${d:-error}: $(tail -1 "$W/ab.log"))"
        fail=1
    fi
done

# zstd form: read when a Python zstd module exists, else exit 3.
if "$SQUINT" quantize "$W/tiny" --calib "$W/tiny.sqc" -o "$W/tiny-z.sqm" --compress=3 --threads 1 \
        > "$W/z.log" 2>&1; then
    "$PY" "$READER" "$W/tiny-z.sqm" --ids "$W/tiny-default.ids.jsonl" --out "$W/z.npy" \
        --gelu spec > "$W/zr.log" 2>&1
    zrc=$?
    if [ $zrc = 3 ] && grep -q "zstd form unsupported" "$W/zr.log"; then
        echo "ok   zstd form: unsupported here (no Python zstd module), exit 3"
    elif [ $zrc = 0 ] && "$PY" -c "
import numpy as np, sys
a = np.load('$W/z.npy'); b = np.load('$W/tiny-default.reader.npy')
sys.exit(0 if np.array_equal(a, b) else 1)"; then
        echo "ok   zstd form: read, same embeddings as the plain file"
    else
        echo "FAIL zstd form: reader exit $zrc: $(tail -2 "$W/zr.log")"; fail=1
    fi
else
    echo "FAIL squint quantize --compress: $(tail -2 "$W/z.log")"; fail=1
fi

# A corrupted tensor byte is refused (exit 2) naming the tensor.
"$PY" - "$W/tiny-default.sqm" "$W/bad.sqm" <<'EOF'
import sys, struct
b = bytearray(open(sys.argv[1], "rb").read())
data_off = struct.unpack_from("<Q", b, 48)[0]
b[data_off + 1000] ^= 0x10
open(sys.argv[2], "wb").write(b)
EOF
"$PY" "$READER" "$W/bad.sqm" --info > "$W/bad.log" 2>&1
brc=$?
if [ $brc = 2 ] && grep -q "checksum mismatch" "$W/bad.log"; then
    echo "ok   corrupted file refused: $(head -1 "$W/bad.log")"
else
    echo "FAIL corrupted file: exit $brc: $(head -2 "$W/bad.log")"; fail=1
fi

echo "time: $(( $(date +%s) - START )) s"
if [ $fail != 0 ]; then
    echo "FAIL"
    exit 1
fi
echo "PASS"
exit 0
