#!/usr/bin/python3
"""Copies the low-precision references to OUT and spoils one, for the test
of `make_lowprec.py --verify`:
  lowprec_perturb.py FIXTURES_DIR OUT FIXTURE DTYPE bound   # every bound x 1/100
  lowprec_perturb.py FIXTURES_DIR OUT FIXTURE DTYPE greedy  # the last expected greedy id + 1"""
import json
import os
import shutil
import sys

source, out, fixture, dtype, what = sys.argv[1:6]
sys.path.insert(0, source)
from make_fixtures import read_safetensors, write_safetensors  # noqa: E402

shutil.rmtree(out, ignore_errors=True)
shutil.copytree(os.path.join(source, "lowprec"), out)
if what == "bound":
    path = os.path.join(out, fixture, f"{dtype}.safetensors")
    tensors = read_safetensors(path)
    tensors["bound"] *= 0.01
    write_safetensors(path, tensors, {"format": "pt"})
else:
    path = os.path.join(out, fixture, f"generate_{dtype}.json")
    spec = json.load(open(path))
    spec["expected"][-1] += 1
    open(path, "w").write(json.dumps(spec, indent=1) + "\n")
