#!/usr/bin/python3
"""Writes a GGUF (version 3) file of architecture "llama" (or "qwen2", "phi3", "gemma2") for llama.cpp from
a Hugging Face Llama (or Qwen2, Phi-3, Gemma 2) checkpoint directory (what llama_checkpoint.py writes: config.json,
model.safetensors, tokenizer.json).

    /usr/bin/python3 gguf_llama.py --checkpoint DIR --dtype f32|bf16|q8_0|q4_0|q4_k_m --output OUT.gguf \
        [--type TENSOR=q6_k ...]

--type gives one tensor another type (f32, bf16, q8_0, q4_0, q5_0, iq4_nl, q4_k, q5_k or q6_k), as llama-quantize's
--tensor-type does; tfmc's tests use it to put a Q6_K tensor in a small model.

--dtype q4_k_m (llama only) writes the mix llama.cpp's `llama-quantize ... Q4_K_M` gives a Llama
without an importance matrix (llama-quant.cpp's llama_tensor_get_type): token_embd and every
linear Q4_K, except attn_v and ffn_down in the "use_more_bits" layers (i < n/8, i >= 7n/8, or
(i - n/8) % 3 == 2; 10 of TinyLlama's 22) and the output head (a tied model's token_embd), Q6_K;
norms F32. The Q4_K blocks come from gguf.py's plain quantiser, not ggml's make_qkx2_quants
search: other values than llama-quantize's, the same types, layout and bytes.

Qwen2 (model_type "qwen2", llama.cpp's LLM_ARCH_QWEN2) is the same but for three things: the
keys are under "qwen2.", the q/k/v_proj biases are written too (blk.N.attn_q/k/v.bias, F32), and
Q and K keep Hugging Face's row order (llama.cpp rotates qwen2 with GGML_ROPE_TYPE_NEOX, the
"rotate half" pairs). Without tokenizer.json in the directory no tokenizer keys are written (the
vocabulary size is then ARCH.vocab_size alone; llama.cpp needs a tokenizer, tfmc's tests do not).

Phi-3 (model_type "phi3", LLM_ARCH_PHI3), as convert_hf_to_gguf.py's Phi3MiniModel writes it:
its keys under "phi3." (rope.scaling.original_context_length, attention.sliding_window with 0
for none; no key_length/value_length), the packed tensors kept packed (blk.N.attn_qkv.weight
from self_attn.qkv_proj, blk.N.ffn_up.weight from mlp.gate_up_proj: the gate's rows first, as
ggml_swiglu reads them), Q and K in Hugging Face's order (GGML_ROPE_TYPE_NEOX), and longrope
as two F32 tensors rope_factors_long.weight and rope_factors_short.weight with
phi3.rope.scaling.attn_factor = sqrt(1 + ln(s) / ln(original)), s = max / original.

Gemma 2 (model_type "gemma2", LLM_ARCH_GEMMA2), as convert_hf_to_gguf.py's Gemma2Model writes it:
keys under "gemma2." (attention.key_length/value_length, attn_logit_softcapping,
final_logit_softcapping, attention.sliding_window; no query_pre_attn_scalar: llama.cpp derives
the scale), the four norms of a layer as blk.N.attn_norm (input_layernorm),
post_attention_norm (post_attention_layernorm), ffn_norm (pre_feedforward_layernorm) and
post_ffw_norm (post_feedforward_layernorm), every norm weight stored as 1 + w (F32), Q and K in
Hugging Face's order (GGML_ROPE_TYPE_NEOX), no output.weight (the logits use token_embd).

The file's layout and the tensor encodings: gguf.py. Tensors (llama.cpp's names for LLM_ARCH_LLAMA):

    token_embd.weight            [V, d]          model.embed_tokens
    blk.N.attn_norm.weight       [d]   F32       input_layernorm
    blk.N.attn_q.weight          [H·D, d]        self_attn.q_proj, rows permuted (below)
    blk.N.attn_k.weight          [KV·D, d]       self_attn.k_proj, rows permuted (below)
    blk.N.attn_v.weight          [KV·D, d]       self_attn.v_proj
    blk.N.attn_output.weight     [d, H·D]        self_attn.o_proj
    blk.N.ffn_norm.weight        [d]   F32       post_attention_layernorm
    blk.N.ffn_gate.weight        [ff, d]         mlp.gate_proj
    blk.N.ffn_up.weight          [ff, d]         mlp.up_proj
    blk.N.ffn_down.weight        [d, ff]         mlp.down_proj
    output_norm.weight           [d]   F32       model.norm
    output.weight                [V, d]          lm_head; absent when the head is tied (no lm_head in
                                                 the checkpoint), as convert_hf_to_gguf.py writes Llama
                                                 3.2 and Qwen2: llama.cpp then multiplies by token_embd

The rotary layouts differ: Hugging Face rotates the pairs (i, i + D/2) of each head ("rotate
half"), ggml's LLAMA rope (GGML_ROPE_TYPE_NORM) the adjacent pairs (2i, 2i + 1). As llama.cpp's
convert_hf_to_gguf.py does for LlamaModel, the rows of each head of q_proj (and k_proj, with the
KV head count) are reordered so that row i of the head's first half and row i of its second half
become rows 2i and 2i + 1: reshape [heads, 2, D/2, d] -> swap the middle axes -> [heads·D, d].
Q·Kᵀ is unchanged by the same reordering of Q's and K's columns, so attention is unchanged;
bench's greedy-ids check proves it end to end.

The 2-D weights take --dtype; norms stay F32, as tfmc's --weight-dtype does. Except for q4_0:
output.weight is Q6_K there (token_embd stays Q4_0), because that is what llama.cpp's
llama-quantize writes for a Q4_0 file of a model with its own output head (gguf.py's
output_type). A tied llama checkpoint's file has no output.weight, and its token_embd, the
output head too, takes the head's type (Q6_K in a Q4_0 file), as llama-quantize gives it when a
file has no output.weight (llama_tensor_get_type: `!qs.has_output && name == token_embd`).
(qwen2 and gemma2 files keep token_embd in --dtype.)

    /usr/bin/python3 gguf_llama.py --checkpoint DIR --tokenizer-only --output OUT.gguf

--tokenizer-only writes the tokenizer metadata alone, no tensors (test fixtures: tfmc's GGUF
tokenizer is built from the metadata; config.json, optional then, gives the bos and eos ids). DIR
holds tokenizer.json or tokenizer.model, as convert_hf_to_gguf.py reads them:

    tokenizer.json, SentencePiece-style BPE (byte_fallback)   "llama", as below
    tokenizer.json, byte-level BPE (a ByteLevel pre-tokenizer) "gpt2": tokens by id (added tokens
        too), token_type 3 for special added tokens and 4 for the others (user-defined), merges as
        "a b" strings, tokenizer.ggml.pre from the Split regex (Llama 3's -> "llama-bpe", Qwen2's
        -> "qwen2", none -> "gpt-2"; --pre overrides), add_bos_token when the post-processor
        puts a special token first (tokenizer_config.json's add_bos_token overrides)
    tokenizer.model (SentencePiece)                            "llama": pieces, scores, types
        (2 unknown, 3 control, 5 unused, 6 byte, 1 normal) from the model itself

Metadata: general.architecture "llama", llama.{context_length, embedding_length,
feed_forward_length, block_count, attention.head_count, attention.head_count_kv,
attention.key_length, attention.value_length, rope.dimension_count, rope.freq_base,
attention.layer_norm_rms_epsilon, vocab_size}, and the
tokenizer: tokenizer.ggml.model "llama" (SentencePiece), tokens by id, scores (minus the merge
rank of the merge that makes the piece, 0 for the others: llama.cpp's SentencePiece tokenizer
merges the highest score first), token_type (2 unknown, 3 control, 4 user-defined: added tokens not special, 6 byte, 1 normal), bos, eos
and unknown ids.
"""
import argparse
import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gguf import (DTYPES, GGML_F32, GGML_Q4_K, GGML_Q6_K, T_BOOL, T_FLOAT32, T_INT32,  # noqa: E402
                  T_STRING, T_UINT32, TENSOR_TYPES, Writer, output_type)
