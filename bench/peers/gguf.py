"""GGUF version 3, as llama.cpp's loader (gguf.cpp) reads it: the part every model's writer shares
(gguf_gpt2.py, gguf_llama.py). All integers little-endian:

    "GGUF"  u32 version = 3  u64 tensor count  u64 key/value count
    key/value pairs:  string key, u32 value type, value
    tensor infos:     string name, u32 n_dims, u64 dims[n_dims] (innermost first), u32 ggml type,
                      u64 offset of the data from the start of the data section (a multiple of ALIGNMENT)
    zero padding to ALIGNMENT, then the data section (each tensor's bytes, padded to ALIGNMENT)

A string is a u64 byte length and UTF-8 bytes; an array value is u32 element type, u64 count,
elements. Dims are ggml's order, the reverse of numpy's: a PyTorch Linear weight [out, in] is
written as dims [in, out], its rows unchanged.

Tensor encodings:

    F32  (ggml type 0): IEEE single.
    BF16 (ggml type 30): the top 16 bits of the f32 after rounding to nearest even.
    Q8_0 (ggml type 8): each row cut into blocks of 32 consecutive values; a block is 34 bytes:
         an IEEE half scale d = max|x| / 127 (rounded to half), then 32 int8 q = round(x / d)
         (ties to even, clamped to [-127, 127]; d = 0 gives q = 0). The value is q * d.
         The row length must be a multiple of 32.

Tensors are kept as the arrays given (a memory map stays one) and encoded one at a time while the
file is written, so a model of several GB is never held encoded in memory.
"""
import os
import struct

import numpy as np

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGNMENT = 32  # llama.cpp's default (general.alignment absent)

# gguf value types
T_UINT32, T_INT32, T_FLOAT32, T_STRING, T_ARRAY = 4, 5, 6, 8, 9
# ggml tensor types
GGML_F32, GGML_Q8_0, GGML_BF16 = 0, 8, 30
DTYPES = {"f32": GGML_F32, "bf16": GGML_BF16, "q8_0": GGML_Q8_0}
Q8_0_BLOCK = 32
# Rows encoded at a time: bounds the temporary copies of a large tensor.
CHUNK_ELEMENTS = 1 << 24


def bf16_bytes(a):
    """f32 -> bf16 bits, round to nearest even (NaN is not expected in weights)."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16).tobytes()


def q8_0_bytes(a):
    """[rows, cols] f32 -> Q8_0 blocks, row-major, 34 bytes per 32 values."""
    blocks = np.ascontiguousarray(a, dtype=np.float32).reshape(-1, Q8_0_BLOCK)
    scale = (np.abs(blocks).max(axis=1) / 127.0).astype(np.float16)
    s32 = scale.astype(np.float32)
    inv = np.divide(1.0, s32, out=np.zeros_like(s32), where=s32 != 0)
    q = np.clip(np.rint(blocks * inv[:, None]), -127, 127).astype(np.int8)
    out = np.empty((blocks.shape[0], 2 + Q8_0_BLOCK), dtype=np.uint8)
    out[:, :2] = scale.view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q.view(np.uint8)
    return out.tobytes()


def encoded_size(shape, ggml_type):
    n = int(np.prod(shape))
    return {GGML_F32: 4 * n, GGML_BF16: 2 * n, GGML_Q8_0: n // Q8_0_BLOCK * (2 + Q8_0_BLOCK)}[ggml_type]


def encode(a, ggml_type):
    if ggml_type == GGML_F32:
        return np.ascontiguousarray(a, dtype=np.float32).tobytes()
    if ggml_type == GGML_BF16:
        return bf16_bytes(a)
    return q8_0_bytes(a)


class Writer:
    def __init__(self, who="gguf"):
        self.who = who     # the calling script, for its error messages
        self.kv = []       # encoded key/value pairs
        self.tensors = []  # (name, numpy shape, ggml type, array)

    @staticmethod
    def _str(s):
        b = s.encode("utf-8")
        return struct.pack("<Q", len(b)) + b

    def add(self, key, vtype, value):
        enc = self._str(key) + struct.pack("<I", vtype)
        if vtype == T_STRING:
            enc += self._str(value)
        elif vtype == T_UINT32:
            enc += struct.pack("<I", value)
        elif vtype == T_FLOAT32:
            enc += struct.pack("<f", value)
        else:
            raise ValueError(vtype)
        self.kv.append(enc)

    def add_array(self, key, etype, values):
        enc = self._str(key) + struct.pack("<IIQ", T_ARRAY, etype, len(values))
        if etype == T_STRING:
            enc += b"".join(self._str(v) for v in values)
        elif etype == T_INT32:
            enc += np.asarray(values, dtype="<i4").tobytes()
        elif etype == T_FLOAT32:
            enc += np.asarray(values, dtype="<f4").tobytes()
        else:
            raise ValueError(etype)
        self.kv.append(enc)

    def add_tensor(self, name, array, ggml_type):
        if ggml_type == GGML_Q8_0 and array.shape[-1] % Q8_0_BLOCK:
            raise SystemExit(f"{self.who}: {name}: Q8_0 needs rows of a multiple of {Q8_0_BLOCK} values, "
                             f"got {array.shape[-1]}")
        self.tensors.append((name, tuple(array.shape), ggml_type, array))

    def write(self, path):
        pad = lambda n: (-n) % ALIGNMENT
        infos, offset = [], 0
        for name, shape, ggml_type, _ in self.tensors:
            dims = list(reversed(shape))
            infos.append(self._str(name) + struct.pack("<I", len(dims))
                         + struct.pack(f"<{len(dims)}Q", *dims) + struct.pack("<IQ", ggml_type, offset))
            size = encoded_size(shape, ggml_type)
            offset += size + pad(size)
        head = (GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, len(self.tensors), len(self.kv))
                + b"".join(self.kv) + b"".join(infos))
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(head + b"\0" * pad(len(head)))
            for _, shape, ggml_type, array in self.tensors:
                a = np.asarray(array, dtype=np.float32)
                rows = a.reshape(-1, shape[-1]) if a.ndim > 1 else a.reshape(1, -1)
                step = max(1, CHUNK_ELEMENTS // rows.shape[1])
                for r in range(0, rows.shape[0], step):
                    f.write(encode(rows[r:r + step], ggml_type))
                size = encoded_size(shape, ggml_type)
                f.write(b"\0" * pad(size))
        os.replace(tmp, path)
