#!/usr/bin/env python3
"""Rewrite a safetensors file with a damaged header, for bad-input tests.

usage: mutate_safetensors.py IN OUT MODE [TENSOR]
  MODE: dtype-i32     set TENSOR's dtype to I32 (same byte size as F32)
        reshape       swap TENSOR's 2-D shape for one of the same size
        rename        rename TENSOR (so it is missing)
        hlen-past-eof header length field larger than the file
        truncate      cut the file in the middle of the data
        overlap       make TENSOR's data range overlap the previous tensor's
"""
import json
import struct
import sys


def main():
    src, dst, mode = sys.argv[1:4]
    name = sys.argv[4] if len(sys.argv) > 4 else None
    raw = open(src, "rb").read()
    (hlen,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + hlen])
    data = raw[8 + hlen:]
    if mode == "truncate":
        open(dst, "wb").write(raw[: 8 + hlen + len(data) // 2])
        return
    if mode == "hlen-past-eof":
        open(dst, "wb").write(struct.pack("<Q", len(raw) + 100) + raw[8:])
        return
    ent = header[name]
    if mode == "dtype-i32":
        ent["dtype"] = "I32"
    elif mode == "reshape":
        a, b = ent["shape"]
        ent["shape"] = [a // 2, b * 2]
    elif mode == "rename":
        header[name + ".renamed"] = header.pop(name)
    elif mode == "overlap":
        ent["data_offsets"] = [ent["data_offsets"][0] - 4, ent["data_offsets"][1] - 4]
    else:
        sys.exit("unknown mode " + mode)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    open(dst, "wb").write(struct.pack("<Q", len(h)) + h + data)


if __name__ == "__main__":
    main()
