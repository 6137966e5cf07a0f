#!/usr/bin/env python3
"""Rewrites a Hugging Face Llama-family checkpoint, for the import tests.

  llama_weights.py strip-prefix SOURCE OUT   every `model.` name without it
                                             (a bare LlamaModel's state dict)
  llama_weights.py widen DIR OUT             the BF16 shards DIR's index names,
                                             as one F32 file (exact widening)
  llama_weights.py unpack-phi3 DIR OUT       DIR's Phi-3 checkpoint as Mistral's:
                                             qkv_proj's rows as q/k/v_proj,
                                             gate_up_proj's as gate/up_proj
                                             (OUT/config.json, OUT/model.safetensors)
Plain Python: no numpy or torch needed.
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Inputs"))
from safetensors_io import read, write  # noqa: E402


def main():
    kind, source, out = sys.argv[1:4]
    if kind == "strip-prefix":
        prefix = "model."
        tensors = {(n[len(prefix):] if n.startswith(prefix) else n): t for n, t in read(source).items()}
    elif kind == "widen":
        with open(os.path.join(source, "model.safetensors.index.json")) as f:
            weight_map = json.load(f)["weight_map"]
        tensors = {}
        for shard in sorted(set(weight_map.values())):
            for name, (dtype, shape, data) in read(os.path.join(source, shard)).items():
                if dtype != "BF16" or weight_map.get(name) != shard:
                    sys.exit(f"{shard}: {name}: {dtype}, index says {weight_map.get(name)}")
                halves = struct.unpack("<%dH" % (len(data) // 2), data)
                tensors[name] = ["F32", shape, struct.pack("<%dI" % len(halves), *[h << 16 for h in halves])]
        if set(tensors) != set(weight_map):
            sys.exit("the shards do not hold every tensor the index names")
    elif kind == "unpack-phi3":
        unpack_phi3(source, out)
        return
    else:
        sys.exit("unknown kind " + kind)
    write(out, tensors)


def unpack_phi3(source, out):
    with open(os.path.join(source, "config.json")) as f:
        config = json.load(f)
    heads, hidden = config["num_attention_heads"], config["hidden_size"]
    kv_heads = config.get("num_key_value_heads") or heads
    head_dim = hidden // heads
    rows = {"qkv_proj": [("q_proj", heads * head_dim), ("k_proj", kv_heads * head_dim),
                         ("v_proj", kv_heads * head_dim)],
            "gate_up_proj": [("gate_proj", config["intermediate_size"]),
                             ("up_proj", config["intermediate_size"])]}
    tensors = {}
    for name, (dtype, shape, data) in read(os.path.join(source, "model.safetensors")).items():
        packed = next((p for p in rows if f".{p}." in name), None)
        if not packed:
            tensors[name] = [dtype, shape, data]
            continue
        row_bytes = len(data) // shape[0]
        start = 0
        for part, count in rows[packed]:
            tensors[name.replace(packed, part)] = [dtype, [count, shape[1]],
                                                   data[start * row_bytes:(start + count) * row_bytes]]
            start += count
        if start != shape[0]:
            sys.exit(f"{name}: {shape[0]} rows, the parts hold {start}")
    for key in ("original_max_position_embeddings", "resid_pdrop", "embd_pdrop", "attention_bias"):
        config.pop(key, None)
    config.update(model_type="mistral", architectures=["MistralForCausalLM"])
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f)
    write(os.path.join(out, "model.safetensors"), tensors)


if __name__ == "__main__":
    main()
