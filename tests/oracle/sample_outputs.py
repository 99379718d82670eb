#!/usr/bin/env python3
"""Cut a sample out of `squint embed`'s parity outputs for the wrong-oracle runs.

    sample_outputs.py OUT PREFIX --first N --long-from T

OUT.tok.jsonl (one {"ids": [...]} per input), OUT.hid.npy ([total tokens, H],
the inputs' hidden states one after another) and OUT.npy ([inputs, H]) are
read; PREFIX.tok.jsonl, PREFIX.hid.npy and PREFIX.npy get the first N inputs
and every later input of at least T tokens, in their order.

Why: an oracle with one mechanism removed only has to disagree with squint;
running it on all 200+ inputs at a base shape costs minutes per mechanism.
The long inputs stay in the sample because some mechanisms (a local window,
relative buckets, rotary at distance) only show past a length. The correct
oracle still runs on every input.
"""
import argparse
import json
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="OUT of OUT.tok.jsonl / OUT.hid.npy / OUT.npy")
    ap.add_argument("prefix", help="where the sample goes (PREFIX.tok.jsonl, ...)")
    ap.add_argument("--first", type=int, required=True, help="keep the first N inputs")
    ap.add_argument("--long-from", type=int, required=True, help="and every input of at least T tokens")
    args = ap.parse_args()
    if args.first < 1 or args.long_from < 1:
        sys.exit("sample_outputs: --first and --long-from must be >= 1")
    with open(args.out + ".tok.jsonl") as f:
        lines = [line for line in f if line.strip()]
    lens = [len(json.loads(line)["ids"]) for line in lines]
    hid = np.load(args.out + ".hid.npy")
    emb = np.load(args.out + ".npy")
    if hid.shape[0] != sum(lens) or emb.shape[0] != len(lens):
        sys.exit("sample_outputs: %s: %d inputs / %d tokens in the jsonl, hidden %s, embeddings %s"
                 % (args.out, len(lens), sum(lens), hid.shape, emb.shape))
    keep = [i for i, n in enumerate(lens) if i < args.first or n >= args.long_from]
    start = np.cumsum([0] + lens)
    with open(args.prefix + ".tok.jsonl", "w") as f:
        f.writelines(lines[i] for i in keep)
    np.save(args.prefix + ".hid.npy", np.concatenate([hid[start[i]:start[i + 1]] for i in keep]))
    np.save(args.prefix + ".npy", emb[keep])
    n_long = sum(1 for i in keep if i >= args.first)
    print("sample: the first %d of %d inputs and %d later ones of >= %d tokens (longest %d)"
          % (min(args.first, len(lens)), len(lens), n_long, args.long_from, max(lens[i] for i in keep)))


if __name__ == "__main__":
    main()
