#!/usr/bin/env python3
"""Re-saves an f32 safetensors checkpoint as a Hugging Face sharded one, the
way transformers' save_pretrained(max_shard_size=...) lays it out, with the
floating tensors in bf16 or f16, for the sharded-checkpoint tests.

  shard_checkpoint.py SOURCE OUTDIR --dtype bf16|f16 [--shards N]
      [--rounded ROUNDED.safetensors]
      [--reference CONFIG.json INPUTS.safetensors EXPECTED.safetensors]

OUTDIR gets model.safetensors.index.json and model-0000K-of-0000N.safetensors
(the tensors in name order, cut into N parts of about equal bytes).
--rounded writes the rounded values back as F32 (what a tfmc f32 program
must see, exactly); --reference writes a float64 PyTorch forward of the
Hugging Face GPT-2 fixture (test/fixtures/make_fixtures.py) on those
rounded weights, as F32 logits. The rounding is torch's own
(Tensor.to(torch.bfloat16 / torch.float16), round to nearest even), not
tfmc's, so the tests check tfmc's conversions against it.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "fixtures"))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import make_fixtures  # noqa: E402
from safetensors_io import write  # noqa: E402

DTYPES = {"bf16": (torch.bfloat16, "BF16"), "f16": (torch.float16, "F16")}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("source")
    parser.add_argument("outdir")
    parser.add_argument("--dtype", choices=sorted(DTYPES), required=True)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--rounded")
    parser.add_argument("--reference", nargs=3)
    args = parser.parse_args()

    source = make_fixtures.read_safetensors(args.source)
    torch_dtype, name = DTYPES[args.dtype]
    narrow, rounded = {}, {}
    for tensor, array in source.items():
        if array.dtype != np.float32:
            narrow[tensor] = [make_fixtures._st_dtype(array), list(array.shape), array.tobytes()]
            rounded[tensor] = array
            continue
        t = torch.from_numpy(array).to(torch_dtype)
        narrow[tensor] = [name, list(array.shape), t.view(torch.int16).numpy().tobytes()]
        rounded[tensor] = t.to(torch.float32).numpy()

    os.makedirs(args.outdir, exist_ok=True)
    names = sorted(narrow)
    total = sum(len(narrow[n][2]) for n in names)
    weight_map, shard, filled = {}, 0, 0
    parts = [dict() for _ in range(args.shards)]
    for n in names:
        # The next shard once this one holds its share of the bytes.
        if filled >= total * (shard + 1) / args.shards and shard + 1 < args.shards:
            shard += 1
        parts[shard][n] = narrow[n]
        filled += len(narrow[n][2])
    for k, part in enumerate(parts):
        file = f"model-{k + 1:05d}-of-{args.shards:05d}.safetensors"
        assert part, "more shards than tensors"
        write(os.path.join(args.outdir, file), part, pad=True)
        weight_map.update({n: file for n in part})
    with open(os.path.join(args.outdir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2, sort_keys=True)

    if args.rounded:
        make_fixtures.write_safetensors(args.rounded, rounded)
    if args.reference:
        config_path, inputs_path, out_path = args.reference
        with open(config_path) as f:
            config = json.load(f)
        inputs = make_fixtures.read_safetensors(inputs_path)
        logits = make_fixtures.hf_torch_forward(config, rounded, inputs)
        make_fixtures.write_safetensors(out_path, {"logits": logits.astype(np.float32)})


if __name__ == "__main__":
    main()
