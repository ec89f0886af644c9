# Session 47: attention forward per config (the table's FWD_CONFIGS), D=64 and D=128,
# run by tilebook (`tilebook run --device cuda`) and by Triton (`python3`), same kernels.
import math, sys
sys.path.insert(0, "bench")
import torch, triton
from ln_attn_kernels import FWD_CONFIGS, attention_fwd
for D in (64, 128):
    for causal in (False, True):
        for N in (1024, 4096, 16384):
            B, H = 4, 32
            q, k, v = (torch.randn((B, H, N, D), device="cuda", dtype=torch.float16) for _ in range(3))
            flops = 4 * B * H * N * N * D * (0.5 if causal else 1.0)
            for cfg in FWD_CONFIGS[D]:
                ms = triton.testing.do_bench(lambda: attention_fwd(q, k, v, causal, 1 / math.sqrt(D), cfg), return_mode="median")
                print(f"fwd D={D} causal={causal} N={N} {cfg}: {flops / ms / 1e9:.1f} TFLOPS", flush=True)
