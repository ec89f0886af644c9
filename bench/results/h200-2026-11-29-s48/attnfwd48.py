# Session 48: causal attention forward per config at short and long N, D=64 and D=128,
# run by tilebook (rotation on and off) and by Triton, same kernels.
import math, sys
sys.path.insert(0, "bench")
import torch, triton
from ln_attn_kernels import FWD_CONFIGS, attention_fwd
for D in (64, 128):
    for causal in (True, False):
        for N in (1024, 4096):
            if not causal and N == 4096:
                continue
            B, H = 4, 32
            q, k, v = (torch.randn((B, H, N, D), device="cuda", dtype=torch.float16) for _ in range(3))
            flops = 4 * B * H * N * N * D * (0.5 if causal else 1.0)
            for cfg in FWD_CONFIGS[D]:
                ms = triton.testing.do_bench(lambda: attention_fwd(q, k, v, causal, 1 / math.sqrt(D), cfg), return_mode="median")
                print(f"fwd D={D} causal={causal} N={N} {cfg}: {flops / ms / 1e9:.1f} TFLOPS", flush=True)
