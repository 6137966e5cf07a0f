#!/usr/bin/python3
"""Small GGUF models for tfmc's GGUF tests, their references, and broken copies.

    gguf_models.py make OUT
        Writes five random Hugging Face checkpoints, OUT/{llama,qwen2,phi3,gemma2,gpt2}/ (config.json,
        model.safetensors: test/fixtures' writers and weight scales), their inputs
        (OUT/{arch}.inputs.safetensors: batch 2, right-padded), and converts each with bench/peers'
        writers (gguf_llama.py, gguf_gpt2.py) to OUT/{arch}_{f32,q8_0,q4_0}.gguf; and two files
        with K-quants: OUT/llama_kq.gguf (Q8_0, blk.0.ffn_down Q4_K, blk.1.ffn_down Q6_K) and
        OUT/qwen2_kq.gguf (Q8_0, blk.0.ffn_down Q5_K, blk.1.ffn_down Q6_K); three llama files of
        ggml's 32-value types that tfmc transcodes to int8: OUT/llama_{q5_0,iq4_nl}.gguf (every 2-D
        weight Q5_0 or IQ4_NL, token_embd and output.weight included; bench/peers/gguf.py's Q5_0 is
        ggml's quantize_row_q5_0_ref, its IQ4_NL a plain quantiser) and OUT/llama_legacy_mix.gguf
        (Q4_0, blk.0.ffn_down Q5_0, blk.1.ffn_down IQ4_NL, output.weight Q8_0); and a sixth
        checkpoint, OUT/llama_k/ (hidden 256, 4 heads, 2 K/V heads, intermediate 512, 2 layers,
        vocab 160, max 48: every row whole 256-value super-blocks) as the mixes llama-quantize
        names Q4_K_M and Q5_K_M, OUT/llama_k_{q4_k_m,q5_k_m}.gguf: token_embd and the other
        linears Q4_K (Q5_K), attn_v, ffn_down and output.weight Q6_K, the norms F32.
          llama: hidden 64, 4 heads, 2 K/V heads (Dh 16), intermediate 256, 2 layers, vocab 160,
                 max 48, untied (output.weight; Q8_0 in the Q4_0 file: its rows of 64 are not
                 whole Q6_K blocks)
          qwen2: hidden 64, 4 heads, 2 K/V heads, intermediate 256, 2 layers, vocab 130, max 48,
                 rope_theta 1000, q/k/v biases, tied (no output.weight)
          phi3:  hidden 64, 4 heads, 2 K/V heads, intermediate 128, 2 layers, vocab 130, max 48,
                 sliding window 11 (shorter than both rows), untied; qkv_proj and gate_up_proj
                 packed (llama.cpp's attn_qkv and ffn_up; Q8_0 head in the Q4_0 file)
          gemma2: hidden 64, 4 heads, 2 K/V heads, head_dim 32 (not 64 / 4), query_pre_attn_scalar
                 32 (= head_dim, as Gemma 2 2B's and 9B's: the file carries none, and llama.cpp
                 scales by head_dim^-1/2), intermediate 128, 3 layers (sliding, full, sliding),
                 sliding window 5 (shorter than both rows), caps 3 (scores) and 5 (logits), both
                 binding, vocab 130, max 48, tied (no output.weight; token_embd in the file's dtype);
                 test/fixtures/make_gemma2.py's weights
          gpt2:  n_embd 64, 4 heads, n_inner 256, 2 layers, vocab 100, n_positions 40
    gguf_models.py reference HFDIR FILE.gguf INPUTS OUT.safetensors [--int8-group G] [--int8-activations]
        The logits of the GGUF file's weights as an independent reader sees them: every tensor
        dequantized in NumPy from ggml's block definitions, a llama file's Q and K rows put back
        in Hugging Face's order (a phi3 file's are in it: llama.cpp's NEOX rope), llama.cpp's
        names mapped back to the checkpoint's (phi3: attn_qkv and ffn_up to the packed qkv_proj
        and gate_up_proj; its longrope factor tensors checked against config.json's), and the
        float64 forward pass of test/fixtures (make_llama.numpy_forward, make_fixtures'
        hf_torch_forward) on them. A gemma2 file runs make_gemma2.numpy_forward (sandwich norms,
        the attention cap before the mask, the window on even layers, GeGLU with tanh GELU, the
        embeddings times f32(sqrt(hidden)), tied logits, then the final cap) on the file's own
        values: each norm's whole gain g as w = g - 1 (exact in float64: 1 + w is g), and the
        caps, the window, head_dim, eps and theta from the file's gemma2.* keys; the scores are
        scaled as llama.cpp scales them, by key_length^-1/2 (embedding_length / head_count for a
        46-layer file), whatever config.json's query_pre_attn_scalar; a gemma2 file with an
        output.weight is refused (Gemma 2's head is token_embd). With --int8-group G every 2-D
        weight but learned positions is first rounded as tfmc's int8 stores it (per row and group
        of G, s = f16(max|w| / 127), q = rint(w / s)): the reference of a program that converts
        the file's values to int8. With --int8-activations (llama and qwen2 files) each linear's
        input is quantised first as tfmc's --activations int8 quantises it (per row and group of
        32, d = f32(max|x| / 127), q = rint(x / d)): the reference of an int8-activation program.
    gguf_models.py variant FILE.gguf OUT.gguf EDIT...
        A copy of FILE with its header edited (the data section as it was):
          drop-key=K            the key removed
          key=K:TYPE:VALUE      the key set (added) as u32, i32, f32 or string
          drop-tensor=T         the tensor's info removed (its bytes stay, unreferenced)
          rename-tensor=T:U     the tensor's name set to U
          tensor-type=T:N       the tensor's ggml type number set to N
          tensor-dims=T:A,B     the tensor's ggml dims set
    gguf_models.py error FILE.gguf INPUTS
        Prints max |a - b|, max |b| of two safetensors files' logits over unpadded positions.
"""
import json
import os
import struct
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "test", "fixtures"))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
import make_fixtures as mf  # noqa: E402
import make_gemma2 as mg  # noqa: E402
import make_llama as ml  # noqa: E402

