#!/usr/bin/env python3
"""same_ids.py CPU_BINARY CUDA_BINARY WEIGHTS GENERATE_JSON: runs `generate`
with both builds on the fixture's prompt (or source and bos), without and
with its end token (the fixture's PyTorch references have checked argmax
margins there, so a small numeric difference cannot flip an id), and checks
that both print the same ids. Prints one line per run; exits 1 otherwise."""
import json
import subprocess
import sys

cpu, cuda, weights, reference = sys.argv[1:5]
spec = json.load(open(reference))
args = ["generate", "--weights", weights, "--max-new-tokens", str(spec["max_new_tokens"])]
if "source" in spec:
    args += ["--source", ",".join(map(str, spec["source"])), "--bos", str(spec["bos"])]
else:
    args += ["--prompt", ",".join(map(str, spec["prompt"]))]

ok = True
for extra in ([], ["--eos", str(spec["eos"])]):
    runs = [subprocess.run([b] + args + extra, capture_output=True, text=True) for b in (cpu, cuda)]
    label = "with --eos" if extra else "without eos"
    if any(r.returncode != 0 for r in runs) or runs[0].stdout != runs[1].stdout:
        ok = False
        print("DIFFERENT %s: cpu %r (exit %d), cuda %r (exit %d) %s"
              % (label, runs[0].stdout.strip(), runs[0].returncode, runs[1].stdout.strip(),
                 runs[1].returncode, runs[1].stderr.strip()))
    else:
        print("same ids on CPU and CUDA %s: %s" % (label, runs[1].stdout.strip()))
sys.exit(0 if ok else 1)
