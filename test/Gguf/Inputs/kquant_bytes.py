#!/usr/bin/python3
"""K-quant weights that `NAME convert-weights` wrote from an f32 checkpoint, checked
independently of tfmc.

    kquant_bytes.py check CHECKPOINT CONVERTED TYPE [--ggml LIB]
        Every tensor of CONVERTED that holds super-blocks (U8 [rows, cols / 256, B]) against
        CHECKPOINT/model.safetensors's f32 tensor of the same name quantised to TYPE (q4_k,
        q5_k, q6_k) by ggml's reference quantiser: with --ggml, ggml's own library (LIB, a
        libggml-base.so: quantize_row_q{4,5,6}_K_ref through ctypes); without it, q6_k only,
        by bench/peers/gguf.py's NumPy port of quantize_row_q6_K_ref. Prints the tensors and
        bytes compared and exits 0 when every byte is equal; else names the first tensor, row
        and byte that differ and exits 1.
    kquant_bytes.py widen CONVERTED OUT
        CONVERTED with every super-block tensor replaced by its F32 values, dequantized by
        gguf_models.py's NumPy reader of ggml's blocks (B = 144, 176, 210: Q4_K, Q5_K, Q6_K):
        an f32 program run on OUT must give what the K-quant program gives on CONVERTED.
"""
import ctypes
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "E2E", "Inputs"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "bench", "peers"))

import gguf  # noqa: E402  bench/peers/gguf.py
import gguf_models  # noqa: E402
from safetensors_io import read, write  # noqa: E402

BLOCK_BYTES = {"q4_k": 144, "q5_k": 176, "q6_k": 210}
GGML_TYPE = {144: 12, 176: 13, 210: 14}


def super_block_tensors(path):
    for name, (dtype, shape, data) in sorted(read(path).items()):
        if dtype == "U8" and len(shape) == 3 and shape[2] in GGML_TYPE:
            yield name, shape, np.frombuffer(data, dtype=np.uint8)


def ggml_quantiser(lib_path, dtype):
    lib = ctypes.CDLL(lib_path)
    fn = getattr(lib, "quantize_row_%s_ref" % dtype.replace("_k", "_K"))
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    fn.restype = None

    def quantise(w):
        w = np.ascontiguousarray(w, dtype=np.float32)
        out = np.zeros(w.size // 256 * BLOCK_BYTES[dtype], dtype=np.uint8)
        fn(w.ctypes.data, out.ctypes.data, w.size)
        return out
    return quantise


def check(checkpoint, converted, dtype, lib_path):
    if lib_path:
        quantise = ggml_quantiser(lib_path, dtype)
    elif dtype == "q6_k":
        def quantise(w):
            return np.frombuffer(gguf.q6_k_bytes(w), dtype=np.uint8)
    else:
        sys.exit("kquant_bytes.py: %s needs --ggml (ggml's library)" % dtype)
    source = read(os.path.join(checkpoint, "model.safetensors"))
    tensors = values = 0
    for name, shape, got in super_block_tensors(converted):
        if shape[2] != BLOCK_BYTES[dtype]:
            sys.exit("%s: tensor '%s' has blocks of %d bytes, not %s's %d"
                     % (converted, name, shape[2], dtype, BLOCK_BYTES[dtype]))
        src_dtype, src_shape, data = source[name]
        assert src_dtype == "F32", (name, src_dtype)
        w = np.frombuffer(data, dtype="<f4").reshape(src_shape)
        want = quantise(w)
        if not np.array_equal(got, want):
            at = int(np.argmax(got != want))
            row_bytes = shape[1] * shape[2]
            print("%s: tensor '%s' differs from the reference at row %d, byte %d of the row "
                  "(%d of %d bytes differ)" % (converted, name, at // row_bytes, at % row_bytes,
                                               int((got != want).sum()), got.size))
            sys.exit(1)
        tensors += 1
        values += w.size
    if tensors == 0:
        sys.exit("%s: no super-block tensors" % converted)
    print("%d %s tensors (%d values): every byte equal to %s" % (
        tensors, dtype, values, "ggml's quantize_row_%s_ref" % dtype.replace("_k", "_K")
        if lib_path else "the NumPy port of quantize_row_q6_K_ref"))


def widen(converted, out):
    tensors = read(converted)
    for name, shape, raw in super_block_tensors(converted):
        n = shape[0] * shape[1] * 256
        f32 = gguf_models.dequantize(raw, GGML_TYPE[shape[2]], n).reshape(shape[0], -1)
        tensors[name] = ["F32", list(f32.shape), f32.astype("<f4").tobytes()]
    write(out, tensors, pad=True)


def main():
    args = sys.argv[1:]
    if args[:1] == ["check"] and len(args) in (4, 6):
        lib = args[5] if len(args) == 6 and args[4] == "--ggml" else None
        check(args[1], args[2], args[3], lib)
    elif args[:1] == ["widen"] and len(args) == 3:
        widen(args[1], args[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
