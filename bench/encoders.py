"""bench/run.py's `encoders` section: issue 16's goals on Hugging Face checkpoint directories with
random weights (config.json + model.safetensors, written by bench/peers/hf_encoders.py), compiled
by `tfmc DIR`, 2 threads, fp32 unless a tfmc row says otherwise:

  - BERT-base shape (d 768, 12 layers, 12 heads, ffn 3072, vocab 30522): one forward of
    batch 8 × 128 tokens (last_hidden_state and pooler_output), tfmc `bench --batch 8 --seq 128`
    against ONNX Runtime (npm onnxruntime-node on hf_encoders.py's torch.onnx export of the same
    weights) and PyTorch (hf_encoders.py's restatement of BertModel);
  - Marian shape (opus-mt-en-de: d 512, 6 + 6 layers, 8 heads, ffn 2048, vocab 58101): greedy
    translation of a 32-token source (31 random ids and eos) into at most 32 tokens: tfmc
    `generate --source --max-new-tokens 32 --stats` against ONNX Runtime (an encoder graph that
    also returns the cross-attention keys/values, and a decoder graph with past keys/values) and
    PyTorch with a KV cache. Time = prefill (encoder and the first decoder step) + decode.

The three engines' greedy ids are compared; a mismatch is a note in the report, and the ratios of
that model are then left out. Every figure is a median over `runs` timed runs after a warm-up
(tfmc: processes; the peers: calls in one process, as their users run them).

tfmc's narrow formats, the user's choice (docs/precision.md, "Weight precision" and "int8 activations"), are
timed beside f32: on BERT int8 and int4 weights with int8 activations (`--activations int8`), on
Marian bf16, int8 and int4 weights, with and without int8 activations. They change the outputs:
BERT's rows report max |y - y_f32| / max |y_f32| of each output against tfmc f32's on the same ids
(`run --input`), Marian's how many of tfmc f32's greedy ids they keep. Issue 27's goals are
tfmc int8 weights + int8 activations against ONNX Runtime f32.
"""

import json
import os
import re
import statistics

from run import (OUT, PEERS, PYTHON, TFMC, CommandFailed, fmt_num, json_lines, note, run,
                 run_parts, table)
from engines import NPM, NODE_MODULES

THREADS = 2
BERT_BATCH, BERT_SEQ = 8, 128
SOURCE_LEN, NEW = 32, 32
# tfmc's narrow formats, timed besides f32: the user's choice, reported beside the f32 goals
# (docs/precision.md, "Weight precision" and "int8 activations", has their error bounds). key: (tfmc's
# options, the row's label).
FORMATS = {
    "bf16": (["--weight-dtype", "bf16"], "tfmc bf16 weights"),
    "int8": (["--weight-dtype", "int8"], "tfmc int8 weights"),
    "int4": (["--weight-dtype", "int4"], "tfmc int4 weights"),
    "int8a8": (["--weight-dtype", "int8", "--activations", "int8"],
               "tfmc int8 weights + int8 activations"),
    "int4a8": (["--weight-dtype", "int4", "--activations", "int8"],
               "tfmc int4 weights + int8 activations"),
}
BERT_NARROW = ("int8a8", "int4a8")
NARROW = tuple(FORMATS)  # Marian's: every one
# bench/peers/hf_encoders.py's shapes (its `write`), needed by the ONNX Runtime peer and the FLOPs.
BERT = {"d": 768, "layers": 12, "ffn": 3072, "vocab": 30522}
MARIAN = {"d": 512, "layers": 6, "heads": 8, "ffn": 2048, "vocab": 58101, "eos": 0,
          "start": 58100}
HF = os.path.join(PEERS, "hf_encoders.py")
ORT = os.path.join(PEERS, "ort_encoders.mjs")


def checkpoint(model):
    """bench/out/hf_<model>/: written once (the writer is seeded; delete the folder to redo)."""
    folder = os.path.join(OUT, "hf_" + model)
    if not os.path.exists(os.path.join(folder, "model.safetensors")):
        run([PYTHON, HF, "write", "--model", model, "--out", folder, "--seed", "16"], timeout=1800)
    return folder


