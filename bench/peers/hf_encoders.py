#!/usr/bin/python3
"""Hugging Face BERT and Marian peers for bench/encoders.py: random checkpoints in the Hugging Face
layout, a float32 PyTorch restatement of BertModel and MarianMTModel (timed), and its ONNX export
for the ONNX Runtime peer (ort_encoders.mjs).

    /usr/bin/python3 hf_encoders.py write  --model bert|marian --out DIR [--seed 1]
    /usr/bin/python3 hf_encoders.py torch  --dir DIR --threads T --runs N [--warmup 1]
                                           [--batch 8 --seq 128 [--ids-file F] [--seed 1]]         (BERT)
                                           [--source-len 32 | --source IDS] [--new-tokens 32]      (Marian)
    /usr/bin/python3 hf_encoders.py export --dir DIR --out PREFIX [--check]

write: DIR/config.json and DIR/model.safetensors (F32, HF names; tied copies left out as
save_pretrained does), with test/fixtures/make_bert_marian.py's configs at real sizes and its
make_weights() for the tensors (seeded): BERT-base (d 768, 12 layers, 12 heads, ffn 3072, vocab
30522, 512 positions, 2 token types) or opus-mt-en-de's shape (d 512, 6 + 6 layers, 8 heads, ffn
2048, vocab 58101, pad = decoder_start 58100, eos 0, 512 positions, swish, scale_embedding).

The float32 modules follow make_bert_marian.py's float64 reference (bert_torch_forward,
marian_torch_forward) op for op as transformers' eager code runs them, under the checkpoint's
own names (load_state_dict(strict=True)):
  - BERT: word + token_type + position embeddings, LayerNorm (eps 1e-12); post-norm layers;
    scores q.k / sqrt(Dh) plus (1 - attention_mask) * finfo(f32).min on the keys; exact (erf)
    GELU; last_hidden_state and pooler_output = tanh(dense(h[:, 0])).
  - Marian: shared[ids] * sqrt(d) + the checkpoint's sinusoid table (halves layout); post-norm;
    q_proj(x) * Dh^-0.5; SiLU; LayerNorm eps 1e-5; logits = y . shared^T + final_logits_bias
    (LM head tied to model.shared); padding and causal masks additive finfo(f32).min.
  - Marian generation (the torch peer and both ONNX graphs): the encoder runs once; each
    decoder layer's cross-attention keys/values (encoder_attn.k_proj / v_proj of the encoder
    output) are computed once from it; the decoder runs token by token from
    decoder_start_token_id with a cache of self-attention keys/values that grows by
    concatenation (as transformers' past_key_values); logits of the last position only; plain
    argmax over all ids (no bad_words_ids: tfmc's greedy does not apply it either); stop at eos
    or after --new-tokens tokens. "prefill" = encoder + the first decoder step (the first
    token), "decode" = the remaining steps.

torch: times the restatement with torch.set_num_threads(T) and torch_bench.py's passive thread
policy (OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = BLIS_NUM_THREADS = T, OMP_WAIT_POLICY=PASSIVE for
T > 1), set before torch loads, under torch.inference_mode. BERT: one forward of [batch, seq]
ids from the LCG x <- (1103515245 x + 12345) mod 2^31, id = 1 + x mod (V - 1) seeded with --seed
(ort_encoders.mjs draws the same ids), all-ones attention_mask, token types 0. Marian: the source
is --source, else --source-len - 1 ids of that LCG in 1..V-2 followed by eos 0.

export: torch.onnx.export (opset 17, do_constant_folding) of the same float32 modules:
    bert:   PREFIX.onnx          input_ids, attention_mask, token_type_ids [B, S] int64
                                 -> last_hidden_state [B, S, d], pooler_output [B, d]
    marian: PREFIX_encoder.onnx  input_ids, attention_mask [B, S] int64
                                 -> encoder_hidden_states [B, S, d], cross_key_i / cross_value_i
                                    [B, H, S, Dh] for each decoder layer i
            PREFIX_decoder.onnx  input_ids [B, T] int64, encoder_attention_mask [B, S] int64,
                                 past_key_i / past_value_i [B, H, P, Dh] (P = 0: empty tensors),
                                 cross_key_i / cross_value_i [B, H, S, Dh]
                                 -> logits [B, V] of the last position, present_key_i /
                                    present_value_i [B, H, P + T, Dh]
Positions P .. P+T-1, causal within the new tokens; B, S, T and P dynamic. --check first
compares the float32 modules (the exported wrappers themselves) with the float64 reference on a
small seeded batch with a padded row (Marian: a two-token first call, then single-token steps
with the cache, against the full forward's logits) and exits 1 when the largest error exceeds
1e-3 of max(1, max |reference|).

Every command prints one JSON line (bench "hf_write", "encoders", "hf_export_check",
"hf_export"); files are written to a temporary name and renamed. Needs Debian's python3-torch
(1.13) and python3-numpy; test/fixtures/ provides the configs, weights and safetensors I/O.
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "test", "fixtures"))
import make_bert_marian as mbm  # noqa: E402  (configs, weights, float64 reference)
import make_fixtures as mf  # noqa: E402  (safetensors I/O)
import torch_bench  # noqa: E402  (thread environment, BLAS detection, statistics)


def _thread_environment(argv):
    """OpenBLAS and libgomp read their thread counts when they load, i.e. at `import torch`:
    for `torch --threads T` set torch_bench.py's passive policy before that import."""
    if len(argv) < 2 or argv[1] != "torch":
        return
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--threads", type=int, default=1)
    T = p.parse_known_args(argv[2:])[0].threads
    env, _ = torch_bench.thread_env(T, "passive")
    os.environ.update(env)
    if "OMP_WAIT_POLICY" not in env:
        os.environ.pop("OMP_WAIT_POLICY", None)


