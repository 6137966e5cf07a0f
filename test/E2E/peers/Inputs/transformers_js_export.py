#!/usr/bin/python3
"""transformers_js_export.py FIXTURES OUT [--models gpt2_hf,llama_hf,...]
[--mutate MODEL:KEY=VALUE]...

Exports the Hugging Face checkpoints of tfmc's fixtures (FIXTURES/gpt2_hf,
llama_hf, llama3_hf, phi3_hf, gemma2_hf, marian_hf; all of them unless
--models names some) as ONNX model directories in the layout
transformers.js (npm @huggingface/transformers) loads from a local path, the
layout Optimum writes:

    OUT/MODEL/config.json             the fixture's config.json, unchanged
    OUT/MODEL/generation_config.json  its generation keys (as
                                      GenerationConfig.from_model_config)
    OUT/MODEL/onnx/model.onnx         decoder-only (GPT-2, Llama, Phi-3,
                                      Gemma 2): inputs
        input_ids, attention_mask [B, past + T], position_ids,
        past_key_values.N.key / .value [B, kv heads, past, head_dim];
        outputs logits [B, T, V], present.N.key / .value (past ++ new)
    OUT/MODEL/onnx/encoder_model.onnx          Marian: input_ids, attention_mask
                                               -> last_hidden_state
    OUT/MODEL/onnx/decoder_model_merged.onnx   Marian: encoder_attention_mask,
        input_ids, encoder_hidden_states, past_key_values.N.decoder.key /
        .value, past_key_values.N.encoder.key / .value -> logits,
        present.N.decoder.* (past ++ new), present.N.encoder.* (the
        cross-attention keys and values: computed from encoder_hidden_states
        on the first step, when the encoder past is empty, the past's after;
        no use_cache_branch input, which transformers.js feeds only to a
        graph that has one: the encoder past's length decides)

and OUT/cases.json, the generation runs the test makes transformers.js and
tfmc do (test/E2E/peers/Inputs/transformers_js_compare.py reads it).

The torch modules are written here from Hugging Face's modeling code
(transformers' GPT2LMHeadModel, LlamaForCausalLM with the llama3 rope
frequencies of _compute_llama3_parameters, Phi3ForCausalLM,
Gemma2ForCausalLM, MarianMTModel), not
from tfmc's fixture generators or tfmc's sources: GPT-2's Conv1D weights
(x @ W + b), fused c_attn split q|k|v, scale 1/sqrt(head_dim), gelu_new,
pre-LayerNorm, ln_f, the tied lm_head; Llama's RMSNorm (float32, x *
rsqrt(mean x^2 + eps) * w), rotary embeddings (inv_freq = 1 / theta^(2i/Dh)
in float32, cos/sin of position * inv_freq over both halves, rotate_half),
grouped-query attention (key/value head h // (heads / kv_heads)), SiLU-gated
MLP, the final norm and lm_head; Llama 3.1's rope_scaling (rope_type
llama3: _compute_llama3_parameters' float32 rescaling of inv_freq by
wavelength); Phi-3's packed qkv_proj (output columns q, k, v) and
gate_up_proj (chunked, gate first) and its window on every layer; Gemma 2's
embeddings x sqrt(hidden) (rounded to float32, as its normalizer tensor),
four (1 + w) RMSNorms a layer (each sublayer's output normed before its
residual), scores x query_pre_attn_scalar^-0.5 capped tanh(s / c) c before
the mask, the window on the layers Gemma2Config makes sliding (even ones
without layer_types), GeGLU with tanh GELU, the tied logits capped by
final_logit_softcapping; Marian's post-LayerNorm layers, embeddings
x sqrt(d_model), sinusoid tables with the sines in the first half and the
cosines in the second (checked against the checkpoint's stored tables), q
scaled by head_dim^-0.5 after its bias, SiLU (swish), cross-attention over
the encoder's output with the source's padding mask, the shared table as the
output layer plus final_logits_bias. The cache stores the keys after the
rotary embedding (Llama, Phi-3, Gemma 2), kv heads unrepeated, as
transformers' DynamicCache: every key, on sliding layers too (transformers'
Gemma 2 HybridCache keeps a sliding layer's last window keys only; the
attention is the same), because transformers.js feeds each present back
whole and sizes the attention mask by the cache's length. A window is a mask
over cache indices (key j seen by query i iff j > i - window, masking_utils'
sliding_window_overlay: the query and window - 1 keys before it).

Before anything is written, each module's full forward (float64 copies of
the weights) is checked against the fixture's expected.safetensors at the
unpadded positions, and the float32 module run as transformers.js runs it
(prefill, then one token at a time through the cache) against the float64
full forward: above 1e-4 of max(1, max |expected|) the script exits 1.
Torch 1.13's torch.onnx.export (opset 17, as bench/peers/onnx_gpt2.py) traces
the float32 modules with every length dynamic.

cases.json, per model: the fixture's generate.json run without and with its
eos (greedy); a longer greedy run on a seeded prompt whose float64 greedy
choices all win by at least 1e-3 (so float32 rounding cannot flip one); and
a 2-beam run on a prompt chosen as test/E2E/Inputs/beam.py chooses them
(its beam_search and greedy over these float64 modules: every deciding
margin >= 1e-4, and the beam result differs from greedy's, so a greedy
search cannot pass it). Each run records the float64 module's own ids
("torch"). With a sliding window (Phi-3, Gemma 2), every run without eos
must reach past the window (prompt + new tokens > window), or the script
exits 1: the decode steps' windows slide past the prompt's start.

--mutate MODEL:KEY=VALUE exports MODEL built with the config value KEY
changed (e.g. llama_hf:rope_theta=5000), a deliberate mistake: its check
against expected.safetensors is reported, not enforced, and its cases are
the unmutated model's. The test uses it to show that the comparison fails.
"""
import argparse
import importlib.util
import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "Inputs"))
import safetensors_io  # noqa: E402  (test/E2E/Inputs: the suite's safetensors reader)
TOLERANCE = 1e-4
GREEDY_MARGIN = 1e-3
LONG_NEW_TOKENS = 24
BEAMS = 2
TRIES = 200

_DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32}