def compiled(model, folder, extra=(), suffix=""):
    exe = os.path.join(OUT, "hf_" + model + suffix + ".bin")
    run([TFMC, folder, "-o", exe] + list(extra), timeout=1800)
    return exe


def onnx_files(model, folder):
    """The ONNX export (and its check against the float64 reference), once per checkpoint."""
    prefix = os.path.join(OUT, "hf_" + model)
    files = ([prefix + ".onnx"] if model == "bert"
             else [prefix + "_encoder.onnx", prefix + "_decoder.onnx"])
    if not all(os.path.exists(f) for f in files):
        run([PYTHON, HF, "export", "--dir", folder, "--out", prefix, "--check"], timeout=1800)
    return files


def median_of(rows, field):
    return statistics.median(r[field] for r in rows)


# ------------------------------------------------------------------ BERT

def bert_flops():
    """Multiply-adds × 2 of one forward: the projections, the FFN, QK^T and PV, the pooler."""
    d, ffn, L = BERT["d"], BERT["ffn"], BERT["layers"]
    tokens = BERT_BATCH * BERT_SEQ
    per_token_layer = 2 * (4 * d * d + 2 * d * ffn) + 2 * 2 * BERT_SEQ * d
    return tokens * per_token_layer * L + 2 * BERT_BATCH * d * d


def bert_tfmc(exe, folder, runs):
    out, _, _ = run([exe, "bench", "--weights", os.path.join(folder, "model.safetensors"),
                     "--seq", str(BERT_SEQ), "--batch", str(BERT_BATCH), "--threads",
                     str(THREADS), "--repeat", str(runs), "--warmup", "2", "--json"], timeout=1800)
    total = [r for r in json_lines(out) if r.get("type") == "total"][0]
    return {"median_ms": total["median_ms"], "min_ms": total["min_ms"], "max_ms": total["max_ms"]}


def peer_line(cmd):
    """The last `bench: encoders` JSON line a peer program printed."""
    out, _, _ = run(cmd, timeout=1800)
    rows = [r for r in json_lines(out) if r.get("bench") == "encoders"]
    if not rows:
        raise CommandFailed("no encoders line from " + os.path.basename(cmd[1]))
    return rows[-1]


def bert_peer(cmd):
    r = peer_line(cmd)
    return {"median_ms": r["median_ms"], "min_ms": min(r["runs_ms"]), "max_ms": max(r["runs_ms"])}


def bert_input():
    """bench/out/hf_bert_input.safetensors: input_ids [8, 128] from a fixed LCG (no mask: all
    tokens count), the ids on which the narrow formats' outputs are compared with f32's."""
    path = os.path.join(OUT, "hf_bert_input.safetensors")
    if not os.path.exists(path):
        import numpy as np
        ids, x = [], 27
        for _ in range(BERT_BATCH * BERT_SEQ):
            x = (1103515245 * x + 12345) % 2 ** 31
            ids.append(1 + x % (BERT["vocab"] - 1))
        fixtures().write_safetensors(path + ".tmp", {
            "input_ids": np.array(ids, dtype=np.int64).reshape(BERT_BATCH, BERT_SEQ)})
        os.replace(path + ".tmp", path)
    return path


def fixtures():
    """test/fixtures/make_fixtures.py: the safetensors reader and writer."""
    import sys
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "test",
                        "fixtures")
    if here not in sys.path:
        sys.path.insert(0, here)
    import make_fixtures
    return make_fixtures


def bert_outputs(exe, folder, key):
    """{output name: array} of one forward on bert_input()'s ids."""
    path = os.path.join(OUT, f"hf_bert_out_{key}.safetensors")
    run([exe, "run", "--weights", os.path.join(folder, "model.safetensors"), "--input",
         bert_input(), "--output", path, "--threads", str(THREADS)], timeout=600)
    try:
        return fixtures().read_safetensors(path)
    finally:
        if os.path.exists(path):
            os.remove(path)


def bert_error(y, ref):
    """{output: max |y - ref| / max |ref|}: docs/precision.md's measure of a narrow format's error."""
    import numpy as np
    return {k: float(np.max(np.abs(y[k].astype(np.float64) - ref[k])) / np.max(np.abs(ref[k])))
            for k in ref if k in y}


