#!/usr/bin/python3
"""PyTorch peers for tfmc's benchmark (Debian 12's python3-torch 1.13, run with /usr/bin/python3).

Prints one JSON line per measurement (see README.md):
  bench "attention": matmul + mask + softmax + matmul on [1, H, S, 64] ("torch_matmul_softmax"),
                     nn.MultiheadAttention's core as torch 1.13 runs it (q/sqrt(d), baddbmm with
                     the float mask, softmax, bmm: "torch_mha_core"), and a whole
                     nn.MultiheadAttention(768, 12) forward incl. projections ("torch_mha_module").
  bench "linear":    nn.Linear (with bias) for GPT-2-small shapes: checks which BLAS torch really uses.
  bench "model":     nn.TransformerEncoderLayer / nn.TransformerDecoderLayer (d 512, 8 heads, ff 2048,
                     batch_first, eval, no_grad), and a GPT-2 small written here (pre-norm, tanh GELU,
                     learned positions, tied head) with a KV cache: prefill of --prompt tokens, then
                     --new-tokens greedy decode steps (tokens/s).

Threads: each thread count runs in its own child process, because OpenBLAS/BLIS read their thread
count from the environment when they load. Policy "passive" (default): torch.set_num_threads(T),
OMP_NUM_THREADS=T, OPENBLAS_NUM_THREADS=T, BLIS_NUM_THREADS=T and, for T > 1,
OMP_WAIT_POLICY=PASSIVE (torch's OpenMP threads would otherwise spin against the BLAS threads).
Policy "blas": torch on 1 thread, the BLAS on T threads. Each line says which ("thread_policy").

The BLAS is whatever libblas.so.3 the process loads: run it under the env assignments that
blas_variants.sh prints to try BLIS / oneDNN; each line reports the loaded library ("blas").
"""
import argparse
import json
import math
import os
import re
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


# ----------------------------------------------------------------------------- arguments
def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", default="attention,linear,model",
                   help="comma list of: attention, linear, model (default: all)")
    p.add_argument("--threads", default="1,2", help="thread counts, e.g. 1,2 (default 1,2)")
    p.add_argument("--thread-policy", choices=["passive", "blas"], default="passive")
    p.add_argument("--sizes", default=None, help="attention S list (default 128,512,1024,2048,4096)")
    p.add_argument("--causal", default="1,0", help="attention masks: 1 = causal, 0 = full")
    p.add_argument("--attn-impls", default="matmul_softmax,mha_core,mha_module")
    p.add_argument("--heads", type=int, default=None, help="attention heads (12); GPT-2 heads when not "
                   "given by a config.json / model.tfm beside --weights")
    p.add_argument("--models", default="encoder,decoder,gpt2", help="comma list of encoder, decoder, gpt2")
    p.add_argument("--model-sizes", default="128,512", help="S for the encoder/decoder layers")
    p.add_argument("--weights", default=None, help="GPT-2 weights (safetensors, tfmc or HF names); "
                   "default: random N(0, 0.02) with a fixed seed")
    p.add_argument("--prompt", type=int, default=128, help="prefill tokens (default 128)")
    p.add_argument("--new-tokens", type=int, default=128, help="decode steps (default 128; --quick 32)")
    p.add_argument("--batch", type=int, default=1, help="GPT-2: prompts of one length generated at once "
                   "(default 1)")
    p.add_argument("--prefill-logits", choices=["last", "all"], default="last",
                   help="prefill computes logits for the last position only (default) or all")
    p.add_argument("--runs", type=int, default=None, help="timed runs after warm-up (default 7; --quick 5; min 5)")
    p.add_argument("--quick", action="store_true", help="smoke run: small sizes, fewer tokens")
    p.add_argument("--check-fixture", default=None, metavar="DIR",
                   help="check the GPT-2 peer against a tfmc fixture (test/fixtures/decoder_pre) and exit")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    a.runs = max(5, a.runs if a.runs is not None else (5 if a.quick else 7))
    if a.sizes is None:
        a.sizes = "128,512" if a.quick else "128,512,1024,2048,4096"
    if a.quick and "--new-tokens" not in " ".join(argv):
        a.new_tokens = 32
    if a.quick and "--model-sizes" not in " ".join(argv):
        a.model_sizes = "128"
    return a


