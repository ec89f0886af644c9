# Session 48: attention backward per config (the table's BWD_CONFIGS), both sides.
import math, sys
sys.path.insert(0, "bench")
import torch, triton
from ln_attn_kernels import BWD_CONFIGS, attention_fwd, attention_bwd
for D in (64, 128):
    for causal in (False, True):
        for N in (1024, 4096, 16384):
            B, H = 4, 32
            q, k, v, do = (torch.randn((B, H, N, D), device="cuda", dtype=torch.float16) for _ in range(4))
            flops = 2.5 * 4 * B * H * N * N * D * (0.5 if causal else 1.0)
            o, lse = attention_fwd(q, k, v, causal, 1 / math.sqrt(D), (128, 64, 8, 3))
            for cfg in BWD_CONFIGS[D]:
                ms = triton.testing.do_bench(lambda: attention_bwd(do, q, k, v, o, lse, causal, 1 / math.sqrt(D), cfg), return_mode="median")
                print(f"bwd D={D} causal={causal} N={N} {cfg}: {flops / ms / 1e9:.1f} TFLOPS", flush=True)
