#!/usr/bin/python3
"""tfmc's benchmark harness: `make bench`, or `/usr/bin/python3 bench/run.py`.

Builds what it needs (tfmc, the peers in bench/peers/), compiles the models it
measures into bench/out/ with a bench-local kernel cache, runs tfmc's kernels
(`NAME bench --json`) and the peers one library at a time with pauses between
them, and writes bench/results.md (tables: median [min-max] and ratios taken in
this run) and bench/attention.png (attention time against sequence length).

  --quick   a smoke run of a minute or two (small S, few repeats)
  --only    a comma-separated subset of: limits, attention, linear, adams,
            models, engines, compile, llama, llama32, generation, encoders, fleet, serve, gguf,
            deploy (default: all);
            `make bench BENCH_ONLY=engines` passes it
  --no-build  use build/ and bench/peers/build/ as they are

Every figure is the median of >= 5 timed runs after warm-up, with min and max;
every ratio is between two figures of this run. Call Debian's /usr/bin/python3
(torch 1.13, numpy, matplotlib).
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
OUT = os.path.join(BENCH, "out")
PEERS = os.path.join(BENCH, "peers")
BUILD = os.environ.get("BUILD_DIR", os.path.join(ROOT, "build"))
TFMC = os.path.join(BUILD, "tools", "tfmc", "tfmc")
PYTHON = "/usr/bin/python3"
CACHE = os.path.join(OUT, "cache")

SECTIONS = ["limits", "attention", "linear", "adams", "models", "engines", "compile", "llama",
            "generation", "encoders", "fleet", "serve", "gguf", "llama32", "deploy"]
# Adams2019 runs after the others of the budget: a cold `--scheduler adams2019`
# compile takes minutes, and it gets what is left of the time budget. The llama
# section runs last, outside the budget (~15 minutes more: a 1.1 B model at
# three precisions in two engines; the first run also writes ~14 GB of files). llama32 (issue 46:
# the Llama 3.2 1B shape, the quantised pairs only) follows it, outside the budget too: ~8 minutes,
# ~45 the first time (it writes ~9 GB of files and runs its PyTorch checks). deploy (issue 49: one-file
# programs, replicas behind HAProxy) runs after serve, ~5 minutes.
RUN_ORDER = ["limits", "attention", "linear", "models", "engines", "compile", "adams", "llama", "llama32",
             "generation", "encoders", "fleet", "serve", "deploy", "gguf"]
# `make bench` must finish in 20 minutes on a fresh machine.
BUDGET_S = 18.5 * 60

LOG = None  # bench/out/run.log: every command and its output


def log(text):
    print(text, flush=True)
    if LOG:
        LOG.write(text + "\n")
        LOG.flush()


def note(text):
    """A line for the console and the log, prefixed so it stands out."""
    log("== " + text)


class CommandFailed(Exception):
    pass


def run(cmd, env=None, cwd=ROOT, check=True, timeout=900, quiet=False):
    """Runs a command; returns (stdout, stderr, seconds)."""
    full_env = dict(os.environ)
    full_env["TFMC_CACHE_DIR"] = CACHE
    if env:
        full_env.update(env)
    shown = " ".join(shlex.quote(c) for c in cmd)
    if env:
        shown = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " " + shown
    if LOG:
        LOG.write("$ " + shown + "\n")
    if not quiet:
        print("$ " + shown, flush=True)
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, env=full_env, cwd=cwd, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CommandFailed(f"timed out after {timeout:.0f} s: {shown}")
    except OSError as e:
        raise CommandFailed(f"cannot run {cmd[0]}: {e}")
    seconds = time.monotonic() - start
    if LOG:
        LOG.write(proc.stdout)
        LOG.write(proc.stderr)
        LOG.flush()
    if check and proc.returncode != 0:
        raise CommandFailed(f"exit {proc.returncode}: {shown}\n"
                            + (proc.stderr or proc.stdout)[-2000:])
    return proc.stdout, proc.stderr, seconds


def json_lines(text):
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return rows


def pause(seconds=1.0):
    # OpenBLAS/OpenMP workers spin after a call (bench/peers/README.md): the next library
    # must not start while they still hold a core.
    time.sleep(seconds)


def run_parts(h, results, parts, label):
    """Runs each (key, thunk) of `parts` in turn with a pause after each: results[key] is what the
    thunk returned, or None and a note naming `label` and the key when its command failed."""
    for key, part in parts:
        try:
            results[key] = part()
        except CommandFailed as e:
            results[key] = None
            h.notes.append(f"{label} {key} failed: {str(e).splitlines()[0][:200]}")
        pause(1.0)


def load_average():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


# --------------------------------------------------------------------------
# Statistics and formatting
# --------------------------------------------------------------------------

class Figure:
    """A timing: median, min, max milliseconds."""

    def __init__(self, median, lo, hi):
        self.median, self.min, self.max = float(median), float(lo), float(hi)

    @staticmethod
    def of(row, prefix=""):
        return Figure(row[prefix + "median_ms"], row[prefix + "min_ms"],
                      row[prefix + "max_ms"])

    def __add__(self, other):
        return Figure(self.median + other.median, self.min + other.min,
                      self.max + other.max)

    def scaled(self, factor):
        return Figure(self.median * factor, self.min * factor, self.max * factor)


def fmt_ms(fig, digits=None):
    if fig is None:
        return "n/a"
    def one(x):
        if digits is not None:
            return f"{x:.{digits}f}"
        if x >= 100:
            return f"{x:.0f}"
        if x >= 10:
            return f"{x:.1f}"
        if x >= 1:
            return f"{x:.2f}"
        return f"{x:.3f}"
    return f"{one(fig.median)} [{one(fig.min)}–{one(fig.max)}]"


def fmt_num(x, digits=1):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.{digits}f}"


def ratio(a, b):
    """a / b of two figures' medians (None when either is missing)."""
    if a is None or b is None or b.median <= 0:
        return None
    return a.median / b.median


