# The attention forward under both timing protocols of the table: ours (and
# Triton on the same kernel, under python3) with ln_attn_bench.py's
# bench_slow and with peers.py's do_bench(warmup=25, rep=100, median); under
# python3 with --torch, torch's SDPA (best of flash and cuDNN) with do_bench
# as peers.py times it. Non-causal, batch 4, 32 heads.
import math, sys, torch, triton
sys.path.insert(0, "bench")
sys.path.insert(0, "bench/results/h200-2026-12-03-s67")
from attncfg67 import bench_slow, fwd  # noqa: E402  (attncfg67 runs nothing with no D given... see below)

BEST = {64: (128, 128, 4, 3), 128: (128, 128, 8, 2, "kv")}
for D in (64, 128):
    for N in (1024, 4096, 16384):
        torch.manual_seed(0)
        q, k, v = (torch.randn((4, 32, N, D), device="cuda", dtype=torch.float16) for _ in range(3))
        flops = 4 * 4 * 32 * N * N * D
        sm = 1 / math.sqrt(D)
        if "--torch" in sys.argv:
            from torch.nn.attention import sdpa_kernel, SDPBackend
            best = None
            for be in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION):
                with sdpa_kernel(be):
                    ms = triton.testing.do_bench(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v),
                                                 warmup=25, rep=100, return_mode="median")
                best = ms if best is None else min(best, ms)
            print(f"torch D={D} N={N}: do_bench {flops / best / 1e9:.1f}", flush=True)
        else:
            cfg = BEST[D]
            f = lambda: fwd(q, k, v, False, sm, cfg)
            a = bench_slow(f)
            b = triton.testing.do_bench(f, warmup=25, rep=100, return_mode="median")
            c = bench_slow(f)
            print(f"kernel D={D} N={N} {cfg}: bench_slow {flops / a / 1e9:.1f} / {flops / c / 1e9:.1f}, "
                  f"do_bench {flops / b / 1e9:.1f}", flush=True)
        del q, k, v