if __name__ == "__main__":
    _thread_environment(sys.argv)
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

NEG = torch.finfo(torch.float32).min  # transformers' additive mask value
OPSET = 17


# ----------------------------------------------------------------------------- configs
def bert_config():
    c = dict(mbm.BERT_CONFIG)
    c.update(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
             intermediate_size=3072, max_position_embeddings=512, type_vocab_size=2,
             layer_norm_eps=1e-12, hidden_act="gelu", architectures=["BertModel"])
    return c


def marian_config():
    c = dict(mbm.MARIAN_CONFIG)
    c.update(d_model=512, encoder_layers=6, decoder_layers=6, num_hidden_layers=6,
             encoder_attention_heads=8, decoder_attention_heads=8, encoder_ffn_dim=2048,
             decoder_ffn_dim=2048, vocab_size=58101, decoder_vocab_size=58101, pad_token_id=58100,
             decoder_start_token_id=58100, eos_token_id=0, forced_eos_token_id=0, bos_token_id=0,
             max_position_embeddings=512, max_length=512, bad_words_ids=[[58100]],
             activation_function="swish", scale_embedding=True)
    return c


def model_kind(c):
    kind = c.get("model_type")
    if kind not in ("bert", "marian"):
        raise SystemExit(f"config.json: model_type {kind!r} is neither bert nor marian")
    return kind


def lcg_ids(count, low, high, seed):
    """count ids in low..high-1: x <- (1103515245 x + 12345) mod 2^31, id = low + x mod (high - low)
    (ort_encoders.mjs and bench/encoders.py draw the same sequence)."""
    out, x = [], seed
    for _ in range(count):
        x = (1103515245 * x + 12345) % 2 ** 31
        out.append(low + x % (high - low))
    return out


# ----------------------------------------------------------------------------- float32 modules
def _ns(**children):
    """A module that only groups children under a Hugging Face name (never called)."""
    m = nn.Module()
    for name, child in children.items():
        setattr(m, name, child)
    return m


def _heads(x, H):
    """[B, S, H*Dh] -> [B, H, S, Dh]"""
    return x.view(x.shape[0], x.shape[1], H, -1).transpose(1, 2)


def _attend(q, k, v, additive):
    """softmax(q.k^T + additive) . v over heads, merged back to [B, Sq, d] (q already scaled)."""
    probs = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) + additive, dim=-1)
    out = torch.matmul(probs, v).transpose(1, 2)
    return out.reshape(out.shape[0], out.shape[1], -1)


