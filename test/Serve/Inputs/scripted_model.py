#!/usr/bin/python3
"""A tiny tfmc decoder whose greedy output is a script of token ids chosen
by the test (a tool call, say), so that serve's parsing of what a model
generates can be tested end to end with a model that really generates it.

  scripted_model.py write --vocab V --max-len P --prompt-length L
      --script 5,6,7 --eos E [--margin M] --out DIR
  scripted_model.py check --tfmc build/tools/tfmc/tfmc --vocab V --max-len P
      --prompt-length L --script 5,6,7 --eos E [--margin M] [--max-batch 1,2]
      [--prompt IDS] --work DIR

`write` writes DIR/model.tfm (scripted.tfm, next to this file, with vocab,
d_model and max_len substituted) and DIR/weights.safetensors, after checking
the margin with a NumPy forward of every (position, token) pair. `check`
writes the same into DIR, compiles it with tfmc once per --max-batch (DIR/
scripted_bB), runs `PROGRAM generate --weights W --prompt <L ids>
--max-new-tokens n+1 --eos E --dump-logits ...` and prints whether the ids
are the script followed by eos, and the margin of tfmc's own logits; with a
batch of B > 1, B prompts of L other ids through --prompts-file, then B rows
of L and L + 1 ids mixed; and the wrong prompt lengths below. Its last line
is `scripted_model: OK` (exit 0) or `scripted_model: FAILED ...` (exit 1);
a refusal or a failing tfmc or generate is one line on stderr, exit 1.

What the model computes. vocab V, max_len P, d_model d = V + P rounded up
to a multiple of 64 (the dimensions past V + P are 0 everywhere), one
pre-norm layer whose weights and biases are all 0 (attention and
feed-forward add exactly 0 to the residual stream), a final LayerNorm
(weight 1, bias 0, eps 1e-5) and a linear output with a bias:

  tgt_embed.weight[t] = one-hot(t)        tgt_pos.weight[p] = one-hot(V + p)
  x(t, p) = one-hot(t) + one-hot(V + p)   (embed_scale 1)
  y = LayerNorm(x): mean mu = 2/d, variance 2/d - 4/d^2, so y is
      hi = (1 - mu)/s at t and at V + p, lo = -mu/s elsewhere,
      s = sqrt(2/d - 4/d^2 + eps)
  generator.weight[j] = c * sum of one-hot(V + q) over the positions q
      at which token j is wanted next (S_j), 0 at the token dimensions
  generator.bias[j] = -c * |S_j| * lo
  logit_j(t, p) = c * (hi - lo) = c / s = M   if p is in S_j, else 0

whatever the token t at p. So every position predicts exactly one token,
with logit M (--margin, default 20) and every other logit 0: the margin is
M at every position and for every token, the scale c = M * s (about 1.2 for
V 300, P 256). The script is tied to positions, not to the prompt's tokens:
position L - 1 + i predicts script[i] (the first new token comes from the
prompt's last position), position L - 1 + n predicts eos, and every other
position (the prompt's first L - 1, and those after the eos) predicts eos
too. Hence a prompt of the wrong length does not give the script: a prompt
of L - k tokens gives eos at once; one of L + k tokens gives script[k:]
then eos. `check` verifies both (k = 1).

For serve, L is the number of prompt tokens the server counts (a chat's
rendered template with the generation prompt: `usage.prompt_tokens` of a
request to any model of the same tokenizer gives it), E the tokenizer's eos,
and max_tokens n + 1 or more: the server then answers the script's text and
stops at eos. (Without --tokenizer serve knows no eos: a completion of L ids
with max_tokens n + 1 answers the script's ids and E, finish_reason length.)

The script must fit: L + n + 1 <= P (the n tokens and the eos, as generate
and serve count a prompt plus max new tokens against max_len), ids in
0 .. V-1, eos not in the script. Otherwise exit 1 with one line.
"""

import argparse
import json
import math
import os
import re
import struct
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE = os.path.join(HERE, "scripted.tfm")
ALIGN = 64  # d_model is a multiple of this (and of the template's heads)
EPS = 1e-5  # the template's layer_norm_eps


class Refusal(Exception):
    pass


# ----------------------------------------------------------------------------
# safetensors, written by hand (as test/fixtures/make_fixtures.py does)
# ----------------------------------------------------------------------------

