#!/usr/bin/env python3
"""marian-reference.py MARIAN_DIR TEXTS.json
   marian-reference.py MARIAN_DIR --decode IDS...

Hugging Face MarianTokenizer's rules, written here over python3-sentencepiece
(Debian's binding of the reference library) and the directory's vocab.json:
encode = </s>, <unk> and <pad> in the text kept whole (split out first,
longest first, as PreTrainedTokenizer.tokenize does with special tokens);
in each chunk between them, a leading ">>.+<<" language code kept whole
(every such match removed from the chunk), the rest split into source.spm's
pieces; each piece mapped through vocab.json (<unk>'s id for a piece it lacks); decode = ids to
pieces through vocab.json, </s>, <unk> and <pad> skipped, target.spm's
decode_pieces, "▁" made a space, stripped. One JSON line per text:
{"ids": [...], "text": decode(ids)}; with --decode, the text of IDS. Run
with Debian's python3.
"""
import json
import os
import re
import sys

import sentencepiece

CODE = re.compile(">>.+<<")


def main():
    d = sys.argv[1]
    source = sentencepiece.SentencePieceProcessor(
        model_file=os.path.join(d, "source.spm"))
    target = sentencepiece.SentencePieceProcessor(
        model_file=os.path.join(d, "target.spm"))
    with open(os.path.join(d, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    pieces_of = {i: p for p, i in vocab.items()}
    specials = {vocab["</s>"], vocab["<unk>"], vocab["<pad>"]}

    special_re = re.compile("(" + "|".join(
        re.escape(t) for t in sorted(("</s>", "<unk>", "<pad>"), key=len,
                                     reverse=True)) + ")")

    def encode(text):
        pieces = []
        for k, chunk in enumerate(special_re.split(text)):
            if k % 2:
                pieces.append(chunk)
            elif chunk:
                match = CODE.match(chunk)
                pieces += [match.group(0)] if match else []
                pieces += source.encode(CODE.sub("", chunk), out_type=str)
        return [vocab.get(p, vocab["<unk>"]) for p in pieces]

    def decode(ids):
        pieces = [pieces_of[i] for i in ids if i not in specials]
        return target.decode_pieces(pieces).replace("\u2581", " ").strip()

    if sys.argv[2] == "--decode":
        print(decode([int(x) for x in sys.argv[3:]]))
        return
    with open(sys.argv[2], encoding="utf-8") as f:
        texts = json.load(f)
    for text in texts:
        ids = encode(text)
        print(json.dumps({"ids": ids, "text": decode(ids)}, ensure_ascii=False,
                         separators=(",", ":")))


if __name__ == "__main__":
    main()
