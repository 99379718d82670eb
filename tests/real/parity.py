#!/usr/bin/env python3
"""fp32 and tokenizer parity of squint with the Hugging Face references on a real model.

usage: parity.py SQUINT MODEL_DIR SHARED_DATA WORKDIR [--texts N] [--tok-texts N] [--report FILE]

Run with the reference venv's python (scripts/ref_venv.sh): it imports
sentence_transformers (which runs transformers' BertModel on PyTorch) and
tokenizers (the Rust tokenizer the checkpoint's tokenizer.json was made for).

1. Tokenizer: squint's ids (`squint tokenize --ids-only`) against
   tokenizers.Tokenizer.from_file(tokenizer.json), both truncated at 512, on
   --tok-texts texts (default 10,000): STS-B, SciFact, SST-2 and lines built
   to be hard (tests/tokenizer's edge strings, multilingual text, emoji
   sequences, C source lines of this repository, whitespace and control
   characters spliced into sentences). Gate: 0 mismatches.
2. Embeddings: `squint embed` (fp32, the checkpoint folder) against
   SentenceTransformer(MODEL_DIR).encode on --texts texts (default 1,000: STS-B
   test sentences and SciFact documents, many beyond the 256-token limit).
   Gates: max |diff| <= 1e-4, min cosine >= 0.99999, and every squint
   embedding's nearest reference embedding is its own text's (so the check
   fails for embeddings that do not depend on the text).
Prints the figures with the worst texts; exit 1 when a gate fails.
"""
import json
import os
import subprocess
import sys
import unicodedata

import numpy as np


def read_tsv_column(path, col, skip_header):
    out = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if skip_header and i == 0:
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) > col and parts[col].strip():
                out.append(parts[col])
    return out


def stsb_sentences(data, split):
    path = os.path.join(data, "stsb-glue", "original", "sts-%s.tsv" % split)
    seen, out = set(), []
    for col in (5, 6):
        for s in read_tsv_column(path, col, False):
            if s not in seen:
                seen.add(s)
                out.append(s)
    return out