from torch_bench import read_safetensors  # noqa: E402  (no torch import at load)

TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_BYTE = 1, 2, 3, 6
# llama-quantize's K-quant mixes this writer offers as --dtype: the main type (--dtype q4_k_m).
MIXES = {"q4_k_m": GGML_Q4_K}


def use_more_bits(i, n):
    """llama-quant.cpp's use_more_bits: layer i of n gets Q6_K's attn_v and ffn_down in Q4_K_M."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def rotate_half_to_interleaved(w, heads):
    """Rows (i, i + D/2) of each head -> rows (2i, 2i + 1) (convert_hf_to_gguf.py's permute)."""
    rows, cols = w.shape
    return w.reshape(heads, 2, rows // heads // 2, cols).swapaxes(1, 2).reshape(rows, cols)


LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|"
                r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|"
               r"\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
TOKEN_USER_DEFINED, TOKEN_UNUSED = 4, 5


def components(node, kind):
    """The components of a tokenizer.json section, Sequences flattened."""
    if not node:
        return []
    if node.get("type") == "Sequence":
        return [c for sub in node.get(kind, []) for c in components(sub, kind)]
    return [node]


def special_ids(writer, config, bos_default, eos_default):
    eos = config.get("eos_token_id", eos_default)
    bos = config.get("bos_token_id", bos_default)
    if bos is not None:
        writer.add("tokenizer.ggml.bos_token_id", T_UINT32, bos)
    if eos is not None:
        writer.add("tokenizer.ggml.eos_token_id", T_UINT32, eos[0] if isinstance(eos, list) else eos)


def byte_level_tokenizer(writer, directory, t, config, pre):
    """tokenizer.json of a byte-level BPE -> tokenizer.ggml.model "gpt2"."""
    model = t["model"]
    vocab = dict(model["vocab"])
    kinds = {}
    for a in t.get("added_tokens", []):
        vocab[a["content"]] = a["id"]
        kinds[a["id"]] = TOKEN_CONTROL if a.get("special") else TOKEN_USER_DEFINED
    tokens = [None] * (max(vocab.values()) + 1)
    for text, i in vocab.items():
        tokens[i] = text
    if any(x is None for x in tokens):
        raise SystemExit(f"gguf_llama: {directory}/tokenizer.json: token ids are not 0..{len(tokens) - 1}")
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    if pre is None:
        regexes = [c["pattern"].get("Regex") for c in components(t.get("pre_tokenizer"), "pretokenizers")
                   if c.get("type") == "Split"]
        pre = {(LLAMA3_REGEX,): "llama-bpe", (QWEN2_REGEX,): "qwen2", (): "gpt-2"}.get(tuple(regexes))
        if pre is None:
            raise SystemExit(f"gguf_llama: {directory}/tokenizer.json: a Split regex llama.cpp has no "
                             "pre-tokenizer name for (give --pre)")
    writer.add("tokenizer.ggml.model", T_STRING, "gpt2")
    writer.add("tokenizer.ggml.pre", T_STRING, pre)
    writer.add_array("tokenizer.ggml.tokens", T_STRING, tokens)
    writer.add_array("tokenizer.ggml.token_type", T_INT32, [kinds.get(i, TOKEN_NORMAL) for i in range(len(tokens))])
    writer.add_array("tokenizer.ggml.merges", T_STRING, merges)
    special_ids(writer, config, None, None)
    templates = [c for c in components(t.get("post_processor"), "processors")
                 if c.get("type") == "TemplateProcessing"]
    add_bos = bool(templates) and "SpecialToken" in templates[0]["single"][0]
    tokenizer_config = os.path.join(directory, "tokenizer_config.json")
    if os.path.exists(tokenizer_config):
        with open(tokenizer_config, encoding="utf-8") as f:
            add_bos = json.load(f).get("add_bos_token", add_bos)
    writer.add("tokenizer.ggml.add_bos_token", T_BOOL, add_bos)
    return len(tokens)


def sentencepiece_tokenizer(writer, path, config):
    """tokenizer.model -> tokenizer.ggml.model "llama" (convert_hf_to_gguf.py's _create_vocab_sentencepiece)."""
    import sentencepiece
    sp = sentencepiece.SentencePieceProcessor(model_file=path)
    n = sp.get_piece_size()

    def kind(i):
        if sp.is_unknown(i):
            return TOKEN_UNKNOWN
        if sp.is_control(i):
            return TOKEN_CONTROL
        if sp.is_unused(i):
            return TOKEN_UNUSED
        if sp.is_byte(i):
            return TOKEN_BYTE
        return TOKEN_NORMAL

    writer.add("tokenizer.ggml.model", T_STRING, "llama")
    writer.add_array("tokenizer.ggml.tokens", T_STRING, [sp.id_to_piece(i) for i in range(n)])
    writer.add_array("tokenizer.ggml.scores", T_FLOAT32, [sp.get_score(i) for i in range(n)])
    writer.add_array("tokenizer.ggml.token_type", T_INT32, [kind(i) for i in range(n)])
    special_ids(writer, config, sp.bos_id() if sp.bos_id() >= 0 else None,
                sp.eos_id() if sp.eos_id() >= 0 else None)
    writer.add("tokenizer.ggml.unknown_token_id", T_UINT32, sp.unk_id())
    return n


def tokenizer(writer, directory, config, pre=None):
    if not os.path.exists(os.path.join(directory, "tokenizer.json")) and \
            os.path.exists(os.path.join(directory, "tokenizer.model")):
        return sentencepiece_tokenizer(writer, os.path.join(directory, "tokenizer.model"), config)
    with open(os.path.join(directory, "tokenizer.json"), encoding="utf-8") as f:
        t = json.load(f)
    model = t["model"]
    if any(c.get("type") == "ByteLevel" for c in components(t.get("pre_tokenizer"), "pretokenizers")):
        return byte_level_tokenizer(writer, directory, t, config, pre)
    if model.get("type") != "BPE" or not model.get("byte_fallback"):
        raise SystemExit(f"gguf_llama: {directory}/tokenizer.json: not a SentencePiece-style BPE "
                         "with byte fallback")
    vocab = model["vocab"]
    tokens = [None] * len(vocab)
    for text, i in vocab.items():
        tokens[i] = text
    if any(x is None for x in tokens):
        raise SystemExit(f"gguf_llama: {directory}/tokenizer.json: token ids are not 0..{len(tokens) - 1}")
    scores = [0.0] * len(tokens)
    for rank, merge in enumerate(model["merges"]):
        a, b = merge.split(" ") if isinstance(merge, str) else merge
        scores[vocab[a + b]] = float(-rank)
    special = {a["id"] for a in t.get("added_tokens", []) if a.get("special")}
    user_defined = {a["id"] for a in t.get("added_tokens", []) if not a.get("special")}
    unk = vocab.get(model.get("unk_token") or "<unk>", 0)

    def kind(i, text):
        if i == unk:
            return TOKEN_UNKNOWN
        if i in special:
            return TOKEN_CONTROL
        if i in user_defined:
            return TOKEN_USER_DEFINED
        if len(text) == 6 and text.startswith("<0x") and text.endswith(">"):
            return TOKEN_BYTE
        return TOKEN_NORMAL

    writer.add("tokenizer.ggml.model", T_STRING, "llama")
    writer.add_array("tokenizer.ggml.tokens", T_STRING, tokens)
    writer.add_array("tokenizer.ggml.scores", T_FLOAT32, scores)
    writer.add_array("tokenizer.ggml.token_type", T_INT32, [kind(i, x) for i, x in enumerate(tokens)])
    eos = config.get("eos_token_id", 2)
    writer.add("tokenizer.ggml.bos_token_id", T_UINT32, config.get("bos_token_id", 1))
    writer.add("tokenizer.ggml.eos_token_id", T_UINT32, eos[0] if isinstance(eos, list) else eos)
    writer.add("tokenizer.ggml.unknown_token_id", T_UINT32, unk)
    # llama.cpp prepends "▁" to the text unless told not to (Gemma's tokenizer.json only replaces
    # spaces; Llama's prepends too): as convert_hf_to_gguf.py's Gemma2Model writes false.
    prepends = any(c.get("type") == "Prepend" for c in components(t.get("normalizer"), "normalizers")) or \
        any(c.get("type") == "Metaspace" and c.get("prepend_scheme", "always") != "never"
            and c.get("add_prefix_space", True) for c in components(t.get("pre_tokenizer"), "pretokenizers"))
    writer.add("tokenizer.ggml.add_space_prefix", T_BOOL, prepends)
    return len(tokens)


def llama3_rope_factors(c, D):
    """Llama 3.1's rope scaling as convert_hf_to_gguf.py's LlamaModel writes it: one divisor of each
    inverse frequency (f32 frequencies, the blend in doubles, stored as F32). The converter reads
    original_max_position_embeddings from the config's top level (default 8192); transformers reads
    rope_scaling's, which is 8192 in every published Llama 3.x config: here rope_scaling's, so that
    a fixture with another value gets transformers' frequencies."""
    s = c["rope_scaling"]
    base = c.get("rope_theta", 10000.0)
    freqs = (1.0 / (np.float32(base) ** (np.arange(0, D, 2, dtype=np.float32) / np.float32(D)))).astype(np.float32)
    factor, low, high = s.get("factor", 8.0), s.get("low_freq_factor", 1.0), s.get("high_freq_factor", 4.0)
    old = s.get("original_max_position_embeddings", 8192)
    factors = []
    for freq in freqs:
        wavelen = 2 * math.pi / float(freq)
        if wavelen < old / high:
            factors.append(1.0)
        elif wavelen > old / low:
            factors.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            factors.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(factors, dtype=np.float32)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", required=True, help="a Hugging Face Llama directory")
    p.add_argument("--dtype", choices=sorted(DTYPES) + sorted(MIXES))
    p.add_argument("--tokenizer-only", action="store_true", help="the tokenizer's metadata alone, no tensors")
    p.add_argument("--pre", help="tokenizer.ggml.pre of a byte-level tokenizer.json (default: from its regex)")
    p.add_argument("--output", required=True)
    p.add_argument("--type", action="append", default=[], metavar="TENSOR=TYPE",
                   help="one tensor's type: " + ", ".join(sorted(TENSOR_TYPES)))
    a = p.parse_args()

    if a.tokenizer_only:
        config_path = os.path.join(a.checkpoint, "config.json")
        c = {}
        if os.path.exists(config_path):
            with open(config_path) as f:
                c = json.load(f)
        w = Writer("gguf_llama")
        w.add("general.architecture", T_STRING, "llama")
        w.add("general.name", T_STRING, "tfmc tokenizer fixture")
        # The hyper-parameters llama.cpp reads even for a vocabulary-only load (any values do).
        for key, value in (("context_length", 128), ("embedding_length", 64), ("feed_forward_length", 128),
                           ("block_count", 1), ("attention.head_count", 1)):
            w.add("llama." + key, T_UINT32, value)
        w.add("llama.attention.layer_norm_rms_epsilon", T_FLOAT32, 1e-5)
        n_tokens = tokenizer(w, a.checkpoint, c, a.pre)
        w.write(a.output)
        print(json.dumps({"output": a.output, "tokens": n_tokens, "bytes": os.path.getsize(a.output)}))
        return
    if a.dtype is None:
        p.error("--dtype is required (unless --tokenizer-only)")
    with open(os.path.join(a.checkpoint, "config.json")) as f:
        c = json.load(f)
    arch = c.get("model_type")
    if arch not in ("llama", "qwen2", "phi3", "gemma2"):
        raise SystemExit(f"gguf_llama: {a.checkpoint}/config.json: model_type is "
                         f"{c.get('model_type')!r}, not 'llama', 'qwen2', 'phi3' or 'gemma2'")
    mix = a.dtype in MIXES
    if mix and arch != "llama":
        raise SystemExit(f"gguf_llama: --dtype {a.dtype}: llama checkpoints only (model_type {arch!r})")
    types = {}
    for spec in a.type:
        name, _, kind = spec.partition("=")
        if kind not in TENSOR_TYPES:
            raise SystemExit(f"gguf_llama: --type {spec}: expected TENSOR=" + "|".join(sorted(TENSOR_TYPES)))
        types[name] = TENSOR_TYPES[kind]
    W = read_safetensors(os.path.join(a.checkpoint, "model.safetensors"), mmap=True)
    H, KV = c["num_attention_heads"], c.get("num_key_value_heads", c["num_attention_heads"])
    D = c.get("head_dim") or (256 if arch == "gemma2" else c["hidden_size"] // H)
    L = c["num_hidden_layers"]
    wide = MIXES[a.dtype] if mix else DTYPES[a.dtype]
    # The output head's type (a tied llama's token_embd's): Q6_K in a K-quant mix.
    head = GGML_Q6_K if mix else output_type(a.dtype, c["hidden_size"])

    w = Writer("gguf_llama")
    w.add("general.architecture", T_STRING, arch)
    w.add("general.name", T_STRING, f"tfmc-bench {arch} {a.dtype}")
    w.add(f"{arch}.context_length", T_UINT32, c["max_position_embeddings"])
    w.add(f"{arch}.embedding_length", T_UINT32, c["hidden_size"])
    w.add(f"{arch}.feed_forward_length", T_UINT32, c["intermediate_size"])
    w.add(f"{arch}.block_count", T_UINT32, L)
    w.add(f"{arch}.attention.head_count", T_UINT32, H)
    w.add(f"{arch}.attention.head_count_kv", T_UINT32, KV)
    if arch == "phi3":
        original = c.get("original_max_position_embeddings", c["max_position_embeddings"])
        w.add("phi3.rope.scaling.original_context_length", T_UINT32, original)
        w.add("phi3.attention.sliding_window", T_UINT32, c.get("sliding_window") or 0)
    elif arch == "gemma2":
        w.add("gemma2.attention.key_length", T_UINT32, D)
        w.add("gemma2.attention.value_length", T_UINT32, D)
        w.add("gemma2.attn_logit_softcapping", T_FLOAT32, c.get("attn_logit_softcapping", 50.0))
        w.add("gemma2.final_logit_softcapping", T_FLOAT32, c.get("final_logit_softcapping", 30.0))
        w.add("gemma2.attention.sliding_window", T_UINT32, c.get("sliding_window", 4096))
    else:
        w.add(f"{arch}.attention.key_length", T_UINT32, D)
        w.add(f"{arch}.attention.value_length", T_UINT32, D)
    w.add(f"{arch}.rope.dimension_count", T_UINT32, D)
    w.add(f"{arch}.rope.freq_base", T_FLOAT32, c.get("rope_theta", 10000.0))
    w.add(f"{arch}.attention.layer_norm_rms_epsilon", T_FLOAT32, c.get("rms_norm_eps", 1e-6))
    w.add(f"{arch}.vocab_size", T_UINT32, c["vocab_size"])
    if os.path.exists(os.path.join(a.checkpoint, "tokenizer.json")):
        n_tokens = tokenizer(w, a.checkpoint, c)
        if n_tokens != c["vocab_size"]:
            raise SystemExit(f"gguf_llama: the tokenizer has {n_tokens} tokens, vocab_size is {c['vocab_size']}")

    def add(name, array, ggml_type):
        w.add_tensor(name, array, types.pop(name, ggml_type))

    # llama.cpp's LLAMA rope turns adjacent pairs; QWEN2's turns halves, as Hugging Face does.
    permute = rotate_half_to_interleaved if arch == "llama" else (lambda m, heads: m)
    tied = "lm_head.weight" not in W
    # A tied llama's token_embd is its output head too: llama-quantize's head type.
    add("token_embd.weight", W["model.embed_tokens.weight"],
        head if arch == "llama" and tied else wide)
    scaling = c.get("rope_scaling") or {}
    if arch == "llama" and scaling.get("rope_type", scaling.get("type")) == "linear":
        w.add("llama.rope.scaling.type", T_STRING, "linear")
        w.add("llama.rope.scaling.factor", T_FLOAT32, scaling["factor"])
    if arch == "llama" and scaling.get("rope_type") == "llama3":
        add("rope_freqs.weight", llama3_rope_factors(c, D), GGML_F32)
    if arch == "phi3" and scaling.get("long_factor"):
        scale = c["max_position_embeddings"] / original
        w.add("phi3.rope.scaling.attn_factor", T_FLOAT32,
              math.sqrt(1 + math.log(scale) / math.log(original)) if scale > 1.0 else 1.0)
        add("rope_factors_long.weight", np.array(scaling["long_factor"], dtype=np.float32), GGML_F32)
        add("rope_factors_short.weight", np.array(scaling["short_factor"], dtype=np.float32), GGML_F32)
    if arch == "gemma2":
        # Gemma2Model's converter: each norm's whole gain 1 + w, no output head.
        for i in range(L):
            src, dst = f"model.layers.{i}.", f"blk.{i}."
            for ours, theirs in (("input_layernorm", "attn_norm"), ("post_attention_layernorm", "post_attention_norm"),
                                 ("pre_feedforward_layernorm", "ffn_norm"),
                                 ("post_feedforward_layernorm", "post_ffw_norm")):
                add(dst + theirs + ".weight", W[src + ours + ".weight"] + np.float32(1), GGML_F32)
            for ours, theirs in (("q_proj", "attn_q"), ("k_proj", "attn_k"), ("v_proj", "attn_v"),
                                 ("o_proj", "attn_output")):
                add(dst + theirs + ".weight", W[src + "self_attn." + ours + ".weight"], wide)
            for ours, theirs in (("gate_proj", "ffn_gate"), ("up_proj", "ffn_up"), ("down_proj", "ffn_down")):
                add(dst + theirs + ".weight", W[src + "mlp." + ours + ".weight"], wide)
        add("output_norm.weight", W["model.norm.weight"] + np.float32(1), GGML_F32)
    for i in range(L if arch != "gemma2" else 0):
        src, dst = f"model.layers.{i}.", f"blk.{i}."
        add(dst + "attn_norm.weight", W[src + "input_layernorm.weight"], GGML_F32)
        if arch == "phi3":
            add(dst + "attn_qkv.weight", W[src + "self_attn.qkv_proj.weight"], wide)
            add(dst + "attn_output.weight", W[src + "self_attn.o_proj.weight"], wide)
            add(dst + "ffn_norm.weight", W[src + "post_attention_layernorm.weight"], GGML_F32)
            add(dst + "ffn_up.weight", W[src + "mlp.gate_up_proj.weight"], wide)
            add(dst + "ffn_down.weight", W[src + "mlp.down_proj.weight"], wide)
            continue
        add(dst + "attn_q.weight", permute(W[src + "self_attn.q_proj.weight"], H), wide)
        add(dst + "attn_k.weight", permute(W[src + "self_attn.k_proj.weight"], KV), wide)
        more = GGML_Q6_K if mix and use_more_bits(i, L) else wide   # Q4_K_M's attn_v and ffn_down
        add(dst + "attn_v.weight", W[src + "self_attn.v_proj.weight"], more)
        if arch == "qwen2":
            add(dst + "attn_q.bias", W[src + "self_attn.q_proj.bias"], GGML_F32)
            add(dst + "attn_k.bias", W[src + "self_attn.k_proj.bias"], GGML_F32)
            add(dst + "attn_v.bias", W[src + "self_attn.v_proj.bias"], GGML_F32)
        add(dst + "attn_output.weight", W[src + "self_attn.o_proj.weight"], wide)
        add(dst + "ffn_norm.weight", W[src + "post_attention_layernorm.weight"], GGML_F32)
        for ours, theirs in (("gate_proj", "ffn_gate"), ("up_proj", "ffn_up"), ("down_proj", "ffn_down")):
            add(dst + theirs + ".weight", W[src + "mlp." + ours + ".weight"], more if theirs == "ffn_down" else wide)
    if arch != "gemma2":
        add("output_norm.weight", W["model.norm.weight"], GGML_F32)
    if arch != "gemma2" and not tied:
        add("output.weight", W["lm_head.weight"], head)
    if types:
        raise SystemExit(f"gguf_llama: --type names no tensor of the file: {', '.join(sorted(types))}")
    w.write(a.output)
    print(json.dumps({"bench": "gguf", "dtype": a.dtype, "output": a.output,
                      "bytes": os.path.getsize(a.output), "tensors": len(w.tensors)}))


if __name__ == "__main__":
    main()
