#!/usr/bin/env python3
"""bert-compare.py TEXTS.json REF.jsonl OURS.jsonl [MAX_LENGTH]

Compares tfmc-tokenize --bert's lines (OURS) with bert-reference.mjs's
(transformers.js, REF), element by element: ids, token type ids and the
decoded text must be identical. With MAX_LENGTH, OURS were truncated to it
and REF were not: the expected ids are REF's, truncated as Hugging Face's
longest-first strategy says (one token at a time off the end of the longer
text, the second on a tie; [CLS]/[SEP] kept); decoded texts are not
compared then. Prints one summary line, or the first difference and exits 1.
"""
import json
import sys


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def truncate(ref, pair, max_length):
    ids, types = ref["ids"], ref["type_ids"]
    first_len = types.count(0) - 2  # [CLS] A [SEP]
    a = ids[1:1 + first_len]
    b = ids[2 + first_len:-1] if pair else []
    specials = 3 if pair else 2
    while len(a) + len(b) + specials > max_length:
        if len(a) > len(b):
            a.pop()
        else:
            b.pop()
    cls, sep = ids[0], ids[first_len + 1]
    out = [cls] + a + [sep]
    out_types = [0] * len(out)
    if pair:
        out += b + [sep]
        out_types += [1] * (len(b) + 1)
    return {"ids": out, "type_ids": out_types}


def main():
    texts = json.load(open(sys.argv[1], encoding="utf-8"))
    ref, ours = load(sys.argv[2]), load(sys.argv[3])
    max_length = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    if not (len(texts) == len(ref) == len(ours)):
        print(f"line counts differ: {len(texts)} texts, {len(ref)} reference, "
              f"{len(ours)} ours")
        return 1
    truncated = 0
    for k, (text, r, o) in enumerate(zip(texts, ref, ours)):
        pair = isinstance(text, list)
        if max_length:
            before = len(r["ids"])
            r = truncate(r, pair, max_length)
            truncated += len(r["ids"]) < before
        for key in ("ids", "type_ids") + (() if max_length else ("text",)):
            if r[key] != o[key]:
                print(f"element {k} {json.dumps(text, ensure_ascii=False)}: "
                      f"{key} differ\n  reference: {r[key]}\n  ours:      {o[key]}")
                return 1
    pairs = sum(isinstance(t, list) for t in texts)
    if max_length:
        print(f"{len(texts)} texts ({pairs} pairs): truncated to {max_length} "
              f"as longest-first over transformers.js's ids, {truncated} of "
              f"them shortened")
    else:
        print(f"{len(texts)} texts ({pairs} pairs): ids, token types and "
              f"decoded text identical to transformers.js's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
