#!/usr/bin/env python3
"""rename_tensors.py IN.safetensors OUT.safetensors [--prefix P] [--strip P]
[--rename OLD=NEW]... [--add NAME]...: copies a weights file with every
name prefixed by P (or stripped of P), single tensors renamed, and extra
F32 [2] tensors NAME added (a task head the program does not use). Plain
Python (test/E2E/Inputs/safetensors_io.py)."""
import argparse
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Inputs"))
import safetensors_io  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("src")
ap.add_argument("dst")
ap.add_argument("--prefix", default="")
ap.add_argument("--strip", default="")
ap.add_argument("--rename", action="append", default=[])
ap.add_argument("--add", action="append", default=[])
args = ap.parse_args()

tensors = safetensors_io.read(args.src)
renames = dict(pair.split("=", 1) for pair in args.rename)
out = {}
for name, tensor in tensors.items():
    if args.strip and name.startswith(args.strip):
        name = name[len(args.strip):]
    name = renames.get(name, name)
    out[args.prefix + name] = tensor
for name in args.add:
    out[name] = ["F32", [2], struct.pack("<2f", 0.5, -0.5)]
safetensors_io.write(args.dst, out)
