# Session 48: attention configs outside the table's lists, forward and backward, both sides.
import math, sys
sys.path.insert(0, "bench")
import torch, triton
from ln_attn_kernels import attention_fwd, attention_bwd
FWD = {64: [(128, 64, 4, 4), (128, 64, 4, 5), (256, 64, 8, 3), (128, 128, 4, 3), (64, 64, 4, 4)],
       128: [(256, 64, 8, 2), (256, 64, 8, 3), (256, 32, 8, 3), (256, 128, 8, 2), (128, 64, 4, 3), (128, 64, 8, 2)]}
BWD = {64: [(64, 64, 4, 2), (64, 128, 8, 2), (32, 128, 4, 3), (64, 128, 4, 3), (128, 128, 8, 2), (128, 64, 8, 2), (64, 64, 8, 2)],
       128: [(64, 64, 4, 2), (64, 128, 8, 2), (32, 128, 4, 3), (64, 128, 4, 2), (128, 128, 8, 2), (128, 64, 8, 2), (64, 64, 8, 2)]}
def run(name, f):
    try:
        ms = triton.testing.do_bench(f, return_mode="median")
        return ms
    except Exception as e:
        print(f"{name}: failed {type(e).__name__}", flush=True)
        return None
for D in (64, 128):
    for causal in (False, True):
        for N in (1024, 4096, 16384):
            B, H = 4, 32
            q, k, v, do = (torch.randn((B, H, N, D), device="cuda", dtype=torch.float16) for _ in range(4))
            flops = 4 * B * H * N * N * D * (0.5 if causal else 1.0)
            for cfg in FWD[D]:
                name = f"fwd D={D} causal={causal} N={N} {cfg}"
                ms = run(name, lambda: attention_fwd(q, k, v, causal, 1 / math.sqrt(D), cfg))
                if ms:
                    print(f"{name}: {flops / ms / 1e9:.1f} TFLOPS", flush=True)
            if N == 1024:
                continue
            o, lse = attention_fwd(q, k, v, causal, 1 / math.sqrt(D), (128, 64, 8, 3))
            for cfg in BWD[D]:
                name = f"bwd D={D} causal={causal} N={N} {cfg}"
                ms = run(name, lambda: attention_bwd(do, q, k, v, o, lse, causal, 1 / math.sqrt(D), cfg))
                if ms:
                    print(f"{name}: {2.5 * flops / ms / 1e9:.1f} TFLOPS", flush=True)
