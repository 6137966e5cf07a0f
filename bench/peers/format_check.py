#!/usr/bin/python3
"""Bench's same-ids check in an engine's own format: an engine's greedy ids against PyTorch run
with the engine's own weights and arithmetic, teacher-forced along the engine's ids.

    /usr/bin/python3 format_check.py (--weights W.safetensors [--heads 12] | --checkpoint DIR)
        --format FORMAT --prompt IDS --ids IDS [--perturb-runs R [--perturb 1e-6]]

Prints one JSON line: {"bench": "format_check", "format", "ok", "checked_steps", "min_margin",
"margins", "tolerance", "argmax", "failures", ...}.

Why. greedy_check.py / llama_check.py compare an engine's ids with the fp32 reference's on the
leading steps whose fp32 margin exceeds twice the format's largest logit change. The 4-bit
formats move random models' logits by 0.2-0.8, more than any step's margin: 0 steps, and any
ids pass. bench's engines.py / llama.py therefore judge every row whose fp32 check has fewer than
MIN_CHECKED steps here as well.

What. The model (--weights: torch_bench.py's GPT-2, the fp32 reference's own module; --checkpoint:
llama_check.py's Llama) runs ONE forward over prompt + ids[:-1] (teacher forcing: the engine's
own ids fed back, so that a legitimately different id at a near tie does not end the
comparison), in FORMAT (SPECS below):

  f32, bf16, int8_g64, int4_g32      tfmc's weight-only formats (and any f32 engine): the weights
                                     as the engine's file holds them (bf16; tfmc's int8 contract
                                     sw = f16(max/127), qw = rne(w / sw) per 64; Q4_0 blocks with
                                     ggml's reference rounding, gguf.py), every matrix, the
                                     embedding table and the (tied) head included; f32 products.
  int8_g64_a8, int4_g32_a8           the same weights (int8 per 64; Q4_0) with tfmc's int8
                                     activations: every linear's input quantised per group of
                                     the weight's 64 / 32 features and multiplied as integers
                                     (greedy_check.int8a8_linear, the contract).
  bf16_a16                           tfmc's bf16 weights with bf16 activations: every linear's
                                     input rounded to bf16, to nearest even, times the bf16
                                     weights, products exact in f32 (greedy_check.bf16_linear,
                                     the contract; the same arithmetic as llama.cpp:bf16).
  llama.cpp:f32, :bf16, :q8_0, :q4_0 the tensors of gguf.py's file (llama.cpp Q4_0: Q4_0
                                     matrices, the output head Q6_K, GPT-2's tied token_embd
                                     Q6_K, a Llama's token_embd Q4_0, a tied Llama's Q6_K (its
                                     head: gguf_llama.py); Q8_0: all Q8_0 as
                                     q8_0_bytes writes them) multiplied as ggml's CPU backend
                                     does: each matrix's input converted to its vec_dot type,
                                     Q8_0 for Q4_0/Q8_0 (per 32: d = max|x| / 127 stored f16,
                                     q = rne(x * 127 / max|x|)), Q8_K for Q6_K (per 256:
                                     iscale = -127 / (the value of largest |x|), q = min(127,
                                     rne(iscale x)), d = 1 / iscale, f32), BF16 for BF16, with the
                                     integer block products scaled per block in f32.
                                     Not modelled (inside the tolerance, below): llama.cpp's f16
                                     K/V cache and f16 attention products, GPT-2's f16 GELU table.

At each step s the engine's id e must be the argmax a of the format's logits, unless the step is
a near tie: the top-two margin l_a - l_2nd is below tol_s = (the tolerance) x max|l_s| (then e must be
within tol_s of l_a: one of the tied leaders). A step whose margin is at least tol_s is a
*checked step*; the check passes only with at least MIN_CHECKED of them (a check that checks
nothing fails).

The tolerance covers what differs between the engine and this model of it:
  - formats that round no activation, WEIGHT_TOLERANCE = 1e-3 of max|logit|: f32 summation
    order and fused multiply-adds (~1e-6 of the logits), a thousand times over;
  - formats that round activations (int8 or bf16 activations: int8_g64_a8, int4_g32_a8,
    bf16_a16, and every llama.cpp format but f32):
    an engine's f32 arithmetic differs from PyTorch's by ~1e-7 relative, so where an activation
    lies that close to a rounding tie the engine may round it the other way, and each such flip
    moves the activations downstream by part of a step, which flip again
    (test/fixtures/make_int8act.py measured the cascade). Its size depends on the model (depth,
    how much the layers move the residual stream), so each check measures it: PERTURB_RUNS = 4
    more passes with every rounded input multiplied by 1 + U(-eta, eta), eta = 1e-6 (~8x an
    engine's own deviation; the cascade saturates: 1e-5 moved GPT-2's logits no further), give
    per step the largest change of l_a - l_c over the 8 leaders c, relative to max|logit|
    ("perturbed_change"); the tolerance is SAFETY = 1.5 times its largest value (at least 1e-3):
    the 1.5 for the tail beyond 4 runs' maximum and for llama.cpp's arithmetic this model leaves
    out (its f16 K/V cache and attention products, GPT-2's f16 GELU table: on GPT-2 they move the
    logits by 2 % of max with the activation roundings on, no more than the perturbed runs do).
    Measured cascades (largest, relative to max|logit|): GPT-2 small (bench's weights)
    int8_g64_a8 1.7 %, int4_g32_a8 1.5 %, llama.cpp:q8_0 1.9 %, llama.cpp:q4_0 1.9 %,
    llama.cpp:bf16 0.5 %, bf16_a16 0.5 %; a 4-layer Llama (d 256) 0.02-0.2 %; the TinyLlama shape (bench's
    weights) int4_g32_a8 1.0 %, llama.cpp:q4_0 1.3 %. llama.cpp's own Q4_0 ids pass on all three
    (GPT-2 small: 5 checked steps; TinyLlama: 14 of 16, every id the model's argmax), its Q8_0
    and BF16 ids on GPT-2 small and the small Llama. A wrong format lies further away: on GPT-2
    small Q4_0 in blocks of 64 moves the leaders' gaps by 5-23 % of max|logit|, nibbles read as
    q - 7 by 14-63 %, llama.cpp's head in Q4_0 instead of Q6_K by 3.3-7.5 %, and their ids fail;
    differences below the cascade (int4 weights with or without int8 activations: 0.4-1.3 %)
    cannot be told apart by ids, and are not.

"min_margin" is the smallest top-two margin among the checked steps (absolute; "tolerance" lists
each step's tol_s). A format's logits depend only on the weights, the prompt and the ids, so bench
caches this output by them (engines.py).
"""
import argparse
import copy
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gguf import QK_K, q6_k_parts, q8_0_parts  # noqa: E402
from greedy_check import (int8_weight_parts, int8a8_linear, q4_0_weight_parts,  # noqa: E402
                          quantise_activations, round_bf16, round_bf16_activations,
                          round_int8_contract, round_q4_0)

