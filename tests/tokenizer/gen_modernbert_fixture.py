#!/usr/bin/env python3
"""Build the ModernBERT-shaped fixture tokenizer (no real ModernBERT
tokenizer.json is reachable offline): a byte-level BPE trained here with the
Hugging Face `tokenizers` BpeTrainer, laid out the way ModernBERT's file is
(public facts: the GPT-NeoX / OLMo id layout, ModernBERT's added tokens):

  ids 0, 1          |||IP_ADDRESS|||, <|padding|>   (added, special)
  ids 2 .. 2+T-1    the trained model: 256 byte pieces, then its merges' pieces
  ids .. 50253      filler pieces (no merge makes them: never produced)
  ids 50254..50276  runs of 24 down to 2 spaces       (added, normalized, not special)
  ids 50277..50279  |||EMAIL_ADDRESS|||, |||PHONE_NUMBER|||, <|endoftext|>
  ids 50280..50284  [UNK] [CLS] [SEP] [PAD] [MASK]    ([MASK] lstrip true)
  ids 50285..50367  [unused0] .. [unused82]
normalizer NFC, pre_tokenizer ByteLevel (add_prefix_space false, trim_offsets
true, use_regex true), decoder ByteLevel, post_processor TemplateProcessing
single "[CLS]:0 $A:0 [SEP]:0", pair "[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1".

Deterministic in its output only as far as the trainer is: the generated file
is committed (zstd) and this script documents how it was made.
Usage: gen_modernbert_fixture.py <shared-data-dir> <out-dir>
(writes <out-dir>/tokenizer.json and tokenizer_config.json)."""
import json
import os
import sys

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

TRAINED = 12000  # model pieces from the trainer (bytes + merges)
MODEL_END = 50254  # first id after the filler
N_UNUSED = 83


def texts(data):
    out = []
    for rel, cols in (("stsb-glue/train.tsv", ("sentence1", "sentence2")),
                      ("sst2-glue/train.tsv", ("sentence",))):
        with open(os.path.join(data, rel), encoding="utf-8") as f:
            head = f.readline().rstrip("\r\n").split("\t")
            idx = [head.index(c) for c in cols]
            for line in f:
                fl = line.rstrip("\r\n").split("\t")
                out.extend(fl[i] for i in idx if i < len(fl))
    with open(os.path.join(data, "scifact/beir-format/corpus.jsonl"), encoding="utf-8") as f:
        for line in f:
            if line.strip():
                o = json.loads(line)
                out.append(o["title"])
                out.append(o["text"])
    return out


def main():
    data, outdir = sys.argv[1], sys.argv[2]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tr = trainers.BpeTrainer(vocab_size=TRAINED, min_frequency=2, show_progress=False,
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                             special_tokens=[])
    tok.train_from_iterator(texts(data), tr)
    m = json.loads(tok.to_str())["model"]
    trained = sorted(m["vocab"].items(), key=lambda kv: kv[1])
    assert [i for _, i in trained] == list(range(len(trained)))
    vocab = {}
    added = []

    def add(content, i, special=True, normalized=False, lstrip=False):
        added.append({"id": i, "content": content, "single_word": False, "lstrip": lstrip,
                      "rstrip": False, "normalized": normalized, "special": special})

    vocab["|||IP_ADDRESS|||"] = 0
    vocab["<|padding|>"] = 1
    add("|||IP_ADDRESS|||", 0)
    add("<|padding|>", 1)
    for piece, i in trained:
        vocab[piece] = 2 + i
    k = 0
    while len(vocab) < MODEL_END:
        vocab["<fill%05d>" % k] = len(vocab)
        k += 1
    for n in range(24, 1, -1):
        vocab[" " * n] = len(vocab)
        add(" " * n, vocab[" " * n], special=False, normalized=True)
    for s in ("|||EMAIL_ADDRESS|||", "|||PHONE_NUMBER|||", "<|endoftext|>"):
        vocab[s] = len(vocab)
        add(s, vocab[s])
    assert len(vocab) == 50280
    nxt = 50280
    for s in ("[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"):
        add(s, nxt, lstrip=(s == "[MASK]"))
        nxt += 1
    for u in range(N_UNUSED):
        add("[unused%d]" % u, nxt)
        nxt += 1
    assert nxt == 50368
    merges = [mm if isinstance(mm, str) else " ".join(mm) for mm in m["merges"]]
    sp = lambda name, i: {"id": name, "ids": [i], "tokens": [name]}
    out = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                          "use_regex": True},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {"[CLS]": sp("[CLS]", 50281), "[SEP]": sp("[SEP]", 50282)},
        },
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }
    cfg = {"model_max_length": 8192, "tokenizer_class": "PreTrainedTokenizerFast",
           "clean_up_tokenization_spaces": True, "cls_token": "[CLS]", "sep_token": "[SEP]",
           "pad_token": "[PAD]", "mask_token": "[MASK]", "unk_token": "[UNK]",
           "model_input_names": ["input_ids", "attention_mask"]}
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    with open(os.path.join(outdir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=1)
        f.write("\n")
    print("modernbert fixture: %d trained pieces, %d merges, %d filler, %d added" %
          (len(trained), len(merges), k, len(added)))


if __name__ == "__main__":
    main()
