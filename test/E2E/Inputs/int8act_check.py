#!/usr/bin/env python3
"""Checks a tfmc output of a fixture compiled with --weight-dtype int8
--activations int8 against test/fixtures/make_int8act.py's references
(lowprec/NAME/int8act.safetensors; that script's docstring derives them):

  int8act_check.py FIXTURES NAME OUT.safetensors [WEIGHTS]

WEIGHTS is the weights' dtype, int8 (the default: int8act.safetensors,
int8.safetensors) or int4 (--weight-dtype int4 --activations int8:
int4act.safetensors, int4.safetensors; activation groups of 32).

At unpadded positions, with TOL = 1e-5 x max(1, max |reference|) for tfmc's
own f32 arithmetic:
  1. |OUT - fp32 reference| <= bound + TOL and <= bound_statistical + TOL at
     every element: the first-order bounds on quantising the weights and
     every quantised linear's input, which hold whichever way tfmc rounds an
     activation within half a step (an activation within f32 rounding of a
     tie may round the other way in tfmc than in PyTorch, and the change
     spreads: OUT is not comparable with PyTorch's quantised output at TOL);
  2. |OUT - PyTorch's int8-activation output| <= bound_vs_reference_statistical
     + TOL: the weights' quantisation cancels, so a wrong weight contract
     fails here;
  3. OUT differs from the int8-weight-only reference (lowprec/NAME/int8.
     safetensors) by more than TOL somewhere: the activations were quantised.
Prints what it measured; exits 1 naming the first failure. bf16act_check.py
runs the same checks for --weight-dtype bf16 --activations bf16 (check())."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lowprec_check import values  # noqa: E402


def check(fixtures, name, out_path, weights, activations):
    """The checks above of OUT against lowprec/NAME/{weights}act.safetensors
    and {weights}.safetensors; the exit status."""
    expected = values(os.path.join(fixtures, name, "expected.safetensors"))
    inputs = values(os.path.join(fixtures, name, "inputs.safetensors"))
    ref = values(os.path.join(fixtures, "lowprec", name, f"{weights}act.safetensors"))
    weight_only = values(os.path.join(fixtures, "lowprec", name, f"{weights}.safetensors"))
    key = "logits" if "logits" in expected else "last_hidden_state"
    out = values(out_path)[key].astype(np.float64)
    mask = inputs["decoder_attention_mask" if "decoder_attention_mask" in inputs else "attention_mask"] != 0
    y, yq, w8 = expected[key].astype(np.float64), ref[key].astype(np.float64), weight_only[key].astype(np.float64)
    tol = 1e-5 * max(1.0, float(np.abs(yq[mask]).max()))
    scale = max(1.0, float(np.abs(y[mask]).max()))
    err = np.abs(out - y)[mask]
    problems = []
    for bound_name in ("bound", "bound_statistical"):
        bound = ref[bound_name].astype(np.float64)[mask]
        print(f"{name}: |tfmc - fp32| <= {bound_name} + tol: max error {err.max() / scale:.3e} of max |y|, "
              f"error/({bound_name} + tol) <= {(err / (bound + tol)).max():.3f}")
        if not (err <= bound + tol).all():
            problems.append(f"|tfmc - fp32| exceeds {bound_name} at {int((err > bound + tol).sum())} elements")
    vs_ref = np.abs(out - yq)[mask]
    rbound = ref["bound_vs_reference_statistical"].astype(np.float64)[mask]
    # Where no activation lies within tfmc's f32 rounding of a tie, tfmc and
    # PyTorch round alike and agree to f32 precision: printed, not required.
    print(f"{name}: |tfmc - PyTorch {activations} activations| {vs_ref.max() / scale:.3e} of max |y| "
          f"({'within' if vs_ref.max() <= tol else 'beyond'} tol; within tol at {(vs_ref <= tol).mean():.0%} of "
          f"elements), <= bound_vs_reference_statistical + tol: ratio {(vs_ref / (rbound + tol)).max():.3f}")
    if not (vs_ref <= rbound + tol).all():
        problems.append(f"|tfmc - reference| exceeds bound_vs_reference_statistical at "
                        f"{int((vs_ref > rbound + tol).sum())} elements")
    moved = float(np.abs(out - w8)[mask].max())
    print(f"{name}: differs from the {weights}-weight-only reference by {moved / scale:.3e} of max |y| "
          f"({moved / tol:.0f} x tol)")
    if not moved > tol:
        problems.append(f"the output equals the {weights}-weight-only reference: no activation was "
                        f"{'quantised' if activations == 'int8' else 'rounded'}")
    for p in problems:
        print(f"FAIL: {name}: {p}")
    return 1 if problems else 0


def main():
    fixtures, name, out_path = sys.argv[1:4]
    weights = sys.argv[4] if len(sys.argv) > 4 else "int8"
    if weights not in ("int8", "int4"):
        sys.exit(f"int8act_check.py: WEIGHTS must be int8 or int4, not {weights!r}")
    return check(fixtures, name, out_path, weights, "int8")


if __name__ == "__main__":
    sys.exit(main())
