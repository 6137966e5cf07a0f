#!/usr/bin/env python3
"""marian_reference.py DIR TEXTS.json: Hugging Face MarianTokenizer's ids
and decoded text for each text, written from its semantics
(models/marian/tokenization_marian.py) over python3-sentencepiece and the
same vocab.json, one JSON line {"ids": [...], "text": "..."} each; then
"special: " and the first text's ids with </s> appended (what a source
gets). Encoding: a leading >>xx<< language code is one token; the rest is
cut by source.spm; each piece's id is vocab.json's, else <unk>'s. Decoding
(skip_special_tokens=True, as translations are decoded): </s>, <unk> and
<pad> are dropped, the other ids' pieces joined by target.spm's
decode_pieces, U+2581 made a space, the ends stripped."""
import json
import os
import re
import sys

import sentencepiece

directory, texts_path = sys.argv[1:3]
source = sentencepiece.SentencePieceProcessor(model_file=os.path.join(directory, "source.spm"))
target = sentencepiece.SentencePieceProcessor(model_file=os.path.join(directory, "target.spm"))
vocab = json.load(open(os.path.join(directory, "vocab.json"), encoding="utf-8"))
pieces_of = {i: p for p, i in vocab.items()}
specials = {vocab["</s>"], vocab["<unk>"], vocab["<pad>"]}


def encode(text):
    code = re.match(r">>.+?<<", text)
    ids = []
    if code:
        ids.append(vocab.get(code.group(0), vocab["<unk>"]))
        text = text[code.end():]
    for piece in source.encode(text, out_type=str):
        ids.append(vocab.get(piece, vocab["<unk>"]))
    return ids


def decode(ids):
    pieces = [pieces_of[i] for i in ids if i not in specials]
    return target.decode_pieces(pieces).replace("\u2581", " ").strip()


texts = json.load(open(texts_path, encoding="utf-8"))
for text in texts:
    ids = encode(text)
    print(json.dumps({"ids": ids, "text": decode(ids)}, ensure_ascii=False))
print("special: " + " ".join(map(str, encode(texts[0]) + [vocab["</s>"]])))
