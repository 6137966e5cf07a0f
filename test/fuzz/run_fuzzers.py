#!/usr/bin/env python3
"""Runs libFuzzer targets one after another (`make fuzz`).

Each target T runs for --seconds from a scratch copy of its seed corpus
(test/fuzz/corpus/T, which stays unchanged) with its dictionary, in fork
mode so that one finding does not end the run: every crash, sanitizer
report, timeout or out-of-memory input is written to FINDINGS/T/. Prints one
line per target (executions, libFuzzer's `cov:` and `ft:`, corpus size,
findings) and exits 1 when any target found anything.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DICTIONARIES = {"tfm": "tfm.dict", "hf-config": "json.dict", "plan": "json.dict",
                "safetensors": "json.dict", "gguf": "gguf.dict", "weight-index": "json.dict",
                "run-input": "json.dict",
                "tokenizer": "json.dict", "chat-template": "jinja.dict"}
# Inputs larger than libFuzzer's default (4096 bytes) only make the .tfm
# and JSON targets slower; the plan seeds are ~20 KB.
MAX_LEN = {"plan": 32768, "run-input": 8192}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--seconds", type=int, required=True)
    parser.add_argument("--findings", required=True)
    parser.add_argument("--timeout", type=int, default=20,
                        help="seconds one input may take before it is a finding")
    parser.add_argument("--rss-limit-mb", type=int, default=2048)
    parser.add_argument("targets", nargs="+")
    args = parser.parse_args()

    failed = False
    for target in args.targets:
        binary = os.path.join(args.build_dir, "test", "fuzz", f"tfmc-fuzz-{target}")
        if not os.access(binary, os.X_OK):
            print(f"error: {binary} is missing (built with TFMC_FUZZ=ON?)")
            return 1
        work = os.path.join(os.path.abspath(args.findings), target)
        corpus = os.path.join(work, "corpus")
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(os.path.join(HERE, "corpus", target), corpus)
        artifacts = os.path.join(work, "artifacts")
        os.makedirs(artifacts)
        log = os.path.join(work, "fuzz.log")
        cmd = [binary, corpus,
               f"-dict={os.path.join(HERE, 'dict', DICTIONARIES[target])}",
               f"-max_total_time={args.seconds}", f"-timeout={args.timeout}",
               f"-rss_limit_mb={args.rss_limit_mb}",
               f"-max_len={MAX_LEN.get(target, 4096)}",
               f"-artifact_prefix={artifacts}/",
               "-fork=1", "-ignore_crashes=1", "-ignore_timeouts=1",
               "-ignore_ooms=1", "-close_fd_mask=3", "-print_final_stats=1"]
        print(f"== {target}: {args.seconds} s", flush=True)
        with open(log, "w") as out:
            subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT)
        text = open(log, errors="replace").read()
        # Fork mode's status lines: "#N: cov: C ft: F corp: K exec/s: E ...".
        status = re.findall(r"#(\d+): cov: (\d+) ft: (\d+) corp: (\d+)", text)
        findings = sorted(os.listdir(artifacts))
        execs, cov, ft, corp = status[-1] if status else ("?", "?", "?", "?")
        print(f"{target}: {execs} executions, cov: {cov}, ft: {ft}, corpus {corp}, "
              f"{len(findings)} findings" + (f" in {artifacts}" if findings else "")
              + f" (log: {log})", flush=True)
        failed |= bool(findings)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
