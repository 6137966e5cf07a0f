"""`NAME serve` over a GGUF file's weights and tokenizer.

    python3 serve_check.py ROOT_URL MODEL PROGRAM WEIGHTS.gguf TOKENIZER.gguf [CHAT_CONFIG.json]

TOKENIZER.gguf is a GGUF file whose metadata holds a tokenizer and a
tokenizer.chat_template; CHAT_CONFIG.json a tokenizer_config.json with the
same template and the file's bos and eos texts, for Python's Jinja2.
Checks, one line each:
  - completion: text in, greedy, equal to `PROGRAM generate --tokenizer
    TOKENIZER.gguf --text` (the same BOS rule, the same eos ids);
  - chat: the conversation rendered by Jinja2 (test/Serve/Inputs/
    render_jinja2.py), tokenized by `tfmc-tokenize TOKENIZER.gguf`, then run
    through `PROGRAM generate --prompt IDS`: the server's content must be
    that text. Without CHAT_CONFIG.json, chat must be refused: the status
    and the message are printed.
Exits 1 on any failure.
"""

import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SERVE_INPUTS = os.path.join(HERE, "..", "..", "Serve", "Inputs")


def post(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read().decode())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read().decode())


def run(*args):
    return subprocess.run(list(args), check=True, capture_output=True, text=True).stdout


def main():
    root, model, program, weights, tokenizer = sys.argv[1:6]
    config = sys.argv[6] if len(sys.argv) > 6 else None
    failures = 0

    def report(ok, line):
        nonlocal failures
        failures += not ok
        print(("" if ok else "FAIL: ") + line)

    text = "hello world"
    solo = run(program, "generate", "--weights", weights, "--tokenizer", tokenizer, "--text",
               text, "--max-new-tokens", "8")
    status, answer = post(root + "/v1/completions", {"model": model, "prompt": text,
                                                     "max_tokens": 8, "temperature": 0})
    got = answer["choices"][0]["text"] if status == 200 else None
    report(status == 200 and got == solo.removesuffix("\n"),
           f"completion: {answer['usage']['prompt_tokens'] if status == 200 else '?'} prompt "
           f"tokens, text equal to generate: {got == solo.removesuffix(chr(10))}")

    messages = [{"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Hello world"}]
    if config is None:
        status, answer = post(root + "/v1/chat/completions",
                              {"model": model, "messages": messages})
        report(status == 400, f"chat: {status} {answer['error']['message']}")
        sys.exit(1 if failures else 0)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as cases:
        json.dump([{"name": "chat", "messages": messages, "add_generation_prompt": True}], cases)
    rendered = run(sys.executable, os.path.join(SERVE_INPUTS, "render_jinja2.py"), config,
                   cases.name)
    os.unlink(cases.name)
    prompt_text = json.loads(rendered.splitlines()[0])["output"]
    ids = run("tfmc-tokenize", tokenizer, "--text", prompt_text).splitlines()[0]
    prompt = [int(t) for t in ids.split(":")[1].split()]
    expected = run(program, "generate", "--weights", weights, "--tokenizer", tokenizer,
                   "--prompt", ",".join(map(str, prompt)), "--max-new-tokens", "8")
    status, answer = post(root + "/v1/chat/completions", {"model": model, "messages": messages,
                                                          "max_tokens": 8, "temperature": 0})
    content = answer["choices"][0]["message"]["content"] if status == 200 else None
    report(status == 200 and content == expected.removesuffix("\n")
           and answer["usage"]["prompt_tokens"] == len(prompt),
           f"chat: {len(prompt)} prompt tokens (Jinja2's text), content equal to generate: "
           f"{content == expected.removesuffix(chr(10))}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
