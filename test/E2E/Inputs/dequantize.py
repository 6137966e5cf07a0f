#!/usr/bin/env python3
"""dequantize.py CONVERTED OUT: widens a file written by `convert-weights`
back to F32 (I8 times its NAME.scales per group, BF16 shifted into the upper
half of an f32), keeping every other tensor. An f32 program run on OUT must
give what the narrow program gives on CONVERTED, up to summation order: an
independent check of what the runtime hands the narrow kernels. Plain
Python (struct's 'e' is IEEE half)."""
import json
import struct
import sys

from safetensors_io import read, write


def main():
    source, out = sys.argv[1:3]
    tensors, wide = read(source), {}
    # The group size is the metadata's: ceil(cols / group) alone does not
    # determine it (136 columns make 3 groups of 64, or of 46).
    with open(source, "rb") as f:
        length = struct.unpack("<Q", f.read(8))[0]
        metadata = json.loads(f.read(length)).get("__metadata__", {})
    for name, (dtype, shape, data) in tensors.items():
        if name.endswith(".scales"):
            continue
        count = len(data) // {"I8": 1, "BF16": 2}.get(dtype, 1)
        if dtype == "I8":
            rows, cols = shape
            _, (_, groups), scale_bytes = tensors[name + ".scales"]
            group = int(metadata["tfmc.group"])
            assert groups == -(-cols // group), (name, groups, group)
            q = struct.unpack("<%db" % count, data)
            scales = struct.unpack("<%de" % (rows * groups), scale_bytes)
            values = [q[r * cols + c] * scales[r * groups + c // group]
                      for r in range(rows) for c in range(cols)]
        elif dtype == "BF16":
            halves = struct.unpack("<%dH" % count, data)
            values = struct.unpack("<%df" % count,
                                   struct.pack("<%dI" % count, *(h << 16 for h in halves)))
        else:
            wide[name] = (dtype, shape, data)
            continue
        wide[name] = ("F32", shape, struct.pack("<%df" % len(values), *values))
    write(out, wide)


if __name__ == "__main__":
    main()
