"""response_format against an independent validator.

    python3 structured_check.py ROOT_URL MODEL [--requests N] [--max-tokens M]

A model with random weights almost never writes JSON by itself. For each
of three formats (a JSON schema with an object, an integer, an enum array,
a nested object through $ref and anyOf; one of enums and booleans only;
json_object) it sends N sampled completions (each its own seed), and the
same requests without response_format. Every constrained answer that ends
whole (finish_reason stop: by eos, or, for a model without one, once the
value is whole) must parse (json.loads) and, for the schemas,
validate (python3-jsonschema's Draft 2020-12 validator); the answers cut by
max_tokens are counted. The unconstrained answers that would pass are
counted too. Then the refusals: an unsupported keyword and a malformed
response_format, each a 400 naming response_format. Prints a line each;
exits 1 on a failed check.
"""

import argparse
import json
import sys
import urllib.error
import urllib.request

import jsonschema

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 3},
        "home": {"$ref": "#/$defs/place"},
    },
    "required": ["name", "age", "home"],
    "additionalProperties": False,
    "$defs": {"place": {"type": "object", "properties": {
        "city": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "zip": {"type": "integer"}}, "required": ["zip"], "additionalProperties": False}},
}
FLAGS = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "level": {"enum": ["low", "high", 3]},
                   "none": {"type": "null"}},
    "required": ["ok", "level", "none"],
    "additionalProperties": False,
}


def post(root, body):
    request = urllib.request.Request(root + "/v1/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def valid(text, schema):
    try:
        value = json.loads(text)
    except ValueError:
        return False
    if schema is None:
        return isinstance(value, dict)
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("model")
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--max-tokens", type=int, default=400)
    args = parser.parse_args()
    failed = False
    formats = [
        ("person schema", PERSON, {"type": "json_schema",
                                   "json_schema": {"name": "person", "schema": PERSON, "strict": True}}),
        ("flags schema", FLAGS, {"type": "json_schema",
                                 "json_schema": {"name": "flags", "schema": FLAGS}}),
        ("json_object", None, {"type": "json_object"}),
    ]
    for name, schema, response_format in formats:
        stopped = cut = good = free_good = 0
        for i in range(args.requests):
            body = {"model": args.model, "prompt": "Answer in JSON:", "max_tokens": args.max_tokens,
                    "temperature": 1.0, "seed": 1000 + i}
            status, answer = post(args.root, dict(body, response_format=response_format))
            if status != 200:
                print(f"FAIL: {name} request {i}: HTTP {status}: {answer}")
                failed = True
                continue
            choice = answer["choices"][0]
            if choice["finish_reason"] == "stop":
                stopped += 1
                if valid(choice["text"], schema):
                    good += 1
                else:
                    print(f"FAIL: {name} request {i}: not valid: {choice['text']!r}")
                    failed = True
            else:
                cut += 1
            status, free = post(args.root, body)
            free_good += status == 200 and valid(free["choices"][0]["text"], schema)
        print(f"{name}: {stopped} ended whole, {good} of them valid; {cut} cut by max_tokens; "
              f"unconstrained: {free_good} of {args.requests} valid")
        failed |= stopped == 0
    for what, response_format in [
        ("minimum", {"type": "json_schema", "json_schema": {"name": "n", "schema": {
            "type": "object", "properties": {"age": {"type": "integer", "minimum": 0}}}}}),
        ("no schema type", {"type": "yaml"}),
    ]:
        status, answer = post(args.root, {"model": args.model, "prompt": "x", "max_tokens": 2,
                                          "response_format": response_format})
        error = answer.get("error", {})
        print(f"refused ({what}): {status}, param {error.get('param')}: {error.get('message')}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
