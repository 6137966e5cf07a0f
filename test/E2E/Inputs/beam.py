#!/usr/bin/env python3
"""beam.py BINARY FIXTURE_DIR NUM_BEAMS [--eos] [--length-penalty L]
[--early-stopping]: beam search in PyTorch (float64, the fixture's model
rebuilt by test/fixtures/make_fixtures.py from model.tfm and its weights,
a full forward per step, no cache) against `BINARY generate --num-beams`.

The search here is written from Hugging Face's semantics (transformers
4.47+, generation/utils.py _beam_search), independently of tfmc's C++:
each step ranks sum + log p over every beam and token, keeps the best
max(2, 1 + #eos) * N; eos (or the budget) among the first N finishes a
hypothesis scored sum / new_length^L (the eos counted); the best N others
run on; done when N are finished and early stopping, or when the best
running sum / length^L cannot beat the worst finished one.

Prompts are drawn from a fixed seed until one is margin-checked: at every
ranking that decides the result (the N-th vs the N+1-th candidate, the
finished hypotheses' order, the best vs the worst) the scores differ by at
least 1e-4, so that f32 rounding in tfmc cannot flip a choice. With --eos,
the end token is one the eos-free search produces from halfway on, and the
prompt one whose best hypothesis ends with it after other tokens. The
result must differ from greedy search's on the same prompt (and eos).
Prints one line; exits 1 on a mismatch."""
import argparse
import json
import math
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "fixtures"))
import make_fixtures as mf  # noqa: E402

MARGIN = 1e-4
NEW_TOKENS = 8


def log_softmax(x):
    m = x.max()
    return x - m - math.log(np.exp(x - m).sum())


def beam_search(step_logits, num_beams, eos, length_penalty, early, max_new):
    """step_logits(sequence) -> float64 logits of the next token. Returns
    (best tokens, the smallest deciding margin)."""
    keep = max(2, 1 + len(eos)) * num_beams
    running = [(0.0, [])] + [(-1e9, []) for _ in range(num_beams - 1)]
    finished = []  # (score, tokens)
    margin = float("inf")
    for length in range(1, max_new + 1):
        candidates = []
        for b, (total, tokens) in enumerate(running):
            lp = log_softmax(step_logits(tokens))
            for v, value in enumerate(lp):
                candidates.append((total + value, b, v))
        candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
        top = candidates[:keep]
        real = [c for c in candidates if c[0] > -1e8]
        if len(real) > num_beams:
            margin = min(margin, real[num_beams - 1][0] - real[num_beams][0])
        last = length == max_new
        if not (len(finished) == num_beams and early):
            for total, b, v in top[:num_beams]:
                if v in eos or last:
                    finished.append((total / length ** length_penalty, running[b][1] + [v]))
            finished.sort(key=lambda h: -h[0])
            for a, c in zip(finished, finished[1:]):
                margin = min(margin, a[0] - c[0]) if a[0] != c[0] else margin
            finished = finished[:num_beams]
        if last:
            break
        nxt = [(total, running[b][1] + [v]) for total, b, v in top if v not in eos][:num_beams]
        running = nxt
        if len(finished) == num_beams:
            best_running = running[0][0] / length ** length_penalty
            margin = min(margin, abs(best_running - finished[-1][0]))
            if early or not best_running > finished[-1][0]:
                break
    return finished[0][1], margin


def greedy(step_logits, eos, max_new):
    """Greedy search's tokens (argmax each step; it stops after an eos)."""
    tokens = []
    while len(tokens) < max_new:
        tokens.append(int(np.argmax(step_logits(list(tokens)))))
        if tokens[-1] in eos:
            break
    return tokens


# Seeded prompts tried before giving up.
TRIES = 200


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("fixture")
    ap.add_argument("num_beams", type=int)
    ap.add_argument("--eos", action="store_true")
    ap.add_argument("--length-penalty", type=float, default=1.0)
    ap.add_argument("--early-stopping", action="store_true")
    args = ap.parse_args()

    torch = mf._torch()
    cfg = mf.parse_tfm(open(os.path.join(args.fixture, "model.tfm")).read())
    m = mf.build_model(cfg)
    weights = mf.read_safetensors(os.path.join(args.fixture, "weights.safetensors"))
    m.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in weights.items()})
    vocab = cfg["vocab"]
    encdec = m.kind == "encdec"

    def runner(prompt, bos):
        def step_logits(tokens):
            if encdec:
                src = np.array([prompt], dtype=np.int64)
                ids = np.array([[bos] + tokens], dtype=np.int64)
                feed = {"input_ids": src, "attention_mask": np.ones_like(src),
                        "decoder_input_ids": ids, "decoder_attention_mask": np.ones_like(ids)}
            else:
                ids = np.array([prompt + tokens], dtype=np.int64)
                feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
            return mf.torch_forward(m, cfg, feed)[1][0, -1]
        return step_logits

    rng = np.random.RandomState(1234 + args.num_beams)
    for attempt in range(TRIES):
        prompt = [int(i) for i in rng.randint(0, vocab, size=5)]
        bos = int(rng.randint(0, vocab))
        step_logits = runner(prompt, bos)
        eos_choices = [[]]
        if args.eos:
            # A token the eos-free search's best hypothesis produces from
            # halfway on (and not before it).
            free, _ = beam_search(step_logits, args.num_beams, [], args.length_penalty,
                                  args.early_stopping, NEW_TOKENS)
            eos_choices = [[t] for i, t in enumerate(free)
                           if i >= NEW_TOKENS // 2 and t not in free[:i]]
        found = False
        for eos in eos_choices:
            best, margin = beam_search(step_logits, args.num_beams, eos, args.length_penalty,
                                       args.early_stopping, NEW_TOKENS)
            # With eos: a result that ends with it after other tokens. And a
            # result greedy search does not give: a beam search that
            # degenerated to greedy would pass otherwise.
            if margin >= MARGIN and (not eos or (len(best) > 1 and best[-1] == eos[0])) \
                    and best != greedy(step_logits, eos, NEW_TOKENS):
                found = True
                break
        if found:
            break
    else:
        print("no margin-checked prompt whose beams differ from greedy in %d tries" % TRIES)
        sys.exit(1)

    cmd = [args.binary, "generate", "--weights", os.path.join(args.fixture, "weights.safetensors"),
           "--max-new-tokens", str(NEW_TOKENS), "--num-beams", str(args.num_beams),
           "--length-penalty", str(args.length_penalty)]
    cmd += ["--source", ",".join(map(str, prompt)), "--bos", str(bos)] if encdec else \
           ["--prompt", ",".join(map(str, prompt))]
    if eos:
        cmd += ["--eos", str(eos[0])]
    if args.early_stopping:
        cmd += ["--early-stopping"]
    run = subprocess.run(cmd, capture_output=True, text=True)
    got = [int(t) for t in run.stdout.split()] if run.returncode == 0 else None
    if got != best:
        print("MISMATCH: PyTorch beam search %s, tfmc %s (exit %d) %s"
              % (best, got, run.returncode, run.stderr.strip()))
        sys.exit(1)
    print("same ids as PyTorch's beam search: %d beams, %s, margin %.2g: %s (greedy: %s)"
          % (args.num_beams, "eos %d" % eos[0] if eos else "no eos", margin,
             " ".join(map(str, got)), " ".join(map(str, greedy(step_logits, eos, NEW_TOKENS)))))


if __name__ == "__main__":
    main()
