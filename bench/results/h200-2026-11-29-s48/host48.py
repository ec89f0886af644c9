# Session 48: why the table's bench_slow reads lower than do_bench at N = 1024:
# host time per call of attention_fwd (enqueue only) against the kernel's time.
import math, sys, time
sys.path.insert(0, "bench")
import torch, triton
from ln_attn_kernels import attention_fwd
def bench_slow(f, budget_ms=40.0):
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
    return (time.perf_counter() - t0) * 1e3 / n, n
for D, causal, cfg in ((64, True, (64, 64, 4, 3)), (64, False, (128, 64, 4, 3)), (128, True, (128, 64, 8, 2)), (128, False, (256, 64, 8, 2))):
    N, B, H = 1024, 4, 32
    q, k, v = (torch.randn((B, H, N, D), device="cuda", dtype=torch.float16) for _ in range(3))
    f = lambda: attention_fwd(q, k, v, causal, 1 / math.sqrt(D), cfg)
    f()
    torch.cuda.synchronize()
    db = triton.testing.do_bench(f, return_mode="median")
    slow, n = bench_slow(f)
    slow2, _ = bench_slow(f)
    t0 = time.perf_counter()
    for _ in range(20):
        f()
    enq = (time.perf_counter() - t0) * 1e3 / 20
    torch.cuda.synchronize()
    print(f"D={D} causal={causal} {cfg}: do_bench {db*1e3:.1f} us, bench_slow {slow*1e3:.1f} / {slow2*1e3:.1f} us (n={n}), enqueue {enq*1e3:.1f} us/call", flush=True)
