#!/usr/bin/env python3
"""mutate.py SRC_DIR OUT_DIR [PATH=JSON]...

Copies SRC_DIR's files into OUT_DIR, then sets, in OUT_DIR/tokenizer.json,
each PATH (keys and [index] steps, e.g. `pre_tokenizer.pretokenizers[0].
behavior`) to the JSON value after the first `=`: the error tests' way of
making one bad component at a time from a good tokenizer.
"""
import json
import os
import re
import shutil
import sys


def main():
    src, out = sys.argv[1:3]
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(src):
        shutil.copy(os.path.join(src, name), os.path.join(out, name))
    path = os.path.join(out, "tokenizer.json")
    with open(path, encoding="utf-8") as f:
        root = json.load(f)
    for assignment in sys.argv[3:]:
        key, value = assignment.split("=", 1)
        steps = [int(s[1:-1]) if s.startswith("[") else s
                 for s in re.findall(r"\[\d+\]|[^.\[\]]+", key)]
        node = root
        for step in steps[:-1]:
            node = node[step]
        node[steps[-1]] = json.loads(value)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(root, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