PEERS = os.path.join(ROOT, "bench", "peers")

# ----------------------------------------------------------------------------
# Reading GGUF (independently of tfmc's reader)
# ----------------------------------------------------------------------------

SCALARS = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "<u1",
           10: "<u8", 11: "<i8", 12: "<f8"}


class Gguf:
    def __init__(self, path):
        self.blob = open(path, "rb").read()
        b = self.blob
        assert b[:4] == b"GGUF", path
        self.version, n_tensors, n_kv = struct.unpack_from("<IQQ", b, 4)
        at = 24
        self.kv = []  # (key, type, value, raw bytes of the pair)
        for _ in range(n_kv):
            start = at
            key, at = self._string(at)
            (vtype,) = struct.unpack_from("<I", b, at)
            value, at = self._value(vtype, at + 4)
            self.kv.append((key, vtype, value, b[start:at]))
        self.tensors = []  # [name, dims (ggml order), type, offset]
        for _ in range(n_tensors):
            name, at = self._string(at)
            (n,) = struct.unpack_from("<I", b, at)
            dims = list(struct.unpack_from(f"<{n}Q", b, at + 4))
            ggml_type, offset = struct.unpack_from("<IQ", b, at + 4 + 8 * n)
            at += 4 + 8 * n + 12
            self.tensors.append([name, dims, ggml_type, offset])
        align = self.meta().get("general.alignment", 32)
        self.data = at + (-at % align)

    def _string(self, at):
        (n,) = struct.unpack_from("<Q", self.blob, at)
        return self.blob[at + 8:at + 8 + n].decode("utf-8", "replace"), at + 8 + n

    def _value(self, vtype, at):
        if vtype == 8:
            return self._string(at)
        if vtype == 9:
            etype, n = struct.unpack_from("<IQ", self.blob, at)
            at += 12
            out = []
            for _ in range(n):
                v, at = self._value(etype, at)
                out.append(v)
            return out, at
        dt = np.dtype(SCALARS[vtype])
        return np.frombuffer(self.blob, dt, 1, at)[0].item(), at + dt.itemsize

    def meta(self):
        return {k: v for k, _, v, _ in self.kv}

    def array(self, name):
        """The tensor as f32 numpy, numpy's order ([rows, cols])."""
        for tname, dims, ggml_type, offset in self.tensors:
            if tname == name:
                n = int(np.prod(dims))
                raw = np.frombuffer(self.blob, np.uint8, BYTES[ggml_type](n), self.data + offset)
                return dequantize(raw, ggml_type, n).reshape(list(reversed(dims)))
        raise KeyError(name)


