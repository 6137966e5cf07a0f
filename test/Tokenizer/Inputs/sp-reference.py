#!/usr/bin/env python3
"""sp-reference.py TOKENIZER.model TEXTS.json

The ids python3-sentencepiece (Debian's binding of the reference
SentencePiece library) gives each string of TEXTS.json, one JSON array per
line. Run with Debian's python3.
"""
import json
import sys

import sentencepiece


def main():
    model_path, texts_path = sys.argv[1:]
    processor = sentencepiece.SentencePieceProcessor(model_file=model_path)
    with open(texts_path, encoding="utf-8") as f:
        texts = json.load(f)
    for text in texts:
        print(json.dumps(processor.encode(text)))


if __name__ == "__main__":
    main()
