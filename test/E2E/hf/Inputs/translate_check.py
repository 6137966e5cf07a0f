#!/usr/bin/env python3
"""translate_check.py BINARY WEIGHTS DIR TEXT MAX_NEW [ARGS...]: checks `BINARY
generate --tokenizer DIR --text TEXT` (Marian: text in, text out) against
the same program given ids: the source ids `tfmc-tokenize DIR --prompt TEXT`
gives (checked against python3-sentencepiece in test/Tokenizer/marian.test),
`generate --source IDS --bos START` with START the config's
decoder_start_token_id, and the new ids decoded by `tfmc-tokenize DIR
--decode` (the target vocabulary, specials skipped). Prints the text and
the ids; exits 1 when the texts differ."""
import json
import os
import subprocess
import sys
import tempfile

binary, weights, directory, text, max_new = sys.argv[1:6]
extra = sys.argv[6:]  # e.g. --num-beams 3, given to both runs
config = json.load(open(os.path.join(directory, "config.json")))
start = config["decoder_start_token_id"]
# The directory's bad_words_ids (Marian bans its pad), given by hand to the
# run on ids, which has no directory.
banned = []
for word in config.get("bad_words_ids") or []:
    banned += ["--bad-words", ",".join(map(str, word))]


def run(args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


translated = run([binary, "generate", "--weights", weights, "--tokenizer", directory,
                  "--text", text, "--max-new-tokens", max_new] + extra).rstrip("\n")
source = run(["tfmc-tokenize", directory, "--prompt", text]).splitlines()[0].split(":", 1)[1].split()
ids = run([binary, "generate", "--weights", weights, "--source", ",".join(source),
           "--bos", str(start), "--eos", "0", "--max-new-tokens", max_new] + banned + extra).split()
with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    f.write(" ".join(ids))
decoded = run(["tfmc-tokenize", directory, "--decode", f.name]).rstrip("\n")
os.unlink(f.name)
if decoded.startswith("text: "):
    decoded = decoded[len("text: "):]
print("source ids: %s" % " ".join(source))
print("new ids: %s" % " ".join(ids))
if translated != decoded:
    print("MISMATCH: generate --text printed %r, the ids decode to %r" % (translated, decoded))
    sys.exit(1)
print("same text: %r" % translated)