def _half(raw, at):
    return raw[:, at:at + 2].copy().view(np.float16).astype(np.float32)[:, 0]


def dq_q8_0(raw):
    b = raw.reshape(-1, 34)
    return _half(b, 0)[:, None] * b[:, 2:].view(np.int8).astype(np.float32)


def dq_q4_0(raw):
    b = raw.reshape(-1, 18)
    qs = b[:, 2:]
    q = np.concatenate([qs & 0xF, qs >> 4], axis=1).astype(np.float32) - 8
    return _half(b, 0)[:, None] * q


def dq_q5_0(raw):
    """block_q5_0 {half d; u8 qh[4]; u8 qs[16]}: value j = d * (q_j - 16), q_j's low four bits the
    low nibble of qs[j] (j < 16) or the high nibble of qs[j - 16], its fifth bit j of qh (a
    little-endian u32)."""
    b = raw.reshape(-1, 22)
    qh = b[:, 2:6].copy().view("<u4")[:, 0].astype(np.int64)
    qs = b[:, 6:22].astype(np.int64)
    low = np.concatenate([qs & 0xF, qs >> 4], axis=1)
    fifth = (qh[:, None] >> np.arange(32)) & 1
    return _half(b, 0)[:, None] * ((low | (fifth << 4)) - 16).astype(np.float32)


# ggml-common.h's kvalues_iq4nl.
IQ4_NL_VALUES = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], np.float32)


def dq_iq4_nl(raw):
    """block_iq4_nl {half d; u8 qs[16]}: value j = d * kvalues_iq4nl[the low nibble of qs[j] (j < 16)
    or the high nibble of qs[j - 16]]."""
    b = raw.reshape(-1, 18)
    qs = b[:, 2:]
    return _half(b, 0)[:, None] * IQ4_NL_VALUES[np.concatenate([qs & 0xF, qs >> 4], axis=1)]


def _scale_min(scales):  # [nb, 12] -> sc, m [nb, 8] (ggml's get_scale_min_k4)
    sc = np.zeros((scales.shape[0], 8), np.float32)
    m = np.zeros_like(sc)
    for j in range(8):
        if j < 4:
            sc[:, j], m[:, j] = scales[:, j] & 63, scales[:, j + 4] & 63
        else:
            sc[:, j] = (scales[:, j + 4] & 0xF) | ((scales[:, j - 4] >> 6) << 4)
            m[:, j] = (scales[:, j + 4] >> 4) | ((scales[:, j] >> 6) << 4)
    return sc, m


