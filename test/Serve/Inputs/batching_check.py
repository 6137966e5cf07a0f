"""Continuous batching against solo generation.

    python3 batching_check.py ROOT_URL MODEL PROGRAM WEIGHTS --requests N
        --max-len L [--seed S]

Sends N completions at once (prompts of random token ids and lengths,
random max_tokens within max_len; every other one sampled with its own
seed, temperature and top_p), so that they join and leave one running
batch of rows of different lengths. Then runs each alone through
`PROGRAM generate` (one prompt: no padding, no other rows) with the same
settings and prints one line per difference. The server must give the
same ids: a row's result may not depend on what else was in the batch.
Prints `N of N equal to generate` and exits 1 on any difference.
"""

import argparse
import json
import random
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request


def post(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def main():
    parser = argparse.ArgumentParser()
    for name in ("root", "model", "program", "weights"):
        parser.add_argument(name)
    parser.add_argument("--requests", type=int, required=True)
    parser.add_argument("--max-len", type=int, required=True)
    parser.add_argument("--vocab", type=int, default=50257)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--long-first", action="store_true",
                        help="first a long prompt with a short budget, then short prompts "
                             "with long budgets: when it leaves, most of the cache is "
                             "padding in every row, which the batcher drops")
    args = parser.parse_args()

    rng = random.Random(args.seed)
    requests = []
    if args.long_first:
        requests.append({"model": args.model, "temperature": 0, "max_tokens": 4,
                         "prompt": [rng.randrange(args.vocab) for _ in range(args.max_len // 4)]})
    for i in range(args.requests - len(requests)):
        if args.long_first:
            requests.append({"model": args.model, "prompt": [rng.randrange(args.vocab) for _ in range(3)],
                             "max_tokens": args.max_len // 2 - i, "temperature": 0})
            continue
        length = rng.randint(1, args.max_len // 2)
        body = {"model": args.model,
                "prompt": [rng.randrange(args.vocab) for _ in range(length)],
                "max_tokens": rng.randint(1, args.max_len - length)}
        if i % 2:
            body.update(temperature=0)
        else:
            body.update(temperature=rng.choice([0.7, 1.0, 1.3]),
                        top_p=rng.choice([0.8, 0.95, 1.0]), seed=rng.randrange(2**31))
        requests.append(body)

    results = [None] * len(requests)

    def send(i):
        results[i] = post(args.root + "/v1/completions", requests[i])

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(requests))]
    for i, thread in enumerate(threads):
        thread.start()
        if args.long_first and i == 0:
            time.sleep(0.2)  # the long prompt first
    for thread in threads:
        thread.join()

    equal = 0
    for i, (body, (status, answer)) in enumerate(zip(requests, results)):
        if status != 200:
            print(f"request {i}: HTTP {status}: {answer}")
            continue
        choice = answer["choices"][0]
        command = [args.program, "generate", "--weights", args.weights,
                   "--prompt", ",".join(map(str, body["prompt"])),
                   "--max-new-tokens", str(body["max_tokens"])]
        if body["temperature"] > 0:
            command += ["--temperature", str(body["temperature"]),
                        "--top-p", str(body["top_p"]), "--seed", str(body["seed"])]
        solo = subprocess.run(command, capture_output=True, text=True, check=True)
        expected = [int(token) for token in solo.stdout.split()]
        if choice["token_ids"] != expected:
            print(f"request {i}: served {choice['token_ids']}, generate gives {expected}")
            continue
        reason = "length" if len(expected) == body["max_tokens"] else "stop"
        if choice["finish_reason"] != reason:
            print(f"request {i}: finish_reason {choice['finish_reason']}, expected {reason}")
            continue
        if answer["usage"] != {"prompt_tokens": len(body["prompt"]),
                               "completion_tokens": len(expected),
                               "total_tokens": len(body["prompt"]) + len(expected)}:
            print(f"request {i}: usage {answer['usage']}")
            continue
        equal += 1
    print(f"{equal} of {len(requests)} equal to generate")
    sys.exit(0 if equal == len(requests) else 1)


if __name__ == "__main__":
    main()