def read_safetensors(path):
    out = {}
    for name, (dtype, shape, data) in safetensors_io.read(path).items():
        if dtype not in _DTYPES:
            sys.exit(f"{path}: {name}: dtype {dtype} not handled here")
        out[name] = np.frombuffer(data, dtype=_DTYPES[dtype]).reshape(shape).copy()
    return out


def read_json(path):
    with open(path) as f:
        return json.load(f)


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def require(cond, message):
    if not cond:
        fail(message)


# --------------------------------------------------------------------------
# The modules. Weights are buffers (exported as initializers); `dtype` is the
# floating type they are held in (float64 for the checks, float32 exported).

def _torch():
    import torch
    torch.manual_seed(0)
    torch.set_num_threads(1)
    return torch


class Weights:
    """name -> tensor, registered on `module` as buffers."""

    def __init__(self, module, tensors, torch):
        self.module = module
        self.names = {}
        for i, (name, value) in enumerate(sorted(tensors.items())):
            attr = "w%d" % i
            module.register_buffer(attr, torch.from_numpy(np.ascontiguousarray(value)))
            self.names[name] = attr

    def __getitem__(self, name):
        return getattr(self.module, self.names[name])

    def __contains__(self, name):
        return name in self.names


def causal_padding_allowed(torch, T, P, attention_mask):
    """[B, 1, T, P+T] bool: query t (absolute P+t) sees key j <= P+t with
    attention_mask[b, j] == 1."""
    S = P + T
    q_pos = torch.arange(T, dtype=torch.int64) + P
    k_pos = torch.arange(S, dtype=torch.int64)
    causal = k_pos[None, :] <= q_pos[:, None]
    return causal[None, None, :, :] & (attention_mask[:, None, None, :] > 0)


def make_gpt2(config, tensors):
    torch = _torch()
    import torch.nn as nn
    import torch.nn.functional as F
    require(config.get("activation_function", "gelu_new") == "gelu_new", "gpt2: only gelu_new is handled")
    require(config.get("scale_attn_weights", True) and not config.get("scale_attn_by_inverse_layer_idx", False)
            and not config.get("reorder_and_upcast_attn", False), "gpt2: attention options not handled")
    d, H, L = config["n_embd"], config["n_head"], config["n_layer"]
    Dh = d // H
    eps = config["layer_norm_epsilon"]
    prefix = "transformer." if "transformer.wte.weight" in tensors else ""
    keep = {k: v for k, v in tensors.items() if not k.endswith((".attn.bias", ".attn.masked_bias"))}

    class GPT2LMHeadModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = Weights(self, keep, torch)

        def forward(self, input_ids, attention_mask, position_ids, *past):
            w, p = self.w, prefix
            B, T = input_ids.shape[0], input_ids.shape[1]
            P = past[0].shape[2]
            x = F.embedding(input_ids, w[p + "wte.weight"]) + F.embedding(position_ids, w[p + "wpe.weight"])
            allowed = causal_padding_allowed(torch, T, P, attention_mask)
            low = torch.finfo(x.dtype).min
            present = []
            for i in range(L):
                h = "%sh.%d." % (p, i)
                a = F.layer_norm(x, (d,), w[h + "ln_1.weight"], w[h + "ln_1.bias"], eps)
                qkv = torch.matmul(a, w[h + "attn.c_attn.weight"]) + w[h + "attn.c_attn.bias"]  # Conv1D
                q, k, v = qkv.split(d, dim=2)
                q, k, v = (t.reshape(B, T, H, Dh).transpose(1, 2) for t in (q, k, v))
                k = torch.cat([past[2 * i], k], dim=2)
                v = torch.cat([past[2 * i + 1], v], dim=2)
                present += [k, v]
                att = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(Dh)
                att = torch.softmax(att.masked_fill(~allowed, low), dim=-1)
                y = torch.matmul(att, v).transpose(1, 2).reshape(B, T, d)
                x = x + torch.matmul(y, w[h + "attn.c_proj.weight"]) + w[h + "attn.c_proj.bias"]
                m = F.layer_norm(x, (d,), w[h + "ln_2.weight"], w[h + "ln_2.bias"], eps)
                m = torch.matmul(m, w[h + "mlp.c_fc.weight"]) + w[h + "mlp.c_fc.bias"]
                m = 0.5 * m * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (m + 0.044715 * torch.pow(m, 3.0))))
                x = x + torch.matmul(m, w[h + "mlp.c_proj.weight"]) + w[h + "mlp.c_proj.bias"]
            x = F.layer_norm(x, (d,), w[p + "ln_f.weight"], w[p + "ln_f.bias"], eps)
            head = w["lm_head.weight"] if "lm_head.weight" in w else w[p + "wte.weight"]
            return (torch.matmul(x, head.transpose(0, 1)), *present)

    return GPT2LMHeadModel().eval(), {"layers": L, "kv_heads": H, "head_dim": Dh}


def window_allowed(torch, T, P, window):
    """[1, 1, T, P+T] bool: key j within the window of query t (absolute
    P+t): j > P+t - window (masking_utils' sliding_window_overlay, the
    query and the window - 1 keys before it). A cache index is the key's
    absolute position: the cache holds every key (DynamicCache)."""
    q_pos = torch.arange(T, dtype=torch.int64) + P
    k_pos = torch.arange(P + T, dtype=torch.int64)
    return (k_pos[None, :] > q_pos[:, None] - window)[None, None, :, :]


def llama3_inv_freq(torch, inv_freq, scaling):
    """transformers' _compute_llama3_parameters (rope_type "llama3",
    Llama 3.1): wavelengths 2 pi / inv_freq above
    original_max_position_embeddings / low_freq_factor divided by factor,
    below original / high_freq_factor kept, those between interpolated by
    smooth = (original / wavelen - low) / (high - low); float32 tensors."""
    factor = scaling["factor"]
    low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
    old_context_len = scaling["original_max_position_embeddings"]
    low_freq_wavelen = old_context_len / low
    high_freq_wavelen = old_context_len / high
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context_len / wavelen - low) / (high - low)
    smoothed = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium_freq, smoothed, inv_freq_llama)


