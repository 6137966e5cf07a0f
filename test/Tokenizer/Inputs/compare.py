#!/usr/bin/env python3
"""compare.py [--clean-spaces] [--reference NAME] TEXTS.json REFERENCE.jsonl OURS.jsonl

TEXTS.json: a JSON array of strings. REFERENCE.jsonl: per text, one JSON
array of ids (reference.js, gpt-3-encoder), or an object {"ids": [...],
"text": decoded} (hf-reference.mjs; --reference names it); lines after the
texts' are ignored. OURS.jsonl: one JSON object
{"ids": [...], "text": decoded} per text (tfmc-tokenize --json).

Requires identical ids for every text, and decode(encode(text)) == text
(with a reference's decoded text: the same decoded text; a normalizer or a
legacy prefix space can make a tokenizer's round trip lossy). Prints
`N texts: ids identical to NAME's, decode(encode(text)) == text` (or `...,
decoded text identical, M of them text itself`) and exits 0, or prints
each mismatch and exits 1.

--clean-spaces: the reference is llama.cpp, whose detokenize cleans up
spaces for byte-level vocabularies (clean_spaces, llama-vocab.cpp: " ?"
-> "?" and the like); tfmc's decoding does not (it round-trips), so our
text is compared after the same clean-up (clean_spaces below).
"""
import json
import sys


def clean_spaces(text):
    """llama.cpp's detokenize clean-up (llama_vocab::impl::detokenize), its
    three passes over the bytes."""
    b = bytearray(text.encode("utf-8"))
    # first pass: " ?", " !", " .", " ,"
    out = b[:1]
    for i in range(1, len(b)):
        if b[i - 1] == 32 and b[i] in b"?!.,":
            out.pop()
        out.append(b[i])
    b = out
    # second pass: " ' " -> "'"
    out, i = b[:1], 1
    while i < len(b):
        x = b[i]
        if x == 39 and i + 1 < len(b) and b[i - 1] == 32 and b[i + 1] == 32:
            out.pop()
            out.append(x)
            i += 2
            continue
        out.append(x)
        i += 1
    b = out
    # third pass: " 's", " 'm", " 're", " 've"
    out = b[:1]
    for i in range(1, len(b)):
        x = b[i]
        if b[i - 1] == 32 and x == 39 and i + 1 < len(b):
            x1 = b[i + 1]
            if x1 in b"sm" or (i + 2 < len(b) and (x1, b[i + 2]) in ((114, 101), (118, 101))):
                out.pop()
        out.append(x)
    return out.decode("utf-8", errors="replace")


def main():
    args = sys.argv[1:]
    name = "gpt-3-encoder"
    clean = False
    if args[:1] == ["--clean-spaces"]:
        clean, args = True, args[1:]
    if args[:1] == ["--reference"]:
        name, args = args[1], args[2:]
    texts_path, reference_path, ours_path = args
    with open(texts_path, encoding="utf-8") as f:
        texts = json.load(f)
    with open(reference_path, encoding="utf-8") as f:
        reference = [json.loads(line)
                     for line in f.read().splitlines()[:len(texts)]]
    with open(ours_path, encoding="utf-8") as f:
        ours = [json.loads(line) for line in f]
    if not (len(texts) == len(reference) == len(ours)):
        print(f"error: {len(texts)} texts, {len(reference)} reference lines, "
              f"{len(ours)} lines of ours")
        return 1
    failures = 0
    decodes = any(isinstance(ref, dict) for ref in reference)
    round_trips = 0
    for k, (text, ref, our) in enumerate(zip(texts, reference, ours)):
        expected = text
        if isinstance(ref, dict):
            ref, expected = ref["ids"], ref["text"]
        round_trips += our["text"] == text
        if our["ids"] != ref:
            at = next((i for i, (a, b) in enumerate(zip(ref, our["ids"])) if a != b),
                      min(len(ref), len(our["ids"])))
            print(f"text {k} {text!r}: ids differ from position {at}:\n"
                  f"  {name}: {ref}\n  tfmc: {our['ids']}")
            failures += 1
        if (clean_spaces(our["text"]) if clean else our["text"]) != expected:
            print(f"text {k} {text!r}: decodes to {our['text']!r}, "
                  f"expected {expected!r}")
            failures += 1
    if failures:
        print(f"{failures} mismatches over {len(texts)} texts")
        return 1
    if decodes:
        print(f"{len(texts)} texts: ids identical to {name}'s, decoded text "
              f"identical, {round_trips} of them text itself")
    else:
        print(f"{len(texts)} texts: ids identical to {name}'s, "
              "decode(encode(text)) == text")
    return 0


if __name__ == "__main__":
    sys.exit(main())
