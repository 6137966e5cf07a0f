"""OpenAI's presence_penalty, frequency_penalty and logit_bias in `NAME serve`,
against a restatement of OpenAI's definition on the program's own logits.

    python3 penalties_check.py ROOT_URL MODEL PROGRAM WEIGHTS

For each case a greedy completion (temperature 0, 8 tokens) of a fixed
prompt must give the ids this script chooses step by step: the logits of
`PROGRAM run --ids PROMPT+CHOSEN` at the last position, each token
generated so far, c times, less c * frequency + (c > 0) * presence, each
logit_bias added, then the argmax (the lowest id among equals). Each case
must also differ from the plain greedy ids (so an ignored field fails), and
every chosen step wins by a margin. Then the refusals: one line each
(logprobs too: this server has no tokenizer to give each token's text).
Exits 1 on any failure.
"""

import json
import os
import struct
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

import numpy as np

PROMPT = [464, 3290, 318, 257, 1332, 13, 383, 3290]
NEW = 8


def post(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read().decode())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read().decode())


def last_logits(program, weights, ids):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.safetensors")
        subprocess.run([program, "run", "--weights", weights, "--ids", ",".join(map(str, ids)),
                        "--output", out], check=True, capture_output=True)
        raw = open(out, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    info = json.loads(raw[8:8 + n])["logits"]
    start, end = info["data_offsets"]
    logits = np.frombuffer(raw[8 + n + start:8 + n + end], dtype=np.float32).reshape(info["shape"])
    return logits[0, -1].astype(np.float64)


def reference(program, weights, presence=0.0, frequency=0.0, bias=None, count_prompt=False,
              prompt=PROMPT):
    chosen, margins = [], []
    for _ in range(NEW):
        logits = last_logits(program, weights, prompt + chosen)
        counted = (prompt if count_prompt else []) + chosen
        for token in set(counted):
            c = counted.count(token)
            logits[token] -= c * frequency + presence
        for token, b in (bias or {}).items():
            logits[int(token)] += b
        best = int(np.argmax(logits))
        top2 = np.sort(logits)[-2:]
        margins.append(float(top2[1] - top2[0]))
        chosen.append(best)
    return chosen, min(margins)


def main():
    root, model, program, weights = sys.argv[1:5]
    failures = 0

    def report(ok, line):
        nonlocal failures
        failures += not ok
        print(("" if ok else "FAIL: ") + line)

    def serve(prompt=PROMPT, **fields):
        status, body = post(root + "/v1/completions",
                            dict(model=model, prompt=prompt, max_tokens=NEW, temperature=0, **fields))
        return body["choices"][0]["token_ids"] if status == 200 else body

    plain, _ = reference(program, weights)
    report(serve() == plain, f"greedy: {len(set(plain))} distinct of {len(plain)} ids, equal to the reference")
    cases = [("presence 1.5", dict(presence_penalty=1.5), dict(presence=1.5)),
             ("frequency 0.8", dict(frequency_penalty=0.8), dict(frequency=0.8)),
             ("both, negative presence", dict(presence_penalty=-0.5, frequency_penalty=1.25),
              dict(presence=-0.5, frequency=1.25)),
             ("logit_bias -100 on the first choice, +3.5 on another",
              dict(logit_bias={str(plain[0]): -100, "1000": 3.5}),
              dict(bias={str(plain[0]): -100, "1000": 3.5})),
             ("logit_bias +100", dict(logit_bias={"42": 100}), dict(bias={"42": 100}))]
    # OpenAI counts the generated tokens only: counting the prompt's too
    # would choose otherwise on a prompt that ends with greedy's first token
    # (which greedy repeats).
    held = PROMPT + [plain[0]]
    prompt_too, _ = reference(program, weights, presence=1.5, frequency=0.8, count_prompt=True,
                              prompt=held)
    want, _ = reference(program, weights, presence=1.5, frequency=0.8, prompt=held)
    got = serve(prompt=held, presence_penalty=1.5, frequency_penalty=0.8)
    report(got == want and want != prompt_too,
           f"the generated tokens only: equal to the reference: {got == want}, counting the "
           f"prompt would differ: {want != prompt_too}")
    for name, fields, args in cases:
        want, margin = reference(program, weights, **args)
        got = serve(**fields)
        report(got == want and want != plain and margin > 1e-3,
               f"{name}: equal to the reference: {got == want}, differs from greedy: {want != plain}, "
               f"margin > 1e-3: {margin > 1e-3}")
        if got != want:
            print(f"  got {got}, want {want}")

    for field, value, words in (("presence_penalty", 2.5, "must be in [-2, 2]"),
                                ("frequency_penalty", -3, "must be in [-2, 2]"),
                                ("logit_bias", {"abc": 1}, "is not a token id"),
                                ("logit_bias", {"-5": 1}, "is not a token id"),
                                ("logit_bias", {"50257": 1}, "outside the vocabulary of 50257"),
                                ("logit_bias", {"5": 101}, "must be a number in [-100, 100]"),
                                ("logit_bias", [5], "must be an object"),
                                # (This server has no --tokenizer.)
                                ("logprobs", 2, "logprobs needs the server to have --tokenizer")):
        status, body = post(root + "/v1/completions",
                            {"model": model, "prompt": PROMPT, "max_tokens": 1, field: value})
        error = body.get("error", {}) if isinstance(body, dict) else {}
        report(status == 400 and error.get("param") == field and words in error.get("message", ""),
               f"{field} = {json.dumps(value)}: {status} {error.get('message')}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