def fmt_ratio(x):
    return "n/a" if x is None else f"{x:.2f}×"


def fmt_pct(x):
    return "n/a" if x is None else f"{100 * x:.0f} %"


def weight_shape(dims):
    """(N, K) of a linear step's weight argument, dims innermost first:
    [K, N] row-major, or [16, K, N / 16] in panels (tfmc --weight-layout
    panels, the CPU default)."""
    if len(dims) == 3:
        return dims[0] * dims[2], dims[1]
    return dims[1], dims[0]


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |",
             "| " + " | ".join("---" for _ in header) + " |"]
    for row in rows:
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(lines)


# --------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------

def peer_build_commands():
    """The peers' build command lines from bench/peers/README.md: the code
    lines (indented or fenced) of its section whose heading says Build."""
    readme = os.path.join(PEERS, "README.md")
    if not os.path.exists(readme):
        return None
    commands = []
    in_build, in_fence = False, False
    for line in open(readme).read().splitlines():
        if line.startswith("#"):
            in_build = line.lstrip("#").strip().lower().startswith("build")
            continue
        if line.strip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_build and (in_fence or line.startswith("    ")) and line.strip():
            commands.append(line.strip())
    return commands


def build_peers():
    """Builds the peers as bench/peers/README.md says (from bench/peers/),
    or with the lines in the peers' header comments when it has none."""
    commands = peer_build_commands()
    if commands:
        run(["bash", "-ec", "\n".join(commands)], cwd=PEERS)
        return
    note("bench/peers/README.md has no Build section: building from the peers' header comments")
    run(["bash", "-ec",
         "mkdir -p build && "
         "c++ -O3 -march=native -std=c++17 -pthread peak.cpp -o build/peak && "
         "c++ -O3 -march=native -std=c++17 -fopenmp "
         "-I/usr/include/x86_64-linux-gnu/openblas-pthread blas_bench.cpp "
         "-o build/blas_bench -lopenblas"], cwd=PEERS)


# --------------------------------------------------------------------------
# tfmc models
# --------------------------------------------------------------------------

def tfm_attention(name, mask):
    return f"""# Attention only: one decoder layer's self-attention (bench/run.py).
model {name} {{
  vocab = 1000
  d_model = 768
  heads = 12
  max_len = 4096
  positions = learned
  decoder(layers = 1) {{
    self_attention(mask = {mask})
  }}
  output = none
}}
"""


def tfm_linear(name, max_len):
    # GPT-2 small's layer: 768x768 (q, k, v, out_proj), 3072x768, 768x3072,
    # with GPT-2's epilogues (bias + gelu_tanh, bias + residual).
    return f"""# One GPT-2-small layer, for its linear kernels (bench/run.py).
model {name} {{
  vocab = 1000
  d_model = 768
  heads = 12
  d_ff = 3072
  max_len = {max_len}
  norm = pre
  activation = gelu_tanh
  positions = learned
  decoder(layers = 1) {{
    self_attention(mask = causal)
    feed_forward
  }}
  output = none
}}
"""


def tfm_layer_model(name, with_decoder):
    # nn.TransformerEncoderLayer / DecoderLayer(512, 8, 2048) defaults:
    # post-norm, relu. The decoder layer has causal self-attention, cross-
    # attention over a memory and a feed-forward; its encoder layer only makes
    # the memory, and its steps are not counted.
    what = ("One encoder and one decoder layer at d_model 512; the decoder layer is timed"
            if with_decoder else "One encoder layer at d_model 512")
    decoder = """
  decoder(layers = 1) {
    self_attention(mask = causal)
    cross_attention(mask = none)
    feed_forward
  }""" if with_decoder else ""
    return f"""# {what} (bench/run.py).
model {name} {{
  vocab = 1000
  d_model = 512
  heads = 8
  d_ff = 2048
  max_len = 512
  encoder(layers = 1) {{
    self_attention(mask = none)
    feed_forward
  }}{decoder}
  output = none
}}
"""


