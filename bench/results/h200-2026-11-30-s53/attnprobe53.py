# One attention forward (fp16, 4 x 32 heads, N = 4096, D = 128, not causal)
# for each config named on the command line (indices into FWD_CONFIGS[128]),
# then torch's flash and cuDNN kernels with --torch; for ncu. The same
# script on both sides.
import sys, torch
sys.path.insert(0, "bench")
from ln_attn_kernels import FWD_CONFIGS, attention_fwd
torch.manual_seed(0)
q, k, v = (torch.randn(4, 32, 4096, 128, device="cuda", dtype=torch.float16) for _ in range(3))
picks = [int(a) for a in sys.argv[1:] if a.isdigit()]
for i in picks:
    cfg = FWD_CONFIGS[128][i]
    for _ in range(2):
        attention_fwd(q, k, v, False, 0.08, cfg)
    torch.cuda.synchronize()
    print("cfg", cfg, flush=True)
if "--torch" in sys.argv:
    from torch.nn.attention import sdpa_kernel, SDPBackend
    for be in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION):
        with sdpa_kernel(be):
            for _ in range(2):
                torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=0.08)
        torch.cuda.synchronize()
        print("torch", be, flush=True)
