#!/usr/bin/python3
"""The tests' Q5_0 and IQ4_NL writers and readers against ggml's own library (ctypes).

    ggml_legacy_check.py NPM_DIR [--mutate WHAT]
        Loads libggml-base.so from node-llama-cpp's prebuilt Linux x64 CPU binaries under NPM_DIR
        (the lit substitution %node_llama_cpp) and checks, on random rows and hand-picked blocks
        (an all-zero block, a largest |x| positive and negative, a value of each sign at the
        extremes, so that Q5_0's q reaches 0 and its clamp at 31):
          - bench/peers/gguf.py's Q5_0 bytes equal ggml's quantize_row_q5_0_ref's, byte for byte;
          - gguf_models.py's NumPy reader (dq_q5_0, dq_iq4_nl) gives ggml's dequantize_row_q5_0 and
            dequantize_row_iq4_nl values bit for bit, on those bytes, on ggml's quantize_iq4_nl
            bytes, on gguf.py's IQ4_NL bytes, and on random bytes (every nibble and fifth bit,
            random finite half scales, and blocks whose d is 0, -0, an infinity or a NaN: the
            reader's NaNs where ggml's are);
          - gguf.py's plain IQ4_NL quantiser is a valid quantiser: its root-mean-square error is
            within 1.5 times that of ggml's quantize_iq4_nl (which searches scales) on the rows.
        Prints one line per check and fails on the first broken one. --mutate breaks the NumPy side
        on purpose (q5_0-offset: q - 15; iq4_nl-value: a wrong level; q5_0-writer: d = max / -15),
        to show the check fails.
"""
import ctypes
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
sys.path.insert(0, HERE)
import gguf  # noqa: E402
import gguf_models as gm  # noqa: E402

LIB = "node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so"


def load(npm_dir):
    lib = ctypes.CDLL(os.path.join(npm_dir, LIB))
    ptr, i64 = ctypes.c_void_p, ctypes.c_int64
    for name in ("quantize_row_q5_0_ref", "dequantize_row_q5_0", "dequantize_row_iq4_nl"):
        getattr(lib, name).argtypes = [ptr, ptr, i64]
        getattr(lib, name).restype = None
    lib.quantize_iq4_nl.argtypes = [ptr, ptr, i64, i64, ptr]
    lib.quantize_iq4_nl.restype = ctypes.c_size_t
    return lib


def addr(a):
    return a.ctypes.data_as(ctypes.c_void_p)


def ggml_q5_0(lib, x):
    x = np.ascontiguousarray(x, np.float32).reshape(-1)
    out = np.zeros(x.size // 32 * 22, np.uint8)
    lib.quantize_row_q5_0_ref(addr(x), addr(out), x.size)
    return out


def ggml_iq4_nl(lib, x):
    x = np.ascontiguousarray(x, np.float32)
    out = np.zeros(x.size // 32 * 18, np.uint8)
    lib.quantize_iq4_nl(addr(x), addr(out), x.shape[0], x.shape[1], None)
    return out


def ggml_dequantize(lib, name, raw, n):
    raw = np.ascontiguousarray(raw, np.uint8)
    y = np.zeros(n, np.float32)
    getattr(lib, name)(addr(raw), addr(y), n)
    return y


def same_values(a, b):
    """Bit for bit, but any NaN for a NaN."""
    a, b = np.asarray(a, np.float32).reshape(-1), np.asarray(b, np.float32).reshape(-1)
    nan = np.isnan(a)
    return a.shape == b.shape and np.array_equal(nan, np.isnan(b)) and \
        np.array_equal(a[~nan].view(np.uint32), b[~nan].view(np.uint32))


def rows():
    rng = np.random.default_rng(3131)
    x = rng.standard_normal((48, 256)).astype(np.float32) * np.float32(0.05)
    x[0, :32] = 0                               # all zero: d = -0, q = 16 (value 0)
    x[1, :32] = np.linspace(-1, 1, 32)          # largest |x| the last, positive; its negative the first
    x[2, :32] = -np.linspace(-1, 1, 32)         # the first of largest |x| negative
    x[3, :32] = rng.integers(-16, 16, 32)       # integers: q - 16 exact at d = 1
    x[4, :32] = 1e-30                           # d underflows in f16
    x[5, 5] = 40.0                              # one outlier
    return x


def random_blocks(rng, count, block_bytes):
    raw = rng.integers(0, 256, (count, block_bytes), dtype=np.uint8)
    d = (rng.standard_normal(count) * 0.01).astype(np.float16)
    d[:6] = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0], np.float16)
    raw[:, :2] = d.view(np.uint8).reshape(-1, 2)
    return raw


