#!/usr/bin/env python3
"""compare.py TEXTS.json REFERENCE.jsonl OURS.jsonl

TEXTS.json: a JSON array of strings. REFERENCE.jsonl: one JSON array of ids
per text (reference.js, gpt-3-encoder). OURS.jsonl: one JSON object
{"ids": [...], "text": decoded} per text (tfmc-tokenize --json).

Requires identical ids for every text and decode(encode(text)) == text.
Prints `N texts: ids identical to gpt-3-encoder's, decode(encode(text)) ==
text` and exits 0, or prints each mismatch and exits 1.
"""
import json
import sys


def main():
    texts_path, reference_path, ours_path = sys.argv[1:]
    with open(texts_path, encoding="utf-8") as f:
        texts = json.load(f)
    with open(reference_path, encoding="utf-8") as f:
        reference = [json.loads(line) for line in f]
    with open(ours_path, encoding="utf-8") as f:
        ours = [json.loads(line) for line in f]
    if not (len(texts) == len(reference) == len(ours)):
        print(f"error: {len(texts)} texts, {len(reference)} reference lines, "
              f"{len(ours)} lines of ours")
        return 1
    failures = 0
    for k, (text, ref, our) in enumerate(zip(texts, reference, ours)):
        if our["ids"] != ref:
            at = next((i for i, (a, b) in enumerate(zip(ref, our["ids"])) if a != b),
                      min(len(ref), len(our["ids"])))
            print(f"text {k} {text!r}: ids differ from position {at}:\n"
                  f"  gpt-3-encoder: {ref}\n  tfmc:          {our['ids']}")
            failures += 1
        if our["text"] != text:
            print(f"text {k} {text!r}: decodes to {our['text']!r}")
            failures += 1
    if failures:
        print(f"{failures} mismatches over {len(texts)} texts")
        return 1
    print(f"{len(texts)} texts: ids identical to gpt-3-encoder's, "
          "decode(encode(text)) == text")
    return 0


if __name__ == "__main__":
    sys.exit(main())
