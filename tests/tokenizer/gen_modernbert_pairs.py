#!/usr/bin/env python3
"""The pair golden of test_modernbert_parity.c: Hugging Face tokenizers (the
Rust library) first encodes every text of <out-dir>/modernbert.texts.jsonl
and must give the ids transformers.js gave (the single-text golden); then
tokenizers (the
Rust library transformers' fast tokenizers run) encodes each pair of
<out-dir>/modernbert.pairs.jsonl (written by js/gen_modernbert_golden.mjs)
with the fixture tokenizer.json, first untruncated (it must give the ids and
token types transformers.js gave), then truncated to the pair's max_len with
strategy longest_first. Writes <out-dir>/modernbert-pairs.ids: a '#' header,
then per pair "max_len n_type0 id id ...", n_type0 the count of leading
tokens of type 0 (the rest are type 1).
Usage: gen_modernbert_pairs.py <tokenizer.json> <out-dir>"""
import json
import os
import sys

import tokenizers
from tokenizers import Tokenizer


def main():
    tj, outdir = sys.argv[1], sys.argv[2]
    tok = Tokenizer.from_file(tj)
    texts = [json.loads(l) for l in open(os.path.join(outdir, "modernbert.texts.jsonl"),
                                         encoding="utf-8")]
    for k, r in enumerate(texts):
        got = " ".join(map(str, tok.encode(r["text"]).ids))
        if got != r["ids"]:
            sys.exit("text %d: tokenizers and transformers.js disagree: %r" % (k, r["text"]))
    rows = [json.loads(l) for l in open(os.path.join(outdir, "modernbert.pairs.jsonl"),
                                        encoding="utf-8")]
    out, cut = [], 0
    for k, r in enumerate(rows):
        tok.no_truncation()
        full = tok.encode(r["a"], r["b"])
        if full.ids != r["ids"] or full.type_ids != r["types"]:
            sys.exit("pair %d: tokenizers and transformers.js disagree untruncated: %r" % (k, r))
        tok.enable_truncation(max_length=r["max_len"], strategy="longest_first")
        e = tok.encode(r["a"], r["b"])
        t = e.type_ids
        n0 = t.index(1) if 1 in t else len(t)
        if any(x != 1 for x in t[n0:]):
            sys.exit("pair %d: token types are not 0s then 1s" % k)
        cut += len(e.ids) < len(full.ids)
        out.append("%d %d %s" % (r["max_len"], n0, " ".join(map(str, e.ids))))
    hdr = ("# squint ModernBERT-shaped fixture pair golden: tokenizers %s longest_first "
           "truncation; untruncated ids and types equal transformers.js's for all %d pairs "
           "(%d truncated), and its ids equal transformers.js's for all %d single texts. "
           "Regenerate: tests/tokenizer/regen-modernbert-golden.sh\n"
           % (tokenizers.__version__, len(rows), cut, len(texts)))
    with open(os.path.join(outdir, "modernbert-pairs.ids"), "w") as f:
        f.write(hdr + "\n".join(out) + "\n")
    print("modernbert: tokenizers = transformers.js on %d texts; %d pairs, %d truncated"
          % (len(texts), len(rows), cut))


if __name__ == "__main__":
    main()
