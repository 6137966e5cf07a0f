#!/usr/bin/env python3
"""Rewrites a Hugging Face Llama-family checkpoint, for the import tests.

  llama_weights.py strip-prefix SOURCE OUT   every `model.` name without it
                                             (a bare LlamaModel's state dict)
  llama_weights.py widen DIR OUT             the BF16 shards DIR's index names,
                                             as one F32 file (exact widening)
Plain Python: no numpy or torch needed.
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Inputs"))
from safetensors_io import read, write  # noqa: E402


def main():
    kind, source, out = sys.argv[1:4]
    if kind == "strip-prefix":
        prefix = "model."
        tensors = {(n[len(prefix):] if n.startswith(prefix) else n): t for n, t in read(source).items()}
    elif kind == "widen":
        with open(os.path.join(source, "model.safetensors.index.json")) as f:
            weight_map = json.load(f)["weight_map"]
        tensors = {}
        for shard in sorted(set(weight_map.values())):
            for name, (dtype, shape, data) in read(os.path.join(source, shard)).items():
                if dtype != "BF16" or weight_map.get(name) != shard:
                    sys.exit(f"{shard}: {name}: {dtype}, index says {weight_map.get(name)}")
                halves = struct.unpack("<%dH" % (len(data) // 2), data)
                tensors[name] = ["F32", shape, struct.pack("<%dI" % len(halves), *[h << 16 for h in halves])]
        if set(tensors) != set(weight_map):
            sys.exit("the shards do not hold every tensor the index names")
    else:
        sys.exit("unknown kind " + kind)
    write(out, tensors)


if __name__ == "__main__":
    main()
