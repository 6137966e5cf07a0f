"""bench/results.md and bench/attention.png from a Harness run (bench/run.py)."""

import os
import platform
import subprocess

from run import (ROOT, Figure, fmt_ms, fmt_num, fmt_pct, fmt_ratio, ratio, table)

# Display names of the implementations the peers report.
IMPL_NAMES = {
    "tfmc": "tfmc (fused)",
    "openblas_unfused_qb64": "OpenBLAS unfused",
    "openblas_unfused_whole": "OpenBLAS unfused (whole S×S)",
}


def impl_name(impl):
    if impl in IMPL_NAMES:
        return IMPL_NAMES[impl]
    if impl.startswith("torch_"):
        return "PyTorch " + impl[len("torch_"):].replace("_", " ")
    return impl


def attention_flop(S, causal, H=12, D=64):
    """Useful FLOPs: Q·Kᵀ and P·V, 2·S·S·D each per head; a causal mask
    counts half the score work."""
    flop = 4.0 * H * S * S * D
    return flop / 2 if causal else flop


def roof_text(roof):
    """A step's (fraction of its roof, "memory" or "peak") from `NAME bench
    --json`, as "78 % (peak)"; "n/a" without one."""
    if not roof:
        return "n/a"
    return f"{100 * roof[0]:.0f} % ({'memory' if roof[1] == 'memory' else 'FMA peak'})"


def of_peak(h, g, T):
    """g GFLOP/s as a fraction of the AVX2 FMA peak at T threads (the issue's
    yardstick) and, where the CPU has it, of the AVX-512 peak (tfmc's host
    target enables AVX-512)."""
    lim = h.results.get("limits", {}).get("peak", {})
    if not g:
        return "n/a"
    parts = []
    for isa in ("avx2", "avx512"):
        r = lim.get((isa, T))
        if r and "gflops" in r:  # not a CPU-lacks-the-ISA record
            parts.append(f"{100 * g / r['gflops']:.0f} %")
    if not parts:
        return "n/a"
    return parts[0] + (f" ({parts[1]})" if len(parts) > 1 else "")


def gflops(flop, fig):
    return None if fig is None or fig.median <= 0 else flop / (fig.median * 1e6)


def git_describe():
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, capture_output=True, text=True).stdout.strip()
        return commit + (" + uncommitted changes" if dirty else "")
    except OSError:
        return "?"


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