def rope_tables(torch, position_ids, inv_freq, dtype):
    """LlamaRotaryEmbedding.forward (Phi-3's and Gemma 2's alike): the
    angles position * inv_freq in float32 (autocast off), cos and sin over
    cat(freqs, freqs), cast to the model's dtype; [B, 1, T, Dh]."""
    freqs = position_ids[:, :, None].to(torch.float32) * inv_freq.to(torch.float32)[None, None, :]
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos().to(dtype)[:, None], emb.sin().to(dtype)[:, None]


def make_llama(config, tensors):
    """transformers' LlamaForCausalLM, with rope_scaling of rope_type llama3
    (Llama 3.1) when the config has one; model_type "phi3" gives
    Phi3ForCausalLM (Phi3Attention, Phi3MLP): the same decoder with
    self_attn.qkv_proj (its output's columns q, then k, then v) and
    mlp.gate_up_proj (chunked in two, gate first: up * silu(gate)), and
    config.sliding_window on every layer (create_sliding_window_causal_mask)."""
    torch = _torch()
    import torch.nn as nn
    import torch.nn.functional as F
    phi3 = config["model_type"] == "phi3"
    family = "phi3" if phi3 else "llama"
    require(config.get("hidden_act", "silu") == "silu", "%s: only silu is handled" % family)
    scaling = config.get("rope_scaling")
    scaling_type = (scaling or {}).get("rope_type", (scaling or {}).get("type"))
    require(scaling is None or (scaling_type == "llama3" and not phi3),
            "%s: rope_scaling %r not handled" % (family, scaling_type))
    require(not config.get("attention_bias", False) and not config.get("mlp_bias", False),
            "%s: biases not handled" % family)
    require(config.get("pretraining_tp", 1) == 1, "llama: pretraining_tp not handled")
    d, H = config["hidden_size"], config["num_attention_heads"]
    KVH = config.get("num_key_value_heads") or H
    Dh = config.get("head_dim") or d // H
    L, eps, theta = config["num_hidden_layers"], config["rms_norm_eps"], config.get("rope_theta", 10000.0)
    window = config.get("sliding_window") if phi3 else None
    rep = H // KVH
    prefix = "model." if "model.embed_tokens.weight" in tensors else ""
    # The rotary embedding's inv_freq in float32, whatever the model's dtype
    # (_compute_default_rope_parameters, then llama3's rescaling).
    inv_freq = 1.0 / (theta ** (torch.arange(0, Dh, 2, dtype=torch.int64).float() / Dh))
    if scaling_type == "llama3":
        inv_freq = llama3_inv_freq(torch, inv_freq, scaling)

    class LlamaForCausalLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = Weights(self, tensors, torch)
            self.register_buffer("inv_freq", inv_freq, persistent=False)

        def rms(self, x, weight):
            t = x.to(torch.float32) if x.dtype != torch.float64 else x
            t = t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + eps)
            return weight * t.to(x.dtype)

        def forward(self, input_ids, attention_mask, position_ids, *past):
            w, p = self.w, prefix
            B, T = input_ids.shape[0], input_ids.shape[1]
            P = past[0].shape[2]
            x = F.embedding(input_ids, w[p + "embed_tokens.weight"])
            cos, sin = rope_tables(torch, position_ids, self.inv_freq, x.dtype)

            def rotate_half(t):
                return torch.cat([-t[..., Dh // 2:], t[..., :Dh // 2]], dim=-1)

            allowed = causal_padding_allowed(torch, T, P, attention_mask)
            if window:
                allowed = allowed & window_allowed(torch, T, P, window)
            low = torch.finfo(x.dtype).min
            present = []
            for i in range(L):
                h = "%slayers.%d." % (p, i)
                a = self.rms(x, w[h + "input_layernorm.weight"])
                if phi3:
                    qkv = F.linear(a, w[h + "self_attn.qkv_proj.weight"])
                    q, k, v = qkv.split([H * Dh, KVH * Dh, KVH * Dh], dim=-1)
                else:
                    q = F.linear(a, w[h + "self_attn.q_proj.weight"])
                    k = F.linear(a, w[h + "self_attn.k_proj.weight"])
                    v = F.linear(a, w[h + "self_attn.v_proj.weight"])
                q = q.reshape(B, T, H, Dh).transpose(1, 2)
                k = k.reshape(B, T, KVH, Dh).transpose(1, 2)
                v = v.reshape(B, T, KVH, Dh).transpose(1, 2)
                q = q * cos + rotate_half(q) * sin
                k = k * cos + rotate_half(k) * sin
                k = torch.cat([past[2 * i], k], dim=2)
                v = torch.cat([past[2 * i + 1], v], dim=2)
                present += [k, v]
                S = k.shape[2]
                # repeat_kv: query head j reads key/value head j // rep.
                kr = k[:, :, None].expand(B, KVH, rep, S, Dh).reshape(B, H, S, Dh)
                vr = v[:, :, None].expand(B, KVH, rep, S, Dh).reshape(B, H, S, Dh)
                att = torch.matmul(q, kr.transpose(-1, -2)) * (Dh ** -0.5)
                att = torch.softmax(att.masked_fill(~allowed, low), dim=-1)
                y = torch.matmul(att, vr).transpose(1, 2).reshape(B, T, H * Dh)
                x = x + F.linear(y, w[h + "self_attn.o_proj.weight"])
                m = self.rms(x, w[h + "post_attention_layernorm.weight"])
                if phi3:
                    gate, up = F.linear(m, w[h + "mlp.gate_up_proj.weight"]).chunk(2, dim=-1)
                else:
                    gate = F.linear(m, w[h + "mlp.gate_proj.weight"])
                    up = F.linear(m, w[h + "mlp.up_proj.weight"])
                x = x + F.linear(up * F.silu(gate), w[h + "mlp.down_proj.weight"])
            x = self.rms(x, w[p + "norm.weight"])
            head = w["lm_head.weight"] if "lm_head.weight" in w else w[p + "embed_tokens.weight"]
            return (F.linear(x, head), *present)

    class Phi3ForCausalLM(LlamaForCausalLM):
        pass

    module = Phi3ForCausalLM() if phi3 else LlamaForCausalLM()
    return module.eval(), {"layers": L, "kv_heads": KVH, "head_dim": Dh, "window": window}


def gemma2_sliding_layers(config):
    """Which layers slide: config.layer_types where present, else
    Gemma2Config's default, layer i sliding when (i + 1) % 2 (the older
    Gemma2DecoderLayer's `not bool(layer_idx % 2)`): even layers."""
    types = config.get("layer_types")
    if types is not None:
        require(set(types) <= {"sliding_attention", "full_attention"}, "gemma2: layer_types %r" % types)
        return [t == "sliding_attention" for t in types]
    return [bool((i + 1) % 2) for i in range(config["num_hidden_layers"])]


def make_gemma2(config, tensors):
    """transformers' Gemma2ForCausalLM (eager attention): embeddings
    times sqrt(hidden_size) (a tensor of the hidden states' dtype: float32
    for this checkpoint), Gemma2RMSNorm's (1 + w) gains, four norms a layer
    (input, post_attention around the attention; pre_ and post_feedforward
    around the MLP, each sublayer's output normed before its residual),
    scores * query_pre_attn_scalar^-0.5, capped tanh(s / c) * c before the
    mask (eager_attention_forward), the window on the sliding layers, GeGLU
    with gelu_pytorch_tanh, the tied head's logits capped by
    final_logit_softcapping."""
    torch = _torch()
    import torch.nn as nn
    import torch.nn.functional as F
    act = config.get("hidden_activation") or config.get("hidden_act")
    require(act == "gelu_pytorch_tanh", "gemma2: only gelu_pytorch_tanh is handled, not %r" % act)
    require(not config.get("attention_bias", False), "gemma2: biases not handled")
    require(config.get("rope_scaling") is None, "gemma2: rope_scaling not handled")
    d, H = config["hidden_size"], config["num_attention_heads"]
    KVH = config.get("num_key_value_heads") or H
    Dh = config["head_dim"]
    L, eps, theta = config["num_hidden_layers"], config["rms_norm_eps"], config.get("rope_theta", 10000.0)
    window = config["sliding_window"]
    sliding = gemma2_sliding_layers(config)
    scaling = config["query_pre_attn_scalar"] ** -0.5
    attn_cap = config.get("attn_logit_softcapping")
    final_cap = config.get("final_logit_softcapping")
    require(config.get("tie_word_embeddings", True) and "lm_head.weight" not in tensors,
            "gemma2: only the tied head is handled")
    # normalizer = torch.tensor(hidden_size ** 0.5, dtype=hidden_states.dtype)
    normalizer = float(np.float32(d ** 0.5))
    rep = H // KVH
    inv_freq = 1.0 / (theta ** (torch.arange(0, Dh, 2, dtype=torch.int64).float() / Dh))

    def softcap(x, cap):
        return torch.tanh(x / cap) * cap if cap is not None else x

    class Gemma2ForCausalLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = Weights(self, tensors, torch)
            self.register_buffer("inv_freq", inv_freq, persistent=False)

        def rms(self, x, weight):
            """Gemma2RMSNorm: in float32 (float64 kept), times (1 + w)."""
            t = x.to(torch.float32) if x.dtype != torch.float64 else x
            t = t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + eps)
            return (t * (1.0 + weight.to(t.dtype))).to(x.dtype)

        def forward(self, input_ids, attention_mask, position_ids, *past):
            w = self.w
            B, T = input_ids.shape[0], input_ids.shape[1]
            P = past[0].shape[2]
            x = F.embedding(input_ids, w["model.embed_tokens.weight"]) * normalizer
            cos, sin = rope_tables(torch, position_ids, self.inv_freq, x.dtype)

            def rotate_half(t):
                return torch.cat([-t[..., Dh // 2:], t[..., :Dh // 2]], dim=-1)

            full = causal_padding_allowed(torch, T, P, attention_mask)
            windowed = full & window_allowed(torch, T, P, window)
            low = torch.finfo(x.dtype).min
            present = []
            for i in range(L):
                h = "model.layers.%d." % i
                residual = x
                a = self.rms(x, w[h + "input_layernorm.weight"])
                q = F.linear(a, w[h + "self_attn.q_proj.weight"]).reshape(B, T, H, Dh).transpose(1, 2)
                k = F.linear(a, w[h + "self_attn.k_proj.weight"]).reshape(B, T, KVH, Dh).transpose(1, 2)
                v = F.linear(a, w[h + "self_attn.v_proj.weight"]).reshape(B, T, KVH, Dh).transpose(1, 2)
                q = q * cos + rotate_half(q) * sin
                k = k * cos + rotate_half(k) * sin
                k = torch.cat([past[2 * i], k], dim=2)
                v = torch.cat([past[2 * i + 1], v], dim=2)
                present += [k, v]
                S = k.shape[2]
                kr = k[:, :, None].expand(B, KVH, rep, S, Dh).reshape(B, H, S, Dh)
                vr = v[:, :, None].expand(B, KVH, rep, S, Dh).reshape(B, H, S, Dh)
                att = softcap(torch.matmul(q, kr.transpose(-1, -2)) * scaling, attn_cap)
                allowed = windowed if sliding[i] else full
                att = torch.softmax(att.masked_fill(~allowed, low), dim=-1)
                y = torch.matmul(att, vr).transpose(1, 2).reshape(B, T, H * Dh)
                y = F.linear(y, w[h + "self_attn.o_proj.weight"])
                x = residual + self.rms(y, w[h + "post_attention_layernorm.weight"])
                residual = x
                m = self.rms(x, w[h + "pre_feedforward_layernorm.weight"])
                g = F.linear(m, w[h + "mlp.gate_proj.weight"])
                # gelu_pytorch_tanh: 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3)))
                g = 0.5 * g * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (g + 0.044715 * torch.pow(g, 3.0))))
                m = F.linear(g * F.linear(m, w[h + "mlp.up_proj.weight"]), w[h + "mlp.down_proj.weight"])
                x = residual + self.rms(m, w[h + "post_feedforward_layernorm.weight"])
            x = self.rms(x, w["model.norm.weight"])
            logits = softcap(F.linear(x, w["model.embed_tokens.weight"]), final_cap)
            return (logits, *present)

    return Gemma2ForCausalLM().eval(), {"layers": L, "kv_heads": KVH, "head_dim": Dh,
                                        "window": window, "sliding": sliding}


def marian_sinusoids(n_pos, dim):
    """MarianSinusoidalPositionalEmbedding._init_weight: angle pos /
    10000^(2 (j // 2) / dim); sines of the even columns' angles in the first
    half, cosines of the odd columns' in the second."""
    enc = np.array([[pos / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)] for pos in range(n_pos)])
    out = np.zeros((n_pos, dim))
    sentinel = dim // 2 if dim % 2 == 0 else dim // 2 + 1
    out[:, :sentinel] = np.sin(enc[:, 0::2])
    out[:, sentinel:] = np.cos(enc[:, 1::2])
    return out


def make_marian(config, tensors):
    torch = _torch()
    import torch.nn as nn
    import torch.nn.functional as F
    act = config.get("activation_function")
    require(act in ("swish", "silu"), "marian: only swish is handled, not %r" % act)
    require(not config.get("normalize_before", False) and not config.get("add_final_layer_norm", False)
            and not config.get("normalize_embedding", False), "marian: pre-norm variants not handled")
    require(config.get("share_encoder_decoder_embeddings", True), "marian: separate embeddings not handled")
    d = config["d_model"]
    H = config["encoder_attention_heads"]
    require(config["decoder_attention_heads"] == H, "marian: encoder and decoder heads differ")
    Dh = d // H
    Le, Ld = config["encoder_layers"], config["decoder_layers"]
    scale = math.sqrt(d) if config.get("scale_embedding", False) else 1.0
    eps = 1e-5  # nn.LayerNorm's default, as MarianEncoderLayer builds it
    table = marian_sinusoids(config["max_position_embeddings"], d)
    for side in ("encoder", "decoder"):
        stored = tensors.get("model.%s.embed_positions.weight" % side)
        if stored is not None:
            err = float(np.abs(stored.astype(np.float64) - table).max())
            require(err < 1e-6, "marian: the computed sinusoids differ from the stored %s table by %g" % (side, err))
    keep = {k: v for k, v in tensors.items() if "embed_positions" not in k}
    keep["positions"] = table.astype(np.float32)

    def project_kv(w, name, src):
        """k, v [B, H, S, Dh] of `src` [B, S, d]."""
        B, S = src.shape[0], src.shape[1]
        k = F.linear(src, w[name + "k_proj.weight"], w[name + "k_proj.bias"]).reshape(B, S, H, Dh).transpose(1, 2)
        v = F.linear(src, w[name + "v_proj.weight"], w[name + "v_proj.bias"]).reshape(B, S, H, Dh).transpose(1, 2)
        return k, v

    def attention(w, name, x, k, v, mask_allowed):
        """MarianAttention: q = q_proj(x) * head_dim^-0.5 over keys k and
        values v; the masked scores get the dtype's lowest value."""
        B, T = x.shape[0], x.shape[1]
        q = F.linear(x, w[name + "q_proj.weight"], w[name + "q_proj.bias"]) * (Dh ** -0.5)
        q = q.reshape(B, T, H, Dh).transpose(1, 2)
        att = torch.matmul(q, k.transpose(-1, -2))
        att = torch.softmax(att.masked_fill(~mask_allowed, torch.finfo(x.dtype).min), dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(B, T, d)
        return F.linear(y, w[name + "out_proj.weight"], w[name + "out_proj.bias"])

    def ln(w, name, x):
        return F.layer_norm(x, (d,), w[name + ".weight"], w[name + ".bias"], eps)

    class MarianEncoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = Weights(self, {k: v for k, v in keep.items()
                                    if k.startswith("model.encoder.") or k in ("model.shared.weight", "positions")},
                             torch)

        def forward(self, input_ids, attention_mask):
            w = self.w
            T = input_ids.shape[1]
            x = F.embedding(input_ids, w["model.shared.weight"]) * scale + w["positions"][:T][None]
            allowed = (attention_mask[:, None, None, :] > 0)
            for i in range(Le):
                h = "model.encoder.layers.%d." % i
                k, v = project_kv(w, h + "self_attn.", x)
                x = ln(w, h + "self_attn_layer_norm", x + attention(w, h + "self_attn.", x, k, v, allowed))
                m = F.linear(F.silu(F.linear(x, w[h + "fc1.weight"], w[h + "fc1.bias"])), w[h + "fc2.weight"], w[h + "fc2.bias"])
                x = ln(w, h + "final_layer_norm", x + m)
            return x

    class MarianDecoderMerged(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = Weights(self, {k: v for k, v in keep.items() if not k.startswith("model.encoder.")}, torch)

        def forward(self, encoder_attention_mask, input_ids, encoder_hidden_states, *past):
            w = self.w
            B, T = input_ids.shape[0], input_ids.shape[1]
            P = past[0].shape[2]
            positions = torch.arange(T, dtype=torch.int64) + P
            x = F.embedding(input_ids, w["model.shared.weight"]) * scale + w["positions"][positions][None]
            allowed = causal_padding_allowed(torch, T, P, torch.ones(B, P + T, dtype=torch.int64))
            cross_allowed = (encoder_attention_mask[:, None, None, :] > 0)
            present = []
            for i in range(Ld):
                h = "model.decoder.layers.%d." % i
                pk, pv, pek, pev = past[4 * i:4 * i + 4]
                # Self-attention through the cache: past ++ this call's.
                k, v = project_kv(w, h + "self_attn.", x)
                k = torch.cat([pk, k], dim=2)
                v = torch.cat([pv, v], dim=2)
                x = ln(w, h + "self_attn_layer_norm", x + attention(w, h + "self_attn.", x, k, v, allowed))
                # Cross-attention: the encoder past when there is one (its
                # length S), else keys and values from encoder_hidden_states
                # (its rows past.shape[2]..: all of them when the past is
                # empty, none when the past holds them).
                name = h + "encoder_attn."
                ck, cv = project_kv(w, name, encoder_hidden_states)
                Pe = pek.shape[2]
                ck = torch.cat([pek, ck[:, :, Pe:]], dim=2)
                cv = torch.cat([pev, cv[:, :, Pe:]], dim=2)
                c = attention(w, name, x, ck, cv, cross_allowed)
                x = ln(w, h + "encoder_attn_layer_norm", x + c)
                m = F.linear(F.silu(F.linear(x, w[h + "fc1.weight"], w[h + "fc1.bias"])), w[h + "fc2.weight"], w[h + "fc2.bias"])
                x = ln(w, h + "final_layer_norm", x + m)
                present += [k, v, ck, cv]
            logits = F.linear(x, w["model.shared.weight"]) + w["final_logits_bias"]
            return (logits, *present)

    return (MarianEncoder().eval(), MarianDecoderMerged().eval()), {"layers": Ld, "kv_heads": H, "head_dim": Dh}


MAKERS = {"gpt2": make_gpt2, "llama": make_llama, "phi3": make_llama, "gemma2": make_gemma2,
          "marian": make_marian}


# --------------------------------------------------------------------------
# Running the modules.

class Model:
    def __init__(self, config, tensors):
        self.torch = _torch()
        self.config = config
        self.encdec = config["model_type"] == "marian"
        self.modules, self.shape = MAKERS[config["model_type"]](config, tensors)
        self.dtype = None

    def to(self, dtype):
        mods = self.modules if self.encdec else (self.modules,)
        for m in mods:
            for name, buf in list(m.named_buffers()):
                if buf.is_floating_point() and name != "inv_freq":
                    setattr(m, name, buf.to(dtype))
        self.dtype = dtype
        return self

    def empty_past(self, B):
        torch = self.torch
        n = self.shape["layers"] * (4 if self.encdec else 2)
        return [torch.zeros(B, self.shape["kv_heads"], 0, self.shape["head_dim"], dtype=self.dtype) for _ in range(n)]

    def full(self, ids, mask, dec_ids=None):
        """One forward over everything, empty cache: logits [B, T, V]."""
        torch = self.torch
        with torch.no_grad():
            ids = torch.from_numpy(np.asarray(ids, dtype=np.int64))
            mask = torch.from_numpy(np.asarray(mask, dtype=np.int64))
            if self.encdec:
                enc, dec = self.modules
                hidden = enc(ids, mask)
                dec_ids = torch.from_numpy(np.asarray(dec_ids, dtype=np.int64))
                return dec(mask, dec_ids, hidden, *self.empty_past(ids.shape[0]))[0]
            # position_ids as transformers.js makes them: cumsum(mask) - 1
            # (1 on padding).
            pos = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)
            return self.modules(ids, mask, pos, *self.empty_past(ids.shape[0]))[0]

    def cached(self, prompt, tokens, bos=None):
        """transformers.js's order: the prompt (or the decoder start) in one
        call, then each token alone through the cache; the logits of every
        call's last position, [len(tokens) + 1, V]."""
        torch = self.torch
        out = []
        with torch.no_grad():
            src = torch.tensor([prompt], dtype=torch.int64)
            past = self.empty_past(1)
            if self.encdec:
                enc, dec = self.modules
                smask = torch.ones_like(src)
                hidden = enc(src, smask)
                feed = [bos] + list(tokens)
                for t in feed:
                    r = dec(smask, torch.tensor([[t]]), hidden, *past)
                    out.append(r[0][0, -1])
                    past = list(r[1:])
                return torch.stack(out)
            seq = list(prompt)
            step = torch.tensor([seq])
            for t in [None] + list(tokens):
                if t is not None:
                    seq.append(t)
                    step = torch.tensor([[t]])
                T = step.shape[1]
                mask = torch.ones(1, len(seq), dtype=torch.int64)
                pos = torch.arange(len(seq) - T, len(seq))[None]
                r = self.modules(step, mask, pos, *past)
                out.append(r[0][0, -1])
                past = list(r[1:])
            return torch.stack(out)

    def step_logits(self, prompt, bos=None):
        """beam.py's step_logits: float64 logits of the next token after
        `tokens`, a full forward each time."""
        def run(tokens):
            if self.encdec:
                return self.full([prompt], [[1] * len(prompt)], [[bos] + list(tokens)])[0, -1].numpy()
            seq = list(prompt) + list(tokens)
            return self.full([seq], [[1] * len(seq)])[0, -1].numpy()
        return run


def greedy_with_margin(step, max_new, eos=(), floor=None):
    """Greedy ids and their smallest margin; with `floor`, it stops as soon
    as a margin is below it (a prompt the caller rejects anyway)."""
    tokens, margin = [], float("inf")
    while len(tokens) < max_new:
        logits = step(tokens)
        order = np.argsort(-logits, kind="stable")
        margin = min(margin, float(logits[order[0]] - logits[order[1]]))
        tokens.append(int(order[0]))
        if tokens[-1] in eos or (floor is not None and margin < floor):
            break
    return tokens, margin


def check(name, model, fixture, mutated):
    """The float64 full forward against expected.safetensors, and the
    float32 cached path against the float64 full forward."""
    torch = model.torch
    inputs = read_safetensors(os.path.join(fixture, "inputs.safetensors"))
    expected = read_safetensors(os.path.join(fixture, "expected.safetensors"))["logits"].astype(np.float64)
    model.to(torch.float64)
    if model.encdec:
        got = model.full(inputs["input_ids"], inputs["attention_mask"], inputs["decoder_input_ids"]).numpy()
        keep = inputs["decoder_attention_mask"] > 0
    else:
        got = model.full(inputs["input_ids"], inputs["attention_mask"]).numpy()
        keep = inputs["attention_mask"] > 0
    scale = max(1.0, float(np.abs(expected[keep]).max()))
    err = float(np.abs(got[keep] - expected[keep]).max()) / scale
    ok = err <= TOLERANCE
    print("%s: float64 forward vs expected.safetensors: max |diff| / %.3g = %.2e over %d positions%s"
          % (name, scale, err, int(keep.sum()), "" if ok else " (ABOVE %g)" % TOLERANCE))
    if not ok and not mutated:
        fail("%s: the module is not the fixture's model" % name)
    # The cached path in float32, as exported, against the float64 full forward.
    spec = read_json(os.path.join(fixture, "generate.json"))
    prompt = spec.get("source", spec.get("prompt"))
    tokens = spec["expected"]
    bos = spec.get("bos")
    if model.encdec:
        ref = model.full([prompt], [[1] * len(prompt)], [[bos] + tokens])[0].numpy()
    else:
        seq = prompt + tokens
        ref = model.full([seq], [[1] * len(seq)])[0].numpy()[len(prompt) - 1:]
    model.to(torch.float32)
    cached = model.cached(prompt, tokens, bos).numpy().astype(np.float64)
    cerr = float(np.abs(cached - ref).max()) / max(1.0, float(np.abs(ref).max()))
    print("%s: float32 prefill + %d cached steps vs float64 full forward: %.2e" % (name, len(tokens), cerr))
    if cerr > TOLERANCE and not mutated:
        fail("%s: the cached path differs from the full forward" % name)


def load_beam_py():
    path = os.path.join(HERE, "..", "..", "Inputs", "beam.py")
    spec = importlib.util.spec_from_file_location("tfmc_beam_py", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def choose_cases(name, model, fixture, config, beam_py):
    torch = model.torch
    model.to(torch.float64)
    spec = read_json(os.path.join(fixture, "generate.json"))
    vocab = config["vocab_size"]
    encdec = model.encdec
    # Marian's generate bans its pad (config bad_words_ids); the greedy runs
    # keep that ban on both sides.
    bad = config.get("bad_words_ids") or []
    require(all(len(word) == 1 for word in bad), "%s: only one-token bad_words_ids are handled" % name)
    start = spec.get("bos")
    cases = []

    def case(label, prompt, max_new, eos, beams, torch_ids, bad_words, margin):
        c = {"name": label, "max_new_tokens": max_new, "eos": eos, "num_beams": beams,
             "bad_words": bad_words, "torch": torch_ids, "margin": margin}
        if encdec:
            c.update(source=prompt, bos=start)
        else:
            c.update(prompt=prompt)
        cases.append(c)

    prompt = spec.get("source", spec.get("prompt"))
    step = model.step_logits(prompt, start)

    def banned(step):
        if not bad:
            return step
        def run(tokens):
            logits = step(tokens).copy()
            for word in bad:
                if len(word) == 1:
                    logits[word[0]] = -np.inf
            return logits
        return run

    ids, margin = greedy_with_margin(banned(step), spec["max_new_tokens"])
    require(ids == spec["expected"], "%s: the module's greedy ids %s are not generate.json's %s"
            % (name, ids, spec["expected"]))
    case("greedy", prompt, spec["max_new_tokens"], None, 1, ids, bad, margin)
    ids, margin = greedy_with_margin(banned(step), spec["max_new_tokens"], (spec["eos"],))
    require(ids == spec["expected_with_eos"], "%s: greedy ids with eos %s are not generate.json's %s"
            % (name, ids, spec["expected_with_eos"]))
    case("greedy-eos", prompt, spec["max_new_tokens"], spec["eos"], 1, ids, bad, margin)

    # A longer greedy run, every choice decided by >= GREEDY_MARGIN.
    rng = np.random.RandomState(2601)
    for _ in range(TRIES):
        p = draw_prompt(rng, vocab, encdec, config)
        ids, margin = greedy_with_margin(banned(model.step_logits(p, start)), LONG_NEW_TOKENS,
                                         floor=GREEDY_MARGIN)
        if margin >= GREEDY_MARGIN and len(set(ids)) >= 4:
            case("greedy-long", p, LONG_NEW_TOKENS, None, 1, ids, bad, margin)
            break
    else:
        fail("%s: no prompt in %d tries whose %d greedy choices all win by %g" % (name, TRIES, LONG_NEW_TOKENS, GREEDY_MARGIN))

    # 2 beams, chosen as beam.py chooses them (no eos, length penalty 1, no
    # early stopping, no bad words: beam.py's search has none).
    rng = np.random.RandomState(2602)
    for _ in range(TRIES):
        p = draw_prompt(rng, vocab, encdec, config)
        step = model.step_logits(p, start)
        best, margin = beam_py.beam_search(step, BEAMS, [], 1.0, False, beam_py.NEW_TOKENS)
        plain = beam_py.greedy(step, [], beam_py.NEW_TOKENS)
        if margin >= beam_py.MARGIN and best != plain:
            case("beams", p, beam_py.NEW_TOKENS, None, BEAMS, best, [], margin)
            cases[-1]["torch_greedy"] = plain
            break
    else:
        fail("%s: no margin-checked prompt whose beams differ from greedy in %d tries" % (name, TRIES))

    # Sliding windows must slide: every run without eos longer than the window.
    window = model.shape.get("window")
    if window:
        sliding = model.shape.get("sliding") or [True] * model.shape["layers"]
        lengths = [len(c.get("source") or c.get("prompt")) + c["max_new_tokens"] for c in cases if c["eos"] is None]
        require(min(lengths) > window, "%s: a run of %d positions does not pass the window of %d"
                % (name, min(lengths), window))
        print("%s: window %d on layers %s of %d; the runs without eos reach %s positions"
              % (name, window, ", ".join(str(i) for i, s in enumerate(sliding) if s), len(sliding),
                 ", ".join(map(str, lengths))))
    return cases


def draw_prompt(rng, vocab, encdec, config):
    if encdec:
        # A source ends with eos; neither eos nor the pad inside.
        avoid = {config.get("eos_token_id"), config.get("pad_token_id")}
        body = [int(t) for t in rng.randint(0, vocab, size=12) if int(t) not in avoid][:5]
        return body + [config["eos_token_id"]]
    return [int(t) for t in rng.randint(0, vocab, size=6)]


MODELS = ["gpt2_hf", "llama_hf", "llama3_hf", "phi3_hf", "gemma2_hf", "marian_hf"]

GENERATION_KEYS = ["bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id", "bad_words_ids",
                   "forced_eos_token_id", "max_length", "num_beams"]


def export(name, model, out_dir):
    torch = model.torch
    model.to(torch.float32)
    onnx_dir = os.path.join(out_dir, "onnx")
    os.makedirs(onnx_dir, exist_ok=True)
    L = model.shape["layers"]
    B, T, P, S = 2, 3, 2, 5
    past = [torch.randn(B, model.shape["kv_heads"], P, model.shape["head_dim"]) for _ in range(L * (4 if model.encdec else 2))]
    ids = torch.tensor([[1, 2, 3], [4, 5, 6]], dtype=torch.int64)
    kw = dict(opset_version=17, do_constant_folding=True)
    with torch.no_grad():
        if not model.encdec:
            names_past = ["past_key_values.%d.%s" % (i, kv) for i in range(L) for kv in ("key", "value")]
            names_present = ["present.%d.%s" % (i, kv) for i in range(L) for kv in ("key", "value")]
            axes = {"input_ids": {0: "batch_size", 1: "sequence_length"},
                    "attention_mask": {0: "batch_size", 1: "total_sequence_length"},
                    "position_ids": {0: "batch_size", 1: "sequence_length"},
                    "logits": {0: "batch_size", 1: "sequence_length"}}
            axes.update({n: {0: "batch_size", 2: "past_sequence_length"} for n in names_past})
            axes.update({n: {0: "batch_size", 2: "total_sequence_length"} for n in names_present})
            mask = torch.ones(B, P + T, dtype=torch.int64)
            pos = torch.arange(P, P + T)[None].expand(B, T).contiguous()
            torch.onnx.export(model.modules, (ids, mask, pos, *past), os.path.join(onnx_dir, "model.onnx"),
                              input_names=["input_ids", "attention_mask", "position_ids"] + names_past,
                              output_names=["logits"] + names_present, dynamic_axes=axes, **kw)
        else:
            enc, dec = model.modules
            src = torch.tensor([[1, 2, 3, 4, 5], [6, 7, 8, 9, 0]], dtype=torch.int64)
            smask = torch.ones(B, S, dtype=torch.int64)
            torch.onnx.export(enc, (src, smask), os.path.join(onnx_dir, "encoder_model.onnx"),
                              input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
                              dynamic_axes={"input_ids": {0: "batch_size", 1: "encoder_sequence_length"},
                                            "attention_mask": {0: "batch_size", 1: "encoder_sequence_length"},
                                            "last_hidden_state": {0: "batch_size", 1: "encoder_sequence_length"}},
                              **kw)
            kinds = [("decoder", "key"), ("decoder", "value"), ("encoder", "key"), ("encoder", "value")]
            names_past = ["past_key_values.%d.%s.%s" % (i, a, b) for i in range(L) for a, b in kinds]
            names_present = ["present.%d.%s.%s" % (i, a, b) for i in range(L) for a, b in kinds]
            axes = {"encoder_attention_mask": {0: "batch_size", 1: "encoder_sequence_length"},
                    "input_ids": {0: "batch_size", 1: "decoder_sequence_length"},
                    "encoder_hidden_states": {0: "batch_size", 1: "encoder_sequence_length"},
                    "logits": {0: "batch_size", 1: "decoder_sequence_length"}}
            for n in names_past:
                axes[n] = {0: "batch_size", 2: "past_decoder_sequence_length" if ".decoder." in n
                           else "encoder_sequence_length_out"}
            for n in names_present:
                axes[n] = {0: "batch_size", 2: "past_decoder_sequence_length + 1" if ".decoder." in n
                           else "encoder_sequence_length_out"}
            hidden = torch.randn(B, S, model.config["d_model"])
            # Trace with an empty encoder past (the first step's form); the
            # slice start is the past's length, a dynamic shape.
            trace_past = [t if ".decoder." in n else t[:, :, :0] for n, t in zip(names_past, past)]
            torch.onnx.export(dec, (smask, ids, hidden, *trace_past),
                              os.path.join(onnx_dir, "decoder_model_merged.onnx"),
                              input_names=["encoder_attention_mask", "input_ids", "encoder_hidden_states"] + names_past,
                              output_names=["logits"] + names_present, dynamic_axes=axes, **kw)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fixtures")
    ap.add_argument("out")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--mutate", action="append", default=[], metavar="MODEL:KEY=VALUE")
    args = ap.parse_args()
    mutations = {}
    for m in args.mutate:
        model_name, _, rest = m.partition(":")
        key, _, value = rest.partition("=")
        require(model_name and key and value, "--mutate %r: want MODEL:KEY=VALUE" % m)
        mutations.setdefault(model_name, {})[key] = json.loads(value)

    beam_py = load_beam_py()
    os.makedirs(args.out, exist_ok=True)
    all_cases = {}
    for name in args.models.split(","):
        fixture = os.path.abspath(os.path.join(args.fixtures, name))
        config = read_json(os.path.join(fixture, "config.json"))
        tensors = read_safetensors(os.path.join(fixture, "model.safetensors"))
        model = Model(config, tensors)
        check(name, model, fixture, mutated=False)
        cases = choose_cases(name, model, fixture, config, beam_py)
        if name in mutations:
            for key, value in mutations[name].items():
                require(key in config, "--mutate: %s has no config key %r" % (name, key))
            wrong = dict(config, **mutations[name])
            print("%s: MUTATED for the export: %s" % (name, ", ".join("%s %r -> %r" % (k, config[k], v)
                                                                     for k, v in mutations[name].items())))
            model = Model(wrong, tensors)
            check(name, model, fixture, mutated=True)
        out_dir = os.path.join(args.out, name)
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, "config.json"), "w") as f:
            json.dump(config, f, indent=2)
        with open(os.path.join(out_dir, "generation_config.json"), "w") as f:
            json.dump({k: config[k] for k in GENERATION_KEYS if k in config}, f, indent=2)
        export(name, model, out_dir)
        all_cases[name] = {"fixture": fixture, "encoder_decoder": model.encdec, "cases": cases}
        print("%s: exported %s (%s)" % (name, ", ".join(sorted(os.listdir(os.path.join(out_dir, "onnx")))),
                                       "; ".join("%s %d new" % (c["name"], len(c["torch"])) for c in cases)))
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump(all_cases, f, indent=1)


if __name__ == "__main__":
    main()
