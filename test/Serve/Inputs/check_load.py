"""Checks load_test.mjs's answers against the solo CLI.

    python3 check_load.py --program BIN --weights W [--check K] [--jobs J]
        [--threads T] [--seed S] LOAD.jsonl

Each request of LOAD.jsonl (at most K of them, drawn with --seed, every one
without --check) runs again through `BIN generate --weights W` alone, and
what the server answered must be what the CLI generates:
  - greedy requests (temperature 0): one `generate --prompts-file` per
    max_tokens (equal settings, so they may share a run); a request whose
    answer differs there runs again alone (--prompt), which decides, and a
    note says that the batched run differed;
  - sampled requests: one `generate --prompt P --temperature T --top-p P
    --seed S` each (a generate of several prompts samples row i with stream
    i; the server samples every request with stream 0, as a solo run);
  - finish_reason: "length" when the CLI generated max_tokens ids, else
    "stop";
  - cancelled requests: the ids received before the cancellation must be a
    prefix (non-empty) of the CLI's.
Prints one summary line, and one line per mismatch (request, expected,
got); exits 1 on any mismatch or failed run.
"""

import argparse
import concurrent.futures
import json
import os
import random
import subprocess
import sys
import tempfile


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--program", required=True, help="the compiled program (NAME)")
    parser.add_argument("--weights", required=True)
    parser.add_argument("--check", type=int, default=0,
                        help="check at most this many requests (0: all)")
    parser.add_argument("--seed", type=int, default=0, help="which requests --check draws")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--threads", type=int, default=1, help="generate's --threads")
    parser.add_argument("load", help="load_test.mjs's --out file")
    return parser.parse_args()


def read_records(path):
    records, summary = [], None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            record = json.loads(line)
            if "summary" in record:
                summary = record["summary"]
            else:
                for key in ("index", "prompt", "max_tokens", "temperature", "token_ids", "cancelled"):
                    if key not in record:
                        sys.exit(f"{path}:{number}: no {key!r}")
                records.append(record)
    if summary is None:
        sys.exit(f"{path}: no summary line (did load_test.mjs finish?)")
    return records, summary


def run(command):
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {result.returncode}: {result.stderr.strip()}")
    return result.stdout


def ids_lines(text, count, command):
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) != count:
        raise RuntimeError(f"{' '.join(command)} printed {len(lines)} lines for {count} prompts")
    return [[int(t) for t in line.split()] for line in lines]


def main():
    args = parse_args()
    records, summary = read_records(args.load)
    chosen = records
    if args.check and len(records) > args.check:
        chosen = sorted(random.Random(args.seed).sample(records, args.check), key=lambda r: r["index"])
    base = [args.program, "generate", "--weights", args.weights, "--threads", str(args.threads)]

    def solo(record):
        command = base + ["--prompt", ",".join(map(str, record["prompt"])),
                          "--max-new-tokens", str(record["max_tokens"])]
        if record["temperature"] > 0:
            command += ["--temperature", repr(float(record["temperature"])),
                        "--top-p", repr(float(record.get("top_p", 1.0))),
                        "--seed", str(record.get("seed", 0))]
        return ids_lines(run(command), 1, command)[0]

    expected = {}
    notes = []
    greedy = {}
    sampled = []
    for record in chosen:
        if record["temperature"] == 0:
            greedy.setdefault(record["max_tokens"], []).append(record)
        else:
            sampled.append(record)

    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        def batch(max_tokens, group):
            path = os.path.join(tmp, f"prompts-{max_tokens}.txt")
            with open(path, "w") as f:
                f.write("".join(",".join(map(str, r["prompt"])) + "\n" for r in group))
            command = base + ["--prompts-file", path, "--max-new-tokens", str(max_tokens)]
            return ids_lines(run(command), len(group), command)

        futures = {pool.submit(batch, n, group): group for n, group in sorted(greedy.items())}
        futures.update({pool.submit(lambda r: [solo(r)], r): [r] for r in sampled})
        failed_runs = []
        for future in concurrent.futures.as_completed(futures):
            group = futures[future]
            try:
                outputs = future.result()
            except RuntimeError as error:
                failed_runs.append(str(error))
                continue
            for record, ids in zip(group, outputs):
                expected[record["index"]] = ids
        if failed_runs:
            for error in failed_runs:
                print(f"generate failed: {error}")
            sys.exit(1)

        # A greedy answer that differs from its batched run: the solo run
        # decides.
        def disagrees(record):
            ids = expected[record["index"]]
            got = record["token_ids"]
            return got != ids[:len(got)] if record["cancelled"] else got != ids
        recheck = [r for r in chosen if r["temperature"] == 0 and disagrees(r)]
        for record, ids in zip(recheck, pool.map(solo, recheck)):
            if ids != expected[record["index"]]:
                notes.append(f"note: request {record['index']}: generate --prompts-file gave "
                             f"{expected[record['index']]}, alone {ids}")
            expected[record["index"]] = ids

    mismatches = []
    for record in chosen:
        ids = expected[record["index"]]
        got = record["token_ids"]
        settings = {k: record[k] for k in ("prompt", "max_tokens", "temperature", "top_p", "seed")
                    if k in record}
        where = f"request {record['index']} ({record['kind']}, {json.dumps(settings)})"
        if record["cancelled"]:
            if not got or got != ids[:len(got)]:
                mismatches.append(f"{where}: cancelled after {got}, not a prefix of generate's {ids}")
            continue
        if got != ids:
            mismatches.append(f"{where}: token_ids {got}, generate gives {ids}")
        finish = "length" if len(ids) == record["max_tokens"] else "stop"
        if record.get("finish_reason") != finish:
            mismatches.append(f"{where}: finish_reason {record.get('finish_reason')!r}, expected {finish!r} "
                              f"({len(ids)} of {record['max_tokens']} tokens)")

    cancelled = sum(r["cancelled"] for r in chosen)
    greedy_count = sum(len(g) for g in greedy.values())
    for note in notes:
        print(note)
    for mismatch in mismatches:
        print(f"MISMATCH {mismatch}")
    verdict = f"{len(mismatches)} mismatches" if mismatches else "all match"
    print(f"checked {len(chosen)} of {len(records)} answers against generate alone "
          f"({greedy_count} greedy in {len(greedy)} runs, {len(sampled)} sampled, "
          f"{cancelled} of them cancelled prefixes): {verdict}")
    sys.exit(1 if mismatches else 0)


if __name__ == "__main__":
    main()
