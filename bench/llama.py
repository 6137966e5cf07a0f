"""bench/run.py's `llama` section: a TinyLlama-1.1B-shaped model (random weights) in tfmc and in
llama.cpp, at every weight precision each offers, on the same weights and the same 128-token prompt
(issue 14's goals): tfmc's compile time with a cold and a warm kernel cache, prefill time, and
decode tokens/s.

The weights are one random Hugging Face checkpoint (bench/peers/llama_checkpoint.py) in
bench/out/tinyllama_hf/: tfmc compiles that directory (`tfmc DIR`) and loads its
model.safetensors; llama.cpp loads GGUF files bench/peers/gguf_llama.py writes from it. Before any
timing every engine generates from a margin-checked prompt and its ids are compared with the fp32
PyTorch reference's (bench/peers/llama_check.py), as the engines section does for GPT-2, and where
that leaves fewer than 4 checked steps, with PyTorch in the engine's own format along its own ids
(bench/peers/format_check.py; about 30 s per weight-only row, 2-3 minutes per row that rounds
activations, at this shape on one core; cached by ids).

A tfmc that cannot import a Hugging Face Llama directory compiles the same model from a .tfm
description with the same weights under a .tfm model's names (llama_checkpoint.py
--nn-transformer), and the report says so.

Issue 47 (llama.cpp's K-quants read in place): a Q4_K_M file of the same checkpoint
(bench/peers/gguf_llama.py --dtype q4_k_m: the types llama-quantize's Q4_K_M gives, Q4_K blocks from
gguf.py's plain quantiser), tfmc compiled from it (`tfmc NAME_q4_k_m.gguf`, each tensor in its own
type: rows q4_k_m, f32 activations, and q4_k_m_a8, --activations int8) and llama.cpp on the same file
(row Q4_K_M): decode tokens/s and prefill time as the other rows; then the programs' resident memory
after load against the file + K/V cache + arena, and the load of the .gguf against tfmc's own file
of the same blocks (`convert-weights`). No reference models K-quants (llama_check.py,
format_check.py): these rows' ids are compared with each other and with the fp32 reference's, not
judged.

class Llama is the section's machinery for any Llama shape: bench/llama32.py runs it at Llama 3.2
1B's shape on a subset of the rows (its own file names, its own reference), and
bench/gguf_bench.py on TinyLlama's GGUF files.
"""

import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time

from engines import (BYTES_PER_ELEMENT, HEAD_BYTES_PER_ELEMENT, INT4_FILE_GOAL, INT4_ROOF_GOAL,
                     LLAMA_DTYPES, TFMC_DTYPES, Engines, Row, _mb, _pair, against_bf16, against_q4_0,
                     unselected,
                     against_q8_0, bf16a16_words, dtype_label, file_ratio, first_prefill_words,
                     int4_roof, missing_dtype,
                     own_format_words, read_roof, reason, reference_ok, same_ids_cell, stamp_ok,
                     tfmc_dtypes, tfmc_flags, tfmc_form, weights_dtype, weights_words, write_stamp)
from gguf_llama import use_more_bits  # bench/peers (engines put it on the path): Q4_K_M's rule
import run as harness  # its LOG (set by main after this import)
from run import (CACHE, OUT, PEERS, PYTHON, ROOT, TFMC, CommandFailed, Figure, fmt_ms, json_lines, note,
                 pause, run, table)
from serve import NOISY_CORES, QUIET_CORES

# TinyLlama-1.1B's shape (issue 14).
SHAPE = {"d_model": 2048, "layers": 22, "heads": 32, "kv_heads": 4, "d_ff": 5632, "vocab": 32000,
         "max_len": 2048}
PROMPT = 128
# Fewer new tokens than GPT-2's 128: an f32 decode step reads 4.4 GB, and each engine runs
# 2 thread counts x 6 processes; 32 steps per run keep the section within ~15 minutes.
NEW_TOKENS = 32
# The rows (bf16a16, int8a8, int4, int4a8; llama.cpp's Q4_0: Q4_0 matrices and token_embd, the output head
# Q6_K) and their bytes per element are engines.py's: the same formats and file writers.
# tfmc's precision -> llama.cpp's with the same weight bytes or more (Q4_0's head is Q6_K: more).
PAIRS = [("f32", "F32"), ("bf16", "BF16"), ("bf16a16", "BF16"), ("int8", "Q8_0"), ("int8a8", "Q8_0"),
         ("int4", "Q4_0"), ("int4a8", "Q4_0")]
# The issue's goals for int8 weights + int8 activations against llama.cpp Q8_0: decode tokens/s
# >= 1.2x Q8_0's (as for every pair) and prefill time <= 0.8x Q8_0's.
PREFILL_GOAL = {"int8a8": 0.8}
# Issue 47: the Q4_K_M file (NAME_q4_k_m.gguf, also the rows' format) and its rows: tfmc compiled from
# it (engines.TFMC_FLAGS: no flag; --activations int8), llama.cpp on the same file.
KQUANT = "q4_k_m"
KQUANT_TFMC = ["q4_k_m", "q4_k_m_a8"]
KQUANT_PEER = "Q4_K_M"
# Its goals: decode >= 1.2x llama.cpp's tokens/s, prefill <= 0.8x its time (best threads each);
# resident memory after load <= (the file + the K/V cache + the arena) x 1.05; load of the .gguf
# <= 1.2x the load of tfmc's own file of the same blocks.
KQUANT_DECODE_GOAL, KQUANT_PREFILL_GOAL, KQUANT_MEMORY_GOAL, KQUANT_LOAD_GOAL = 1.2, 0.8, 1.05, 1.2
KQUANT_LOAD_RUNS = 11    # `info --weights` processes per file, the order rotating, after one each
KQUANT_RSS_RUNS = 3      # `generate` processes per program for the whole run's peak resident size
Q4_K_BYTES, Q6_K_BYTES = 144 / 256, 210 / 256   # a super-block's bytes per value


def shape_of(s):
    D = s["d_model"] // s["heads"]
    return dict(s, head_dim=D, q=s["heads"] * D, kv=s["kv_heads"] * D)


def matrix_elements(s):
    """Elements of the linear weights one token passes through (every layer and the head)."""
    s = shape_of(s)
    d = s["d_model"]
    per_layer = d * s["q"] + 2 * d * s["kv"] + s["q"] * d + 3 * d * s["d_ff"]
    return s["layers"] * per_layer + s["vocab"] * d


def q4_k_m_bytes(s):
    """Bytes of the Q4_K_M file's linear weights and output head (the Q4_K_M mix: Q4_K, attn_v and
    ffn_down Q6_K in use_more_bits layers, the head Q6_K), and of one embedding row."""
    s = shape_of(s)
    d, L = s["d_model"], s["layers"]
    total = 0.0
    for i in range(L):
        more = Q6_K_BYTES if use_more_bits(i, L) else Q4_K_BYTES
        total += (2 * d * s["q"] + d * s["kv"] + 2 * d * s["d_ff"]) * Q4_K_BYTES + (d * s["kv"] + s["d_ff"] * d) * more
    row = Q6_K_BYTES if s.get("tied") else Q4_K_BYTES   # a tied model's token_embd is its Q6_K head
    return total + s["vocab"] * d * Q6_K_BYTES, d * row


