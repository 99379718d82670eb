#!/usr/bin/env python3
"""Independent reader for squint packed model files (.sqm).

Written from formats/SPEC.md (the container) and formats/SQM.md (the model
kind) only, with Python 3 and NumPy: it parses and verifies the container,
reads the metadata (a small YAML subset parser, no PyYAML needed), unpacks
the weights and runs the forward computation of SQM.md section 6 on token ids
(as `squint embed --tokens-output` writes them).

CLI:
    sqm_reader.py MODEL.sqm --info
    sqm_reader.py MODEL.sqm --ids IDS.jsonl --out OUT.npy [--gelu spec|exact]
                  [--stats STATS.jsonl] [--explain SQUINT.npy [--tol 1e-5]]
                  [--hidden-out H.npy] [--pooling cls|mean] [--normalize|--no-normalize]
    sqm_reader.py MODEL.sqm --pairs Q.jsonl D.jsonl --out LOGITS.npy [--max-seq M]
                  [--scores-out S.jsonl] [--stats ..] [--explain SQUINT_LOGITS.npy]

--pairs (a sequence classifier, config.num_labels > 0; SQM.md 6.11): line i
of Q.jsonl and D.jsonl (`squint tokenize --ids-only`, [cls] .. [sep], not
truncated) is the pair i; the reader strips the special tokens, builds the
pair sequence with token types 0 / 1 and the longest_first truncation to M,
and computes the logits (CLS row, tanh head, score linear) and the scores
(config.score_activation). --ablate types0|query-first deliberately breaks
one rule (to show that a comparison notices).

--gelu: spec (default) follows SQM.md 6.7's operation order; exact uses the
mathematical erf (to see how much the definition matters).
--explain: for each text whose embedding differs from squint's by more than
--tol, search for the SQM.md 6.10 case (a quantizer input a few ulps from a
half-integer that squint rounded the other way) and record in --stats
whether flipping such roundings reproduces squint.

Exit codes: 0 ok, 1 bad usage, 2 the file is refused, 3 zstd form unsupported
(no Python zstd module).
"""

import json
import math
import struct
import sys

import numpy as np

f32 = np.float32
f64 = np.float64

# ---------------------------------------------------------------------------
# XXH64 (seed 0), from the public xxHash specification.

_M64 = 0xFFFFFFFFFFFFFFFF
_P1 = 0x9E3779B185EBCA87
_P2 = 0xC2B2AE3D27D4EB4F
_P3 = 0x165667B19E3779F9
_P4 = 0x85EBCA77C2B2AE63
_P5 = 0x27D4EB2F165667C5


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & _M64


def _round(acc, lane):
    acc = (acc + lane * _P2) & _M64
    acc = _rotl(acc, 31)
    return (acc * _P1) & _M64


def _merge(acc, val):
    acc ^= _round(0, val)
    return (acc * _P1 + _P4) & _M64


def xxh64(data, seed=0):
    data = memoryview(data).cast("B")
    n = len(data)
    p = 0
    if n >= 32:
        v1 = (seed + _P1 + _P2) & _M64
        v2 = (seed + _P2) & _M64
        v3 = seed & _M64
        v4 = (seed - _P1) & _M64
        nstripes = n // 32
        lanes = struct.unpack_from("<%dQ" % (nstripes * 4), data, 0)
        P1, P2, M = _P1, _P2, _M64
        for i in range(0, nstripes * 4, 4):
            a = (v1 + lanes[i] * P2) & M
            v1 = ((((a << 31) | (a >> 33)) & M) * P1) & M
            a = (v2 + lanes[i + 1] * P2) & M
            v2 = ((((a << 31) | (a >> 33)) & M) * P1) & M
            a = (v3 + lanes[i + 2] * P2) & M
            v3 = ((((a << 31) | (a >> 33)) & M) * P1) & M
            a = (v4 + lanes[i + 3] * P2) & M
            v4 = ((((a << 31) | (a >> 33)) & M) * P1) & M
        p = nstripes * 32
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M64
        h = _merge(h, v1)
        h = _merge(h, v2)
        h = _merge(h, v3)
        h = _merge(h, v4)
    else:
        h = (seed + _P5) & _M64
    h = (h + n) & _M64
    while p + 8 <= n:
        k1 = _round(0, struct.unpack_from("<Q", data, p)[0])
        h ^= k1
        h = (_rotl(h, 27) * _P1 + _P4) & _M64
        p += 8
    if p + 4 <= n:
        h ^= (struct.unpack_from("<I", data, p)[0] * _P1) & _M64
        h = (_rotl(h, 23) * _P2 + _P3) & _M64
        p += 4
    while p < n:
        h ^= (data[p] * _P5) & _M64
        h = (_rotl(h, 11) * _P1) & _M64
        p += 1
    h ^= h >> 33
    h = (h * _P2) & _M64
    h ^= h >> 29
    h = (h * _P3) & _M64
    h ^= h >> 32
    return h


# ---------------------------------------------------------------------------
# Errors


class Refused(Exception):
    """The file is refused (exit 2)."""


class ZstdUnsupported(Exception):
    """zstd form without a Python zstd module (exit 3)."""


# ---------------------------------------------------------------------------
# Container (formats/SPEC.md)

DTYPES = {
    0x01: ("f32", 4, "<f4"),
    0x02: ("f64", 8, "<f8"),
    0x03: ("i32", 4, "<i4"),
    0x04: ("u32", 4, "<u4"),
    0x05: ("i64", 8, "<i8"),
    0x06: ("u64", 8, "<u8"),
    0x07: ("i8", 1, "i1"),
    0x08: ("u8", 1, "u1"),
    0x09: ("f16", 2, "<f2"),
    0x0A: ("bf16", 2, None),
    0x40: ("s8-panel", None, None),
    0x41: ("s4g128-panel", None, None),
}

KINDS = {b"SQC\0": "statistics", b"SQM\0": "model"}
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def align(x, a):
    return (x + a - 1) // a * a


def _utf8_ok(b):
    # Python's strict UTF-8 decoder refuses overlong forms, surrogates and
    # code points above U+10FFFF, as SPEC.md 4 requires.
    try:
        b.decode("utf-8", "strict")
        return True
    except UnicodeDecodeError:
        return False


def _decompress_zstd(raw, path):
    mod = None
    for name in ("zstandard", "pyzstd", "compression.zstd", "zstd"):
        try:
            mod = __import__(name, fromlist=["_"])
            break
        except ImportError:
            continue
    if mod is None:
        raise ZstdUnsupported("%s: zstd form unsupported (no Python zstd module)" % path)
    name = mod.__name__
    try:
        if name == "zstandard":
            dctx = mod.ZstdDecompressor()
            out = b"".join(_zstandard_frames(dctx, raw))
        elif name == "zstd":
            out = mod.decompress(raw)
        else:
            out = mod.decompress(raw)
    except Exception as e:  # decoding error
        raise Refused("%s: zstd decoding error: %s" % (path, e))
    if out[:4] != b"SQNT":
        raise Refused("%s: the decompressed stream does not start with \"SQNT\"" % path)
    return bytes(out)


def _zstandard_frames(dctx, raw):
    reader = dctx.stream_reader(raw, read_across_frames=True)
    while True:
        chunk = reader.read(1 << 20)
        if not chunk:
            break
        yield chunk


class Tensor:
    def __init__(self, name, dtype, dims, offset, size, xxh):
        self.name, self.dtype, self.dims = name, dtype, tuple(dims)
        self.offset, self.size, self.xxh = offset, size, xxh
        self.data = None  # uint8 array view

    @property
    def dtype_name(self):
        return DTYPES[self.dtype][0]

    def array(self):
        name, _, npd = DTYPES[self.dtype]
        if npd is None:
            raise Refused("tensor %s: dtype %s has no plain array view" % (self.name, name))
        shape = self.dims if self.dims else ()
        return self.data.view(np.dtype(npd)).reshape(shape)


def _size_rule(dtype, dims, name):
    code = DTYPES.get(dtype)
    if code is None:
        raise Refused("tensor %s: dtype code 0x%02X is unknown" % (name, dtype))
    if dtype in (0x40, 0x41):
        if len(dims) != 2:
            raise Refused("tensor %s: a packed tensor has ndim 2, not %d" % (name, len(dims)))
        n, k = dims
        if n == 0 or k == 0:
            return 0
        if dtype == 0x40:
            s = align(n, 16) * align(k, 4)
        else:
            s = align(n, 16) * align(k, 128) // 2
    else:
        s = code[1]
        if any(d == 0 for d in dims):
            return 0
        for d in dims:
            s *= d
    if s >= 1 << 64:
        raise Refused("tensor %s: size overflows 64 bits" % name)
    return s


