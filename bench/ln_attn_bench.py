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

from ln_attn_kernels import (BWD_KV_CONFIGS, BWD_Q_CONFIGS, FWD_CONFIGS, LN_BWD_CONFIGS, attention_bwd,
                             attention_bwd_delta, attention_bwd_kv, attention_bwd_q, attention_fwd, layer_norm_bwd,
                             layer_norm_bwd_locks, layer_norm_fwd)

QUICK = "--full" not in sys.argv
# `--check`: only the correctness checks, at small sizes (runs on the CPU backend too).
CHECK = "--check" in sys.argv
# `--attention`: only the attention rows (a quicker probe).
ATTENTION_ONLY = "--attention" in sys.argv
# `--layernorm`: only the layer-norm rows.
LAYERNORM_ONLY = "--layernorm" in sys.argv


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


def settle(f, ms=300.0):
    """Run `f` for `ms` milliseconds before a row's first timing. After the
    N = 16384 rows the GPU runs at lower clocks for a few hundred
    milliseconds; without this the first configs of the next (short) row
    were timed in that window, 10-15 % slow on both sides (session 49,
    bench/NOTES.md). Both sides run it."""
    import time
    t0 = time.perf_counter()
    while (time.perf_counter() - t0) * 1e3 < ms:
        f()
        torch.cuda.synchronize()


# ------------------------------------------------------------- layer norm
torch.manual_seed(0)
for N in ([] if ATTENTION_ONLY else [1000] if CHECK else [1024, 4096, 16384] if QUICK
          else [512, 1024, 2048, 4096, 8192, 16384]):
    M = 67 if CHECK else 4096
    x = torch.randn(M, N, device="cuda", dtype=torch.float16)
    w = torch.rand(N, device="cuda", dtype=torch.float16)
    b = torch.rand(N, device="cuda", dtype=torch.float16)
    dy = torch.randn(M, N, device="cuda", dtype=torch.float16)
    y, mean, rstd = layer_norm_fwd(x, w, b)
    dx, dw, db = layer_norm_bwd(dy, x, w, mean, rstd)
    dx2, dw2, db2 = layer_norm_bwd_locks(dy, x, w, mean, rstd)
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
        assert torch.allclose(dx2.float(), dx_ref, atol=2e-2), "layer norm dx (locks)"
        assert torch.allclose(dw2.float(), (dyf * xh).sum(0), rtol=1e-2, atol=0.5), "layer norm dw (locks)"
        assert torch.allclose(db2.float(), dyf.sum(0), rtol=1e-2, atol=0.5), "layer norm db (locks)"
    if CHECK:
        print(f"layer norm M={M} N={N}: forward and backward match")
        continue
    ms = bench(lambda: layer_norm_fwd(x, w, b))
    row("layernorm_fwd", N, "GB/s", 2 * M * N * 2 / ms / 1e6)
    best = None
    for cfg in LN_BWD_CONFIGS.get(N, [None]):
        ms = bench(lambda: layer_norm_bwd(dy, x, w, mean, rstd, cfg))
        print(f"layer norm bwd N={N} {cfg}: {3 * M * N * 2 / ms / 1e6:.1f} GB/s", flush=True)
        best = ms if best is None else min(best, ms)
    row("layernorm_bwd", N, "GB/s", 3 * M * N * 2 / best / 1e6)
    ms = bench(lambda: layer_norm_bwd_locks(dy, x, w, mean, rstd))
    row("layernorm_bwd_locks", N, "GB/s", 3 * M * N * 2 / ms / 1e6)
    del x, dy, y, dx, dx2


# -------------------------------------------------------------- attention
def attention_reference(q, k, v, do, causal, sm_scale):
    """o, dq, dk, dv of one head (2-D fp32 tensors), from the formulas."""
    n = q.shape[0]
    s = (q @ k.T) * sm_scale
    if causal:
        keep = torch.arange(n, device=q.device)[:, None] >= torch.arange(n, device=q.device)[None, :]
        s = torch.where(keep, s, torch.full_like(s, -1.0e6))
    p = torch.softmax(s, 1)
    o = p @ v
    dp = do @ v.T
    ds = p * (dp - (dp * p).sum(1, keepdim=True))
    return o, ds @ k * sm_scale, ds.T @ q * sm_scale, p.T @ do


if LAYERNORM_ONLY:
    sys.exit(0)

