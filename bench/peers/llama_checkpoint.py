#!/usr/bin/python3
"""Writes a random Llama checkpoint in Hugging Face's layout: the TinyLlama-1.1B shape bench
measures by default (d 2048, 22 layers, 32 heads, 4 KV heads, FFN 5632, vocab 32000).

    /usr/bin/python3 llama_checkpoint.py --output DIR [--seed 1] [--std 0.02]
        [--d-model 2048] [--layers 22] [--heads 32] [--kv-heads 4] [--d-ff 5632] [--vocab 32000]
        [--max-len 2048] [--tied]
    /usr/bin/python3 llama_checkpoint.py --output DIR --nn-transformer FILE.safetensors

DIR gets:
    config.json             model_type llama, LlamaForCausalLM, rms_norm_eps 1e-5, rope_theta 10000,
                            untied head (--tied: tied), no biases, rope_scaling null, bos 1, eos 2
    generation_config.json  bos/eos
    model.safetensors       f32, Hugging Face names (model.embed_tokens, model.layers.N.self_attn.
                            {q,k,v,o}_proj, mlp.{gate,up,down}_proj, input_layernorm,
                            post_attention_layernorm, model.norm, lm_head); ~4.4 GB at the default shape
                            --tied: tie_word_embeddings true and no lm_head.weight (the output head
                            is model.embed_tokens, as in Llama 3.2 1B/3B), model.norm's gains drawn
                            otherwise (below); every other tensor keeps its values
    tokenizer.json          a synthetic SentencePiece-style BPE (Llama 2's form: byte fallback,
    tokenizer_config.json   "▁" metaspace): <unk> <s> </s>, the 256 byte tokens <0x00>..<0xFF>,
                            the single characters, then pieces each made by one merge of two
                            earlier pieces, until the vocabulary is full

Weights: the embedding N(0, 1) (nn.Embedding's default); the matrices that write into the
residual stream (o_proj, down_proj) N(0, (std / sqrt(2 · layers))²), GPT-2's scaling; every other
matrix N(0, std²) (Hugging Face's initializer_range); every norm weight 1 + N(0, 0.1²) so that
a norm that ignored its weight would show. With std everywhere, 22 random layers amplify a
small change of the weights into logit changes of ~0.08 (bf16) and ~0.26 (int8) against top-1
margins of ~0.1-0.7, so the same-ids check could compare only 1 step at those precisions; the
scaled residual writes cut the amplification about 3-fold (measured at d_model 512). Each tensor has its own
numpy generator seeded from (seed, the tensor's index), so a shape change leaves the others'
values alone. A tied checkpoint's final norm (model.norm) has gains N(0, 1) less their mean
instead: the token's own embedding row dominates the residual stream (as it does in the untied
checkpoints, where that keeps 22 layers' rounding cascades small), and the tied head multiplies
the final norm's output by the same table, so with gains near 1 the token's own logit would be
about |e|² ≈ d_model, far above every other, and the model would only repeat its input (a 2-layer
d_model 256 checkpoint did, by a margin of 196 at every step); zero-mean gains leave it no
systematic advantage. (The embedding at N(0, std²) instead avoids that too, but then nothing
anchors the residual stream: at Llama 3.2 1B's shape the cascade of int8-activation rounding flips
through 16 layers moved the leaders' logit gaps by 5.1 % of max|logit|, against 1.3 % with the
embedding at N(0, 1), and format_check.py found 1 step to check where it finds 11.)
Nothing here is a trained model: bench needs the shapes and the bytes, and the
greedy-ids check needs only that every engine compute the same function.
"""
import argparse
import json
import os
import struct

import numpy as np


