#!/usr/bin/env python3
"""tfm_reference.py MODEL.tfm OUT_DIR SEED SRC_LENGTHS [TGT_LENGTHS]: the
files of an E2E fixture, made at test time for a .tfm that needs no
committed one: OUT_DIR/weights.safetensors (test/fixtures/make_fixtures.py's
PyTorch model for the .tfm, seeded), inputs.safetensors (batches of the
given lengths, e.g. 7,3) and expected.safetensors (its float64 forward)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "fixtures"))
import make_fixtures as mf  # noqa: E402
import numpy as np  # noqa: E402

path, out, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
spec = {"src_lengths": [int(n) for n in sys.argv[4].split(",")]}
if len(sys.argv) > 5:
    spec["tgt_lengths"] = [int(n) for n in sys.argv[5].split(",")]
cfg = mf.parse_tfm(open(path).read())
torch = mf._torch()
torch.manual_seed(seed)
m = mf.build_model(cfg)
weights = {k: v.detach().float().numpy() for k, v in m.state_dict().items()}
inputs = mf.make_inputs(cfg, spec, seed + 1)
name, expected = mf.torch_forward(m, cfg, inputs)
os.makedirs(out, exist_ok=True)
meta = {"format": "pt"}
mf.write_safetensors(os.path.join(out, "weights.safetensors"), weights, meta)
mf.write_safetensors(os.path.join(out, "inputs.safetensors"), inputs, meta)
mf.write_safetensors(os.path.join(out, "expected.safetensors"),
                     {name: expected.astype(np.float32)}, meta)