# Correctness once per (D, causal) at a small shape, every config.
for D in (64, 128):
    for causal in (False, True):
        Z, H, N = 1, 2, 256
        q, k, v, do = (torch.randn((Z, H, N, D), device="cuda", dtype=torch.float16) for _ in range(4))
        sm_scale = 1 / math.sqrt(D)
        refs = [attention_reference(q[0, h].float(), k[0, h].float(), v[0, h].float(), do[0, h].float(), causal,
                                    sm_scale) for h in range(H)]
        for cfg in FWD_CONFIGS[D]:
            o, lse = attention_fwd(q, k, v, causal, sm_scale, cfg)
            for h in range(H):
                err = (o[0, h].float() - refs[h][0]).abs().max().item()
                assert err < 2e-2, f"attention forward D={D} causal={causal} {cfg}: error {err}"
        o, lse = attention_fwd(q, k, v, causal, sm_scale, FWD_CONFIGS[D][0])
        pairs = ([(kv, BWD_Q_CONFIGS[D][0]) for kv in BWD_KV_CONFIGS[D]] +
                 [(BWD_KV_CONFIGS[D][0], qc) for qc in BWD_Q_CONFIGS[D][1:]])
        for kv_cfg, q_cfg in pairs:
            grads = attention_bwd(do, q, k, v, o, lse, causal, sm_scale, kv_cfg, q_cfg)
            for h in range(H):
                for name, got, want in zip("qkv", grads, refs[h][1:]):
                    err = (got[0, h].float() - want).abs().max().item()
                    assert err < 5e-2, f"attention d{name} D={D} causal={causal} {kv_cfg} {q_cfg}: error {err}"
        print(f"attention D={D} causal={causal}: forward and backward match, every config")
if CHECK:
    sys.exit(0)

for D in (64, 128):
    for causal in (False, True):
        for N in ([1024, 4096, 16384] if QUICK else [1024, 2048, 4096, 8192, 16384]):
            B, H = 4, 32
            q, k, v, do = (torch.randn((B, H, N, D), device="cuda", dtype=torch.float16) for _ in range(4))
            sm_scale = 1 / math.sqrt(D)
            flops = 4 * B * H * N * N * D * (0.5 if causal else 1.0)
            best = None
            settle(lambda: attention_fwd(q, k, v, causal, sm_scale, FWD_CONFIGS[D][0]))
            for cfg in FWD_CONFIGS[D]:
                ms = bench_slow(lambda: attention_fwd(q, k, v, causal, sm_scale, cfg))
                print(f"attention fwd D={D} causal={causal} N={N} {cfg}: {flops / ms / 1e9:.1f} TFLOPS", flush=True)
                best = ms if best is None else min(best, ms)
            row("attention_fwd", N, "TFLOPS", flops / best / 1e9, D=D, causal=int(causal))
            o, lse = attention_fwd(q, k, v, causal, sm_scale, FWD_CONFIGS[D][0])
            # The whole backward with each kernel's first config, then each kernel's configs alone
            # (its own time), then the whole backward with the two best when they differ; the row
            # is the faster whole. Session 49 timed the whole only after the nine part timings and
            # read 7-12 % less than the parts' sum on both sides (bench/NOTES.md).
            delta = attention_bwd_delta(o, do)
            tag = f"D={D} causal={causal} N={N}"
            first = (BWD_KV_CONFIGS[D][0], BWD_Q_CONFIGS[D][0])
            ms_first = bench_slow(lambda: attention_bwd(do, q, k, v, o, lse, causal, sm_scale, *first))
            print(f"attention bwd {tag} {first[0]} {first[1]}: {2.5 * flops / ms_first / 1e9:.1f} TFLOPS",
                  flush=True)
            picked = []
            for name, part, configs in (
                    ("dk/dv", lambda c: attention_bwd_kv(do, q, k, v, lse, delta, causal, sm_scale, c),
                     BWD_KV_CONFIGS[D]),
                    ("dq", lambda c: attention_bwd_q(do, q, k, v, lse, delta, causal, sm_scale, c), BWD_Q_CONFIGS[D])):
                best = None
                for cfg in configs:
                    ms = bench_slow(lambda: part(cfg))
                    print(f"attention bwd {name} {tag} {cfg}: {ms:.3f} ms", flush=True)
                    if best is None or ms < best[0]:
                        best = (ms, cfg)
                picked.append(best[1])
            ms = ms_first
            if tuple(picked) != first:
                ms_picked = bench_slow(lambda: attention_bwd(do, q, k, v, o, lse, causal, sm_scale, *picked))
                print(f"attention bwd {tag} {picked[0]} {picked[1]}: {2.5 * flops / ms_picked / 1e9:.1f} TFLOPS",
                      flush=True)
                ms = min(ms, ms_picked)
            row("attention_bwd", N, "TFLOPS", 2.5 * flops / ms / 1e9, D=D, causal=int(causal))
            del q, k, v, do, o, lse, delta