def bytes_per_token(s, fmt, kv_bytes, position):
    """What one decode step reads: every linear weight and the output head in its format, one
    embedding row, the f32 norm weights, and the K/V cache up to `position` (f32; f16 in
    llama.cpp)."""
    s = shape_of(s)
    vectors = (2 * s["layers"] + 1) * s["d_model"]
    kv = s["layers"] * 2 * position * s["kv"] * kv_bytes
    if fmt == KQUANT:
        return sum(q4_k_m_bytes(s)) + vectors * 4 + kv
    head = s["vocab"] * s["d_model"]
    return ((matrix_elements(s) - head + s["d_model"]) * BYTES_PER_ELEMENT[fmt]
            + head * HEAD_BYTES_PER_ELEMENT.get(fmt, BYTES_PER_ELEMENT[fmt]) + vectors * 4 + kv)


def leading_equal(a, b):
    """How many leading ids two lists share."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


_ARENA = re.compile(r"^arena: (\d+) bytes", re.M)
_KV = re.compile(r"^kv cache: \S+, (\d+) bytes", re.M)


def process_rss(cmd, timeout=900):
    """Runs cmd as run() would (quietly): (stdout, stderr, seconds, its peak resident size in bytes:
    wait4's ru_maxrss)."""
    if harness.LOG:  # run()'s log, quiet on the console
        harness.LOG.write("$ " + " ".join(cmd) + "\n")
    env = dict(os.environ, TFMC_CACHE_DIR=CACHE)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env, cwd=ROOT)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - start > timeout:
                proc.kill()
                _, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = -9
                raise CommandFailed(f"timed out after {timeout:.0f} s: {' '.join(cmd)}")
            time.sleep(0.005)
        seconds = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if harness.LOG:
        harness.LOG.write(stdout + stderr)
        harness.LOG.flush()
    if proc.returncode != 0:
        raise CommandFailed(f"exit {proc.returncode}: {' '.join(cmd)}\n" + (stderr or stdout)[-2000:])
    return stdout, stderr, seconds, usage.ru_maxrss * 1024


def prefill_flop(s, S):
    """Multiply-adds x 2 of a prefill of S tokens: the linear layers at every position (the
    output head at the last only, as both engines compute it) and causal attention."""
    s = shape_of(s)
    linear = (matrix_elements(s) - s["vocab"] * s["d_model"]) * S + s["vocab"] * s["d_model"]
    attention = s["layers"] * s["heads"] * s["head_dim"] * S * (S + 1)  # QK^T and PV, causal half
    return 2.0 * (linear + attention)


def write_checkpoint(directory, shape):
    """llama_checkpoint.py's random checkpoint of `shape` (seed 1) in `directory`, written unless the
    one there was made with the same arguments by the same writer; returns its model.safetensors."""
    weights = os.path.join(directory, "model.safetensors")
    # A true flag (tied) is a bare option; TinyLlama's shape has none, so its arguments are as before.
    args = [f"--{k.replace('_', '-')}" + ("" if v is True else f"={v}") for k, v in sorted(shape.items())
            if v is not False] + ["--seed=1"]
    script = os.path.join(PEERS, "llama_checkpoint.py")
    # The writer's own bytes are part of the stamp: a change of its initialisation rewrites.
    want = " ".join(args) + " " + hashlib.sha256(open(script, "rb").read()).hexdigest()
    stamp = os.path.join(directory, "bench.stamp")
    if not (os.path.exists(weights) and os.path.exists(stamp) and open(stamp).read() == want):
        run([PYTHON, script, "--output", directory] + args, timeout=1800)
        with open(stamp, "w") as f:
            f.write(want)
    return weights


def tfm_text(name, c):
    """The .tfm description of a Llama config.json (the fallback when tfmc cannot import it)."""
    return f"""# {name}: {c['model_type']} config.json as a .tfm (bench/llama.py)
model {name} {{
  vocab = {c['vocab_size']}
  d_model = {c['hidden_size']}
  heads = {c['num_attention_heads']}
  kv_heads = {c['num_key_value_heads']}
  d_ff = {c['intermediate_size']}
  max_len = {c['max_position_embeddings']}
  norm = pre
  norm_type = rms_norm
  layer_norm_eps = {c['rms_norm_eps']}
  activation = silu
  positions = rope
  rope_theta = {c['rope_theta']}
  bias = false
  final_norm = true
  output = {'tied' if c['tie_word_embeddings'] else 'linear'}

  decoder(layers = {c['num_hidden_layers']}) {{
    self_attention(mask = causal + padding)
    feed_forward(gated)
  }}
}}
"""


