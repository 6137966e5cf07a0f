#!/usr/bin/env python3
"""Writes a copy of a weights file that a low-precision program must refuse.

  narrow_file.py KIND SOURCE OUT NAME

KIND: regroup (the I8 weight NAME's NAME.scales as if converted with half the
group size: twice the columns), nan or huge (element [0, 0] of the F32
tensor NAME set to NaN, or to 1e7, whose int8 scale 1e7 / 127 overflows
f16), unblock (the U8 int4 weight NAME without each row's last block),
infscale (the scale of the U8 int4 weight NAME's second block of row 0 set
to +infinity). Plain Python: no numpy or torch needed.
"""
import struct
import sys

from safetensors_io import read, write


def main():
    kind, source, out, name = sys.argv[1:5]
    tensors = read(source)
    if kind == "regroup":
        dtype, shape, data = tensors[name + ".scales"]
        rows, groups = shape
        row = 2 * groups
        doubled = b"".join(data[r * row:(r + 1) * row] * 2 for r in range(rows))
        tensors[name + ".scales"] = (dtype, [rows, 2 * groups], doubled)
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
        assert dtype == "U8" and shape[1] > 1, (dtype, shape)
        data = data[:18] + struct.pack("<H", 0x7C00) + data[20:]
        tensors[name] = (dtype, shape, data)
    else:
        sys.exit("unknown kind " + kind)
    write(out, tensors)


if __name__ == "__main__":
    main()