class Model:
    """A compiled tfmc model in bench/out/ and its weights."""

    def __init__(self, name, source_text=None, source_path=None, scheduler=None):
        self.name = name
        self.exe = os.path.join(OUT, name)
        self.weights = os.path.join(OUT, name + ".safetensors")
        if source_path is None:
            source_path = os.path.join(OUT, name + ".tfm")
            with open(source_path, "w") as f:
                f.write(source_text)
        self.source = source_path
        self.scheduler = scheduler
        self.compile_seconds = None

    # Adams2019's beam width. Its default beam search (32) took more than
    # 6 minutes per model on 2 cores, past the bench's time budget; greedy
    # search (1) is its fast-compile mode and schedules a model in seconds.
    ADAMS_BEAM_SIZE = "1"

    def compile(self, extra=(), timeout=1800):
        cmd = [TFMC, self.source, "-o", self.exe]
        env = None
        if self.scheduler:
            cmd.append(f"--scheduler={self.scheduler}")
            if self.scheduler == "adams2019":
                env = dict(os.environ, HL_BEAM_SIZE=self.ADAMS_BEAM_SIZE)
        cmd += list(extra)
        _, _, self.compile_seconds = run(cmd, env=env, timeout=timeout)
        return self

    def init_weights(self, weights=None):
        """Random weights (init-weights --seed 1), kept while the model's
        weight table is unchanged."""
        if weights:
            self.weights = weights
            return self
        info, _, _ = run([self.exe, "info"], quiet=True)
        stamp_line = "\n".join(l for l in info.splitlines() if l.startswith("weights:"))
        stamp = self.weights + ".stamp"
        if (os.path.exists(self.weights) and os.path.exists(stamp)
                and open(stamp).read() == stamp_line):
            return self
        run([self.exe, "init-weights", "--seed", "1", "--output", self.weights])
        with open(stamp, "w") as f:
            f.write(stamp_line)
        return self

    def info(self):
        text, _, _ = run([self.exe, "info"], quiet=True)
        return text

    def bench(self, seq, threads, repeat, warmup, entry="forward", batch=1):
        out, _, _ = run([self.exe, "bench", "--weights", self.weights,
                         "--seq", str(seq), "--batch", str(batch),
                         "--repeat", str(repeat), "--warmup", str(warmup),
                         "--threads", str(threads), "--entry", entry, "--json"],
                        timeout=1800)
        rows = json_lines(out)
        total = [r for r in rows if r.get("type") == "total"][0]
        steps = [r for r in rows if r.get("type") == "step"]
        ops = [r for r in rows if r.get("type") == "op"]
        return {"total": total, "steps": steps, "ops": ops}


def loc_line(loc):
    """The .tfm line of a step's loc, `loc("x.tfm":8:5)` -> 8."""
    m = re.search(r":(\d+):\d+", loc or "")
    return int(m.group(1)) if m else None


def source_lines(path, pattern):
    """Line numbers of a .tfm file whose text matches `pattern`."""
    lines = []
    with open(path) as f:
        for number, text in enumerate(f, 1):
            if re.search(pattern, text):
                lines.append(number)
    return lines


def sum_steps(steps):
    total = None
    for s in steps:
        fig = Figure.of(s)
        total = fig if total is None else total + fig
    return total


# --------------------------------------------------------------------------
# The harness
# --------------------------------------------------------------------------

