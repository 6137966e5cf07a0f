#!/usr/bin/python3
"""Writes the GGUF files of test/Gguf with bench/peers/gguf.py's writer (the one make bench hands
to llama.cpp), and copies of them broken in one field.

    make_gguf.py model OUT              the model file dump.test checks (every value type, five
                                        tensors of five ggml types)
    make_gguf.py aligned64 OUT          general.alignment 64
    make_gguf.py offsets OUT            prints "data offset: N" and "file size: N" of OUT as the
                                        writer laid it out (its tensors' padded bytes from the end)
    make_gguf.py break KIND IN OUT      IN with one field broken (KINDS below)
    make_gguf.py huge-key OUT           a header whose first key claims 1 GiB (the file is made
                                        2 GiB by the test, sparse)
    make_gguf.py fuzz-seeds DIR         the seeds of the gguf fuzz target (test/fuzz/corpus/gguf),
                                        each under 4 KB
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "bench", "peers"))
import numpy as np  # noqa: E402
import gguf  # noqa: E402
from gguf import (GGML_BF16, GGML_F32, GGML_Q4_0, GGML_Q6_K, GGML_Q8_0, T_ARRAY, T_BOOL,  # noqa: E402
                  T_FLOAT32, T_FLOAT64, T_INT8, T_INT16, T_INT32, T_INT64, T_STRING, T_UINT8,
                  T_UINT16, T_UINT32, T_UINT64, Writer)

VOCAB = 1000
# (name, numpy shape, ggml type): ggml's dims are the reverse.
TENSORS = [("token_embd.weight", (VOCAB // 10, 64), GGML_Q8_0),
           ("blk.0.attn_norm.weight", (64,), GGML_F32),
           ("blk.0.ffn_down.weight", (64, 96), GGML_Q4_0),
           ("output.weight", (VOCAB // 10, 256), GGML_Q6_K),
           ("test.cube", (2, 3, 4), GGML_BF16)]


def tokens():
    return ["<unk>", "<s>", "</s>"] + ["\u2581the"] + [f"t{i}" for i in range(4, VOCAB)]


def model(path):
    w = Writer("make_gguf.py")
    w.add("general.architecture", T_STRING, "llama")
    w.add("general.name", T_STRING, 'tiny "test" model\n')
    w.add("general.type", T_STRING, "model")
    w.add("llama.block_count", T_UINT32, 2)
    w.add("llama.context_length", T_UINT32, 128)
    w.add("llama.rope.freq_base", T_FLOAT32, 10000.0)
    w.add("llama.attention.layer_norm_rms_epsilon", T_FLOAT32, 1e-5)
    w.add("test.u8", T_UINT8, 255)
    w.add("test.i8", T_INT8, -128)
    w.add("test.u16", T_UINT16, 65535)
    w.add("test.i16", T_INT16, -32768)
    w.add("test.u64", T_UINT64, 2**64 - 1)
    w.add("test.i64", T_INT64, -2**63)
    w.add("test.f64", T_FLOAT64, 0.1)
    w.add("test.bool", T_BOOL, False)
    w.add_array("test.bools", T_BOOL, [True, False, True])
    w.add_array("test.nested", T_ARRAY, [(T_UINT8, [1, 2]), (T_STRING, ["x"])])
    w.add("tokenizer.ggml.model", T_STRING, "llama")
    w.add_array("tokenizer.ggml.tokens", T_STRING, tokens())
    w.add_array("tokenizer.ggml.scores", T_FLOAT32, [float(-i) for i in range(VOCAB)])
    w.add_array("tokenizer.ggml.token_type", T_INT32, [2, 3, 3] + [1] * (VOCAB - 3))
    w.add("tokenizer.ggml.bos_token_id", T_UINT32, 1)
    w.add("tokenizer.ggml.add_bos_token", T_BOOL, True)
    rng = np.random.default_rng(31)
    for name, shape, ggml_type in TENSORS:
        w.add_tensor(name, rng.standard_normal(shape).astype(np.float32), ggml_type)
    w.write(path)


def aligned64(path):
    w = Writer("make_gguf.py", alignment=64)
    w.add("general.architecture", T_STRING, "llama")
    w.add_tensor("a", np.ones((3,), dtype=np.float32), GGML_F32)
    w.add_tensor("b", np.ones((2, 32), dtype=np.float32), GGML_Q8_0)
    w.write(path)


def fuzz_seeds(directory):
    rng = np.random.default_rng(31)
    w = Writer("make_gguf.py")
    w.add("general.architecture", T_STRING, "llama")
    w.add("llama.block_count", T_UINT32, 1)
    w.add("llama.rope.freq_base", T_FLOAT32, 10000.0)
    w.add_array("tokenizer.ggml.tokens", T_STRING, ["<unk>", "<s>", "</s>", "\u2581a", "<0x0A>", "b"])
    w.add_array("tokenizer.ggml.scores", T_FLOAT32, [0.0, 0.0, 0.0, -1.0, 0.0, -2.0])
    w.add_array("tokenizer.ggml.token_type", T_INT32, [2, 3, 3, 1, 6, 1])
    w.add("tokenizer.ggml.add_bos_token", T_BOOL, True)
    for name, shape, ggml_type in [("token_embd.weight", (4, 32), GGML_Q8_0),
                                   ("output_norm.weight", (8,), GGML_F32),
                                   ("blk.0.ffn_up.weight", (2, 32), GGML_Q4_0),
                                   ("output.weight", (1, 256), GGML_Q6_K),
                                   ("blk.0.attn_k.weight", (2, 3), GGML_BF16)]:
        w.add_tensor(name, rng.standard_normal(shape).astype(np.float32), ggml_type)
    w.write(os.path.join(directory, "small-llama.gguf"))
    with open(os.path.join(directory, "small-llama.gguf"), "rb") as f:
        cut = f.read()[:500]             # inside the tensor infos
    with open(os.path.join(directory, "small-llama-cut.gguf"), "wb") as f:
        f.write(cut)

    w = Writer("make_gguf.py", alignment=64)
    for vtype, value in [(T_UINT8, 7), (T_INT8, -7), (T_UINT16, 700), (T_INT16, -700),
                         (T_UINT32, 70000), (T_INT32, -70000), (T_FLOAT32, 0.5), (T_BOOL, True),
                         (T_STRING, "s"), (T_UINT64, 2**40), (T_INT64, -2**40), (T_FLOAT64, 0.25)]:
        w.add(f"t{vtype}", vtype, value)
        w.add_array(f"a{vtype}", vtype, [value, value])
        w.add_array(f"e{vtype}", vtype, [])
    w.add_array("nested", T_ARRAY, [(T_ARRAY, [(T_UINT8, [1])]), (T_STRING, ["x", "y"])])
    w.add_tensor("a", np.ones((3,), dtype=np.float32), GGML_F32)
    w.add_tensor("b", np.ones((1, 32), dtype=np.float32), GGML_Q8_0)
    w.write(os.path.join(directory, "every-value-type.gguf"))

    with open(os.path.join(directory, "header-only-v2.gguf"), "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 2, 0, 0))


def offsets(path):
    size = os.path.getsize(path)
    data = 0
    for _, shape, ggml_type in TENSORS:
        n = gguf.encoded_size(shape, ggml_type)
        data += n + (-n) % gguf.ALIGNMENT
    print(f"data offset: {size - data}")
    print(f"file size: {size}")


def tensor_info(b, name):
    """Where tensor `name`'s info starts after its name: (n_dims offset, type offset, offset offset)."""
    key = struct.pack("<Q", len(name)) + name.encode()
    at = b.index(key) + len(key)
    n_dims = struct.unpack_from("<I", b, at)[0]
    type_at = at + 4 + 8 * n_dims
    return at, type_at, type_at + 4