def tensor_shapes(c):
    d, ff, V, D = c["hidden_size"], c["intermediate_size"], c["vocab_size"], c["head_dim"]
    q, kv = c["num_attention_heads"] * D, c["num_key_value_heads"] * D
    out = [("model.embed_tokens.weight", (V, d))]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", (d,)),
                (p + "self_attn.q_proj.weight", (q, d)), (p + "self_attn.k_proj.weight", (kv, d)),
                (p + "self_attn.v_proj.weight", (kv, d)), (p + "self_attn.o_proj.weight", (d, q)),
                (p + "post_attention_layernorm.weight", (d,)),
                (p + "mlp.gate_proj.weight", (ff, d)), (p + "mlp.up_proj.weight", (ff, d)),
                (p + "mlp.down_proj.weight", (d, ff))]
    out.append(("model.norm.weight", (d,)))
    return out if c["tie_word_embeddings"] else out + [("lm_head.weight", (V, d))]


def scale_of(name, std, layers):
    if name == "model.embed_tokens.weight":
        return 1.0
    if name.endswith(("self_attn.o_proj.weight", "mlp.down_proj.weight")):
        return std / np.sqrt(2 * layers)
    return std


def write_weights(path, config, seed, std):
    shapes = tensor_shapes(config)
    header, offset = {}, 0
    for name, shape in shapes:
        size = 4 * int(np.prod(shape))
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * ((-len(blob)) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob)
        for index, (name, shape) in enumerate(shapes):
            rng = np.random.default_rng([seed, index])
            if name == "model.norm.weight" and config["tie_word_embeddings"]:
                a = rng.standard_normal(shape, dtype=np.float32)
                a -= a.mean(dtype=np.float64).astype(np.float32)
            elif len(shape) == 1:
                a = 1.0 + 0.1 * rng.standard_normal(shape, dtype=np.float32)
            else:
                a = rng.standard_normal(shape, dtype=np.float32)
                a *= np.float32(scale_of(name, std, config["num_hidden_layers"]))
            f.write(np.ascontiguousarray(a, dtype="<f4").tobytes())
    os.replace(tmp, path)


def vocabulary(size, seed):
    """Token strings by id and the merges that make the pieces (each piece = one merge of two
    earlier pieces, so the merge list is a valid BPE)."""
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    singles = ["\u2581"] + [chr(c) for c in range(33, 127)]
    tokens += singles
    known, merges = set(tokens), []
    rng = np.random.default_rng(seed)
    # Pieces start with the most common shapes: "▁x", then longer words from existing pieces.
    pieces = list(singles)
    while len(tokens) < size:
        a = pieces[int(rng.integers(len(pieces)))]
        b = singles[1 + int(rng.integers(len(singles) - 1))] if rng.random() < 0.7 \
            else pieces[int(rng.integers(len(pieces)))]
        if rng.random() < 0.3 and not a.startswith("\u2581"):
            a = "\u2581" + a if "\u2581" + a in known else a
        new = a + b
        if new in known or len(new) > 12 or new.count("\u2581") > 1 or "\u2581" in b:
            continue
        tokens.append(new)
        known.add(new)
        pieces.append(new)
        merges.append(f"{a} {b}")
    return tokens, merges


def write_tokenizer(directory, size, seed):
    tokens, merges = vocabulary(size, seed)
    special = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": False, "special": True} for i, t in enumerate(tokens[:3])]
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": special,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        "pre_tokenizer": None,
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                    {"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": "<s>", "type_id": 1}},
                                    {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True,
                  "vocab": {t: i for i, t in enumerate(tokens)}, "merges": merges}}
    with open(os.path.join(directory, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False)
    with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "LlamaTokenizerFast", "add_bos_token": True, "add_eos_token": False,
                   "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": None,
                   "legacy": False, "model_max_length": 2048}, f, indent=1)


# nn.Transformer-style names (a .tfm model's, docs/language.md, "Weight names") of the Hugging Face ones;
# q/k/v_proj are stacked into in_proj_weight (rows Q, then K, then V).
NN_TRANSFORMER = {"input_layernorm.weight": "norm1.weight", "post_attention_layernorm.weight": "norm2.weight",
                  "self_attn.o_proj.weight": "self_attn.out_proj.weight", "mlp.gate_proj.weight": "gate.weight",
                  "mlp.up_proj.weight": "linear1.weight", "mlp.down_proj.weight": "linear2.weight"}


