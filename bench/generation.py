"""bench/run.py's `generation` section: issue 15's goals on GPT-2 small (examples/gpt_small.tfm,
the engines section's random weights), 2 threads, 128-token prompts, 128 new tokens:

  - batch 8 against batch 1: aggregate decode tokens/s of `generate --prompts-file` with 8
    different prompts on a binary compiled with --max-batch 8, against one prompt on the
    --max-batch 1 binary (a single prompt's best) and on the same binary;
  - beam search with 4 beams against greedy: decode steps per second (a beam step runs 4 rows);
  - sampling (temperature 0.8, top-k 50, top-p 0.95) against greedy: time per decode step;
  - the peer, in the same run: PyTorch's GPT-2 with a KV cache (bench/peers/torch_bench.py) at
    batch 1 and 8, greedy.

Every figure is the median of `runs` processes (`generate --stats`, each after one unmeasured
warm-up run), read from its stats lines.
"""

import os
import random
import re
import statistics

from run import (OUT, PEERS, PYTHON, ROOT, CommandFailed, Model, fmt_num, json_lines, note, run,
                 run_parts, table)

THREADS = 2
PROMPT, NEW = 128, 128
BATCH, BEAMS = 8, 4
SAMPLING = ["--temperature", "0.8", "--top-k", "50", "--top-p", "0.95", "--seed", "1"]

_DECODE = re.compile(r"^(?:batch \d+: )?decode: (\d+) steps in ([0-9.]+) ms, ([0-9.]+) tokens/s "
                     r"for the batch")
_REORDER = re.compile(r"KV-cache rows reordered in ([0-9.]+) ms")


def parse_stats(stderr):
    """(decode steps, decode ms, batch tokens/s, reorder ms) of one `generate --stats`."""
    steps = ms = tps = None
    reorder = 0.0
    for line in stderr.splitlines():
        m = _DECODE.search(line)
        if m:
            steps, ms, tps = int(m.group(1)), float(m.group(2)), float(m.group(3))
        m = _REORDER.search(line)
        if m:
            reorder = float(m.group(1))
    if steps is None:
        raise CommandFailed("generate --stats printed no decode line:\n" + stderr[-500:])
    return steps, ms, tps, reorder


def write_prompts(path, count, seed):
    rng = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(count):
            f.write(",".join(str(rng.randrange(50257)) for _ in range(PROMPT)) + "\n")
    return path


def timed(exe, weights, prompts, new, runs, extra=()):
    """Medians over `runs` processes: decode ms per step, batch tokens/s, reorder ms."""
    cmd = [exe, "generate", "--weights", weights, "--prompts-file", prompts, "--max-new-tokens",
           str(new), "--threads", str(THREADS), "--stats"] + list(extra)
    run(cmd, quiet=True)  # warm-up: page cache
    per_step, tps, reorder = [], [], []
    for _ in range(runs):
        _, err, _ = run(cmd, quiet=True)
        steps, ms, t, r = parse_stats(err)
        per_step.append(ms / max(steps, 1))
        tps.append(t)
        reorder.append(r)
    return {"ms_per_step": statistics.median(per_step), "tokens_per_s": statistics.median(tps),
            "reorder_ms": statistics.median(reorder), "runs": runs}


def pytorch(weights, new, runs, batch):
    out, _, _ = run([PYTHON, os.path.join(PEERS, "torch_bench.py"), "--only", "model", "--models",
                     "gpt2", "--threads", str(THREADS), "--weights", weights, "--heads", "12",
                     "--prompt", str(PROMPT), "--new-tokens", str(new), "--prefill-logits", "last",
                     "--runs", str(runs), "--batch", str(batch)], timeout=1800)
    for r in json_lines(out):
        if r.get("impl") == "torch_gpt2_kv_cache" and r.get("phase") == "decode":
            return {"tokens_per_s": r["tokens_per_s"], "ms_per_step": r["ms_per_token"]}
    raise CommandFailed("torch_bench.py printed no decode figure")


def run_generation(h):
    note("generation: GPT-2 small, batches of 8, 4 beams, sampling, against greedy batch 1 and "
         "PyTorch")
    new = 32 if h.quick else NEW
    runs = 3 if h.quick else 5
    res = {"new_tokens": new, "runs": runs, "threads": THREADS, "prompt": PROMPT}
    h.results["generation"] = res
    source = os.path.join(ROOT, "examples", "gpt_small.tfm")
    one = Model("gpt_small", source_path=source).compile()
    one.init_weights()
    eight = Model("gpt_small_b8", source_path=source).compile(extra=["--max-batch", str(BATCH)])
    eight.init_weights(one.weights)
    prompts8 = write_prompts(os.path.join(OUT, "generation_prompts8.txt"), BATCH, 8)
    prompts1 = write_prompts(os.path.join(OUT, "generation_prompts1.txt"), 1, 8)
    parts = [
        ("greedy_b1", lambda: timed(one.exe, one.weights, prompts1, new, runs)),
        ("greedy_b1_on_b8", lambda: timed(eight.exe, one.weights, prompts1, new, runs)),
        ("greedy_b8", lambda: timed(eight.exe, one.weights, prompts8, new, runs)),
        ("beams4", lambda: timed(eight.exe, one.weights, prompts1, new, runs,
                                 ["--num-beams", str(BEAMS)])),
        ("sampling_b1", lambda: timed(one.exe, one.weights, prompts1, new, runs, SAMPLING)),
        ("torch_b1", lambda: pytorch(one.weights, new, runs, 1)),
        ("torch_b8", lambda: pytorch(one.weights, new, runs, BATCH)),
    ]
    run_parts(h, res, parts, "generation:")


