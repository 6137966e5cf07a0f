#!/usr/bin/env python3
"""Checks a low-precision (bf16, int8 or int4 weights) tfmc output against the
references test/fixtures/make_lowprec.py made (its docstring derives the
bound):

  lowprec_check.py FIXTURES NAME DTYPE OUT.safetensors
      OUT is `run --input FIXTURES/NAME/inputs.safetensors --output OUT` of
      the fixture compiled with --weight-dtype DTYPE. At unpadded positions:
      1. |OUT - quantised reference| <= 1e-5 x max(1, max |reference|): the
         model tfmc runs is the quantised one, and only f32 arithmetic
         (accumulation order, fused scales) separates the two, as for the
         f32 fixtures (tfmc-compare's default, test/fixtures/README.md);
         PyTorch's own f32 run of the quantised model is printed beside it;
      2. |OUT - fp32 reference| <= bound + 1e-5 x max(1, max |expected|) for
         every element, for the worst-case bound and for the statistical one
         (make_lowprec.py checked the quantised reference within both; tfmc's
         f32 arithmetic adds the tolerance);
      3. per position: max abs error, relative to the position's largest
         |logit|, and whether the top-1 token agrees; where the fp32 winner
         leads every token c by more than bound_a + bound_c + 2 x tolerance
         (statistical bounds), it must agree.
  lowprec_check.py --converted FILE FIXTURES NAME DTYPE
      FILE is `convert-weights` output: every quantised weight holds exactly
      the contract's bits (make_lowprec.py's quantiser, an independent
      statement), under its primary name in [out, in] layout (bf16: BF16
      [N, K]; int8: I8 [N, ceil(K / 64), 66], per block the f16 scale then
      64 values; int4: U8 [N, ceil(K / 32), 18], GGUF's block_q4_0 bytes);
      every other tensor is the fixture's f32 tensor unchanged.
Prints what it measured; exits 1 naming the first failure."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

TOLERANCE = 1e-5
NUMPY = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "BF16": np.uint16, "I8": np.int8,
         "F16": np.float16, "U8": np.uint8}


def load(path):
    out = {}
    for name, (dtype, shape, data) in safetensors_io.read(path).items():
        out[name] = (dtype, np.frombuffer(data, dtype=NUMPY[dtype]).reshape(shape))
    return out


def values(path):
    return {name: array for name, (_, array) in load(path).items()}


def check_output(fixtures, name, dtype, out_path):
    expected = values(os.path.join(fixtures, name, "expected.safetensors"))
    inputs = values(os.path.join(fixtures, name, "inputs.safetensors"))
    ref = values(os.path.join(fixtures, "lowprec", name, dtype + ".safetensors"))
    out = values(out_path)
    key = "logits" if "logits" in expected else "last_hidden_state"
    y, yq, yq32, bound, stat = (a.astype(np.float64) for a in (expected[key], ref[key], ref[key + "_torch_f32"],
                                                                 ref["bound"], ref["bound_statistical"]))
    got = out[key].astype(np.float64)
    if got.shape != y.shape:
        sys.exit(f"FAIL {out_path}: {key} has shape {list(got.shape)}, expected {list(y.shape)}")
    mask = (inputs["decoder_attention_mask" if "decoder_input_ids" in inputs else "attention_mask"] != 0)
    ok = True

    tight = TOLERANCE * max(1.0, float(np.abs(yq[mask]).max()))
    diff = np.abs(got - yq)[mask]
    diff = np.where(np.isnan(diff), np.inf, diff)
    torch32 = float(np.abs(yq32 - yq)[mask].max())
    line = (f"quantised reference: max |tfmc - ref| {diff.max():.1e} (tolerance {tight:.1e}); "
            f"PyTorch f32 on the same weights {torch32:.1e}")
    print(line if diff.max() <= tight else "FAIL " + line)
    ok &= bool(diff.max() <= tight)

    scale = max(1.0, float(np.abs(y[mask]).max()))
    err = np.abs(got - y)
    err = np.where(np.isnan(err), np.inf, err)
    print(f"fp32 reference: max abs error {err[mask].max():.3g}, relative {err[mask].max() / scale:.2e} of "
          f"max(1, max |expected|) = {scale:.3g}")
    for label, b in (("worst-case", bound), ("statistical", stat)):
        allowed = b + TOLERANCE * scale
        worst = np.unravel_index(np.argmax(np.where(mask[:, :, None], err / allowed, -1)), err.shape)
        ratio = float(err[worst] / allowed[worst])
        line = (f"{label} bound: at most {b[mask].max():.3g}; error / (bound + tolerance) at most {ratio:.3f}"
                f" at {list(map(int, worst))}")
        print(line if ratio <= 1 else "FAIL " + line)
        ok &= ratio <= 1

    if key == "logits":
        agree = required = total = 0
        for b, t in zip(*np.nonzero(mask)):
            l, g, bd = y[b, t], got[b, t], stat[b, t]
            a, chosen = int(np.argmax(l)), int(np.argmax(g))
            lead = np.delete(l[a] - l - (bd[a] + bd + 2 * TOLERANCE * scale), a)
            must = bool((lead > 0).all())
            total += 1
            agree += a == chosen
            required += must
            status = "same" if a == chosen else ("DIFFERENT, required" if must else "different")
            print(f"  [{b}, {t:2}]: max |error| {err[b, t].max():.3g}, relative {err[b, t].max() / np.abs(l).max():.2e}"
                  f", top-1 {status} ({a} vs {chosen}){', margin beyond the bound' if must else ''}")
            if must and a != chosen:
                ok = False
                print(f"FAIL top-1 at [{b}, {t}]: fp32 {a}, tfmc {chosen}, although the margin exceeds the bound")
        print(f"top-1 agreement: {agree} of {total} positions; required at the {required} whose margin exceeds "
              f"the bound")
    return ok


def check_converted(path, fixtures, name, dtype):
    sys.path.insert(0, fixtures)
    from make_lowprec import GROUP, Fixture, bf16_bits, int4_blocks, int8_quantise
    fixture = Fixture(name)
    primary = (lambda n: n[len("transformer."):]) if fixture.hf else (lambda n: n)
    tensors = load(path)
    quantised = {primary(n): n for n in fixture.quantised}
    seen = set()
    for tname, (tdtype, array) in sorted(tensors.items()):
        source = quantised.get(tname) or (tname if tname in fixture.weights else
                                          next((n for n in fixture.weights if primary(n) == tname), None))
        if source is None:
            sys.exit(f"FAIL {path}: tensor '{tname}' is no weight of {name}")
        w = fixture.weights[source]
        if tname in quantised:
            seen.add(tname)
            w = np.ascontiguousarray(w.T if source in fixture.transposed else w)
            if dtype == "bf16":
                if tdtype != "BF16" or not np.array_equal(array, bf16_bits(tname, w)):
                    sys.exit(f"FAIL {path}: '{tname}' ({tdtype} {list(array.shape)}) is not the bf16 rounding of "
                             f"the f32 weight [{w.shape[0]}, {w.shape[1]}]")
            elif dtype == "int4":
                blocks = int4_blocks(tname, w)
                if tdtype != "U8" or array.shape != blocks.shape:
                    sys.exit(f"FAIL {path}: '{tname}' is {tdtype} {list(array.shape)}, expected U8 "
                             f"{list(blocks.shape)} (Q4_0 blocks of the f32 weight [{w.shape[0]}, {w.shape[1]}])")
                if not np.array_equal(array, blocks):
                    r, b, i = (int(v[0]) for v in np.nonzero(array != blocks))
                    sys.exit(f"FAIL {path}: '{tname}' is not the contract's Q4_0 blocks: row {r} block {b} byte {i} "
                             f"is {int(array[r, b, i])}, expected {int(blocks[r, b, i])} (block "
                             f"{blocks[r, b].tolist()})")
            else:
                # Blocks: per row and group the f16 scale (little-endian),
                # then the group's q, the last group padded with zeros.
                q, s = int8_quantise(tname, w)
                rows, groups = s.shape
                padded = np.zeros((rows, groups * GROUP), np.int8)
                padded[:, :q.shape[1]] = q
                blocks = np.concatenate([s.view(np.uint16).astype("<u2").view(np.int8).reshape(rows, groups, 2),
                                         padded.reshape(rows, groups, GROUP)], axis=2)
                if tdtype != "I8" or array.shape != blocks.shape or not np.array_equal(array, blocks):
                    sys.exit(f"FAIL {path}: '{tname}' ({tdtype} {list(array.shape)}) is not the contract's int8 "
                             f"blocks {list(blocks.shape)} of the f32 weight [{w.shape[0]}, {w.shape[1]}]")
        elif tdtype != "F32" or not np.array_equal(array, w):
            sys.exit(f"FAIL {path}: '{tname}' should be the fixture's f32 tensor unchanged")
    missing = sorted(set(quantised) - seen)
    if missing:
        sys.exit(f"FAIL {path}: quantised weights missing: {missing}")
    print(f"converted weights: {len(seen)} {dtype} tensors hold the contract's values exactly, "
          f"{len(tensors) - len(seen)} f32 tensors unchanged")
    return True


def main(argv):
    if argv[:1] == ["--converted"]:
        return 0 if check_converted(*argv[1:5]) else 1
    return 0 if check_output(*argv[:4]) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
