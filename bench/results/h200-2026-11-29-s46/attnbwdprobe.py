# One attention backward (fp16, 4 x 32 heads, N = 4096, D = 64, not causal) at
# BWD_CONFIGS[64]'s (64, 64, 4, 2), twice, for ncu; the same script on both sides.
import sys, torch
sys.path.insert(0, "bench")
from ln_attn_kernels import attention_fwd, attention_bwd
torch.manual_seed(0)
q, k, v, do = (torch.randn(4, 32, 4096, 64, device="cuda", dtype=torch.float16) for _ in range(4))
o, lse = attention_fwd(q, k, v, False, 0.125, (128, 64, 4, 3))
for _ in range(2):
    attention_bwd(do, q, k, v, o, lse, False, 0.125, (64, 64, 4, 2))
torch.cuda.synchronize()
print("done", flush=True)