def scifact_docs(data):
    out = []
    with open(os.path.join(data, "scifact", "beir-format", "corpus.jsonl"), encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            out.append((d.get("title", "") + " " + d.get("text", "")).strip())
    return out


MULTILINGUAL = [
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "Le cœur a ses raisons que la raison ne connaît point.",
    "¿Dónde está la biblioteca? ¡Aquí!",
    "Быстрая коричневая лиса прыгает через ленивую собаку.",
    "東京は日本の首都であり、人口は約1400万人です。",
    "我们在北京大学学习自然语言处理。",
    "서울은 대한민국의 수도입니다.",
    "हिन्दी भारत की राजभाषा है।",
    "العربية لغة رسمية في اثنتين وعشرين دولة.",
    "עברית היא שפה שמית.",
    "Η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο.",
    "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ",
    "Tiếng Việt có nhiều dấu thanh.",
    "Ελληνικά, Русский, 日本語 and English in one line.",
    "İstanbul'da ılık bir gün; ĞÜŞÖÇ ğüşöç.",
    "Ångström, Øresund, Æsir, Þórr, ß, ﬁ ligature, ½ cup, ² squared",
]
EMOJI = [
    "I love this 😍😍😍", "family: 👨‍👩‍👧‍👦 and flags 🇺🇸🇯🇵🇩🇪", "skin tones 👍🏻👍🏿 ok",
    "rocket 🚀 to the moon 🌕!", "keycap 1️⃣ #️⃣ and ❤️ vs ❤", "🤖🧠 AI models on CPUs ⚡",
    "mixed😀text😀without😀spaces", "math ∑∫√∞ ≠ ≤ ≥ and arrows →⇒↔",
]
SPLICES = ["\t", "  ", "\u00a0", "\u3000", "\u200b", "\u200d", "\r", "\u0301", "\x07", "\ufeff",
           "\u2028", "\ufffd", "\u00ad", "\u202e"]


def hard_lines(repo, sentences, edge_file, count):
    """Deterministic hard lines: edge strings, multilingual, emoji, code, splices."""
    out = []
    if os.path.isfile(edge_file):
        # NUL is left out: squint's text inputs (JSONL, HTTP) refuse it by design.
        out += [s for s in json.load(open(edge_file, encoding="utf-8")) if isinstance(s, str) and "\0" not in s]
    out += MULTILINGUAL + EMOJI
    for s in MULTILINGUAL:
        out.append(unicodedata.normalize("NFD", s))
        out.append(s.upper())
    code = []
    for sub in ("libquant", "cmd", "serve"):
        d = os.path.join(repo, sub)
        for name in sorted(os.listdir(d)):
            if name.endswith(".c"):
                with open(os.path.join(d, name), encoding="utf-8", errors="replace") as f:
                    code += [l.rstrip("\n") for l in f if l.strip()]
    step = max(1, len(code) // max(1, count // 2))
    out += code[::step][: count // 2]
    i = 0
    while len(out) < count:
        s = sentences[i % len(sentences)]
        sp = SPLICES[i % len(SPLICES)]
        words = s.split(" ")
        k = (i * 7) % max(1, len(words))
        words.insert(k, sp)
        out.append(" ".join(words) if i % 2 else sp.join(words))
        i += 1
    return out[:count]


def write_jsonl(path, texts):
    with open(path, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps({"text": t}, ensure_ascii=False) + "\n")


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("parity: %s failed (exit %d): %s" % (" ".join(cmd), r.returncode, r.stderr.strip()[-800:]))
    return r.stdout


def show(t, n=90):
    t = t.encode("unicode_escape").decode("ascii")
    return t if len(t) <= n else t[:n] + "..."


def tokenizer_parity(sq, model, texts, work):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(model, "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(512)
    ref = [e.ids for e in tok.encode_batch(texts)]
    path = os.path.join(work, "tok.jsonl")
    write_jsonl(path, texts)
    got = [json.loads(l)["ids"] for l in run([sq, "tokenize", model, "--input", path, "--field", "text",
                                              "--max-seq", "512", "--ids-only"]).splitlines()]
    if len(got) != len(texts):
        sys.exit("parity: squint tokenize gave %d lines for %d texts" % (len(got), len(texts)))
    bad = [i for i in range(len(texts)) if got[i] != ref[i]]
    return {"texts": len(texts), "mismatches": len(bad),
            "tokens": int(sum(len(r) for r in ref)),
            "truncated": int(sum(len(r) == 512 for r in ref)),
            "examples": [{"index": i, "text": texts[i][:200], "squint": got[i][:40], "tokenizers": ref[i][:40]}
                         for i in bad[:5]]}


def embedding_parity(sq, model, texts, work):
    from sentence_transformers import SentenceTransformer
    st = SentenceTransformer(model, device="cpu")
    ref = st.encode(texts, batch_size=32, convert_to_numpy=True).astype(np.float64)
    path = os.path.join(work, "emb.jsonl")
    out = os.path.join(work, "emb.npy")
    write_jsonl(path, texts)
    run([sq, "embed", model, "--input", path, "--field", "text", "--output", out, "--quiet"])
    got = np.load(out).astype(np.float64)
    if got.shape != ref.shape:
        sys.exit("parity: squint gave %s, sentence-transformers %s" % (got.shape, ref.shape))
    diff = np.abs(got - ref).max(axis=1)
    cos = (got * ref).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(ref, axis=1))
    # Does the check depend on the text? Each squint row's nearest reference row must be its own.
    gn = got / np.linalg.norm(got, axis=1, keepdims=True)
    rn = ref / np.linalg.norm(ref, axis=1, keepdims=True)
    sim = gn @ rn.T
    # Texts the model cannot tell apart (duplicates, case-only differences for
    # an uncased vocabulary) have the same reference row: they count as own.
    same = (rn @ rn.T) > 1 - 1e-9
    own = int(sum(same[i, j] for i, j in enumerate(sim.argmax(1))))
    off = sim.copy()
    off[same] = -1
    worst = int(diff.argmax())
    n_tok = [len(st.tokenizer(t)["input_ids"]) for t in texts]
    return {"texts": len(texts), "dim": int(ref.shape[1]), "max_abs_diff": float(diff.max()),
            "mean_max_abs_diff": float(diff.mean()), "cos_min": float(cos.min()),
            "worst": {"index": worst, "max_abs_diff": float(diff[worst]), "text": texts[worst][:200]},
            "own_nearest": own, "closest_other_cos": float(off.max()),
            "mean_other_cos": float(off[off > -1].mean()),
            "beyond_max_seq": int(sum(n > st.max_seq_length for n in n_tok)),
            "max_seq_length": int(st.max_seq_length)}


def main():
    args = sys.argv[1:]
    opts = {"--texts": 1000, "--tok-texts": 10000, "--report": None}
    for k in list(opts):
        if k in args:
            i = args.index(k)
            opts[k] = args[i + 1] if k == "--report" else int(args[i + 1])
            del args[i:i + 2]
    if len(args) != 4:
        sys.exit(__doc__.strip().splitlines()[2])
    sq, model, data, work = args
    repo = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    os.makedirs(work, exist_ok=True)

    n = opts["--tok-texts"]
    stsb = stsb_sentences(data, "train") + stsb_sentences(data, "dev") + stsb_sentences(data, "test")
    sci = scifact_docs(data)
    sst = read_tsv_column(os.path.join(data, "sst2-glue", "dev.tsv"), 0, True) + \
        read_tsv_column(os.path.join(data, "sst2-glue", "train.tsv"), 0, True)
    share = [int(n * 0.3), int(n * 0.2), int(n * 0.3)]
    tok_texts = stsb[: share[0]] + sci[: share[1]] + sst[: share[2]]
    tok_texts += hard_lines(repo, stsb, os.path.join(repo, "tests", "tokenizer", "edge_strings.json"),
                            n - len(tok_texts))
    tp = tokenizer_parity(sq, model, tok_texts, work)
    print("tokenizer  %d texts (%d STS-B, %d SciFact, %d SST-2, %d hard lines), %d tokens, %d truncated at 512:"
          " %d mismatches" % (tp["texts"], share[0], share[1], share[2], n - sum(share), tp["tokens"],
                              tp["truncated"], tp["mismatches"]))
    for e in tp["examples"]:
        print("  mismatch text %d: %s\n    squint     %s\n    tokenizers %s"
              % (e["index"], show(e["text"]), e["squint"], e["tokenizers"]))

    m = opts["--texts"]
    test = stsb_sentences(data, "test")
    emb_texts = test[: m // 2] + sci[: m - m // 2]
    ep = embedding_parity(sq, model, emb_texts, work)
    print("embeddings %d texts (%d STS-B test, %d SciFact; %d beyond max_seq_length %d), dim %d"
          % (ep["texts"], m // 2, m - m // 2, ep["beyond_max_seq"], ep["max_seq_length"], ep["dim"]))
    print("           max |diff| %.3g (mean of per-text max %.3g)  cos min %.9f"
          % (ep["max_abs_diff"], ep["mean_max_abs_diff"], ep["cos_min"]))
    print("           worst text %d (%.3g): %s" % (ep["worst"]["index"], ep["worst"]["max_abs_diff"],
                                                   show(ep["worst"]["text"])))
    print("           own text nearest: %d of %d; cosine to the closest other text max %.4f, mean %.4f"
          % (ep["own_nearest"], ep["texts"], ep["closest_other_cos"], ep["mean_other_cos"]))
    gates = [("tokenizer_mismatches", tp["mismatches"] == 0, "%d == 0" % tp["mismatches"]),
             ("max_abs_diff", ep["max_abs_diff"] <= 1e-4, "%.3g <= 1e-4" % ep["max_abs_diff"]),
             ("cos_min", ep["cos_min"] >= 0.99999, "%.9f >= 0.99999" % ep["cos_min"]),
             ("own_nearest", ep["own_nearest"] == ep["texts"], "%d == %d" % (ep["own_nearest"], ep["texts"]))]
    for name, ok, what in gates:
        print("gate %-22s %s  %s" % (name, "PASS" if ok else "FAIL", what))
    if opts["--report"]:
        with open(opts["--report"], "w", encoding="utf-8") as f:
            json.dump({"tokenizer": tp, "embeddings": ep,
                       "gates": {g[0]: g[1] for g in gates}}, f, indent=1, ensure_ascii=False)
    sys.exit(0 if all(g[1] for g in gates) else 1)


if __name__ == "__main__":
    main()
