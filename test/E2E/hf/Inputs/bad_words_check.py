#!/usr/bin/env python3
"""bad_words_check.py BINARY WEIGHTS SOURCE BOS [DIR]: `generate --bad-words` against
Hugging Face's NoBadWordsLogitsProcessor, derived by hand from the logits
the unbanned run chose from (--dump-logits: the raw logits of each step).
Greedy, 4 new tokens a1..a4 from SOURCE (ids) and decoder start BOS:
  --bad-words a1        step 1 takes the best id but a1 (lowest id on ties);
  --bad-words BOS,a1    the same: the decoder start is the sequence's first
                        token, so [BOS, a1] bans a1 at step 1;
  --bad-words a1,a2     step 1 keeps a1 (nothing precedes it in the ban), and
                        step 2, whose logits are then the unbanned run's,
                        takes the best id but a2;
  --bad-words a2,a1     nothing changes (a2 never precedes a1);
  beams (2) with --bad-words a1: a1 never appears;
  with DIR (a tokenizer directory), a copy whose config.json has
  bad_words_ids [[a1]] and no --bad-words: step 1's text is the best id but
  a1's (tfmc-tokenize --decode).
Prints one line per case; exits 1 on the first mismatch."""
import json
import os
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Inputs"))
from safetensors_io import read  # noqa: E402

binary, weights, source, bos = sys.argv[1:5]
directory = sys.argv[5] if len(sys.argv) > 5 else None
tmp = os.environ.get("TMPDIR", "/tmp")


def generate(*extra):
    out = subprocess.run([binary, "generate", "--weights", weights, "--source", source,
                          "--bos", bos, "--max-new-tokens", "4"] + list(extra),
                         check=True, capture_output=True, text=True).stdout
    return [int(t) for t in out.split()]


def best_but(row, banned):
    """The id of the largest logit but `banned`'s (the lowest id on ties)."""
    return min((i for i in range(len(row)) if i != banned), key=lambda i: (-row[i], i))


dump = os.path.join(tmp, "bad_words_logits.%d.safetensors" % os.getpid())
ids = generate("--dump-logits", dump)
dtype, shape, data = read(dump)["logits"]
os.unlink(dump)
vocab = shape[-1]
rows = [struct.unpack("<%df" % vocab, data[4 * vocab * s:4 * vocab * (s + 1)]) for s in range(shape[1])]
a1, a2 = ids[0], ids[1]
print("unbanned: %s" % " ".join(map(str, ids)))

cases = [
    (["--bad-words", str(a1)], lambda got: got[0] == best_but(rows[0], a1), "step 1 is the best but a1"),
    (["--bad-words", "%s,%d" % (bos, a1)], lambda got: got[0] == best_but(rows[0], a1), "[bos, a1] bans a1 at step 1"),
    (["--bad-words", "%d,%d" % (a1, a2)],
     lambda got: got[0] == a1 and got[1] == best_but(rows[1], a2), "[a1, a2] bans a2 after a1"),
    (["--bad-words", "%d,%d" % (a2, a1)], lambda got: got == ids if a2 != a1 else True, "[a2, a1] changes nothing"),
    (["--bad-words", str(a1), "--num-beams", "2"], lambda got: a1 not in got, "beams never take a1"),
]
for extra, ok, what in cases:
    got = generate(*extra)
    if not ok(got):
        print("MISMATCH: %s: %s gave %s" % (what, " ".join(extra), got))
        sys.exit(1)
    print("ok: %s" % what)

if directory:
    copy = os.path.join(tmp, "bad_words_dir.%d" % os.getpid())
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(directory, copy)
    config = json.load(open(os.path.join(copy, "config.json")))
    config["bad_words_ids"] = [[a1]]
    json.dump(config, open(os.path.join(copy, "config.json"), "w"))
    text = subprocess.run([binary, "generate", "--weights", weights, "--tokenizer", copy, "--source", source,
                           "--bos", bos, "--max-new-tokens", "1"],
                          check=True, capture_output=True, text=True).stdout.rstrip("\n")

    def decode(token):
        path = os.path.join(copy, "ids.txt")
        with open(path, "w") as f:
            f.write(str(token))
        out = subprocess.run(["tfmc-tokenize", copy, "--decode", path], check=True,
                             capture_output=True, text=True).stdout.rstrip("\n")
        return out[len("text: "):] if out.startswith("text: ") else out

    expected, unbanned = decode(best_but(rows[0], a1)), decode(a1)
    shutil.rmtree(copy)
    if text != expected or (text == unbanned and best_but(rows[0], a1) != a1 and expected != unbanned):
        print("MISMATCH: the directory's bad_words_ids [[%d]]: %r, expected %r (unbanned %r)"
              % (a1, text, expected, unbanned))
        sys.exit(1)
    print("ok: the directory's bad_words_ids")
