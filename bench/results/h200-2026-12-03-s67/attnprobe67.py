# One attention forward (fp16, 4 x 32 heads, N = 4096, not causal) per
# config named on the command line (indices into FWD_CONFIGS[D]), then
# torch's flash and cuDNN kernels with --torch; for ncu. The same script on
# both sides. Usage: attnprobe67.py D i [i...] [--torch]
import sys, torch
sys.path.insert(0, "bench")
from ln_attn_kernels import FWD_CONFIGS, attention_fwd
D = int(sys.argv[1])
torch.manual_seed(0)
q, k, v = (torch.randn(4, 32, 4096, D, device="cuda", dtype=torch.float16) for _ in range(3))
for i in [int(a) for a in sys.argv[2:] if a.isdigit()]:
    cfg = FWD_CONFIGS[D][i]
    for _ in range(2):
        attention_fwd(q, k, v, False, 0.08, cfg)
    torch.cuda.synchronize()
    print("cfg", D, cfg, flush=True)
if "--torch" in sys.argv:
    from torch.nn.attention import sdpa_kernel, SDPBackend
    for be in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION):
        with sdpa_kernel(be):
            for _ in range(2):
                torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=0.08)
        torch.cuda.synchronize()
        print("torch", D, be, flush=True)
