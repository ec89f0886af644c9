# Layer norm (tutorial 05's workload) and attention (tutorial 06's), forward
# and backward, fp16, on the kernels of bench/ln_attn_kernels.py. The same
# script runs on both sides: `tilebook run` (rows for tilebook) and python3
# with Triton (rows for Triton running the same kernels); bench/merge.py
# pairs them with each other and with torch's numbers from peers.py. Prints
# `ROW workload N unit value [D=.. causal=..]` lines. Sizes and the way
# bytes and FLOPs are counted match peers.py.
import math
import sys

import torch
import triton

from ln_attn_kernels import (BWD_CONFIGS, FWD_CONFIGS, attention_bwd, attention_fwd, layer_norm_bwd,
                             layer_norm_fwd)

QUICK = "--full" not in sys.argv
# `--check`: only the correctness checks, at small sizes (runs on the CPU backend too).
CHECK = "--check" in sys.argv
# `--attention`: only the attention rows (a quicker probe).
ATTENTION_ONLY = "--attention" in sys.argv


def row(workload, n, unit, value, **extra):
    tail = "".join(f" {k}={v}" for k, v in extra.items())
    print(f"ROW {workload} {n} {unit} {value}{tail}", flush=True)


def bench(f):
    return triton.testing.do_bench(f, return_mode="median")


def bench_slow(f, budget_ms=40.0):
    """Mean milliseconds per call of a long kernel sequence: one call to
    warm up, one to estimate, then as many as fit in `budget_ms` (at least
    one). do_bench's fixed 5-call estimate and warmup would make the slowest
    attention rows cost many seconds each; both sides are timed this way."""
    import time
    f()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    f()
    torch.cuda.synchronize()
    est = (time.perf_counter() - t0) * 1e3
    n = max(1, min(100, int(budget_ms / max(est, 1e-3))))
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3 / n


# ------------------------------------------------------------- layer norm
torch.manual_seed(0)
for N in ([] if ATTENTION_ONLY else [1000] if CHECK else [1024, 4096, 16384] if QUICK
          else [512, 1024, 2048, 4096, 8192, 16384]):
    M = 64 if CHECK else 4096
    x = torch.randn(M, N, device="cuda", dtype=torch.float16)
    w = torch.rand(N, device="cuda", dtype=torch.float16)
    b = torch.rand(N, device="cuda", dtype=torch.float16)
    dy = torch.randn(M, N, device="cuda", dtype=torch.float16)
    y, mean, rstd = layer_norm_fwd(x, w, b)
    dx, dw, db = layer_norm_bwd(dy, x, w, mean, rstd)
    if N <= 1024:
        xf, wf, dyf = x.float(), w.float(), dy.float()
        mu = xf.mean(1, keepdim=True)
        rs = 1 / torch.sqrt(((xf - mu) ** 2).mean(1, keepdim=True) + 1e-5)
        xh = (xf - mu) * rs
        assert torch.allclose(y.float(), xh * wf + b.float(), atol=2e-2), "layer norm forward"
        g = wf * dyf
        dx_ref = (g - (xh * (xh * g).mean(1, keepdim=True) + g.mean(1, keepdim=True))) * rs
        assert torch.allclose(dx.float(), dx_ref, atol=2e-2), "layer norm dx"
        assert torch.allclose(dw.float(), (dyf * xh).sum(0), rtol=1e-2, atol=0.5), "layer norm dw"
        assert torch.allclose(db.float(), dyf.sum(0), rtol=1e-2, atol=0.5), "layer norm db"
    if CHECK:
        print(f"layer norm M={M} N={N}: forward and backward match")
        continue
    ms = bench(lambda: layer_norm_fwd(x, w, b))
    row("layernorm_fwd", N, "GB/s", 2 * M * N * 2 / ms / 1e6)
    ms = bench(lambda: layer_norm_bwd(dy, x, w, mean, rstd))
    row("layernorm_bwd", N, "GB/s", 3 * M * N * 2 / ms / 1e6)
    del x, dy, y, dx


