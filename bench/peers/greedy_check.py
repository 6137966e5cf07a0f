#!/usr/bin/python3
"""The reference for bench's same-ids check: a prompt on which every engine, at every weight
precision, must produce PyTorch's fp32 greedy ids for as many steps as the margins guarantee.

    /usr/bin/python3 greedy_check.py --weights W.safetensors [--heads 12] [--prompt-length 32]
        [--new-tokens 16] [--seed 11] [--tries 12] [--want 6]

Prints one JSON line: {"bench": "greedy_check", "prompt": [...], "expected": [...], "margins": [...],
"logit_error": {format: e}, "required_margin": {format: m}, "checked_steps": {format: k},
"timing_prompt": [...]} (the last: the ids torch_bench.py's GPT-2 timing uses, for the other engines).

For a random prompt (numpy RandomState(seed), then the next, ...) the fp32 reference
(torch_bench.py's GPT-2, KV cache) generates --new-tokens greedy ids and records each step's
top-1 margin, the winning logit minus the runner-up. For each weight format an engine uses
(f32; bf16; int8 with one f16 scale per 64 inputs, tfmc's; Q8_0, llama.cpp's: one f16 scale per
32; int8_g64_a8, tfmc's int8 weights with int8 activations, below; bf16_a16, tfmc's bf16 weights
with bf16 activations, below; q4_0, llama.cpp's Q4_0 file; int4_g32 and int4_g32_a8, tfmc's int4
weights without and with int8 activations, below), the same
model with its linear weights and embedding table rounded to that format and back
runs over the same ids (teacher forcing) and gives e, the largest change of any logit at any
step (0 for f32). If every logit moves by at most e, the top-1 cannot change at a step whose
margin exceeds 2e; TOLERANCE is added for the engines' own f32 rounding and summation order
(~1e-5 on these logits, so 100 times that). A format's checked steps are the leading steps whose
margin exceeds 2e + TOLERANCE: there an engine must give the reference's ids; after the first
step below it, a different id is legitimate and nothing further can be compared. With random
weights margins are small (a few 1e-2) against int8's e (~5e-2), so the search keeps the prompt
with the most checked steps for the worst format, stopping at --want steps. e is the
quantisation's effect measured on this very sequence, not a worst case over all inputs.
The 4-bit formats (COARSE) move the logits by several times a random model's margins, so they
rarely have a checked step: the search ranks prompts by the worst of the other formats first (as
before they existed), then by the worst of all, so that they cannot pin it to the first prompt;
"worst" in the output is the first of the two. bench checks a row whose format has fewer than 4
checked steps here in its own format as well (format_check.py: PyTorch with the engine's weights
and activation roundings, teacher-forced along the engine's ids).

q4_0 is what llama.cpp's llama-quantize writes for Q4_0 (gguf.py): every linear weight in Q4_0
blocks of 32 (ggml's quantize_row_q4_0_ref: d = f16(max / -8) with max the first value of largest
|x|, q = min(15, trunc(x / d + 8.5)), value (q - 8) d), and the output head, GPT-2's tied
embedding table (so its lookups as well), in Q6_K (HEAD_FORMATS). int4_g32 is tfmc's
`--weight-dtype int4`: the same Q4_0 blocks for every linear weight and the embedding table, the
tied head included. int4_g32_a8 (`--weight-dtype int4 --activations int8`) also quantises every
linear's input as int8_g64_a8 does, per group of the weight's 32 features (tfmc --help: "per group
of the weight's features (int8: 64, int4: 32)"), and multiplies it by the integers q - 8 in
[-8, 7], scaled by f32(d_g * f32(f16 d)) per group: int8a8_linear with Q4_0's parts.

int8_g64_a8 (tfmc's `--weight-dtype int8 --activations int8`) also quantises what every linear
multiplies: its weights per tfmc's int8 contract (per row and group of 64 inputs:
sw = f16(f32(max|w| / 127)), qw = clamp(rne(w / sw), -127, 127)), and its input row x per group g
of the same 64 features: d = f32(max|x| / 127), id = 0 if d == 0 else f32(1 / d),
q = clamp(rne(f32(x * id)), -127, 127); y_n = bias_n + sum_g f32(d_g * sw[n, g]) * sum_{k in g}
q_k * qw[n, k], the integer sums exact (|sum| <= 64 * 127^2 < 2^24, so exact in f32 as well).
That is every linear: attention projections, the MLP and the tied head, which reads the int8
embedding table (whose rows, looked up, are the int8 weights dequantised). Its e is the change
both quantisations cause together.

bf16_a16 (tfmc's `--weight-dtype bf16 --activations bf16`, docs/precision.md "bf16 activations")
rounds what every linear with a bf16 weight multiplies as well: its weights to bf16 (round_bf16),
and its input x to bf16, to nearest even (torch's float32 -> bfloat16, x.to(bfloat16).to(float32));
y_n = bias_n + sum_k bf16(x_k) * w_bf16[n, k], each product exact in f32 (8 + 8 significant bits),
the sum in f32 (bf16_linear). Every linear of GPT-2 (attention projections, the MLP, the tied head
on the bf16 embedding table) has a bf16 weight, so every one rounds its input. Its e is the change
both roundings cause together.
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_bench  # noqa: E402
from gguf import QK_K, q4_0_parts, q4_0_round, q6_k_round  # noqa: E402

TOLERANCE = 1e-3  # engines' f32 rounding and summation order differ from PyTorch's by ~1e-5


def round_bf16(w):
    bits = w.astype(np.float32).view(np.uint32).astype(np.uint64)
    return (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)


def round_grouped_int8(w, group):
    """Symmetric int8 with one f16 scale per `group` consecutive inputs of a row (the contract's
    int8 for group 64, llama.cpp's Q8_0 for 32); a ragged last group is allowed."""
    rows, cols = w.shape
    pad = (-cols) % group
    x = np.pad(w.astype(np.float32), ((0, 0), (0, pad))).reshape(rows, -1, group)
    s = (np.abs(x).max(axis=2, keepdims=True) / 127.0).astype(np.float16).astype(np.float32)
    inv = np.divide(1.0, s, out=np.zeros_like(s), where=s != 0)
    q = np.clip(np.rint(x * inv), -127, 127)
    return (q * s).reshape(rows, -1)[:, :cols]


def int8_weight_parts(w, group=64):
    """tfmc's int8 weight contract, written from its statement: per row and group of `group`
    consecutive inputs, sw = f16(max|w| / 127) (the division in f32, then f16 round to nearest
    even), qw = clamp(rne(w / f32(sw)), -127, 127), qw = 0 where sw = 0. Returns (qw, sw):
    qw [rows, groups, group] float32 holding integers (a ragged last group padded with zeros),
    sw [rows, groups] float32."""
    rows, cols = w.shape
    pad = (-cols) % group
    x = np.pad(np.asarray(w, dtype=np.float32), ((0, 0), (0, pad))).reshape(rows, -1, group)
    sw = (np.abs(x).max(axis=2) / np.float32(127)).astype(np.float16).astype(np.float32)
    qw = np.zeros_like(x)
    nz = np.broadcast_to((sw != 0)[:, :, None], x.shape)
    np.divide(x, sw[:, :, None], out=qw, where=nz)
    qw = np.clip(np.rint(qw), -127, 127).astype(np.float32)
    return qw, sw


def round_int8_contract(w, group=64):
    """w through int8_weight_parts and back (qw * sw is exact in f32: 8 bits times 11)."""
    qw, sw = int8_weight_parts(w, group)
    return (qw * sw[:, :, None]).reshape(w.shape[0], -1)[:, :w.shape[1]]


def _pad32(w):
    """[rows, cols] f32 with each row padded with zeros to whole blocks of 32 (tfmc's int4 contract
    pads a ragged last block so; llama.cpp's files have none)."""
    w = np.asarray(w, dtype=np.float32)
    pad = (-w.shape[1]) % 32
    return np.pad(w, ((0, 0), (0, pad))) if pad else w


def q4_0_weight_parts(w, group=32):
    """Q4_0's parts of a [rows, cols] weight in int8_weight_parts's form: (q - 8 [rows, groups, 32]
    float32 integers in [-8, 7], a ragged last group padded with zeros, f32(f16 d) [rows, groups])."""
    if group != 32:
        raise ValueError("Q4_0 blocks are 32 values")
    p = _pad32(w)
    rows, cols = p.shape
    q, d = q4_0_parts(p)
    return ((q.astype(np.float32) - 8).reshape(rows, cols // 32, 32),
            d.astype(np.float32).reshape(rows, cols // 32))


def round_q4_0(w):
    """w through Q4_0 blocks of 32 and back ((q - 8) * f32(f16 d))."""
    return q4_0_round(_pad32(w))[:, :np.shape(w)[1]]


def round_head(w):
    """llama-quantize's output head of a Q4_0 file: Q6_K, Q8_0 when a row is not whole 256-blocks."""
    return q6_k_round(w) if w.shape[-1] % QK_K == 0 else round_grouped_int8(w, 32)


def quantise_activations(torch, x, group=64):
    """tfmc's int8 activations: x [M, K] f32 -> (q [M, groups, group] f32 integers, d [M, groups]),
    per group of `group` consecutive features d = f32(max|x| / 127), id = 0 if d == 0 else
    f32(1 / d), q = clamp(rne(f32(x * id)), -127, 127) (torch.round rounds half to even)."""
    M, K = x.shape
    pad = (-K) % group
    xg = torch.nn.functional.pad(x, (0, pad)).reshape(M, -1, group)
    d = xg.abs().amax(dim=2) / 127.0
    inv = torch.where(d != 0, torch.div(torch.ones_like(d), d), torch.zeros_like(d))
    q = torch.clamp(torch.round(xg * inv[:, :, None]), -127.0, 127.0)
    return q, d


def int8a8_linear(torch, x, qw, sw, bias=None, group=64, chunk_elements=1 << 24, quantise=None):
    """y = x W^T (+ bias) as tfmc's int8 weights + int8 activations contract computes it: for each
    group g, the integer dot product of q and qw (exact in f32), times f32(d_g * sw[n, g]), summed
    over the groups in f32. x [..., K]; qw [N, groups, group], sw [N, groups] (torch, f32).
    The [groups, M, N] products are made in chunks of output columns. `quantise` (torch, x [M, K],
    group) -> (q, d) replaces tfmc's activation quantiser (format_check.py's ggml quantisers)."""
    shape = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1]).float()
    q, d = (quantise or quantise_activations)(torch, x2, group)
    M, G = d.shape
    N = qw.shape[0]
    qg = q.transpose(0, 1).contiguous()                                  # [G, M, group]
    dg = d.t().contiguous()                                             # [G, M]
    out = torch.empty(M, N, dtype=torch.float32)
    step = max(1, chunk_elements // max(1, G * M))
    for n0 in range(0, N, step):
        n1 = min(N, n0 + step)
        w = qw[n0:n1].permute(1, 2, 0)                                   # [G, group, n]
        isum = torch.bmm(qg, w)                                          # [G, M, n], integers
        scale = dg[:, :, None] * sw[n0:n1].t()[:, None, :]              # f32(d_g * sw[n, g])
        out[:, n0:n1] = (scale * isum).sum(dim=0)
    if bias is not None:
        out = out + bias
    return out.reshape(*shape, N)


def round_bf16_activations(torch, x):
    """tfmc's bf16 activations: x rounded to bf16, to nearest even, and widened back to f32."""
    return x.to(torch.bfloat16).to(torch.float32)


def bf16_linear(torch, x, w, bias=None, linear=None):
    """y = x W^T (+ bias) as tfmc's bf16 weights + bf16 activations contract computes it: x
    rounded to bf16 (round_bf16_activations), times w (f32 holding bf16 values): every product
    exact in f32, the sums f32. `linear` is the f32 linear to use (the unpatched F.linear)."""
    return (linear or torch.nn.functional.linear)(round_bf16_activations(torch, x.float()), w, bias)


FORMATS = {"f32": lambda w: w, "bf16": round_bf16, "int8_g64": lambda w: round_grouped_int8(w, 64),
           "q8_0": lambda w: round_grouped_int8(w, 32),
           # The weights as stored (the embedding rows a lookup reads); its linears also round
           # their inputs (ACTIVATION_GROUP, BF16_ACTIVATIONS).
           "int8_g64_a8": lambda w: round_int8_contract(w, 64), "bf16_a16": round_bf16,
           "q4_0": round_q4_0, "int4_g32": round_q4_0, "int4_g32_a8": round_q4_0}
# Formats whose linears quantise their input to int8 too, and the activation group (the weights'
# group).
ACTIVATION_GROUP = {"int8_g64_a8": 64, "int4_g32_a8": 32}
# The integer parts (qw, sw) of such a format's weights, int8a8_linear's operands.
WEIGHT_PARTS = {"int8_g64_a8": int8_weight_parts, "int4_g32_a8": q4_0_weight_parts}
# Formats whose linears round their input to bf16 (bf16_linear; their weights are bf16).
BF16_ACTIVATIONS = {"bf16_a16"}


def rounds_activations(fmt):
    """Whether a format's linears round their input (int8 or bf16 activations)."""
    return fmt in ACTIVATION_GROUP or fmt in BF16_ACTIVATIONS
# Formats whose output head (GPT-2: the tied embedding table) is stored in another format.
HEAD_FORMATS = {"q4_0": round_head}
# The 4-bit formats, which do not steer the prompt search (module docstring).
COARSE = {"q4_0", "int4_g32", "int4_g32_a8"}


def search_key(steps):
    """How a prompt's checked steps rank it: the worst of the formats that are not COARSE, then
    the worst of all, then their sum."""
    fine = [k for f, k in steps.items() if f not in COARSE] or list(steps.values())
    return min(fine), min(steps.values()), sum(steps.values())


class ActivationLinears:
    """While active, every torch.nn.functional.linear (torch_bench's GPT-2 calls it for the fused
    QKV projection and the tied head; nn.Linear's forward calls it for the others) rounds its
    input as the format `fmt` does: int8 activations (ACTIVATION_GROUP) compute int8a8_linear with
    the integer parts of its weight (WEIGHT_PARTS: int8_weight_parts or q4_0_weight_parts, made
    once per weight tensor); bf16 activations (BF16_ACTIVATIONS) compute bf16_linear on the
    weight as it is (the format's copy holds bf16 values)."""

    def __init__(self, torch, fmt):
        self.torch, self.parts, self.saved = torch, {}, None
        self.group, self.make_parts = ACTIVATION_GROUP.get(fmt), WEIGHT_PARTS.get(fmt)
        if self.group is None and fmt not in BF16_ACTIVATIONS:
            raise ValueError(f"{fmt} rounds no activation")

    def linear(self, x, weight, bias=None):
        torch = self.torch
        if self.group is None:
            return bf16_linear(torch, x, weight, bias, linear=self.saved)
        key = id(weight)
        if key not in self.parts:
            qw, sw = self.make_parts(weight.detach().numpy(), self.group)
            self.parts[key] = (weight, torch.from_numpy(qw), torch.from_numpy(sw))
        _, qw, sw = self.parts[key]
        return int8a8_linear(torch, x, qw, sw, bias, self.group)

    def __enter__(self):
        F = self.torch.nn.functional
        self.saved = F.linear
        F.linear = self.linear
        return self

    def __exit__(self, *exc):
        self.torch.nn.functional.linear = self.saved
        return False


def quantised_copy(torch, m, fmt):
    """A copy of the model whose 2-D weights (every linear's weight, the embedding table and so
    the tied head) went through `fmt` (the embedding table through HEAD_FORMATS[fmt] where the
    format stores the head otherwise); positions, norms and biases stay f32."""
    import copy
    q = copy.deepcopy(m)
    with torch.no_grad():
        for name, p in q.named_parameters():
            if p.dim() == 2 and name != "tgt_pos.weight":
                f = HEAD_FORMATS[fmt] if name == "tgt_embed.weight" and fmt in HEAD_FORMATS else FORMATS[fmt]
                p.copy_(torch.from_numpy(np.ascontiguousarray(f(p.numpy()), dtype=np.float32)))
    return q


def teacher_forced_logits(torch, m, prompt, ids):
    """Last-position logits after the prompt and after each of ids[:-1] (KV cache)."""
    cache = m.new_cache(1)
    out = [m(torch.tensor([prompt]), 0, cache)[0, -1]]
    for i, tok in enumerate(ids[:-1]):
        out.append(m(torch.tensor([[tok]]), len(prompt) + i, cache)[0, -1])
    return torch.stack(out)


def quantised_logits(torch, m, fmt, prompt, ids):
    """teacher_forced_logits of a format's copy, its linears rounding their input where the
    format says so."""
    if not rounds_activations(fmt):
        return teacher_forced_logits(torch, m, prompt, ids)
    with ActivationLinears(torch, fmt):
        return teacher_forced_logits(torch, m, prompt, ids)


def leading(margins, required):
    k = 0
    while k < len(margins) and margins[k] > required:
        k += 1
    return k


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--weights", required=True)
    p.add_argument("--heads", type=int, default=None)
    p.add_argument("--prompt-length", type=int, default=32)
    p.add_argument("--new-tokens", type=int, default=16)
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--tries", type=int, default=12)
    p.add_argument("--want", type=int, default=6, help="stop when the worst format has this many checked steps")
    p.add_argument("--timing-prompt", type=int, default=128,
                   help="also print the prompt torch_bench.py times (its seed-7 ids) of this length")
    a = p.parse_args()
    import torch
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    args = torch_bench.parse_args(["--weights", a.weights] + (["--heads", str(a.heads)] if a.heads else []))
    m, cfg, _ = torch_bench.make_gpt2(args, torch)
    rng = np.random.RandomState(a.seed)
    best, rough = None, None
    with torch.no_grad():
        copies = {fmt: (quantised_copy(torch, m, fmt) if fmt != "f32" else m) for fmt in FORMATS}
        for attempt in range(a.tries):
            prompt = [int(i) for i in rng.randint(0, cfg["V"], size=a.prompt_length)]
            _, _, ids = torch_bench.gpt2_generate(m, torch, prompt, a.new_tokens - 1)
            ref = teacher_forced_logits(torch, m, prompt, ids)
            top2 = torch.topk(ref, 2, dim=1).values
            margins = (top2[:, 0] - top2[:, 1]).tolist()
            # The quantised passes cost 3 more runs: only for a prompt that may beat the best,
            # judged with the largest error seen so far (errors vary little between prompts).
            # (The largest error of the formats that steer the search: COARSE ones do not.)
            if rough is not None and best is not None and leading(margins, rough) < best["worst"]:
                continue
            errors = {fmt: (float((quantised_logits(torch, q, fmt, prompt, ids) - ref).abs().max())
                            if fmt != "f32" else 0.0) for fmt, q in copies.items()}
            rough = 2 * max(e for f, e in errors.items() if f not in COARSE) + TOLERANCE
            required = {fmt: 2 * e + TOLERANCE for fmt, e in errors.items()}
            steps = {fmt: leading(margins, r) for fmt, r in required.items()}
            result = {"bench": "greedy_check", "attempt": attempt, "seed": a.seed, "prompt": prompt,
                      "expected": ids, "margins": [round(x, 6) for x in margins],
                      "logit_error": errors, "required_margin": required, "tolerance": TOLERANCE,
                      "checked_steps": steps, "worst": search_key(steps)[0]}
            if best is None or search_key(steps) > search_key(best["checked_steps"]):
                best = result
            if best["worst"] >= a.want:
                break
    # The timing prompt every engine is given, so that they all run on the same ids.
    g = torch.Generator().manual_seed(7)
    best["timing_prompt"] = torch.randint(0, cfg["V"], (a.timing_prompt,), generator=g).tolist()
    print(json.dumps(best))
    return 0


if __name__ == "__main__":
    sys.exit(main())
