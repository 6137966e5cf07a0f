"""Chat completions, stop strings and body limits of `NAME serve`.

    python3 api_check.py ROOT_URL MODEL PROGRAM WEIGHTS TOKENIZER_DIR

TOKENIZER_DIR holds GPT-2's vocab.json and merges.txt and a
tokenizer_config.json with a chat_template. Checks, one line each:
  - chat: the conversation rendered by Python's Jinja2 as transformers
    renders it (render_jinja2.py), tokenized by `tfmc-tokenize`, then run
    through `PROGRAM generate --prompt IDS` with the eos of the directory:
    the server's token_ids must be those, and its content their text
    (streamed too: the deltas join to the same content);
  - stop: a completion whose stop string the greedy text reaches ends there
    with finish_reason "stop", its text the text of `generate --stop`
    before the stop string, streamed or not;
  - a body past --max-body-bytes is a 413 with OpenAI's error object.
Exits 1 on any failure.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def post(url, body, raw=None):
    data = raw if raw is not None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def events(text):
    """The JSON payloads of a server-sent event stream, and whether it ended with [DONE]."""
    payloads = [line[len("data: "):] for line in text.split("\n") if line.startswith("data: ")]
    done = bool(payloads) and payloads[-1] == "[DONE]"
    return [json.loads(p) for p in payloads if p != "[DONE]"], done


def main():
    parser = argparse.ArgumentParser()
    for name in ("root", "model", "program", "weights", "tokenizer"):
        parser.add_argument(name)
    args = parser.parse_args()
    failures = 0

    def report(ok, line):
        nonlocal failures
        failures += not ok
        print(("" if ok else "FAIL: ") + line)

    # Chat: Jinja2's rendering, then the program alone.
    messages = [{"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Hello world"}]
    config = os.path.join(args.tokenizer, "tokenizer_config.json")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as cases:
        json.dump([{"name": "chat", "messages": messages, "add_generation_prompt": True}], cases)
    rendered = subprocess.run([sys.executable, os.path.join(HERE, "render_jinja2.py"), config,
                               cases.name], check=True, capture_output=True, text=True).stdout
    os.unlink(cases.name)
    text = json.loads(rendered.splitlines()[0])["output"]
    tokenized = subprocess.run(["tfmc-tokenize", args.tokenizer, "--text", text], check=True,
                               capture_output=True, text=True).stdout
    prompt = [int(t) for t in tokenized.splitlines()[0].split(":")[1].split()]
    eos = json.load(open(config))["eos_token"]
    eos_id = json.load(open(os.path.join(args.tokenizer, "vocab.json")))[eos]
    solo = subprocess.run([args.program, "generate", "--weights", args.weights, "--prompt",
                           ",".join(map(str, prompt)), "--max-new-tokens", "8", "--eos",
                           str(eos_id)], check=True, capture_output=True, text=True).stdout
    expected = [int(t) for t in solo.split()]
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as ids:
        ids.write(" ".join(map(str, expected)))
    decoded = subprocess.run(["tfmc-tokenize", args.tokenizer, "--decode", ids.name], check=True,
                             capture_output=True, text=True).stdout.removesuffix("\n")
    os.unlink(ids.name)
    status, body = post(args.root + "/v1/chat/completions",
                        {"model": args.model, "messages": messages, "max_tokens": 8,
                         "temperature": 0})
    answer = json.loads(body)
    sent = {"prompt": 0, "generated": 0}  # what /metrics must count
    sent["prompt"] += answer["usage"]["prompt_tokens"]
    sent["generated"] += answer["usage"]["completion_tokens"]
    choice = answer["choices"][0]
    report(status == 200 and choice["token_ids"] == expected
           and choice["message"] == {"role": "assistant", "content": decoded}
           and answer["usage"]["prompt_tokens"] == len(prompt)
           and answer["object"] == "chat.completion",
           f"chat: {len(prompt)} prompt tokens (Jinja2's text), {len(expected)} new, equal to "
           f"generate: {choice['token_ids'] == expected}")
    status, body = post(args.root + "/v1/chat/completions",
                        {"model": args.model, "messages": messages, "max_tokens": 8,
                         "temperature": 0, "stream": True})
    chunks, done = events(body)
    sent["prompt"] += len(prompt)
    sent["generated"] += sum(len(c["choices"][0]["token_ids"]) for c in chunks)
    content = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    report(status == 200 and done and chunks[0]["choices"][0]["delta"].get("role") == "assistant"
           and content == decoded and chunks[-1]["choices"][0]["finish_reason"]
           == choice["finish_reason"] and all(c["object"] == "chat.completion.chunk" for c in chunks),
           f"chat, streamed: content equal: {content == decoded}, ends with [DONE]: {done}")

    # Stop strings: the greedy text of a prompt, cut at a stop string in it.
    prompt_text = "Hello world"
    full = subprocess.run([args.program, "generate", "--weights", args.weights, "--tokenizer",
                           args.tokenizer, "--text", prompt_text, "--max-new-tokens", "12"],
                          check=True, capture_output=True, text=True).stdout
    stop = full[len(full) // 2:len(full) // 2 + 3]
    cut = subprocess.run([args.program, "generate", "--weights", args.weights, "--tokenizer",
                          args.tokenizer, "--text", prompt_text, "--max-new-tokens", "12", "--stop",
                          stop], check=True, capture_output=True, text=True).stdout
    expected_text = cut[:cut.index(stop)]
    for stream in (False, True):
        status, body = post(args.root + "/v1/completions",
                            {"model": args.model, "prompt": prompt_text, "max_tokens": 12,
                             "temperature": 0, "stop": [stop], "stream": stream})
        if stream:
            chunks, done = events(body)
            got = "".join(c["choices"][0]["text"] for c in chunks)
            reason = chunks[-1]["choices"][0]["finish_reason"]
            sent["generated"] += sum(len(c["choices"][0]["token_ids"]) for c in chunks)
        else:
            got = json.loads(body)["choices"][0]["text"]
            reason = json.loads(body)["choices"][0]["finish_reason"]
            sent["generated"] += len(json.loads(body)["choices"][0]["token_ids"])
        sent["prompt"] += 2  # "Hello world"
        report(status == 200 and got == expected_text and reason == "stop" and stop not in got,
               f"stop{', streamed' if stream else ''}: text ends before the stop string: "
               f"{got == expected_text}, finish_reason {reason}")

    # JSON nested past support/Json's bound (walking it would recurse), and
    # a key given twice: 400s, not a crash or a silent choice.
    status, body = post(args.root + "/v1/completions", None,
                        raw=b'{"model": "x", "prompt": [1], "temperature": ' + b"[" * 1000
                        + b"]" * 1000 + b"}")
    message = json.loads(body)["error"]["message"]
    report(status == 400 and "nested deeper than" in message,
           f"deep JSON: {status} {message}")
    status, body = post(args.root + "/v1/completions", None,
                        raw=b'{"model": "x", "prompt": [1], "prompt": [2]}')
    message = json.loads(body)["error"]["message"]
    report(status == 400 and "duplicate key" in message, f"duplicate key: {status} {message}")

    # Fields this server does not implement are refused unless neutral,
    # never ignored; their neutral values are accepted.
    refused = []
    for field, value in (("suffix", "end"), ("echo", True), ("best_of", 2)):
        status, body = post(args.root + "/v1/completions",
                            {"model": args.model, "prompt": [1], "max_tokens": 1, field: value})
        refused.append(status == 400 and json.loads(body)["error"]["param"] == field)
    unsupported_schema = {"type": "json_schema",
                          "json_schema": {"name": "x", "schema": {"type": "string", "pattern": "a+"}}}
    for field, value in (("response_format", unsupported_schema), ("tool_choice", "required"),
                         ("modalities", ["audio"])):
        status, body = post(args.root + "/v1/chat/completions",
                            {"model": args.model, "messages": messages, "max_tokens": 1,
                             field: value})
        refused.append(status == 400 and json.loads(body)["error"]["param"] == field)
    status, _ = post(args.root + "/v1/chat/completions",
                     {"model": args.model, "messages": messages, "max_tokens": 1, "n": 1,
                      "response_format": {"type": "text"}, "tool_choice": "auto",
                      "logprobs": False})
    report(all(refused) and status == 200,
           f"unimplemented fields: {sum(refused)} of {len(refused)} refused naming the field, "
           f"neutral values accepted: {status == 200}")
    sent["prompt"] += len(prompt)
    sent["generated"] += 1

    # A body past the limit.
    status, body = post(args.root + "/v1/completions", None,
                        raw=b'{"model": "x", "prompt": "' + b"a" * 5000 + b'"}')
    error = json.loads(body).get("error", {}) if body else {}
    report(status == 413 and "max-body-bytes" in error.get("message", ""),
           f"413: {status} {error.get('message')}")
    # /metrics counts what was answered (streams too: their counts are
    # taken after this function's request has returned).
    with urllib.request.urlopen(args.root + "/metrics", timeout=60) as response:
        metrics = response.read().decode()
    counted = {key: int(float(line.split()[1])) for line in metrics.splitlines()
               for key, name in (("prompt", "tfmc_prompt_tokens_total"),
                                 ("generated", "tfmc_generation_tokens_total"))
               if line.startswith(name + " ")}
    report(counted == sent, f"metrics: tokens counted as answered: {counted == sent}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
