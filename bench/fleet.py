"""bench/run.py's `fleet` section: issue 24's goals for a program built for a fleet of CPUs
(`--target x86-64-all`), on GPT-2 small (examples/gpt_small.tfm, random weights), against the
single-target program of the variant it chose on this machine (the peer: the same model, the same
weights, built for one target):

  - load: `info --weights` (the whole process: exec, the plan of the chosen variant parsed, the
    weights mapped and checked), wall time and the program's own `load:` figure, medians;
  - speed: `bench --entry prefill` (128 tokens) and `--entry decode_step`, medians of the
    kernels' total time;
  - size and compile time: the executables' bytes and `--stats`' per-variant lines.

Goals: load time <= 1.05x the single-target program's; the same speed as the single-target build
of the variant it chose.
"""

import os
import re
import shutil
import statistics
import time

from run import OUT, ROOT, TFMC, Model, fmt_num, note, run, run_parts, table

THREADS = 2
PROMPT = 128


def chosen_target(exe):
    """The variant `info` says this CPU runs."""
    info, _, _ = run([exe, "info"], quiet=True)
    m = re.search(r"^target: (\S+) \(runs on this CPU", info, re.M)
    if not m:
        raise RuntimeError(f"{exe} info names no variant that runs here:\n{info[:500]}")
    return m.group(1)


def load_once(exe, weights):
    """One `info --weights` process: (wall ms, the program's load ms)."""
    start = time.perf_counter()
    out, _, _ = run([exe, "info", "--weights", weights], quiet=True)
    wall = (time.perf_counter() - start) * 1e3
    m = re.search(r"^load: ([0-9.]+) ms", out, re.M)
    return wall, float(m.group(1)) if m else float("nan")


def speed_once(model, repeat, warmup):
    """One `bench` process per entry: the kernels' median total ms."""
    prefill = model.bench(PROMPT, THREADS, repeat, warmup, entry="prefill")["total"]
    decode = model.bench(PROMPT, THREADS, max(repeat, 32), warmup, entry="decode_step")["total"]
    return prefill["median_ms"], decode["median_ms"]


def alternate(programs, rounds, measure):
    """Runs measure(program) for each program in turn, `rounds` times over (so that a drift in
    the machine's load hits every program alike). Per program, the median of each field; and
    "ratio": per field, the median over rounds of fleet ÷ single within the round."""
    samples = {name: [] for name in programs}
    for _ in range(rounds):
        for name, program in programs.items():
            samples[name].append(measure(program))
    medians = {name: [statistics.median(field) for field in zip(*rows)]
               for name, rows in samples.items()}
    medians["ratio"] = [statistics.median(f / s for f, s in zip(fleet, single))
                        for fleet, single in zip(zip(*samples["fleet"]), zip(*samples["single"]))]
    return medians