def write_safetensors(path, tensors):
    """{name: float32 array} as safetensors: an 8-byte little-endian header
    length, the JSON header (padded with spaces to a multiple of 8), the data
    in the header's order."""
    header, chunks, offset = {}, [], 0
    for name in sorted(tensors):
        data = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))


# ----------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------

def parse_ids(text, what):
    try:
        ids = [int(x) for x in text.split(",") if x.strip() != ""]
    except ValueError:
        raise Refusal(f"{what} must be comma-separated integers, got '{text}'")
    if not ids:
        raise Refusal(f"{what} is empty")
    return ids


def validate(vocab, max_len, prompt_length, script, eos):
    if vocab < 2 or max_len < 2:
        raise Refusal(f"--vocab and --max-len must be at least 2, got {vocab} and {max_len}")
    if prompt_length < 1:
        raise Refusal(f"--prompt-length must be at least 1, got {prompt_length}")
    for i in script + [eos]:
        if not 0 <= i < vocab:
            raise Refusal(f"token id {i} is not in 0 .. {vocab - 1} (--vocab {vocab})")
    if eos in script:
        raise Refusal(f"the script contains the eos id {eos} at index {script.index(eos)}")
    need = prompt_length + len(script) + 1
    if need > max_len:
        raise Refusal(f"a prompt of {prompt_length} tokens, {len(script)} script tokens "
                      f"and eos need max_len >= {need}, got --max-len {max_len}")


def d_model_for(vocab, max_len):
    return -(-(vocab + max_len) // ALIGN) * ALIGN


def wanted_tokens(max_len, prompt_length, script, eos):
    """wanted[p]: the token position p predicts."""
    wanted = np.full(max_len, eos, dtype=np.int64)
    wanted[prompt_length - 1: prompt_length - 1 + len(script)] = script
    return wanted


def layer_norm_stats(d):
    """(hi, lo, s): LayerNorm's output at the two ones of a d-vector with two
    ones and d - 2 zeros, elsewhere, and its denominator (float64)."""
    mu = 2.0 / d
    s = math.sqrt(2.0 / d - mu * mu + EPS)
    return (1.0 - mu) / s, -mu / s, s


def make_weights(vocab, max_len, wanted, margin):
    d = d_model_for(vocab, max_len)
    d_ff = 64
    hi, lo, s = layer_norm_stats(d)
    scale = margin * s
    embed = np.zeros((vocab, d), np.float64)
    embed[np.arange(vocab), np.arange(vocab)] = 1.0
    pos = np.zeros((max_len, d), np.float64)
    pos[np.arange(max_len), vocab + np.arange(max_len)] = 1.0
    gen = np.zeros((vocab, d), np.float64)
    gen[wanted, vocab + np.arange(max_len)] = scale
    counts = np.bincount(wanted, minlength=vocab).astype(np.float64)
    bias = -scale * counts * lo
    L = "decoder.layers.0."
    w = {
        "tgt_embed.weight": embed,
        "tgt_pos.weight": pos,
        L + "self_attn.in_proj_weight": np.zeros((3 * d, d)),
        L + "self_attn.in_proj_bias": np.zeros(3 * d),
        L + "self_attn.out_proj.weight": np.zeros((d, d)),
        L + "self_attn.out_proj.bias": np.zeros(d),
        L + "linear1.weight": np.zeros((d_ff, d)),
        L + "linear1.bias": np.zeros(d_ff),
        L + "linear2.weight": np.zeros((d, d_ff)),
        L + "linear2.bias": np.zeros(d),
        L + "norm1.weight": np.ones(d), L + "norm1.bias": np.zeros(d),
        L + "norm2.weight": np.ones(d), L + "norm2.bias": np.zeros(d),
        "decoder.norm.weight": np.ones(d),
        "decoder.norm.bias": np.zeros(d),
        "generator.weight": gen,
        "generator.bias": bias,
    }
    return {k: v.astype(np.float32) for k, v in w.items()}, d, scale


def numeric_margins(weights, vocab, wanted, margin):
    """Float32 NumPy forward of every (position, token) pair: the layers add
    0 (their weights are checked to be 0), then LayerNorm and the output.
    Returns (min margin, max |logit - expected|) over all of them, the
    expected logits being M for the wanted token and 0 for the others."""
    for name, value in weights.items():
        if name.startswith("decoder.layers.") and ".norm" not in name:
            assert not value.any(), name
    embed, pos = weights["tgt_embed.weight"], weights["tgt_pos.weight"]
    gen, bias = weights["generator.weight"], weights["generator.bias"]
    g, b = weights["decoder.norm.weight"], weights["decoder.norm.bias"]
    worst_margin, worst_error = math.inf, 0.0
    for p in range(pos.shape[0]):
        x = embed + pos[p]  # [vocab tokens, d]
        mu = x.mean(axis=1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
        y = (x - mu) / np.sqrt(var + np.float32(EPS)) * g + b
        logits = y @ gen.T + bias  # [tokens, vocab]
        j = wanted[p]
        others = np.delete(logits, j, axis=1)
        worst_margin = min(worst_margin, float((logits[:, j] - others.max(axis=1)).min()))
        worst_error = max(worst_error, float(np.abs(others).max()),
                          float(np.abs(logits[:, j] - margin).max()))
    return worst_margin, worst_error


def write_model(out, vocab, max_len, prompt_length, script, eos, margin, quiet=False):
    validate(vocab, max_len, prompt_length, script, eos)
    wanted = wanted_tokens(max_len, prompt_length, script, eos)
    weights, d, scale = make_weights(vocab, max_len, wanted, margin)
    with open(TEMPLATE) as f:
        text = f.read()
    for key, value in (("vocab", vocab), ("d_model", d), ("max_len", max_len)):
        text, n = re.subn(rf"(?m)^(\s*{key}\s*=\s*)\d+", rf"\g<1>{value}", text)
        if n != 1:
            raise Refusal(f"{TEMPLATE} has {n} lines '{key} = N', expected 1")
    hi, lo, s = layer_norm_stats(d)
    numeric, off = numeric_margins(weights, vocab, wanted, margin)
    if numeric < 0.99 * margin or off > 1e-3 * margin:
        raise Refusal(f"NumPy's margin {numeric:.6f} (logits off by up to {off:.2e}) is not the analytic {margin}")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "model.tfm"), "w", newline="\n") as f:
        f.write(text)
    write_safetensors(os.path.join(out, "weights.safetensors"), weights)
    if not quiet:
        print(f"wrote {out}/model.tfm and {out}/weights.safetensors: vocab {vocab}, "
              f"max_len {max_len}, d_model {d}, prompt length {prompt_length}, "
              f"{len(script)} script tokens + eos {eos}")
        print(f"margin: analytic {margin:g} (scale c = {scale:.6f}, LayerNorm hi {hi:.4f}, "
              f"lo {lo:.6f}); NumPy float32 over all {max_len} positions x {vocab} tokens: "
              f"min margin {numeric:.5f}, every logit within {off:.1e} of M or 0")
    return d