class Report:
    def __init__(self, h):
        self.h = h
        self.r = h.results
        self.lines = []
        self.summary = []  # rows of the main table

    def add(self, text=""):
        self.lines.append(text)

    # ------------------------------------------------------------------ parts
    def header(self):
        h = self.h
        self.add("# tfmc benchmarks")
        self.add()
        mode = "`python3 bench/run.py --quick` (a smoke run: small sizes, few runs)" if h.quick \
            else "`make bench` (`bench/run.py`)"
        self.add(f"Written by {mode} on {h.started_at:%Y-%m-%d %H:%M %Z}, tfmc at "
                 f"{git_describe()}, in {h.seconds / 60:.1f} min.")
        isa = "AVX2 + FMA" + (" + AVX-512" if h.avx512 else "")
        self.add(f"Machine: {cpu_model()}, {h.all_threads} hardware threads, {isa}; "
                 f"tfmc's kernels target `host` ({'AVX-512' if h.avx512 else 'AVX2'}). "
                 f"Load average (1, 5, 15 min) at start {h.load_start}, at end {h.load_end}.")
        self.add()
        self.add("Each figure is the median [min–max] in milliseconds of ≥ 5 timed runs after "
                 "warm-up runs; each ratio is between two medians of this run. "
                 "**peer ÷ tfmc > 1 means tfmc is faster.** "
                 "tfmc's times are its own kernels (`NAME bench --json`, per plan step) unless a "
                 "table says whole forward. Fractions of peak use the fp32 FMA peak measured "
                 "below at the same thread count: AVX2 (8-lane FMA), and in parentheses "
                 "AVX-512 where the CPU has it (tfmc's `host` target enables it, so AVX2 "
                 "fractions above 100 % are possible); the decode roof uses the triad bandwidth. "
                 "The machine drifts (up to ~40 % over an hour on these VMs): read nothing into "
                 "differences below ~20 %.")
        self.add()

    def limits(self):
        lim = self.r.get("limits")
        if not lim:
            return
        self.add("## 1. The machine's limits")
        self.add()
        rows = []
        for isa in ("avx2", "avx512"):
            cells = []
            for T in self.h.threads:
                r = lim["peak"].get((isa, T))
                # A CPU without the ISA has a record that says it skipped.
                cells.append(f"{r['gflops']:.0f} [{r.get('gflops_best', r['gflops']):.0f} best]"
                             if r and "gflops" in r else "n/a")
            if any(c != "n/a" for c in cells):
                rows.append([f"fp32 FMA peak, {isa.upper()} (GFLOP/s)"] + cells)
        for kind, what in (("triad", "triad bandwidth (GB/s, 12 B/element)"),
                           ("read", "read bandwidth (GB/s)")):
            cells = []
            for T in self.h.threads:
                r = lim[kind].get(T)
                cells.append(f"{r['gbs']:.1f} [{r.get('gbs_best', r['gbs']):.1f} best]" if r else "n/a")
            rows.append([what] + cells)
        self.add(table(["figure"] + [f"{T} thread{'s' if T > 1 else ''}" for T in self.h.threads],
                       rows))
        self.add()
        self.add("Measured by `bench/peers/build/peak` (12 independent FMA chains per thread; "
                 "STREAM-style triad and a read-only sum over 256 MiB arrays); the median, "
                 "with the best run in brackets.")
        self.add()

    def attention(self):
        res = self.r.get("attention")
        if not res:
            return
        h = self.h
        sizes = h.attention_sizes()
        peers = [k for k in res if k not in ("tfmc", "adams") and res[k]]
        self.add("## 2. Attention: H = 12, d_head = 64, batch 1")
        self.add()
        self.add("tfmc: the `tfm.attention` step of a one-layer attention-only model "
                 "(`self_attention(mask = causal)` / `mask = none`, d_model 768). "
                 "Useful GFLOP/s count Q·Kᵀ and P·V (4·H·S²·64 FLOPs; causal: half). "
                 "Peers: " + ", ".join(impl_name(p) for p in peers) + " (bench/peers/README.md); "
                 "PyTorch with its default BLAS (OpenBLAS), on 1 thread up to S = 1024 and on "
                 "all threads up to 4096 (there without the whole-module variant), to keep the "
                 "run within its time budget.")
        self.add()
        for T in h.threads:
            peak, isa = h.peak_gflops(T)
            header = ["mask", "S", "tfmc ms", "GFLOP/s", "% of AVX2 peak (AVX-512)"]
            for p in peers:
                header += [f"{impl_name(p)} ms", "÷ tfmc"]
            rows = []
            for tag in ("causal", "full"):
                for S in sizes:
                    t = res["tfmc"].get((tag, S, T))
                    g = gflops(attention_flop(S, tag == "causal"), t)
                    row = [tag, S, fmt_ms(t), fmt_num(g, 1), of_peak(h, g, T)]
                    for p in peers:
                        f = res[p].get((tag, S, T))
                        row += [fmt_ms(f), fmt_ratio(ratio(f, t))]
                    rows.append(row)
            self.add(f"### {T} thread{'s' if T > 1 else ''}")
            self.add()
            self.add(table(header, rows))
            self.add()
        # causal / full time ratio.
        header = ["threads", "S", "tfmc"] + [impl_name(p) for p in peers]
        rows = []
        for T in h.threads:
            for S in sizes:
                row = [T, S]
                for impl in ["tfmc"] + peers:
                    row.append(fmt_num(ratio(res[impl].get(("causal", S, T)),
                                             res[impl].get(("full", S, T))), 2))
                rows.append(row)
        self.add("### Causal ÷ full time (0.5 is the ideal: the causal mask halves the work)")
        self.add()
        self.add(table(header, rows))
        self.add()
        # Summary rows: the largest S up to 2048, all threads.
        T = max(h.threads)
        S = max(s for s in sizes if s <= 2048)
        peak, _ = h.peak_gflops(T)
        for tag in ("causal", "full"):
            t = res["tfmc"].get((tag, S, T))
            best = min(((res[p][(tag, S, T)], p) for p in peers if (tag, S, T) in res[p]),
                       key=lambda x: x[0].median, default=(None, None))
            g = gflops(attention_flop(S, tag == "causal"), t)
            self.summary.append([f"attention {tag}, S = {S}, {T} threads", fmt_ms(t),
                                 f"{fmt_ms(best[0])} ({impl_name(best[1]) if best[1] else 'n/a'})",
                                 fmt_ratio(ratio(best[0], t)),
                                 f"{of_peak(h, g, T)} of AVX2 (AVX-512) FMA peak"])
        c = ratio(res["tfmc"].get(("causal", S, T)), res["tfmc"].get(("full", S, T)))
        self.summary.append([f"attention causal ÷ full time, S = {S}, {T} threads",
                             fmt_num(c, 2), "", "", "ideal 0.5"])

    def linear(self):
        res = self.r.get("linear")
        if not res:
            return
        h = self.h
        self.add("## 3. Linear kernels at GPT-2-small shapes")
        self.add()
        self.add("tfmc: the `tfm.linear` steps of one GPT-2-small layer (pre-norm, gelu_tanh) run "
                 "at S = M: 768×768 is the attention output projection (bias + residual "
                 "epilogue), 3072×768 the first FFN linear (bias + gelu_tanh), 768×3072 the "
                 "second (bias + residual). **tfmc has no 2304×768 kernel**: it computes Q, K "
                 "and V as three 768×768 linears; that row is the sum of those three steps "
                 "against one OpenBLAS 2304×768 sgemm. OpenBLAS: `cblas_sgemm` (RowMajor, x·Wᵀ, "
                 "no bias), the same weights every call; at M = 1 also `cblas_sgemv`. "
                 "tfmc's M = 1 rows are the decode step's kernels (`--entry decode_step`), "
                 "whose GEMMs are planned as matrix-vector products. "
                 "N×K is out × in, FLOPs 2·M·N·K. \"Of its roof\": `NAME bench`'s own "
                 "figure (docs/performance.md): the step's speed over min(FMA peak, read "
                 "bandwidth × FLOPs ÷ bytes), the machine measured by the program in the "
                 "same run; above 100 % where the weights stay in the last-level cache "
                 "between calls (M = 1 here: one layer's weights, the same every call).")
        self.add()
        for T in h.threads:
            peak, _ = h.peak_gflops(T)
            rows = []
            for M in h.linear_ms():
                for N, K in h.LINEAR_SHAPES:
                    if (N, K) == (2304, 768):
                        t = res["tfmc"].get(("qkv", M, T))
                        roof = res.get("roof", {}).get(("qkv", M, T))
                        name = "2304×768 (tfmc: 3 × 768×768)"
                    else:
                        t = res["tfmc"].get((N, K, M, T))
                        roof = res.get("roof", {}).get((N, K, M, T))
                        name = f"{N}×{K}"
                    b = res["openblas"].get(("openblas_sgemm", M, N, K, T))
                    g = gflops(2.0 * M * N * K, t)
                    row = [M, name, fmt_ms(t), fmt_num(g, 1), of_peak(h, g, T),
                           roof_text(roof)]
                    if M == 1:
                        # The same weights every call: they may sit in cache.
                        gbs = None if t is None else 4.0 * N * K / (t.median * 1e6)
                        row[-1] += f"; weights read at {fmt_num(gbs, 0)} GB/s"
                    row += [fmt_ms(b), fmt_num(gflops(2.0 * M * N * K, b), 1),
                            fmt_ratio(ratio(b, t))]
                    v = res["openblas"].get(("openblas_sgemv", M, N, K, T))
                    row += [fmt_ms(v) if M == 1 else "", fmt_ratio(ratio(v, t)) if M == 1 else ""]
                    rows.append(row)
            self.add(f"### {T} thread{'s' if T > 1 else ''}")
            self.add()
            self.add(table(["M", "N×K", "tfmc ms", "GFLOP/s", "% of AVX2 peak (AVX-512)",
                            "of its roof (`NAME bench`)",
                            "OpenBLAS sgemm ms", "GFLOP/s", "sgemm ÷ tfmc",
                            "OpenBLAS sgemv ms (M = 1)", "sgemv ÷ tfmc"], rows))
            self.add()
        T = max(h.threads)
        peak, _ = h.peak_gflops(T)
        for M, N, K in ((128, 768, 768), (1024, 3072, 768), (1, 768, 3072)):
            if M not in h.linear_ms():
                continue
            t = res["tfmc"].get((N, K, M, T))
            impl = "openblas_sgemv" if M == 1 else "openblas_sgemm"
            b = res["openblas"].get((impl, M, N, K, T))
            g = gflops(2.0 * M * N * K, t)
            roof = res.get("roof", {}).get((N, K, M, T))
            self.summary.append([f"linear M = {M}, {N}×{K}, {T} threads", fmt_ms(t),
                                 f"{fmt_ms(b)} (OpenBLAS {impl.split('_')[1]})",
                                 fmt_ratio(ratio(b, t)),
                                 f"{of_peak(h, g, T)} of AVX2 (AVX-512) FMA peak; "
                                 f"{roof_text(roof)} of its roof"])

    def adams(self):
        if "adams" not in self.r:
            return
        res = self.r["adams"]
        self.add("## 4. Halide's Adams2019 autoscheduler vs tfmc's tile plans")
        self.add()
        if res is None:
            self.add("Not available: this build's `tfmc --help` has no `--scheduler adams2019`.")
            self.add()
            return
        if not res:
            self.add("No figures (the comparison failed; see the notes at the end).")
            self.add()
            return
        self.add("The same models compiled twice, `tfmc MODEL` and `tfmc MODEL --scheduler "
                 f"adams2019`, each kernel timed in its model on {self.h.all_threads} threads "
                 "(identical kernels: the first step). > 1 means tfmc's tile plan is faster. "
                 "Adams2019 runs with `HL_BEAM_SIZE=1` (greedy search, its fast-compile mode): "
                 "its default beam search took over 6 minutes per model here.")
        self.add()
        keys = []
        for (op, shape, which) in res:
            if (op, shape) not in keys:
                keys.append((op, shape))
        rows = []
        for op, shape in keys:
            t = res.get((op, shape, "tfmc"))
            a = res.get((op, shape, "adams2019"))
            rows.append([op, shape, fmt_ms(t), fmt_ms(a), fmt_ratio(ratio(a, t))])
        self.add(table(["kernel", "shape", "tfmc tile plan ms", "Adams2019 ms",
                        "Adams2019 ÷ tfmc"], rows))
        self.add()
        for op in ("tfm.attention", "tfm.linear"):
            sel = [(shape, res.get((o, shape, "tfmc")), res.get((o, shape, "adams2019")))
                   for o, shape in keys if o == op]
            if sel:
                shape, t, a = sel[-1]
                self.summary.append([f"Adams2019 vs tile plan: {op}, {shape}", fmt_ms(t),
                                     f"{fmt_ms(a)} (Adams2019)", fmt_ratio(ratio(a, t)), ""])

    def models(self):
        res = self.r.get("models")
        if not res:
            return
        h = self.h
        torch = res.get("torch", [])
        self.add("## 5. Whole models")
        self.add()
        self.add("Encoder / decoder layer: d_model 512, 8 heads, d_ff 2048, post-norm, relu, "
                 "batch 1, vs `nn.TransformerEncoderLayer` / `nn.TransformerDecoderLayer` "
                 "(causal self-attention, cross-attention over a memory of the same length). "
                 "tfmc's figure is the sum of the layer's kernel medians (the steps whose `loc` "
                 "is the layer's sublayer lines; embedding and positions are left out).")
        self.add()

        def torch_fig(impl, **match):
            rows = [r for r in torch if r.get("impl") == impl
                    and all(r.get(k) == v for k, v in match.items())]
            if not rows:
                return None, None
            best = min(rows, key=lambda r: r["median_ms"])
            return Figure.of(best), best

        rows = []
        for layer in ("encoder_layer", "decoder_layer"):
            for T in h.threads:
                for S in ([128] if h.quick else [128, 512]):
                    t = res["tfmc"].get((layer, S, T))
                    p, pr = torch_fig(f"torch_transformer_{layer}", S=S, threads=T)
                    rows.append([layer.replace("_", " "), S, T, fmt_ms(t), fmt_ms(p),
                                 fmt_ratio(ratio(p, t)), peer_config(pr)])
        self.add(table(["model", "S", "threads", "tfmc ms", "PyTorch ms", "PyTorch ÷ tfmc",
                        "PyTorch set-up"], rows))
        self.add()
        T = max(h.threads)
        for layer in ("encoder_layer", "decoder_layer"):
            t = res["tfmc"].get((layer, 128, T))
            p, pr = torch_fig(f"torch_transformer_{layer}", S=128, threads=T)
            self.summary.append([f"{layer.replace('_', ' ')} d512, S = 128, {T} threads",
                                 fmt_ms(t), f"{fmt_ms(p)} (PyTorch)", fmt_ratio(ratio(p, t)), ""])

        prompt, new = res["gpt_prompt"], res["gpt_new"]
        wbytes = res.get("gpt_weight_bytes")
        self.add(f"### GPT-2 small (examples/gpt_small.tfm, random weights)")
        self.add()
        # Bytes read per decode token: every weight once (the tied 154 MB head
        # included) plus the K and V cache rows attended (12 layers x 768 floats
        # each, at the mean position of the decode run).
        mean_pos = prompt + new / 2
        kv_bytes = 2 * 12 * 768 * 4 * mean_pos
        per_token = (wbytes + kv_bytes) if wbytes else None
        self.add(f"Prefill of {prompt} tokens (the `prefill` entry: logits for every position, "
                 f"the KV cache filled) and {new} decode steps after it (`decode_step`, one token "
                 "each, over the KV cache); tokens/s = steps ÷ their total time. PyTorch: a "
                 "GPT-2-small with a KV cache loading the same weights file "
                 "(bench/peers/torch_bench.py), the best BLAS of bench/peers/blas_variants.sh. "
                 f"Bandwidth roof: triad bandwidth ÷ bytes read per token "
                 f"({per_token / 1e6:.0f} MB: every weight, the tied head included, plus the "
                 f"K/V cache at the mean position {mean_pos:.0f})." if per_token else "")
        self.add()
        rows = []
        for T in h.threads:
            t = res["tfmc"].get(("gpt_prefill", prompt, T))
            p, pr = torch_fig("torch_gpt2_kv_cache", phase="prefill", threads=T)
            rows.append([f"prefill {prompt} tokens (ms)", T, fmt_ms(t), fmt_ms(p),
                         fmt_ratio(ratio(p, t)), "", peer_config(pr)])
            d = res["tfmc"].get(("gpt_decode", prompt, T))
            tps = res["tfmc"].get(("gpt_decode_tps", prompt, T))
            p, pr = torch_fig("torch_gpt2_kv_cache", phase="decode", threads=T)
            ptps = pr.get("tokens_per_s") if pr else None
            # The peer's figure is the time of all its decode steps.
            p = p.scaled(1.0 / new) if p else None
            bw = h.bandwidth(T)
            roof = bw * 1e9 / per_token if bw and per_token else None
            rows.append([f"decode step (ms)", T, fmt_ms(d), fmt_ms(p), fmt_ratio(ratio(p, d)),
                         "", peer_config(pr)])
            rows.append([f"decode tokens/s over {new} tokens", T, fmt_num(tps, 1),
                         fmt_num(ptps, 1), fmt_ratio(tps / ptps if tps and ptps else None),
                         f"roof {fmt_num(roof, 1)} tok/s: tfmc at {fmt_pct(tps / roof if tps and roof else None)}",
                         ""])
            if T == max(h.threads):
                self.summary.append([f"GPT-2 small prefill {prompt} tokens, {T} threads",
                                     fmt_ms(t), f"{fmt_ms(torch_fig('torch_gpt2_kv_cache', phase='prefill', threads=T)[0])} (PyTorch)",
                                     fmt_ratio(ratio(torch_fig('torch_gpt2_kv_cache', phase='prefill', threads=T)[0], t)), ""])
                self.summary.append([f"GPT-2 small decode, {T} threads (tokens/s)",
                                     fmt_num(tps, 1), f"{fmt_num(ptps, 1)} (PyTorch, KV cache)",
                                     fmt_ratio(tps / ptps if tps and ptps else None),
                                     f"{fmt_pct(tps / roof if tps and roof else None)} of the bandwidth roof ({fmt_num(roof, 1)} tok/s)"])
        self.add(table(["figure", "threads", "tfmc", "PyTorch", "tfmc speed-up", "roof",
                        "PyTorch set-up"], rows))
        self.add()
        ops = res.get("gpt_decode_ops", {}).get(max(h.threads))
        if ops:
            total = sum(o["median_sum_ms"] for o in ops)
            self.add(f"Where a decode step's time goes ({max(h.threads)} threads, sum of kernel "
                     "medians): " + ", ".join(
                         f"{o['op']} {o['median_sum_ms']:.2f} ms ({100 * o['median_sum_ms'] / total:.0f} %)"
                         for o in sorted(ops, key=lambda o: -o["median_sum_ms"])) + ".")
            self.add()

    def compile_time(self):
        res = self.r.get("compile")
        if not res:
            return
        self.add("## 6. Compile time")
        self.add()
        self.add("`tfmc examples/gpt_small.tfm` with the layer count changed (wall time of the "
                 "whole command: parse, passes, Halide, link). Cold: an empty kernel cache; "
                 "warm: the same command again (median [min–max] of the warm runs).")
        self.add()
        rows = []
        for layers, (cold, warm) in sorted(res.items()):
            wfig = Figure(warm[len(warm) // 2], warm[0], warm[-1])
            rows.append([layers, f"{cold:.1f}", f"{fmt_ms(wfig, 2)}"])
        self.add(table(["layers", "cold (s)", "warm (s)"], rows))
        self.add()
        if 12 in res:
            cold, warm = res[12]
            self.summary.append(["compile GPT-2 small, cold / warm kernel cache (s)",
                                 f"{cold:.1f} / {warm[len(warm) // 2]:.2f}", "", "", ""])

    def notes(self):
        if not self.h.notes:
            return
        self.add("## Notes from this run")
        self.add()
        for n in self.h.notes:
            self.add("- " + n.replace("\n", " "))
        self.add()

    def reproduce(self):
        self.add("## Reproducing")
        self.add()
        self.add("`make bench` (installs missing Debian packages and, from npm, the engines of "
                 "section 7; builds tfmc and the peers, runs `bench/run.py`, ~20 min on 2 cores); "
                 "`make bench BENCH_ONLY=engines` (or `bench/run.py --only engines`) for one section "
                 "(`BENCH_ONLY=llama`: section 8, ~15 min more, outside the 20; `BENCH_ONLY=generation`: "
                 "section 9, ~5 min; `BENCH_ONLY=limits,encoders`: section 10, ~4 min; `BENCH_ONLY=fleet`: section 11, ~2 min; "
                 "`BENCH_ONLY=serve`: section 12, ~2–5 min; `BENCH_ONLY=gguf`: section 13, ~10 min; "
                 "`BENCH_ONLY=llama32`: section 14, ~8 min more, outside the 20, ~45 the first time; "
                 "`BENCH_ONLY=limits,deploy`: section 15, ~5 min); "
                 "`/usr/bin/python3 bench/run.py --quick` for a smoke run. Every command and its "
                 "output: `bench/out/run.log`.")
        self.add()

    def render(self):
        self.header()
        body_start = len(self.lines)
        self.limits()
        self.attention()
        self.linear()
        self.adams()
        self.models()
        self.compile_time()
        import engines  # bench/engines.py
        engines.render(self)
        import llama  # bench/llama.py
        llama.render(self)
        import generation  # bench/generation.py
        generation.render(self)
        import encoders  # bench/encoders.py
        encoders.render(self)
        import fleet  # bench/fleet.py
        fleet.render(self)
        import serve  # bench/serve.py
        serve.render(self)
        import gguf_bench  # bench/gguf_bench.py
        gguf_bench.render(self)
        import llama32  # bench/llama32.py
        llama32.render(self)
        import deploy  # bench/deploy.py
        deploy.render(self)
        self.notes()
        self.reproduce()
        summary = ["## Summary", "",
                   table(["benchmark", "tfmc", "best peer", "peer ÷ tfmc", "tfmc vs the machine"],
                         self.summary), ""]
        self.lines[body_start:body_start] = summary
        return "\n".join(self.lines) + "\n"


def peer_config(row):
    if not row:
        return ""
    return row.get("blas_variant", "")


def plot(h, path):
    res = h.results.get("attention")
    if not res:
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    impls = ["tfmc"] + [k for k in res if k not in ("tfmc", "adams") and res[k]]
    threads = h.threads
    fig, axes = plt.subplots(len(threads), 2, figsize=(11, 4.2 * len(threads)),
                             squeeze=False, sharex=True)
    markers = "osD^v<>p*"
    for i, T in enumerate(threads):
        for j, tag in enumerate(("causal", "full")):
            ax = axes[i][j]
            for n, impl in enumerate(impls):
                pts = sorted((S, f) for (t, S, th), f in res[impl].items()
                             if t == tag and th == T)
                if not pts:
                    continue
                xs = [p[0] for p in pts]
                ys = [p[1].median for p in pts]
                lo = [p[1].median - p[1].min for p in pts]
                hi = [p[1].max - p[1].median for p in pts]
                ax.errorbar(xs, ys, yerr=[lo, hi], marker=markers[n % len(markers)],
                            linewidth=2.5 if impl == "tfmc" else 1.3, capsize=3,
                            label=impl_name(impl))
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(f"{tag} mask, {T} thread{'s' if T > 1 else ''}")
            ax.set_xlabel("sequence length S")
            ax.set_ylabel("time (ms, median; bars: min–max)")
            ax.grid(True, which="both", alpha=0.3)
            sizes = h.attention_sizes()
            ax.set_xticks(sizes)
            ax.set_xticklabels([str(s) for s in sizes])
            ax.legend(fontsize=8)
    fig.suptitle("Attention, H = 12, d_head = 64, batch 1: tfmc's fused kernel vs peers "
                 "(lower is better)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def numbered_sections(text):
    """{"8": "## 8. ...\n...", ...}: each numbered section ("## N. title") of a report, up to
    the next "## " header."""
    sections, number, lines = {}, None, []
    for line in text.splitlines(keepends=True):
        if line.startswith("## "):
            if number:
                sections[number] = "".join(lines)
            head = line[3:].split(".", 1)[0]
            number, lines = (head if head.isdigit() else None), []
        if number:
            lines.append(line)
    if number:
        sections[number] = "".join(lines)
    return sections


def splice(old, new, note):
    """`old` (the whole report of an earlier run) with each numbered section that `new` (a run of
    some sections) has replaced by new's, `note` under its header; old's other sections, its
    summary included, stay as they were. A section old lacks goes after old's last section of a
    lower number (before the notes and Reproducing), or at the end when there is none."""
    fresh = numbered_sections(new)
    out = []
    for number, section in numbered_sections(old).items():
        if number in fresh:
            header, _, body = fresh[number].partition("\n")
            section = f"{header}\n\n{note}\n{body}"
        out.append((number, section))
    missing = [n for n in fresh if n not in dict(out)]
    text = old
    for number, section in out:
        text = text.replace(numbered_sections(old)[number], section, 1)
    for number in sorted(missing, key=int):
        header, _, body = fresh[number].partition("\n")
        block = f"{header}\n\n{note}\n{body}".rstrip("\n") + "\n\n"
        sections = numbered_sections(text)
        lower = [n for n in sections if int(n) < int(number)]
        if not lower:
            text = text.rstrip("\n") + "\n\n" + block
            continue
        last = sections[max(lower, key=int)]
        at = text.index(last) + len(last)
        text = text[:at].rstrip("\n") + "\n\n" + block + text[at:]
    return text


def write(h, results_path, plot_path, only=None, everything=None):
    """The report of run `h` to results_path. A run of some sections (`only`, a subset of
    `everything`) replaces only its sections in an existing report, each saying so."""
    text = Report(h).render()
    partial = only is not None and everything is not None and set(only) != set(everything)
    if partial and os.path.exists(results_path):
        with open(results_path) as f:
            old = f.read()
        note = (f"*This section comes from a separate run, `bench/run.py --only {','.join(only)}` "
                f"on {h.started_at:%Y-%m-%d %H:%M %Z}, tfmc at {git_describe()}, "
                f"{h.seconds / 60:.1f} min, on {cpu_model()}, load average {h.load_start} at "
                f"start and {h.load_end} at end; the other sections are an earlier run's.*\n")
        text = splice(old, text, note)
    with open(results_path, "w") as f:
        f.write(text)
    plot(h, plot_path)
