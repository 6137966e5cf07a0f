#!/usr/bin/env python3
"""mask_inputs.py OUT NAME=ROWS ...: writes a safetensors file of int64
[B, S] inputs, each ROWS as "1,2,3;4,5,6" (rows separated by ';').

mask_inputs.py --compare A ROW B COLS: checks that the outputs (logits or
hidden states) of A's batch row ROW at positions [0, COLS) equal those of
B's row 0 (B: the same sequence without its padding) within 1e-5 relative,
and prints how many values were compared."""
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import safetensors_io  # noqa: E402


def tensor(path):
    (name, (dtype, shape, data)), = safetensors_io.read(path).items()
    assert dtype == "F32", dtype
    return np.frombuffer(data, dtype=np.float32).reshape(shape)


if sys.argv[1] == "--compare":
    a, b = tensor(sys.argv[2]), tensor(sys.argv[4])
    row, cols = int(sys.argv[3]), int(sys.argv[5])
    a, b = a[row, :cols], b[0, :cols]
    assert a.shape == b.shape, (a.shape, b.shape)
    err = np.abs(a - b) / np.maximum(1, np.abs(b))
    assert err.max() <= 1e-5, err.max()
    print(f"compared {a.size} values, max error {err.max():.1e}")
    sys.exit(0)

tensors = {}
for spec in sys.argv[2:]:
    name, rows = spec.split("=")
    values = [[int(v) for v in row.split(",")] for row in rows.split(";")]
    data = b"".join(struct.pack("<q", v) for row in values for v in row)
    tensors[name] = ["I64", [len(values), len(values[0])], data]
safetensors_io.write(sys.argv[1], tensors)