class Harness:
    def __init__(self, args):
        self.args = args
        self.quick = args.quick
        self.results = {}
        self.notes = []
        self.threads = [1, 2] if (os.cpu_count() or 1) >= 2 else [1]
        self.all_threads = os.cpu_count() or 1
        self.avx512 = "avx512f" in open("/proc/cpuinfo").read()
        # Repeats: >= 5 timed runs after warm-up, always.
        self.repeat = 5 if self.quick else 7
        self.warmup = 1 if self.quick else 2
        self.gpt_weights = None
        # --dtypes: the rows to run (tfmc's and the peers' dtypes); the others are skipped.
        self.dtypes = {d.strip() for d in (getattr(args, "dtypes", "") or "").split(",") if d.strip()}

    # ---------------------------------------------------------------- limits
    def limits(self):
        note("machine limits: FMA peak, triad and read bandwidth")
        cmd = [os.path.join(PEERS, "build", "peak"),
               "--threads", ",".join(map(str, self.threads))]
        if self.quick:
            cmd.append("--quick")
        out, _, _ = run(cmd)
        rows = json_lines(out)
        lim = {"peak": {}, "triad": {}, "read": {}}
        for r in rows:
            b = r.get("bench")
            if b == "peak":
                isa = "avx512" if "512" in r.get("impl", "") else "avx2"
                lim["peak"][(isa, r["threads"])] = r
            elif b in ("triad", "read"):
                lim[b][r["threads"]] = r
        self.results["limits"] = lim
        pause()

    def peak_gflops(self, threads):
        """The FMA peak tfmc's code can reach: AVX-512 when tfmc targets it
        (host on this CPU), else AVX2."""
        lim = self.results.get("limits", {}).get("peak", {})
        isa = "avx512" if self.avx512 and ("avx512", threads) in lim else "avx2"
        r = lim.get((isa, threads))
        return (r["gflops"], isa) if r else (None, isa)

    def bandwidth(self, threads, kind="triad"):
        r = self.results.get("limits", {}).get(kind, {}).get(threads)
        return r["gbs"] if r else None

    # ------------------------------------------------------------- attention
    def attention_sizes(self):
        return [128, 512] if self.quick else [128, 512, 1024, 2048, 4096]

    def attention(self):
        note("attention: tfmc's fused kernel vs PyTorch and OpenBLAS unfused")
        sizes = self.attention_sizes()
        res = {"tfmc": {}, "adams": {}}
        models = {}
        for mask, tag in (("causal", "causal"), ("none", "full")):
            models[tag] = Model(f"attn_{tag}", tfm_attention(f"attn_{tag}", mask)).compile()
            models[tag].init_weights()
        self.attention_models = models
        for T in self.threads:
            for tag, model in models.items():
                last = None  # (S, whole forward ms) of the size before
                for S in sizes:
                    repeat, warmup = self.reps_for_size(S)
                    if last:
                        # Attention is quadratic in S: skip a size that would
                        # take more than its share of the 20-minute budget.
                        guess = last[1] * (S / last[0]) ** 2 * (repeat + warmup) / 1e3
                        if guess > self.ATTENTION_BUDGET_S:
                            self.notes.append(
                                f"tfmc attention {tag}, S = {S}, {T} thread(s) skipped: it would "
                                f"take about {guess:.0f} s ({repeat + warmup} runs at "
                                f"~{last[1] * (S / last[0]) ** 2 / 1e3:.1f} s)")
                            continue
                    b = model.bench(S, T, repeat, warmup)
                    step = [s for s in b["steps"] if s["op"] == "tfm.attention"]
                    if not step:
                        raise CommandFailed(f"{model.name}: no tfm.attention step")
                    res["tfmc"][(tag, S, T)] = Figure.of(step[0])
                    last = (S, b["total"]["median_ms"])
        pause()
        self.results["attention"] = res
        # Peers: OpenBLAS unfused, then PyTorch (both its paths).
        self.attention_peers(sizes)

    # Seconds one tfmc attention configuration may take (runs included).
    ATTENTION_BUDGET_S = 40

    def reps_for_size(self, S):
        if self.quick:
            return 5, 1
        return (5, 1) if S >= 2048 else (self.repeat, self.warmup)

    def attention_peers(self, sizes):
        res = self.results["attention"]
        cmd = [os.path.join(PEERS, "build", "blas_bench"), "--only", "attention",
               "--threads", ",".join(map(str, self.threads)),
               "--sizes", ",".join(map(str, sizes)), "--causal", "1,0",
               "--attn-impls", "qb64", "--runs", "5"]
        if self.quick:
            cmd.append("--quick")
        try:
            out, _, _ = run(cmd, timeout=1800)
            for r in json_lines(out):
                if r.get("bench") == "attention":
                    tag = "causal" if r["causal"] else "full"
                    res.setdefault(r["impl"], {})[(tag, r["S"], r["threads"])] = Figure.of(r)
                elif r.get("bench") == "attention_check" and not r.get("pass", True):
                    self.notes.append(f"OpenBLAS unfused attention failed its check: {r}")
        except CommandFailed as e:
            self.notes.append(f"OpenBLAS attention peer failed: {e}")
        pause()
        # PyTorch's attention takes seconds a run at S >= 2048 (its core runs
        # at ~20 % of peak and saves no masked work): to stay in the time
        # budget, 1 thread stops at S = 1024, and S = 4096 runs on all
        # threads only, without the whole-module variant, with a time limit.
        T = max(self.threads)
        rows = []
        if 1 in self.threads and T != 1:
            rows += self.torch_peer("attention", sizes=[S for S in sizes if S <= 1024],
                                    threads=[1])
        rows += self.torch_peer("attention", sizes=[S for S in sizes if S <= 2048],
                                threads=[T])
        if 4096 in sizes:
            rows += self.torch_peer("attention", sizes=[4096], threads=[T], timeout=240,
                                    impls="matmul_softmax,mha_core")
        for r in rows:
            tag = "causal" if r["causal"] else "full"
            res.setdefault(r["impl"], {})[(tag, r["S"], r["threads"])] = Figure.of(r)
        pause()

    # ---------------------------------------------------------------- linear
    LINEAR_SHAPES = [(2304, 768), (768, 768), (3072, 768), (768, 3072)]

    def linear_ms(self):
        return [1, 128] if self.quick else [1, 128, 1024]

    def linear(self):
        note("linear kernels: tfmc's GEMMs with epilogues vs OpenBLAS cblas_sgemm")
        Ms = self.linear_ms()
        model = Model("linear768", tfm_linear("linear768", max(Ms))).compile()
        model.init_weights()
        self.linear_model = model
        res = {"tfmc": {}, "openblas": {}, "roof": {}}
        for T in self.threads:
            for M in Ms:
                # One row is a decode step's shape: its GEMMs are planned as
                # matrix-vector products (the decode_step entry, after a
                # prefill of 16 tokens); more rows run the forward entry.
                if M == 1:
                    b = model.bench(16, T, self.repeat, self.warmup, entry="decode_step")
                else:
                    b = model.bench(M, T, self.repeat, self.warmup)
                res["tfmc"].update(self.linear_steps(b, M, T))
                res["roof"].update(self.linear_roofs(b, M, T))
        pause()
        cmd = [os.path.join(PEERS, "build", "blas_bench"), "--only", "linear",
               "--threads", ",".join(map(str, self.threads)),
               "--M", ",".join(map(str, Ms)),
               "--NK", ",".join(f"{n}x{k}" for n, k in self.LINEAR_SHAPES),
               "--runs", str(self.repeat)]
        if self.quick:
            cmd.append("--quick")
        out, _, _ = run(cmd, timeout=1800)
        for r in json_lines(out):
            if r.get("bench") == "linear" and r.get("weights", "warm") == "warm":
                res["openblas"][(r["impl"], r["M"], r["N"], r["K"], r["threads"])] = Figure.of(r)
        pause()
        self.results["linear"] = res

    @staticmethod
    def linear_steps(b, M, T):
        """tfmc's linear steps by (N, K): the weight is the second argument
        (weight_shape)."""
        found = {}
        for s in b["steps"]:
            if s["op"] != "tfm.linear":
                continue
            N, K = weight_shape(s["dims"][1])
            found.setdefault((N, K), []).append(Figure.of(s))
        out = {}
        for (N, K), figs in found.items():
            if (N, K) == (768, 768):
                # q, k, v, then out_proj (bias + residual epilogue).
                out[("qkv", M, T)] = figs[0] + figs[1] + figs[2] if len(figs) >= 3 else None
                out[(N, K, M, T)] = figs[-1]
            else:
                out[(N, K, M, T)] = figs[0]
        return out

    @staticmethod
    def linear_roofs(b, M, T):
        """The fraction of its roof (`NAME bench`'s own machine probe, same
        run: runtime/core/Roofline.h) of each linear step, keyed as
        linear_steps (q, k, v: their time-weighted mean), with its bound."""
        found = {}
        for s in b["steps"]:
            if s["op"] == "tfm.linear" and "roof_fraction" in s:
                found.setdefault(weight_shape(s["dims"][1]), []).append(s)
        out = {}
        for (N, K), steps in found.items():
            def one(s):
                return (s["roof_fraction"], s["roof"])
            if (N, K) == (768, 768) and len(steps) >= 3:
                # Each step's ops at its own speed: the fraction of the sum.
                ms = sum(s["median_ms"] for s in steps[:3])
                reach = sum(s["roof_fraction"] * s["median_ms"] for s in steps[:3]) / ms
                out[("qkv", M, T)] = (reach, steps[0]["roof"])
                out[(N, K, M, T)] = one(steps[-1])
            else:
                out[(N, K, M, T)] = one(steps[0])
        return out

    # ---------------------------------------------------------------- adams
    # Seconds `tfmc --scheduler adams2019` may take for one model: its search
    # over an attention pipeline can run for many minutes.
    ADAMS_COMPILE_TIMEOUT_S = 360

    def adams(self):
        note("Halide's Adams2019 autoscheduler vs tfmc's tile plans")
        help_text, _, _ = run([TFMC, "--help"], quiet=True)
        if "adams2019" not in help_text:
            self.results["adams"] = None
            self.notes.append("`tfmc --scheduler adams2019` is not available in this build: "
                              "section 4 skipped.")
            return
        res = {}
        self.results["adams"] = res
        self.adams_compile = {}
        T = self.all_threads

        def pair(name, text, sizes):
            """tfmc's model and, per size, an Adams2019 one compiled for that
            size (same weights); None when Adams2019 did not compile in time.
            Adams2019 tiles for its estimates (here the sequence bound,
            --max-seq): compiled for 1024 rows, its ShiftInwards splits wrote
            before the start of a 128-row output. So each size gets its own
            compile, Adams2019's best case; the tile plans are compiled once."""
            base = Model(name, text)
            if not os.path.exists(base.exe):
                base.compile()
            base.init_weights()
            adams = {}
            for S in sizes:
                tag = f"{name}_adams_{S}"
                model = Model(tag, text.replace(f"model {name} ", f"model {tag} "),
                              scheduler="adams2019")
                left = self.deadline - time.monotonic() - 60  # 60 s to measure
                timeout = min(60 if self.quick else self.ADAMS_COMPILE_TIMEOUT_S, left)
                if timeout < 20:
                    self.notes.append(f"Adams2019: no time left in the budget to compile {tag}.")
                    self.adams_compile[tag] = None
                    return None
                try:
                    model.compile(extra=["--max-seq", str(S)], timeout=timeout)
                except CommandFailed as e:
                    self.notes.append(f"Adams2019 could not compile {tag}: "
                                      f"{str(e).splitlines()[0].split(':')[0]}")
                    self.adams_compile[tag] = None
                    return None
                self.adams_compile[tag] = model.compile_seconds
                adams[S] = model.init_weights(base.weights)
            return base, adams

        # Linear kernels (and the layer's layer norms) of one GPT-2-small layer.
        Ms = [128] if self.quick else [128, 1024]
        models = pair("linear768", tfm_linear("linear768", max(self.linear_ms())), Ms)
        if models:
            base, adams = models
            for M in Ms:
                for which, model in (("tfmc", base), ("adams2019", adams[M])):
                    b = model.bench(M, T, self.repeat, self.warmup)
                    seen = set()
                    for s in b["steps"]:
                        if s["op"] == "tfm.linear":
                            N, K = weight_shape(s["dims"][1])
                            key = f"{N}×{K}, M = {M}"
                        elif s["op"] == "tfm.layer_norm":
                            key = f"d = {s['dims'][0][0]}, rows = {M}"
                        else:
                            continue
                        if (s["op"], key) in seen:
                            continue  # the first of identical kernels
                        seen.add((s["op"], key))
                        res[(s["op"], key, which)] = Figure.of(s)
                    res[("whole layer (forward)", f"M = {M}", which)] = Figure.of(b["total"])
            pause()
        # Attention.
        sizes = [128] if self.quick else [512, 2048]
        for tag, mask in (("causal", "causal"), ("full", "none")):
            models = pair(f"attn_{tag}", tfm_attention(f"attn_{tag}", mask), sizes)
            if not models:
                break  # the other mask would not schedule faster
            base, adams = models
            for S in sizes:
                for which, model in (("tfmc", base), ("adams2019", adams[S])):
                    b = model.bench(S, T, 5, 1)
                    step = [s for s in b["steps"] if s["op"] == "tfm.attention"][0]
                    res[("tfm.attention", f"{tag}, S = {S}", which)] = Figure.of(step)
            pause()

    # ---------------------------------------------------------------- models
    def models(self):
        note("whole models: encoder/decoder layers at d_model 512, GPT-2 small prefill and decode")
        res = {"tfmc": {}, "torch": []}
        seqs = [128] if self.quick else [128, 512]
        enc = Model("enc512", tfm_layer_model("enc512", with_decoder=False)).compile().init_weights()
        dec = Model("dec512", tfm_layer_model("dec512", with_decoder=True)).compile().init_weights()
        enc_lines = set(source_lines(enc.source, r"self_attention|feed_forward"))
        dec_start = source_lines(dec.source, r"decoder\(")[0]
        dec_lines = {n for n in source_lines(dec.source, r"self_attention|cross_attention|feed_forward")
                     if n > dec_start}
        for T in self.threads:
            for S in seqs:
                b = enc.bench(S, T, self.repeat, self.warmup)
                res["tfmc"][("encoder_layer", S, T)] = sum_steps(
                    [s for s in b["steps"] if loc_line(s["loc"]) in enc_lines])
                res["tfmc"][("encoder_forward", S, T)] = Figure.of(b["total"])
                b = dec.bench(S, T, self.repeat, self.warmup)
                res["tfmc"][("decoder_layer", S, T)] = sum_steps(
                    [s for s in b["steps"] if loc_line(s["loc"]) in dec_lines])
        pause()
        # GPT-2 small.
        gpt = Model("gpt_small", source_path=os.path.join(ROOT, "examples", "gpt_small.tfm")).compile()
        gpt.init_weights()
        self.gpt_weights = gpt.weights
        info = gpt.info()
        m = re.search(r"weights: \d+ tensors, (\d+) parameters, (\d+) bytes", info)
        res["gpt_weight_bytes"] = int(m.group(2)) if m else None
        prompt, new = (32, 16) if self.quick else (128, 128)
        res["gpt_prompt"], res["gpt_new"] = prompt, new
        for T in self.threads:
            b = gpt.bench(prompt, T, self.repeat, self.warmup, entry="prefill")
            res["tfmc"][("gpt_prefill", prompt, T)] = Figure.of(b["total"])
            b = gpt.bench(prompt, T, new, 4, entry="decode_step")
            res["tfmc"][("gpt_decode", prompt, T)] = Figure.of(b["total"])
            res["tfmc"][("gpt_decode_tps", prompt, T)] = b["total"]["runs_per_s"]
            res.setdefault("gpt_decode_ops", {})[T] = b["ops"]
        pause()
        heads = int(re.search(r"heads\s*=\s*(\d+)", open(gpt.source).read()).group(1))
        res["torch"] = self.torch_peer("model", seqs=seqs, prompt=prompt, new=new,
                                       weights=self.gpt_weights, heads=heads)
        self.results["models"] = res
        pause()

    # --------------------------------------------------------------- compile
    def compile_time(self):
        note("compile time: examples/gpt_small.tfm cold and warm, 2 / 12 / 24 layers")
        res = {}
        source = open(os.path.join(ROOT, "examples", "gpt_small.tfm")).read()
        layer_counts = [2, 12] if self.quick else [2, 12, 24]
        global CACHE
        saved = CACHE
        try:
            for layers in layer_counts:
                text = re.sub(r"decoder\(layers = \d+\)", f"decoder(layers = {layers})", source)
                text = text.replace("model gpt_small", f"model gpt_small_{layers}l")
                path = os.path.join(OUT, f"gpt_small_{layers}l.tfm")
                with open(path, "w") as f:
                    f.write(text)
                cold_dir = os.path.join(OUT, f"cache-cold-{layers}l")
                shutil.rmtree(cold_dir, ignore_errors=True)
                CACHE = cold_dir
                m = Model(f"gpt_small_{layers}l", source_path=path)
                m.compile()
                cold = m.compile_seconds
                warm = []
                for _ in range(1 if self.quick else 3):
                    m.compile()
                    warm.append(m.compile_seconds)
                res[layers] = (cold, sorted(warm))
                shutil.rmtree(cold_dir, ignore_errors=True)
        finally:
            CACHE = saved
        self.results["compile"] = res

    # ------------------------------------------------------------------ torch
    def torch_peer(self, what, **kw):
        """Runs bench/peers/torch_bench.py once per BLAS variant that
        bench/peers/blas_variants.sh offers and keeps, for each measurement,
        the variant with the best median (each line names its BLAS)."""
        script = os.path.join(PEERS, "torch_bench.py")
        if not os.path.exists(script):
            self.notes.append("bench/peers/torch_bench.py is missing: no PyTorch figures.")
            return []
        identity = ("bench", "impl", "S", "causal", "threads", "phase", "M", "N", "K")
        best = {}
        variants = self.blas_variants()
        if what == "attention":
            # Time: PyTorch attention at S = 4096 takes seconds a run; its
            # batched matmuls are compute-bound, where the BLAS matters least.
            variants = variants[:1]
        else:
            wanted = ("openblas-pthread", "blis-pthread", "onednn")
            variants = [v for v in variants if v[0] in wanted] or variants[:1]
        for variant, env in variants:
            cmd = [PYTHON, script, "--only", what,
                   "--threads", ",".join(map(str, self.threads))]
            if self.quick:
                cmd.append("--quick")
            if what == "attention":
                cmd += ["--sizes", ",".join(map(str, kw["sizes"]))]
                if "threads" in kw:
                    cmd[cmd.index("--threads") + 1] = ",".join(map(str, kw["threads"]))
                if "impls" in kw:
                    cmd += ["--attn-impls", kw["impls"]]
            else:
                cmd += ["--models", "encoder,decoder,gpt2",
                        "--model-sizes", ",".join(map(str, kw["seqs"])),
                        "--prompt", str(kw["prompt"]), "--new-tokens", str(kw["new"]),
                        "--weights", kw["weights"], "--heads", str(kw["heads"]),
                        # tfmc's prefill computes every position's logits.
                        "--prefill-logits", "all", "--runs", "5"]
            try:
                out, _, _ = run(cmd, env=env, timeout=kw.get("timeout", 1800))
            except CommandFailed as e:
                self.notes.append(f"PyTorch peer ({what}, {variant}) failed: "
                                  f"{str(e).splitlines()[0][:200]}")
                continue
            for r in json_lines(out):
                if "median_ms" not in r:
                    continue
                r["blas_variant"] = variant
                key = tuple(r.get(k) for k in identity)
                if key not in best or r["median_ms"] < best[key]["median_ms"]:
                    best[key] = r
            pause(2.0)
        return list(best.values())

    def blas_variants(self):
        """[(name, env)] from bench/peers/blas_variants.sh (NAME<TAB>VAR=value
        a line), or the default BLAS alone."""
        script = os.path.join(PEERS, "blas_variants.sh")
        if not os.path.exists(script):
            return [("default", {})]
        try:
            out, _, _ = run(["sh", script], quiet=True)
        except CommandFailed as e:
            self.notes.append(f"blas_variants.sh failed: {str(e).splitlines()[0]}")
            return [("default", {})]
        variants = []
        for line in out.splitlines():
            parts = line.strip().split(None, 1)
            if len(parts) != 2 or line.startswith("#"):
                continue
            env = {}
            for assignment in shlex.split(parts[1]):
                k, _, v = assignment.partition("=")
                env[k] = v
            variants.append((parts[0], env))
        if self.quick:
            variants = variants[:2]
        return variants or [("default", {})]


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------

