#!/usr/bin/env python3
"""torch_gpt2.py: PyTorch's time for a random GPT-2 small (Hugging Face
GPT2LMHeadModel, eager, fp32 with TF32 off, then TF32 on) on this GPU: the
forward of 128 tokens (logits at every position, as tfmc's `bench --seq 128`)
and one decode step after 128 cached tokens (as `bench --entry decode_step
--seq 128`), medians of CUDA-event timings; plus the GPU's fp32 matmul rate
and device-copy bandwidth, for scale."""
import statistics
import torch
from transformers import GPT2Config, GPT2LMHeadModel

dev = "cuda"
print("torch", torch.__version__, torch.cuda.get_device_name(0))


def timed(fn, repeat, warmup):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


for tf32 in (False, True):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    n = 4096
    x, y = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
    ms = timed(lambda: x @ y, 20, 3)
    print(f"matmul fp32 {n}^3 tf32={tf32}: {2 * n**3 / ms / 1e9:.1f} TFLOP/s")
buf = torch.empty(1 << 28, device=dev)
dst = torch.empty_like(buf)
ms = timed(lambda: dst.copy_(buf), 20, 3)
print(f"device copy: {2 * buf.numel() * 4 / ms / 1e6:.0f} GB/s (read + write)")
del buf, dst

torch.manual_seed(1)
model = GPT2LMHeadModel(GPT2Config()).to(dev).eval()
ids = torch.randint(0, 50257, (1, 129), device=dev)
with torch.no_grad():
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        fwd = timed(lambda: model(ids[:, :128], use_cache=False).logits, 30, 3)
        out = model(ids[:, :128], use_cache=True)
        cache = out.past_key_values

        def step():
            model(ids[:, 128:], past_key_values=cache, use_cache=True)
            cache.crop(128)
        dec = timed(step, 100, 5)
        print(f"pytorch gpt2-small tf32={tf32}: forward S=128 {fwd:.3f} ms, decode step after 128: {dec:.3f} ms")
