"""OpenAI's logprobs in `NAME serve`, against the program's own logits.

    python3 logprobs_check.py ROOT_URL MODEL PROGRAM WEIGHTS TOKENIZER_DIR

The reference: `PROGRAM run --ids PROMPT+CHOSEN`'s logits at the last
position, log_softmax in float64 (the model's own distribution, before
penalties and temperature, as vLLM reports by default). Checks, one line
each:
  - completions, logprobs 3: each token's id and log-probability (within
    1e-4: the server's decode steps and `run`'s prefill round differently),
    its 3 most probable tokens in order, text_offset the characters of the
    texts before it, and the texts joined equal to the completion's text;
  - the same streamed: the chunks' logprobs joined equal the whole answer's;
  - chat, logprobs true and top_logprobs 2: the same in chat's form, bytes
    the UTF-8 of each token's text;
  - sampled (temperature 1.5, presence_penalty 1): the chosen tokens'
    log-probabilities are still the model's own;
  - refusals, each a 400 naming the field.
Exits 1 on any failure.
"""

import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PROMPT = [464, 3290, 318, 257, 1332, 13, 383, 3290]
NEW = 8


def post(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def log_softmax(program, weights, ids):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.safetensors")
        subprocess.run([program, "run", "--weights", weights, "--ids", ",".join(map(str, ids)),
                        "--output", out], check=True, capture_output=True)
        raw = open(out, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    info = json.loads(raw[8:8 + n])["logits"]
    start, end = info["data_offsets"]
    logits = np.frombuffer(raw[8 + n + start:8 + n + end], dtype=np.float32).reshape(info["shape"])
    x = logits[0, -1].astype(np.float64)
    return x - (x.max() + math.log(np.exp(x - x.max()).sum()))


def check_entries(program, weights, prompt, ids, logprobs, top):
    """Whether each token's logprob and its top list match the reference."""
    ok = True
    for i, (token, value, alternatives) in enumerate(zip(ids, logprobs, top)):
        ref = log_softmax(program, weights, prompt + ids[:i])
        order = sorted(range(len(ref)), key=lambda j: (-ref[j], j))
        margin = ref[order[len(alternatives) - 1]] - ref[order[len(alternatives)]] if alternatives else 1
        ok = ok and abs(value - ref[token]) < 1e-4 and margin > 1e-4
        ok = ok and [a for a, _ in alternatives] == order[:len(alternatives)]
        ok = ok and all(abs(v - ref[a]) < 1e-4 for a, v in alternatives)
    return ok


def main():
    root, model, program, weights, tokenizer = sys.argv[1:6]
    failures = 0

    def report(ok, line):
        nonlocal failures
        failures += not ok
        print(("" if ok else "FAIL: ") + line)

    # Completions.
    status, body = post(root + "/v1/completions", {"model": model, "prompt": PROMPT, "max_tokens": NEW,
                                                   "temperature": 0, "logprobs": 3})
    choice = json.loads(body)["choices"][0]
    lp = choice["logprobs"]
    ids = choice["token_ids"]
    offsets = [sum(len(t) for t in lp["tokens"][:i]) for i in range(len(lp["tokens"]))]
    structure = (status == 200 and len(lp["tokens"]) == len(ids) == NEW
                 and "".join(lp["tokens"]) == choice["text"] and lp["text_offset"] == offsets
                 and all(len(t) == 3 for t in lp["top_logprobs"]))
    # Completions' top lists are keyed by text (chat's carry ids: checked below).
    values_ok = check_entries(program, weights, PROMPT, ids, lp["token_logprobs"], [[]] * len(ids))
    report(structure and values_ok,
           f"completions: {len(ids)} tokens, logprobs equal to the model's: {values_ok}, texts joined "
           f"are the text and text_offset counts them: {structure}")
    whole = lp

    # Streamed.
    status, body = post(root + "/v1/completions", {"model": model, "prompt": PROMPT, "max_tokens": NEW,
                                                   "temperature": 0, "logprobs": 3, "stream": True})
    chunks = [json.loads(line[6:]) for line in body.split("\n")
              if line.startswith("data: ") and line != "data: [DONE]"]
    joined = {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
    for chunk in chunks:
        part = chunk["choices"][0]["logprobs"]
        if part:
            for key in joined:
                joined[key] += part[key]
    report(joined == whole, f"completions, streamed: the chunks' logprobs joined equal the answer's: "
                            f"{joined == whole}")

    # Chat.
    messages = [{"role": "user", "content": "Hello world"}]
    status, body = post(root + "/v1/chat/completions",
                        {"model": model, "messages": messages, "max_tokens": NEW, "temperature": 0,
                         "logprobs": True, "top_logprobs": 2})
    answer = json.loads(body)
    choice = answer["choices"][0]
    content = choice["logprobs"]["content"]
    ids = choice["token_ids"]
    # The chat's prompt: the template's rendering (Python's Jinja2), tokenized.
    config = os.path.join(tokenizer, "tokenizer_config.json")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as cases:
        json.dump([{"name": "chat", "messages": messages, "add_generation_prompt": True}], cases)
    rendered = subprocess.run([sys.executable, os.path.join(HERE, "render_jinja2.py"), config,
                               cases.name], check=True, capture_output=True, text=True).stdout
    os.unlink(cases.name)
    text = json.loads(rendered.splitlines()[0])["output"]
    tokenized = subprocess.run(["tfmc-tokenize", tokenizer, "--text", text], check=True,
                               capture_output=True, text=True).stdout
    prompt = [int(t) for t in tokenized.splitlines()[0].split(":")[1].split()]
    structure = (status == 200 and [e["token_id"] for e in content] == ids
                 and "".join(e["token"] for e in content) == choice["message"]["content"]
                 and all(e["bytes"] == list(e["token"].encode()) and len(e["top_logprobs"]) == 2
                         for e in content)
                 and choice["logprobs"]["refusal"] is None
                 and answer["usage"]["prompt_tokens"] == len(prompt))
    values_ok = check_entries(program, weights, prompt, ids, [e["logprob"] for e in content],
                              [[(t["token_id"], t["logprob"]) for t in e["top_logprobs"]]
                               for e in content])
    report(structure and values_ok,
           f"chat: {len(ids)} tokens, logprobs and the 2 most probable equal to the model's: "
           f"{values_ok}, token_id and texts joined are the answer's, bytes their UTF-8: {structure}")

    # Sampling does not change the reported distribution.
    status, body = post(root + "/v1/completions", {"model": model, "prompt": PROMPT, "max_tokens": NEW,
                                                   "temperature": 1.5, "presence_penalty": 1.0,
                                                   "seed": 7, "logprobs": 2})
    choice = json.loads(body)["choices"][0]
    ok = check_entries(program, weights, PROMPT, choice["token_ids"],
                       choice["logprobs"]["token_logprobs"], [[]] * NEW)
    report(status == 200 and ok, f"sampled (temperature 1.5, presence 1): the model's own logprobs: {ok}")

    for endpoint, fields, param, words in (
            ("chat", {"logprobs": True, "top_logprobs": 21}, "top_logprobs", "at most 20"),
            ("chat", {"top_logprobs": 2}, "top_logprobs", "needs logprobs: true"),
            ("chat", {"logprobs": 1}, "logprobs", "true or false"),
            ("completions", {"logprobs": 6}, "logprobs", "at most 5"),
            ("completions", {"logprobs": True}, "logprobs", "must be an integer")):
        url = root + ("/v1/chat/completions" if endpoint == "chat" else "/v1/completions")
        request = {"model": model, "max_tokens": 1, **fields}
        request.update({"messages": messages} if endpoint == "chat" else {"prompt": PROMPT})
        status, body = post(url, request)
        error = json.loads(body).get("error", {})
        report(status == 400 and error.get("param") == param and words in error.get("message", ""),
               f"{endpoint} {json.dumps(fields)}: {status} {error.get('message')}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
