#!/usr/bin/env python3
"""dequantize.py CONVERTED OUT [SOURCE]: widens a file written by `convert-weights`
back to F32 (I8 [rows, blocks, 2 + group] as int8 blocks: an f16 scale d,
then the group's values q, each q * d; BF16 shifted into the upper half of
an f32; U8 [rows, blocks, 18] as GGUF's Q4_0 blocks: an f16 scale d, then
byte j holding values j (low nibble) and j + 16 (high nibble), each
(nibble - 8) * d; the columns of a padded last block are cut at SOURCE's
width, the f32 file it was converted from), keeping every other tensor. An f32 program run on OUT must
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
    source_shapes = ({name: shape for name, (_, shape, _) in read(sys.argv[3]).items()}
                     if len(sys.argv) > 3 else {})
    # The group size is the metadata's: ceil(cols / group) alone does not
    # determine it (136 columns make 3 groups of 64, or of 46).
    with open(source, "rb") as f:
        length = struct.unpack("<Q", f.read(8))[0]
        metadata = json.loads(f.read(length)).get("__metadata__", {})
    for name, (dtype, shape, data) in tensors.items():
        count = len(data) // {"I8": 1, "BF16": 2}.get(dtype, 1)
        if dtype == "I8":
            rows, blocks, block_bytes = shape
            group = int(metadata["tfmc.group"])
            assert block_bytes == 2 + group, (name, shape, group)
            # The last block of a row is padded with zeros: the column
            # count is the source file's.
            cols = source_shapes[name][-1] if name in source_shapes else blocks * group
            values = []
            for r in range(rows):
                row = []
                for b in range(blocks):
                    block = data[(r * blocks + b) * block_bytes:(r * blocks + b + 1) * block_bytes]
                    d = struct.unpack("<e", block[:2])[0]
                    row += [q * d for q in struct.unpack("<%db" % group, block[2:])]
                values += row[:cols]
            shape = [rows, cols]
        elif dtype == "U8":
            rows, blocks, block_bytes = shape
            assert block_bytes == 18, (name, shape)
            # The last block of a row is padded to 32 values: the column
            # count is the source file's (its [rows, cols] shape).
            cols = source_shapes[name][-1] if name in source_shapes else blocks * 32
            values = []
            for r in range(rows):
                row = []
                for b in range(blocks):
                    block = data[(r * blocks + b) * 18:(r * blocks + b + 1) * 18]
                    d = struct.unpack("<e", block[:2])[0]
                    low = [(byte & 15) - 8 for byte in block[2:]]
                    high = [(byte >> 4) - 8 for byte in block[2:]]
                    row += [q * d for q in low + high]
                values += row[:cols]
            shape = [rows, cols]
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
