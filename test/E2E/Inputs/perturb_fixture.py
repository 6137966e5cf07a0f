#!/usr/bin/python3
"""Copies the committed fixtures to OUT and moves the largest value of one
fixture's expected output by DELTA (in units of its magnitude; `ulp`: to the
next f32 value), for the test of `make_fixtures.py --check`'s tolerance.
  perturb_fixture.py FIXTURES_DIR OUT FIXTURE DELTA"""
import os
import shutil
import sys

import numpy as np

source, out, fixture, delta = sys.argv[1:5]
sys.path.insert(0, source)
from make_fixtures import read_safetensors, write_safetensors  # noqa: E402

shutil.rmtree(out, ignore_errors=True)
shutil.copytree(source, out, ignore=shutil.ignore_patterns("*.py", "*.md", "__pycache__"))
path = os.path.join(out, fixture, "expected.safetensors")
(name, value), = read_safetensors(path).items()
flat = value.reshape(-1)
i = int(np.abs(flat).argmax())
flat[i] = np.nextafter(flat[i], np.float32(np.inf)) if delta == "ulp" else np.float32(flat[i] * (1 + float(delta)))
write_safetensors(path, {name: value}, {"format": "pt"})
