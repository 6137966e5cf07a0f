#!/usr/bin/python3
"""Rescales the deterministic random weights of `init-weights` (normal, std
0.02: near-uniform attention, logits that barely depend on positions) to a
trained model's magnitudes, so that a position or mask error shows in the
logits: every matrix is multiplied by FACTOR, every random vector (biases)
becomes 1 + 5·value; a norm gain, which init-weights sets to 1 as a fresh
model's, stays 1 (at 1 + 5 = 6 in every RMSNorm of a Llama stack, matrices
x 15 made attention so peaked that f32 rounding decided between keys).
  scale_weights.py IN.safetensors OUT.safetensors FACTOR"""
import sys

import numpy as np

from safetensors_io import read, write

source, out, factor = sys.argv[1], sys.argv[2], float(sys.argv[3])
tensors = read(source)
for name, (dtype, shape, data) in tensors.items():
    if dtype != "F32":
        sys.exit(f"scale_weights.py: {name} is {dtype}, not F32")
    value = np.frombuffer(data, dtype=np.float32)
    if len(shape) == 2:
        value = value * factor
    elif not (value == 1).all():
        value = 1 + 5 * value
    tensors[name][2] = value.astype(np.float32).tobytes()
write(out, tensors)
