"""POST /v1/embeddings against the program's own forward pass, pooled here.

    python3 embeddings_check.py ROOT_URL MODEL PROGRAM WEIGHTS TOKENIZER_DIR
        --pooling mean|cls

Sends token-id inputs (more than one batch of the program) in both
encoding formats, and text inputs; the reference for ids is
`PROGRAM run --ids ... --output F` (whose last_hidden_state the E2E tests
hold to PyTorch), pooled with NumPy: the mean over the tokens, or the first
token's. Text inputs must equal `PROGRAM run --tokenizer DIR --text T
--pooling P`. Prints one line per check; exits 1 on a difference.
"""

import argparse
import base64
import json
import subprocess
import sys
import tempfile
import urllib.request

import numpy as np


def post(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


def last_hidden_state(path):
    # A safetensors file: 8-byte header length, JSON header, data.
    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
        data = f.read()
    info = header["last_hidden_state"]
    begin, end = info["data_offsets"]
    return np.frombuffer(data[begin:end], dtype=np.float32).reshape(info["shape"])


def main():
    parser = argparse.ArgumentParser()
    for name in ("root", "model", "program", "weights", "tokenizer"):
        parser.add_argument(name)
    parser.add_argument("--pooling", required=True)
    args = parser.parse_args()
    failures = 0

    inputs = [[2, 30, 31, 32, 3], [2, 40, 3], [2, 33, 34, 35, 36, 37, 3]]
    expected = []
    with tempfile.TemporaryDirectory() as tmp:
        for ids in inputs:
            out = f"{tmp}/out.safetensors"
            subprocess.run([args.program, "run", "--weights", args.weights, "--ids",
                            ",".join(map(str, ids)), "--output", out],
                           check=True, capture_output=True)
            hidden = last_hidden_state(out)[0]
            expected.append(hidden.mean(axis=0) if args.pooling == "mean" else hidden[0])

    for encoding in ("float", "base64"):
        answer = post(args.root + "/v1/embeddings",
                      {"model": args.model, "input": inputs, "encoding_format": encoding})
        got = []
        for item in answer["data"]:
            vector = item["embedding"]
            if encoding == "base64":
                vector = np.frombuffer(base64.b64decode(vector), dtype="<f4")
            got.append(np.asarray(vector, dtype=np.float32))
        worst = max(float(np.abs(g - e).max()) for g, e in zip(got, expected))
        ok = (len(got) == len(inputs) and [i["index"] for i in answer["data"]] == [0, 1, 2]
              and answer["usage"]["prompt_tokens"] == sum(map(len, inputs)) and worst <= 1e-5)
        failures += not ok
        print(f"ids, {encoding}: {len(got)} embeddings of {got[0].size}, "
              f"max |diff| {'<= 1e-5' if worst <= 1e-5 else worst}, usage "
              f"{answer['usage']['prompt_tokens']}")

    texts = ["a bad cab.", "hi there!"]
    answer = post(args.root + "/v1/embeddings", {"model": args.model, "input": texts,
                                                 "encoding_format": "float"})
    command = [args.program, "run", "--weights", args.weights, "--tokenizer", args.tokenizer,
               "--pooling", args.pooling]
    for text in texts:
        command += ["--text", text]
    lines = subprocess.run(command, check=True, capture_output=True, text=True).stdout.splitlines()
    reference = [np.array([float(v) for v in line.split(":")[1].split()]) for line in lines]
    worst = max(float(np.abs(np.asarray(item["embedding"]) - r).max() / max(1.0, np.abs(r).max()))
                for item, r in zip(answer["data"], reference))
    ok = len(answer["data"]) == len(texts) and worst <= 1e-6
    failures += not ok
    print(f"text: {len(answer['data'])} embeddings, equal to run --pooling: {ok}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
