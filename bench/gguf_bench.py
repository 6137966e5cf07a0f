"""bench/run.py's `gguf` section: issue 31's goals for GGUF files (`tfmc model.gguf -o NAME`,
`NAME generate --weights model.gguf`), on bench/llama.py's TinyLlama-1.1B-shaped checkpoint
(random weights) and the GGUF files bench/peers/gguf_llama.py writes from it (Llama.write_gguf):

1. Compile: `tfmc tinyllama_q8_0.gguf -o NAME` with an empty kernel cache (TFMC_CACHE_DIR a new,
   empty directory), wall time, then again with the cache that run filled (Llama.compile_times).
2. Load: `NAME info --weights W`'s own `load:` figure (map, page-in, checks and any conversion;
   the process's wall time beside it), where the file's layout is the program's: Q8_0 (tfmc's
   int8 blocks with a group of 32) and a file that is Q4_0 everywhere (int4), both used in place,
   against an f32 safetensors file of the same bytes:
   a checkpoint of the same family written by llama_checkpoint.py with fewer layers and a vocabulary
   sized so that its model.safetensors is as large as the GGUF file, compiled with `--weight-layout
   rows` (its f32 weights mapped in place: no conversion either). Both programs read the same
   number of bytes from a warm page cache, cached the same way: each file is first dropped from
   the page cache (posix_fadvise DONTNEED) and read through once in order (so that how it was
   written, by which tool, in what pieces, does not decide the size of its cached pages, which
   MAP_POPULATE's cost follows: 9 ms against 57 ms for two files of 1.17 GB in one run before),
   then read by one process before the timed ones; the processes alternate, and the figures are
   medians.
3. Decode: tokens/s of `generate --stats` (bench/engines.py's time_generate) of the program
   compiled from the Q8_0 GGUF on the .gguf, against tfmc's own files: the program compiled from
   the checkpoint with `--weight-dtype int8` (groups of 64) on its `convert-weights` file, and the
   GGUF's own program (groups of 32) on the `convert-weights` file it writes from the .gguf (the
   same values in tfmc's safetensors: the like-for-like comparison, since groups of 32 read 3 % more
   scale bytes than 64); the same for an all-Q4_0 file against `--weight-dtype int4`; and the Q4_0
   file llama-quantize makes (its output head Q6_K, an int8 head in tfmc). llama.cpp (npm
   node-llama-cpp, bench/peers/llama_bench.mjs, the engines' runner) on the same GGUF files is the
   peer.

Every measurement first waits (within QUIET_BUDGET_S for the whole section) for a quiet machine, as
bench/serve.py's does (other processes under 0.1 cores), and records how many cores other processes
used while it ran. No fp32 reference runs here (section 8 has it): the ids each row generates from
the timing prompt are compared between rows instead (the GGUF program and tfmc's own file of the same
values must agree exactly).
"""

import os
import random
import re
import statistics

from engines import Row, reason, stamp_ok, write_stamp
from llama import SHAPE, Llama, shape_of, write_checkpoint
from run import OUT, TFMC, CommandFailed, Figure, fmt_ms, note, pause, run, table
from serve import NOISY_CORES, Measure

PROMPT = 32           # ids in the timing prompt (decode is the measure; prefill is reported only)
NEW_TOKENS = 32       # decode steps timed per run (after the prefill's token)
LOAD_RUNS = 7         # timed `info --weights` processes per file, after one
QUIET_BUDGET_S = 60   # how long the section may wait for a quiet machine, in all
# Issue 31's goals.
COMPILE_GOAL_S = 20.0
LOAD_GOAL = 1.2
# "As fast as tfmc's own files": within 3 %, as issue 24 read "the same speed".
DECODE_GOAL = 0.97
PEER_GOAL = 1.2       # issue 14's against llama.cpp (not an issue 31 goal)

# The GGUF files: tag -> (gguf_llama.py --dtype, its --type overrides, what the file holds).
FILES = {
    "q8_0": ("q8_0", (), "Q8_0 matrices, embedding and output head; norms F32"),
    "q4_0": ("q4_0", (), "llama-quantize's Q4_0: Q4_0 matrices and embedding, the output head Q6_K"),
    "q4_0_pure": ("q4_0", ("output.weight=q4_0",), "Q4_0 everywhere, the output head included"),
}