STATE = os.path.join(OUT, "results.pickle")
STATE_FIELDS = ("results", "notes", "threads", "all_threads", "avx512", "quick",
                "started_at", "load_start", "load_end", "seconds", "only")


def save_state(h):
    """The run's raw figures, so that `--report-only` can rewrite the report."""
    import pickle
    with open(STATE, "wb") as f:
        pickle.dump({k: getattr(h, k, None) for k in STATE_FIELDS}, f)


def load_state(args):
    import pickle
    if not os.path.exists(STATE):
        sys.exit(f"bench: no {os.path.relpath(STATE, ROOT)}: run the benchmarks first")
    with open(STATE, "rb") as f:
        state = pickle.load(f)
    h = Harness(args)
    for k, v in state.items():
        setattr(h, k, v)
    return h


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default=",".join(SECTIONS))
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite the report from the last run's bench/out/results.pickle")
    parser.add_argument("--dtypes", default="",
                        help="a comma list of the engine rows to run (tfmc's dtypes: f32, int4a8, ...; "
                             "the peers': F32, Q4_0, ...); the other rows are reported skipped")
    parser.add_argument("--results", default=os.path.join(BENCH, "results.md"))
    parser.add_argument("--plot", default=os.path.join(BENCH, "attention.png"))
    args = parser.parse_args()
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    for s in only:
        if s not in SECTIONS:
            parser.error(f"--only: unknown section '{s}' ({', '.join(SECTIONS)})")

    os.makedirs(OUT, exist_ok=True)
    if args.report_only:
        import report  # bench/report.py
        h = load_state(args)
        # A partial run's report splices its sections into the existing one,
        # as the run itself did (the pickle holds only those).
        report.write(h, args.results, args.plot, only=getattr(h, "only", None),
                     everything=SECTIONS)
        note(f"rewrote {os.path.relpath(args.results, ROOT)} and "
             f"{os.path.relpath(args.plot, ROOT)} from {os.path.relpath(STATE, ROOT)}")
        return
    global LOG
    LOG = open(os.path.join(OUT, "run.log"), "w")
    started = time.monotonic()
    h = Harness(args)
    h.started_at = datetime.datetime.now().astimezone()
    h.load_start = load_average()
    note(f"tfmc bench{' --quick' if args.quick else ''}: load average at start {h.load_start}")
    if not args.no_build:
        build_peers()
    if not os.path.exists(TFMC):
        sys.exit(f"bench: {TFMC} is missing: run `make build` first (or `make bench`)")

    import report  # bench/report.py
    import engines  # bench/engines.py
    import llama  # bench/llama.py
    import llama32  # bench/llama32.py
    import generation  # bench/generation.py
    import encoders  # bench/encoders.py
    import fleet  # bench/fleet.py
    import serve  # bench/serve.py
    import deploy  # bench/deploy.py
    import gguf_bench  # bench/gguf_bench.py (bench/peers/gguf.py is the GGUF writer)
    h.deadline = started + (BUDGET_S if not args.quick else 10 * 60)
    for section in RUN_ORDER:
        if section not in only:
            continue
        try:
            {"limits": h.limits, "attention": h.attention, "linear": h.linear,
             "adams": h.adams, "models": h.models, "compile": h.compile_time,
             "engines": lambda: engines.run_engines(h), "llama": lambda: llama.run_llama(h),
             "llama32": lambda: llama32.run_llama32(h),
             "generation": lambda: generation.run_generation(h),
             "encoders": lambda: encoders.run_encoders(h),
             "fleet": lambda: fleet.run_fleet(h),
             "serve": lambda: serve.run_serve(h),
             "deploy": lambda: deploy.run_deploy(h),
             "gguf": lambda: gguf_bench.run_gguf(h)}[section]()
        except Exception as e:  # report what ran, whatever failed
            import traceback
            h.notes.append(f"section {section} failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
            log(f"bench: section {section} failed:\n{traceback.format_exc()}")
    h.load_end = load_average()
    h.seconds = time.monotonic() - started
    h.only = only
    save_state(h)
    note(f"load average at end {h.load_end}; {h.seconds:.0f} s")
    report.write(h, args.results, args.plot, only=only, everything=SECTIONS)
    note(f"wrote {os.path.relpath(args.results, ROOT)} and {os.path.relpath(args.plot, ROOT)}")


if __name__ == "__main__":
    sys.path.insert(0, BENCH)
    # report.py and engines.py import this file as `run`: the same module, so that they share
    # its log and globals instead of loading a second copy.
    sys.modules["run"] = sys.modules["__main__"]
    main()