MIN_CHECKED = 4
WEIGHT_TOLERANCE = 1e-3
PERTURB_RUNS = 4
PERTURB = 1e-6
SAFETY = 1.5
ROUNDING_TOLERANCE = 0.03   # only with --perturb-runs 0: 1.5 x the largest cascade measured (GPT-2 small)


# ---------------------------------------------------------------- activation roundings
# Each: (torch, x [M, K] f32, group) -> (q [M, groups, group] f32 integers, d [M, groups] f32),
# or for bf16 the rounded x. `noise` (torch, x) -> x, the identity except in perturbed runs.

def tfmc_int8(noise):
    return lambda torch, x, group: quantise_activations(torch, noise(torch, x), group)


def ggml_q8_0(noise):
    """ggml's CPU quantize_row_q8_0 (x86): per block of 32, amax = max|x|, d = f16(amax / 127),
    id = 127 / amax (0 when amax = 0), q = rne(x * id) (|q| <= 127 without a clamp)."""
    def quantise(torch, x, group):
        M, K = x.shape
        xg = noise(torch, x).reshape(M, K // group, group)
        amax = xg.abs().amax(dim=2)
        d = (amax / 127.0).half().float()
        inv = torch.where(amax != 0, 127.0 / amax, torch.zeros_like(amax))
        return torch.round(xg * inv[:, :, None]), d
    return quantise


def ggml_q8_k(noise):
    """ggml's quantize_row_q8_K_ref: per block of 256, max = the value of largest |x| (the first),
    iscale = -127 / max, q = min(127, rne(iscale * x)), d = 1 / iscale (f32)."""
    def quantise(torch, x, group):
        M, K = x.shape
        xg = noise(torch, x).reshape(M, K // group, group)
        top = torch.gather(xg, 2, xg.abs().argmax(dim=2, keepdim=True))[:, :, 0]
        iscale = torch.where(top != 0, -127.0 / top, torch.zeros_like(top))
        q = torch.clamp(torch.round(iscale[:, :, None] * xg), max=127.0)
        d = torch.where(top != 0, 1.0 / iscale, torch.zeros_like(top))
        return q, d
    return quantise


def bf16_round(noise):
    """tfmc's and ggml's bf16 activations: round to nearest even (greedy_check.round_bf16_activations)."""
    return lambda torch, x, group: round_bf16_activations(torch, noise(torch, x))


# ---------------------------------------------------------------- weight formats

def q8_0_weight_parts(w, group=32):
    """The Q8_0 blocks gguf.py writes: (q [rows, groups, 32] f32, f32(f16 scale) [rows, groups])."""
    rows, cols = w.shape
    q, s = q8_0_parts(w)
    return q.astype(np.float32).reshape(rows, cols // 32, 32), s.astype(np.float32).reshape(rows, cols // 32)


def q6_k_weight_parts(w, group=QK_K):
    """Q6_K super-blocks (gguf.q6_k_parts) as integer weights per 256: (scale_j (q - 32) [rows,
    groups, 256] f32 integers, f32(f16 d) [rows, groups]); value = d * scale_j * (q - 32)."""
    rows, cols = w.shape
    L, scales, d = q6_k_parts(w)
    wi = np.repeat(scales.astype(np.float32), 16, axis=1) * (L.astype(np.float32) - 32)
    return wi.reshape(rows, cols // QK_K, QK_K), d.astype(np.float32).reshape(rows, cols // QK_K)


class Mat:
    """How an engine multiplies by one matrix: `rounding` (numpy w -> the dequantised weight,
    f32 products, the input rounded by `act` if given: bf16), or `parts` (numpy w, group ->
    integer weights and scales, int8a8_linear with the input quantised by `act`)."""

    def __init__(self, rounding=None, parts=None, group=None, act=None):
        self.rounding, self.parts, self.group, self.act = rounding, parts, group, act

    def for_cols(self, cols):
        return self

    @staticmethod
    def from_parts(qw, sw, shape):
        """The [rows, cols] weight `shape` of integer parts qw [rows, groups, group] and scales sw
        [rows, groups] (a padded last group cut)."""
        return (qw * sw[:, :, None]).reshape(shape[0], -1)[:, :shape[1]]

    def dequantised(self, w):
        if self.rounding is not None:
            return self.rounding(w)
        return Mat.from_parts(*self.parts(w, self.group), w.shape)

    def prepare(self, torch, w):
        if self.parts is None or self.act is None:
            return torch.from_numpy(np.ascontiguousarray(self.dequantised(np.asarray(w)), dtype=np.float32))
        qw, sw = self.parts(np.asarray(w), self.group)
        return torch.from_numpy(qw), torch.from_numpy(sw)

    def apply(self, torch, x, prepared, noise, bias=None):
        if self.parts is None or self.act is None:
            if self.act is not None:
                shape = x.shape
                x = self.act(noise)(torch, x.reshape(-1, shape[-1]), None).reshape(shape)
            y = x @ prepared.T
            return y + bias if bias is not None else y
        qw, sw = prepared
        return int8a8_linear(torch, x, qw, sw, bias, self.group, quantise=self.act(noise))


class Q6kHead(Mat):
    """llama-quantize's output head of a Q4_0 file: Q6_K (times Q8_K inputs), Q8_0 (times Q8_0
    inputs) when a row is not whole 256-blocks (gguf.output_type)."""

    def __init__(self):
        super().__init__(parts=q6_k_weight_parts, group=QK_K, act=ggml_q8_k)

    def for_cols(self, cols):
        return self if cols % QK_K == 0 else Mat(parts=q8_0_weight_parts, group=32, act=ggml_q8_0)


class Spec:
    """A format: `linear` for every matrix but the head, `head` for the output head (a tied
    model's embedding table: lookups read its dequantised rows), `embed` (numpy w -> rows) for
    an untied model's embedding table."""

    def __init__(self, linear, head=None, embed=None):
        self.linear, self.head = linear, head or linear
        self.embed = embed or self.linear.dequantised

    @property
    def rounds_activations(self):
        return self.linear.act is not None or self.head.act is not None



identity = lambda w: np.asarray(w, dtype=np.float32)  # noqa: E731
SPECS = {
    "f32": Spec(Mat(identity)),
    "bf16": Spec(Mat(round_bf16)),
    "int8_g64": Spec(Mat(lambda w: round_int8_contract(w, 64))),
    "int8_g64_a8": Spec(Mat(parts=int8_weight_parts, group=64, act=tfmc_int8)),
    "int4_g32": Spec(Mat(round_q4_0)),
    "int4_g32_a8": Spec(Mat(parts=q4_0_weight_parts, group=32, act=tfmc_int8)),
    "bf16_a16": Spec(Mat(round_bf16, act=bf16_round)),
    "llama.cpp:f32": Spec(Mat(identity)),
    "llama.cpp:bf16": Spec(Mat(round_bf16, act=bf16_round)),
    "llama.cpp:q8_0": Spec(Mat(parts=q8_0_weight_parts, group=32, act=ggml_q8_0)),
    "llama.cpp:q4_0": Spec(Mat(parts=q4_0_weight_parts, group=32, act=ggml_q8_0), head=Q6kHead(),
                           embed=round_q4_0),
}


def spec_name(engine, fmt):
    """The SPECS key of a bench row: llama.cpp's formats are its own (activations in its vec_dot
    types), every other engine's are tfmc's / f32."""
    return f"llama.cpp:{fmt}" if engine == "llama.cpp" else fmt


def make_noise(torch, eta, seed):
    if not eta:
        return lambda torch, x: x
    g = torch.Generator().manual_seed(seed)
    return lambda torch, x: x * (1.0 + eta * (2.0 * torch.rand(x.shape, generator=g) - 1.0))


# ---------------------------------------------------------------- models

class Gpt2Format:
    """torch_bench.py's GPT-2 (the fp32 reference's module) in a format: a copy whose matrices
    hold the dequantised weights (the tied embedding table the head's), and while it runs
    every torch.nn.functional.linear of a matrix whose format rounds its input computes that."""

    def __init__(self, torch, m, spec):
        self.torch = torch
        self.q = copy.deepcopy(m)
        self.mats, self.prepared = {}, {}
        with torch.no_grad():
            for name, p in self.q.named_parameters():
                if p.dim() != 2 or name == "tgt_pos.weight":
                    continue
                mat = (spec.head if name == "tgt_embed.weight" else spec.linear).for_cols(p.shape[1])
                w = p.numpy()
                if mat.act is not None and mat.parts is not None:   # the parts once, for both uses
                    qw, sw = mat.parts(w, mat.group)
                    self.prepared[name] = (torch.from_numpy(qw), torch.from_numpy(sw))
                    deq = Mat.from_parts(qw, sw, w.shape)
                else:
                    deq = mat.dequantised(w)
                p.copy_(torch.from_numpy(np.ascontiguousarray(deq, dtype=np.float32)))
                self.mats[id(p)] = (name, mat)
        self.f32 = dict(m.named_parameters())   # bf16 activations: prepare() rounds these

    def logits(self, prompt, ids, noise):
        torch = self.torch
        F = torch.nn.functional
        saved = F.linear

        def linear(x, weight, bias=None):
            entry = self.mats.get(id(weight))
            if entry is None or entry[1].act is None:   # the copy holds the dequantised weight
                return saved(x, weight, bias)
            name, mat = entry
            if name not in self.prepared:
                self.prepared[name] = mat.prepare(torch, self.f32[name].detach().numpy())
            return mat.apply(torch, x, self.prepared[name], noise, bias)

        F.linear = linear
        try:
            seq = torch.tensor([list(prompt) + list(ids[:-1])])
            out = self.q(seq, 0, self.q.new_cache(1), last_only=False)[0]
        finally:
            F.linear = saved
        return out[len(prompt) - 1:]


def llama_format(torch, directory, spec):
    from llama_check import Llama

    class LlamaFormat(Llama):
        """llama_check.py's Llama in a format (weights one tensor at a time from the f32 map).
        With `cache` a dict, the integer parts of each matrix are kept between passes (int8 /
        int16: ~1.2 GB for TinyLlama's shape) for the perturbed runs."""
        noise = staticmethod(make_noise(torch, 0, 0))
        cache = None
        embed_table = None

        def w(self, name):
            a = self.tensor(name)
            if a.ndim == 2 and name == "model.embed_tokens.weight":
                if not self.tied:
                    return torch.from_numpy(np.ascontiguousarray(spec.embed(np.asarray(a)), dtype=np.float32))
                # A tied model's lookups read the head's table (llama.cpp Q4_0: token_embd Q6_K, as
                # llama-quantize writes a file without output.weight), dequantised once.
                if self.embed_table is None:
                    table = spec.head.for_cols(a.shape[1]).dequantised(np.asarray(a))
                    self.embed_table = torch.from_numpy(np.ascontiguousarray(table, dtype=np.float32))
                return self.embed_table
            return Llama.w(self, name)

        def linear(self, x, name):
            a = self.tensor(name)
            mat = (spec.head if name == "lm_head.weight" else spec.linear).for_cols(a.shape[1])
            kept = self.cache.get(name) if self.cache is not None else None
            if kept is not None:
                prepared = (kept[0].float(), kept[1]) if isinstance(kept, tuple) else kept.float()
            else:
                prepared = mat.prepare(torch, a)
                if self.cache is not None:
                    if isinstance(prepared, tuple):
                        qw = prepared[0]
                        small = torch.int8 if float(qw.abs().max()) <= 127 else torch.int16   # exact
                        self.cache[name] = (qw.to(small), prepared[1])
                    else:   # bf16 weights (llama.cpp:bf16): exact as bfloat16
                        self.cache[name] = prepared.bfloat16() if torch.equal(prepared.bfloat16().float(), prepared) else prepared
            return mat.apply(torch, x, prepared, self.noise)

    return LlamaFormat(torch, directory)


class Model:
    def __init__(self, torch, spec, weights=None, heads=None, checkpoint=None):
        self.torch = torch
        if checkpoint:
            self.llama = llama_format(torch, checkpoint, spec)
            self.gpt2 = None
        else:
            import torch_bench
            args = torch_bench.parse_args(["--weights", weights] + (["--heads", str(heads)] if heads else []))
            m, _, _ = torch_bench.make_gpt2(args, torch)
            self.gpt2, self.llama = Gpt2Format(torch, m, spec), None

    def logits(self, prompt, ids, eta=0.0, seed=0):
        """[len(ids), V]: the logits that chose each of ids (teacher forcing, one forward)."""
        torch = self.torch
        noise = make_noise(torch, eta, seed)
        with torch.no_grad():
            if self.gpt2 is not None:
                return self.gpt2.logits(prompt, ids, noise)
            from llama_check import teacher_forced
            self.llama.noise = noise
            if eta and self.llama.cache is None:
                self.llama.cache = {}   # perturbed runs follow: keep the parts (the first made them)
            return teacher_forced(self.llama, torch.tensor([list(prompt)]), torch.tensor([list(ids)]))[0]


# ---------------------------------------------------------------- the check

def judge(torch, logits, ids, rel_tolerance):
    """The check's verdict on ids given the format's teacher-forced logits (module docstring)."""
    top2 = torch.topk(logits, 2, dim=-1)
    margins = (top2.values[:, 0] - top2.values[:, 1]).tolist()
    argmax = top2.indices[:, 0].tolist()
    scale = logits.abs().amax(dim=-1).tolist()
    chosen = logits.gather(1, torch.tensor(ids)[:, None])[:, 0].tolist()
    tolerance = [rel_tolerance * s for s in scale]
    checked, failures = [], []
    for s, e in enumerate(ids):
        deficit = top2.values[s, 0].item() - chosen[s]
        if margins[s] >= tolerance[s]:
            checked.append(s)
            if e != argmax[s]:
                failures.append({"step": s, "id": e, "argmax": argmax[s], "margin": margins[s],
                                 "deficit": deficit, "tolerance": tolerance[s]})
        elif deficit > tolerance[s]:
            failures.append({"step": s, "id": e, "argmax": argmax[s], "margin": margins[s],
                             "deficit": deficit, "tolerance": tolerance[s], "near_tie": True})
    return {"ok": not failures and len(checked) >= MIN_CHECKED, "checked_steps": len(checked),
            "min_checked": MIN_CHECKED,
            "min_margin": min((margins[s] for s in checked), default=None),
            "relative_tolerance": rel_tolerance, "tolerance": [round(t, 6) for t in tolerance],
            "margins": [round(x, 6) for x in margins], "argmax": argmax, "failures": failures,
            "max_abs_logit": max(scale)}


def perturbed_change(torch, model, prompt, ids, base, runs, eta, leaders=8):
    """Per step, the largest change over `runs` perturbed passes of l_a - l_c, a the step's argmax,
    c each of the `leaders` highest logits, relative to the step's max|logit|."""
    top = torch.topk(base, leaders, dim=-1).indices
    worst = torch.zeros(base.shape[0])
    flips = 0
    d0 = base.gather(1, top[:, :1]) - base.gather(1, top)
    for r in range(runs):
        p = model.logits(prompt, ids, eta=eta, seed=1 + r)
        d1 = p.gather(1, top[:, :1]) - p.gather(1, top)
        worst = torch.maximum(worst, (d1 - d0).abs().amax(dim=1))
        flips += int((p.argmax(-1) != base.argmax(-1)).sum())
    rel = (worst / base.abs().amax(dim=-1)).tolist()
    return {"perturb": eta, "perturb_runs": runs, "perturbed_change": [round(x, 6) for x in rel],
            "perturbed_change_max": max(rel), "perturbed_argmax_changes": flips}


def run_check(torch, model, fmt, prompt, ids, perturb_runs=PERTURB_RUNS, eta=PERTURB):
    """format_check's JSON for ids. The tolerance: WEIGHT_TOLERANCE for a format that rounds no
    activation; for one that does, SAFETY times the largest relative change of a leader's gap
    that perturb_runs perturbed passes show (at least WEIGHT_TOLERANCE; ROUNDING_TOLERANCE
    without perturbed runs)."""
    spec = SPECS[fmt]
    base = model.logits(prompt, ids)
    out = {"bench": "format_check", "format": fmt, "prompt": list(prompt), "ids": list(ids),
           "rounds_activations": spec.rounds_activations}
    rel = WEIGHT_TOLERANCE
    if spec.rounds_activations:
        if perturb_runs:
            noise = perturbed_change(torch, model, prompt, ids, base, perturb_runs, eta)
            out.update(noise)
            rel = max(WEIGHT_TOLERANCE, SAFETY * noise["perturbed_change_max"])
        else:
            rel = ROUNDING_TOLERANCE
    out.update(judge(torch, base, list(ids), rel))
    return out


def ids_arg(s):
    return [int(x) for x in s.replace(",", " ").split()]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--weights", help="a GPT-2 safetensors file (tfmc's or Hugging Face's names)")
    p.add_argument("--heads", type=int, default=None)
    p.add_argument("--checkpoint", help="a Hugging Face Llama directory")
    p.add_argument("--format", required=True, choices=sorted(SPECS))
    p.add_argument("--prompt", required=True, type=ids_arg)
    p.add_argument("--ids", required=True, type=ids_arg, help="the engine's greedy ids")
    p.add_argument("--perturb-runs", type=int, default=PERTURB_RUNS,
                   help="perturbed passes that measure a rounding format's tolerance (0: ROUNDING_TOLERANCE)")
    p.add_argument("--perturb", type=float, default=PERTURB)
    p.add_argument("--threads", type=int, default=max(1, os.cpu_count() or 1))
    a = p.parse_args()
    if bool(a.weights) == bool(a.checkpoint):
        raise SystemExit("format_check: give --weights (GPT-2) or --checkpoint (Llama)")
    if not a.ids:
        raise SystemExit("format_check: no ids to check")
    import torch
    torch.set_num_threads(a.threads)
    model = Model(torch, SPECS[a.format], weights=a.weights, heads=a.heads, checkpoint=a.checkpoint)
    print(json.dumps(run_check(torch, model, a.format, a.prompt, a.ids, a.perturb_runs, a.perturb)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
