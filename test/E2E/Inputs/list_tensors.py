"""Prints a safetensors file's header: each tensor as `NAME DTYPE [d0, d1]`
(file order), then each metadata entry as `KEY = VALUE`."""
import json
import struct
import sys

with open(sys.argv[1], "rb") as f:
    (n,) = struct.unpack("<Q", f.read(8))
    header = json.loads(f.read(n))
metadata = header.pop("__metadata__", {})
for name, info in header.items():
    print(f"{name} {info['dtype']} [{', '.join(str(d) for d in info['shape'])}]")
for key, value in metadata.items():
    print(f"{key} = {value}")