class Llama(Engines):
    """A Llama shape's checkpoint, reference, tfmc rows and llama.cpp rows. `name` prefixes its files
    in bench/out (NAME_hf/, NAME_int8.safetensors, NAME_q8_0.gguf, ...), `check` names its reference's
    JSON, `tfmc_rows` / `llama_rows` are the rows it runs (TFMC_DTYPES / LLAMA_DTYPES or a subset of
    them). `measure` (bench/serve.py's Measure) makes each measurement wait for a quiet machine and
    records the cores other processes used while it ran; None: measured at once."""

    def __init__(self, h, shape=SHAPE, key="llama", name="tinyllama", check="llama_check.json",
                 tfmc_rows=TFMC_DTYPES, llama_rows=LLAMA_DTYPES, measure=None):
        super().__init__(h, key=key, new_tokens=NEW_TOKENS)
        self.shape, self.name, self.check_file = shape, name, check
        self.our_dtypes, self.peer_dtypes = tfmc_rows, llama_rows
        self.measure = measure
        self.checkpoint = os.path.join(OUT, f"{name}_hf")
        self.weights = os.path.join(self.checkpoint, "model.safetensors")
        self.source = self.checkpoint  # what tfmc compiles: the directory, or the .tfm fallback
        self.tfmc_weights = self.weights
        self.res.update({"shape": shape, "compile": None, "peak_gflops": {}, "source": "directory",
                         "prompt": PROMPT})

    def formats(self):
        """The weight formats the reference bounds: those of this section's rows."""
        return [f for _, f in self.our_dtypes] + [f for _, _, f in self.peer_dtypes]

    def measured(self, label, thunk):
        """thunk(); with self.measure, first waiting (within its budget) for a quiet machine, and
        recording how many cores other processes used while it ran (res["foreign"])."""
        if self.measure is None:
            return thunk()
        self.measure.quiet()
        self.measure.watch.start()
        try:
            return thunk()
        finally:
            self.res.setdefault("foreign", []).append((label, self.measure.watch.stop()))
            self.res["waited_s"] = self.measure.waited_s

    # ------------------------------------------------------------------ inputs
    def make_checkpoint(self):
        write_checkpoint(self.checkpoint, self.shape)

    def peak(self):
        """The FMA peak at each thread count, right before the engines run (prefill's roof)."""
        cmd = [os.path.join(PEERS, "build", "peak"), "--only", "peak",
               "--threads", ",".join(map(str, self.threads))]
        if self.quick:
            cmd.append("--quick")
        best = {}
        for r in json_lines(run(cmd)[0]):
            if r.get("bench") == "peak" and "gflops" in r:  # not an ISA the CPU lacks ("skipped")
                best[r["threads"]] = max(best.get(r["threads"], 0.0), r["gflops"])
        self.res["peak_gflops"] = best
        pause()

    def reference(self, weights):
        path = os.path.join(OUT, self.check_file)
        formats = self.formats()
        if not reference_ok(path, weights, formats):
            # A subset of the rows bounds only its formats (each costs a teacher-forced pass).
            subset = [] if (self.our_dtypes, self.peer_dtypes) == (TFMC_DTYPES, LLAMA_DTYPES) else \
                ["--formats", ",".join(dict.fromkeys(["f32"] + formats))]
            out, _, _ = run([PYTHON, os.path.join(PEERS, "llama_check.py"), "--checkpoint", self.checkpoint,
                             "--tries", "4" if self.quick else "8", "--timing-prompt", str(PROMPT)] + subset,
                            timeout=3600)
            rows = [r for r in json_lines(out) if r.get("bench") == "greedy_check"]
            with open(path, "w") as f:
                json.dump(rows[0], f)
            write_stamp(path, weights)
        self.check_weights = weights
        self.res["check"] = json.load(open(path))
        return self.res["check"]

    def format_check_model(self):
        """format_check.py's arguments naming the model: the checkpoint directory (its
        model.safetensors is the stamp's source)."""
        return ["--checkpoint", self.checkpoint]

    def choose_source(self):
        """`tfmc DIR` when this tfmc imports Llama directories, else the .tfm fallback."""
        # The AST goes to stdout (tfmc refuses to replace /dev/null, a character device).
        _, err, _ = run([TFMC, self.checkpoint, "--emit", "ast"], check=False, quiet=True)
        ok = not err.strip()
        if ok:
            return
        first = err.strip().splitlines()[0][:200]
        with open(os.path.join(self.checkpoint, "config.json")) as f:
            c = json.load(f)
        self.source = os.path.join(OUT, f"{self.name}.tfm")
        with open(self.source, "w") as f:
            f.write(tfm_text(self.name, c))
        self.tfmc_weights = os.path.join(OUT, f"{self.name}_nn.safetensors")
        if not stamp_ok(self.tfmc_weights, self.weights):
            run([PYTHON, os.path.join(PEERS, "llama_checkpoint.py"), "--output", self.checkpoint,
                 "--nn-transformer", self.tfmc_weights], timeout=1800)
            write_stamp(self.tfmc_weights, self.weights)
        self.res["source"] = f"{self.name}.tfm"
        self.res["source_why"] = first
        self.h.notes.append(f"{self.key}: this tfmc does not compile the checkpoint directory ({first}): "
                            f"tfmc's rows use bench/out/{self.name}.tfm, the same model, with the same "
                            f"weights under a .tfm model's names.")

    # ------------------------------------------------------------------ tfmc
    def compile_times(self):
        """Wall time of `tfmc SOURCE -o EXE` with an empty kernel cache, then again with the cache
        that run filled (warm); 3 pairs."""
        cold, warm = [], []
        exe = os.path.join(OUT, f"{self.name}_compile")
        cache = os.path.join(OUT, f"cache-cold-{self.key}")
        for _ in range(1 if self.quick else 3):
            shutil.rmtree(cache, ignore_errors=True)
            for times in (cold, warm):
                _, _, seconds = run([TFMC, self.source, "-o", exe], env={"TFMC_CACHE_DIR": cache},
                                    timeout=1800)
                times.append(seconds)
            shutil.rmtree(cache, ignore_errors=True)
            pause()
        self.res["compile"] = {"cold": sorted(cold), "warm": sorted(warm)}

    def tfmc(self, weights):
        check = self.res["check"]
        prompt = ",".join(map(str, check["timing_prompt"]))
        check_prompt = ",".join(map(str, check["prompt"]))
        for dtype, fmt in tfmc_dtypes(self.h, self.our_dtypes, key=self.key):
            row = Row("tfmc", dtype, fmt)
            self.res["rows"].append(row)
            row.skip = missing_dtype(dtype) or unselected(self.h, dtype)
            if row.skip:
                self.h.notes.append(f"{self.key}: tfmc {dtype} skipped: {row.skip}.")
                continue
            row.form = tfmc_form(dtype)
            exe = os.path.join(OUT, self.name if dtype == "f32" else f"{self.name}_{dtype}")
            wdtype = weights_dtype(dtype)
            try:
                run([TFMC, self.source, "-o", exe] + tfmc_flags(dtype), timeout=1800)
                w = self.tfmc_weights
                if wdtype != "f32":
                    # int8a8 loads the int8 row's file, bf16a16 the bf16 row's (written by
                    # whichever of them runs first).
                    converted = os.path.join(OUT, f"{self.name}_{wdtype}.safetensors")
                    if not stamp_ok(converted, self.tfmc_weights):
                        run([exe, "convert-weights", "--weights", self.tfmc_weights, "--output", converted],
                            timeout=1800)
                        write_stamp(converted, self.tfmc_weights)
                    w = converted
                row.file_bytes = os.path.getsize(w)
                out, _, _ = run([exe, "generate", "--weights", w, "--prompt", check_prompt,
                                 "--max-new-tokens", str(len(check["expected"])), "--threads",
                                 str(self.threads[-1])], timeout=1800)
                self.judge(row, [int(x) for x in out.split()])
                self.measured(f"tfmc {dtype}", lambda: self.time_generate(row, exe, w, prompt))
            except CommandFailed as e:
                row.skip = f"failed: {reason(e)}"
                self.h.notes.append(f"{self.key}: tfmc {dtype}: {row.skip}")
            pause(2.0)

    # ------------------------------------------------------------------ GGUF files
    def gguf_file(self, arg, types=(), tag=None):
        """(path, command): OUT/NAME_{tag or arg}.gguf and the gguf_llama.py command line that
        writes it from the checkpoint (--dtype arg; --type TENSOR=TYPE for each of `types`)."""
        path = os.path.join(OUT, f"{self.name}_{tag or arg}.gguf")
        return path, ([PYTHON, os.path.join(PEERS, "gguf_llama.py"), "--checkpoint", self.checkpoint,
                       "--dtype", arg, "--output", path] + [x for t in types for x in ("--type", t)])

    def write_gguf(self, arg, types=(), tag=None):
        """gguf_file's file, written unless it was made from the checkpoint's current weights."""
        path, cmd = self.gguf_file(arg, types, tag)
        if not stamp_ok(path, self.weights):
            run(cmd, timeout=1800)
            write_stamp(path, self.weights)
        return path

    # ------------------------------------------------------------------ llama.cpp
    def llama_cpp(self, weights):
        ok = self.npm_has("node-llama-cpp") and self.npm_has("@node-llama-cpp/linux-x64")
        for dtype, arg, fmt in self.peer_dtypes:
            row = Row("llama.cpp", dtype, fmt, kv_bytes=2)
            self.res["rows"].append(row)
            row.skip = unselected(self.h, dtype)
            if row.skip:
                continue
            if not ok:
                row.skip = "node-llama-cpp or @node-llama-cpp/linux-x64 is not installed (make bench-npm)"
                if dtype == self.peer_dtypes[0][0]:
                    self.h.notes.append(f"{self.key}: llama.cpp skipped: {row.skip}.")
                continue
            path, write = self.gguf_file(arg)
            try:
                # Written before the measurement (file_peer finds it stamped): not inside its window.
                if not stamp_ok(path, weights):
                    run(write, timeout=1800)
                    write_stamp(path, weights)
            except CommandFailed as e:
                row.skip = f"failed: {reason(e)}"
                self.h.notes.append(f"{self.key}: {row.name}: {row.skip}")
                continue
            self.measured(f"llama.cpp {dtype}",
                          lambda: self.file_peer(row, weights, path, write, "llama_bench.mjs", "llama_check"))
            pause(2.0)


    # ------------------------------------------------------------------ K-quants (issue 47)
    def judge(self, row, ids):
        """Engines.judge, but for the K-quant rows, which no reference bounds (llama_check.py and
        format_check.py model no K-quant): their ids are kept, with how many leading ones equal the
        fp32 reference's, and the report compares tfmc's with llama.cpp's on the same file."""
        if row.fmt != KQUANT:
            return super().judge(row, ids)
        ids = list(ids)
        row.check = {"ids": ids, "ok": True, "steps": 0, "kquant": True,
                     "agree": leading_equal(ids, self.res["check"]["expected"])}

    def kquant(self):
        """Issue 47's rows: the Q4_K_M file, tfmc's programs compiled from it (KQUANT_TFMC) and
        llama.cpp on it, timed as the other rows; then memory and load (kquant_memory_load)."""
        check = self.res["check"]
        prompt = ",".join(map(str, check["timing_prompt"]))
        check_prompt = ",".join(map(str, check["prompt"]))
        rows = [Row("tfmc", dtype, KQUANT) for dtype in KQUANT_TFMC]
        peer = Row("llama.cpp", KQUANT_PEER, KQUANT, kv_bytes=2)
        for row in rows + [peer]:
            self.res["rows"].append(row)
            row.skip = unselected(self.h, row.dtype)
        if all(r.skip for r in rows + [peer]):
            return
        path, write = self.gguf_file(KQUANT)
        try:
            self.write_gguf(KQUANT)
        except CommandFailed as e:
            for r in rows + [peer]:
                r.skip = r.skip or f"failed: the Q4_K_M file was not written ({reason(e)})"
            self.h.notes.append(f"{self.key}: gguf_llama.py --dtype q4_k_m failed: {reason(e)}")
            return
        size = os.path.getsize(path)
        self.res["kquant"] = {"file": os.path.basename(path), "bytes": size, "programs": {}}
        exes = {}
        for row in rows:
            if row.skip:
                continue
            exe = os.path.join(OUT, f"{self.name}_{row.dtype}")
            try:
                run([TFMC, path, "-o", exe] + tfmc_flags(row.dtype), timeout=1800)
            except CommandFailed as e:
                if "tfmc_uk_qk" in str(e):
                    row.skip = ("failed to link: this runtime lacks the int8-activation K-quant microkernel "
                                "tfmc_uk_qk_v1_avx2 (runtime/ukernels/KQuantProductsAvx2.cpp)")
                else:
                    row.skip = f"failed: {reason(e)}"
                self.h.notes.append(f"{self.key}: tfmc {row.dtype}: {row.skip}")
                continue
            row.file_bytes = size
            try:
                out, _, _ = run([exe, "generate", "--weights", path, "--prompt", check_prompt,
                                 "--max-new-tokens", str(len(check["expected"])), "--threads",
                                 str(self.threads[-1])], timeout=1800)
                self.judge(row, [int(x) for x in out.split()])
                self.measured(f"tfmc {row.dtype}", lambda: self.time_generate(row, exe, path, prompt))
                exes[row.dtype] = exe
            except CommandFailed as e:
                row.skip = f"failed: {reason(e)}"
                self.h.notes.append(f"{self.key}: tfmc {row.dtype}: {row.skip}")
            pause(2.0)
        if not peer.skip:
            if not (self.npm_has("node-llama-cpp") and self.npm_has("@node-llama-cpp/linux-x64")):
                peer.skip = "node-llama-cpp or @node-llama-cpp/linux-x64 is not installed (make bench-npm)"
            else:
                self.measured(f"llama.cpp {KQUANT_PEER}",
                              lambda: self.file_peer(peer, self.weights, path, write, "llama_bench.mjs",
                                                     "llama_check"))
                pause(2.0)
        if exes:
            try:
                self.measured("K-quant memory and load", lambda: self.kquant_memory_load(exes, path))
            except CommandFailed as e:
                self.h.notes.append(f"{self.key}: K-quant memory and load not measured: {reason(e)}")

    def kquant_memory_load(self, exes, path):
        """Each program's arena and K/V cache (`NAME info`); `info --weights` processes (which exit
        once loaded) on the .gguf, and for the f32-activation program also on tfmc's own file of the
        same blocks (`convert-weights`), alternating, each file recached and read by one process
        first: their `load:` figures and peak resident sizes (wait4's ru_maxrss); then
        KQUANT_RSS_RUNS `generate` processes of each program (the timing prompt, the decode steps)
        for a whole run's peak resident size."""
        from gguf_bench import _LOAD, Gguf  # it imports this module: here, not at the top
        res = self.res["kquant"]
        own = None
        if KQUANT in exes:
            own = os.path.join(OUT, f"{self.name}_{KQUANT}_own.safetensors")
            if not stamp_ok(own, path):
                run([exes[KQUANT], "convert-weights", "--weights", path, "--output", own], timeout=1800)
                write_stamp(own, path)
            res["own_file"], res["own_bytes"] = os.path.basename(own), os.path.getsize(own)
        entries = [(dtype, exe, path) for dtype, exe in exes.items()]
        if own:
            entries.append(("own", exes[KQUANT], own))
        fig = lambda xs: Figure(statistics.median(xs), min(xs), max(xs))
        for dtype, exe in exes.items():
            # `info` without weights: its plan's arena and K/V cache, and the program's own resident size.
            info = [process_rss([exe, "info"]) for _ in range(KQUANT_RSS_RUNS)]
            a, k = _ARENA.search(info[0][0]), _KV.search(info[0][0])
            res["programs"][dtype] = {"arena": int(a.group(1)) if a else None, "kv": int(k.group(1)) if k else 0,
                                      "base_rss": fig([r[3] for r in info])}

        def info_once(exe, weights):
            out, _, seconds, rss = process_rss([exe, "info", "--weights", weights])
            m = _LOAD.search(out)
            if not m:
                raise CommandFailed(f"{os.path.basename(exe)} info printed no load line:\n{out[-500:]}")
            return float(m.group(1)), float(m.group(2)), rss

        for w in dict.fromkeys(w for _, _, w in entries):
            Gguf.recache(w)
        for _, exe, w in entries:
            info_once(exe, w)
        runs = {key: [] for key, _, _ in entries}
        for i in range(KQUANT_LOAD_RUNS):
            # Each round starts one entry later: no file always follows the same one.
            for key, exe, w in entries[i % len(entries):] + entries[:i % len(entries)]:
                runs[key].append(info_once(exe, w))
        res["load"] = {key: {"load": fig([r[0] for r in rs]), "map": fig([r[1] for r in rs]),
                             "rss": fig([r[2] for r in rs])} for key, rs in runs.items()}
        res["load_runs"] = KQUANT_LOAD_RUNS
        if KQUANT in runs and "own" in runs:
            res["load_round_ratio"] = statistics.median(a[0] / b[0] for a, b in zip(runs[KQUANT], runs["own"]))
        prompt = ",".join(map(str, self.res["check"]["timing_prompt"]))
        by = {r.dtype: r for r in self.res["rows"] if r.engine == "tfmc"}
        for dtype, exe in exes.items():
            T = by[dtype].best_decode()[0] or self.threads[-1]
            rss = [process_rss([exe, "generate", "--weights", path, "--prompt", prompt, "--max-new-tokens",
                                str(self.new + 1), "--threads", str(T)])[3] for _ in range(KQUANT_RSS_RUNS)]
            res["programs"][dtype].update(generate_rss=fig(rss), generate_threads=T)
        res["rss_runs"] = KQUANT_RSS_RUNS
        pause()


