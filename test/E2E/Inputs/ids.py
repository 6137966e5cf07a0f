#!/usr/bin/env python3
"""ids.py GENERATED PREFIX: prints PREFIX followed by every generated id but
the last (the sequence whose logits a generation with N new tokens computed),
comma-separated, for `run --ids`."""
import sys

generated = open(sys.argv[1]).read().split()
ids = sys.argv[2].split(",") + generated[:-1]
print(",".join(ids))
