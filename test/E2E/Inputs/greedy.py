#!/usr/bin/env python3
"""greedy.py BINARY WEIGHTS GENERATE_JSON: runs `BINARY generate` (KV cache)
on the fixture's prompt (or source and bos), without and with the fixture's
end token, and checks the ids against PyTorch's greedy generation (full
forward per token, no cache) recorded in GENERATE_JSON. Prints one line per
run; exits 1 on a mismatch."""
import json
import subprocess
import sys

binary, weights, reference = sys.argv[1:4]
spec = json.load(open(reference))
base = [binary, "generate", "--weights", weights,
        "--max-new-tokens", str(spec["max_new_tokens"])]
if "source" in spec:
    base += ["--source", ",".join(map(str, spec["source"])), "--bos", str(spec["bos"])]
else:
    base += ["--prompt", ",".join(map(str, spec["prompt"]))]

ok = True
for extra, expected in [([], spec["expected"]),
                        (["--eos", str(spec["eos"])], spec["expected_with_eos"])]:
    run = subprocess.run(base + extra, capture_output=True, text=True)
    got = [int(t) for t in run.stdout.split()]
    label = "with --eos %d" % spec["eos"] if extra else "without eos"
    if run.returncode != 0 or got != expected:
        ok = False
        print("MISMATCH %s: expected %s, got %s (exit %d) %s"
              % (label, expected, got, run.returncode, run.stderr.strip()))
    else:
        print("same ids as PyTorch %s: %s" % (label, " ".join(map(str, got))))
sys.exit(0 if ok else 1)