def run_bert(h, res, runs):
    folder = checkpoint("bert")
    res["bert"] = b = {}
    reference = {}

    def tfmc(key):
        """Compiles, times, and (once timed) runs bert_input(): f32's outputs are the reference,
        a narrow format's are compared with them. A failed compile or timing fails this row
        only (run_parts); a failed output run only leaves its error out."""
        extra = ["--max-batch", str(BERT_BATCH)] + (FORMATS[key][0] if key != "f32" else [])
        exe = compiled("bert", folder, extra, "" if key == "f32" else "_" + key)
        r = bert_tfmc(exe, folder, runs)
        try:
            y = bert_outputs(exe, folder, key)
            if key == "f32":
                reference.update(y)
            elif reference:
                r["error"] = bert_error(y, reference)
        except (CommandFailed, OSError, ValueError, KeyError) as e:
            h.notes.append(f"encoders: BERT tfmc {key}: the output comparison failed: "
                           f"{(str(e).splitlines() or [type(e).__name__])[0][:200]}")
        return r

    parts = [("tfmc", lambda: tfmc("f32"))]
    parts += [("tfmc_" + k, lambda k=k: tfmc(k)) for k in BERT_NARROW]
    parts.append(("pytorch", lambda: bert_peer(
        [PYTHON, HF, "torch", "--dir", folder, "--threads", str(THREADS), "--runs", str(runs),
         "--warmup", "1", "--batch", str(BERT_BATCH), "--seq", str(BERT_SEQ)])))
    if os.path.exists(os.path.join(NODE_MODULES, "onnxruntime-node")):
        parts.append(("onnxruntime", lambda: bert_peer(
            ["node", ORT, "--npm", NPM, "--model", "bert", "--onnx", onnx_files("bert", folder)[0],
             "--batch", str(BERT_BATCH), "--seq", str(BERT_SEQ), "--threads", str(THREADS),
             "--runs", str(runs), "--warmup", "1", "--vocab", str(BERT["vocab"])])))
    else:
        h.notes.append(f"encoders: onnxruntime-node is not installed in {NPM} (make bench-npm)")
    run_parts(h, b, parts, "encoders: BERT")


# ---------------------------------------------------------------- Marian

def marian_step_bytes():
    """f32 weight bytes one decode step reads: per decoder layer the self-attention's q, k, v and
    out, the cross-attention's q and out (its keys and values are cached), fc1 and fc2; then the
    tied head. Biases and norms are left out (under 0.1 %)."""
    d, ffn = MARIAN["d"], MARIAN["ffn"]
    per_layer = 6 * d * d + 2 * d * ffn
    return 4 * (MARIAN["layers"] * per_layer + MARIAN["vocab"] * d)


def source_ids():
    """31 ids below the pad id from a fixed LCG, and eos: the same source for every engine."""
    ids, x = [], 16
    for _ in range(SOURCE_LEN - 1):
        x = (1103515245 * x + 12345) % 2 ** 31
        ids.append(1 + x % (MARIAN["vocab"] - 2))
    return ids + [MARIAN["eos"]]


_PREFILL = re.compile(r"^prefill: .* in ([0-9.]+) ms")
_DECODE = re.compile(r"^decode: (\d+) steps in ([0-9.]+) ms")


def marian_tfmc(exe, folder, source, runs):
    cmd = [exe, "generate", "--weights", os.path.join(folder, "model.safetensors"), "--source",
           ",".join(map(str, source)), "--bos", str(MARIAN["start"]), "--eos", str(MARIAN["eos"]),
           "--max-new-tokens", str(NEW), "--threads", str(THREADS), "--stats"]
    run(cmd, quiet=True)  # warm-up: page cache
    rows = []
    for _ in range(runs):
        out, err, _ = run(cmd, quiet=True)
        prefill = decode = None
        for line in err.splitlines():
            m = _PREFILL.search(line)
            if m:
                prefill = float(m.group(1))
            m = _DECODE.search(line)
            if m:
                decode = float(m.group(2))
        if prefill is None or decode is None:
            raise CommandFailed("generate --stats printed no prefill or decode line:\n" + err[-500:])
        ids = [int(t) for t in re.findall(r"-?\d+", out.strip().splitlines()[-1])]
        rows.append({"prefill_ms": prefill, "decode_ms": decode, "total_ms": prefill + decode,
                     "ids": ids})
    return summarize(rows)