def render(rep):
    res = rep.h.results.get("generation")
    if not res:
        return
    add = rep.add
    add("## 9. Generation: batches, beam search, sampling (GPT-2 small)")
    add()
    add(f"examples/gpt_small.tfm with the engines section's random weights, {res['threads']} "
        f"threads, {res['prompt']}-token prompts, {res['new_tokens']} new tokens, medians of "
        f"{res['runs']} `generate --stats` processes (bench/generation.py). Batch 8: 8 different "
        f"prompts in one `--prompts-file` on a binary compiled with `--max-batch 8`; batch 1: one "
        f"prompt on the `--max-batch 1` binary (and on the batch binary). Beams: `--num-beams 4` "
        f"on the batch binary, one prompt; a beam step decodes 4 rows. Sampling: "
        f"`{' '.join(SAMPLING)}` on the batch-1 binary. PyTorch: bench/peers/torch_bench.py's "
        f"GPT-2 with a KV cache, the same weights, greedy, the same prompt repeated for batch 8.")
    add()

    def get(key, field):
        r = res.get(key)
        return r[field] if r else None

    rows = []
    for key, label in (("greedy_b1", "greedy, batch 1 (--max-batch 1 binary)"),
                       ("greedy_b1_on_b8", "greedy, batch 1 (--max-batch 8 binary)"),
                       ("greedy_b8", "greedy, batch 8"),
                       ("beams4", "beam search, 4 beams"),
                       ("sampling_b1", "sampling, batch 1"),
                       ("torch_b1", "PyTorch greedy, batch 1"),
                       ("torch_b8", "PyTorch greedy, batch 8")):
        r = res.get(key)
        if not r:
            rows.append([label, "failed", "", ""])
            continue
        rows.append([label, fmt_num(r["ms_per_step"], 2), fmt_num(r["tokens_per_s"]),
                     fmt_num(r["reorder_ms"], 1) if r.get("reorder_ms") else ""])
    add(table(["run", "ms per decode step", "decode tokens/s (all rows)", "KV rows reordered (ms)"],
              rows))
    add()
    out = []

    def goal(what, value, bound, better_high, percent=False):
        show = (lambda x: f"{100 * x:.1f} %") if percent else (lambda x: f"{x:.2f}×")
        target = ("≥ " if better_high else "≤ ") + show(bound)
        if value is None:
            out.append([what, "n/a", target, "not measured"])
            return
        met = value >= bound if better_high else value <= bound
        out.append([what, show(value), target, "met" if met else "**not met**"])

    def ratio(a, b):
        return a / b if a and b else None

    goal("batch 8 ÷ batch 1 decode tokens/s (best batch-1 binary)",
         ratio(get("greedy_b8", "tokens_per_s"), get("greedy_b1", "tokens_per_s")), 5.0, True)
    goal("batch 8 ÷ batch 1 decode tokens/s (same binary)",
         ratio(get("greedy_b8", "tokens_per_s"), get("greedy_b1_on_b8", "tokens_per_s")), 5.0, True)
    goal("4 beams ÷ greedy, beam steps per second (same binary)",
         ratio(get("greedy_b1_on_b8", "ms_per_step"), get("beams4", "ms_per_step")), 0.6, True)
    overhead = ratio(get("sampling_b1", "ms_per_step"), get("greedy_b1", "ms_per_step"))
    goal("sampling over greedy, time per decode step", overhead - 1 if overhead else None, 0.05,
         False, percent=True)
    add("### Issue 15's goals (ratios of this run)")
    add()
    add(table(["goal", "this run", "target", ""], out))
    add()
    peer = [["batch 1", ratio(get("greedy_b1", "tokens_per_s"), get("torch_b1", "tokens_per_s"))],
            ["batch 8", ratio(get("greedy_b8", "tokens_per_s"), get("torch_b8", "tokens_per_s"))]]
    add("tfmc ÷ PyTorch, greedy decode tokens/s: " + "; ".join(
        f"{name} {value:.2f}×" if value else f"{name} n/a" for name, value in peer) + ".")
    add()
    for name, value in peer:
        if value:
            rep.summary.append([f"GPT-2 small greedy decode, {name} (tokens/s)",
                                fmt_num(get("greedy_b1" if name == "batch 1" else "greedy_b8",
                                            "tokens_per_s")),
                                fmt_num(get("torch_b1" if name == "batch 1" else "torch_b8",
                                            "tokens_per_s")) + " (PyTorch)",
                                f"{1 / value:.2f}", ""])