class Container:
    """A verified container (SPEC.md 10.1 and, with verify=True, 10.2)."""

    def __init__(self, path, want_kind=b"SQM\0", verify=True):
        self.path = path
        with open(path, "rb") as fh:
            raw = fh.read()
        self.zstd = False
        if raw[:4] == ZSTD_MAGIC:
            raw = _decompress_zstd(raw, path)
            self.zstd = True
        self.raw = raw
        self._open(want_kind)
        if verify:
            self._verify()

    def _refuse(self, msg):
        raise Refused("%s: %s" % (self.path, msg))

    def _open(self, want_kind):
        raw = self.raw
        n = len(raw)
        if n == 0:
            self._refuse("empty file")
        if raw[:4] != b"SQNT"[: min(4, n)]:
            self._refuse("not a squint file (bad magic)")
        if n < 4:
            self._refuse("truncated")
        if n < 144:
            self._refuse("truncated (shorter than header + trailer)")
        (kind, vmaj, vmin, flags, md_off, md_size, dir_off, dir_size, data_off, data_size,
         file_size, md_x, dir_x) = struct.unpack_from("<4sHHIQQQQQQQQQ", raw, 4)
        hdr_x = struct.unpack_from("<Q", raw, 120)[0]
        if vmaj != 1:
            self._refuse("container major version %d is not supported" % vmaj)
        if xxh64(raw[:120]) != hdr_x:
            self._refuse("header checksum mismatch")
        # kind: 1+ ASCII capitals/digits then zero bytes
        k = kind.rstrip(b"\0")
        if not k or any(not (0x41 <= c <= 0x5A or 0x30 <= c <= 0x39) for c in k) \
                or b"\0" in k:
            self._refuse("malformed kind")
        if want_kind is not None and kind != want_kind:
            self._refuse("is a squint %s file, not a %s file"
                         % (KINDS.get(kind, repr(k.decode())), KINDS.get(want_kind, "?")))
        if flags != 0:
            self._refuse("flags 0x%x set (none is defined in 1.0)" % flags)
        if file_size != n:
            self._refuse("truncated" if n < file_size else "trailing data after the file")
        lim = file_size - 16
        for nm, o, s in (("metadata", md_off, md_size), ("directory", dir_off, dir_size),
                         ("data section", data_off, data_size)):
            if o + s >= 1 << 64 or o + s > lim:
                self._refuse("%s lies outside the file" % nm)
        if md_size > 256 << 20 or dir_size > 1 << 30:
            self._refuse("metadata or directory over the limit")
        if data_off % 64:
            self._refuse("data_offset is not a multiple of 64")
        if md_off != 128:
            self._refuse("metadata_offset is not 128")
        if dir_off != md_off + md_size:
            self._refuse("directory overlaps metadata" if dir_off < md_off + md_size
                         else "gap between metadata and directory")
        if data_off != align(dir_off + dir_size, 64):
            self._refuse("data section misplaced")
        if data_off + data_size != file_size - 16:
            self._refuse("data section does not end at the trailer")
        if any(raw[dir_off + dir_size:data_off]):
            self._refuse("nonzero padding before the data section")
        if raw[lim:lim + 8] != b"SQEND\0\0\0":
            self._refuse("bad end magic")
        meta = raw[md_off:md_off + md_size]
        if xxh64(meta) != md_x:
            self._refuse("metadata checksum mismatch")
        if b"\0" in meta or not _utf8_ok(meta):
            self._refuse("metadata is not valid UTF-8 without zero bytes")
        dirb = raw[dir_off:dir_off + dir_size]
        if xxh64(dirb) != dir_x:
            self._refuse("directory checksum mismatch")
        self.kind, self.version = kind, (vmaj, vmin)
        self.metadata_text = meta.decode("utf-8")
        self.data_off, self.data_size = data_off, data_size
        self.file_xxh = struct.unpack_from("<Q", raw, lim + 8)[0]
        # directory
        if dir_size < 4:
            self._refuse("directory too small")
        count = struct.unpack_from("<I", dirb, 0)[0]
        if count > 1000000 or 29 * count > dir_size - 4:
            self._refuse("tensor_count %d too large for the directory" % count)
        p = 4
        self.tensors = {}
        self.order = []

        def need(m):
            if p + m > dir_size:
                self._refuse("directory entry runs past the directory")

        for _ in range(count):
            need(2)
            nl = struct.unpack_from("<H", dirb, p)[0]
            p += 2
            if not 1 <= nl <= 512:
                self._refuse("tensor name length %d" % nl)
            need(nl)
            nb = dirb[p:p + nl]
            p += nl
            if b"\0" in nb or not _utf8_ok(nb):
                self._refuse("tensor name is not valid UTF-8 without zero bytes")
            name = nb.decode("utf-8")
            need(2)
            dtype, ndim = dirb[p], dirb[p + 1]
            p += 2
            if ndim > 8:
                self._refuse("tensor %s: ndim %d > 8" % (name, ndim))
            need(8 * ndim)
            dims = struct.unpack_from("<%dQ" % ndim, dirb, p)
            p += 8 * ndim
            need(24)
            off, size, tx = struct.unpack_from("<QQQ", dirb, p)
            p += 24
            if dtype not in DTYPES:
                self._refuse("tensor %s: dtype code 0x%02X is unknown" % (name, dtype))
            try:
                s = _size_rule(dtype, dims, name)
            except Refused as e:
                self._refuse(str(e))
            if s != size:
                self._refuse("tensor %s: size %d, its dtype and dims say %d" % (name, size, s))
            if off % 64:
                self._refuse("tensor %s: offset not a multiple of 64" % name)
            if off > data_size or size > data_size - off:
                self._refuse("tensor %s lies outside the data section" % name)
            if name in self.tensors:
                self._refuse("duplicate tensor name %s" % name)
            t = Tensor(name, dtype, dims, off, size, tx)
            t.data = np.frombuffer(raw, dtype=np.uint8, count=size, offset=data_off + off)
            self.tensors[name] = t
            self.order.append(t)
        if p != dir_size:
            self._refuse("bytes left after the last directory entry")
        rng = sorted((t.offset, t.offset + t.size, t.name) for t in self.order if t.size)
        for a, b in zip(rng, rng[1:]):
            if b[0] < a[1]:
                self._refuse("tensors %s and %s overlap" % (a[2], b[2]))

    def _verify(self):
        for t in self.order:
            if xxh64(t.data) != t.xxh:
                self._refuse("tensor %s: checksum mismatch" % t.name)
        covered = np.zeros(self.data_size, dtype=bool)
        for t in self.order:
            covered[t.offset:t.offset + t.size] = True
        data = np.frombuffer(self.raw, dtype=np.uint8, count=self.data_size,
                             offset=self.data_off)
        if np.any(data[~covered]):
            self._refuse("nonzero bytes between tensors in the data section")
        if xxh64(memoryview(self.raw)[:len(self.raw) - 16]) != self.file_xxh:
            self._refuse("file checksum mismatch")


# ---------------------------------------------------------------------------
# Minimal YAML (the subset SQM.md 2 describes: block mappings and sequences,
# flow mappings/sequences, plain / single / double-quoted scalars, literal
# block scalars, comments).


class YamlError(Exception):
    pass


_NULLS = ("~", "null", "Null", "NULL", "")
_TRUES = ("true", "True", "TRUE")
_FALSES = ("false", "False", "FALSE")


def _plain_scalar(s):
    s = s.strip()
    if s in _NULLS:
        return None
    if s in _TRUES:
        return True
    if s in _FALSES:
        return False
    try:
        if s.lstrip("+-").isdigit():
            return int(s, 10)
    except ValueError:
        pass
    try:
        if any(c.isdigit() for c in s) and s.lower() not in ("inf", "nan"):
            return float(s)
    except ValueError:
        pass
    if s in (".inf", ".Inf", ".INF", "+.inf"):
        return math.inf
    if s in ("-.inf", "-.Inf", "-.INF"):
        return -math.inf
    if s in (".nan", ".NaN", ".NAN"):
        return math.nan
    return s


_ESC = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v",
        "f": "\f", "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\",
        "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029"}


def _scan_quoted(s, i):
    """s[i] is a quote; returns (string, index after the closing quote)."""
    q = s[i]
    i += 1
    out = []
    while True:
        if i >= len(s):
            raise YamlError("unterminated quoted scalar")
        c = s[i]
        if q == "'":
            if c == "'":
                if i + 1 < len(s) and s[i + 1] == "'":
                    out.append("'")
                    i += 2
                    continue
                return "".join(out), i + 1
            out.append(c)
            i += 1
        else:
            if c == '"':
                return "".join(out), i + 1
            if c == "\\":
                e = s[i + 1]
                if e in _ESC:
                    out.append(_ESC[e])
                    i += 2
                elif e in "xuU":
                    w = {"x": 2, "u": 4, "U": 8}[e]
                    out.append(chr(int(s[i + 2:i + 2 + w], 16)))
                    i += 2 + w
                else:
                    raise YamlError("bad escape \\%s" % e)
                continue
            out.append(c)
            i += 1


def _strip_comment(s):
    """Remove a trailing ' #...' comment outside quotes."""
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c in "'\"" and (i == 0 or s[i - 1] in " \t:[{,-"):
            _, i = _scan_quoted(s, i)
            continue
        if c == "#" and (i == 0 or s[i - 1] in " \t"):
            return s[:i].rstrip()
        i += 1
    return s.rstrip()


def _parse_flow(s, i):
    """Parse a flow node at s[i:]; returns (value, next index)."""
    while i < len(s) and s[i] in " \t":
        i += 1
    if i >= len(s):
        return None, i
    c = s[i]
    if c == "{":
        d = {}
        i += 1
        while True:
            while i < len(s) and s[i] in " \t,":
                i += 1
            if s[i] == "}":
                return d, i + 1
            k, i = _parse_flow_scalar(s, i, ":")
            while s[i] in " \t":
                i += 1
            if s[i] != ":":
                raise YamlError("expected ':' in flow mapping")
            i += 1
            v, i = _parse_flow(s, i)
            d[k] = v
            while i < len(s) and s[i] in " \t":
                i += 1
            if s[i] == ",":
                i += 1
            elif s[i] != "}":
                raise YamlError("expected ',' or '}' in flow mapping")
    if c == "[":
        lst = []
        i += 1
        while True:
            while i < len(s) and s[i] in " \t":
                i += 1
            if s[i] == "]":
                return lst, i + 1
            v, i = _parse_flow(s, i)
            lst.append(v)
            while i < len(s) and s[i] in " \t":
                i += 1
            if s[i] == ",":
                i += 1
            elif s[i] != "]":
                raise YamlError("expected ',' or ']' in flow sequence")
    return _parse_flow_scalar(s, i, ",]}")


def _parse_flow_scalar(s, i, stops):
    """A scalar inside a flow collection: quoted, or plain up to ',', ']',
    '}' or ': ' (stops is informative: the same rule serves keys and values)."""
    if s[i] in "'\"":
        return _scan_quoted(s, i)
    j = i
    while j < len(s):
        if s[j] in ",]}":
            break
        if s[j] == ":" and (j + 1 == len(s) or s[j + 1] in " \t,]}"):
            break
        j += 1
    return _plain_scalar(s[i:j]), j


def _inline_value(text):
    """The value written after 'key:' or '- ' on the same line."""
    t = text.strip()
    if not t:
        return None
    if t[0] in "{[":
        v, j = _parse_flow(t, 0)
        if t[j:].strip():
            raise YamlError("trailing text after flow node: %r" % t)
        return v
    if t[0] in "'\"":
        v, j = _scan_quoted(t, 0)
        if t[j:].strip():
            raise YamlError("trailing text after quoted scalar: %r" % t)
        return v
    return _plain_scalar(t)


def _split_key(content):
    """'key: rest' -> (key, rest) or None when content is not a mapping entry."""
    if content[0] in "'\"":
        k, j = _scan_quoted(content, 0)
        rest = content[j:]
        if rest.startswith(":") and (len(rest) == 1 or rest[1] in " \t"):
            return k, rest[1:]
        return None
    i = 0
    while i < len(content):
        if content[i] == ":" and (i + 1 == len(content) or content[i + 1] in " \t"):
            return content[:i].strip(), content[i + 1:]
        i += 1
    return None