def thread_env(T, policy):
    env = {"OPENBLAS_NUM_THREADS": str(T), "BLIS_NUM_THREADS": str(T)}
    if policy == "passive":
        env["OMP_NUM_THREADS"] = str(T)
        if T > 1:
            env["OMP_WAIT_POLICY"] = "PASSIVE"
        desc = f"torch.set_num_threads({T}), OMP_NUM_THREADS={T}, OPENBLAS_NUM_THREADS={T}, BLIS_NUM_THREADS={T}"
        if T > 1:
            desc += ", OMP_WAIT_POLICY=PASSIVE"
    else:
        env["OMP_NUM_THREADS"] = "1"
        desc = f"torch.set_num_threads(1), OPENBLAS_NUM_THREADS={T}, BLIS_NUM_THREADS={T} (BLAS-internal threads only)"
    return env, desc


# ----------------------------------------------------------------------------- safetensors
_ST_DTYPES = {"F32": ("<f4", 4), "F64": ("<f8", 8), "F16": ("<f2", 2), "BF16": ("<u2", 2),
              "I64": ("<i8", 8), "I32": ("<i4", 4), "U8": ("u1", 1), "BOOL": ("?", 1)}


def read_safetensors(path, mmap=False):
    """A tiny safetensors reader: {name: numpy array} (BF16 is widened to float32). mmap: the
    arrays are read-only views of the file (for checkpoints of several GB), BF16 still widened."""
    import numpy as np
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        whole = np.memmap(path, dtype=np.uint8, mode="r") if mmap else None
        out = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            dt, size = _ST_DTYPES[info["dtype"]]
            b, e = info["data_offsets"]
            if mmap:
                a = whole[base + b:base + e].view(dt).reshape(info["shape"])
            else:
                f.seek(base + b)
                a = np.frombuffer(f.read(e - b), dtype=dt).reshape(info["shape"])
            if info["dtype"] == "BF16":
                a = (a.astype(np.uint32) << 16).view(np.float32)
            out[name] = a
        return out


# ----------------------------------------------------------------------------- helpers
def stats(runs_ms):
    s = sorted(runs_ms)
    n = len(s)
    med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    return {"runs_ms": [round(x, 4) for x in runs_ms], "runs": n, "median_ms": med, "min_ms": s[0], "max_ms": s[-1]}


def timeit(fn, runs, warmup=1, target_ms=0.0):
    """Median-ready list of per-call ms. Short calls are batched: each run is the mean of
    `reps` calls so that a run lasts about target_ms."""
    for _ in range(warmup):
        fn()
    reps = 1
    if target_ms > 0:
        t0 = time.perf_counter()
        fn()
        dt = (time.perf_counter() - t0) * 1e3
        reps = max(1, min(10000, int(target_ms / max(dt, 1e-3))))
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        out.append((time.perf_counter() - t0) * 1e3 / reps)
    return out, reps


def sgemm_provider():
    """The shared object whose sgemm_ torch's calls bind to (what torch really uses): the
    global scope first (LD_PRELOAD), then libtorch_cpu's own dependency order."""
    import ctypes

    class DlInfo(ctypes.Structure):
        _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                    ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]

    def where(fn):
        info = DlInfo()
        libc = ctypes.CDLL(None)
        if libc.dladdr(ctypes.cast(fn, ctypes.c_void_p), ctypes.byref(info)):
            return os.path.realpath(info.dli_fname.decode())
        return "?"

    try:
        return where(ctypes.CDLL(None).sgemm_)
    except AttributeError:
        pass
    try:
        with open("/proc/self/maps") as f:
            paths = [l.split()[-1] for l in f if "libtorch_cpu.so" in l]
        return where(ctypes.CDLL(paths[0]).sgemm_)
    except Exception as e:  # noqa: BLE001 - report, never fail the benchmark for this
        return f"unknown ({e})"