def run_llama(h):
    note("llama: TinyLlama-1.1B-shaped generation in tfmc (each weight dtype) and llama.cpp, and "
         "issue 47's Q4_K_M file in both")
    e = Llama(h)
    run_engines(e, compile_times=True)
    try:
        e.kquant()
    except CommandFailed as err:
        h.notes.append(f"llama: the K-quant rows failed: {reason(err)}")


def run_engines(e, compile_times):
    """A Llama section's steps: the checkpoint, the reference, tfmc's source, compile times (when
    asked), the machine's read bandwidth and FMA peak, then tfmc's rows and llama.cpp's."""
    h = e.h
    e.make_checkpoint()
    e.reference(e.weights)
    e.choose_source()
    if compile_times:
        try:
            e.compile_times()
        except CommandFailed as err:
            h.notes.append(f"{e.key}: compile time not measured: {reason(err)}")
    e.measured("read bandwidth", e.read_bandwidth)
    e.measured("FMA peak", e.peak)
    for part in (e.tfmc, e.llama_cpp):
        try:
            part(e.weights)
        except CommandFailed as err:
            h.notes.append(f"{e.key}: {part.__name__} failed: {reason(err)}")
        pause(2.0)


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------

# How a Llama section reads in the report: its results' key, its number and title, the words its
# summary rows begin with, its goals' heading and pairs, which of issue 14's other goals it states
# (compile time, the int4 file), and a paragraph of its own after the description (or None).
SECTION = {"key": "llama", "number": 8, "title": "Llama: a TinyLlama-1.1B-shaped model, tfmc vs llama.cpp",
           "label": "TinyLlama-shaped", "goals": "Issue 14's goals (ratios of this run)", "pairs": PAIRS,
           "compile_goals": True, "file_goal": True, "intro": None}


