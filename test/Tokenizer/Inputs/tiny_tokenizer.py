#!/usr/bin/env python3
"""tiny_tokenizer.py DIR: writes a tiny GPT-2-style tokenizer to DIR.

vocab.json: the 256 byte tokens at GPT-2's ids (bytes_to_unicode order),
then he 256, ll 257, hell 258, hello 259; merges.txt: h e, l l, he ll,
hell o.
"""
import json
import os
import sys


def bytes_to_unicode():
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return bs, [chr(c) for c in cs]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    bs, cs = bytes_to_unicode()
    vocab = {c: i for i, c in enumerate(cs)}
    merges = [("h", "e"), ("l", "l"), ("he", "ll"), ("hell", "o")]
    for left, right in merges:
        vocab[left + right] = len(vocab)
    with open(os.path.join(out, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(out, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        f.writelines(f"{left} {right}\n" for left, right in merges)


if __name__ == "__main__":
    main()
