#!/usr/bin/env python3
"""set_input.py IN.safetensors OUT.safetensors NAME [VALUE]: copies an inputs
file with the I64 tensor NAME set to VALUE everywhere, or without NAME when
no VALUE is given."""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(__file__))
import safetensors_io  # noqa: E402

src, dst, name = sys.argv[1:4]
tensors = safetensors_io.read(src)
if len(sys.argv) > 4:
    dtype, shape, data = tensors[name]
    count = len(data) // 8
    tensors[name] = [dtype, shape, struct.pack("<%dq" % count, *([int(sys.argv[4])] * count))]
else:
    del tensors[name]
safetensors_io.write(dst, tensors)
