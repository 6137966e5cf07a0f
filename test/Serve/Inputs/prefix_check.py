"""The prefix cache against solo generation, and its counts.

    python3 prefix_check.py ROOT_URL MODEL PROGRAM WEIGHTS --mode boundaries|evict [--off]

boundaries: prompts that share a random 100-token base up to lengths on
either side of every 16-token block boundary (15, 16, 17, 31, 32, ...),
with 0, 1 or 3 tokens of their own after it, greedy and sampled with their
own seeds, sent one at a time (so that each may reuse what the earlier
ones left), then the same prompts 8 at a time (newcomers restoring their
prefix while others run). Every answer must give the ids of `PROGRAM
generate` run alone. Prints the reused prompt tokens /metrics counts and
those the block rule gives (a prompt reuses its longest run of whole
blocks, from its start, that an earlier prompt of the sequential pass
ran, leaving its last token to run), computed here.

evict: prompts A and B of 200 tokens (12 whole blocks each) sent A, B, A,
B to a server whose cache holds 16 blocks; prints /metrics' counts, which
the test compares with the values derived by hand in prefix-cache.test.

Prints one line per difference and exits 1 on any.
"""

import argparse
import json
import random
import subprocess
import sys
import threading
import urllib.error
import urllib.request

BLOCK = 16


def post(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def metrics(root):
    with urllib.request.urlopen(root + "/metrics", timeout=30) as response:
        text = response.read().decode()
    values = {}
    for line in text.splitlines():
        if line.startswith("tfmc_prefix_cache_"):
            name, value = line.split()
            values[name[len("tfmc_prefix_cache_"):]] = int(float(value))
    return values


def solo(args, body):
    command = [args.program, "generate", "--weights", args.weights,
               "--prompt", ",".join(map(str, body["prompt"])),
               "--max-new-tokens", str(body["max_tokens"])]
    if body["temperature"] > 0:
        command += ["--temperature", str(body["temperature"]), "--seed", str(body["seed"])]
    out = subprocess.run(command, capture_output=True, text=True, check=True)
    return [int(token) for token in out.stdout.split()]


def main():
    parser = argparse.ArgumentParser()
    for name in ("root", "model", "program", "weights"):
        parser.add_argument(name)
    parser.add_argument("--mode", choices=("boundaries", "evict"), required=True)
    parser.add_argument("--off", action="store_true", help="the server runs --prefix-cache 0: "
                        "nothing may be reused")
    args = parser.parse_args()
    rng = random.Random(5)
    url = args.root + "/v1/completions"
    failed = False

    def request(prompt, i, max_tokens=8):
        body = {"model": args.model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0}
        if i % 2:
            body.update(temperature=1.0, seed=100 + i)
        return body

    def check(bodies, answers, what):
        nonlocal failed
        equal = 0
        for i, (body, (status, answer)) in enumerate(zip(bodies, answers)):
            if status != 200:
                print(f"{what} request {i}: HTTP {status}: {answer}")
                failed = True
                continue
            expected = solo(args, body)
            if answer["choices"][0]["token_ids"] != expected:
                print(f"{what} request {i} ({len(body['prompt'])} tokens): served "
                      f"{answer['choices'][0]['token_ids']}, generate gives {expected}")
                failed = True
            else:
                equal += 1
        return equal

    if args.mode == "boundaries":
        base = [rng.randrange(50257) for _ in range(100)]
        prompts = []
        for end in (15, 16, 17, 31, 32, 33, 47, 48, 49, 64, 65, 80, 96, 97):
            for tail in ([], [rng.randrange(50257)], [rng.randrange(50257) for _ in range(3)]):
                prompts.append(base[:end] + tail)
        bodies = [request(p, i) for i, p in enumerate(prompts)]
        answers = [post(url, body) for body in bodies]
        equal = check(bodies, answers, "sequential")
        # The block rule: the prefixes (as whole blocks) earlier prompts ran.
        held, expected_hits = set(), 0
        for p in prompts:
            usable = (len(p) - 1) // BLOCK
            reuse = 0
            while reuse < usable and tuple(p[:(reuse + 1) * BLOCK]) in held:
                reuse += 1
            expected_hits += reuse * BLOCK
            for j in range(1, len(p) // BLOCK + 1):
                held.add(tuple(p[:j * BLOCK]))
        counts = metrics(args.root)
        print(f"sequential: {equal} of {len(bodies)} equal to generate; reused "
              f"{counts['hit_tokens_total']} of {counts['lookup_tokens_total']} prompt tokens, "
              f"the block rule gives {expected_hits} of {sum(map(len, prompts))}")
        failed |= counts["hit_tokens_total"] != (0 if args.off else expected_hits)

        results = [None] * len(bodies)

        def send(i):
            results[i] = post(url, bodies[i])

        for start in range(0, len(bodies), 8):
            threads = [threading.Thread(target=send, args=(i,))
                       for i in range(start, min(start + 8, len(bodies)))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        equal = check(bodies, results, "concurrent")
        after = metrics(args.root)
        print(f"concurrent: {equal} of {len(bodies)} equal to generate; reused "
              f"{after['hit_tokens_total'] - counts['hit_tokens_total']} more prompt tokens")
    else:
        a = [rng.randrange(50257) for _ in range(200)]
        b = [rng.randrange(50257) for _ in range(200)]
        bodies = [request(p, i, 4) for i, p in enumerate((a, b, a, b))]
        answers = [post(url, body) for body in bodies]
        equal = check(bodies, answers, "evict")
        counts = metrics(args.root)
        print(f"evict: {equal} of 4 equal to generate; lookups {counts['lookup_tokens_total']}, "
              f"reused {counts['hit_tokens_total']}, blocks {counts['blocks']}, "
              f"bytes {counts['bytes']} of {counts['budget_bytes']}, "
              f"evicted {counts['evicted_blocks_total']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
