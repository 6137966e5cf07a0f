"""tool_choice "required" and a named function, on a model with random
weights behind a template that writes Hermes tool calls (Qwen2.5's).

    python3 tool_choice_check.py ROOT_URL MODEL [--requests N]

Sends N sampled chats with two tools, each with tool_choice "required",
then with {"type": "function", "function": {"name": "get_time"}}, then
with "auto". A constrained answer must end as a call (finish_reason
tool_calls), each call naming a listed tool (the named one when named)
and its arguments parsing and validating (python3-jsonschema) against the
tool's parameters; an answer cut by max_tokens is counted. The "auto"
answers that hold a call are counted (a random model writes none). Then
the refusals: a named function not in tools, required without tools,
required with response_format. Prints a line each; exits 1 on a failure.
"""

import argparse
import json
import sys
import urllib.error
import urllib.request

import jsonschema

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {
            "city": {"enum": ["Paris", "Rome", "Oslo"]},
            "days": {"type": "integer"}},
            "required": ["city", "days"], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "get_time", "description": "The time in a zone",
        "parameters": {"type": "object", "properties": {
            "zone": {"$ref": "#/$defs/zone"}}, "required": ["zone"],
            "$defs": {"zone": {"enum": ["UTC", "CET"]}}}}},
]
PARAMETERS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
MESSAGES = [{"role": "user", "content": "What now?"}]


def post(root, body):
    request = urllib.request.Request(root + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("model")
    parser.add_argument("--requests", type=int, default=6)
    args = parser.parse_args()
    failed = False
    named = {"type": "function", "function": {"name": "get_time"}}
    for label, choice, allowed in (("required", "required", set(PARAMETERS)),
                                   ("named get_time", named, {"get_time"}),
                                   ("auto", "auto", None)):
        calls_ok = cut = with_calls = 0
        for i in range(args.requests):
            body = {"model": args.model, "messages": MESSAGES, "tools": TOOLS, "tool_choice": choice,
                    "max_tokens": 150, "temperature": 1.0, "seed": 500 + i}
            status, answer = post(args.root, body)
            if status != 200:
                print(f"FAIL: {label} request {i}: HTTP {status}: {answer}")
                failed = True
                continue
            choice0 = answer["choices"][0]
            calls = choice0["message"].get("tool_calls") or []
            with_calls += bool(calls)
            if allowed is None:
                continue
            if choice0["finish_reason"] == "length":
                cut += 1
                continue
            good = choice0["finish_reason"] == "tool_calls" and len(calls) >= 1
            for call in calls:
                name = call["function"]["name"]
                try:
                    arguments = json.loads(call["function"]["arguments"])
                except ValueError:
                    good = False
                    continue
                good &= name in allowed and jsonschema.Draft202012Validator(
                    PARAMETERS[name]).is_valid(arguments)
            if good:
                calls_ok += 1
            else:
                print(f"FAIL: {label} request {i}: {choice0}")
                failed = True
        if allowed is None:
            print(f"{label}: {with_calls} of {args.requests} answers hold a call")
        else:
            print(f"{label}: {calls_ok} answers are valid calls, {cut} cut by max_tokens")
            failed |= calls_ok == 0
    for what, body in [
        ("unknown function", {"tools": TOOLS, "tool_choice": {"type": "function",
                                                              "function": {"name": "fly"}}}),
        ("required without tools", {"tool_choice": "required"}),
        ("with response_format", {"tools": TOOLS, "tool_choice": "required",
                                  "response_format": {"type": "json_object"}}),
    ]:
        status, answer = post(args.root, dict({"model": args.model, "messages": MESSAGES,
                                               "max_tokens": 2}, **body))
        error = answer.get("error", {})
        print(f"refused ({what}): {status}, param {error.get('param')}: {error.get('message')}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
