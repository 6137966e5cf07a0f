"""Checks the logits' soft-capping against its definition.

    softcap_relation.py UNCAPPED.safetensors CAPPED.safetensors CAP

The two `run` outputs of one model with and without final_logit_softcap
(the same weights and ids): every capped logit must be CAP · tanh(u / CAP)
of the uncapped u, within the kernel's accuracy (a few ulps of 1, times
CAP), and the cap must matter (some logit moves by more than a tenth of CAP).
Plain Python: no numpy needed."""
import math
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "E2E", "Inputs"))
from safetensors_io import read  # noqa: E402


def logits(path):
    dtype, shape, data = read(path)["logits"]
    if dtype != "F32":
        sys.exit(f"{path}: logits are {dtype}, expected F32")
    return struct.unpack(f"<{len(data) // 4}f", data)


def main():
    uncapped, capped = logits(sys.argv[1]), logits(sys.argv[2])
    cap = float(sys.argv[3])
    if len(uncapped) != len(capped):
        sys.exit("FAIL: the two outputs differ in size")
    worst = max(abs(c - cap * math.tanh(u / cap)) for u, c in zip(uncapped, capped))
    moved = max(abs(u - c) for u, c in zip(uncapped, capped))
    if worst > 1e-6 * cap * 8:
        sys.exit(f"FAIL: max |capped - cap tanh(uncapped / cap)| = {worst:.3g}")
    if moved <= 0.1 * cap:
        sys.exit(f"FAIL: the cap moves no logit by more than {moved:.3g}")
    print(f"ok: capped = {sys.argv[3]} tanh(uncapped / {sys.argv[3]}) "
          f"(max |error| {worst:.2g}, the cap moves logits by up to {moved:.2g})")


if __name__ == "__main__":
    main()