def same_bytes_shape(target_bytes, s=SHAPE):
    """The checkpoint shape (SHAPE with fewer layers and another vocabulary) whose f32
    model.safetensors holds `target_bytes` bytes of weights."""
    s = shape_of(s)
    d = s["d_model"]
    per_layer = 2 * d * s["q"] + 2 * d * s["kv"] + 3 * d * s["d_ff"] + 2 * d
    elements = target_bytes / 4
    layers = max(1, int((elements - 2 * s["vocab"] * d - d) // per_layer))
    vocab = round((elements - layers * per_layer - d) / (2 * d))
    return dict(SHAPE, layers=layers, vocab=vocab)


_LOAD = re.compile(r"^load: ([0-9.]+) ms \(map, page-in and check ([0-9.]+) ms, "
                   r"(?:no conversion|conversion ([0-9.]+) ms \((\d+) tensors?\))", re.M)


class Gguf(Llama):
    def __init__(self, h):
        super().__init__(h, key="gguf")
        # One thread count: section 8 found every engine fastest at 2 threads at this shape, and the
        # section keeps to ~10 minutes.
        self.threads = [max(h.threads)]
        self.measure = Measure(QUIET_BUDGET_S)  # Llama.measured: every measurement on a quiet machine
        rng = random.Random(7)
        prompt = [rng.randrange(3, SHAPE["vocab"]) for _ in range(PROMPT)]
        # node_peer's check line generates from the timing prompt: its ids are compared in render.
        self.res["check"] = {"timing_prompt": prompt, "prompt": prompt, "expected": [0] * (NEW_TOKENS + 1)}
        self.res.update({"files": {}, "load": [], "foreign": [], "threads": self.threads,
                         "prompt": PROMPT, "quiet_budget_s": QUIET_BUDGET_S})

    def judge(self, row, ids):
        """llama.cpp's ids from the timing prompt (node_peer): kept, compared across rows."""
        row.ids = list(ids)
        row.check = {"ids": row.ids, "ok": True, "steps": 0, "agree": len(row.ids)}

    # ------------------------------------------------------------------ inputs
    def inputs(self):
        self.make_checkpoint()
        for tag, (arg, types, what) in FILES.items():
            path = self.write_gguf(arg, types, tag)
            self.res["files"][tag] = {"path": path, "bytes": os.path.getsize(path), "what": what}

    def program(self, name, source, flags=()):
        exe = os.path.join(OUT, name)
        run([TFMC, source, "-o", exe] + list(flags), timeout=1800)
        return exe

    def converted(self, exe, source, output):
        """`exe convert-weights` of `source` into `output` (tfmc's own file), unless made already."""
        if not stamp_ok(output, source):
            run([exe, "convert-weights", "--weights", source, "--output", output], timeout=1800)
            write_stamp(output, source)
        return output

    def same_bytes(self, tag):
        """(program, weights): the f32 checkpoint as large as GGUF file `tag`, compiled with
        --weight-layout rows."""
        target = self.res["files"][tag]["bytes"]
        shape = same_bytes_shape(target)
        directory = os.path.join(OUT, f"gguf_f32_same_{tag}_hf")
        weights = write_checkpoint(directory, shape)
        exe = self.program(f"gguf_f32_same_{tag}", directory, ["--weight-layout", "rows"])
        self.res["files"][tag].update(same_shape=shape, same_bytes=os.path.getsize(weights))
        return exe, weights

    # ------------------------------------------------------------------ 2. load
    @staticmethod
    def load_once(exe, weights):
        out, _, seconds = run([exe, "info", "--weights", weights], quiet=True)
        m = _LOAD.search(out)
        if not m:
            raise CommandFailed(f"{os.path.basename(exe)} info printed no load line:\n{out[-500:]}")
        return {"wall": seconds * 1e3, "load": float(m.group(1)), "map": float(m.group(2)),
                "convert": float(m.group(3) or 0), "converted": int(m.group(4) or 0)}

    @staticmethod
    def recache(path):
        """Drops `path` from the page cache and reads it through once, in order: every file
        compared is then cached the same way, whatever wrote it."""
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            while os.read(fd, 1 << 20):
                pass
        finally:
            os.close(fd)

    def load_times(self, label, entries):
        """entries: [(key, what, exe, weights)]; each file recached, one process each to warm
        the page cache, then LOAD_RUNS rounds, the entries alternating. Appends one record per
        entry."""
        def measure():
            for _, _, exe, weights in entries:
                self.recache(weights)
                self.load_once(exe, weights)
            runs = {key: [] for key, _, _, _ in entries}
            for _ in range(LOAD_RUNS):
                for key, _, exe, weights in entries:
                    runs[key].append(self.load_once(exe, weights))
            return runs
        runs = self.measured(f"load: {label}", measure)
        for key, what, exe, weights in entries:
            r = runs[key]
            fig = lambda k: Figure(statistics.median(x[k] for x in r), min(x[k] for x in r),
                                   max(x[k] for x in r))
            self.res["load"].append({"key": key, "what": what, "bytes": os.path.getsize(weights),
                                     "load": fig("load"), "map": fig("map"), "convert": fig("convert"),
                                     "wall": fig("wall"), "converted": r[0]["converted"]})
        pause()

    # ------------------------------------------------------------------ 3. decode
    def tfmc_rows(self, label, specs):
        """specs: [(key, label, exe, weights, fmt)]: one Row each, their `generate --stats` processes
        (bench/engines.py's generate_once) alternating round by round, so that the rows compared meet
        the same machine; the first round is not counted (it warms the page cache)."""
        rows = []
        for key, what, exe, weights, fmt in specs:
            row = Row("tfmc", key, fmt)
            row.label, row.file_bytes, row.rounds = what, os.path.getsize(weights), []
            self.res["rows"].append(row)
            rows.append((row, exe, weights))
        T = self.threads[-1]
        prompt = ",".join(map(str, self.res["check"]["timing_prompt"]))

        def measure():
            for i in range(1 + self.runs):
                for row, exe, weights in rows:
                    if row.skip:
                        continue
                    try:
                        p, d, ids = self.generate_once(exe, weights, prompt, T, quiet=i > 0)
                    except CommandFailed as e:
                        row.skip = f"failed: {reason(e)}"
                        self.h.notes.append(f"gguf: tfmc {row.label}: {row.skip}")
                        continue
                    if i == 0:
                        row.ids = ids
                    else:
                        row.rounds.append((p, d))
        self.measured(f"decode: tfmc {label}", measure)
        for row, _, _ in rows:
            if row.skip or not row.rounds:
                continue
            pre = [p for p, _ in row.rounds]
            row.prefill[T] = Figure(statistics.median(pre), min(pre), max(pre))
            row.decode_tps[T] = statistics.median(d for _, d in row.rounds)
            row.check = {"ids": row.ids, "ok": True, "steps": 0, "agree": len(row.ids or [])}
        pause(2.0)

    def llama_row(self, key, label, path, fmt):
        row = Row("llama.cpp", key, fmt, kv_bytes=2)
        row.label = label
        self.res["rows"].append(row)
        if not (self.npm_has("node-llama-cpp") and self.npm_has("@node-llama-cpp/linux-x64")):
            row.skip = "node-llama-cpp or @node-llama-cpp/linux-x64 is not installed (make bench-npm)"
            return row
        arg, types, _ = FILES[key]
        _, write = self.gguf_file(arg, types, key)
        # Both thread counts (its best is taken): llama.cpp's threads spin at their barriers, and on a
        # busy machine its 2-thread decode can fall far below its 1-thread one.
        threads, self.threads = self.threads, self.h.threads
        try:
            self.measured(f"decode: llama.cpp {label}",
                          lambda: self.file_peer(row, self.weights, path, write, "llama_bench.mjs",
                                                 "llama_check"))
        finally:
            self.threads = threads
        pause(2.0)
        return row


def run_gguf(h):
    note("gguf: issue 31 (GGUF files): compile, load and decode against tfmc's own files and llama.cpp")
    e = Gguf(h)
    e.inputs()
    files = {tag: f["path"] for tag, f in e.res["files"].items()}
    hf = e.checkpoint
    # 1. Compile time of the Q8_0 file, cold and warm kernel cache.
    e.source = files["q8_0"]
    try:
        e.measured("compile: tfmc tinyllama_q8_0.gguf (cold, warm)", e.compile_times)
    except CommandFailed as err:
        h.notes.append(f"gguf: compile time not measured: {reason(err)}")
    # The programs (the bench's kernel cache) and tfmc's own files.
    q8 = e.program("gguf_q8_0", files["q8_0"])
    q4 = e.program("gguf_q4_0", files["q4_0"])
    q4p = e.program("gguf_q4_0_pure", files["q4_0_pure"])
    int8 = e.program("tinyllama_int8", hf, ["--weight-dtype", "int8"])
    int4 = e.program("tinyllama_int4", hf, ["--weight-dtype", "int4"])
    own = {"int8": e.converted(int8, e.weights, os.path.join(OUT, "tinyllama_int8.safetensors")),
           "int4": e.converted(int4, e.weights, os.path.join(OUT, "tinyllama_int4.safetensors"))}
    for tag, exe in (("q8_0", q8), ("q4_0_pure", q4p)):
        try:
            own[tag] = e.converted(exe, files[tag], os.path.join(OUT, f"tinyllama_{tag}_own.safetensors"))
        except CommandFailed as err:
            h.notes.append(f"gguf: convert-weights of the {tag} GGUF into tfmc's file failed: {reason(err)}")
    # 2. Load: each GGUF file whose layout the program keeps against an f32 file of its bytes.
    e.res["info"] = {"q8_0": run([q8, "info"], quiet=True)[0], "q4_0": run([q4, "info"], quiet=True)[0],
                     "q4_0_pure": run([q4p, "info"], quiet=True)[0]}
    for tag, exe, extra in (("q8_0", q8, []), ("q4_0_pure", q4p, [("q4_0", "Q4_0 GGUF (Q6_K head)", q4,
                                                                    files["q4_0"])])):
        try:
            f32_exe, f32_weights = e.same_bytes(tag)
            entries = [(tag, f"{tag.replace('_pure', '').upper()} GGUF"
                        + (" (all Q4_0)" if tag == "q4_0_pure" else ""), exe, files[tag]),
                       (f"f32_{tag}", "f32 safetensors, the same bytes", f32_exe, f32_weights)]
            if tag in own:
                entries.append((f"own_{tag}", "tfmc's own file of the same values (convert-weights)", exe,
                                own[tag]))
            e.load_times(tag, entries + extra)
        except CommandFailed as err:
            h.notes.append(f"gguf: load times ({tag}) not measured: {reason(err)}")
    # 3. Decode: tfmc's rows that compare alternate; llama.cpp on each GGUF file after them.
    int8_rows = [("int8", "int8 (checkpoint, groups of 64), own file", int8, own["int8"], "int8_g64")]
    if "q8_0" in own:
        int8_rows.append(("own_q8_0", "int8 groups of 32 (the Q8_0 GGUF's program), own file", q8,
                          own["q8_0"], "q8_0"))
    int8_rows.append(("q8_0", "Q8_0 GGUF", q8, files["q8_0"], "q8_0"))
    e.tfmc_rows("int8", int8_rows)
    e.tfmc_rows("int4", [("int4", "int4 (checkpoint), own file", int4, own["int4"], "int4_g32"),
                         ("q4_0_pure", "Q4_0 GGUF (all Q4_0)", q4p, files["q4_0_pure"], "int4_g32"),
                         ("q4_0", "Q4_0 GGUF (Q6_K head: int8 in tfmc)", q4, files["q4_0"], "q4_0")])
    e.llama_row("q8_0", "Q8_0 GGUF", files["q8_0"], "q8_0")
    e.llama_row("q4_0_pure", "Q4_0 GGUF (all Q4_0)", files["q4_0_pure"], "int4_g32")
    e.llama_row("q4_0", "Q4_0 GGUF (Q6_K head)", files["q4_0"], "q4_0")


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------

def _row(res, engine, key):
    return next((r for r in res["rows"] if (r.engine, r.dtype) == (engine, key)), None)


def _tps(row):
    return row.best_decode()[1] if row is not None and not row.skip and row.decode_tps else None


def _round_ratio(a, b):
    """The median over the rounds of a's decode tokens/s ÷ b's in the same round (their processes
    alternated), or None."""
    ra, rb = getattr(a, "rounds", None), getattr(b, "rounds", None)
    if not ra or not rb or len(ra) != len(rb) or a.skip or b.skip:
        return None
    return statistics.median(x[1] / y[1] for x, y in zip(ra, rb))


def _load(res, key):
    return next((l for l in res["load"] if l["key"] == key), None)


def _agree(a, b):
    """Leading ids two rows share (of the shorter), or None."""
    if a is None or b is None or not a.ids or not b.ids:
        return None
    n = min(len(a.ids), len(b.ids))
    k = next((i for i in range(n) if a.ids[i] != b.ids[i]), n)
    return k, n


def render(rep):
    res = rep.r.get("gguf")
    if not res:
        return
    add = rep.add
    s = res["shape"]
    files = res["files"]
    add("## 13. Issue 31: GGUF files (TinyLlama-1.1B-shaped), against tfmc's own files and llama.cpp")
    add()
    add(f"Section 8's random checkpoint (d_model {s['d_model']}, {s['layers']} layers, {s['heads']} heads, "
        f"{s['kv_heads']} KV heads, FFN {s['d_ff']}, vocab {s['vocab']}, untied head), written to GGUF v3 by "
        "bench/peers/gguf_llama.py: "
        + "; ".join(f"`tinyllama_{t}.gguf` {f['bytes'] / 1e6:.0f} MB, {f['what']}" for t, f in files.items())
        + ". tfmc compiles each file (`tfmc FILE.gguf -o NAME`; the weight dtype follows the file: Q8_0 → "
        "int8 in groups of 32, Q4_0 → int4, a Q6_K head → int8 groups of 32) and runs it with `--weights "
        "FILE.gguf`. Every measurement waited for a quiet machine first (other processes under 0.1 cores, "
        f"at most {res['quiet_budget_s']} s for the whole section: {res.get('waited_s', 0):.0f} s waited); "
        "the cores other processes used while each ran are listed at the end of the section.")
    add()
    # 1. compile
    comp = res.get("compile")
    add("**Compile** (`tfmc tinyllama_q8_0.gguf -o NAME`, wall time: read the header, import, passes, "
        "Halide, link; `TFMC_CACHE_DIR` an empty directory for the cold runs, the cache that run filled for "
        "the warm ones): " + (
            f"cold {fmt_ms(_fig(comp['cold']))} s over {len(comp['cold'])} runs, warm "
            f"{fmt_ms(_fig(comp['warm']))} s over {len(comp['warm'])} runs." if comp else "not measured."))
    add()
    # 2. load
    if res["load"]:
        add(f"**Load** (`NAME info --weights W`: the program's own `load:` figure, which includes mapping "
            f"with MAP_POPULATE (the page-in), the checks and any conversion; the whole process's wall time "
            f"beside it), the median [min–max] of {LOAD_RUNS} processes per file after one that warmed the "
            "page cache (each file first dropped from the page cache and read through once in order, so "
            "that all are cached the same way), the files alternating. \"The same bytes\": an f32 checkpoint of the same family "
            "(llama_checkpoint.py: fewer layers, a vocabulary sized to match) whose model.safetensors is as "
            "large as the GGUF file, so that both programs page in the same number of bytes from the page "
            "cache; its program is compiled with `--weight-layout rows`, which maps the f32 weights in place "
            "(no conversion, as the GGUF's layout-matched tensors).")
        add()
        out = []
        for l in res["load"]:
            conv = (f"{fmt_ms(l['convert'])} ({l['converted']} tensors)" if l["converted"] else "none")
            out.append([l["what"] + f" (`{l['key']}`)", f"{l['bytes'] / 1e6:.0f} MB", fmt_ms(l["load"]),
                        fmt_ms(l["map"]), conv, fmt_ms(l["wall"])])
        add(table(["weights file", "bytes", "`load:` ms", "map, page-in, check ms", "conversion ms",
                   "process wall ms"], out))
        add()
        add("`load:` is the program's figure from opening the file to a model ready to run: mapping it with "
            "MAP_POPULATE and checking it (for a GGUF file: reading its header, metadata and tensor infos), "
            "then binding each tensor (dtype and shape checks, which read no tensor's values; copies of "
            "tensors not aligned for use in place; conversions), then allocating the arena and the K/V "
            "cache (not touched: no cost to speak of).")
        add()
        for tag, f in files.items():
            if "same_shape" in f:
                sh = f["same_shape"]
                add(f"- f32 file for `{tag}`: {sh['layers']} layers, vocab {sh['vocab']}, "
                    f"{f['same_bytes'] / 1e6:.1f} MB against the GGUF's {f['bytes'] / 1e6:.1f} MB "
                    f"({f['same_bytes'] / f['bytes']:.4f}×).")
        info = res.get("info", {})
        for tag, text in info.items():
            m = re.search(r"^weight dtype: .*$", text, re.M)
            if m:
                add(f"- `{tag}` program's `info`: {m.group(0)}")
        add()
    # 3. decode
    out = []
    for r in res["rows"]:
        label = getattr(r, "label", r.dtype)
        if r.skip:
            out.append([r.engine, label, "skipped: " + r.skip, "", "", ""])
            continue
        T, tps = r.best_decode()
        pre = r.prefill.get(T)
        out.append([r.engine, label, f"{tps:.2f} ({T} t)", fmt_ms(pre),
                    f"{r.file_bytes / 1e6:.0f} MB" if r.file_bytes else "", ""])
    add(f"**Decode**: {res['prompt']}-id prompt (seeded random ids), greedy, {res['new_tokens']} single-token "
        f"steps after the prefill's token; tokens/s over those steps, the median of 5 runs after one. tfmc: "
        f"one `generate --stats` process per run (bench/engines.py's generate_once) at "
        + ", ".join(f"{T}" for T in res["threads"]) + " threads (section 8: its best at this shape); the "
        "rows of each group (int8: the three first; int4: the next three) alternate process by process, "
        "so that the rows compared meet the same machine, and the goals take the median of the rounds' "
        "ratios. llama.cpp: bench/peers/llama_bench.mjs (section 8's runner: one context per thread count, "
        "its default f16 K/V cache) at 1 and 2 threads, the better shown, after tfmc's rows.")
    add()
    # ids: each row's ids against its comparator's
    pairs = {("tfmc", "own_q8_0"): ("tfmc", "q8_0"), ("tfmc", "int8"): ("tfmc", "q8_0"),
             ("llama.cpp", "q8_0"): ("tfmc", "q8_0"), ("tfmc", "int4"): ("tfmc", "q4_0_pure"),
             ("llama.cpp", "q4_0_pure"): ("tfmc", "q4_0_pure"), ("llama.cpp", "q4_0"): ("tfmc", "q4_0"),
             ("tfmc", "q4_0_pure"): ("tfmc", "q4_0")}
    for i, r in enumerate(res["rows"]):
        other = pairs.get((r.engine, r.dtype))
        o = _row(res, *other) if other and not r.skip else None
        a = _agree(r, o)
        out[i][5] = "" if a is None else f"{a[0]} of {a[1]} leading ids equal to tfmc {getattr(o, 'label', '')}'s"
    add(table(["engine", "weights", "decode tokens/s", "prefill ms", "file", "ids"], out))
    add()
    add("ids: the timing prompt's greedy ids against another row's (no fp32 reference in this section; "
        "section 8 checks these formats against one). tfmc's program on the GGUF and on tfmc's own file of "
        "the same values computes the same arithmetic, so all its ids must agree; llama.cpp quantises each "
        "matrix's input to 8 bits and the int8-groups-of-64 and Q6_K-head rows hold other values, so "
        "theirs may part after a step whose top-two margin is small.")
    add()
    goals(rep, res)
    if res["foreign"]:
        add("Other processes' CPU use during each measurement (cores, from /proc/stat less this bench's "
            "processes): " + "; ".join(f"{label} {c:.2f}" for label, c in res["foreign"]) + ".")
        add()
        busy = [label for label, c in res["foreign"] if c > NOISY_CORES]
        if busy:
            add(f"Other processes used more than {NOISY_CORES} cores during {len(busy)} of "
                f"{len(res['foreign'])} measurements: their absolute figures are low. tfmc's rows that "
                "the goals compare alternate process by process and met the same machine, so their ratios "
                "hold; the peer's ratios (llama.cpp ran after tfmc's rows, not alternating) hold only where "
                "both measurements met a similar load.")
            add()


def _fig(values):
    v = sorted(values)
    return Figure(statistics.median(v), v[0], v[-1])


def goals(rep, res):
    out = []

    def goal(what, value, target, met, why=None):
        out.append([what, value if value is not None else "n/a", target,
                    ("met" if met else "**not met**") if value is not None else f"not measured ({why})"])

    comp = res.get("compile")
    v = statistics.median(comp["cold"]) if comp else None
    goal("1. compile the Q8_0 GGUF, cold kernel cache (median s)", f"{v:.1f} s" if v is not None else None,
         f"≤ {COMPILE_GOAL_S:g} s", v is not None and v <= COMPILE_GOAL_S, "tfmc did not compile")
    for tag, words in (("q8_0", "Q8_0 (in place)"), ("q4_0_pure", "Q4_0, all Q4_0 (in place)")):
        a, b = _load(res, tag), _load(res, f"f32_{tag}")
        v = a["load"].median / b["load"].median if a and b else None
        goal(f"2. load: {words} GGUF ÷ f32 safetensors of the same bytes (`load:` medians)",
             f"{v:.2f}×" if v is not None else None, f"≤ {LOAD_GOAL:.2f}×", v is not None and v <= LOAD_GOAL,
             "no load figures")
    for key, words in (("own_q8_0", "tfmc's own int8 file (groups of 32)"), ("own_q4_0_pure", "tfmc's own int4 file"),
                       ("q4_0", "the Q4_0 GGUF with a Q6_K head (converted to int8 at load)")):
        a, b = _load(res, key), _load(res, "f32_" + ("q8_0" if key == "own_q8_0" else "q4_0_pure"))
        if a and b:
            v = a["load"].median / b["load"].median
            out.append([f"(not a goal) load: {words} ÷ the f32 file (`load:` medians)", f"{v:.2f}×",
                        f"≤ {LOAD_GOAL:.2f}×", "met" if v <= LOAD_GOAL else "**not met**"])
    for ours, theirs, what, fair in (
            ("q8_0", "own_q8_0", "Q8_0 GGUF ÷ tfmc's own file of the same values (int8 groups of 32)", True),
            ("q8_0", "int8", "Q8_0 GGUF ÷ `--weight-dtype int8` (groups of 64) own file", False),
            ("q4_0_pure", "int4", "Q4_0 GGUF (all Q4_0) ÷ `--weight-dtype int4` own file", True),
            ("q4_0", "int4", "Q4_0 GGUF (Q6_K head) ÷ `--weight-dtype int4` own file", False)):
        v = _round_ratio(_row(res, "tfmc", ours), _row(res, "tfmc", theirs))
        label = (f"3. decode tokens/s: tfmc {what} (median of the rounds' ratios)"
                 + ("" if fair else " (other values or bytes: not like for like)"))
        goal(label, f"{v:.2f}×" if v is not None else None, f"≥ {DECODE_GOAL:.2f}×",
             v is not None and v >= DECODE_GOAL, "a row did not run")
    for tag, words in (("q8_0", "Q8_0"), ("q4_0_pure", "Q4_0 (all Q4_0)"), ("q4_0", "Q4_0 (Q6_K head)")):
        a, b = _tps(_row(res, "tfmc", tag)), _tps(_row(res, "llama.cpp", tag))
        v = a / b if a and b else None
        goal(f"peer: decode tokens/s, tfmc ÷ llama.cpp on the same {words} GGUF (issue 14's target)",
             f"{v:.2f}×" if v is not None else None, f"≥ {PEER_GOAL:.2f}×", v is not None and v >= PEER_GOAL,
             "a row did not run")
        if v is not None:
            rep.summary.append([f"TinyLlama-shaped decode from a {words} GGUF file: tokens/s",
                                f"{a:.2f}", f"{b:.2f} (llama.cpp, same file)", f"{v:.2f}×", ""])
    rep.add("### Issue 31's goals (ratios of this run)")
    rep.add()
    rep.add(table(["goal", "this run", "target", ""], out))
    rep.add()