def _key_mask(mask):
    """attention_mask [B, S] (1 = real) -> additive [B, 1, 1, S]: 0 or finfo.min (transformers'
    extended attention mask: masked keys get probability exactly 0)."""
    return (1.0 - mask.to(torch.float32))[:, None, None, :] * NEG


class BertModel(nn.Module):
    """transformers' BertModel (eager attention, eval) under its state dict names."""

    def __init__(self, c):
        super().__init__()
        d, ff, eps = c["hidden_size"], c["intermediate_size"], c["layer_norm_eps"]
        self.H = c["num_attention_heads"]
        self.Dh = d // self.H
        self.embeddings = _ns(word_embeddings=nn.Embedding(c["vocab_size"], d),
                              position_embeddings=nn.Embedding(c["max_position_embeddings"], d),
                              token_type_embeddings=nn.Embedding(c["type_vocab_size"], d),
                              LayerNorm=nn.LayerNorm(d, eps))
        self.encoder = _ns(layer=nn.ModuleList(
            _ns(attention=_ns(self=_ns(query=nn.Linear(d, d), key=nn.Linear(d, d), value=nn.Linear(d, d)),
                              output=_ns(dense=nn.Linear(d, d), LayerNorm=nn.LayerNorm(d, eps))),
                intermediate=_ns(dense=nn.Linear(d, ff)),
                output=_ns(dense=nn.Linear(ff, d), LayerNorm=nn.LayerNorm(d, eps)))
            for _ in range(c["num_hidden_layers"])))
        self.pooler = _ns(dense=nn.Linear(d, d))

    def forward(self, input_ids, attention_mask, token_type_ids):
        e = self.embeddings
        positions = torch.arange(input_ids.shape[1], dtype=torch.int64)
        h = e.word_embeddings(input_ids) + e.token_type_embeddings(token_type_ids)
        h = e.LayerNorm(h + e.position_embeddings(positions))
        add = _key_mask(attention_mask)
        for layer in self.encoder.layer:
            a = layer.attention
            q = _heads(a.self.query(h), self.H)
            k = _heads(a.self.key(h), self.H)
            v = _heads(a.self.value(h), self.H)
            probs = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.Dh) + add, dim=-1)
            ctx = torch.matmul(probs, v).transpose(1, 2)
            ctx = ctx.reshape(ctx.shape[0], ctx.shape[1], -1)
            h = a.output.LayerNorm(h + a.output.dense(ctx))
            f = layer.output.dense(F.gelu(layer.intermediate.dense(h)))
            h = layer.output.LayerNorm(h + f)
        return h, torch.tanh(self.pooler.dense(h[:, 0]))


def _marian_attention(d):
    return _ns(q_proj=nn.Linear(d, d), k_proj=nn.Linear(d, d), v_proj=nn.Linear(d, d), out_proj=nn.Linear(d, d))