def render(rep):
    render_section(rep, SECTION)


def render_section(rep, sec):
    res = rep.r.get(sec["key"])
    if not res:
        return
    rows, check, bw, peak = res["rows"], res["check"], res["read_gbs"], res["peak_gflops"]
    s, new = res["shape"], res["new_tokens"]
    tied = bool(s.get("tied"))
    ran = {r.dtype for r in rows}  # the dtypes this section has rows of (skipped ones included)
    position = res["prompt"] + new / 2
    flop = prefill_flop(s, res["prompt"])
    add = rep.add
    add(f"## {sec['number']}. {sec['title']}")
    add()
    add(f"Random weights in a Hugging Face checkpoint (bench/peers/llama_checkpoint.py --seed 1"
        f"{' --tied' if tied else ''}, its docstring says how they are drawn: "
        f"d_model {s['d_model']}, {s['layers']} layers, {s['heads']} heads, {s['kv_heads']} KV heads, "
        f"FFN {s['d_ff']}, vocab {s['vocab']}, RMSNorm, rope θ 10000, "
        + ("tied head (no lm_head.weight: the logits multiply by the embedding table)" if tied else
           "untied head") + "; "
        f"{matrix_elements(s) / 1e9:.2f} G weights in the linear layers and the head). tfmc compiles "
        + ("the checkpoint directory (`tfmc DIR`)" if res["source"] == "directory" else
           f"`bench/out/{res['source']}` (the same model and weights: this tfmc does not compile the "
           f"directory: `{res.get('source_why', '')}`)") +
        "; llama.cpp (npm node-llama-cpp 3.22, prebuilt CPU binaries, its default f16 K/V cache) "
        "loads GGUF v3 files bench/peers/gguf_llama.py writes from the same checkpoint (Q and K rows "
        f"permuted to ggml's rope layout). Prompt: {res['prompt']} ids (llama_check.py's seed-7 ids); "
        f"greedy, {new} new tokens after the prefill's first. Prefill: the prompt to the first token "
        f"(last position's logits). Decode: tokens/s over the {new} single-token steps. Each engine at "
        "1 and 2 threads, the median of 5 runs after one: the best thread count in bold, first (tfmc: "
        "prefill `NAME bench --entry prefill` in one process, decode `generate --stats`, one process "
        "per run; llama.cpp: one context per thread count, prefill and decode timed within it after a "
        "warm-up generation).")
    add()
    if sec["intro"]:
        add(sec["intro"])
        add()
    header = ["engine", "dtype", f"prefill {res['prompt']} ms", "prefill of the FMA peak",
              "decode tokens/s", "bytes read / token", "of the read roof", "file", "same ids"]
    out = []
    for row in rows:
        if row.skip:
            out.append([row.engine, dtype_label(row.dtype), "skipped: " + row.skip, "", "", "", "",
                        _mb(row.file_bytes), ""])
            continue
        b = bytes_per_token(s, row.fmt, row.kv_bytes, position)
        roof = read_roof(row, bw, b)
        of_peak = {T: flop / (f.median * 1e-3) / (peak[T] * 1e9) for T, f in row.prefill.items() if peak.get(T)}
        mark = "" if row.comparable() else " †"
        pre = {T: f.median for T, f in row.prefill.items()}
        c = row.check
        ids = ("not checked" if c is None else kquant_ids_cell(row, rows, len(check["expected"]))
               if c.get("kquant") else same_ids_cell(c, len(check["expected"])))
        out.append([row.engine, dtype_label(row.dtype), _pair(pre, lambda x: f"{x:.0f}", False) + mark,
                    _pair(of_peak, lambda x: f"{100 * x:.0f} %", True),
                    _pair(row.decode_tps, lambda x: f"{x:.2f}", True) + mark, _mb(b),
                    _pair(roof, lambda x: f"{100 * x:.0f} %", True), _mb(row.file_bytes), ids])
    add(table(header, out))
    add()
    add(first_prefill_words(rows))
    add()
    if ran & {"bf16", "bf16a16", "BF16"}:
        add(against_bf16(rows, f"prefill {res['prompt']}"))
        add()
    if ran & {"int8", "int8a8", "Q8_0"}:
        add(against_q8_0(rows, f"prefill {res['prompt']}", only=ran))
        add()
    if ran & {"int4", "int4a8", "Q4_0"}:
        add(against_q4_0(rows, f"prefill {res['prompt']}",
                         lambda r: read_roof(r, bw, bytes_per_token(s, r.fmt, r.kv_bytes, position)), only=ran))
        add()
    bf16a16 = bf16a16_words(rows, head="the output head")
    add(("tfmc " + bf16a16 + ". " if bf16a16 else "") +
        "tfmc int8a8: compiled with `--weight-dtype int8 --activations int8` (every linear, the output "
        "head included, quantises its input row per group of 64 features and multiplies integers), "
        "loading the int8 row's file. tfmc int4: `--weight-dtype int4`, GGUF's Q4_0 blocks for every "
        "matrix, the output head and the embedding table included; int4a8: `--weight-dtype int4 "
        "--activations int8` (inputs quantised per group of 32), loading the int4 row's file. "
        + ("llama.cpp Q4_0: what its `llama-quantize ... Q4_0` writes, Q4_0 matrices and token_embd with "
           "ggml's reference rounding, the output head in Q6_K." if not tied else
           "The GGUF files have no output.weight (as convert_hf_to_gguf.py writes Llama 3.2): llama.cpp "
           "multiplies by token_embd, and tfmc compiling such a file reads it as tied. llama.cpp Q4_0: what "
           "its `llama-quantize ... Q4_0` writes, Q4_0 matrices with ggml's reference rounding and "
           "token_embd, the output head too, in Q6_K (llama-quantize gives the head's type to token_embd "
           "when a file has no output.weight); Q8_0: every matrix and token_embd Q8_0."))
    add()
    add("Bytes read per token: every linear weight and the output head in its format (f32 4 B, bf16 and "
        "tfmc bf16a16 2 B, "
        "tfmc int8 and int8a8 1 + 2/64 B with its f16 scale per 64, Q8_0 34 B per 32, Q4_0 and tfmc int4 / "
        "int4a8 18 B per 32, llama.cpp Q4_0's output head Q6_K 210 B per 256; the Q4_K_M rows their file's "
        "mix, Q4_K 144 B and Q6_K 210 B per 256), one embedding row, the f32 "
        f"norm weights, and the K/V cache at the mean position {position:.0f} (f32; f16 in llama.cpp). "
        "Read roof: decode tokens/s × bytes per token ÷ the read bandwidth `peak` measured right before "
        "the engines ran (" + ", ".join(f"{bw[T]:.1f} GB/s at {T} t" for T in sorted(bw)) + "). "
        f"Prefill of the FMA peak: {flop / 1e9:.0f} GFLOP (the linear layers at every position, the "
        "head at the last, causal attention) ÷ time ÷ the FMA peak measured in the same run ("
        + ", ".join(f"{peak[T]:.0f} GFLOP/s at {T} t" for T in sorted(peak)) + "; llama.cpp's Q8_0 "
        "multiplies int8 activations by int8 weights (VNNI/AMX where the CPU has them), so its fraction "
        "of the fp32 peak can exceed 100 %). "
        "File: the weights file the engine loads (tfmc: safetensors, bf16/int8 from `convert-weights`; "
        "GGUF). † marks an engine whose ids differ from the reference: its figures enter no ratio.")
    add()
    if check:
        k = check["checked_steps"]
        add(f"Same ids: before timing, every engine generates {len(check['expected'])} tokens from a "
            f"{len(check['prompt'])}-token prompt chosen by bench/peers/llama_check.py (the fp32 PyTorch "
            "reference written from Hugging Face's Llama semantics) and must give the reference's ids on "
            "the leading steps whose top-1 margin exceeds twice the largest logit change its weight "
            "format causes on that sequence (int8_g64_a8: with every linear's input quantised to int8 "
            "as well, greedy_check.py's int8a8_linear; int4_g32_a8 the same per group of 32 on Q4_0 "
            "weights; bf16_a16: every linear's input rounded to bf16 on the bf16 weights, greedy_check.py's "
            "bf16_linear; q4_0: Q4_0 matrices, a Q6_K output head) plus "
            f"{check['tolerance']:g}: "
            + ", ".join(f"{fmt} e = {check['logit_error'][fmt]:.4f}, {k[fmt]} steps" for fmt in k)
            + f". Reference margins per step: {', '.join(f'{m:.3f}' for m in check['margins'])}. "
            + own_format_words(rows))
        add()
    comp = res.get("compile")
    if comp:
        cold, warm = comp["cold"], comp["warm"]
        add(f"Compile time (`tfmc {'DIR' if res['source'] == 'directory' else res['source']} -o EXE`, "
            f"wall time: parse, passes, Halide, link): cold (an empty kernel cache) "
            f"{fmt_ms(Figure(statistics.median(cold), cold[0], cold[-1]))} s over {len(cold)} runs, "
            f"warm (the cache the cold run filled) {fmt_ms(Figure(statistics.median(warm), warm[0], warm[-1]))} s "
            f"over {len(warm)} runs.")
        add()
    foreign = res.get("foreign")
    if foreign:
        add(f"Every measurement (the read bandwidth, the FMA peak, each row's timing) first waited for a quiet "
            f"machine (other processes under {QUIET_CORES} cores over 0.3 s; at most "
            f"{res.get('quiet_budget_s', 0):.0f} s of waiting for the whole section: "
            f"{res.get('waited_s', 0):.0f} s waited). Cores other processes used while "
            "each ran (/proc/stat's busy time less this bench's processes; a llama.cpp row's window also holds "
            "its same-ids check): " + "; ".join(f"{label} {c:.2f}" for label, c in foreign) + ".")
        add()
        busy = [label for label, c in foreign if c > NOISY_CORES]
        if busy:
            add(f"Other processes used more than {NOISY_CORES} cores during {', '.join(busy)}: "
                "those figures are low, and their ratios hold only where both sides met a similar load.")
            add()
    goals(rep, res, sec)
    if res.get("kquant"):
        render_kquant(rep, res, sec)