def write_nn_transformer(directory, path):
    """The checkpoint's weights under the names a .tfm Llama asks for, for a tfmc that cannot
    import the Hugging Face directory itself."""
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from torch_bench import read_safetensors
    with open(os.path.join(directory, "config.json")) as f:
        c = json.load(f)
    W = read_safetensors(os.path.join(directory, "model.safetensors"), mmap=True)
    parts = [("tgt_embed.weight", [W["model.embed_tokens.weight"]])]
    for i in range(c["num_hidden_layers"]):
        src, dst = f"model.layers.{i}.", f"decoder.layers.{i}."
        parts.append((dst + "self_attn.in_proj_weight",
                      [W[src + f"self_attn.{x}_proj.weight"] for x in "qkv"]))
        parts += [(dst + theirs, [W[src + ours]]) for ours, theirs in NN_TRANSFORMER.items()]
    parts += [("decoder.norm.weight", [W["model.norm.weight"]]),
              ("generator.weight", [W.get("lm_head.weight", W["model.embed_tokens.weight"])])]
    header, offset = {}, 0
    for name, arrays in parts:
        shape = [sum(a.shape[0] for a in arrays)] + list(arrays[0].shape[1:])
        size = 4 * int(np.prod(shape))
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * ((-len(blob)) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob)
        for _, arrays in parts:
            for a in arrays:
                f.write(np.ascontiguousarray(a, dtype="<f4").tobytes())
    os.replace(tmp, path)


def config_of(a):
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": a.d_model,
            "intermediate_size": a.d_ff, "num_hidden_layers": a.layers, "num_attention_heads": a.heads,
            "num_key_value_heads": a.kv_heads, "head_dim": a.d_model // a.heads, "hidden_act": "silu",
            "max_position_embeddings": a.max_len, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
            "rope_scaling": None, "attention_bias": False, "mlp_bias": False, "tie_word_embeddings": a.tied,
            "vocab_size": a.vocab, "bos_token_id": 1, "eos_token_id": 2, "initializer_range": a.std,
            "torch_dtype": "float32"}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--output", required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--std", type=float, default=0.02)
    p.add_argument("--d-model", type=int, default=2048)
    p.add_argument("--layers", type=int, default=22)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=4)
    p.add_argument("--d-ff", type=int, default=5632)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--max-len", type=int, default=2048)
    p.add_argument("--tied", action="store_true",
                   help="tie the output head to the embedding table: no lm_head.weight")
    p.add_argument("--nn-transformer", metavar="FILE",
                   help="instead: write the checkpoint in --output (already written) to FILE under a "
                        ".tfm model's weight names")
    a = p.parse_args()
    if a.nn_transformer:
        write_nn_transformer(a.output, a.nn_transformer)
        print(json.dumps({"bench": "llama_checkpoint", "nn_transformer": a.nn_transformer,
                          "bytes": os.path.getsize(a.nn_transformer)}))
        return
    if a.d_model % a.heads or a.heads % a.kv_heads:
        raise SystemExit("llama_checkpoint: d_model must be a multiple of heads, heads of kv_heads")
    os.makedirs(a.output, exist_ok=True)
    config = config_of(a)
    with open(os.path.join(a.output, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    with open(os.path.join(a.output, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": 1, "eos_token_id": 2}, f, indent=1)
    write_tokenizer(a.output, a.vocab, a.seed)
    weights = os.path.join(a.output, "model.safetensors")
    write_weights(weights, config, a.seed, a.std)
    print(json.dumps({"bench": "llama_checkpoint", "output": a.output, "bytes": os.path.getsize(weights),
                      "tensors": len(tensor_shapes(config))}))


if __name__ == "__main__":
    main()
