#!/usr/bin/env python3
"""Writes a broken copy of a sharded checkpoint (shard_checkpoint.py's
output), for the bad-input tests.

  shard_corrupt.py KIND SOURCE_DIR OUT_DIR [NAME]

KIND is one of:
  missing-shard        the last shard file deleted
  drop NAME            NAME removed from its shard (the index still names it)
  twice NAME           NAME also stored in another shard
  unindexed NAME       NAME removed from the index (its shard still holds it)
  duplicate NAME       the index's weight_map names NAME twice
  not-json             the index cut in half
  no-weight-map        the index without its weight_map
  escape NAME          NAME mapped to ../SHARD, outside the directory
  reshape NAME         NAME's shape [a, b] stored as [b, a] (same bytes)
  dtype NAME           NAME stored as I16 (same bytes)
Plain Python: no numpy or torch needed.
"""
import json
import os
import shutil
import sys

from safetensors_io import read, write

INDEX = "model.safetensors.index.json"


def main():
    kind, source, out = sys.argv[1:4]
    name = sys.argv[4] if len(sys.argv) > 4 else None
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(source, out)
    index_path = os.path.join(out, INDEX)
    with open(index_path) as f:
        index = json.load(f)
    weight_map = index["weight_map"]
    shards = sorted(set(weight_map.values()))

    def rewrite_shard(shard, change):
        path = os.path.join(out, shard)
        tensors = read(path)
        change(tensors)
        write(path, tensors)

    def write_index(text=None):
        with open(index_path, "w") as f:
            f.write(text if text is not None else json.dumps(index, indent=2))

    if kind == "missing-shard":
        os.remove(os.path.join(out, shards[-1]))
    elif kind == "drop":
        rewrite_shard(weight_map[name], lambda t: t.pop(name))
    elif kind == "twice":
        tensor = read(os.path.join(out, weight_map[name]))[name]
        other = next(s for s in shards if s != weight_map[name])
        rewrite_shard(other, lambda t: t.__setitem__(name, tensor))
    elif kind == "unindexed":
        del weight_map[name]
        write_index()
    elif kind == "duplicate":
        text = json.dumps(index, indent=2)
        entry = json.dumps(name) + ": " + json.dumps(weight_map[name])
        write_index(text.replace(entry, entry + ",\n    " + entry, 1))
    elif kind == "not-json":
        text = json.dumps(index, indent=2)
        write_index(text[: len(text) // 2])
    elif kind == "no-weight-map":
        del index["weight_map"]
        write_index()
    elif kind == "escape":
        weight_map[name] = "../" + weight_map[name]
        write_index()
    elif kind == "reshape":
        def flip(t):
            t[name][1] = list(reversed(t[name][1]))
        rewrite_shard(weight_map[name], flip)
    elif kind == "dtype":
        def retype(t):
            t[name][0] = "I16"
        rewrite_shard(weight_map[name], retype)
    else:
        sys.exit("unknown kind " + kind)


if __name__ == "__main__":
    main()
