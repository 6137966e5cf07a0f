"""Tool calls end to end: a model that really answers a call in its
template's syntax (a scripted model, scripted_model.py), read into OpenAI's
tool_calls by `NAME serve`.

    python3 tool_calls_check.py model TOKENIZER_DIR OUT
    python3 tool_calls_check.py check ROOT_URL MODEL TOKENIZER_DIR

`model` renders the conversation below with the tokenizer directory's chat
template (Qwen2.5's, with tools) by Python's Jinja2, tokenizes it with
tfmc-tokenize, and writes with scripted_model.py (into OUT: model.tfm,
weights.safetensors) a model of the tokenizer's vocabulary whose answer to
a prompt of that length is ANSWER (the Hermes tool call) and the
directory's eos. `check`, one line each:
  - a chat with tools: message.tool_calls holds the one call (name and
    arguments, a JSON string equal to the object the answer wrote),
    content null, finish_reason tool_calls;
  - the same streamed: a role chunk, a delta with the call, finish_reason
    tool_calls, [DONE];
  - tool_choice none: the answer is the text itself, no tool_calls,
    finish_reason stop;
  - the next turn (the assistant's call and the tool's answer sent back):
    accepted, its prompt the tokens of Jinja2's rendering of it with the
    call's arguments as the object (as transformers gives them).
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
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
MESSAGES = [{"role": "user", "content": "Weather in Paris?"}]
ANSWER = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


def render(tok, messages, tools):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as cases:
        json.dump([{"name": "chat", "messages": messages, "variables": {"tools": tools},
                    "add_generation_prompt": True}], cases)
    out = subprocess.run([sys.executable, os.path.join(HERE, "render_jinja2.py"),
                          os.path.join(tok, "tokenizer_config.json"), cases.name],
                         check=True, capture_output=True, text=True).stdout
    os.unlink(cases.name)
    line = json.loads(out.splitlines()[0])
    if "output" not in line:
        raise SystemExit(f"tool_calls_check: the template did not render: {line}")
    return line["output"]


def ids(tok, text):
    out = subprocess.run(["tfmc-tokenize", tok, "--text", text], check=True, capture_output=True,
                         text=True).stdout
    return [int(t) for t in out.splitlines()[0].split(":")[1].split()]


def post(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def main():
    command, args = sys.argv[1], sys.argv[2:]
    if command == "model":
        tok, out = args
        config = {}
        for name in ("config.json", "generation_config.json"):
            if os.path.exists(os.path.join(tok, name)):
                config.update(json.load(open(os.path.join(tok, name))))
        eos = config["eos_token_id"]
        eos = eos if isinstance(eos, int) else eos[0]
        t = json.load(open(os.path.join(tok, "tokenizer.json")))
        vocab = 1 + max(list(t["model"]["vocab"].values()) + [a["id"] for a in t["added_tokens"]])
        prompt = len(ids(tok, render(tok, MESSAGES, TOOLS)))
        return subprocess.run([sys.executable, os.path.join(HERE, "scripted_model.py"), "write",
                               "--vocab", str(vocab), "--max-len", "640", "--prompt-length", str(prompt),
                               "--script", ",".join(map(str, ids(tok, ANSWER))), "--eos", str(eos),
                               "--out", out]).returncode
    root, model, tok = args
    failures = 0

    def report(ok, line):
        nonlocal failures
        failures += not ok
        print(("" if ok else "FAIL: ") + line)

    request = {"model": model, "messages": MESSAGES, "tools": TOOLS, "max_tokens": 64, "temperature": 0}
    status, body = post(root + "/v1/chat/completions", request)
    choice = json.loads(body)["choices"][0] if status == 200 else {}
    message = choice.get("message", {})
    calls = message.get("tool_calls") or []
    ok = (status == 200 and len(calls) == 1 and calls[0]["type"] == "function"
          and calls[0]["function"]["name"] == "get_weather"
          and json.loads(calls[0]["function"]["arguments"]) == {"city": "Paris"}
          and calls[0]["id"].startswith("call_") and message["content"] is None
          and choice["finish_reason"] == "tool_calls")
    report(ok, f"chat with tools: tool_calls {[c['function'] for c in calls]}, content "
               f"{message.get('content')!r}, finish_reason {choice.get('finish_reason')}")
    call = calls[0] if calls else None

    status, body = post(root + "/v1/chat/completions", dict(request, stream=True))
    chunks = [json.loads(line[6:]) for line in body.split("\n")
              if line.startswith("data: ") and line != "data: [DONE]"]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    streamed = [d["tool_calls"] for d in deltas if "tool_calls" in d]
    ok = (status == 200 and deltas[0].get("role") == "assistant" and len(streamed) == 1
          and streamed[0][0]["index"] == 0 and streamed[0][0]["function"] == (call or {}).get("function")
          and chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
          and body.rstrip().endswith("data: [DONE]"))
    report(ok, f"streamed: a role chunk, {len(streamed)} delta with the call, finish_reason "
               f"{chunks[-1]['choices'][0]['finish_reason']}, [DONE]")

    status, body = post(root + "/v1/chat/completions", dict(request, tool_choice="none"))
    choice = json.loads(body)["choices"][0]
    ok = (status == 200 and choice["message"]["content"] == ANSWER and "tool_calls" not in choice["message"]
          and choice["finish_reason"] == "stop")
    report(ok, f"tool_choice none: the text itself ({len(choice['message']['content'])} characters), "
               f"no tool_calls, finish_reason {choice['finish_reason']}")

    turn = MESSAGES + [{"role": "assistant", "content": None, "tool_calls": [call]},
                       {"role": "tool", "tool_call_id": call["id"], "content": "21 C, sunny"}]
    as_template = MESSAGES + [{"role": "assistant", "content": None, "tool_calls": [
        dict(call, function=dict(call["function"], arguments=json.loads(call["function"]["arguments"])))]},
        turn[2]]
    expected = len(ids(tok, render(tok, as_template, TOOLS)))
    status, body = post(root + "/v1/chat/completions", dict(request, messages=turn, max_tokens=1))
    answer = json.loads(body)
    ok = status == 200 and answer["usage"]["prompt_tokens"] == expected
    report(ok, f"next turn: {status}, {answer.get('usage', {}).get('prompt_tokens')} prompt tokens, "
               f"Jinja2's rendering of it: {expected}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