def summarize(rows):
    totals = [r["total_ms"] for r in rows]
    return {"total_ms": statistics.median(totals), "min_ms": min(totals), "max_ms": max(totals),
            "prefill_ms": median_of(rows, "prefill_ms"), "decode_ms": median_of(rows, "decode_ms"),
            "ids": rows[-1]["ids"], "runs": len(rows)}


def marian_peer(cmd):
    r = peer_line(cmd)
    return {"total_ms": r["median_ms"], "min_ms": min(r["runs_ms"]), "max_ms": max(r["runs_ms"]),
            "prefill_ms": r["prefill_median_ms"], "decode_ms": r["decode_median_ms"],
            "ids": r["ids"], "runs": len(r["runs_ms"])}


def run_marian(h, res, runs):
    folder = checkpoint("marian")
    source = source_ids()
    res["marian"] = m = {"source": source}
    peer_args = ["--threads", str(THREADS), "--runs", str(runs), "--warmup", "1", "--source",
                 ",".join(map(str, source)), "--new-tokens", str(NEW)]

    def tfmc(key):
        extra = FORMATS[key][0] if key != "f32" else []
        exe = compiled("marian", folder, extra, "" if key == "f32" else "_" + key)
        return marian_tfmc(exe, folder, source, runs)

    parts = [("tfmc", lambda: tfmc("f32"))]
    parts += [("tfmc_" + d, lambda d=d: tfmc(d)) for d in NARROW]
    parts.append(("pytorch", lambda: marian_peer([PYTHON, HF, "torch", "--dir", folder] +
                                                 peer_args)))
    if os.path.exists(os.path.join(NODE_MODULES, "onnxruntime-node")):
        def ort():
            encoder, decoder = onnx_files("marian", folder)
            return marian_peer(["node", ORT, "--npm", NPM, "--model", "marian", "--encoder",
                                encoder, "--decoder", decoder, "--heads", str(MARIAN["heads"]),
                                "--head-dim", str(MARIAN["d"] // MARIAN["heads"]), "--layers",
                                str(MARIAN["layers"]), "--eos", str(MARIAN["eos"]), "--start",
                                str(MARIAN["start"])] + peer_args)
        parts.append(("onnxruntime", ort))
    run_parts(h, m, parts, "encoders: Marian")
    got = {k: m[k]["ids"] for k in ("tfmc", "pytorch", "onnxruntime") if m.get(k)}
    m["ids_agree"] = len({json.dumps(v) for v in got.values()}) == 1
    if not m["ids_agree"]:
        h.notes.append("encoders: the Marian engines' greedy ids differ: " + json.dumps(got))
    # Narrow formats change the logits: how many of f32's ids they keep (a
    # greedy run that leaves f32's path differs in every id after it).
    for d in NARROW:
        r, ref = m.get("tfmc_" + d), m.get("tfmc")
        if r and ref:
            r["same_prefix"] = next((i for i, (a, b) in enumerate(zip(r["ids"], ref["ids"]))
                                     if a != b), min(len(r["ids"]), len(ref["ids"])))


def run_encoders(h):
    note("encoders: BERT-base and Marian (opus-mt shape) checkpoints, tfmc vs ONNX Runtime and "
         "PyTorch")
    runs = 5 if h.quick else 7
    res = {"threads": THREADS, "runs": runs}
    h.results["encoders"] = res
    run_bert(h, res, runs)
    run_marian(h, res, runs)


# ---------------------------------------------------------------- report

def render(rep):
    res = rep.h.results.get("encoders")
    if not res:
        return
    add = rep.add
    add("## 10. Hugging Face encoders and translation: BERT-base and Marian shapes")
    add()
    add(f"Checkpoint directories in the Hugging Face layout with random weights "
        f"(bench/peers/hf_encoders.py `write`), compiled with `tfmc DIR`; {res['threads']} "
        f"threads, fp32 unless a row says otherwise, medians of {res['runs']} runs after a "
        f"warm-up (bench/encoders.py). "
        f"ONNX Runtime: npm onnxruntime-node on a torch.onnx export (opset 17) of the same "
        f"weights, intra-op threads {res['threads']}, inter-op 1, all graph optimizations "
        f"(bench/peers/ort_encoders.mjs); PyTorch 1.13: bench/peers/hf_encoders.py's restatement "
        f"of BertModel and MarianMTModel (with a KV cache for generation).")
    add()
    add("tfmc's narrow rows are the user's choice (`--weight-dtype`, docs/precision.md's \"Weight "
        "precision\"), the f32 checkpoint converted at load. With int8 activations "
        "(`--activations int8`, docs/precision.md's \"int8 activations\") each linear also quantises its "
        "input to int8, one scale per group of 64 (int8 weights) or 32 (int4 weights) input "
        "features, and multiplies integers. These formats change the outputs: BERT's rows give "
        "max |y − y_f32| ÷ max |y_f32| of each output against tfmc f32's on the same ids, "
        "Marian's how many of tfmc f32's greedy ids they keep.")
    add()
    goals = []

    def goal(what, tfmc_ms, peer_ms, bound, why=None):
        value = peer_ms / tfmc_ms if tfmc_ms and peer_ms and not why else None
        target = f"≥ {bound:.1f}×"
        if why:
            goals.append([what, "n/a", target, why])
        elif value is None:
            goals.append([what, "n/a", target, "not measured"])
        else:
            goals.append([what, f"{value:.2f}×", target, "met" if value >= bound else "**not met**"])
        return value

    b = res.get("bert") or {}
    rows = []
    flops = bert_flops()
    peak, isa = rep.h.peak_gflops(THREADS) if hasattr(rep.h, "peak_gflops") else (None, "")
    # Narrow rows absent from the results (a run before they existed) are left out; a failed
    # one is n/a, as a failed peer.
    for key, label in ([("tfmc", "tfmc f32")] +
                       [("tfmc_" + k, FORMATS[k][1]) for k in BERT_NARROW if "tfmc_" + k in b] +
                       [("onnxruntime", "ONNX Runtime f32"), ("pytorch", "PyTorch f32")]):
        r = b.get(key)
        if not r:
            rows.append([label, "n/a", "", "", "failed (see the notes)" if key in b and
                         key.startswith("tfmc_") else ""])
            continue
        gflops = flops / (r["median_ms"] * 1e6)
        if key == "tfmc":
            error = "reference"
        elif "error" in r:
            error = ", ".join(f"{r['error'][k]:.3f}" for k in ("last_hidden_state",
                                                               "pooler_output") if k in r["error"])
        else:
            error = "n/a (see the notes)" if key.startswith("tfmc_") else ""
        rows.append([label, f"{r['median_ms']:.0f} [{r['min_ms']:.0f}–{r['max_ms']:.0f}]",
                     fmt_num(gflops), f"{100 * gflops / peak:.0f} % of {isa}" if peak else "",
                     error])
    add(f"### BERT-base shape, one forward of batch {BERT_BATCH} × {BERT_SEQ} tokens "
        f"({flops / 1e9:.0f} GFLOP)")
    add()
    add(table(["engine", "ms [min–max]", "GFLOP/s", "of the FMA peak (section 1)",
               "error vs tfmc f32: last_hidden_state, pooler_output"], rows))
    add()
    t = (b.get("tfmc") or {}).get("median_ms")
    ort_ms = (b.get("onnxruntime") or {}).get("median_ms")
    goal("BERT: ONNX Runtime ms ÷ tfmc ms", t, ort_ms, 1.5)
    goal("BERT (issue 45): ONNX Runtime ms ÷ tfmc ms", t, ort_ms, 1.3)
    goal("BERT, int8 activations (issues 27 and 45): ONNX Runtime f32 ms ÷ tfmc int8 weights + "
         "int8 activations ms", (b.get("tfmc_int8a8") or {}).get("median_ms"), ort_ms, 2.0)
    m = res.get("marian") or {}
    rows = []
    for key, label in ([("tfmc", "tfmc f32")] +
                       [("tfmc_" + k, FORMATS[k][1]) for k in NARROW if "tfmc_" + k in m] +
                       [("onnxruntime", "ONNX Runtime f32"), ("pytorch", "PyTorch f32")]):
        r = m.get(key)
        if not r:
            rows.append([label, "n/a", "", "", "", ""])
            continue
        same = (f"{r['same_prefix']} of {len(r['ids'])}" if "same_prefix" in r
                else "yes" if m.get("ids_agree") else "**no**")
        rows.append([label, f"{r['total_ms']:.0f} [{r['min_ms']:.0f}–{r['max_ms']:.0f}]",
                     f"{r['prefill_ms']:.1f}", f"{r['decode_ms']:.0f}", str(len(r["ids"])), same])
    add(f"### Marian shape, greedy translation of a {SOURCE_LEN}-token source into at most {NEW} "
        f"tokens")
    add()
    add(table(["engine", "total ms [min–max]", "prefill ms (encoder + first step)", "decode ms",
               "ids", "f32's ids (narrow: the first that agree)"], rows))
    add()
    if m:
        add("Greedy ids " + ("equal in every engine." if m.get("ids_agree") else
                             "**differ** between engines (see the notes): no ratio below counts."))
        add()
        read = rep.h.bandwidth(THREADS, "read") if hasattr(rep.h, "bandwidth") else None
        step = marian_step_bytes()
        tf = m.get("tfmc")
        if read and tf and len(tf["ids"]) > 1:
            add(f"Decode roof: an f32 decode step reads {step / 1e6:.0f} MB of weights (the "
                f"{MARIAN['vocab']}-wide head alone {4 * MARIAN['vocab'] * MARIAN['d'] / 1e6:.0f} "
                f"MB), {1e3 * step / (read * 1e9):.1f} ms at this run's {THREADS}-thread read "
                f"bandwidth ({read:.1f} GB/s, section 1); tfmc's f32 decode steps took "
                f"{tf['decode_ms'] / (len(tf['ids']) - 1):.1f} ms each, ONNX Runtime's "
                + (f"{m['onnxruntime']['decode_ms'] / (len(m['onnxruntime']['ids']) - 1):.1f} ms"
                   if m.get("onnxruntime") else "n/a") + ".")
            add()
    t = (m.get("tfmc") or {}).get("total_ms") if m.get("ids_agree") else None
    goal("Marian: ONNX Runtime ms ÷ tfmc ms", t, (m.get("onnxruntime") or {}).get("total_ms"), 1.5)
    goal("Marian: PyTorch ms ÷ tfmc ms", t, (m.get("pytorch") or {}).get("total_ms"), 3.0)
    for d in ("bf16", "int8"):
        goal(f"Marian: ONNX Runtime f32 ms ÷ tfmc {d}-weights ms (the user's choice, not the f32 "
             f"goal)", (m.get("tfmc_" + d) or {}).get("total_ms"),
             (m.get("onnxruntime") or {}).get("total_ms"), 1.5)
    # Issue 27's: a run that stopped at eos sooner did less work, and its time compares with
    # nothing.
    a8, ort = m.get("tfmc_int8a8") or {}, m.get("onnxruntime") or {}
    goal("Marian, int8 activations (issues 27 and 45): ONNX Runtime f32 ms ÷ tfmc int8 weights + "
         "int8 activations ms", a8.get("total_ms"), ort.get("total_ms"), 2.5,
         f"not comparable: {len(a8['ids'])} ids against ONNX Runtime's {len(ort['ids'])}"
         if a8 and ort and len(a8["ids"]) != len(ort["ids"]) else None)
    add("### Goals of issues 16, 27 and 45 (ratios of this run)")
    add()
    add(table(["goal", "this run", "target", ""], goals))
    add()
    for what, tfmc_r, peer, label in (
            ("BERT-base forward b8×128 (ms)", b.get("tfmc"), b.get("onnxruntime"), "ONNX Runtime"),
            ("Marian translation 32 → 32 tokens (ms)", m.get("tfmc"), m.get("onnxruntime"),
             "ONNX Runtime")):
        if tfmc_r and peer:
            key = "median_ms" if "median_ms" in tfmc_r else "total_ms"
            rep.summary.append([what, fmt_num(tfmc_r[key], 0), fmt_num(peer[key], 0) + f" ({label})",
                                f"{peer[key] / tfmc_r[key]:.2f}×", ""])