def dq_qk(raw, bits):
    b = raw.reshape(-1, 144 if bits == 4 else 176)
    d, dmin = _half(b, 0), _half(b, 2)
    sc, m = _scale_min(b[:, 4:16])
    qs = b[:, 16:144] if bits == 4 else b[:, 48:176]
    out = np.zeros((b.shape[0], 8, 32), np.float32)
    for j in range(8):
        chunk = qs[:, 32 * (j // 2):32 * (j // 2) + 32]
        q = (chunk & 0xF) if j % 2 == 0 else (chunk >> 4)
        q = q.astype(np.float32)
        if bits == 5:
            q = q + ((b[:, 16:48] >> j) & 1) * 16
        out[:, j] = (d * sc[:, j])[:, None] * q - (dmin * m[:, j])[:, None]
    return out


def dq_q6_k(raw):
    b = raw.reshape(-1, 210)
    ql, qh, sc = b[:, :128], b[:, 128:192], b[:, 192:208].view(np.int8).astype(np.float32)
    d = _half(b, 208)
    out = np.zeros((b.shape[0], 256), np.float32)
    for n in range(2):
        L, H, S = ql[:, 64 * n:64 * n + 64], qh[:, 32 * n:32 * n + 32], sc[:, 8 * n:8 * n + 8]
        for part, (low, shift) in enumerate(((L[:, :32] & 0xF, 0), (L[:, 32:] & 0xF, 2),
                                             (L[:, :32] >> 4, 4), (L[:, 32:] >> 4, 6))):
            q = (low | (((H >> shift) & 3) << 4)).astype(np.float32) - 32
            for half in range(2):
                cols = slice(128 * n + 32 * part + 16 * half, 128 * n + 32 * part + 16 * half + 16)
                out[:, cols] = (d * S[:, 2 * part + half])[:, None] * q[:, 16 * half:16 * half + 16]
    return out


BYTES = {0: lambda n: 4 * n, 1: lambda n: 2 * n, 30: lambda n: 2 * n, 8: lambda n: n // 32 * 34,
         2: lambda n: n // 32 * 18, 12: lambda n: n // 256 * 144, 13: lambda n: n // 256 * 176,
         14: lambda n: n // 256 * 210, 6: lambda n: n // 32 * 22, 20: lambda n: n // 32 * 18}


def dequantize(raw, ggml_type, n):
    if ggml_type == 0:
        return raw.view("<f4").astype(np.float32)
    if ggml_type == 1:
        return raw.view("<f2").astype(np.float32)
    if ggml_type == 30:
        return (raw.view("<u2").astype(np.uint32) << 16).view(np.float32)
    f = {8: dq_q8_0, 2: dq_q4_0, 12: lambda r: dq_qk(r, 4), 13: lambda r: dq_qk(r, 5), 14: dq_q6_k,
         6: dq_q5_0, 20: dq_iq4_nl}
    return f[ggml_type](raw).reshape(n)


def interleaved_to_rotate_half(w, heads):
    """The inverse of gguf_llama.py's rotate_half_to_interleaved: row h·D + 2i + j -> h·D + j·D/2 + i."""
    rows = w.shape[0]
    rest = w.shape[1:]
    return w.reshape(heads, rows // heads // 2, 2, *rest).swapaxes(1, 2).reshape(w.shape)


def int8_rounded(w, group):
    """w as tfmc's int8 stores it (WeightConvert.h): per row and group, s = f16(max|w| / 127),
    q = clamp(rint(w / s), -127, 127)."""
    rows, cols = w.shape
    out = np.empty_like(w)
    for g in range(0, cols, group):
        part = w[:, g:g + group]
        s = (np.abs(part).max(1) / np.float32(127)).astype(np.float16).astype(np.float32)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(s[:, None] > 0, np.clip(np.rint(part / s[:, None]), -127, 127), 0)
        out[:, g:g + group] = q * s[:, None]
    return out


# ----------------------------------------------------------------------------
# make
# ----------------------------------------------------------------------------

LLAMA = ml._config("llama", hidden_size=64, intermediate_size=256, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=48,
                   vocab_size=160)
# Wide enough for K-quants everywhere (rows of whole 256-value super-blocks).
LLAMA_K = ml._config("llama", hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=48,
                     vocab_size=160)
# What llama-quantize's Q4_K_M and Q5_K_M give a small model's tensors: the main type, Q6_K for
# attn_v, ffn_down and the output head (llama-quant.cpp's "use_more_bits" layers are all of them
# at 2 layers).
K_MIXES = {"q4_k_m": "q4_k", "q5_k_m": "q5_k"}
K_SIX = ("attn_v", "ffn_down")
# ggml's types whose values are d times an integer that int8 holds (tfmc transcodes them at load).
LEGACY = ("q5_0", "iq4_nl")
QWEN2 = ml._config("qwen2", hidden_size=64, intermediate_size=256, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=48,
                   vocab_size=130, rope_theta=1000.0, tie_word_embeddings=True,
                   use_sliding_window=False, sliding_window=4096, max_window_layers=2)
PHI3 = ml._config("phi3", hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=48,
                  original_max_position_embeddings=48, vocab_size=130, sliding_window=11)
GEMMA2 = mg._config(hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4,
                    num_key_value_heads=2, head_dim=32, query_pre_attn_scalar=32, attn_logit_softcapping=3.0,
                    final_logit_softcapping=5.0, sliding_window=5, max_position_embeddings=48,
                    vocab_size=130, bos_token_id=2, eos_token_id=1)
GPT2 = {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "bos_token_id": 99,
        "eos_token_id": 99, "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 40,
        "n_embd": 64, "n_head": 4, "n_inner": None, "n_layer": 2, "n_positions": 40,
        "vocab_size": 100}
LENGTHS = [21, 13]


def inputs(vocab, seed):
    rng = np.random.default_rng(seed)
    S = max(LENGTHS)
    ids = np.zeros((2, S), np.int64)
    mask = np.zeros((2, S), np.int64)
    for b, n in enumerate(LENGTHS):
        ids[b, :n] = rng.integers(0, vocab, n)
        mask[b, :n] = 1
    ids[0, 1], ids[1, 2] = vocab - 1, 0
    return {"input_ids": ids, "attention_mask": mask}


def write_checkpoint(directory, config, W):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    mf.write_safetensors(os.path.join(directory, "model.safetensors"), W)


def convert(args):
    subprocess.run([sys.executable] + args, check=True, stdout=subprocess.DEVNULL)


def make(out):
    os.makedirs(out, exist_ok=True)
    for arch, config, seed in (("llama", LLAMA, 3101), ("qwen2", QWEN2, 3102), ("phi3", PHI3, 3104),
                               ("gemma2", GEMMA2, 3118)):
        directory = os.path.join(out, arch)
        maker = mg.make_weights if arch == "gemma2" else ml.make_weights
        write_checkpoint(directory, config, maker(config, seed))
        mf.write_safetensors(os.path.join(out, arch + ".inputs.safetensors"),
                             inputs(config["vocab_size"], seed))
        for dtype in ("f32", "q8_0", "q4_0"):
            convert([os.path.join(PEERS, "gguf_llama.py"), "--checkpoint", directory, "--dtype", dtype,
                     "--output", os.path.join(out, f"{arch}_{dtype}.gguf")])
        if arch == "llama":
            # ggml's legacy 32-value types that are int8 exactly: every 2-D weight Q5_0 (IQ4_NL);
            # and a Q4_0 file with one ffn_down of each.
            linears = [f"blk.{layer}.{t}.weight" for layer in range(config["num_hidden_layers"])
                       for t in ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")]
            for legacy in LEGACY:
                types = [arg for name in ["token_embd.weight", "output.weight"] + linears
                         for arg in ("--type", f"{name}={legacy}")]
                convert([os.path.join(PEERS, "gguf_llama.py"), "--checkpoint", directory, "--dtype", "q8_0",
                         *types, "--output", os.path.join(out, f"llama_{legacy}.gguf")])
            convert([os.path.join(PEERS, "gguf_llama.py"), "--checkpoint", directory, "--dtype", "q4_0",
                     "--type", "blk.0.ffn_down.weight=q5_0", "--type", "blk.1.ffn_down.weight=iq4_nl",
                     "--output", os.path.join(out, "llama_legacy_mix.gguf")])
        if arch in ("phi3", "gemma2"):
            continue
        first = "q4_k" if arch == "llama" else "q5_k"
        convert([os.path.join(PEERS, "gguf_llama.py"), "--checkpoint", directory, "--dtype", "q8_0",
                 "--type", "blk.0.ffn_down.weight=" + first, "--type", "blk.1.ffn_down.weight=q6_k",
                 "--output", os.path.join(out, f"{arch}_kq.gguf")])
    directory = os.path.join(out, "llama_k")
    write_checkpoint(directory, LLAMA_K, ml.make_weights(LLAMA_K, 3119))
    mf.write_safetensors(os.path.join(out, "llama_k.inputs.safetensors"),
                         inputs(LLAMA_K["vocab_size"], 3119))
    for mix, main_type in K_MIXES.items():
        types = ["--type", "output.weight=q6_k", "--type", "token_embd.weight=" + main_type]
        for layer in range(LLAMA_K["num_hidden_layers"]):
            for t in ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"):
                types += ["--type", f"blk.{layer}.{t}.weight=" + ("q6_k" if t in K_SIX else main_type)]
        convert([os.path.join(PEERS, "gguf_llama.py"), "--checkpoint", directory, "--dtype", "q8_0",
                 *types, "--output", os.path.join(out, f"llama_k_{mix}.gguf")])
    directory = os.path.join(out, "gpt2")
    write_checkpoint(directory, GPT2, mf.hf_make_weights(GPT2, 3103))
    mf.write_safetensors(os.path.join(out, "gpt2.inputs.safetensors"), inputs(GPT2["vocab_size"], 3103))
    for dtype in ("f32", "q8_0", "q4_0"):
        convert([os.path.join(PEERS, "gguf_gpt2.py"), "--weights", os.path.join(directory, "model.safetensors"),
                 "--dtype", dtype, "--heads", "4", "--output", os.path.join(out, f"gpt2_{dtype}.gguf")])


# ----------------------------------------------------------------------------
# reference
# ----------------------------------------------------------------------------

LLAMA_NAMES = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
               "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
               "ffn_norm": "post_attention_layernorm", "ffn_gate": "mlp.gate_proj",
               "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
PHI3_NAMES = {"attn_norm": "input_layernorm", "attn_qkv": "self_attn.qkv_proj",
              "attn_output": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
              "ffn_up": "mlp.gate_up_proj", "ffn_down": "mlp.down_proj"}
GEMMA2_NAMES = dict(LLAMA_NAMES, ffn_norm="pre_feedforward_layernorm",
                    post_attention_norm="post_attention_layernorm",
                    post_ffw_norm="post_feedforward_layernorm")
GPT2_NAMES = {"attn_norm": "ln_1", "attn_qkv": "attn.c_attn", "attn_output": "attn.c_proj",
              "ffn_norm": "ln_2", "ffn_up": "mlp.c_fc", "ffn_down": "mlp.c_proj"}


class Int8Activations(np.ndarray):
    """A linear's weight whose input is first quantised as tfmc's --activations int8 does
    (docs/precision.md): each row of x in f32, per group of 32 values, d = f32(max|x| / 127),
    q = rint(f32(x · f32(1 / d))) clipped to ±127, and the product taken on q · d (float64)."""

    def __rmatmul__(self, x):
        xf = np.asarray(x, dtype=np.float32)
        groups = xf.reshape(xf.shape[:-1] + (-1, 32))
        d = (np.abs(groups).max(axis=-1, keepdims=True) / np.float32(127)).astype(np.float32)
        inverse = np.where(d == 0, np.float32(0), np.float32(1) / np.where(d == 0, 1, d)).astype(np.float32)
        q = np.clip(np.rint((groups * inverse).astype(np.float32)), -127, 127)
        values = (q.astype(np.float64) * d.astype(np.float64)).reshape(xf.shape)
        return values @ np.asarray(self)


def reference(hf_dir, path, inputs_path, out, group=None, int8_activations=False):
    with open(os.path.join(hf_dir, "config.json")) as f:
        config = json.load(f)
    g = Gguf(path)
    meta = g.meta()
    arch = meta["general.architecture"]
    feed = mf.read_safetensors(inputs_path)
    W = {}
    for name, dims, _, _ in g.tensors:
        a = g.array(name)
        if group and a.ndim == 2 and name != "position_embd.weight":
            a = int8_rounded(a, group)
        parts = name.split(".")
        if arch == "phi3" and parts[0] in ("rope_factors_long", "rope_factors_short"):
            # Longrope's lists: the forward pass takes them from config.json; they must be its.
            listed = config["rope_scaling"][parts[0][len("rope_factors_"):] + "_factor"]
            if not np.array_equal(a, np.array(listed, dtype=np.float32)):
                raise SystemExit(f"gguf_models: {path}: {name} is not config.json's list")
            continue
        if arch == "llama" and len(parts) == 4 and parts[2] in ("attn_q", "attn_k"):
            heads = meta["llama.attention.head_count" + ("" if parts[2] == "attn_q" else "_kv")]
            a = interleaved_to_rotate_half(a, heads)
        if arch == "gpt2":
            if parts[0] == "blk":
                hf = f"transformer.h.{parts[1]}.{GPT2_NAMES[parts[2]]}.{parts[3]}"
                if parts[3] == "weight" and parts[2] not in ("attn_norm", "ffn_norm"):
                    a = a.T.copy()  # Conv1D [in, out]
            else:
                hf = {"token_embd.weight": "transformer.wte.weight",
                      "position_embd.weight": "transformer.wpe.weight",
                      "output_norm.weight": "transformer.ln_f.weight",
                      "output_norm.bias": "transformer.ln_f.bias"}.get(name)
        else:
            if parts[0] == "blk":
                names = {"phi3": PHI3_NAMES, "gemma2": GEMMA2_NAMES}.get(arch, LLAMA_NAMES)
                hf = f"model.layers.{parts[1]}.{names[parts[2]]}.{parts[3]}" if parts[2] in names else None
            else:
                hf = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
                      "output.weight": "lm_head.weight" if arch != "gemma2" else None}.get(name)
            if arch == "gemma2" and a.ndim == 1:
                # The file's whole gain g; make_gemma2's norms multiply by 1 + w.
                a = a.astype(np.float64) - 1.0
        if hf is None:
            raise SystemExit(f"gguf_models: {path}: unexpected tensor {name}")
        if int8_activations and (hf.endswith("_proj.weight") or hf == "lm_head.weight"):
            if arch not in ("llama", "qwen2"):
                raise SystemExit("gguf_models: --int8-activations: llama and qwen2 files only")
            a = np.asarray(a, dtype=np.float64).view(Int8Activations)
        W[hf] = a
    if arch == "gpt2":
        logits = mf.hf_torch_forward(config, W, feed)
    elif arch == "gemma2":
        logits = mg.numpy_forward(gemma2_config(config, meta), W, feed["input_ids"], feed["attention_mask"])
    else:
        logits = ml.numpy_forward(config, W, feed["input_ids"], feed["attention_mask"])
    mf.write_safetensors(out, {"logits": np.asarray(logits, dtype=np.float32)})


def gemma2_config(config, meta):
    """config.json with what a gemma2 file says in its stead: the caps, the window, head_dim, eps,
    theta, and llama.cpp's query_pre_attn_scalar (key_length; embedding_length / head_count for 46
    layers, Gemma 2 27B). The shapes must be config.json's."""
    for key, mine in (("embedding_length", "hidden_size"), ("block_count", "num_hidden_layers"),
                      ("attention.head_count", "num_attention_heads"),
                      ("attention.head_count_kv", "num_key_value_heads"), ("vocab_size", "vocab_size"),
                      ("feed_forward_length", "intermediate_size")):
        if meta["gemma2." + key] != config[mine]:
            raise SystemExit(f"gguf_models: gemma2.{key} is {meta['gemma2.' + key]}, config.json's {mine} "
                             f"{config[mine]}")
    head_dim = meta["gemma2.attention.key_length"]
    scalar = (meta["gemma2.embedding_length"] // meta["gemma2.attention.head_count"]
              if meta["gemma2.block_count"] == 46 else head_dim)
    return dict(config, head_dim=head_dim, query_pre_attn_scalar=scalar,
                attn_logit_softcapping=meta["gemma2.attn_logit_softcapping"],
                final_logit_softcapping=meta["gemma2.final_logit_softcapping"],
                sliding_window=meta["gemma2.attention.sliding_window"],
                rms_norm_eps=meta["gemma2.attention.layer_norm_rms_epsilon"],
                rope_theta=meta["gemma2.rope.freq_base"])


def error(a_path, b_path, inputs_path):
    a = mf.read_safetensors(a_path)["logits"].astype(np.float64)
    b = mf.read_safetensors(b_path)["logits"].astype(np.float64)
    mask = mf.read_safetensors(inputs_path)["attention_mask"] != 0
    print(f"max |diff| {np.abs(a - b)[mask].max():.3g}, max |logit| {np.abs(b)[mask].max():.3g}")


# ----------------------------------------------------------------------------
# variant
# ----------------------------------------------------------------------------

def encode_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def variant(path, out, edits):
    g = Gguf(path)
    kv = [(k, raw) for k, _, _, raw in g.kv]
    tensors = [list(t) for t in g.tensors]
    for edit in edits:
        what, _, arg = edit.partition("=")
        if what == "drop-key":
            kv = [(k, raw) for k, raw in kv if k != arg]
        elif what == "key":
            key, vtype, value = arg.split(":", 2)
            body = {"u32": lambda v: struct.pack("<II", 4, int(v)), "i32": lambda v: struct.pack("<Ii", 5, int(v)),
                    "f32": lambda v: struct.pack("<If", 6, float(v)),
                    "string": lambda v: struct.pack("<I", 8) + encode_string(v)}[vtype](value)
            raw = encode_string(key) + body
            if any(k == key for k, _ in kv):
                kv = [(k, raw if k == key else r) for k, r in kv]
            else:
                kv.append((key, raw))
        elif what == "drop-tensor":
            tensors = [t for t in tensors if t[0] != arg]
        elif what == "rename-tensor":
            name, new = arg.split(":")
            next(t for t in tensors if t[0] == name)[0] = new
        elif what == "tensor-type":
            name, number = arg.split(":")
            next(t for t in tensors if t[0] == name)[2] = int(number)
        elif what == "tensor-dims":
            name, dims = arg.split(":")
            next(t for t in tensors if t[0] == name)[1] = [int(x) for x in dims.split(",")]
        else:
            raise SystemExit(f"gguf_models: unknown edit {edit}")
    head = b"GGUF" + struct.pack("<IQQ", g.version, len(tensors), len(kv)) + b"".join(raw for _, raw in kv)
    for name, dims, ggml_type, offset in tensors:
        head += encode_string(name) + struct.pack(f"<I{len(dims)}QIQ", len(dims), *dims, ggml_type, offset)
    head += b"\0" * (-len(head) % 32)
    with open(out, "wb") as f:
        f.write(head + g.blob[g.data:])


def main():
    command, args = sys.argv[1], sys.argv[2:]
    if command == "make":
        make(args[0])
    elif command == "reference":
        group = None
        if "--int8-group" in args:
            i = args.index("--int8-group")
            group = int(args[i + 1])
            args = args[:i] + args[i + 2:]
        int8_activations = "--int8-activations" in args
        args = [a for a in args if a != "--int8-activations"]
        reference(*args, group=group, int8_activations=int8_activations)
    elif command == "variant":
        variant(args[0], args[1], args[2:])
    elif command == "error":
        error(*args)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