def kquant_ids_cell(row, rows, n):
    """A K-quant row's "same ids" cell: not judged; its leading ids equal to the fp32 reference's
    and to the other engine's on the same file (tfmc q4_k_m's for llama.cpp, llama.cpp's for tfmc)."""
    other = ("tfmc", KQUANT_TFMC[0]) if row.engine == "llama.cpp" else ("llama.cpp", KQUANT_PEER)
    o = next((r for r in rows if (r.engine, r.dtype) == other and r.check and not r.skip), None)
    words = f"not judged (no K-quant reference): {row.check['agree']} of {n} equal to the fp32 reference's"
    if o is not None:
        words += f", {leading_equal(row.check['ids'], o.check['ids'])} of {n} to {o.engine} {o.dtype}'s"
    return words


def render_kquant(rep, res, sec):
    """Issue 47's part of the section: the Q4_K_M file, memory and load tables, its goals."""
    k, add = res["kquant"], rep.add
    s = shape_of(res["shape"])
    L = s["layers"]
    more = [i for i in range(L) if use_more_bits(i, L)]
    add(f"### Issue 47: llama.cpp's K-quants (a Q4_K_M file, {sec['label']})")
    add()
    add(f"`bench/out/{k['file']}` ({k['bytes'] / 1e6:.0f} MB), written by bench/peers/gguf_llama.py --dtype "
        "q4_k_m from the same checkpoint: the types llama.cpp's `llama-quantize ... Q4_K_M` gives a Llama "
        "(no importance matrix): token_embd and every linear Q4_K, attn_v and ffn_down Q6_K in the "
        f"\"use_more_bits\" layers ({len(more)} of {L}: {', '.join(map(str, more))}), output.weight Q6_K, "
        "norms F32. Its Q4_K blocks come from bench/peers/gguf.py's plain quantiser (per 32-value "
        "sub-block min and scale, not ggml's make_qkx2_quants search): other values than llama-quantize's, "
        "the same types, layout and bytes, which is what the speed depends on. tfmc q4_k_m: `tfmc "
        f"{k['file']} -o NAME` (each tensor in its own type, read in place: q4_k, q6_k), f32 activations; "
        "q4_k_m_a8: the same with `--activations int8` (every linear's input quantised per 32 and "
        "multiplied as integers by the K-quant microkernel); both run with `--weights` the .gguf, timed as "
        "the other tfmc rows. llama.cpp Q4_K_M: the same file in node-llama-cpp (which rounds every "
        "matrix product's input to Q8_K), timed as the other llama.cpp rows. No reference models "
        "K-quants (llama_check.py, format_check.py): the rows' ids are not judged; the table's last "
        "column compares them with the fp32 reference's and with each other's.")
    add()
    programs, load = k.get("programs", {}), k.get("load", {})
    bounds = {}
    if programs:
        out = []
        for dtype, p in programs.items():
            if p.get("arena") is None:
                continue
            bound = k["bytes"] + p["kv"] + p["arena"]
            bounds[dtype] = bound
            info, gen = load.get(dtype, {}).get("rss"), p.get("generate_rss")
            out.append([f"tfmc {dtype}", _mib(k["bytes"]), _mib(p["kv"]), _mib(p["arena"]),
                        f"{_mib(bound)} ({_mib(bound * KQUANT_MEMORY_GOAL)})", _rss(p.get("base_rss")),
                        f"{_rss(info)} ({info.median / bound:.3f}×)" if info else "n/a",
                        f"{_rss(gen)} ({gen.median / bound:.3f}×, {p['generate_threads']} t)" if gen else "n/a"])
        add(table(["program", "file", "K/V cache", "arena", "sum (× 1.05)", "the program alone, `info`",
                   "after load, `info --weights`", "a `generate` run"], out))
        add()
        add(f"Resident memory (MiB): wait4's ru_maxrss (the process's peak resident size) of each process, the "
            f"median [min–max] of {k.get('load_runs', KQUANT_LOAD_RUNS)} `NAME info --weights {k['file']}` "
            "processes (they exit once loaded, so their peak is the resident size after load: the file's mapped "
            "pages, the program and its libraries; the arena and the K/V cache are allocated but not "
            f"touched), of {k.get('rss_runs', KQUANT_RSS_RUNS)} `NAME info` processes without weights (the "
            f"program and its libraries alone), and of {k.get('rss_runs', KQUANT_RSS_RUNS)} `generate` "
            f"processes (the timing prompt and {res['new_tokens'] + 1} tokens: the arena and the K/V cache "
            "touched as a run touches them); in parentheses the ratio to the sum. K/V cache and arena: `NAME "
            "info`'s figures.")
        add()
    if load:
        out = [[f"`{k['file']}` ({dtype} program)" if dtype != "own" else
                f"`{k.get('own_file')}` (tfmc's own file, `convert-weights`; q4_k_m program)",
                _mib(k["own_bytes"] if dtype == "own" else k["bytes"]), fmt_ms(l["load"]), fmt_ms(l["map"]),
                _rss(l["rss"])] for dtype, l in load.items()]
        add(table(["weights file", "MiB", "`load:` ms", "map, page-in, check ms", "peak RSS MiB"], out))
        add()
        add(f"Load: `NAME info --weights W`'s own `load:` figure (map with MAP_POPULATE, checks, binding: "
            f"no conversion either way), the median [min–max] of {k.get('load_runs', KQUANT_LOAD_RUNS)} "
            "processes per file in rounds of one each (each round starting one process later), after each "
            "file was dropped from the page cache, read through once in order (bench/gguf_bench.py's recache: "
            "both cached alike) and loaded by one untimed process."
            + (f" The median of the rounds' ratios .gguf ÷ own file (q4_k_m program): "
               f"{k['load_round_ratio']:.2f}×." if k.get("load_round_ratio") else ""))
        add()
    rows = {(r.engine, r.dtype): r for r in res["rows"]}
    goal_rows = []

    def goal(what, value, target, met, why=None):
        goal_rows.append([what, value if value is not None else "n/a", target,
                          ("met" if met else "**not met**") if value is not None else f"not measured ({why})"])

    def get(engine, dtype):
        r = rows.get((engine, dtype))
        if r is None:
            return None, f"no {engine} {dtype} row"
        if r.skip or not r.decode_tps or not r.prefill:
            return None, f"{engine} {dtype} {r.skip or 'has no figures'}"
        return r, None

    b, why_b = get("llama.cpp", KQUANT_PEER)
    for ours in KQUANT_TFMC:
        a, why_a = get("tfmc", ours)
        v = a.best_decode()[1] / b.best_decode()[1] if a and b else None
        goal(f"decode: tfmc {dtype_label(ours)} ÷ llama.cpp {KQUANT_PEER} on the same file, tokens/s (best "
             "threads each)", f"{v:.2f}×" if v is not None else None, f"≥ {KQUANT_DECODE_GOAL:.2f}×",
             v is not None and v >= KQUANT_DECODE_GOAL, why_a or why_b)
        if v is not None:
            rep.summary.append([f"{sec['label']} decode, Q4_K_M file, {weights_words(ours)}: tokens/s (best threads)",
                                f"{a.best_decode()[1]:.2f} ({a.best_decode()[0]} t)",
                                f"{b.best_decode()[1]:.2f} (llama.cpp {KQUANT_PEER}, {b.best_decode()[0]} t)",
                                f"{v:.2f}×", ""])
    for ours in KQUANT_TFMC:
        a, why_a = get("tfmc", ours)
        t = a.best_prefill()[1].median / b.best_prefill()[1].median if a and b else None
        goal(f"prefill {res['prompt']}: tfmc {dtype_label(ours)} ÷ llama.cpp {KQUANT_PEER} time (best threads "
             "each)", f"{t:.2f}×" if t is not None else None, f"≤ {KQUANT_PREFILL_GOAL:.2f}×",
             t is not None and t <= KQUANT_PREFILL_GOAL, why_a or why_b)
        if t is not None:
            rep.summary.append([f"{sec['label']} prefill {res['prompt']}, Q4_K_M file, {weights_words(ours)}: ms "
                                "(best threads)", f"{fmt_ms(a.best_prefill()[1])} ({a.best_prefill()[0]} t)",
                                f"{fmt_ms(b.best_prefill()[1])} (llama.cpp {KQUANT_PEER}, {b.best_prefill()[0]} t)",
                                f"{1 / t:.2f}×", ""])
    for ours in KQUANT_TFMC:
        info = load.get(ours, {}).get("rss")
        v = info.median / bounds[ours] if info and ours in bounds else None
        goal(f"resident memory after load: tfmc {ours} (`info --weights`, median peak RSS) ÷ (file + K/V "
             "cache + arena)", f"{v:.3f}×" if v is not None else None, f"≤ {KQUANT_MEMORY_GOAL:.2f}×",
             v is not None and v <= KQUANT_MEMORY_GOAL, f"tfmc {ours} did not run")
    for ours in KQUANT_TFMC:
        gen = programs.get(ours, {}).get("generate_rss")
        if gen and ours in bounds:
            v = gen.median / bounds[ours]
            goal(f"(not a goal) a whole `generate` run's peak RSS: tfmc {ours} ÷ (file + K/V cache + arena)",
                 f"{v:.3f}×", f"≤ {KQUANT_MEMORY_GOAL:.2f}×", v <= KQUANT_MEMORY_GOAL)
    a, o = load.get(KQUANT), load.get("own")
    v = a["load"].median / o["load"].median if a and o else None
    goal("load: the Q4_K_M .gguf ÷ tfmc's own file of the same blocks (`convert-weights`), `load:` medians, "
         "q4_k_m program", f"{v:.2f}×" if v is not None else None, f"≤ {KQUANT_LOAD_GOAL:.2f}×",
         v is not None and v <= KQUANT_LOAD_GOAL, "no load figures")
    add("#### Issue 47's goals (ratios of this run)")
    add()
    add(table(["goal", "this run", "target", ""], goal_rows))
    add()


