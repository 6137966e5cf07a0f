"""OpenAI's n (several choices of one prompt) in `NAME serve`.

    python3 choices_check.py ROOT_URL MODEL PROGRAM WEIGHTS

One line each:
  - greedy, n 3: three choices, indexes 0 1 2, each `generate`'s greedy
    ids; usage counts the prompt once and every choice's tokens;
  - sampled, n 3 and a seed S: choice 0 is the one choice of n 1 with S,
    choice i is `generate --temperature 1 --seed S_i` with S_i = (S xor
    (0x9e3779b97f4a7c15 * i mod 2^64)) mod 2^63 (docs/serving.md), and the
    choices differ;
  - streamed, n 2: each index's chunks join into that choice's ids, each
    index ends with its own finish_reason, then [DONE];
  - refusals: n 0, n 129, and more choices than the server holds at once.
Exits 1 on any failure.
"""

import json
import subprocess
import sys
import urllib.error
import urllib.request

PROMPT = [464, 3290, 318, 257, 1332, 13]
NEW = 6
SEED = 11


def post(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def main():
    root, model, program, weights = sys.argv[1:5]
    failures = 0

    def report(ok, line):
        nonlocal failures
        failures += not ok
        print(("" if ok else "FAIL: ") + line)

    def generate(*extra):
        out = subprocess.run([program, "generate", "--weights", weights, "--prompt",
                              ",".join(map(str, PROMPT)), "--max-new-tokens", str(NEW)] + list(extra),
                             check=True, capture_output=True, text=True).stdout
        return [int(t) for t in out.split()]

    def complete(**fields):
        status, body = post(root + "/v1/completions",
                            dict(model=model, prompt=PROMPT, max_tokens=NEW, **fields))
        return status, json.loads(body)

    greedy = generate()
    status, answer = complete(temperature=0, n=3)
    choices = answer["choices"]
    ok = (status == 200 and [c["index"] for c in choices] == [0, 1, 2]
          and all(c["token_ids"] == greedy for c in choices)
          and answer["usage"]["prompt_tokens"] == len(PROMPT)
          and answer["usage"]["completion_tokens"] == 3 * len(greedy))
    report(ok, f"greedy, n 3: 3 choices of generate's {len(greedy)} ids, usage {answer['usage']}")

    status, answer = complete(temperature=1, seed=SEED, n=3)
    choices = [c["token_ids"] for c in answer["choices"]]
    _, one = complete(temperature=1, seed=SEED)
    seeds = [(SEED ^ ((0x9e3779b97f4a7c15 * i) % 2 ** 64)) % 2 ** 63 for i in range(3)]
    cli = [generate("--temperature", "1", "--seed", str(s)) for s in seeds]
    ok = (status == 200 and choices[0] == one["choices"][0]["token_ids"] and choices == cli
          and len({tuple(c) for c in choices}) > 1)
    report(ok, f"sampled, n 3: choice 0 is n 1's, each is generate's with its seed, they differ: {ok}")
    if not ok:
        print(f"  choices {choices}, n 1 {one['choices'][0]['token_ids']}, generate {cli}")

    status, body = post(root + "/v1/completions", {"model": model, "prompt": PROMPT, "max_tokens": NEW,
                                                   "temperature": 1, "seed": SEED, "n": 2,
                                                   "stream": True})
    chunks = [json.loads(line[6:]) for line in body.split("\n")
              if line.startswith("data: ") and line != "data: [DONE]"]
    joined, finished = {0: [], 1: []}, {0: 0, 1: 0}
    for chunk in chunks:
        for choice in chunk["choices"]:
            joined[choice["index"]] += choice["token_ids"]
            finished[choice["index"]] += choice["finish_reason"] is not None
    ok = (status == 200 and body.rstrip().endswith("data: [DONE]")
          and [joined[0], joined[1]] == choices[:2] and finished == {0: 1, 1: 1})
    report(ok, f"streamed, n 2: each index's chunks join into its choice, one finish each: {ok}")

    for n, words in ((0, "must be at least 1"), (129, "must be at most 128"),
                     (50, "more choices than this server holds at once (--max-batch 2 + --max-queue 4)")):
        status, answer = complete(n=n)
        error = answer.get("error", {})
        report(status == 400 and error.get("param") == "n" and words in error.get("message", ""),
               f"n {n}: {status} {error.get('message')}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