def run_fleet(h):
    note("fleet: GPT-2 small built for x86-64-all against the single-target build of the variant "
         "it runs here")
    runs = 5 if h.quick else 41
    rounds = 3 if h.quick else 9
    repeat, warmup = (5, 2) if h.quick else (15, 3)
    res = {"runs": runs, "rounds": rounds, "threads": THREADS, "prompt": PROMPT}
    h.results["fleet"] = res
    source = os.path.join(ROOT, "examples", "gpt_small.tfm")
    fleet = Model("gpt_small_fleet", source_path=source)
    # A cold kernel cache of its own: --stats then gives each variant's whole compile time.
    cold = os.path.join(OUT, "cache-fleet-cold")
    shutil.rmtree(cold, ignore_errors=True)
    stats, _, fleet.compile_seconds = run([TFMC, source, "-o", fleet.exe, "--target",
                                           "x86-64-all", "--stats", "--emit", "exe"],
                                          env={"TFMC_CACHE_DIR": cold})
    shutil.rmtree(cold, ignore_errors=True)
    # What each variant costs: "variant T (needs ...): kernel code N bytes, ..., S s".
    res["variants"] = [line for line in stats.splitlines() if line.startswith("variant ")]
    target = chosen_target(fleet.exe)
    res["target"] = target
    single = Model("gpt_small_single", source_path=source).compile(extra=["--target", target])
    single.init_weights()
    fleet.init_weights(single.weights)
    res["bytes"] = {"fleet": os.path.getsize(fleet.exe), "single": os.path.getsize(single.exe)}
    programs = {"single": single, "fleet": fleet}
    for model in programs.values():
        load_once(model.exe, model.weights)  # warm-up: page cache

    def loads():
        medians = alternate(programs, runs, lambda m: load_once(m.exe, m.weights))
        return {name: {"wall_ms": v[0], "load_ms": v[1]} for name, v in medians.items()}

    def speeds():
        medians = alternate(programs, rounds, lambda m: speed_once(m, repeat, warmup))
        return {name: {"prefill_ms": v[0], "decode_ms": v[1]} for name, v in medians.items()}

    run_parts(h, res, [("load", loads), ("speed", speeds)], "fleet:")
    for key in ("load", "speed"):
        for name, figures in (res.get(key) or {}).items():
            res[f"{key}_{name}"] = figures


def render(rep):
    res = rep.h.results.get("fleet")
    if not res:
        return
    add = rep.add
    add("## 11. Programs for a fleet of CPUs (GPT-2 small)")
    add()
    add(f"examples/gpt_small.tfm built with `--target x86-64-all` (every x86 target in one "
        f"program, the widest its CPU has chosen at load) against the same model built for the "
        f"variant it chose here, `--target {res.get('target', '?')}` (bench/fleet.py). Load: "
        f"`info --weights`, medians of {res['runs']} processes (wall time of the process, and "
        f"the program's own `load:` figure). Speed: `bench`, {res['threads']} threads, prefill "
        f"of {res['prompt']} tokens and one decode step after it: the median of "
        f"{res.get('rounds', 1)} `bench` processes' medians. The two programs alternate, "
        f"process by process. The AVX2 variant's kernels are the single-target program's own "
        f"objects (one kernel cache): any difference is the program's choice at load, or noise.")
    add()

    def get(key, field):
        r = res.get(key)
        return r.get(field) if r else None

    rows = []
    for name, key in (("single target", "single"), ("x86-64-all", "fleet")):
        rows.append([name, fmt_num(get("load_" + key, "wall_ms"), 1),
                     fmt_num(get("load_" + key, "load_ms"), 1),
                     fmt_num(get("speed_" + key, "prefill_ms"), 1),
                     fmt_num(get("speed_" + key, "decode_ms"), 2),
                     f"{res['bytes'][key] / 2**20:.2f}" if res.get("bytes") else ""])
    add(table(["program", "info --weights, wall (ms)", "load (ms)", "prefill (ms)",
               "decode step (ms)", "executable (MiB)"], rows))
    add()
    out = []

    def goal(what, value, bound):
        if value is None:
            out.append([what, "n/a", f"≤ {bound:.2f}×", "not measured"])
            return
        out.append([what, f"{value:.3f}×", f"≤ {bound:.2f}×",
                    "met" if value <= bound else "**not met**"])

    goal("load time, x86-64-all ÷ single target (process wall time)",
         get("load_ratio", "wall_ms"), 1.05)
    goal("prefill time, x86-64-all ÷ single target", get("speed_ratio", "prefill_ms"), 1.03)
    goal("decode step time, x86-64-all ÷ single target", get("speed_ratio", "decode_ms"), 1.03)
    add("Compiled with a cold kernel cache, `--stats` says what each variant cost:")
    add()
    for line in res.get("variants", []):
        add(f"- {line}")
    add()
    add("### Issue 24's goals (medians of the ratios of alternating runs; \"the same speed\" "
        "read as within 3 %)")
    add()
    add(table(["goal", "this run", "target", ""], out))
    add()
