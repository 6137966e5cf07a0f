#!/usr/bin/env python3
"""rstrip-texts.py TOKENIZER_DIR TEXTS.json OUT.json

Writes TEXTS.json's strings to OUT.json with the whitespace after each of
TOKENIZER_DIR/tokenizer.json's added tokens that has rstrip = true removed:
the text such a token's match takes (Hugging Face's tokenizers extends the
match over the whitespace after the token), so that a tokenizer that
matches the same tokens without rstrip gives these texts the ids the real
file gives the originals. Tokens are matched left to right, the longest at
a position first; whitespace is Unicode's White_Space (Rust's
char::is_whitespace). lstrip and single_word are refused: no fixture has
them.
"""
import json
import os
import re
import sys

WHITE_SPACE = ("\t\n\v\f\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f"
               "\u205f\u3000")


def main():
    directory, texts_path, out_path = sys.argv[1:]
    with open(os.path.join(directory, "tokenizer.json"), encoding="utf-8") as f:
        added = json.load(f).get("added_tokens") or []
    for token in added:
        for flag in ("lstrip", "single_word"):
            if token.get(flag):
                sys.exit(f"rstrip-texts.py: {flag} on {token['content']!r} "
                         "is not handled")
    contents = sorted({t["content"] for t in added}, key=len, reverse=True)
    strip = {t["content"] for t in added if t.get("rstrip")}
    pattern = re.compile("|".join(map(re.escape, contents)))
    after = re.compile(f"[{WHITE_SPACE}]*")

    def rstripped(text):
        out, at = [], 0
        while True:
            match = pattern.search(text, at)
            if not match:
                return "".join(out) + text[at:]
            out.append(text[at:match.end()])
            at = match.end()
            if match.group() in strip:
                at = after.match(text, at).end()

    with open(texts_path, encoding="utf-8") as f:
        texts = json.load(f)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump([rstripped(t) for t in texts], f, ensure_ascii=False,
                  indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