def yaml_load(text):
    raw_lines = text.split("\n")
    lines = []  # (indent, content, raw line index)
    for idx, ln in enumerate(raw_lines):
        if ln.strip() in ("---", "...") and not ln.startswith(" "):
            continue
        st = ln.lstrip(" ")
        if not st or st.startswith("#"):
            lines.append((None, "", idx))
            continue
        lines.append((len(ln) - len(st), st, idx))
    pos = [0]

    def skip_blank():
        while pos[0] < len(lines) and lines[pos[0]][0] is None:
            pos[0] += 1

    def literal_block(header, parent_indent):
        # header is '|', '|-', '|+', '>' etc. Only literal '|' forms are used.
        chomp = "clip"
        if "-" in header:
            chomp = "strip"
        elif "+" in header:
            chomp = "keep"
        folded = header.startswith(">")
        body = []
        ind = None
        while pos[0] < len(lines):
            i_, c_, ri = lines[pos[0]]
            rawl = raw_lines[ri]
            if i_ is None:
                # blank or comment-looking line: inside a block scalar, a line
                # starting with '#' at deeper indent is content
                st = rawl.lstrip(" ")
                if st.startswith("#") and ind is not None and len(rawl) - len(st) >= ind:
                    body.append(rawl[ind:])
                    pos[0] += 1
                    continue
                if st.startswith("#"):
                    break
                body.append("")
                pos[0] += 1
                continue
            if i_ <= parent_indent:
                break
            if ind is None:
                ind = i_
            if i_ < ind:
                break
            body.append(rawl[ind:])
            pos[0] += 1
        # trailing blank lines
        while body and body[-1] == "" and chomp != "keep":
            body.pop()
        if folded:
            s = " ".join(body)
        else:
            s = "\n".join(body)
        if chomp == "clip" and body:
            s += "\n"
        return s

    def node(indent):
        """Parse a block node whose lines are at indent >= indent."""
        skip_blank()
        if pos[0] >= len(lines):
            return None
        i_, c_, _ = lines[pos[0]]
        if i_ < indent:
            return None
        if c_.startswith("- ") or c_ == "-":
            return seq(i_)
        if _split_key(_strip_comment(c_)) is not None:
            return mapping(i_)
        # a lone scalar / flow node
        pos[0] += 1
        return _inline_value(_strip_comment(c_))

    def value_after(rest, ind):
        r = _strip_comment(rest).strip()
        if r.startswith("|") or r.startswith(">"):
            return literal_block(r, ind)
        if r:
            return _inline_value(r)
        # nested block node (or null)
        skip_blank()
        if pos[0] < len(lines):
            i2, c2, _ = lines[pos[0]]
            if i2 > ind or (i2 == ind and (c2.startswith("- ") or c2 == "-")):
                return node(i2)
        return None

    def mapping(ind):
        d = {}
        while True:
            skip_blank()
            if pos[0] >= len(lines):
                break
            i_, c_, _ = lines[pos[0]]
            if i_ < ind:
                break
            if i_ > ind:
                raise YamlError("bad indentation at line %d" % (lines[pos[0]][2] + 1))
            kv = _split_key(c_)
            if kv is None:
                raise YamlError("expected 'key:' at line %d" % (lines[pos[0]][2] + 1))
            k, rest = kv
            if k in d:
                raise YamlError("duplicate key %r" % k)
            pos[0] += 1
            d[k] = value_after(rest, ind)
        return d

    def seq(ind):
        lst = []
        while True:
            skip_blank()
            if pos[0] >= len(lines):
                break
            i_, c_, ri = lines[pos[0]]
            if i_ != ind or not (c_.startswith("- ") or c_ == "-"):
                break
            rest = c_[1:]
            sub = rest.lstrip(" ")
            if not sub:
                pos[0] += 1
                lst.append(value_after("", ind))
                continue
            sub_ind = ind + 1 + (len(rest) - len(sub))
            subc = _strip_comment(sub)
            if subc[0] not in "{['\"" and _split_key(subc) is not None:
                # "- key: v" starts a mapping at sub_ind
                lines[pos[0]] = (sub_ind, sub, ri)
                lst.append(mapping(sub_ind))
            else:
                pos[0] += 1
                lst.append(value_after(sub, ind))
        return lst

    skip_blank()
    if pos[0] >= len(lines):
        return None
    v = node(0)
    skip_blank()
    if pos[0] != len(lines):
        raise YamlError("unparsed text at line %d" % (lines[pos[0]][2] + 1))
    return v


# ---------------------------------------------------------------------------
# The model (SQM.md)


def _bool(v, name):
    if not isinstance(v, bool):
        raise Refused("metadata %s: expected a boolean, got %r" % (name, v))
    return v


def _int(v, name, lo, hi):
    if isinstance(v, bool) or not isinstance(v, int):
        raise Refused("metadata %s: expected an integer, got %r" % (name, v))
    if not lo <= v <= hi:
        raise Refused("metadata %s: %d outside %d .. %d" % (name, v, lo, hi))
    return v


def _enum(v, name, values):
    if v not in values:
        raise Refused("metadata %s: %r is not one of %s" % (name, v, ", ".join(values)))
    return v


