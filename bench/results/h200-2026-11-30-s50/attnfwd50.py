# Session 50: attention forward, the one-warpgroup configs holding 64+ scores a thread, do_bench
# median; run under TILEBOOK_SCALED_CAP=32 (default) and =1000 (scaled maxima there too).
import math, sys
sys.path.insert(0, "bench")
import torch, triton
from ln_attn_kernels import attention_fwd
CFGS = {64: [(128, 64, 4, 3), (128, 128, 4, 3), (128, 64, 4, 2), (128, 64, 4, 4)],
        128: [(128, 64, 4, 2)]}
for D in (64, 128):
    for causal in (False, True):
        for N in (1024, 4096, 16384):
            B, H = 4, 32
            q, k, v = (torch.randn((B, H, N, D), device="cuda", dtype=torch.float16) for _ in range(3))
            flops = 4 * B * H * N * N * D * (0.5 if causal else 1.0)
            for cfg in CFGS[D]:
                ms = triton.testing.do_bench(lambda: attention_fwd(q, k, v, causal, 1 / math.sqrt(D), cfg),
                                             return_mode="median")
                print(f"fwd D={D} causal={int(causal)} N={N} {cfg}: {flops / ms / 1e9:.1f} TFLOPS", flush=True)
            del q, k, v
