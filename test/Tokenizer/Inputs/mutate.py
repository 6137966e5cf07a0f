#!/usr/bin/env python3
"""mutate.py SRC_DIR OUT_DIR [[FILE:]PATH=JSON]...

Copies SRC_DIR's files into OUT_DIR, then sets, in OUT_DIR/tokenizer.json
(or OUT_DIR/FILE, e.g. `tokenizer_config.json:do_lower_case=false`), each
PATH (keys and [index] steps, e.g. `pre_tokenizer.pretokenizers[0].
behavior`) to the JSON value after the first `=` (`PATH+=JSON` appends it
to the list at PATH): the error tests' way of making one bad component at
a time from a good tokenizer.
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
    roots = {}
    for assignment in sys.argv[3:]:
        key, value = assignment.split("=", 1)
        append = key.endswith("+")
        key = key.rstrip("+")
        name = "tokenizer.json"
        if ":" in key:
            name, key = key.split(":", 1)
        if name not in roots:
            with open(os.path.join(out, name), encoding="utf-8") as f:
                roots[name] = json.load(f)
        steps = [int(s[1:-1]) if s.startswith("[") else s
                 for s in re.findall(r"\[\d+\]|[^.\[\]]+", key)]
        node = roots[name]
        for step in steps[:-1]:
            node = node[step]
        if append:
            node[steps[-1]].append(json.loads(value))
        else:
            node[steps[-1]] = json.loads(value)
    for name, root in roots.items():
        with open(os.path.join(out, name), "w", encoding="utf-8") as f:
            json.dump(root, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
