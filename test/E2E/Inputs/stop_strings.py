#!/usr/bin/env python3
"""stop_strings.py BINARY WEIGHTS TOKENIZER_DIR TEXT: runs `BINARY generate
--tokenizer` on TEXT without a stop string, then with --stop set to a piece
of the generated text that spans a token boundary, and checks that the
second output is the first one cut after the token in which the stop string
ends: a prefix of it, containing the stop string exactly at its end or
within its last token, and shorter. The token boundaries come from
`BINARY generate` without --tokenizer (the ids) decoded one prefix at a time
with tfmc-tokenize. Prints one line; exits 1 on a mismatch."""
import subprocess
import sys
import tempfile

binary, weights, tokdir, text = sys.argv[1:5]
base = [binary, "generate", "--weights", weights, "--max-new-tokens", "12"]


def run(args):
    done = subprocess.run(base + args, capture_output=True)
    if done.returncode != 0:
        print("MISMATCH: %s failed: %s" % (" ".join(args), done.stderr.decode().strip()))
        sys.exit(1)
    return done.stdout


# (The streamed text ends with one newline.)
full = run(["--tokenizer", tokdir, "--text", text]).decode("utf-8")[:-1]
prompt = subprocess.run(["tfmc-tokenize", tokdir, "--text", text], capture_output=True,
                        text=True).stdout.split("\n")[0].split()[1:]
ids = run(["--prompt", ",".join(prompt)]).decode().split()
# Each new token's text end, from decoding growing prefixes of the ids.
ends = []
for n in range(1, len(ids) + 1):
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
        f.write(" ".join(ids[:n]) + "\n")
        f.flush()
        decoded = subprocess.run(["tfmc-tokenize", tokdir, "--decode", f.name],
                                 capture_output=True).stdout.decode("utf-8", "replace")
    ends.append(len(decoded.rstrip("\n")))
# A stop string over the boundary between tokens 3 and 4 (2 characters
# either side, when the tokens are that long).
cut = ends[2]
stop = full[max(0, cut - 2):cut + 2]
if len(stop) < 2 or full.find(stop) + len(stop) <= ends[1]:
    print("MISMATCH: no usable stop string in %r" % full)
    sys.exit(1)
stopped = run(["--tokenizer", tokdir, "--text", text, "--stop", stop]).decode("utf-8")[:-1]
at = full.find(stop) + len(stop)
expected = full[:next(e for e in ends if e >= at)]
if stopped != expected:
    print("MISMATCH: --stop %r printed %r, expected %r (full %r)" % (stop, stopped, expected, full))
    sys.exit(1)
print("stop string across tokens: %d of %d characters printed" % (len(stopped), len(full)))
