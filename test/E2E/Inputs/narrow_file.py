#!/usr/bin/env python3
"""Writes a copy of a weights file that a low-precision program must refuse.

  narrow_file.py KIND SOURCE OUT NAME

KIND: regroup (the I8 int8 weight NAME's blocks as if converted with half
the group size: each block cut in two, the scale repeated), split (NAME's
blocks as tfmc's files held int8 before the blocks: I8 NAME [rows, cols]
and F16 NAME.scales [rows, blocks]), nan or huge (element [0, 0] of the F32
tensor NAME set to NaN, or to 1e7, whose int8 scale 1e7 / 127 overflows
f16), unblock (the U8 int4 weight NAME without each row's last block),
infscale (the scale of the U8 int4 or I8 int8 weight NAME's second block of
row 0 set to +infinity). Plain Python: no numpy or torch needed.
"""
import struct
import sys

from safetensors_io import read, write


def main():
    kind, source, out, name = sys.argv[1:5]
    tensors = read(source)
    if kind in ("regroup", "split"):
        dtype, (rows, blocks, size), data = tensors[name]
        assert dtype == "I8", dtype
        group = size - 2
        blocks_of = [data[i:i + size] for i in range(0, len(data), size)]
        if kind == "regroup":
            half = group // 2
            data = b"".join(b[:2] + b[2:2 + half] + b[:2] + b[2 + half:] for b in blocks_of)
            tensors[name] = (dtype, [rows, 2 * blocks, 2 + half], data)
        else:
            tensors[name] = (dtype, [rows, blocks * group], b"".join(b[2:] for b in blocks_of))
            tensors[name + ".scales"] = ("F16", [rows, blocks], b"".join(b[:2] for b in blocks_of))
    elif kind in ("nan", "huge"):
        dtype, shape, data = tensors[name]
        assert dtype == "F32", dtype
        value = float("nan") if kind == "nan" else 1e7
        tensors[name] = (dtype, shape, struct.pack("<f", value) + data[4:])
    elif kind == "unblock":
        dtype, (rows, blocks, size), data = tensors[name]
        row = blocks * size
        data = b"".join(data[r * row:(r + 1) * row - size] for r in range(rows))
        tensors[name] = (dtype, [rows, blocks - 1, size], data)
    elif kind == "infscale":
        dtype, shape, data = tensors[name]
        assert dtype in ("U8", "I8") and shape[1] > 1, (dtype, shape)
        size = shape[2]
        data = data[:size] + struct.pack("<H", 0x7C00) + data[size + 2:]
        tensors[name] = (dtype, shape, data)
    else:
        sys.exit("unknown kind " + kind)
    write(out, tensors)


if __name__ == "__main__":
    main()
