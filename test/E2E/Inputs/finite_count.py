#!/usr/bin/env python3
"""finite_count.py OUT.safetensors [TENSOR]: how many of TENSOR's F32 values
(default logits) are finite, as "NAME: F of N values finite". Plain Python."""
import math
import struct
import sys

from safetensors_io import read


def main():
    path = sys.argv[1]
    name = sys.argv[2] if len(sys.argv) > 2 else "logits"
    dtype, shape, data = read(path)[name]
    assert dtype == "F32", dtype
    values = struct.unpack("<%df" % (len(data) // 4), data)
    finite = sum(1 for v in values if math.isfinite(v))
    print(f"{name}: {finite} of {len(values)} values finite")


if __name__ == "__main__":
    main()
