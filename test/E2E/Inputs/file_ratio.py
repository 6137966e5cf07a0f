#!/usr/bin/env python3
"""file_ratio.py F32 INT8 BF16: the layout of converted weights files
(tgt_embed.weight's tensors and the metadata) and each file's size as a
fraction of the f32 file's. Plain Python."""
import json
import os
import struct
import sys

from safetensors_io import read


def header(path):
    with open(path, "rb") as f:
        length = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(length))


f32 = os.path.getsize(sys.argv[1])
for path in sys.argv[2:]:
    tensors = read(path)
    parts = ["%s %s %s" % (name, tensors[name][0], json.dumps(tensors[name][1]))
             for name in ("tgt_embed.weight",) if name in tensors]
    meta = header(path).get("__metadata__", {})
    print("%s; metadata %s %s; %.3f of the f32 file" % (
        ", ".join(parts), meta.get("tfmc.weight_dtype", "-"), meta.get("tfmc.group", "-"),
        os.path.getsize(path) / f32))
