# Session 48: attention forward configs outside the table's list, both sides.
import math, sys
sys.path.insert(0, "bench")
import torch, triton
from ln_attn_kernels import attention_fwd
EXTRA = {64: [(128, 128, 8, 2), (128, 128, 8, 3), (128, 128, 4, 2), (256, 64, 8, 2), (256, 128, 8, 2), (128, 64, 4, 4)],
         128: [(128, 64, 4, 2), (128, 128, 4, 2), (256, 64, 8, 2), (128, 64, 8, 2), (64, 128, 4, 2), (128, 32, 4, 4)]}
for D in (64, 128):
    for causal in (False, True):
        for N in (4096, 16384):
            B, H = 4, 32
            q, k, v = (torch.randn((B, H, N, D), device="cuda", dtype=torch.float16) for _ in range(3))
            flops = 4 * B * H * N * N * D * (0.5 if causal else 1.0)
            for cfg in EXTRA[D]:
                try:
                    ms = triton.testing.do_bench(lambda: attention_fwd(q, k, v, causal, 1 / math.sqrt(D), cfg), return_mode="median")
                    print(f"fwd D={D} causal={causal} N={N} {cfg}: {flops / ms / 1e9:.1f} TFLOPS", flush=True)
                except Exception as e:
                    print(f"fwd D={D} causal={causal} N={N} {cfg}: failed {type(e).__name__}", flush=True)