class MarianMTModel(nn.Module):
    """transformers' MarianMTModel (eval) under its saved state dict names; encode() once,
    cross_kv() once, then decode() per step with the self-attention cache."""

    def __init__(self, c):
        super().__init__()
        d, V, P = c["d_model"], c["vocab_size"], c["max_position_embeddings"]
        self.H = c["decoder_attention_heads"]
        self.H_enc = c["encoder_attention_heads"]
        self.d = d
        self.scale = math.sqrt(d) if c["scale_embedding"] else 1.0

        def layer(ff, cross):
            parts = {"self_attn": _marian_attention(d), "self_attn_layer_norm": nn.LayerNorm(d, mbm.MARIAN_EPS)}
            if cross:
                parts.update(encoder_attn=_marian_attention(d), encoder_attn_layer_norm=nn.LayerNorm(d, mbm.MARIAN_EPS))
            return _ns(**parts, fc1=nn.Linear(d, ff), fc2=nn.Linear(ff, d),
                       final_layer_norm=nn.LayerNorm(d, mbm.MARIAN_EPS))

        self.model = _ns(
            shared=nn.Embedding(V, d),
            encoder=_ns(embed_positions=nn.Embedding(P, d),
                        layers=nn.ModuleList(layer(c["encoder_ffn_dim"], False) for _ in range(c["encoder_layers"]))),
            decoder=_ns(embed_positions=nn.Embedding(P, d),
                        layers=nn.ModuleList(layer(c["decoder_ffn_dim"], True) for _ in range(c["decoder_layers"]))))
        self.register_buffer("final_logits_bias", torch.zeros(1, V))

    def _self_attention(self, a, x, H, add, past_k=None, past_v=None):
        q = _heads(a.q_proj(x) * (self.d // H) ** -0.5, H)
        k, v = _heads(a.k_proj(x), H), _heads(a.v_proj(x), H)
        if past_k is not None:
            k, v = torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)
        return a.out_proj(_attend(q, k, v, add)), k, v

    def encode(self, input_ids, attention_mask):
        enc = self.model.encoder
        positions = torch.arange(input_ids.shape[1], dtype=torch.int64)
        x = self.model.shared(input_ids) * self.scale + enc.embed_positions(positions)
        add = _key_mask(attention_mask)
        for layer in enc.layers:
            x = layer.self_attn_layer_norm(x + self._self_attention(layer.self_attn, x, self.H_enc, add)[0])
            x = layer.final_layer_norm(x + layer.fc2(F.silu(layer.fc1(x))))
        return x

    def cross_kv(self, enc_out):
        """[(key, value) [B, H, S, Dh]] of each decoder layer's encoder_attn, computed once."""
        return [(_heads(l.encoder_attn.k_proj(enc_out), self.H), _heads(l.encoder_attn.v_proj(enc_out), self.H))
                for l in self.model.decoder.layers]

    def decode(self, input_ids, encoder_attention_mask, past, cross):
        """input_ids [B, T] at positions P..P+T-1 (P = past length); past and cross: [(k, v)] per
        layer. Returns (logits [B, V] of the last position, [(k, v)] = past ++ this call's)."""
        dec = self.model.decoder
        Tn, P = input_ids.shape[1], past[0][0].shape[2]
        positions = torch.arange(Tn, dtype=torch.int64) + P
        y = self.model.shared(input_ids) * self.scale + dec.embed_positions(positions)
        blocked = torch.arange(P + Tn, dtype=torch.int64)[None, :] > positions[:, None]  # [T, P + T]
        self_add = torch.zeros_like(blocked, dtype=torch.float32).masked_fill(blocked, NEG)
        cross_add = _key_mask(encoder_attention_mask)
        present = []
        for layer, (pk, pv), (ck, cv) in zip(dec.layers, past, cross):
            a, k, v = self._self_attention(layer.self_attn, y, self.H, self_add, pk, pv)
            present.append((k, v))
            y = layer.self_attn_layer_norm(y + a)
            ea = layer.encoder_attn
            q = _heads(ea.q_proj(y) * (self.d // self.H) ** -0.5, self.H)
            y = layer.encoder_attn_layer_norm(y + ea.out_proj(_attend(q, ck, cv, cross_add)))
            y = layer.final_layer_norm(y + layer.fc2(F.silu(layer.fc1(y))))
        # One Gemm(transB) with the bias: the export then needs no transposed copy of the table.
        logits = F.linear(y[:, -1], self.model.shared.weight, self.final_logits_bias[0])
        return logits, present

    def empty_cache(self, batch):
        Dh = self.d // self.H
        return [(torch.zeros(batch, self.H, 0, Dh), torch.zeros(batch, self.H, 0, Dh))
                for _ in self.model.decoder.layers]


class MarianEncoderGraph(nn.Module):
    """The encoder ONNX graph: encoder_hidden_states and every decoder layer's cross K/V."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids, attention_mask):
        x = self.m.encode(input_ids, attention_mask)
        return (x, *[t for kv in self.m.cross_kv(x) for t in kv])


class MarianDecoderGraph(nn.Module):
    """The decoder ONNX graph: (input_ids, encoder_attention_mask, past_key_0, past_value_0, ...,
    cross_key_0, cross_value_0, ...) -> (logits, present_key_0, present_value_0, ...)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids, encoder_attention_mask, *caches):
        L = len(self.m.model.decoder.layers)
        pairs = [(caches[2 * i], caches[2 * i + 1]) for i in range(2 * L)]
        logits, present = self.m.decode(input_ids, encoder_attention_mask, pairs[:L], pairs[L:])
        return (logits, *[t for kv in present for t in kv])


def load(directory):
    """(kind, config, float32 module in eval mode) of a checkpoint directory."""
    with open(os.path.join(directory, "config.json")) as f:
        c = json.load(f)
    kind = model_kind(c)
    W = mf.read_safetensors(os.path.join(directory, "model.safetensors"))
    m = BertModel(c) if kind == "bert" else MarianMTModel(c)
    m.load_state_dict({k: torch.from_numpy(v) for k, v in W.items()}, strict=True)
    for p in m.parameters():
        p.requires_grad_(False)
    return kind, c, m.eval(), W


def greedy(m, source, new_tokens, start, eos):
    """Greedy translation of one source: (prefill_ms, decode_ms, generated ids incl. a final eos)."""
    ids = torch.tensor([source], dtype=torch.int64)
    mask = torch.ones_like(ids)
    t0 = time.perf_counter()
    cross = m.cross_kv(m.encode(ids, mask))
    past, token, out, t1 = m.empty_cache(1), start, [], None
    while True:
        logits, past = m.decode(torch.tensor([[token]], dtype=torch.int64), mask, past, cross)
        token = int(torch.argmax(logits[0]))  # the first maximum, as ort_encoders.mjs and tfmc
        out.append(token)
        if t1 is None:
            t1 = time.perf_counter()
        if token == eos or len(out) >= new_tokens:
            break
    t2 = time.perf_counter()
    return (t1 - t0) * 1e3, (t2 - t1) * 1e3, out


# ----------------------------------------------------------------------------- write
def cmd_write(a):
    name = "bert_hf" if a.model == "bert" else "marian_hf"
    if a.small:  # make_bert_marian's fixture sizes: a quick test of every command
        c = dict(mbm.BERT_CONFIG if a.model == "bert" else mbm.MARIAN_CONFIG)
    else:
        c = bert_config() if a.model == "bert" else marian_config()
    t0 = time.perf_counter()
    W = mbm.make_weights(name, c, a.seed)
    os.makedirs(a.out, exist_ok=True)
    # config.json first, model.safetensors last: a folder with model.safetensors is complete.
    cfg = os.path.join(a.out, "config.json")
    with open(cfg + ".tmp", "w", newline="\n") as f:
        f.write(json.dumps(c, indent=2, sort_keys=True) + "\n")
    os.replace(cfg + ".tmp", cfg)
    st = os.path.join(a.out, "model.safetensors")
    mf.write_safetensors(st + ".tmp", W, {"format": "pt"})
    os.replace(st + ".tmp", st)
    print(json.dumps({"bench": "hf_write", "model": a.model, "out": a.out, "seed": a.seed, "small": a.small,
                      "tensors": len(W), "params": int(sum(v.size for v in W.values())),
                      "bytes": os.path.getsize(st), "seconds": round(time.perf_counter() - t0, 2)}))


# ----------------------------------------------------------------------------- torch
def bert_inputs(a, c):
    if a.ids_file:
        with open(a.ids_file) as f:
            ids = np.array(json.load(f)["input_ids"], dtype=np.int64)
        src = a.ids_file
    else:
        ids = np.array(lcg_ids(a.batch * a.seq, 1, c["vocab_size"], a.seed), dtype=np.int64).reshape(a.batch, a.seq)
        src = f"lcg seed {a.seed}"
    if ids.ndim != 2 or ids.shape[1] > c["max_position_embeddings"] or ids.min() < 0 or ids.max() >= c["vocab_size"]:
        raise SystemExit(f"input ids {list(ids.shape)}: need [batch, seq] with seq <= max_position_embeddings "
                         f"{c['max_position_embeddings']} and ids in 0..{c['vocab_size'] - 1}")
    ids = torch.from_numpy(ids)
    return ids, torch.ones_like(ids), torch.zeros_like(ids), src


def cmd_torch(a):
    kind, c, m, _ = load(a.dir)
    torch.set_num_threads(a.threads)
    torch.matmul(torch.randn(64, 64), torch.randn(64, 64))  # load the BLAS before reporting it
    _, policy = torch_bench.thread_env(a.threads, "passive")
    common = {"bench": "encoders", "impl": "pytorch", "engine": f"torch {torch.__version__}", "model": kind,
              "threads": a.threads, "torch_threads": torch.get_num_threads(), "thread_policy": policy,
              "blas": torch_bench.sgemm_provider(), "dtype": "float32"}
    with torch.inference_mode():
        if kind == "bert":
            ids, mask, types, src = bert_inputs(a, c)
            runs = []
            for i in range(a.warmup + a.runs):
                t0 = time.perf_counter()
                h, pooled = m(ids, mask, types)
                if i >= a.warmup:
                    runs.append((time.perf_counter() - t0) * 1e3)
            print(json.dumps({**common, "batch": ids.shape[0], "seq": ids.shape[1], "ids": src,
                              **torch_bench.stats(runs),
                              "last_hidden_state_0_0": [float(x) for x in h[0, 0, :4]],
                              "pooler_output_0": [float(x) for x in pooled[0, :4]]}), flush=True)
            return 0
        V, eos, start = c["vocab_size"], c["eos_token_id"], c["decoder_start_token_id"]
        if a.source:
            source = [int(x) for x in a.source.split(",") if x != ""]
        else:
            source = lcg_ids(a.source_len - 1, 1, V - 1, a.seed) + [eos]
        P = c["max_position_embeddings"]
        if len(source) > P or a.new_tokens > P or not all(0 <= t < V for t in source):
            raise SystemExit(f"the source ({len(source)} ids) and --new-tokens {a.new_tokens} must fit in "
                             f"max_position_embeddings {P}, ids in 0..{V - 1}")
        rows = []
        for i in range(a.warmup + a.runs):
            r = greedy(m, source, a.new_tokens, start, eos)
            if i >= a.warmup:
                rows.append(r)
        ids = rows[-1][2]
        if any(r[2] != ids for r in rows):
            raise SystemExit("the greedy ids differ between runs")
        pre, dec = [r[0] for r in rows], [r[1] for r in rows]
        total = torch_bench.stats([p + d for p, d in zip(pre, dec)])
        print(json.dumps({**common, "source_len": len(source), "new_tokens": a.new_tokens, "eos": eos, "start": start,
                          "source": source, **total,
                          "prefill_median_ms": torch_bench.stats(pre)["median_ms"],
                          "decode_median_ms": torch_bench.stats(dec)["median_ms"],
                          "prefill_runs_ms": [round(x, 4) for x in pre], "decode_runs_ms": [round(x, 4) for x in dec],
                          "tokens": len(ids), "ids": ids,
                          "ms_per_token": torch_bench.stats(dec)["median_ms"] / max(1, len(ids) - 1)}), flush=True)
    return 0


# ----------------------------------------------------------------------------- export
# --check's bound. The float32 modules differ from the float64 reference only by rounding: each
# f32 op adds a relative error of about 2^-24 (6e-8), a dot product over K = 3072 terms about
# sqrt(K) of that (~3e-6), and LayerNorm after every sublayer keeps it from growing layer by
# layer: measured 3e-6 (BERT-base) and 1e-6 (Marian logits) of max(1, max |reference|), about 5e-7
# at the fixtures' small sizes. 1e-3 leaves over two orders of magnitude for other BLAS/thread
# orders, and a structural mistake still fails by far: ignoring the padding mask moves BERT-base's
# outputs by 0.4-1.0, Marian's logits without the sqrt(d) embedding scale by 0.5 (and the mask,
# causal, position-layout and activation mistakes by 1e-2..1 on the small sizes). Not caught: the
# tanh form of GELU instead of erf (4e-4..1.2e-3 here, too near the bound to rely on); this module
# calls F.gelu's default (erf) form, the same call as the reference.
CHECK_BOUND = 1e-3


def check_bert(c, m, W):
    g = torch.Generator().manual_seed(77)
    lengths, S = [11, 7], 11
    ids = torch.randint(1, c["vocab_size"], (2, S), generator=g)
    mask = (torch.arange(S)[None, :] < torch.tensor(lengths)[:, None]).long()
    ids[mask == 0] = c["pad_token_id"]
    types = torch.zeros_like(ids)
    types[0, 6:11] = 1
    types[1, 4:7] = 1
    ref = mbm.bert_torch_forward(c, W, {"input_ids": ids.numpy(), "attention_mask": mask.numpy(),
                                        "token_type_ids": types.numpy()})
    with torch.no_grad():
        h, pooled = m(ids, mask, types)
    real = mask.numpy() != 0  # padded positions' outputs are unspecified (tfmc compares real ones)
    errs = {}
    for key, got, want in (("last_hidden_state", h.numpy()[real], ref["last_hidden_state"][real]),
                           ("pooler_output", pooled.numpy(), ref["pooler_output"])):
        errs[key] = float(np.abs(got - want).max()) / max(1.0, float(np.abs(want).max()))
    return errs


def check_marian(c, m, W):
    g = torch.Generator().manual_seed(78)
    V, S, Tn = c["vocab_size"], 9, 6
    ids = torch.randint(1, V - 1, (2, S), generator=g)
    lengths = [9, 6]
    mask = (torch.arange(S)[None, :] < torch.tensor(lengths)[:, None]).long()
    ids[mask == 0] = c["pad_token_id"]
    for b, n in enumerate(lengths):
        ids[b, n - 1] = c["eos_token_id"]
    dec = torch.randint(1, V - 1, (2, Tn), generator=g)
    dec[:, 0] = c["decoder_start_token_id"]
    ref = mbm.marian_torch_forward(c, W, {"input_ids": ids.numpy(), "attention_mask": mask.numpy(),
                                          "decoder_input_ids": dec.numpy(),
                                          "decoder_attention_mask": np.ones_like(dec.numpy())})["logits"]
    scale = max(1.0, float(np.abs(ref).max()))
    L = c["decoder_layers"]
    enc_graph, dec_graph = MarianEncoderGraph(m), MarianDecoderGraph(m)
    errs = {}
    with torch.no_grad():
        out = enc_graph(ids, mask)
        cross = list(out[1:])
        empty = [t for kv in m.empty_cache(2) for t in kv]
        # First call: two tokens at once with an empty cache (the causal mask inside the call).
        r = dec_graph(dec[:, :2], mask, *empty, *cross)
        errs["logits_first_call"] = float(np.abs(r[0].numpy() - ref[:, 1]).max()) / scale
        past, step_err = list(r[1:]), 0.0
        for t in range(2, Tn):
            r = dec_graph(dec[:, t:t + 1], mask, *past, *cross)
            if r[1].shape[2] != t + 1:
                raise SystemExit(f"present_key_0 holds {r[1].shape[2]} positions after step {t}, not {t + 1}")
            step_err = max(step_err, float(np.abs(r[0].numpy() - ref[:, t]).max()) / scale)
            past = list(r[1:])
        errs["logits_cached_steps"] = step_err
        assert len(past) == 2 * L
    return errs


def cmd_export(a):
    kind, c, m, W = load(a.dir)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    if a.check:
        errs = check_bert(c, m, W) if kind == "bert" else check_marian(c, m, W)
        worst = max(errs.values())
        ok = worst <= CHECK_BOUND
        print(json.dumps({"bench": "hf_export_check", "model": kind, "dir": a.dir, "reference": "make_bert_marian float64",
                          "rel_err": errs, "max_rel_err": worst, "bound": CHECK_BOUND, "pass": ok}), flush=True)
        if not ok:
            return 1
        torch.set_num_threads(max(1, os.cpu_count() or 1))  # make_fixtures._torch() set 1
    files = []

    def export(module, args, path, names_in, names_out, axes):
        tmp = path + ".tmp"
        with torch.no_grad():
            torch.onnx.export(module, args, tmp, input_names=names_in, output_names=names_out,
                              dynamic_axes=axes, opset_version=OPSET, do_constant_folding=True)
        os.replace(tmp, path)
        files.append({"path": path, "bytes": os.path.getsize(path)})

    # Export-time inputs: batch 2, no length 1, so that no size is taken for a constant.
    if kind == "bert":
        ids = torch.tensor([[5, 6, 7, 8, 9, 10, 11], [12, 13, 14, 15, 0, 0, 0]])
        mask = (ids != 0).long()
        axes = {n: {0: "batch", 1: "sequence"} for n in ("input_ids", "attention_mask", "token_type_ids",
                                                         "last_hidden_state")}
        axes["pooler_output"] = {0: "batch"}
        export(m, (ids, mask, torch.zeros_like(ids)), a.out + ".onnx",
               ["input_ids", "attention_mask", "token_type_ids"], ["last_hidden_state", "pooler_output"], axes)
    else:
        L = c["decoder_layers"]
        ids = torch.tensor([[5, 6, 7, 8, 0], [9, 10, 0, 1, 1]])
        mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
        cross_names = [f"cross_{kv}_{i}" for i in range(L) for kv in ("key", "value")]
        axes = {"input_ids": {0: "batch", 1: "source"}, "attention_mask": {0: "batch", 1: "source"},
                "encoder_hidden_states": {0: "batch", 1: "source"}}
        axes.update({n: {0: "batch", 2: "source"} for n in cross_names})
        enc_graph = MarianEncoderGraph(m).eval()
        export(enc_graph, (ids, mask), a.out + "_encoder.onnx", ["input_ids", "attention_mask"],
               ["encoder_hidden_states"] + cross_names, axes)
        with torch.no_grad():
            cross = list(enc_graph(ids, mask)[1:])
            # A cache of 3 positions and 2 new tokens (the graph is the same for P = 0, T = 1).
            past = [torch.randn(2, m.H, 3, c["d_model"] // m.H) for _ in range(2 * L)]
        past_names = [f"past_{kv}_{i}" for i in range(L) for kv in ("key", "value")]
        present_names = [n.replace("past_", "present_") for n in past_names]
        axes = {"input_ids": {0: "batch", 1: "new"}, "encoder_attention_mask": {0: "batch", 1: "source"},
                "logits": {0: "batch"}}
        axes.update({n: {0: "batch", 2: "past"} for n in past_names})
        axes.update({n: {0: "batch", 2: "source"} for n in cross_names})
        axes.update({n: {0: "batch", 2: "total"} for n in present_names})
        export(MarianDecoderGraph(m).eval(), (torch.tensor([[3, 4], [5, 6]]), mask, *past, *cross),
               a.out + "_decoder.onnx", ["input_ids", "encoder_attention_mask"] + past_names + cross_names,
               ["logits"] + present_names, axes)
    print(json.dumps({"bench": "hf_export", "model": kind, "dir": a.dir, "files": files, "opset": OPSET,
                      "torch": torch.__version__}))
    return 0


# ----------------------------------------------------------------------------- main
def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write", help="a random checkpoint directory (config.json, model.safetensors)")
    w.add_argument("--model", choices=["bert", "marian"], required=True)
    w.add_argument("--out", required=True)
    w.add_argument("--seed", type=int, default=1)
    w.add_argument("--small", action="store_true", help=argparse.SUPPRESS)  # the fixtures' tiny sizes
    t = sub.add_parser("torch", help="time the float32 PyTorch restatement")
    t.add_argument("--dir", required=True)
    t.add_argument("--threads", type=int, default=1, help="one thread count (set before torch loads)")
    t.add_argument("--runs", type=int, default=7)
    t.add_argument("--warmup", type=int, default=1)
    t.add_argument("--seed", type=int, default=1, help="the LCG's seed for BERT ids or the Marian source")
    t.add_argument("--batch", type=int, default=8)
    t.add_argument("--seq", type=int, default=128)
    t.add_argument("--ids-file", default=None, help='BERT: a JSON file {"input_ids": [[...], ...]}')
    t.add_argument("--source-len", type=int, default=32)
    t.add_argument("--source", default=None, help="Marian: comma-separated source ids (end with eos)")
    t.add_argument("--new-tokens", type=int, default=32)
    e = sub.add_parser("export", help="ONNX graphs of the float32 modules (opset 17)")
    e.add_argument("--dir", required=True)
    e.add_argument("--out", required=True, help="PREFIX: PREFIX.onnx (bert), PREFIX_{encoder,decoder}.onnx (marian)")
    e.add_argument("--check", action="store_true", help="compare with the float64 reference first")
    a = p.parse_args(argv)
    if a.command == "torch" and (a.runs < 1 or a.warmup < 0):
        p.error("--runs must be at least 1 and --warmup at least 0")
    return {"write": cmd_write, "torch": cmd_torch, "export": cmd_export}[a.command](a)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
