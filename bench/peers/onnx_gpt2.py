#!/usr/bin/python3
"""Exports tfmc's GPT-2 weights to ONNX for the ONNX Runtime peer (ort_bench.mjs).

    /usr/bin/python3 onnx_gpt2.py --weights W.safetensors --output OUT.onnx [--heads 12] [--check]

The model is torch_bench.py's GPT-2 (the same weights file, tfmc's names), written again with a
KV cache that ONNX can express: the cache is an input and an output instead of a preallocated
buffer written in place. One graph serves prefill and decode:

    inputs   input_ids [1, T] int64, past_key_i / past_value_i [1, H, P, 64] f32 for each layer i
             (P = 0 for prefill: empty tensors)
    outputs  logits [1, V] f32 of the last position only (what generation needs),
             present_key_i / present_value_i [1, H, P + T, 64] = past ++ this call's keys/values

Positions are P .. P+T-1; position t attends to keys 0 .. P+t (causal). Exported by
torch.onnx.export (Debian's torch 1.13), opset 17, T and P dynamic. --check compares this
module with torch_bench's model in PyTorch before exporting (prefill logits and two decode steps;
exit 1 above 1e-4 max abs error); ONNX Runtime's own ids are checked by bench/run.py.
"""
import argparse
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_bench  # noqa: E402


def export_module(torch, m, cfg):
    import torch.nn as nn
    import torch.nn.functional as F
    H, d, L = cfg["H"], cfg["d"], cfg["L"]
    Dh = d // H

    class CachedGPT2(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = m

        def forward(self, ids, *past):
            Tn = ids.shape[1]
            P = past[0].shape[2]
            pos = torch.arange(Tn, dtype=torch.int64) + P
            x = self.m.tgt_embed(ids) + self.m.tgt_pos(pos)[None]
            blocked = torch.arange(P + Tn, dtype=torch.int64)[None, :] > pos[:, None]  # [T, P + T]
            present = []
            for i, layer in enumerate(self.m.decoder.layers):
                h = layer.norm1(x)
                qkv = F.linear(h, layer.self_attn.in_proj_weight, layer.self_attn.in_proj_bias)
                qkv = qkv.view(1, Tn, 3, H, Dh)
                q = qkv[:, :, 0].transpose(1, 2) * (1.0 / math.sqrt(Dh))
                k = torch.cat([past[2 * i], qkv[:, :, 1].transpose(1, 2)], dim=2)
                v = torch.cat([past[2 * i + 1], qkv[:, :, 2].transpose(1, 2)], dim=2)
                present += [k, v]
                att = torch.matmul(q, k.transpose(-1, -2)).masked_fill(blocked, float("-inf"))
                att = torch.softmax(att, dim=-1)
                y = torch.matmul(att, v).transpose(1, 2).reshape(1, Tn, d)
                x = x + layer.self_attn.out_proj(y)
                x = x + layer.linear2(F.gelu(layer.linear1(layer.norm2(x)), approximate="tanh"))
            x = self.m.decoder.norm(x[:, -1])
            return (F.linear(x, self.m.tgt_embed.weight), *present)

    return CachedGPT2().eval()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--weights", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--heads", type=int, default=None)
    p.add_argument("--check", action="store_true")
    a = p.parse_args()
    import torch
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    args = torch_bench.parse_args(["--weights", a.weights] + (["--heads", str(a.heads)] if a.heads else []))
    m, cfg, _ = torch_bench.make_gpt2(args, torch)
    g = export_module(torch, m, cfg)
    H, Dh, L = cfg["H"], cfg["d"] // cfg["H"], cfg["L"]
    empty = [torch.zeros(1, H, 0, Dh) for _ in range(2 * L)]
    ids = torch.tensor([[1, 2, 3, 4]])
    if a.check:
        with torch.no_grad():
            prompt = [11, 22, 33, 44, 55]
            ref_cache = m.new_cache(1)
            ref = [m(torch.tensor([prompt]), 0, ref_cache)[0, -1]]
            out = g(torch.tensor([prompt]), *empty)
            got = [out[0][0]]
            past = out[1:]
            for step, tok in enumerate((66, 77)):
                ref.append(m(torch.tensor([[tok]]), len(prompt) + step, ref_cache)[0, -1])
                out = g(torch.tensor([[tok]]), *past)
                got.append(out[0][0])
                past = out[1:]
            err = max(float((r - o).abs().max()) for r, o in zip(ref, got))
            print(json.dumps({"bench": "onnx_export_check", "max_abs_err": err, "pass": err < 1e-4}))
            if err >= 1e-4:
                sys.exit(1)
    names_in = ["input_ids"] + [f"past_{kv}_{i}" for i in range(L) for kv in ("key", "value")]
    names_out = ["logits"] + [f"present_{kv}_{i}" for i in range(L) for kv in ("key", "value")]
    axes = {"input_ids": {1: "tokens"}}
    axes.update({n: {2: "past"} for n in names_in[1:]})
    axes.update({n: {2: "total"} for n in names_out[1:]})
    tmp = a.output + ".tmp"
    with torch.no_grad():
        torch.onnx.export(g, (ids, *empty), tmp, input_names=names_in, output_names=names_out,
                          dynamic_axes=axes, opset_version=17, do_constant_folding=True)
    os.replace(tmp, a.output)
    print(json.dumps({"bench": "onnx_export", "output": a.output, "bytes": os.path.getsize(a.output),
                      "opset": 17, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
