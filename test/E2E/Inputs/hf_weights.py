#!/usr/bin/env python3
"""Rewrites a Hugging Face GPT-2 model.safetensors, for the import tests.

  hf_weights.py KIND SOURCE OUT [NAME]

KIND is one of:
  strip-prefix      every `transformer.` name without it (GPT2Model's names)
  untranspose NAME  the Conv1D weight NAME stored as [out, in] (nn.Linear's
                    layout) instead of GPT-2's [in, out]
  untie             lm_head.weight no longer equal to wte (an untied head)
Plain Python: no numpy or torch needed.
"""
import json
import struct
import sys

from safetensors_io import read, write


def main():
    kind, source, out = sys.argv[1:4]
    name = sys.argv[4] if len(sys.argv) > 4 else None
    tensors = read(source)
    if kind == "strip-prefix":
        prefix = "transformer."
        tensors = {(n[len(prefix):] if n.startswith(prefix) else n): t for n, t in tensors.items()}
    elif kind == "untranspose":
        dtype, (rows, cols), data = tensors[name]
        values = struct.unpack("<%df" % (rows * cols), data)
        flipped = [values[r * cols + c] for c in range(cols) for r in range(rows)]
        tensors[name] = [dtype, [cols, rows], struct.pack("<%df" % len(flipped), *flipped)]
    elif kind == "untie":
        dtype, shape, data = tensors["lm_head.weight"]
        values = list(struct.unpack("<%df" % (len(data) // 4), data))
        values[0] += 1.0
        tensors["lm_head.weight"] = [dtype, shape, struct.pack("<%df" % len(values), *values)]
    else:
        sys.exit("unknown kind " + kind)
    write(out, tensors)


if __name__ == "__main__":
    main()