# ----------------------------------------------------------------------------
# check: compile and generate
# ----------------------------------------------------------------------------

def run(cmd, what):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise Refusal(f"{what} failed ({r.returncode}): {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
    return r.stdout


def ids_of(line):
    return [int(x) for x in line.split()]


def check(args, script):
    eos = args.eos
    write_model(args.work, args.vocab, args.max_len, args.prompt_length, script, eos, args.margin)
    n = len(script)
    L = args.prompt_length
    rng = np.random.default_rng(0)
    if args.prompt:
        prompt = parse_ids(args.prompt, "--prompt")
        if len(prompt) != L:
            raise Refusal(f"--prompt has {len(prompt)} ids, --prompt-length is {L}")
    else:
        prompt = [int(i) for i in rng.integers(0, args.vocab, L)]
    expected = script + [eos]
    failures = []
    weights = os.path.join(args.work, "weights.safetensors")

    def generate(program, prompts, max_new):
        if len(prompts) == 1:
            cmd = [program, "generate", "--weights", weights, "--prompt",
                   ",".join(map(str, prompts[0])), "--max-new-tokens", str(max_new),
                   "--eos", str(eos)]
        else:
            path = os.path.join(args.work, "prompts.txt")
            with open(path, "w") as f:
                f.write("".join(",".join(map(str, p)) + "\n" for p in prompts))
            cmd = [program, "generate", "--weights", weights, "--prompts-file", path,
                   "--max-new-tokens", str(max_new), "--eos", str(eos)]
        return [ids_of(line) for line in run(cmd, " ".join(cmd[:2])).splitlines()]

    def expect(label, got, want):
        ok = got == want
        print(f"{label}: {'ok' if ok else 'DIFFERENT'} ({len(got)} ids"
              + ("" if ok else f": got {got}, expected {want}") + ")")
        if not ok:
            failures.append(label)

    for batch in [int(b) for b in args.max_batch.split(",")]:
        program = os.path.join(args.work, f"scripted_b{batch}")
        run([args.tfmc, os.path.join(args.work, "model.tfm"), "-o", program,
             "--max-batch", str(batch)], f"tfmc --max-batch {batch}")
        # One prompt; the logits of each chosen token give the margin tfmc's
        # program really has.
        dump = os.path.join(args.work, f"logits_b{batch}.safetensors")
        cmd = [program, "generate", "--weights", weights, "--prompt", ",".join(map(str, prompt)),
               "--max-new-tokens", str(n + 1), "--eos", str(eos), "--dump-logits", dump]
        got = ids_of(run(cmd, "generate --dump-logits").strip())
        expect(f"--max-batch {batch}, prompt of {L}", got, expected)
        logits = read_logits(dump)
        top2 = np.sort(logits, axis=1)[:, -2:]
        print(f"  tfmc's logits: chosen {logits.max(axis=1).min():.5f} .. {logits.max(axis=1).max():.5f}, "
              f"margin over the runner-up >= {(top2[:, 1] - top2[:, 0]).min():.5f}")
        # A batch of prompts of L other ids: the same script (it is tied to
        # positions, not to the prompt's tokens); then a batch whose odd
        # lines have L + 1 ids (script[1:] + eos), each row at its own
        # positions.
        # (--max-new-tokens n + 1 where L + 1 + n + 1 fits max_len, else n:
        # the prompts of L then stop just before their eos.)
        if batch > 1:
            lengths = [L] * batch + [L + (k % 2) for k in range(batch)]
            prompts = [[int(i) for i in rng.integers(0, args.vocab, m)] for m in lengths]
            max_new = n + 1 if L + n + 2 <= args.max_len else n
            for k, got in enumerate(generate(program, prompts, max_new)):
                want = expected[:max_new] if lengths[k] == L else script[1:] + [eos]
                expect(f"--max-batch {batch}, prompts-file line {k + 1} of {len(prompts)} "
                       f"({lengths[k]} ids)", got, want)
        # The wrong prompt length: one token more gives the script from its
        # second token on; one token fewer gives eos at once.
        longer = prompt + [prompt[-1]]
        expect(f"--max-batch {batch}, prompt of {L + 1} (script[1:] + eos expected)",
               generate(program, [longer], n)[0], script[1:] + [eos])
        if L > 1:
            expect(f"--max-batch {batch}, prompt of {L - 1} (eos at once expected)",
                   generate(program, [prompt[:-1]], n + 1)[0], [eos])
    if failures:
        print(f"scripted_model: FAILED {len(failures)} check(s): {'; '.join(failures)}")
        return 1
    print("scripted_model: OK")
    return 0


def read_logits(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    info = header["logits"]
    assert info["dtype"] == "F32", info
    begin, end = info["data_offsets"]
    a = np.frombuffer(blob[8 + n + begin: 8 + n + end], dtype="<f4")
    return a.reshape(info["shape"]).reshape(-1, info["shape"][-1])


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("write", "check"):
        p = sub.add_parser(name)
        p.add_argument("--vocab", type=int, required=True)
        p.add_argument("--max-len", type=int, required=True)
        p.add_argument("--prompt-length", type=int, required=True)
        p.add_argument("--script", required=True, help="comma-separated ids")
        p.add_argument("--eos", type=int, required=True)
        p.add_argument("--margin", type=float, default=20.0,
                       help="the logit of the wanted token; every other is 0 (default 20)")
        if name == "write":
            p.add_argument("--out", required=True)
        else:
            p.add_argument("--tfmc", required=True, help="build/tools/tfmc/tfmc")
            p.add_argument("--work", required=True, help="a directory for the model and programs")
            p.add_argument("--max-batch", default="1", help="comma list, one program each (default 1)")
            p.add_argument("--prompt", help="the L prompt ids (default: random, seed 0)")
    args = parser.parse_args(argv)
    try:
        script = parse_ids(args.script, "--script")
        if not args.margin > 0:
            raise Refusal(f"--margin must be positive, got {args.margin}")
        if args.command == "write":
            write_model(args.out, args.vocab, args.max_len, args.prompt_length, script,
                        args.eos, args.margin)
            return 0
        return check(args, script)
    except Refusal as e:
        print(f"scripted_model: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