def main():
    args = sys.argv[1:]
    mutate = None
    if "--mutate" in args:
        i = args.index("--mutate")
        mutate = args[i + 1]
        args = args[:i] + args[i + 2:]
    if len(args) != 1:
        sys.exit(__doc__)
    lib = load(args[0])
    if mutate == "q5_0-offset":
        orig = gm.dq_q5_0
        gm.dq_q5_0 = lambda raw: orig(raw) + gm._half(raw.reshape(-1, 22), 0)[:, None]
    elif mutate == "iq4_nl-value":
        gm.IQ4_NL_VALUES[11] = 37
    elif mutate == "q5_0-writer":
        x0 = gguf.q5_0_parts
        gguf.q5_0_parts = lambda a: (lambda q, d: (q, (d.astype(np.float32) * 16 / 15).astype(np.float16)))(*x0(a))
    elif mutate:
        sys.exit(f"ggml_legacy_check: unknown --mutate {mutate}")
    failed = []

    def check(ok, what):
        print(("ok: " if ok else "FAILED: ") + what)
        if not ok:
            failed.append(what)

    x = rows()
    n = x.size
    ours = np.frombuffer(gguf.q5_0_bytes(x), np.uint8)
    theirs = ggml_q5_0(lib, x)
    check(np.array_equal(ours, theirs), f"Q5_0: gguf.py's bytes are quantize_row_q5_0_ref's ({n // 32} blocks)")
    check(same_values(gm.dequantize(ours, 6, n), ggml_dequantize(lib, "dequantize_row_q5_0", ours, n)),
          "Q5_0: dq_q5_0 of gguf.py's bytes is dequantize_row_q5_0's")
    rng = np.random.default_rng(3132)
    raw = random_blocks(rng, 4096, 22)
    check(same_values(gm.dequantize(raw.reshape(-1), 6, 4096 * 32),
                      ggml_dequantize(lib, "dequantize_row_q5_0", raw, 4096 * 32)),
          "Q5_0: dq_q5_0 of random blocks is dequantize_row_q5_0's")

    for name, raw in (("ggml's quantize_iq4_nl", ggml_iq4_nl(lib, x)),
                      ("gguf.py's", np.frombuffer(gguf.iq4_nl_bytes(x), np.uint8)),
                      ("random", random_blocks(rng, 4096, 18).reshape(-1))):
        count = raw.size // 18 * 32
        check(same_values(gm.dequantize(raw, 20, count),
                          ggml_dequantize(lib, "dequantize_row_iq4_nl", raw, count)),
              f"IQ4_NL: dq_iq4_nl of {name} bytes is dequantize_row_iq4_nl's")
    body = x[6:]                                  # the random rows
    plain = gm.dequantize(np.frombuffer(gguf.iq4_nl_bytes(body), np.uint8), 20, body.size)
    searched = gm.dequantize(ggml_iq4_nl(lib, body), 20, body.size)
    rms = lambda y: float(np.sqrt(np.mean((y.reshape(body.shape).astype(np.float64) - body) ** 2)))
    check(rms(plain) <= 1.5 * rms(searched),
          f"IQ4_NL: gguf.py's rms error {rms(plain):.3g}, quantize_iq4_nl's {rms(searched):.3g}")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    with np.errstate(invalid="ignore", over="ignore"):   # the NaN and infinite scales
        main()
