#!/usr/bin/env python3
"""gguf-tokenizer.py DIR OUT.gguf [--pre PRE] [EDIT]...

The tokenizer GGUF file bench/peers/gguf_llama.py --tokenizer-only writes
from the tokenizer in DIR, with its metadata edited, one key at a time (the
error tests' way of making one bad key from a good file):

    -KEY              remove KEY
    KEY=TYPE:JSON     set KEY (replacing it, else appending it) to the JSON
                      value as TYPE: u8 ... f64, bool, string, or an array
                      of one of them, e.g. i32[]:[1, 2], string[]:["a b"];
                      TYPE:py:EXPR takes a Python expression instead
                      (f32[]:py:[float("nan")] * 700)
    --only-general    keep the general.* and llama.* keys alone
"""
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "bench", "peers"))
import gguf  # noqa: E402
import gguf_llama  # noqa: E402

TYPES = {"u8": gguf.T_UINT8, "i8": gguf.T_INT8, "u16": gguf.T_UINT16, "i16": gguf.T_INT16,
         "u32": gguf.T_UINT32, "i32": gguf.T_INT32, "f32": gguf.T_FLOAT32, "bool": gguf.T_BOOL,
         "string": gguf.T_STRING, "u64": gguf.T_UINT64, "i64": gguf.T_INT64, "f64": gguf.T_FLOAT64}


def key_of(entry):
    (n,) = struct.unpack_from("<Q", entry)
    return entry[8:8 + n].decode("utf-8")


def main():
    args = sys.argv[1:]
    directory, out, edits = args[0], args[1], args[2:]
    pre = None
    if edits[:1] == ["--pre"]:
        pre, edits = edits[1], edits[2:]
    config = {}
    if os.path.exists(os.path.join(directory, "config.json")):
        with open(os.path.join(directory, "config.json")) as f:
            config = json.load(f)
    w = gguf.Writer("gguf-tokenizer")
    w.add("general.architecture", gguf.T_STRING, "llama")
    gguf_llama.tokenizer(w, directory, config, pre)
    for edit in edits:
        if edit == "--only-general":
            w.kv = [e for e in w.kv if not key_of(e).startswith("tokenizer.")]
        elif edit.startswith("-"):
            w.kv = [e for e in w.kv if key_of(e) != edit[1:]]
        else:
            key, value = edit.split("=", 1)
            vtype, text = value.split(":", 1)
            value = eval(text[3:]) if text.startswith("py:") else json.loads(text)
            fresh = gguf.Writer("gguf-tokenizer")
            if vtype.endswith("[]"):
                fresh.add_array(key, TYPES[vtype[:-2]], value)
            else:
                fresh.add(key, TYPES[vtype], value)
            at = [i for i, e in enumerate(w.kv) if key_of(e) == key]
            if at:
                w.kv[at[0]] = fresh.kv[0]
            else:
                w.kv.append(fresh.kv[0])
    w.write(out)


if __name__ == "__main__":
    main()
