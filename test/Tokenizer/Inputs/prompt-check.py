#!/usr/bin/env python3
"""prompt-check.py REFERENCE.jsonl PROMPT.txt

REFERENCE.jsonl: llama-cpp-reference.mjs's output, whose last line is
{"prompt": [...], "stop": [...]}; PROMPT.txt: `tfmc-tokenize FILE --prompt
TEXT` for the same first text ("ids: ..." and "eos: ..."). Requires the same
prompt ids, and llama.cpp's eos and eot among the ids tfmc stops at. Prints
`prompt ids identical to llama.cpp's: IDS; stops at STOP` or each mismatch
(exit 1).
"""
import json
import sys


def main():
    reference_path, prompt_path = sys.argv[1:]
    with open(reference_path, encoding="utf-8") as f:
        reference = json.loads(f.read().splitlines()[-1])
    ours = {}
    with open(prompt_path, encoding="utf-8") as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition(":")
            ours[key] = [int(x) for x in value.split()]
    failures = 0
    if ours.get("ids") != reference["prompt"]:
        print(f"prompt ids differ:\n  llama.cpp: {reference['prompt']}\n  tfmc: {ours.get('ids')}")
        failures += 1
    missing = [i for i in reference["stop"] if i not in ours.get("eos", [])]
    if missing:
        print(f"llama.cpp stops at {missing}, tfmc does not (it stops at {ours.get('eos')})")
        failures += 1
    if failures:
        return 1
    print(f"prompt ids identical to llama.cpp's: {' '.join(map(str, ours['ids']))}; "
          f"stops at {' '.join(map(str, ours['eos']))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
