#!/usr/bin/env python3
"""init_values.py FILE.safetensors: one line per tensor, sorted by name:
`NAME ones`, `NAME zeros`, or `NAME random` (anything else), to check what
`init-weights` filled each weight with."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

for name, (dtype, shape, data) in sorted(safetensors_io.read(sys.argv[1]).items()):
    values = np.frombuffer(data, dtype=np.float32)
    kind = "ones" if (values == 1).all() else "zeros" if (values == 0).all() else "random"
    print(name, kind)