def _mib(x):
    return "n/a" if x is None else f"{x / 2 ** 20:.0f}"


def _rss(fig):
    return "n/a" if fig is None else f"{fig.median / 2 ** 20:.0f} [{fig.min / 2 ** 20:.0f}–{fig.max / 2 ** 20:.0f}]"


def goals(rep, res, sec=SECTION):
    rows = {(r.engine, r.dtype): r for r in res["rows"]}
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

    def goal(what, value, target, met, why=None):
        out.append([what, value if value is not None else "n/a", target,
                    ("met" if met else "**not met**") if value is not None else f"not measured ({why})"])

    comp = res.get("compile")
    label = sec["label"]
    for kind, bound in (("cold", 20.0), ("warm", 2.0)) if sec["compile_goals"] else ():
        v = statistics.median(comp[kind]) if comp else None
        goal(f"compile, {kind} kernel cache (median s)", f"{v:.1f} s" if v is not None else None,
             f"≤ {bound:g} s", v is not None and v <= bound, "tfmc did not compile")
    for ours, theirs in sec["pairs"]:
        a, why_a = get("tfmc", ours)
        b, why_b = get("llama.cpp", theirs)
        v = a.best_decode()[1] / b.best_decode()[1] if a and b else None
        goal(f"decode: tfmc {dtype_label(ours)} ÷ llama.cpp {theirs} tokens/s (best threads each)",
             f"{v:.2f}×" if v is not None else None, "≥ 1.20×", v is not None and v >= 1.2, why_a or why_b)
        if v is not None:
            T, tps = a.best_decode()
            rep.summary.append([f"{label} decode, {weights_words(ours)}: tokens/s (best threads)",
                                f"{tps:.2f} ({T} t)", f"{b.best_decode()[1]:.2f} (llama.cpp {theirs}, "
                                f"{b.best_decode()[0]} t)", f"{v:.2f}×", ""])
    for ours, theirs in sec["pairs"]:
        a, why_a = get("tfmc", ours)
        b, why_b = get("llama.cpp", theirs)
        v = b.best_prefill()[1].median / a.best_prefill()[1].median if a and b else None
        if ours in PREFILL_GOAL:
            # The issue's form for int8 activations: tfmc's time as a fraction of Q8_0's.
            bound = PREFILL_GOAL[ours]
            t = 1.0 / v if v is not None else None
            goal(f"prefill {res['prompt']}: tfmc {dtype_label(ours)} ÷ llama.cpp {theirs} time (best threads "
                 f"each)", f"{t:.2f}×" if t is not None else None, f"≤ {bound:.2f}×",
                 t is not None and t <= bound, why_a or why_b)
        else:
            goal(f"prefill {res['prompt']}: llama.cpp {theirs} ÷ tfmc {ours} time (best threads each)"
                 + ("" if ours == "f32" else sec.get("not_goal", " (not an issue goal)")),
                 f"{v:.2f}×" if v is not None else None, "≥ 1.20×", v is not None and v >= 1.2, why_a or why_b)
        if v is not None:
            T, pre = a.best_prefill()
            Tb, preb = b.best_prefill()
            rep.summary.append([f"{label} prefill {res['prompt']}, {weights_words(ours)}: ms (best threads)",
                                f"{fmt_ms(pre)} ({T} t)", f"{fmt_ms(preb)} (llama.cpp {theirs}, {Tb} t)",
                                f"{v:.2f}×", ""])
    bw, position = res["read_gbs"], res["prompt"] + res["new_tokens"] / 2
    v, why = int4_roof(res["rows"],
                       lambda r: read_roof(r, bw, bytes_per_token(res["shape"], r.fmt, 4, position)))
    goal(f"decode: tfmc int4 of the read-bandwidth roof{f' ({why} t)' if v is not None else ''}",
         f"{100 * v:.0f} %" if v is not None else None, f"≥ {100 * INT4_ROOF_GOAL:.0f} %",
         v is not None and v >= INT4_ROOF_GOAL, why)
    if sec["file_goal"]:
        v = file_ratio(res["rows"], "int4")
        goal("weights file: tfmc int4 ÷ f32", f"{v:.3f}×" if v is not None else None, f"≤ {INT4_FILE_GOAL:.2f}×",
             v is not None and v <= INT4_FILE_GOAL, "no tfmc int4 or f32 file")
    if comp:
        rep.summary.append([f"compile {label}, cold / warm kernel cache (s)",
                            f"{statistics.median(comp['cold']):.1f} / {statistics.median(comp['warm']):.2f}",
                            "", "", ""])
    rep.add(f"### {sec['goals']}")
    rep.add()
    rep.add(table(["goal", "this run", "target", ""], out))
    rep.add()
