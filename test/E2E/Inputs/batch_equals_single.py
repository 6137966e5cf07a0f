#!/usr/bin/env python3
"""batch_equals_single.py BINARY WEIGHTS GENERATE_JSON [ARG]...: runs
`BINARY generate` on a prompts file (or, for an encoder-decoder fixture, a
source file) holding the fixture's prompt among others of other lengths and
a repeat of it, as batches, and checks that:
  - the output is one line per prompt, in input order;
  - each line equals that prompt generated alone (--prompt/--source);
  - the fixture's prompt gives PyTorch's greedy ids from GENERATE_JSON,
    with or without its eos (greedy runs only: ARGs that sample change
    them).
Extra ARGs go to every run. Prints one summary line; exits 1 on a mismatch."""
import json
import os
import subprocess
import sys
import tempfile

binary, weights, reference = sys.argv[1:4]
extra = sys.argv[4:]
spec = json.load(open(reference))
seq2seq = "source" in spec
prompt = spec["source"] if seq2seq else spec["prompt"]
vocab_guard = max(prompt)  # ids below the fixture's vocabulary
# Other lengths on both sides of the fixture's, and the fixture's twice.
prompts = [prompt, [3, 1, 4], prompt[:2] + [5, 9, 2, 6, 5, 3, 5][: len(prompt)],
           [7], prompt, [2, 7, 1, 8, 2, 8, 1, 8, 2]]
prompts = [[t % (vocab_guard + 1) for t in p] for p in prompts]
base = [binary, "generate", "--weights", weights,
        "--max-new-tokens", str(spec["max_new_tokens"])] + extra
if seq2seq:
    base += ["--bos", str(spec["bos"])]
flag, file_flag = ("--source", "--source-file") if seq2seq else ("--prompt", "--prompts-file")

def run(args):
    done = subprocess.run(base + args, capture_output=True, text=True)
    if done.returncode != 0:
        print("MISMATCH: %s failed: %s" % (" ".join(args), done.stderr.strip()))
        sys.exit(1)
    return done.stdout.splitlines()

alone = [run([flag, ",".join(map(str, p))]) for p in prompts]
with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    f.write("".join(",".join(map(str, p)) + "\n" for p in prompts))
    path = f.name
try:
    batched = run([file_flag, path])
finally:
    os.unlink(path)
ok = True
if len(batched) != len(prompts):
    print("MISMATCH: %d lines for %d prompts" % (len(batched), len(prompts)))
    sys.exit(1)
for i, (one, line) in enumerate(zip(alone, batched)):
    if one != [line]:
        ok = False
        print("MISMATCH prompt %d: alone %s, batched %s" % (i + 1, one, line))
sampling = any(a.startswith("--temperature") or a.startswith("--repetition") for a in extra)
expected = spec["expected"]
if "--eos" in extra:
    expected = spec["expected_with_eos"] if extra[extra.index("--eos") + 1] == str(spec["eos"]) else None
if not sampling and expected is not None and [int(t) for t in batched[0].split()] != expected:
    ok = False
    print("MISMATCH: the fixture's prompt gave %s, PyTorch %s" % (batched[0], expected))
if ok:
    print("same ids batched and alone: %d prompts%s" % (
        len(prompts), "" if sampling else ", PyTorch's for the fixture's"))
sys.exit(0 if ok else 1)
