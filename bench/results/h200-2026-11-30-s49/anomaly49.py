# Session 49 (prepared in 48, not run): why D=64 causal N=1024 (64,64,4,3) reads 210 TFLOPS
# inside the table but 257 alone. Runs the table's preceding N=16384 rows, then times the row
# with bench_slow and do_bench, then again after a 2 s idle (clocks), on both sides.
import math, sys, time
sys.path.insert(0, "bench")
import torch, triton
from ln_attn_kernels import attention_fwd, attention_bwd
def bench_slow(f, budget_ms=40.0):
    f(); torch.cuda.synchronize()
    t0 = time.perf_counter(); f(); torch.cuda.synchronize()
    est = (time.perf_counter() - t0) * 1e3
    n = max(1, min(100, int(budget_ms / max(est, 1e-3))))
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3 / n
def row(tag):
    B, H, N, D = 4, 32, 1024, 64
    q, k, v = (torch.randn((B, H, N, D), device="cuda", dtype=torch.float16) for _ in range(3))
    flops = 4 * B * H * N * N * D * 0.5
    f = lambda: attention_fwd(q, k, v, True, 1 / math.sqrt(D), (64, 64, 4, 3))
    s = bench_slow(f)
    d = triton.testing.do_bench(f, return_mode="median")
    print(f"{tag}: bench_slow {flops / s / 1e9:.1f} do_bench {flops / d / 1e9:.1f} TFLOPS", flush=True)
row("cold")
for N in (16384,):
    B, H, D = 4, 32, 64
    q, k, v, do = (torch.randn((B, H, N, D), device="cuda", dtype=torch.float16) for _ in range(4))
    o, lse = attention_fwd(q, k, v, False, 0.125, (128, 64, 4, 3))
    for _ in range(3):
        bench_slow(lambda: attention_fwd(q, k, v, False, 0.125, (128, 64, 4, 3)))
        bench_slow(lambda: attention_bwd(do, q, k, v, o, lse, False, 0.125, (64, 64, 4, 2)))
row("after N=16384")
row("again")
time.sleep(2)
row("after 2 s idle")
