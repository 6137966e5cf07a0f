#!/usr/bin/env python3
"""kvcache_check.py FAMILY HEADS WEIGHTS PROMPT DTYPE F32_IDS F32_LOGITS NARROW_IDS NARROW_LOGITS

Checks a program compiled with `tfmc --kv-cache-dtype DTYPE` (bf16 or f16)
against the same model's f32-cache program: both ran `generate --prompt
PROMPT --dump-logits` (ids in *_IDS, logits [1, N, vocab] in *_LOGITS).
FAMILY: `tfm` (nn.Transformer names: test/fixtures/decoder_pre) or `gpt2`
(Hugging Face GPT-2: test/fixtures/gpt2_hf), with HEADS attention heads; both
are pre-norm GPT decoders with learned positions, tanh GELU, a final
LayerNorm and a tied output.

The bound (docs/precision.md, "A bf16 or f16 KV cache"): every cached key
and value x is rounded once, to nearest even, so it moves by at most
e(x) = u |x| (bf16: u = 2^-8, 8 significant bits; f16: u = 2^-11, plus
2^-25 absolute below f16's normal range). A logit y moves, to first order,
by at most B1 = sum over cached K and V elements of |dy/dx| e(x): the exact
worst case over every rounding within e, autograd in float64 through this
script's own forward of the fixture (full recompute: a position's keys and
values are the ones the cache holds). It is taken times 1 + RHO (RHO =
0.25, the second-order remainder, which this script measures on the float64
model with its keys and values actually rounded and requires below RHO x
B1), plus 2 x 1e-5 x max(1, max |logit|) for the two programs' own f32
arithmetic (the E2E tolerance).

Checks, while the two programs' ids agree:
  1. this forward reproduces the f32 program's logits within the E2E
     tolerance (it is the model tfmc compiled);
  2. |narrow - f32| <= bound for every logit of every step;
  3. at a step where the f32 winner a leads every c by more than
     bound_a + bound_c, the narrow program picks a too (a step without that
     margin may differ; the comparison stops there).
Prints what it measured; exits 1 naming the first failure."""
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

TOLERANCE = 1e-5
RHO = 0.25
UNIT = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11}
# Half the spacing of f16's subnormals: the absolute error below 2^-14.
FLOOR = {"bf16": 0.0, "f16": 2.0 ** -25}
NUMPY = {"F32": np.float32, "F64": np.float64, "I64": np.int64}


def load(path):
    return {name: np.frombuffer(data, dtype=NUMPY[dtype]).reshape(shape)
            for name, (dtype, shape, data) in safetensors_io.read(path).items() if dtype in NUMPY}


def layers_of(family, w):
    """[(ln1 g, b, Wqkv [D, 3D], bqkv, Wo [D, D], bo, ln2 g, b, W1 [D, F], b1, W2 [F, D], b2)],
    final norm (g, b), position table, token table, heads. Matrices as x @ W."""
    T = {k: torch.tensor(v, dtype=torch.float64) for k, v in w.items()}
    layers = []
    if family == "tfm":
        i = 0
        while f"decoder.layers.{i}.norm1.weight" in T:
            p = f"decoder.layers.{i}."
            layers.append((T[p + "norm1.weight"], T[p + "norm1.bias"],
                           T[p + "self_attn.in_proj_weight"].T, T[p + "self_attn.in_proj_bias"],
                           T[p + "self_attn.out_proj.weight"].T, T[p + "self_attn.out_proj.bias"],
                           T[p + "norm2.weight"], T[p + "norm2.bias"],
                           T[p + "linear1.weight"].T, T[p + "linear1.bias"],
                           T[p + "linear2.weight"].T, T[p + "linear2.bias"]))
            i += 1
        return layers, (T["decoder.norm.weight"], T["decoder.norm.bias"]), T["tgt_pos.weight"], \
            T["tgt_embed.weight"]
    pre = "transformer." if "transformer.wte.weight" in T else ""
    i = 0
    while f"{pre}h.{i}.ln_1.weight" in T:
        p = f"{pre}h.{i}."
        layers.append((T[p + "ln_1.weight"], T[p + "ln_1.bias"],
                       T[p + "attn.c_attn.weight"], T[p + "attn.c_attn.bias"],
                       T[p + "attn.c_proj.weight"], T[p + "attn.c_proj.bias"],
                       T[p + "ln_2.weight"], T[p + "ln_2.bias"],
                       T[p + "mlp.c_fc.weight"], T[p + "mlp.c_fc.bias"],
                       T[p + "mlp.c_proj.weight"], T[p + "mlp.c_proj.bias"]))
        i += 1
    return layers, (T[pre + "ln_f.weight"], T[pre + "ln_f.bias"]), T[pre + "wpe.weight"], T[pre + "wte.weight"]


def norm(x, g, b):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5) * g + b


def gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def forward(model, heads, ids, change=None):
    """Logits [S, V] of `ids`, float64; change(layer, k, v) -> (k, v) edits the
    keys and values [S, D] every position attends to (the cache's)."""
    layers, final, positions, table = model
    S = len(ids)
    x = table[torch.tensor(ids)] + positions[:S]
    D = x.shape[1]
    Dh = D // heads
    causal = torch.ones(S, S, dtype=torch.bool).triu(1)
    kvs = []
    for i, (g1, b1, wqkv, bqkv, wo, bo, g2, b2, wf, bf, wp, bp) in enumerate(layers):
        q, k, v = (norm(x, g1, b1) @ wqkv + bqkv).split(D, dim=-1)
        if change is not None:
            k, v = change(i, k, v)
        kvs.append((k, v))
        split = [t.reshape(S, heads, Dh).transpose(0, 1) for t in (q, k, v)]
        scores = split[0] @ split[1].transpose(1, 2) / math.sqrt(Dh)
        probs = torch.softmax(scores.masked_fill(causal, -math.inf), dim=-1)
        x = x + (probs @ split[2]).transpose(0, 1).reshape(S, D) @ wo + bo
        x = x + gelu_tanh(norm(x, g2, b2) @ wf + bf) @ wp + bp
    return norm(x, *final) @ table.T, kvs


def bf16_round(x):
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def rounded(dtype, x):
    """x rounded as the cache stores it: to f32 (the kernel's), then to nearest even."""
    a = x.detach().numpy()
    r = bf16_round(a) if dtype == "bf16" else a.astype(np.float32).astype(np.float16).astype(np.float64)
    return torch.tensor(r)


def main():
    family, heads, weights, prompt, dtype, f32_ids, f32_logits, narrow_ids, narrow_logits = sys.argv[1:10]
    heads = int(heads)
    model = layers_of(family, load(weights))
    prompt = [int(t) for t in prompt.split(",")]
    ids32 = [int(t) for t in open(f32_ids).read().split()]
    idsN = [int(t) for t in open(narrow_ids).read().split()]
    l32 = load(f32_logits)["logits"][0].astype(np.float64)
    lN = load(narrow_logits)["logits"][0].astype(np.float64)
    steps = len(ids32)
    sequence = prompt + ids32[:-1]
    at = list(range(len(prompt) - 1, len(prompt) - 1 + steps))

    # 1. The model tfmc compiled.
    reference, kvs = forward(model, heads, sequence)
    ref = reference.detach().numpy()[at]
    scale = max(1.0, float(np.abs(ref).max()))
    tight = TOLERANCE * scale
    diff = float(np.abs(l32 - ref).max())
    ok = diff <= tight
    print(("" if ok else "FAIL ") + f"f32 program vs float64 forward: max |diff| {diff:.1e} (tolerance {tight:.1e})")

    # The first-order bound B1 per logit, through the actual network.
    leaves = [(torch.zeros_like(k, requires_grad=True), torch.zeros_like(v, requires_grad=True))
              for k, v in kvs]
    logits, kvs = forward(model, heads, sequence, lambda i, k, v: (k + leaves[i][0], v + leaves[i][1]))
    e = [tuple(UNIT[dtype] * t.detach().abs() + FLOOR[dtype] for t in kv) for kv in kvs]
    flat = [t for kv in leaves for t in kv]
    errors = [t for kv in e for t in kv]
    bound = np.zeros((steps, l32.shape[1]))
    for s, p in enumerate(at):
        for c in range(l32.shape[1]):
            grads = torch.autograd.grad(logits[p, c], flat, retain_graph=True)
            bound[s, c] = sum(float((g.abs() * w).sum()) for g, w in zip(grads, errors))

    # The second-order remainder, measured: the float64 model with its keys
    # and values rounded as the cache rounds them.
    quantised = forward(model, heads, sequence, lambda i, k, v: (rounded(dtype, k), rounded(dtype, v)))[0]
    moved = np.abs(quantised.detach().numpy()[at] - ref)
    worst = float((moved / np.maximum(bound, 1e-300)).max())
    if not worst <= 1 + RHO:
        ok = False
        print(f"FAIL the rounded float64 model moves {worst:.3g} x the first-order bound (beyond 1 + RHO)")
    allowed = (1 + RHO) * bound + 2 * tight

    # 2. and 3., while the ids agree.
    compared, checked = 0, 0
    worst_ratio, worst_diff = 0.0, 0.0
    for s in range(min(steps, len(idsN))):
        d = np.abs(lN[s] - l32[s])
        worst_diff = max(worst_diff, float(d.max()))
        worst_ratio = max(worst_ratio, float((d / allowed[s]).max()))
        if not (d <= allowed[s]).all():
            ok = False
            c = int(np.argmax(d / allowed[s]))
            print(f"FAIL step {s}: logit {c} moved {d[c]:.3g}, beyond its bound {allowed[s][c]:.3g}")
        compared += 1
        a = ids32[s]
        lead = l32[s][a] - np.delete(l32[s], a)
        need = np.delete(allowed[s], a) + allowed[s][a]
        margined = bool((lead > need).all())
        checked += margined
        if idsN[s] != a:
            if margined:
                ok = False
                print(f"FAIL step {s}: id {idsN[s]} instead of {a}, whose margin exceeds the bound")
            break
    print(f"{dtype} cache: {compared} of {steps} steps compared, logits moved at most {worst_diff:.2e} "
          f"({worst_diff / scale:.2e} of max(1, max |logit|)), at most {worst_ratio:.3f} of the bound; "
          f"bound at most {allowed.max():.2e}; rounded model within {worst:.3f} of the first-order bound")
    same = next((s for s, (a, b) in enumerate(zip(ids32, idsN)) if a != b), min(len(ids32), len(idsN)))
    print(f"greedy ids: the first {same} of {steps} equal; {checked} of the {compared} steps compared "
          f"have a margin beyond the bound")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
