#!/usr/bin/env python3
"""sparse_tokenizer.py DIR: writes a GPT-2-style tokenizer whose vocab.json
has gaps: "a" is id 5, "b" id 9, every other byte token 1000 + its byte, so
the other ids below 1000 are no token. No merges."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Tokenizer", "Inputs"))
from tiny_tokenizer import bytes_to_unicode  # noqa: E402

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
bs, cs = bytes_to_unicode()
vocab = {c: {ord("a"): 5, ord("b"): 9}.get(b, 1000 + b) for b, c in zip(bs, cs)}
with open(os.path.join(out, "vocab.json"), "w", encoding="utf-8") as f:
    json.dump(vocab, f, ensure_ascii=False)
with open(os.path.join(out, "merges.txt"), "w", encoding="utf-8") as f:
    f.write("#version: 0.2\n")