class Emitter:
    def __init__(self, common):
        self.common = common

    def __call__(self, rec, runs_ms, **derived):
        d = dict(rec)
        d.update(stats(runs_ms))
        d.update(derived)
        d.update(self.common)
        print(json.dumps(d), flush=True)
        return d


# ----------------------------------------------------------------------------- attention
def bench_attention(a, torch, emit, T):
    import torch.nn.functional as F
    H = a.heads or 12
    D = 64
    E = H * D
    sizes = [int(x) for x in a.sizes.split(",") if x]
    causals = [int(x) for x in a.causal.split(",") if x]
    impls = a.attn_impls.split(",")
    g = torch.Generator().manual_seed(0)
    for S in sizes:
        # Big S: every run takes seconds; the minimum of 5 runs after one warm-up.
        runs = 5 if S >= 2048 else a.runs
        q = torch.randn(1, H, S, D, generator=g)
        k = torch.randn(1, H, S, D, generator=g)
        v = torch.randn(1, H, S, D, generator=g)
        x = torch.randn(1, S, E, generator=g)  # [S, H*64] activations for the MHA variants
        mask = torch.triu(torch.full((S, S), float("-inf")), diagonal=1)
        mha = torch.nn.MultiheadAttention(E, H, dropout=0.0, batch_first=True).eval()
        scale = 1.0 / math.sqrt(D)
        for c in causals:
            for impl in impls:
                if impl == "matmul_softmax":
                    def fn():
                        s = torch.matmul(q, k.transpose(-1, -2)) * scale
                        if c:
                            s = s + mask
                        return torch.matmul(torch.softmax(s, dim=-1), v)
                    extra = {}
                elif impl == "mha_core":
                    # torch 1.13's F._scaled_dot_product_attention (python) as called by
                    # F.multi_head_attention_forward: q [H, S, 64] views of [S, H*64].
                    qm = x.view(S, H, D).transpose(0, 1)
                    km = (x * 0.5).view(S, H, D).transpose(0, 1)
                    vm = (x * 0.25).view(S, H, D).transpose(0, 1)
                    m3 = mask.unsqueeze(0)

                    def fn():
                        qs = qm / math.sqrt(D)
                        if c:
                            w = torch.baddbmm(m3, qs, km.transpose(-2, -1))
                        else:
                            w = torch.bmm(qs, km.transpose(-2, -1))
                        w = torch.softmax(w, dim=-1)
                        return torch.bmm(w, vm).transpose(0, 1).contiguous().view(S, E)
                    extra = {}
                elif impl == "mha_module":
                    def fn():
                        return mha(x, x, x, attn_mask=mask if c else None, need_weights=False)[0]
                    extra = {"includes": "in_proj + out_proj (flops counted: core + 8*S*E^2)",
                             "fast_path_possible": not c}
                else:
                    raise SystemExit(f"unknown attention impl {impl}")
                with torch.no_grad():
                    runs_ms, reps = timeit(fn, runs, warmup=1, target_ms=20.0)
                full = 4.0 * S * S * D * H
                useful = 0.5 * full if c else full
                if impl == "mha_module":
                    useful += 8.0 * S * E * E
                emit({"bench": "attention", "impl": "torch_" + impl, "S": S, "H": H, "d_head": D, "batch": 1,
                      "causal": bool(c), "threads": T, "reps_per_run": reps, **extra}, runs_ms,
                     gflops=useful / (sorted(runs_ms)[len(runs_ms) // 2] * 1e6), useful_gflop=useful * 1e-9)


# ----------------------------------------------------------------------------- linear
def bench_linear(a, torch, emit, T):
    Ms = [1, 128] if a.quick else [1, 128, 1024]
    shapes = [(2304, 768), (768, 768), (3072, 768), (768, 3072)]
    for N, K in shapes:
        lin = torch.nn.Linear(K, N).eval()
        for M in Ms:
            x = torch.randn(M, K)
            with torch.no_grad():
                runs_ms, reps = timeit(lambda: lin(x), a.runs, warmup=3, target_ms=20.0)
            med = stats(runs_ms)["median_ms"]
            emit({"bench": "linear", "impl": "torch_linear_bias", "M": M, "N": N, "K": K, "threads": T,
                  "weights": "warm", "reps_per_run": reps}, runs_ms,
                 gflops=2.0 * M * N * K / (med * 1e6), gbs=4.0 * (N * K + M * K + M * N) / (med * 1e6))


# ----------------------------------------------------------------------------- models
def build_gpt2(torch, V, d, H, L, ff, P, eps=1e-5):
    import torch.nn as nn
    import torch.nn.functional as F

    class SelfAttn(nn.Module):
        def __init__(self):
            super().__init__()
            self.in_proj_weight = nn.Parameter(torch.empty(3 * d, d))
            self.in_proj_bias = nn.Parameter(torch.zeros(3 * d))
            self.out_proj = nn.Linear(d, d)

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.self_attn = SelfAttn()
            self.linear1 = nn.Linear(d, ff)
            self.linear2 = nn.Linear(ff, d)
            self.norm1 = nn.LayerNorm(d, eps=eps)
            self.norm2 = nn.LayerNorm(d, eps=eps)

        def forward(self, x, kc, vc, pos0, mask):
            B, Tn, _ = x.shape
            Dh = d // H
            h = self.norm1(x)
            qkv = F.linear(h, self.self_attn.in_proj_weight, self.self_attn.in_proj_bias)
            qkv = qkv.view(B, Tn, 3, H, Dh)
            q = qkv[:, :, 0].transpose(1, 2) * (1.0 / math.sqrt(Dh))
            kc[:, :, pos0:pos0 + Tn] = qkv[:, :, 1].transpose(1, 2)
            vc[:, :, pos0:pos0 + Tn] = qkv[:, :, 2].transpose(1, 2)
            n = pos0 + Tn
            att = torch.matmul(q, kc[:, :, :n].transpose(-1, -2))
            if Tn > 1:
                att = att + mask[pos0:n, :n]
            att = torch.softmax(att, dim=-1)
            y = torch.matmul(att, vc[:, :, :n]).transpose(1, 2).reshape(B, Tn, d)
            x = x + self.self_attn.out_proj(y)
            return x + self.linear2(F.gelu(self.linear1(self.norm2(x)), approximate="tanh"))

    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([Layer() for _ in range(L)])
            self.norm = nn.LayerNorm(d, eps=eps)

    class GPT2(nn.Module):
        """Names follow tfmc's (tgt_embed, tgt_pos, decoder.layers.i.*, decoder.norm)."""

        def __init__(self):
            super().__init__()
            self.tgt_embed = nn.Embedding(V, d)
            self.tgt_pos = nn.Embedding(P, d)
            self.decoder = Stack()
            self.H, self.d, self.P, self.L = H, d, P, L
            self.register_buffer("mask", torch.triu(torch.full((P, P), float("-inf")), diagonal=1),
                                 persistent=False)

        def new_cache(self, B=1):
            Dh = d // H
            return [(torch.zeros(B, H, P, Dh), torch.zeros(B, H, P, Dh)) for _ in range(L)]

        def forward(self, ids, pos0, cache, last_only=True):
            Tn = ids.shape[1]
            x = self.tgt_embed(ids) + self.tgt_pos.weight[pos0:pos0 + Tn]
            for layer, (kc, vc) in zip(self.decoder.layers, cache):
                x = layer(x, kc, vc, pos0, self.mask)
            if last_only:
                x = x[:, -1:]
            x = self.decoder.norm(x)
            return F.linear(x, self.tgt_embed.weight)  # tied head, no bias

    return GPT2()


def hf_to_tfmc(W):
    """Hugging Face GPT-2 names (Conv1D [in, out]) -> tfmc's names ([out, in])."""
    if not any(k.startswith(("transformer.", "h.", "wte.")) for k in W):
        return W
    g = lambda n: W.get("transformer." + n, W.get(n))
    C = {"tgt_embed.weight": g("wte.weight"), "tgt_pos.weight": g("wpe.weight"),
         "decoder.norm.weight": g("ln_f.weight"), "decoder.norm.bias": g("ln_f.bias")}
    i = 0
    while g(f"h.{i}.ln_1.weight") is not None:
        h, pre = f"h.{i}.", f"decoder.layers.{i}."
        for ours, theirs in (("self_attn.in_proj_", "attn.c_attn."), ("self_attn.out_proj.", "attn.c_proj."),
                             ("linear1.", "mlp.c_fc."), ("linear2.", "mlp.c_proj.")):
            C[pre + ours + "weight"] = g(h + theirs + "weight").T.copy()
            C[pre + ours + "bias"] = g(h + theirs + "bias")
        for n, ln in ((1, "ln_1"), (2, "ln_2")):
            C[f"{pre}norm{n}.weight"] = g(h + ln + ".weight")
            C[f"{pre}norm{n}.bias"] = g(h + ln + ".bias")
        i += 1
    return C


def heads_beside(path):
    """Heads from a config.json (n_head) or a *.tfm (heads = N) next to the weights file."""
    d = os.path.dirname(os.path.abspath(path))
    cj = os.path.join(d, "config.json")
    if os.path.exists(cj):
        with open(cj) as f:
            c = json.load(f)
        if "n_head" in c:
            return int(c["n_head"]), float(c.get("layer_norm_epsilon", 1e-5))
    for fn in sorted(os.listdir(d)):
        if fn.endswith(".tfm"):
            with open(os.path.join(d, fn)) as f:
                t = f.read()
            m = re.search(r"^\s*heads\s*=\s*(\d+)", t, re.M)
            e = re.search(r"^\s*layer_norm_eps\s*=\s*([0-9.eE+-]+)", t, re.M)
            if m:
                return int(m.group(1)), float(e.group(1)) if e else 1e-5
    return None, 1e-5


def make_gpt2(a, torch):
    if a.weights:
        W = hf_to_tfmc(read_safetensors(a.weights))
        V, d = W["tgt_embed.weight"].shape
        P = W["tgt_pos.weight"].shape[0]
        L = len({k.split(".")[2] for k in W if k.startswith("decoder.layers.")})
        ff = W["decoder.layers.0.linear1.weight"].shape[0]
        H, eps = heads_beside(a.weights)
        H = a.heads or H or 12
        m = build_gpt2(torch, V, d, H, L, ff, P, eps)
        sd = {k: torch.from_numpy(v.astype("float32")) for k, v in W.items()}
        m.load_state_dict(sd, strict=True)
        src = a.weights
    else:
        V, d, H, L, ff, P = 50257, 768, a.heads or 12, 12, 3072, 1024
        torch.manual_seed(1234)
        m = build_gpt2(torch, V, d, H, L, ff, P)
        with torch.no_grad():
            for name, p in m.named_parameters():
                if "norm" in name:
                    p.fill_(1.0 if name.endswith("weight") else 0.0)
                elif name.endswith("bias"):
                    p.zero_()
                else:
                    p.normal_(0.0, 0.02)
        src = "random N(0,0.02), seed 1234"
    return m.eval(), {"V": V, "d": d, "H": H, "L": L, "ff": ff, "P": P}, src


def gpt2_generate(m, torch, prompt, new_tokens, last_only=True, batch=1):
    """Prefill + greedy decode with the KV cache of `batch` copies of the prompt (rows of one
    length: no padding); returns (prefill_ms, decode_ms, row 0's tokens)."""
    cache = m.new_cache(batch)
    ids = torch.tensor([prompt] * batch)
    t0 = time.perf_counter()
    logits = m(ids, 0, cache, last_only=last_only)
    tok = torch.argmax(logits[:, -1], dim=-1)
    t1 = time.perf_counter()
    out = [int(tok[0])]
    pos = len(prompt)
    for _ in range(new_tokens):
        logits = m(tok[:, None], pos, cache)
        tok = torch.argmax(logits[:, -1], dim=-1)
        out.append(int(tok[0]))
        pos += 1
    t2 = time.perf_counter()
    return (t1 - t0) * 1e3, (t2 - t1) * 1e3, out


def bench_gpt2(a, torch, emit, T):
    m, cfg, src = make_gpt2(a, torch)
    if a.prompt + a.new_tokens > cfg["P"]:
        raise SystemExit(f"prompt + new tokens exceed max_len {cfg['P']}")
    g = torch.Generator().manual_seed(7)
    prompt = torch.randint(0, cfg["V"], (a.prompt,), generator=g).tolist()
    with torch.no_grad():
        gpt2_generate(m, torch, prompt, min(8, a.new_tokens), a.prefill_logits == "last",
                      a.batch)  # warm-up
        pre, dec, toks = [], [], None
        for _ in range(a.runs):
            p_ms, d_ms, toks = gpt2_generate(m, torch, prompt, a.new_tokens, a.prefill_logits == "last",
                                             a.batch)
            pre.append(p_ms)
            dec.append(d_ms)
    base = {"bench": "model", "impl": "torch_gpt2_kv_cache", "model": "gpt2_small" if cfg["d"] == 768 else "gpt2",
            "layers": cfg["L"], "d_model": cfg["d"], "heads": cfg["H"], "vocab": cfg["V"], "threads": T,
            "weights": src, "batch": a.batch}
    pm = stats(pre)["median_ms"]
    emit({**base, "phase": "prefill", "tokens": a.prompt, "prefill_logits": a.prefill_logits}, pre,
         tokens_per_s=a.batch * a.prompt / (pm * 1e-3))
    dm = stats(dec)["median_ms"]
    emit({**base, "phase": "decode", "prompt": a.prompt, "new_tokens": a.new_tokens,
          "note": "time of new_tokens single-token steps (embed..argmax) after the prefill; cache starts at prompt length",
          "first_tokens": toks[:8]}, dec,
         tokens_per_s=a.batch * a.new_tokens / (dm * 1e-3), ms_per_token=dm / a.new_tokens)


def bench_layers(a, torch, emit, T):
    import torch.nn as nn
    sizes = [int(x) for x in a.model_sizes.split(",") if x]
    kinds = [k for k in a.models.split(",") if k in ("encoder", "decoder")]
    torch.manual_seed(0)
    for kind in kinds:
        if kind == "encoder":
            layer = nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.0, batch_first=True).eval()
        else:
            layer = nn.TransformerDecoderLayer(512, 8, 2048, dropout=0.0, batch_first=True).eval()
        for S in sizes:
            x = torch.randn(1, S, 512)
            mem = torch.randn(1, S, 512)
            mask = torch.triu(torch.full((S, S), float("-inf")), diagonal=1)
            if kind == "encoder":
                fn = lambda: layer(x)
                desc = "full self-attention (no mask), post-norm, relu; eval+no_grad fast path allowed"
            else:
                fn = lambda: layer(x, mem, tgt_mask=mask)
                desc = "causal float tgt_mask, cross-attention over memory of S rows, post-norm, relu"
            with torch.no_grad():
                runs_ms, reps = timeit(fn, a.runs, warmup=2, target_ms=20.0)
            emit({"bench": "model", "impl": f"torch_transformer_{kind}_layer", "d_model": 512, "nhead": 8,
                  "d_ff": 2048, "S": S, "batch": 1, "threads": T, "reps_per_run": reps, "config": desc},
                 runs_ms)


# ----------------------------------------------------------------------------- fixture check
def check_fixture(a, torch):
    import numpy as np
    d = a.check_fixture
    wpath = next(os.path.join(d, f) for f in ("weights.safetensors", "model.safetensors")
                 if os.path.exists(os.path.join(d, f)))
    a.weights = wpath
    m, cfg, _ = make_gpt2(a, torch)
    inp = read_safetensors(os.path.join(d, "inputs.safetensors"))
    exp = read_safetensors(os.path.join(d, "expected.safetensors"))["logits"]
    ok = True
    with torch.no_grad():
        for b in range(inp["input_ids"].shape[0]):
            am = inp["attention_mask"][b]
            n = int(am.sum())
            if not (am[:n] == 1).all():
                continue  # only right-padded rows: the real prefix is unaffected by padding
            ids = inp["input_ids"][b, :n].tolist()
            full = m(torch.tensor([ids]), 0, m.new_cache(1), last_only=False)[0].numpy()
            err_full = float(np.abs(full - exp[b, :n]).max())
            # KV cache path: prefill half, then one token at a time.
            cache = m.new_cache(1)
            h = n // 2
            steps = [m(torch.tensor([ids[:h]]), 0, cache, last_only=False)[0].numpy()]
            for i in range(h, n):
                steps.append(m(torch.tensor([[ids[i]]]), i, cache)[0].numpy())
            err_kv = float(np.abs(np.concatenate(steps) - exp[b, :n]).max())
            good = err_full < 1e-3 and err_kv < 1e-3
            ok &= good
            print(json.dumps({"bench": "gpt2_check", "fixture": d, "row": b, "tokens": n,
                              "max_abs_err_full": err_full, "max_abs_err_kv_cache": err_kv, "pass": good}))
        gj = os.path.join(d, "generate.json")
        if os.path.exists(gj):
            with open(gj) as f:
                G = json.load(f)
            _, _, toks = gpt2_generate(m, torch, G["prompt"], G["max_new_tokens"] - 1)
            good = toks == G["expected"]
            ok &= good
            print(json.dumps({"bench": "gpt2_check", "fixture": d, "generate": toks, "expected": G["expected"],
                              "pass": good}))
    return ok


# ----------------------------------------------------------------------------- main
def child(a):
    T = int(a.threads)
    import torch
    torch.set_num_threads(1 if a.thread_policy == "blas" else T)
    if a.check_fixture:
        sys.exit(0 if check_fixture(a, torch) else 1)
    torch.matmul(torch.randn(64, 64), torch.randn(64, 64))  # load the BLAS before reporting it
    _, desc = thread_env(T, a.thread_policy)
    common = {"torch": torch.__version__, "blas": sgemm_provider(), "thread_policy": desc,
              "torch_threads": torch.get_num_threads()}
    if os.environ.get("LD_PRELOAD"):
        common["ld_preload"] = os.environ["LD_PRELOAD"]
    if os.environ.get("BLIS_ARCH_TYPE"):
        common["blis_arch_type"] = os.environ["BLIS_ARCH_TYPE"]
    if os.environ.get("LD_LIBRARY_PATH"):
        common["ld_library_path"] = os.environ["LD_LIBRARY_PATH"]
    emit = Emitter(common)
    only = a.only.split(",")
    with torch.no_grad():
        if "linear" in only:
            bench_linear(a, torch, emit, T)
        if "attention" in only:
            bench_attention(a, torch, emit, T)
        if "model" in only:
            bench_layers(a, torch, emit, T)
            if "gpt2" in a.models.split(","):
                bench_gpt2(a, torch, emit, T)


def main():
    argv = sys.argv[1:]
    a = parse_args(argv)
    if a.child:
        return child(a)
    threads = [int(t) for t in a.threads.split(",") if t]
    if a.check_fixture:
        threads = threads[:1]
    rc = 0
    for T in threads:
        env = dict(os.environ)
        extra, _ = thread_env(T, a.thread_policy)
        env.update(extra)
        if "OMP_WAIT_POLICY" not in extra:
            env.pop("OMP_WAIT_POLICY", None)
        # Strip any --threads from argv and pass one count to the child.
        rest, skip = [], False
        for x in argv:
            if skip:
                skip = False
                continue
            if x == "--threads":
                skip = True
                continue
            if x.startswith("--threads="):
                continue
            rest.append(x)
        r = subprocess.run([sys.executable, os.path.abspath(__file__), *rest, "--threads", str(T), "--child"],
                           env=env)
        rc = rc or r.returncode
        time.sleep(0.3)  # let the previous process's threads go before the next configuration
    return rc


if __name__ == "__main__":
    sys.exit(main() or 0)