class Linear:
    """One linear, unpacked. kind 'fp32', 'int8' or 'int4-g128'."""

    def __init__(self, model, prefix, N, K):
        t = model.tensor
        self.name = prefix
        w = t(prefix + ".weight")
        if w.dims != (N, K):
            raise Refused("tensor %s.weight: shape %s, expected [%d, %d]"
                          % (prefix, list(w.dims), N, K))
        self.N, self.K = N, K
        self.bias = model.f32(prefix + ".bias", (N,))
        if w.dtype == 0x01:
            self.kind = "fp32"
            self.W = w.array().astype(f32)
            return
        if w.dtype not in (0x40, 0x41):
            raise Refused("tensor %s.weight: dtype %s" % (prefix, w.dtype_name))
        int4 = w.dtype == 0x41
        self.kind = "int4-g128" if int4 else "int8"
        N_pad = align(N, 16)
        K_pad = align(K, 128 if int4 else 4)
        raw = w.data
        if int4:
            b = raw.reshape(N_pad // 16, K_pad // 4, 32)
            nib = np.concatenate([b & 15, b >> 4], axis=2).astype(np.int16)
            if np.any(nib == 8):
                raise Refused("tensor %s.weight: nibble 0x8 (-8)" % prefix)
            rows = ((nib ^ 8) - 8).reshape(N_pad // 16, K_pad // 4, 16, 4)
        else:
            rows = raw.view(np.int8).reshape(N_pad // 16, K_pad // 4, 16, 4).astype(np.int16)
            if np.any(rows == -128):
                raise Refused("tensor %s.weight: value -128" % prefix)
        W = rows.transpose(0, 2, 1, 3).reshape(N_pad, K_pad).astype(np.int64)
        if np.any(W[N:, :]) or np.any(W[:, K:]):
            raise Refused("tensor %s.weight: nonzero padding" % prefix)
        self.N_pad, self.K_pad = N_pad, K_pad
        self.Wq = W  # [N_pad, K_pad]
        if int4:
            G = K_pad // 128
            self.G = G
            self.scale = model.f32(prefix + ".scale", (N, G))
            wsum = model.arr(prefix + ".wsum", 0x03, (N_pad, G)).astype(np.int64)
            want = W.reshape(N_pad, G, 128).sum(axis=2)
        else:
            self.scale = model.f32(prefix + ".scale", (N,))
            wsum = model.arr(prefix + ".wsum", 0x03, (N_pad,)).astype(np.int64)
            want = W.sum(axis=1)
        if not np.array_equal(wsum, want):
            raise Refused("tensor %s.wsum: does not match the panel values" % prefix)
        if not (np.all(np.isfinite(self.scale)) and np.all(self.scale > 0)):
            raise Refused("tensor %s.scale: not finite and > 0" % prefix)
        self.wsum = wsum
        self.a = model.f32(prefix + ".act_scale", (1,))[0]
        if not (np.isfinite(self.a) and self.a > 0):
            raise Refused("tensor %s.act_scale: not finite and > 0" % prefix)
        if (prefix + ".smooth") in model.c.tensors:
            s = model.f32(prefix + ".smooth", (K,))
            if not (np.all(np.isfinite(s)) and np.all(s > 0)):
                raise Refused("tensor %s.smooth: not finite and > 0" % prefix)
        else:
            s = np.ones(K, dtype=f32)
        self.smooth = s
        z = 0
        if (prefix + ".act_zero") in model.c.tensors:
            if int4:
                raise Refused("tensor %s.act_zero: an int4 linear has no zero point" % prefix)
            z = int(model.arr(prefix + ".act_zero", 0x03, (1,))[0])
            if not -127 <= z <= 127:
                raise Refused("tensor %s.act_zero: %d outside [-127, 127]" % (prefix, z))
        self.z = z
        # 3.3 outlier channels: both tensors or neither
        has_i = (prefix + ".outlier_index") in model.c.tensors
        has_w = (prefix + ".outlier_weight") in model.c.tensors
        if has_i != has_w:
            raise Refused("tensor %s.outlier_%s missing" % (prefix, "weight" if has_i else "index"))
        self.oidx = np.zeros(0, dtype=np.int64)
        if has_i:
            ti = model.tensor(prefix + ".outlier_index")
            if ti.dtype != 0x03 or len(ti.dims) != 1 or not 1 <= ti.dims[0] <= K:
                raise Refused("tensor %s.outlier_index: dtype/shape" % prefix)
            idx = ti.array().astype(np.int64)
            if np.any(idx < 0) or np.any(idx >= K) or np.any(np.diff(idx) <= 0):
                raise Refused("tensor %s.outlier_index: not strictly increasing in [0, K)" % prefix)
            self.oidx = idx
            self.U = model.f32(prefix + ".outlier_weight", (len(idx), N))
        # 6.4.1 multipliers, 0 for the outlier channels
        m = (f32(1) / (s * self.a).astype(f32)).astype(f32)
        keep = np.ones(K, dtype=bool)
        keep[self.oidx] = False
        if not (np.all(np.isfinite(m[keep])) and np.all(m[keep] > 0)):
            raise Refused("tensor %s: multipliers 1/(smooth*act_scale) not finite" % prefix)
        m[~keep] = 0
        self.m = m
        if not int4:
            self.o = (self.a * self.scale).astype(f32)
            if not (np.all(np.isfinite(self.o)) and np.all(self.o > 0)):
                raise Refused("tensor %s: act_scale*scale not finite" % prefix)


def round_half_away(v64):
    """C roundf on f32 values held as f64 (exact: v + 0.5 is exact in f64)."""
    return np.sign(v64) * np.floor(np.abs(v64) + 0.5)


def _ulp32(v):
    return np.spacing(np.abs(v).astype(f32)).astype(f64)


class Model:
    def __init__(self, path, verify=True):
        self.c = Container(path, want_kind=b"SQM\0", verify=verify)
        self.path = path
        try:
            md = yaml_load(self.c.metadata_text)
        except (YamlError, IndexError) as e:
            raise Refused("%s: metadata is not YAML this reader understands: %s" % (path, e))
        if not isinstance(md, dict):
            raise Refused("%s: metadata is not a mapping" % path)
        self.md = md
        self._read_metadata()
        self._read_tensors()

    # tensor helpers
    def tensor(self, name):
        t = self.c.tensors.get(name)
        if t is None:
            raise Refused("%s: tensor %s is missing" % (self.path, name))
        return t

    def arr(self, name, dtype, shape):
        t = self.tensor(name)
        if t.dtype != dtype or t.dims != tuple(shape):
            raise Refused("%s: tensor %s is %s %s, expected %s %s"
                          % (self.path, name, t.dtype_name, list(t.dims),
                             DTYPES[dtype][0], list(shape)))
        return t.array()

    def f32(self, name, shape, finite=True):
        a = self.arr(name, 0x01, shape).astype(f32)
        if finite and not np.all(np.isfinite(a)):
            raise Refused("%s: tensor %s is not finite" % (self.path, name))
        return a

    def _read_metadata(self):
        md = self.md
        if md.get("format") != "squint-model":
            raise Refused("%s: format is %r, not squint-model" % (self.path, md.get("format")))
        if md.get("format_version") != 1 or isinstance(md.get("format_version"), bool):
            raise Refused("%s: format_version %r is not 1" % (self.path, md.get("format_version")))
        for k in ("config", "pooling", "normalize", "max_seq", "embeddings_type", "tokenizer"):
            if k not in md:
                raise Refused("%s: metadata key %s is missing" % (self.path, k))
        cfg = md["config"]
        if not isinstance(cfg, dict):
            raise Refused("%s: config is not a mapping" % self.path)
        req = {"vocab_size": (1, 4194304), "hidden": (1, 16384), "layers": (1, 256),
               "heads": (1, 16384), "ffn": (1, 65536), "max_positions": (2, 65536),
               "type_vocab": (0, 1024)}
        c = {}
        for k, (lo, hi) in req.items():
            if k not in cfg:
                raise Refused("%s: config.%s is missing" % (self.path, k))
            c[k] = _int(cfg[k], "config." + k, lo, hi)
        c["pad_token_id"] = _int(cfg.get("pad_token_id"), "config.pad_token_id", 0,
                                 c["vocab_size"] - 1)
        eps = cfg.get("layer_norm_eps")
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or \
                not 1e-30 <= eps <= 1e-2:
            raise Refused("%s: config.layer_norm_eps %r" % (self.path, eps))
        c["layer_norm_eps"] = float(eps)
        c["embed_dim"] = _int(cfg.get("embed_dim", c["hidden"]), "config.embed_dim", 1,
                              c["hidden"])
        c["norm"] = _enum(cfg.get("norm", "post"), "config.norm", ("post", "pre"))
        c["activation"] = _enum(cfg.get("activation", "gelu"), "config.activation",
                                ("gelu", "relu", "swiglu", "geglu"))
        c["positions"] = _enum(cfg.get("positions", "learned"), "config.positions",
                               ("learned", "sinusoidal", "rotary"))
        # 2.3 / 6.12: rotary positions come with their base, and only they
        rb = cfg.get("rotary_base")
        if (c["positions"] == "rotary") != (rb is not None):
            raise Refused("%s: config.rotary_base %r with positions %s"
                          % (self.path, rb, c["positions"]))
        if rb is not None:
            if isinstance(rb, bool) or not isinstance(rb, (int, float)) or not 1 < rb <= 1e12:
                raise Refused("%s: config.rotary_base %r" % (self.path, rb))
            c["rotary_base"] = float(rb)
        # 2.3 / 6.13: ModernBERT's local layers (window, period, local base come
        # together, with geglu only), no norm before layer 0's attention, a
        # norm after the last layer
        mb = [cfg.get(k) for k in ("local_window", "global_every", "rotary_base_local")]
        n_mb = sum(v is not None for v in mb)
        if n_mb not in (0, 3) or (c["activation"] == "geglu") != (n_mb == 3):
            raise Refused("%s: config.local_window / global_every / rotary_base_local %r with "
                          "activation %s" % (self.path, mb, c["activation"]))
        c["global_every"] = 0
        if n_mb == 3:
            if c["positions"] != "rotary":
                raise Refused("%s: config.local_window without positions rotary" % self.path)
            c["local_window"] = _int(mb[0], "config.local_window", 1, 65536)
            c["global_every"] = _int(mb[1], "config.global_every", 1, 256)
            if isinstance(mb[2], bool) or not isinstance(mb[2], (int, float)) or \
                    not 1 < mb[2] <= 1e12:
                raise Refused("%s: config.rotary_base_local %r" % (self.path, mb[2]))
            c["rotary_base_local"] = float(mb[2])
        c["first_attention_norm"] = _bool(cfg.get("first_attention_norm", True),
                                          "config.first_attention_norm")
        c["final_norm"] = _bool(cfg.get("final_norm", False), "config.final_norm")
        if not c["first_attention_norm"] and c["norm"] != "pre":
            raise Refused("%s: config.first_attention_norm false needs norm pre" % self.path)
        c["embedding_layernorm"] = _bool(cfg.get("embedding_layernorm", True),
                                         "config.embedding_layernorm")
        c["pooling_head"] = _enum(cfg.get("pooling_head", "none"), "config.pooling_head",
                                  ("none", "tanh", "identity"))
        # 2.3 / 6.11: a sequence classifier (cross-encoder or text classifier)
        c["num_labels"] = _int(cfg.get("num_labels", 0), "config.num_labels", 0, 1024)
        # 2.3 / 6.1 / 6.5: RoBERTa position ids and MPNet's relative attention bias
        c["position_ids"] = _enum(cfg.get("position_ids", "index"), "config.position_ids",
                                  ("index", "roberta"))
        c["relative_buckets"] = _int(cfg.get("relative_buckets", 0), "config.relative_buckets",
                                     0, 256)
        if c["relative_buckets"]:
            if c["relative_buckets"] < 4 or c["relative_buckets"] % 4:
                raise Refused("%s: config.relative_buckets %d" % (self.path, c["relative_buckets"]))
            c["relative_max_distance"] = _int(cfg.get("relative_max_distance"),
                                              "config.relative_max_distance",
                                              c["relative_buckets"] // 4 + 1, 65536)
        sa = cfg.get("score_activation", "identity")
        c["score_activation"] = _enum(sa, "config.score_activation",
                                      ("identity", "sigmoid", "tanh", "softmax"))
        if c["hidden"] % c["heads"] or c["embed_dim"] % c["heads"]:
            raise Refused("%s: heads does not divide hidden and embed_dim" % self.path)
        if c["hidden"] % 2 or c["embed_dim"] % 2:
            raise Refused("%s: hidden and embed_dim must be even" % self.path)
        if c["positions"] == "rotary" and (c["position_ids"] != "index" or
                                           (c["hidden"] // c["heads"]) % 2 or
                                           (c["embed_dim"] // c["heads"]) % 2):
            raise Refused("%s: positions rotary needs position_ids index and even head widths"
                          % self.path)
        self.cfg = c
        self.pooling = _enum(md["pooling"], "pooling", ("cls", "mean"))
        self.normalize = _bool(md["normalize"], "normalize")
        skip = c["pad_token_id"] + 1 if c["position_ids"] == "roberta" else 0
        self.max_seq = _int(md["max_seq"], "max_seq", 3, c["max_positions"] - skip)
        self.embeddings_type = _enum(md["embeddings_type"], "embeddings_type",
                                     ("fp32", "int8", "int4-g128"))
        g = md.get("activation_guard", "clip")
        if g is None:
            g = "clip"
        self.guard = _enum(g, "activation_guard", ("row", "clip"))
        a = md.get("attention", "f32")
        self.attn_bf16 = _enum("f32" if a is None else a, "attention", ("f32", "bf16")) == "bf16"
        if self.attn_bf16 and ((c["hidden"] // c["heads"]) % 2 or (c["embed_dim"] // c["heads"]) % 2):
            raise Refused("%s: attention bf16 needs even head widths" % self.path)
        tok = md["tokenizer"]
        if not isinstance(tok, dict):
            raise Refused("%s: tokenizer is not a mapping" % self.path)
        self.tok = tok
        # the reader takes token ids (--ids) and does not tokenize: an encoder's
        # hf-bytelevel tokenizer (ModernBERT's, 2.4) only names its ids
        _enum(tok.get("type"), "tokenizer.type", ("wordpiece", "unigram", "hf-bytelevel"))
        _int(tok.get("vocab_size"), "tokenizer.vocab_size", 1, 4194304)
        # 2.2 labels: required when num_labels > 0, exactly num_labels unique
        # strings of 1..256 bytes each
        self.labels = None
        if c["num_labels"] > 0:
            labels = md.get("labels")
            if not isinstance(labels, list):
                raise Refused("%s: labels is missing or not a sequence (config.num_labels %d)"
                              % (self.path, c["num_labels"]))
            if len(labels) != c["num_labels"]:
                raise Refused("%s: labels has %d entries, config.num_labels says %d"
                              % (self.path, len(labels), c["num_labels"]))
            for lb in labels:
                if not isinstance(lb, str) or not 1 <= len(lb.encode("utf-8")) <= 256:
                    raise Refused("%s: label %r is not a string of 1..256 bytes"
                                  % (self.path, lb))
            if len(set(labels)) != len(labels):
                raise Refused("%s: labels are not unique" % self.path)
            self.labels = labels

    def _read_tensors(self):
        c = self.cfg
        V, H, E, P, T = (c["vocab_size"], c["hidden"], c["embed_dim"], c["max_positions"],
                         c["type_vocab"])
        self.eps = f32(c["layer_norm_eps"])
        # vocabulary (for --info and the token check)
        tv = self.tensor("tokenizer.vocab")
        if tv.dtype != 0x08 or len(tv.dims) != 1 or tv.size == 0:
            raise Refused("%s: tokenizer.vocab is not a non-empty 1-D u8 tensor" % self.path)
        vb = bytes(tv.data)
        if vb[-1:] != b"\0":
            raise Refused("%s: tokenizer.vocab does not end with NUL" % self.path)
        toks = vb[:-1].split(b"\0")
        if len(toks) != self.tok["vocab_size"]:
            raise Refused("%s: tokenizer.vocab holds %d tokens, vocab_size says %d"
                          % (self.path, len(toks), self.tok["vocab_size"]))
        self.vocab = toks
        # word embeddings -> cached lazily by row (4.2)
        w = self.tensor("embeddings.word")
        et = self.embeddings_type
        if et == "fp32":
            self.word = self.f32("embeddings.word", (V, E))
            self.word_scale = None
        elif et == "int8":
            self.word_q = self.arr("embeddings.word", 0x07, (V, E))
            self.word_scale = self.f32("embeddings.word.scale", (V,))
            self.word = None
        else:
            self.word_q = self.arr("embeddings.word", 0x08, (V, E // 2))
            GE = (E + 127) // 128
            self.word_scale = self.f32("embeddings.word.scale", (V, GE))
            self.word = None
        del w
        self.pos = None if c["positions"] == "rotary" else self.f32("embeddings.position", (P, E))
        # row tau for token type tau (6.1): 0 except the second text of a pair (6.11)
        self.types = self.f32("embeddings.token_type", (T, E)) if T > 0 else None
        self.type0 = self.types[0] if T > 0 else None
        if c["embedding_layernorm"]:
            self.emb_ln = (self.f32("embeddings.ln.gamma", (E,)), self.f32("embeddings.ln.beta", (E,)))
        self.final_ln = None
        if c["final_norm"]:                            # 3.2, 6.13
            self.final_ln = (self.f32("encoder.final_norm.gamma", (H,)),
                             self.f32("encoder.final_norm.beta", (H,)))
        self.rel_bias = None
        if c["relative_buckets"]:                      # 3.2, 6.5
            self.rel_bias = self.f32("relative_bias", (c["relative_buckets"], c["heads"]))
        if c["pooling_head"] in ("tanh", "identity"):
            self.head = (self.f32("head.weight", (H, H)), self.f32("head.bias", (H,)))
        if c["num_labels"] > 0:                        # 3.2, 6.11
            Lb = c["num_labels"]
            self.score = (self.f32("score.weight", (Lb, H)), self.f32("score.bias", (Lb,)))
        self.layers = []
        for l in range(c["layers"]):
            D = E if l == 0 else H
            d_attn = D if c["norm"] == "pre" else H
            p = "layer.%d." % l
            L = {
                "ln_attn": None if l == 0 and not c["first_attention_norm"] else  # 6.13
                           (self.f32(p + "ln_attn.gamma", (d_attn,)),
                            self.f32(p + "ln_attn.beta", (d_attn,))),
                "ln_ffn": (self.f32(p + "ln_ffn.gamma", (H,)), self.f32(p + "ln_ffn.beta", (H,))),
                "qkv": Linear(self, p + "qkv", 3 * D, D),
                "attn_out": Linear(self, p + "attn_out", H, D),
                "ffn_up": Linear(self, p + "ffn_up",
                                 2 * c["ffn"] if c["activation"] in ("swiglu", "geglu")
                                 else c["ffn"], H),
                "ffn_down": Linear(self, p + "ffn_down", H, c["ffn"]),
                "res": Linear(self, p + "res", H, D) if D != H else None,
                "D": D,
            }
            self.layers.append(L)

    def cls_sep(self):
        """The wordpiece [CLS] and [SEP] ids a pair is built with (6.11)."""
        t = self.tok
        ids = [t.get("cls_id"), t.get("sep_id")]
        if t.get("type") != "wordpiece" or any(
                i is None or isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in ids):
            raise Refused("%s: pairs need a wordpiece tokenizer with cls_id and sep_id"
                          % self.path)
        return ids[0], ids[1]

    # -- 4.2 word embedding rows
    def word_rows(self, ids):
        ids = np.asarray(ids, dtype=np.int64)
        if self.word is not None:
            return self.word[ids]
        E = self.cfg["embed_dim"]
        if self.embeddings_type == "int8":
            q = self.word_q[ids].astype(f32)
            return (q * self.word_scale[ids][:, None]).astype(f32)
        b = self.word_q[ids]
        nib = np.empty((len(ids), E), dtype=np.int16)
        nib[:, 0::2] = b & 15
        nib[:, 1::2] = b >> 4
        q = ((nib ^ 8) - 8).astype(f32)
        sc = self.word_scale[ids][:, np.arange(E) // 128]
        return (q * sc).astype(f32)


# ---------------------------------------------------------------------------
# Forward computation (SQM.md 6)


def _sum8(u):
    """6.2's S: 8 double lanes in order, combined pairwise, then the tail."""
    C = u.shape[1]
    C8 = C - C % 8
    lanes = np.zeros((u.shape[0], 8), dtype=f64)
    for c0 in range(0, C8, 8):
        lanes = lanes + u[:, c0:c0 + 8]
    s = ((lanes[:, 0] + lanes[:, 1]) + (lanes[:, 2] + lanes[:, 3])) + \
        ((lanes[:, 4] + lanes[:, 5]) + (lanes[:, 6] + lanes[:, 7]))
    for c in range(C8, C):
        s = s + u[:, c]
    return s


def layer_norm(v, gamma, beta, eps):
    """6.2, v [L, C] f32."""
    C = v.shape[1]
    mean = (_sum8(v.astype(f64)) / C).astype(f32)
    d = (v - mean[:, None]).astype(f32)
    d64 = d.astype(f64)
    var = _sum8(d64 * d64) / C
    rstd = (1.0 / np.sqrt(var + f64(eps))).astype(f32)
    t = (d * rstd[:, None]).astype(f32)
    return _fma32(t, gamma, beta)


def dot32(a, b):
    """An f32 matrix product: accumulate in f64, round once (the summation
    order of sgemm is unspecified; this is the most accurate answer)."""
    return (a.astype(f64) @ b.astype(f64)).astype(f32)


class Stats:
    """Per-sequence diagnostics, and the hook that flips roundings.

    Distances to a half-integer are measured in f32 ulps of the largest |v|
    of the same row ("row ulps"): the error squint's f32 producers (sgemm
    sums, the softmax, the erf approximation) leave in a v_j scales with the
    row's magnitudes, not with v_j itself. near: (row ulps, linear name,
    phase, row, col, v) of every quantizer input v_j within `near_ulps` row
    ulps of a half-integer (SQM.md 6.10: such a v_j may round the other way
    in squint). flips: keys (name, phase, row, col) of such values to round
    the other way in this run."""

    def __init__(self, near_ulps=0.0, flips=()):
        self.guarded_rows = 0
        self.rows = 0
        self.min_half_ulps = math.inf   # closest v_j to a half-integer, in row ulps
        self.min_half_where = None
        self.near_ulps = near_ulps
        self.near = []
        self.flips = list(flips)


def _half_ulps(v64):
    """|v - nearest half-integer| in f32 ulps of the row's largest finite |v|."""
    with np.errstate(invalid="ignore"):
        a = np.abs(v64)
        fin = np.isfinite(v64) & (a < 2 ** 22)
        rowmax = np.where(fin, a, 0.0).max(axis=1, initial=0.0)
        unit = _ulp32(rowmax)[:, None]
        d = np.abs(a - np.floor(a) - 0.5) / unit
        d[~fin] = np.inf
    return d


def _rounded(stats, name, phase, v64):
    """round_half_away(v64), noting near-half values and applying flips."""
    r = round_half_away(v64)
    if stats is None:
        return r
    dist = _half_ulps(v64)
    if dist.size:
        i = np.unravel_index(int(np.argmin(dist)), dist.shape)
        if dist[i] < stats.min_half_ulps:
            stats.min_half_ulps = float(dist[i])
            stats.min_half_where = "%s%s row %d col %d v=%r" % (
                name, "" if phase == "plain" else " (guarded)", i[0], i[1], float(v64[i]))
        if stats.near_ulps > 0:
            for rr, cc in zip(*np.nonzero(dist <= stats.near_ulps)):
                stats.near.append((float(dist[rr, cc]), name, phase, int(rr), int(cc),
                                   float(v64[rr, cc])))
    for fl in stats.flips:
        if fl[0] == name and fl[1] == phase and fl[2] < r.shape[0] and fl[3] < r.shape[1]:
            rr, cc = fl[2], fl[3]
            lo = math.floor(v64[rr, cc])
            r[rr, cc] = lo if r[rr, cc] != lo else lo + 1
    return r


def linear(lin, x, guard, stats=None):
    """6.3 / 6.4: x [L, K] f32 -> [L, N] f32."""
    if lin.kind == "fp32":
        return (dot32(x, lin.W.T) + lin.bias).astype(f32)
    y = linear_packed(lin, x, guard, stats)
    if len(lin.oidx):                                  # 6.4.6
        t = (x[:, lin.oidx[0], None] * lin.U[0][None, :]).astype(f32)
        for o in range(1, len(lin.oidx)):
            t = (t + (x[:, lin.oidx[o], None] * lin.U[o][None, :]).astype(f32)).astype(f32)
        y = (y + t).astype(f32)
    return y


def linear_packed(lin, x, guard, stats):
    """6.4 steps 1-5."""
    L = x.shape[0]
    K, K_pad, N = lin.K, lin.K_pad, lin.N
    z = lin.z
    v = (x * lin.m).astype(f32)                       # 6.4.2
    v64 = v.astype(f64)
    nan = np.isnan(v64)
    r = _rounded(stats, lin.name, "plain", v64)
    q = np.clip(r - z, -127, 127)
    q[nan] = 0
    guarded = np.zeros(L, dtype=bool)
    f = np.ones(L, dtype=f32)
    if guard == "row":                                 # 6.4.3
        with np.errstate(all="ignore"):
            allnan = nan.all(axis=1)
            lo = np.where(nan, np.inf, v64).min(axis=1)
            hi = np.where(nan, -np.inf, v64).max(axis=1)
            A = np.maximum(np.abs(lo), np.abs(hi)).astype(f32)
            # round is monotonic: round(hi) = max_j round(v_j) (with a flip, of
            # the flipped codes, so the guard stays consistent with step 2)
            rhi = np.where(nan, -np.inf, r).max(axis=1)
            rlo = np.where(nan, np.inf, r).min(axis=1)
            clip = (rhi - z > 127) | (rlo - z < -127)
            guarded = clip & np.isfinite(A) & ~allnan
        if np.any(guarded):
            gi = np.nonzero(guarded)[0]
            Ag = A[gi]
            mg = (lin.m[None, :] * (f32(127) / Ag).astype(f32)[:, None]).astype(f32)
            vg = (x[gi] * mg).astype(f32).astype(f64)
            rg = _rounded(stats, lin.name, "guard", vg)
            qg = np.clip(rg, -127, 127)
            qg[np.isnan(vg)] = 0
            q[gi] = qg
            f[gi] = (Ag / f32(127)).astype(f32)
    if stats is not None:
        stats.rows += L
        stats.guarded_rows += int(guarded.sum())
    qp = np.zeros((L, K_pad), dtype=np.int64)
    qp[:, :K] = q.astype(np.int64)
    W = lin.Wq
    if lin.kind == "int8":
        acc = qp @ W.T                                  # [L, N_pad]
        acc = acc[:, :N]
        y_plain = ((acc + z * lin.wsum[None, :N]).astype(f32) * lin.o).astype(f32)
        y_g = ((acc.astype(f32) * f[:, None]).astype(f32) * lin.o).astype(f32)
        y = np.where(guarded[:, None], y_g, y_plain)
        return (y + lin.bias).astype(f32)
    G = lin.G
    Cn = np.zeros((L, N), dtype=f32)
    for g in range(G):
        accg = qp[:, 128 * g:128 * (g + 1)] @ W[:N, 128 * g:128 * (g + 1)].T
        Cn = (Cn + (accg.astype(f32) * lin.scale[:, g]).astype(f32)).astype(f32)
    y_plain = (Cn * lin.a).astype(f32)
    y_g = ((Cn * f[:, None]).astype(f32) * lin.a).astype(f32)
    y = np.where(guarded[:, None], y_g, y_plain)
    return (y + lin.bias).astype(f32)


def _bf16(x):
    """6.5's bf16(x) as an f32 array of the rounded values."""
    x = np.ascontiguousarray(x, dtype=f32)
    u = x.view(np.uint32)
    mag = u & np.uint32(0x7fffffff)
    r = ((u + np.uint32(0x7fff) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16))
    r = np.where(mag > np.uint32(0x7f800000), (u >> np.uint32(16)) | np.uint32(0x40), r)
    r = np.where(mag < np.uint32(0x21800000), (u >> np.uint32(16)) & np.uint32(0x8000), r)
    return (r.astype(np.uint32) << np.uint32(16)).view(f32)


def _ftz(v):
    return np.where(np.abs(v) < f32(2.0 ** -126), np.copysign(f32(0), v), v).astype(f32)


def _dot_bf16(a, b):
    """6.5's dot of every row of a [M, n] with every column of b [n, N]
    (bf16 values as f32, n even): pair by pair, odd element first."""
    acc = np.zeros((a.shape[0], b.shape[1]), dtype=f32)
    for t in range(0, a.shape[1], 2):
        for e in (t + 1, t):
            acc = _ftz((acc + (a[:, e:e + 1] * b[e:e + 1, :]).astype(f32)).astype(f32))
    return acc


def relative_bucket(n_query_minus_key, NB, max_distance):
    """6.5's b(j - i) for n = i - j, in f32 steps."""
    half = NB // 2
    exact = half // 2
    n = n_query_minus_key
    base = half if n < 0 else 0
    n = abs(n)
    if n < exact:
        return base + n
    x = f32(f32(np.log(f32(f32(n) / f32(exact)))) / f32(math.log(max_distance / exact)))
    x = f32(x * f32(half - exact))
    return base + min(half - 1, exact + int(x))


def relative_bias_matrix(model, L):
    """[A, L, L]: the bias of score (i, j) per head (6.5), or None."""
    c = model.cfg
    if model.rel_bias is None:
        return None
    b = np.array([[relative_bucket(i - j, c["relative_buckets"], c["relative_max_distance"])
                   for j in range(L)] for i in range(L)], dtype=np.int64)
    return np.ascontiguousarray(model.rel_bias[b].transpose(2, 0, 1)).astype(f32)


def attention(qkv, D, A, bf16=False, bias=None, window=None):
    """6.5: qkv [L, 3D] -> ctx [L, D]; bias [A, L, L] (MPNet) or None; window
    (6.13, a local layer): query i sees key j only when |i - j| <= window."""
    dh = D // A
    c = f32(1) / np.sqrt(f32(dh)).astype(f32)
    c = f32(c)
    Q, Kt, Vv = qkv[:, :D], qkv[:, D:2 * D], qkv[:, 2 * D:]
    out = np.empty((qkv.shape[0], D), dtype=f32)
    for h in range(A):
        sl = slice(h * dh, (h + 1) * dh)
        if bf16:
            S = (_dot_bf16(_bf16(Q[:, sl]), _bf16(Kt[:, sl]).T) * c).astype(f32)
        else:
            S = (dot32(Q[:, sl], Kt[:, sl].T) * c).astype(f32)
        if bias is not None:
            S = (S + bias[h]).astype(f32)
        if window is not None:                 # outside the window: probability 0
            far = np.abs(np.arange(S.shape[0])[:, None] - np.arange(S.shape[1])[None, :]) > window
            S = np.where(far, f32(-np.inf), S).astype(f32)
        m = S.max(axis=1, keepdims=True)
        e = np.exp((S - m).astype(f32).astype(f64)).astype(f32)
        tot = e.astype(f64).sum(axis=1, keepdims=True).astype(f32)
        P = (e * (f32(1) / tot).astype(f32)).astype(f32)
        if bf16:
            L = P.shape[0]
            Pb, Vb = _bf16(P), _bf16(Vv[:, sl])
            if L % 2:  # the odd last element paired with a 0
                Pb = np.concatenate([Pb, np.zeros((L, 1), f32)], axis=1)
                Vb = np.concatenate([Vb, np.zeros((1, dh), f32)], axis=0)
            out[:, sl] = _dot_bf16(Pb, Vb)
        else:
            out[:, sl] = dot32(P, Vv[:, sl])
    return out


_erf = np.frompyfunc(math.erf, 1, 1)

# SQM.md 6.7: GELU with erf by Abramowitz & Stegun 7.1.26 in a fixed f32
# operation order (and 6.5's exp). fma is emulated in double: the product of
# two f32 is exact there, then one rounding to double and one to f32 (which
# can differ from a single rounding by an ulp in rare cases: far below 1e-5).
_AS_P = 0.3275911
_AS_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def _fma32(a, b, c):
    return (np.asarray(a, f32).astype(f64) * np.asarray(b, f32).astype(f64)
            + np.asarray(c, f32).astype(f64)).astype(f32)


def exp_spec(x):
    """SQM.md 6.5's exp, elementwise on an f32 array."""
    x = np.asarray(x, f32)
    under = x < f32(-87.3)
    y = np.minimum(np.maximum(x, f32(-87.3)), f32(88.7))
    n = np.rint((y * f32(1.44269504088896341)).astype(f32)).astype(f32)
    r = _fma32(-n, f32(0.693145751953125), y)
    r = _fma32(-n, f32(1.42860682030941723212e-6), r)
    p = np.full_like(y, f32(1.0 / 5040))
    for c in (1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1.0, 1.0):
        p = _fma32(p, r, f32(c))
    res = (p * np.ldexp(np.ones_like(p), n.astype(np.int32))).astype(f32)
    return np.where(under, f32(0), res).astype(f32)


def gelu_spec(v):
    """SQM.md 6.7, operation by operation."""
    v = np.asarray(v, f32)
    u = (v * f32(0.70710677)).astype(f32)
    a = np.abs(u)
    t = (f32(1) / _fma32(f32(_AS_P), a, f32(1))).astype(f32)
    a1, a2, a3, a4, a5 = _AS_A
    p = np.full_like(t, f32(a5))
    for c in (a4, a3, a2, a1):
        p = _fma32(p, t, f32(c))
    p = (p * t).astype(f32)
    ex = exp_spec(((f32(0) - a) * a).astype(f32))
    e = np.copysign(_fma32(-p, ex, f32(1)), u).astype(f32)
    h = (f32(0.5) * v).astype(f32)
    return _fma32(h, e, h)


def resolve_gelu(mode):
    """'spec' (SQM.md 6.7, the default; 'auto' is the same) or 'exact' (the
    mathematical erf, for comparison)."""
    return "spec" if mode in ("auto", "spec", "as7126") else mode


def rotate(qkv, D, A, base):
    """6.12: Q and K of every head of qkv [L, 3D] turned by the row's
    position; returns a new array."""
    L = qkv.shape[0]
    dh = D // A
    half = dh // 2
    b = f32(base)
    i = np.arange(half)
    eps = ((f32(2) * i.astype(f32)).astype(f32) / f32(dh)).astype(f32)  # 2i exact, one division
    om = (f32(1) / np.power(f64(b), eps.astype(f64)).astype(f32)).astype(f32)
    theta = (np.arange(L, dtype=f32)[:, None] * om[None, :]).astype(f32)   # [L, half]
    c = np.cos(theta.astype(f64)).astype(f32)
    s = np.sin(theta.astype(f64)).astype(f32)
    out = qkv.copy()
    for part in (0, 1):                                          # Q, K
        for h in range(A):
            o = part * D + h * dh
            x0 = qkv[:, o:o + half]
            x1 = qkv[:, o + half:o + dh]
            out[:, o:o + half] = ((x0 * c).astype(f32) + (-x1 * s).astype(f32)).astype(f32)
            out[:, o + half:o + dh] = ((x1 * c).astype(f32) + (x0 * s).astype(f32)).astype(f32)
    return out


def swiglu(gu):
    """6.7 swiglu: [L, 2F] -> [L, F], g the first F columns."""
    F = gu.shape[1] // 2
    g, u = gu[:, :F], gu[:, F:]
    e = np.exp((-g).astype(f64)).astype(f32)
    return ((g / (f32(1) + e).astype(f32)).astype(f32) * u).astype(f32)


def activation(u, kind, gelu="spec"):
    """6.7."""
    if kind == "swiglu":
        return swiglu(u)
    if kind == "geglu":                        # 6.13: gelu(first half) * second half
        F = u.shape[1] // 2
        return (activation(u[:, :F], "gelu", gelu) * u[:, F:]).astype(f32)
    if kind == "relu":
        return np.maximum(u, f32(0)).astype(f32)
    if gelu == "spec":
        return gelu_spec(u)
    u64 = u.astype(f64)
    e = _erf(u64 / math.sqrt(2.0)).astype(f64)
    return (0.5 * u64 * (1.0 + e)).astype(f32)


def encode(model, ids, stats=None, pooling=None, normalize=None, gelu="spec", types=None):
    """One sequence of token ids -> (embedding [dim] f32, hidden [L, H] f32).
    types: the token types (6.1), one per id; None: all 0."""
    c = model.cfg
    H = c["hidden"]
    pooling = pooling or model.pooling
    normalize = model.normalize if normalize is None else normalize
    L = len(ids)
    if L > c["max_positions"]:
        raise ValueError("sequence of %d tokens is longer than max_positions %d"
                         % (L, c["max_positions"]))
    for t in ids:
        if not 0 <= t < c["vocab_size"]:
            raise ValueError("token id %d is outside the vocabulary" % t)
    if L == 0:
        if pooling == "cls":
            raise ValueError("an empty sequence has no CLS row")
        p = np.zeros(H, dtype=f32)
        hid = np.zeros((0, H), dtype=f32)
    else:
        e = model.word_rows(ids)                          # 6.1
        if types is not None and len(types) != L:
            raise ValueError("%d token types for %d ids" % (len(types), L))
        if model.types is not None:
            if types is None:
                e = (e + model.type0).astype(f32)
            else:
                tt = np.asarray(types, dtype=np.int64)
                if np.any((tt < 0) | (tt >= c["type_vocab"])):
                    raise ValueError("token type outside 0 .. %d" % (c["type_vocab"] - 1))
                e = (e + model.types[tt]).astype(f32)
        elif types is not None and any(types):
            raise ValueError("token type 1 without a token-type table (type_vocab 0)")
        if c["position_ids"] == "roberta":                # 6.1
            pad = c["pad_token_id"]
            real = np.asarray(ids) != pad
            rows = np.where(real, pad + np.cumsum(real), pad)
        else:
            rows = np.arange(L)
        if model.pos is not None:                         # none with rotary positions (6.12)
            e = (e + model.pos[rows]).astype(f32)
        bias = relative_bias_matrix(model, L)
        if c["embedding_layernorm"]:
            e = layer_norm(e, *model.emb_ln, model.eps)
        x = e
        pre = c["norm"] == "pre"
        for li, Ly in enumerate(model.layers):             # 6.6
            D = Ly["D"]
            lin0 = lambda name, v: linear(Ly[name], v, model.guard, stats)
            local = c["global_every"] > 0 and li % c["global_every"] != 0   # 6.13
            window = c["local_window"] // 2 if local else None
            base = c["rotary_base_local"] if local else c.get("rotary_base")
            if c["positions"] == "rotary":                 # 6.5 / 6.12: q, k turned first
                lin = lambda name, v, D=D, lin0=lin0, base=base: (
                    rotate(lin0(name, v), D, c["heads"], base) if name == "qkv"
                    else lin0(name, v))
            else:
                lin = lin0
            if not pre:
                ctx = attention(lin("qkv", x), D, c["heads"], model.attn_bf16, bias, window)
                a = lin("attn_out", ctx)
                r = lin("res", x) if Ly["res"] is not None else x
                x = layer_norm((r + a).astype(f32), *Ly["ln_attn"], model.eps)
                u = activation(lin("ffn_up", x), c["activation"], gelu)
                x = layer_norm((x + lin("ffn_down", u)).astype(f32), *Ly["ln_ffn"], model.eps)
            else:
                a_in = x if Ly["ln_attn"] is None else layer_norm(x, *Ly["ln_attn"], model.eps)
                ctx = attention(lin("qkv", a_in), D, c["heads"], model.attn_bf16, bias, window)
                a = lin("attn_out", ctx)
                r = lin("res", x) if Ly["res"] is not None else x
                x = (r + a).astype(f32)
                u = activation(lin("ffn_up", layer_norm(x, *Ly["ln_ffn"], model.eps)),
                               c["activation"], gelu)
                x = (x + lin("ffn_down", u)).astype(f32)
        if model.final_ln is not None:                     # 6.13
            x = layer_norm(x, *model.final_ln, model.eps)
        hid = x
        if pooling == "cls":                               # 6.8
            p = x[0].copy()
        else:
            p = (x.astype(f64).sum(axis=0) / L).astype(f32)
    if c["pooling_head"] in ("tanh", "identity"):          # 6.9
        W, b = model.head
        p = (dot32(p[None, :], W.T)[0] + b).astype(f32)
        if c["pooling_head"] == "tanh":
            p = np.tanh(p.astype(f64)).astype(f32)
    if normalize:
        n = math.sqrt(float((p.astype(f64) ** 2).sum()))
        p = (p * f32(1.0 / max(n, 1e-12))).astype(f32)
    return p, hid


# ---------------------------------------------------------------------------
# Sequence classifiers (SQM.md 6.11)


def pair_lengths(n_a, n_b, M, order="longest-first"):
    """6.11: how many tokens of the query (p) and the document (q) a pair keeps
    at truncation length M (B = M - 3 content tokens): Hugging Face's
    longest_first. order "query-first" is a wrong rule, kept only to show
    that the comparison notices it."""
    B = M - 3
    if n_a + n_b <= B:
        return n_a, n_b
    if order == "query-first":                     # the query cut first: not the spec
        p = max(B - n_b, min(n_a, B // 2))
        return p, min(B - p, n_b)
    if 2 * min(n_a, n_b) <= B:                     # the shorter keeps all of itself
        return (n_a, B - n_a) if n_a <= n_b else (B - n_b, n_b)
    lo, hi = B // 2, B - B // 2                    # both long: halves, the odd token to
    return (lo, hi) if n_a <= n_b else (hi, lo)    # the document unless the query is longer


def pair_input(model, a, b, M, order="longest-first"):
    """6.11: query tokens a, document tokens b (no special tokens) -> ids,
    types, and the kept lengths p, q."""
    cls_id, sep_id = model.cls_sep()
    p, q = pair_lengths(len(a), len(b), M, order)
    ids = [cls_id] + list(a[:p]) + [sep_id] + list(b[:q]) + [sep_id]
    types = [0] * (p + 2) + [1] * (q + 1)
    return ids, types, p, q


def logits(model, ids, types, stats=None, gelu="spec"):
    """6.11: [CLS] pooling, the tanh head, no normalization, then the score
    linear (f32, 6.3): num_labels f32 logits."""
    p, _h = encode(model, ids, stats, pooling="cls", normalize=False, gelu=gelu, types=types)
    W, b = model.score
    return (dot32(p[None, :], W.T)[0] + b).astype(f32)


def scores(model, z):
    """6.11: the activation, in double from the f32 logits."""
    z = np.asarray(z, f32).astype(f64)
    act = model.cfg["score_activation"]
    if act == "identity":
        return z
    if act == "sigmoid":
        return 1.0 / (1.0 + np.exp(-z))
    if act == "tanh":
        return np.tanh(z)
    e = np.exp(z - z.max())
    return e / e.sum()


def read_pairs(model, qpath, dpath):
    """Two `squint tokenize --ids-only` files (queries, documents), line i of
    each the pair i: each line [cls] t_1 .. t_n [sep] (section 5); the
    special tokens are stripped to get each text's tokens."""
    cls_id, sep_id = model.cls_sep()
    out = []
    for path in (qpath, dpath):
        seqs = read_ids(path)
        for n, s in enumerate(seqs):
            if len(s) < 2 or s[0] != cls_id or s[-1] != sep_id:
                raise ValueError("%s: line %d is not [cls] ... [sep]" % (path, n + 1))
        out.append([s[1:-1] for s in seqs])
    if len(out[0]) != len(out[1]):
        raise ValueError("%d queries, %d documents" % (len(out[0]), len(out[1])))
    return list(zip(out[0], out[1]))


# ---------------------------------------------------------------------------
# CLI


def read_ids(path):
    seqs = []
    with open(path, "r", encoding="utf-8") as fh:
        for ln, line in enumerate(fh, 1):
            if not line.strip():
                continue
            obj = json.loads(line)
            ids = obj["ids"] if isinstance(obj, dict) else obj
            if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
                raise ValueError("%s:%d: expected {\"ids\": [int, ...]}" % (path, ln))
            seqs.append(ids)
    return seqs


def info(model):
    c = model.cfg
    print("%s: squint model, container %d.%d%s, %d bytes, %d tensors"
          % (model.path, model.c.version[0], model.c.version[1],
             " (zstd)" if model.c.zstd else "", len(model.c.raw), len(model.c.order)))
    print("config:  " + ", ".join("%s %s" % (k, v) for k, v in c.items()))
    print("embed:   pooling %s, normalize %s, max_seq %d, embeddings %s, guard %s"
          % (model.pooling, str(model.normalize).lower(), model.max_seq,
             model.embeddings_type, model.guard))
    print("tokenizer: %s" % ", ".join("%s %s" % (k, v) for k, v in model.tok.items()
                                      if k != "added_tokens"))
    if model.labels is not None:
        print("classifier: %d labels %s, score_activation %s"
              % (c["num_labels"], ", ".join(model.labels), c["score_activation"]))
    for l, Ly in enumerate(model.layers):
        for k in ("qkv", "attn_out", "ffn_up", "ffn_down", "res"):
            lin = Ly[k]
            if lin is None:
                continue
            extra = ""
            if lin.kind != "fp32":
                extra = " act_scale %.6g zero %d smooth %s" % (
                    lin.a, lin.z, "yes" if np.any(lin.smooth != 1) else "no")
            print("  %-18s %-9s [%d, %d]%s" % (lin.name, lin.kind, lin.N, lin.K, extra))
    print("checksums: OK")


def explain(fn, ref, tol, near_ulps, max_flips=2, max_cands=400):
    """A sequence whose embedding differs from `ref` by more than tol: look
    for the documented cause (SQM.md 6.10), a quantizer input v_j within a
    few ulps of a half-integer that squint rounded the other way. Tries the
    candidates nearest first and stops at the first flip that brings the
    sequence within tol; else keeps the best one and searches again, up to
    max_flips flips. fn(stats) computes the sequence's output vector (an
    embedding, or a pair's logits). Returns (flips, diff after them)."""
    flips = []
    st = Stats(near_ulps=near_ulps)
    p = fn(st)
    cur = float(np.max(np.abs(p.astype(f64) - ref)))
    for _ in range(max_flips):
        if cur <= tol:
            break
        done = set(tuple(f[:4]) for f in flips)
        cands = sorted(((c[1], c[2], c[3], c[4], c[0], c[5]) for c in st.near
                        if (c[1], c[2], c[3], c[4]) not in done), key=lambda c: c[4])
        best = None
        for c in cands[:max_cands]:
            st2 = Stats(near_ulps=near_ulps, flips=[f[:4] for f in flips] + [c[:4]])
            p2 = fn(st2)
            d = float(np.max(np.abs(p2.astype(f64) - ref)))
            if best is None or d < best[0]:
                best = (d, c, st2)
            if d <= tol:
                break
        if best is None or best[0] >= cur:
            break
        cur = best[0]
        flips.append(best[1])
        st = best[2]
    return flips, cur


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description="Independent .sqm reader (NumPy).")
    ap.add_argument("model")
    ap.add_argument("--ids", help="JSONL of {\"ids\": [...]} per line")
    ap.add_argument("--out", help="write embeddings as float32 .npy [n, dim]")
    ap.add_argument("--info", action="store_true", help="print a summary")
    ap.add_argument("--no-verify", action="store_true", help="skip tensor checksums")
    ap.add_argument("--pooling", choices=("cls", "mean"))
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--normalize", dest="normalize", action="store_true", default=None)
    g.add_argument("--no-normalize", dest="normalize", action="store_false")
    ap.add_argument("--gelu", choices=("spec", "exact", "auto", "as7126"), default="spec",
                    help="GELU: spec (SQM.md 6.7, default) or exact (mathematical erf)")
    ap.add_argument("--stats", help="write per-sequence diagnostics (JSONL): guarded rows, "
                                     "closest quantizer input to a half-integer in ulps")
    ap.add_argument("--hidden-out", help="write the last hidden rows of all sequences, "
                                          "concatenated (.npy [tokens, hidden])")
    ap.add_argument("--explain", metavar="REF.npy",
                    help="compare with these embeddings; for each sequence off by more "
                         "than --tol, look for the rounding-boundary flips of SQM.md 6.10 "
                         "that explain it (results in --stats)")
    ap.add_argument("--pairs", nargs=2, metavar=("QUERIES.jsonl", "DOCUMENTS.jsonl"),
                    help="sequence classifier (SQM.md 6.11): score the pairs (line i of each "
                         "file, as `squint tokenize --ids-only` prints them, untruncated); "
                         "--out gets the logits [n, num_labels], --scores-out the scores")
    ap.add_argument("--max-seq", type=int,
                    help="with --pairs: the truncation length M (default: the metadata's "
                         "max_seq)")
    ap.add_argument("--scores-out", help="with --pairs: JSONL {index, score, logit, tokens, "
                                          "query_tokens, document_tokens} per pair")
    ap.add_argument("--ablate", choices=("types0", "query-first"),
                    help="with --pairs, deliberately WRONG (to show the comparison fails): "
                         "all token types 0, or truncation query first")
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--near-ulps", type=float, default=8.0,
                    help="how close to a half-integer a candidate flip is, in f32 ulps "
                         "of the largest |v| of its row")
    a = ap.parse_args(argv)
    try:
        model = Model(a.model, verify=not a.no_verify)
    except ZstdUnsupported as e:
        print(str(e), file=sys.stderr)
        return 3
    except Refused as e:
        print("sqm_reader: %s" % e, file=sys.stderr)
        return 2
    except OSError as e:
        print("sqm_reader: %s" % e, file=sys.stderr)
        return 2
    gelu = resolve_gelu(a.gelu)
    if a.info:
        info(model)
        print("gelu erf: %s" % gelu)
    if a.pairs:
        return main_pairs(model, a, gelu)
    if not a.ids:
        if not a.info:
            print("sqm_reader: nothing to do (give --info or --ids/--out)", file=sys.stderr)
            return 1
        return 0
    if not a.out:
        print("sqm_reader: --ids needs --out", file=sys.stderr)
        return 1
    try:
        seqs = read_ids(a.ids)
    except (OSError, ValueError, KeyError) as e:
        print("sqm_reader: %s" % e, file=sys.stderr)
        return 1
    ref = None
    if a.explain:
        ref = np.load(a.explain).astype(f64)
        if ref.shape[0] != len(seqs):
            print("sqm_reader: %s has %d rows, %s %d sequences"
                  % (a.explain, ref.shape[0], a.ids, len(seqs)), file=sys.stderr)
            return 1
    kw = dict(pooling=a.pooling, normalize=a.normalize, gelu=gelu)
    outs, hids, st_lines = [], [], []
    for n, ids in enumerate(seqs):
        st = Stats()
        try:
            p, h = encode(model, ids, st, **kw)
        except ValueError as e:
            print("sqm_reader: sequence %d: %s" % (n + 1, e), file=sys.stderr)
            return 2
        outs.append(p)
        hids.append(h)
        rec = {"seq": n, "tokens": len(ids), "rows": st.rows,
               "guarded_rows": st.guarded_rows,
               "min_half_ulps": st.min_half_ulps if math.isfinite(st.min_half_ulps) else None,
               "where": st.min_half_where}
        if ref is not None:
            d = float(np.max(np.abs(p.astype(f64) - ref[n]))) if p.size else 0.0
            rec["diff"] = d
            if d > a.tol:
                fn = lambda st_, ids=ids: encode(model, ids, st_, **kw)[0]
                flips, after = explain(fn, ref[n], a.tol, a.near_ulps)
                rec["explained"] = after <= a.tol
                rec["diff_after_flips"] = after
                rec["flips"] = [{"linear": f[0], "phase": f[1], "row": f[2], "col": f[3],
                                 "ulps": f[4], "v": f[5]} for f in flips]
        st_lines.append(json.dumps(rec))
    dim = model.cfg["hidden"]
    E = np.stack(outs).astype(f32) if outs else np.zeros((0, dim), dtype=f32)
    np.save(a.out, E)
    if a.hidden_out:
        np.save(a.hidden_out, np.concatenate(hids).astype(f32))
    if a.stats:
        with open(a.stats, "w") as fh:
            fh.write("\n".join(st_lines) + ("\n" if st_lines else ""))
    return 0


def main_pairs(model, a, gelu):
    """--pairs: logits and scores of query/document pairs (SQM.md 6.11)."""
    if model.cfg["num_labels"] == 0:
        print("sqm_reader: %s is not a sequence classifier (config.num_labels 0)" % a.model,
              file=sys.stderr)
        return 2
    if not a.out:
        print("sqm_reader: --pairs needs --out", file=sys.stderr)
        return 1
    if (model.pooling, model.normalize, model.cfg["pooling_head"]) != ("cls", False, "tanh"):
        # 6.11 fixes the pipeline (cls, tanh head, no normalization); the
        # writer writes the metadata so. Follow 6.11, but say so.
        print("sqm_reader: warning: metadata says pooling %s, normalize %s, pooling_head %s; "
              "6.11 computes cls / tanh / no normalization" % (
                  model.pooling, model.normalize, model.cfg["pooling_head"]), file=sys.stderr)
    M = a.max_seq if a.max_seq is not None else model.max_seq
    if not 5 <= M <= model.cfg["max_positions"]:
        print("sqm_reader: --max-seq %d outside 5 .. %d" % (M, model.cfg["max_positions"]),
              file=sys.stderr)
        return 1
    try:
        pairs = read_pairs(model, a.pairs[0], a.pairs[1])
    except Refused as e:
        print("sqm_reader: %s" % e, file=sys.stderr)
        return 2
    except (OSError, ValueError, KeyError) as e:
        print("sqm_reader: %s" % e, file=sys.stderr)
        return 1
    ref = None
    if a.explain:
        ref = np.load(a.explain).astype(f64)
        if ref.ndim == 1:
            ref = ref[:, None]
        if ref.shape != (len(pairs), model.cfg["num_labels"]):
            print("sqm_reader: %s is %s, expected [%d, %d]" % (
                a.explain, list(ref.shape), len(pairs), model.cfg["num_labels"]),
                file=sys.stderr)
            return 1
    order = "query-first" if a.ablate == "query-first" else "longest-first"
    outs, st_lines, sc_lines = [], [], []
    for n, (qa, db) in enumerate(pairs):
        ids, types, nq, nd = pair_input(model, qa, db, M, order)
        if a.ablate == "types0":
            types = [0] * len(types)
        st = Stats()
        try:
            z = logits(model, ids, types, st, gelu)
        except ValueError as e:
            print("sqm_reader: pair %d: %s" % (n + 1, e), file=sys.stderr)
            return 2
        outs.append(z)
        s = scores(model, z)
        sc_lines.append(json.dumps({
            "index": n, "score": float(s[0]) if len(s) == 1 else [float(v) for v in s],
            "logit": float(z[0]) if len(z) == 1 else [float(v) for v in z],
            "tokens": len(ids), "query_tokens": nq, "document_tokens": nd}))
        rec = {"seq": n, "tokens": len(ids), "rows": st.rows,
               "guarded_rows": st.guarded_rows,
               "min_half_ulps": st.min_half_ulps if math.isfinite(st.min_half_ulps) else None,
               "where": st.min_half_where}
        if ref is not None:
            d = float(np.max(np.abs(z.astype(f64) - ref[n])))
            rec["diff"] = d
            if d > a.tol:
                fn = lambda st_, ids=ids, types=types: logits(model, ids, types, st_, gelu)
                flips, after = explain(fn, ref[n], a.tol, a.near_ulps)
                rec["explained"] = after <= a.tol
                rec["diff_after_flips"] = after
                rec["flips"] = [{"linear": f[0], "phase": f[1], "row": f[2], "col": f[3],
                                 "ulps": f[4], "v": f[5]} for f in flips]
        st_lines.append(json.dumps(rec))
    Lb = model.cfg["num_labels"]
    np.save(a.out, np.stack(outs).astype(f32) if outs else np.zeros((0, Lb), dtype=f32))
    if a.scores_out:
        with open(a.scores_out, "w") as fh:
            fh.write("\n".join(sc_lines) + ("\n" if sc_lines else ""))
    if a.stats:
        with open(a.stats, "w") as fh:
            fh.write("\n".join(st_lines) + ("\n" if st_lines else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
