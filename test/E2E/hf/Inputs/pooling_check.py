#!/usr/bin/env python3
"""pooling_check.py BINARY WEIGHTS TOKENIZE_JSONL POOLING PRINTED: checks the
sentence embeddings `BINARY run --text ... --pooling POOLING` printed (file
PRINTED, lines `embedding B: v0 v1 ...`) against the same model run on the
ids and token types `tfmc-tokenize DIR --bert` gave for the same texts (one
JSON object a line; the tokenizer itself is checked against Hugging Face's
in test/Tokenizer/wordpiece.test): the batch right-padded with 0 and masked,
`run --input`, then the masked mean of last_hidden_state over each row's
tokens (mean) or its first token (cls), computed here. Prints one line per
row; exits 1 on a difference over 1e-5 x max(1, |value|) (the printed
values have 7 significant digits)."""
import json
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Inputs"))
import safetensors_io  # noqa: E402

binary, weights, tokenized, pooling, printed = sys.argv[1:6]
rows = [json.loads(line) for line in open(tokenized) if line.strip()]
length = max(len(r["ids"]) for r in rows)


def i64(values):
    return ["I64", [len(rows), length], struct.pack("<%dq" % len(values), *values)]


ids, mask, types = [], [], []
for r in rows:
    pad = length - len(r["ids"])
    ids += r["ids"] + [0] * pad
    mask += [1] * len(r["ids"]) + [0] * pad
    types += r["type_ids"] + [0] * pad
with tempfile.TemporaryDirectory() as tmp:
    inputs, output = os.path.join(tmp, "in.safetensors"), os.path.join(tmp, "out.safetensors")
    safetensors_io.write(inputs, {"input_ids": i64(ids), "attention_mask": i64(mask),
                                  "token_type_ids": i64(types)})
    subprocess.run([binary, "run", "--weights", weights, "--input", inputs, "--output", output],
                   check=True, capture_output=True)
    dtype, shape, data = safetensors_io.read(output)["last_hidden_state"]
hidden = struct.unpack("<%df" % (len(data) // 4), data)
B, S, D = shape

got = {}
for line in open(printed):
    head, values = line.split(":", 1)
    got[int(head.split()[1])] = [float(v) for v in values.split()]
ok = len(got) == B
for b in range(B):
    count = 1 if pooling == "cls" else sum(mask[b * S:(b + 1) * S])
    want = [sum(hidden[(b * S + s) * D + d] for s in range(count)) / count for d in range(D)]
    diff = max(abs(x - y) / max(1.0, abs(y)) for x, y in zip(got.get(b, [0] * D), want))
    if len(got.get(b, [])) != D or diff > 1e-5:
        ok = False
        print("MISMATCH row %d: max relative difference %.2g over %d values" % (b, diff, D))
    else:
        print("row %d: %s pooling of %d tokens, %d values agree" % (b, pooling, count, D))
sys.exit(0 if ok else 1)
