#!/usr/bin/env python3
"""The Rust tokenizers library's ids for the XLM-R golden (regen-xlmr-golden.sh).

usage: xlmr_rust_ids.py TOKENIZER_JSON JS_IDS TEXTS_JSONL OUT_IDS

Reads the transformers.js golden (JS_IDS: '#' lines, '@ source count' lines,
id lines) and the texts in the same order (TEXTS_JSONL, one JSON string per
line), encodes every text with tokenizers (Rust; add_special_tokens true) and
writes OUT_IDS in the same layout with Rust's ids, the header naming both
versions and every text where the two disagree (source, index, text, both id
lists). Prints the count of disagreements.
"""
import json
import sys

import tokenizers
from tokenizers import Tokenizer


def main():
    tj, js_ids, texts_path, out = sys.argv[1:5]
    tok = Tokenizer.from_file(tj)
    texts = [json.loads(l) for l in open(texts_path, encoding="utf-8") if l.strip()]
    js_lines = open(js_ids, encoding="utf-8").read().split("\n")
    if js_lines and js_lines[-1] == "":
        js_lines.pop()
    body, diffs, k = [], [], 0
    src, idx = None, 0
    js_version = "?"
    for line in js_lines:
        if line.startswith("#"):
            js_version = line
            continue
        if line.startswith("@ "):
            body.append(line)
            src, idx = line.split(" ")[1], 0
            continue
        ids = " ".join(map(str, tok.encode(texts[k]).ids))
        if ids != line:
            diffs.append((src, idx + 1, texts[k], line, ids))
        body.append(ids)
        k += 1
        idx += 1
    if k != len(texts):
        sys.exit("xlmr_rust_ids: %d texts but %d id lines" % (len(texts), k))
    head = ["# squint XLM-R golden ids (with <s> </s>): tokenizers (Rust) %s on the test "
            "tokenizer.json (scripts/fetch_xlmr_tokenizer.py); regenerate: "
            "tests/tokenizer/regen-xlmr-golden.sh" % tokenizers.__version__,
            "# %d texts; transformers.js disagrees on %d of them (%s):"
            % (k, len(diffs), js_version.lstrip("# ").split(" ids")[0])]
    for s, i, t, a, b in diffs:
        head.append("# js differs: %s text %d %s" % (s, i, json.dumps(t, ensure_ascii=True)))
        head.append("#   js   %s" % a)
        head.append("#   rust %s" % b)
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(head + body) + "\n")
    print("xlmr: %d texts, transformers.js and Rust disagree on %d" % (k, len(diffs)))


if __name__ == "__main__":
    main()