def key_at(b, key):
    """Where key `key`'s name starts (after its length)."""
    return b.index(struct.pack("<Q", len(key)) + key.encode()) + 8


def broken(kind, b):
    b = bytearray(b)
    if kind == "magic":
        b[0:4] = b"GGML"
    elif kind == "version":
        b[4:8] = struct.pack("<I", 1)
    elif kind == "header":
        del b[20:]
    elif kind == "tensor-count":
        b[8:16] = struct.pack("<Q", 10**9)
    elif kind == "tokens-cut":          # the file ends inside the token strings
        del b[key_at(b, "tokenizer.ggml.tokens") + 9000:]
    elif kind == "duplicate-key":       # general.type becomes a second general.name
        at = key_at(b, "general.type")
        b[at:at + 12] = b"general.name"
    elif kind == "value-type":
        at = key_at(b, "llama.block_count") + len("llama.block_count")
        b[at:at + 4] = struct.pack("<I", 13)
    elif kind == "iq-type":
        _, type_at, _ = tensor_info(b, "blk.0.attn_norm.weight")
        b[type_at:type_at + 4] = struct.pack("<I", 16)
    elif kind == "unknown-type":
        _, type_at, _ = tensor_info(b, "blk.0.attn_norm.weight")
        b[type_at:type_at + 4] = struct.pack("<I", 99)
    elif kind == "zero-dim":
        at, _, _ = tensor_info(b, "blk.0.ffn_down.weight")
        b[at + 12:at + 20] = struct.pack("<Q", 0)
    elif kind == "misaligned":
        _, _, offset_at = tensor_info(b, "output.weight")
        offset = struct.unpack_from("<Q", b, offset_at)[0]
        b[offset_at:offset_at + 8] = struct.pack("<Q", offset + 16)
    elif kind == "overlap":             # the norm moves onto the embedding's bytes
        _, _, offset_at = tensor_info(b, "blk.0.attn_norm.weight")
        b[offset_at:offset_at + 8] = struct.pack("<Q", 32)
    elif kind == "past-end":            # the last tensor loses its last byte (and its padding)
        del b[len(b) - 17:]
    elif kind == "bad-name":
        at = b.index(b"test.cube")
        b[at + 4] = 0xFF
    else:
        raise SystemExit(f"make_gguf.py: unknown kind {kind}")
    return bytes(b)


def main():
    what = sys.argv[1]
    if what == "model":
        model(sys.argv[2])
    elif what == "aligned64":
        aligned64(sys.argv[2])
    elif what == "offsets":
        offsets(sys.argv[2])
    elif what == "break":
        with open(sys.argv[3], "rb") as f:
            data = broken(sys.argv[2], f.read())
        with open(sys.argv[4], "wb") as f:
            f.write(data)
    elif what == "fuzz-seeds":
        fuzz_seeds(sys.argv[2])
    elif what == "huge-key":
        with open(sys.argv[2], "wb") as f:
            f.write(b"GGUF" + struct.pack("<IQQQ", 3, 0, 1, 1 << 30))
    else:
        raise SystemExit(f"make_gguf.py: unknown command {what}")


if __name__ == "__main__":
    main()
