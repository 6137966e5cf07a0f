#!/usr/bin/python3
"""Small GGUF models that llama.cpp loads, for the tests that run tfmc and llama.cpp on the same file.

    llama_cpp_models.py make OUT
        Writes five random Hugging Face checkpoints with a vocabulary, OUT/{llama,qwen2,phi3,gemma2,gpt2}/,
        and converts each with bench/peers' writers (gguf_llama.py, gguf_gpt2.py) to
        OUT/{arch}_{f32,q8_0,q4_0}.gguf, tokenizer metadata included (llama.cpp refuses a model
        file without a vocabulary; tfmc's own GGUF tests, gguf_models.py, write none); two more
        phi3 checkpoints and one more gemma2 checkpoint, converted to F32 only:
          llama: hidden 64, 4 heads, 2 K/V heads (Dh 16), intermediate 128, 2 layers, vocab 505,
                 max 64, untied (output.weight)
                 (also OUT/llama_{q5_0,iq4_nl}.gguf: every 2-D weight Q5_0 or IQ4_NL, bench/peers/gguf.py's
                 writers)
          llama_k: hidden 256, 4 heads, 2 K/V heads (Dh 64), intermediate 512, 2 layers, vocab
                 505, max 64: OUT/llama_k_{q4_k_m,q5_k_m}.gguf, the mixes llama-quantize names
                 Q4_K_M and Q5_K_M (token_embd and the linears Q4_K or Q5_K; attn_v, ffn_down and
                 output.weight Q6_K; bench/peers/gguf.py's K-quant writers)
          qwen2: the same shape, rope_theta 1000, q/k/v biases, tied (no output.weight)
          phi3:  the same shape as llama, qkv_proj and gate_up_proj packed, vocab 468, max 64, no
                 sliding window (the file's phi3.attention.sliding_window 0)
          phi3_swa: phi3's weights with sliding_window 11 (a window shorter than the 5-id prompt
                 and 16 new tokens: it hides keys from the 8th new token's step on)
          phi35: a Phi-3.5-like longrope checkpoint of phi3's shape: 8 short and 8 long factors,
                 original_max_position_embeddings 256, max 512 (attention factor
                 sqrt(1 + ln 2 / ln 256)), no window. llama.cpp picks the long factors when its
                 context (rounded up to a multiple of 256) passes the original context: 256 short,
                 512 long, as tfmc's --max-seq 256 and 512 do.
          gemma2: hidden 64, 4 heads, 2 K/V heads, head_dim 32 (not 64 / 4), query_pre_attn_scalar
                 32 (= head_dim: the file carries none, and llama.cpp scales by head_dim^-1/2),
                 intermediate 128, 3 layers (sliding, full, sliding), sliding window 8 (shorter
                 than the 5-id prompt and 16 new tokens: it hides keys from the 5th new token's step
                 on), caps 3 (scores) and 5 (logits), both binding, vocab 795, max 64, tied (no
                 output.weight); test/fixtures/make_gemma2.py's weights
          gemma2_nowin: gemma2's weights with sliding_window 64 (no key ever outside it)
          gpt2:  n_embd 64, 4 heads, n_inner 256, 2 layers, vocab 505, n_positions 64
        The vocabulary is test/fixtures/tokenizers/bytelevel's (505 byte-level BPE tokens, 502
        <|begin_of_text|>, 503 <|end_of_text|>): llama and qwen2 from its tokenizer.json
        (tokenizer.ggml.model "gpt2", as llama.cpp's converter writes a Llama 3 vocabulary), gpt2
        from the same tokens and merges written as GPT-2's encoder.json and vocab.bpe. The phi3
        checkpoints take test/fixtures/tokenizers/spbpe's vocabulary (467 SentencePiece-style BPE
        tokens with byte fallback, 0 <unk>, 1 <s>, 2 </s>; tokenizer.ggml.model "llama", the
        SentencePiece vocabulary Phi-3's files carry) and, as Phi-3's, the special added token
        <|endoftext|> (467, the eos): llama.cpp's vocabulary loader looks that token up when a
        model's general.name contains "phi3" (to set its per-token attributes) and refuses a
        vocabulary without it. The gemma2 checkpoints take test/fixtures/tokenizers/gemma2's
        tokenizer.json (a 795-piece SentencePiece BPE with byte fallback in Gemma 2's layout: 0
        <pad>, 1 <eos>, 2 <bos>, 3 <unk>, 106 <start_of_turn>, 107 <end_of_turn>;
        tokenizer.ggml.model "llama", as Gemma 2's files carry). bench/peers/gguf_llama.py writes
        no tokenizer.ggml.add_space_prefix, so llama.cpp, whose default for such a vocabulary is
        true, prepends "▁" to a text it tokenizes ("hello" -> "▁he" "ll" "o", Gemma's "he" "ll"
        "o"); the tests give it ids, not text.
        Weights: make_llama.make_weights and make_fixtures.hf_make_weights, N(0, 1/fan_in)
        matrices: attention scores O(1), neither uniform nor one-hot (unlike init-weights'
        N(0, 0.02), which test/E2E's scale_weights.py has to scale up for the same reason).
    llama_cpp_models.py compare NAME TFMC.safetensors TFMC.ids LLAMA_CPP.json BOUND MIN_CHECKED
        One greedy generation of the same prompt by tfmc (`generate --dump-logits`: the ids it
        printed, the logits each was chosen from) and by llama.cpp (llama-cpp-generate.mjs's
        JSON), step by step while the ids agree. At step s, with l the reference's logits
        (llama.cpp's) and b = BOUND x max|l| the format's bound (docs/gguf.md "Tests"):
          - every logit of tfmc's within b of llama.cpp's;
          - margin = top-1 minus top-2 of l. When every logit lies within b of the other engine's,
            the two argmaxes can differ only where margin <= 2b: a step with margin > 2b is a
            *checked step*, and its ids must be equal; at a step with margin <= 2b different ids
            are legitimate, and the comparison stops there (the engines then continue from
            different sequences; greedy_check.py's rule).
        Prints one line, `NAME: ids equal on K checked steps (margin > 2 x bound) of N compared;
        logits max |diff| D of max |logit| (bound BOUND)`, and fails with one line per broken
        promise, or when fewer than MIN_CHECKED steps were checked (so that it cannot pass on a
        comparison that compared nothing).
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "test", "fixtures"))
import make_fixtures as mf  # noqa: E402
import make_gemma2 as mg  # noqa: E402
import make_llama as ml  # noqa: E402

PEERS = os.path.join(ROOT, "bench", "peers")
VOCAB = os.path.join(ROOT, "test", "fixtures", "tokenizers", "bytelevel")
V = 505
LLAMA = ml._config("llama", hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                   vocab_size=V, bos_token_id=502, eos_token_id=503)
# Rows of whole 256-value super-blocks: K-quant files (the mixes llama-quantize names Q4_K_M and
# Q5_K_M: token_embd and the linears Q4_K or Q5_K, attn_v, ffn_down and output.weight Q6_K).
LLAMA_K = ml._config("llama", hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                     vocab_size=V, bos_token_id=502, eos_token_id=503)
K_MIXES = {"q4_k_m": "q4_k", "q5_k_m": "q5_k"}
QWEN2 = ml._config("qwen2", hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                   vocab_size=V, rope_theta=1000.0, tie_word_embeddings=True,
                   use_sliding_window=False, sliding_window=4096, max_window_layers=2,
                   bos_token_id=502, eos_token_id=503)
SPBPE = os.path.join(ROOT, "test", "fixtures", "tokenizers", "spbpe")
PHI3_V = 468
PHI3 = ml._config("phi3", hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                  original_max_position_embeddings=64, vocab_size=PHI3_V, sliding_window=None,
                  bos_token_id=1, eos_token_id=PHI3_V - 1)
PHI3_SWA = dict(PHI3, sliding_window=11)
PHI35 = dict(PHI3, max_position_embeddings=512, original_max_position_embeddings=256,
             rope_scaling={"long_factor": [1.1, 1.3, 1.7, 2.4, 3.6, 5.5, 8.5, 13.0],
                           "short_factor": [1.0, 1.02, 1.05, 1.1, 1.2, 1.35, 1.6, 2.0],
                           "type": "longrope"})
GEMMA2_VOCAB = os.path.join(ROOT, "test", "fixtures", "tokenizers", "gemma2")
GEMMA2 = mg._config(hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4,
                    num_key_value_heads=2, head_dim=32, query_pre_attn_scalar=32, attn_logit_softcapping=3.0,
                    final_logit_softcapping=5.0, sliding_window=8, max_position_embeddings=64, vocab_size=795)
GEMMA2_NOWIN = dict(GEMMA2, sliding_window=64)
GPT2 = {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "bos_token_id": 503,
        "eos_token_id": 503, "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 64,
        "n_embd": 64, "n_head": 4, "n_inner": None, "n_layer": 2, "n_positions": 64,
        "vocab_size": V}
DTYPES = ("f32", "q8_0", "q4_0")


def write_checkpoint(directory, config, W):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    mf.write_safetensors(os.path.join(directory, "model.safetensors"), W)


def convert(args):
    subprocess.run([sys.executable] + args, check=True, stdout=subprocess.DEVNULL)


def phi3_vocabulary(directory):
    """spbpe's tokenizer.json and tokenizer_config.json, <|endoftext|> added (special, id 467)."""
    with open(os.path.join(SPBPE, "tokenizer.json"), encoding="utf-8") as f:
        t = json.load(f)
    t["model"]["vocab"]["<|endoftext|>"] = PHI3_V - 1
    t["added_tokens"].append({"id": PHI3_V - 1, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                              "rstrip": False, "normalized": False, "special": True})
    with open(os.path.join(directory, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(t, f, ensure_ascii=False)
    shutil.copy(os.path.join(SPBPE, "tokenizer_config.json"), directory)


def make(out):
    os.makedirs(out, exist_ok=True)
    for arch, config, seed in (("llama", LLAMA, 3201), ("qwen2", QWEN2, 3202)):
        directory = os.path.join(out, arch)
        write_checkpoint(directory, config, ml.make_weights(config, seed))
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(VOCAB, name), directory)
        for dtype in DTYPES:
            convert([os.path.join(PEERS, "gguf_llama.py"), "--checkpoint", directory, "--dtype", dtype,
                     "--output", os.path.join(out, f"{arch}_{dtype}.gguf")])
    # ggml's Q5_0 and IQ4_NL (tfmc transcodes them to int8 blocks of 32): every 2-D weight of llama's.
    names = ["token_embd.weight", "output.weight"] + [
        f"blk.{layer}.{t}.weight" for layer in range(LLAMA["num_hidden_layers"])
        for t in ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")]
    for legacy in ("q5_0", "iq4_nl"):
        types = [arg for name in names for arg in ("--type", f"{name}={legacy}")]
        convert([os.path.join(PEERS, "gguf_llama.py"), "--checkpoint", os.path.join(out, "llama"), "--dtype", "q8_0",
                 *types, "--output", os.path.join(out, f"llama_{legacy}.gguf")])
    directory = os.path.join(out, "llama_k")
    write_checkpoint(directory, LLAMA_K, ml.make_weights(LLAMA_K, 3240))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(VOCAB, name), directory)
    for mix, main_type in K_MIXES.items():
        types = ["--type", "output.weight=q6_k", "--type", "token_embd.weight=" + main_type]
        for layer in range(LLAMA_K["num_hidden_layers"]):
            for t in ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"):
                six = t in ("attn_v", "ffn_down")
                types += ["--type", f"blk.{layer}.{t}.weight=" + ("q6_k" if six else main_type)]
        convert([os.path.join(PEERS, "gguf_llama.py"), "--checkpoint", directory, "--dtype", "q8_0", *types,
                 "--output", os.path.join(out, f"llama_k_{mix}.gguf")])
    # phi3_swa has phi3's weights (make_weights reads no window).
    for arch, config, seed, dtypes in (("phi3", PHI3, 3204, DTYPES), ("phi3_swa", PHI3_SWA, 3204, ("f32",)),
                                       ("phi35", PHI35, 3205, ("f32",))):
        directory = os.path.join(out, arch)
        write_checkpoint(directory, config, ml.make_weights(config, seed))
        phi3_vocabulary(directory)
        for dtype in dtypes:
            convert([os.path.join(PEERS, "gguf_llama.py"), "--checkpoint", directory, "--dtype", dtype,
                     "--output", os.path.join(out, f"{arch}_{dtype}.gguf")])
    # gemma2_nowin has gemma2's weights (make_weights reads no window).
    for arch, config, seed, dtypes in (("gemma2", GEMMA2, 3235, DTYPES),
                                       ("gemma2_nowin", GEMMA2_NOWIN, 3235, ("f32",))):
        directory = os.path.join(out, arch)
        write_checkpoint(directory, config, mg.make_weights(config, seed))
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(GEMMA2_VOCAB, name), directory)
        for dtype in dtypes:
            convert([os.path.join(PEERS, "gguf_llama.py"), "--checkpoint", directory, "--dtype", dtype,
                     "--output", os.path.join(out, f"{arch}_{dtype}.gguf")])
    directory = os.path.join(out, "gpt2")
    write_checkpoint(directory, GPT2, mf.hf_make_weights(GPT2, 3203))
    with open(os.path.join(VOCAB, "tokenizer.json"), encoding="utf-8") as f:
        t = json.load(f)
    encoder = dict(t["model"]["vocab"])
    encoder.update({a["content"]: a["id"] for a in t["added_tokens"]})
    encoder["<|endoftext|>"] = encoder.pop("<|end_of_text|>")
    with open(os.path.join(directory, "encoder.json"), "w", encoding="utf-8") as f:
        json.dump(encoder, f, ensure_ascii=False)
    with open(os.path.join(directory, "vocab.bpe"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for merge in t["model"]["merges"]:
            f.write((merge if isinstance(merge, str) else " ".join(merge)) + "\n")
    for dtype in DTYPES:
        convert([os.path.join(PEERS, "gguf_gpt2.py"), "--weights", os.path.join(directory, "model.safetensors"),
                 "--dtype", dtype, "--heads", "4", "--tokenizer", directory,
                 "--output", os.path.join(out, f"gpt2_{dtype}.gguf")])


def compare(name, tfmc_logits, tfmc_ids, lcpp_json, bound, min_checked):
    t_logits = mf.read_safetensors(tfmc_logits)["logits"][0].astype(np.float64)
    with open(tfmc_ids) as f:
        t_ids = [int(x) for x in f.read().split()]
    with open(lcpp_json) as f:
        ref = json.load(f)
    l_ids, l_logits = ref["ids"], np.array(ref["logits"], dtype=np.float64)
    n = len(l_ids)
    failures = []
    if len(t_ids) != n or t_logits.shape != l_logits.shape:
        sys.exit(f"{name}: tfmc gave {len(t_ids)} ids and logits {list(t_logits.shape)}, "
                 f"llama.cpp {n} ids and logits {list(l_logits.shape)}")
    checked = compared = 0
    worst = 0.0
    for s in range(n):
        top = np.sort(l_logits[s])[::-1]
        scale = np.abs(l_logits[s]).max()
        b = bound * scale
        margin = top[0] - top[1]
        diff = np.abs(t_logits[s] - l_logits[s]).max()
        compared += 1
        worst = max(worst, diff / scale)
        if diff > b:
            failures.append(f"{name}: step {s}: logits max |diff| {diff:.3g} = {diff / scale:.3g} of max "
                            f"|logit| {scale:.3g}, above the bound {bound:g}")
        if t_ids[s] != l_ids[s]:
            if margin > 2 * b:
                failures.append(f"{name}: step {s}: tfmc chose {t_ids[s]}, llama.cpp {l_ids[s]}, whose "
                                f"margin {margin:.3g} exceeds 2 x the bound ({2 * b:.3g})")
            break
        if margin > 2 * b:
            checked += 1
    if checked < min_checked:
        failures.append(f"{name}: {checked} checked steps, fewer than the {min_checked} required")
    for line in failures:
        print("FAILED: " + line)
    if failures:
        sys.exit(1)
    print(f"{name}: ids equal on {checked} checked steps (margin > 2 x bound) of {compared} compared; "
          f"logits max |diff| {worst:.2g} of max |logit| (bound {bound:g})")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        make(sys.argv[2])
    elif len(sys.argv) == 8 and sys.argv[1] == "compare":
        compare(*sys.argv[2:6], float(sys.argv[6]), int(sys.argv[7]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
