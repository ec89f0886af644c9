# Attention forward (the benchmark's kernel, bench/ln_attn_kernels.py) at
# K/V-descriptor ("kv") configs and the best pointer configs, TFLOPS by
# do_bench's median; each kv result checked against the pointer kernel's.
# Run under TILEBOOK_BULK_RELEASE=1 (8 warps: thread 0 waits for each
# stage's release round; 4 warps: a block barrier) and =3 (session 54: the
# warp that completes a stage's release count issues its refill; no wait).
import os
import sys
import torch
import triton

sys.path.insert(0, "bench")
from ln_attn_kernels import attention_fwd

Z, H = 4, 32
SHAPES = [(128, 1024, False), (128, 4096, False), (128, 16384, False), (128, 4096, True),
          (128, 16384, True), (64, 4096, False), (64, 16384, True)]
CFGS = {128: [(128, 128, 8, 2), (128, 128, 8, 2, "kv"), (128, 64, 8, 3, "kv")],
        64: [(128, 64, 4, 3), (128, 128, 4, 3, "kv"), (128, 128, 8, 3, "kv"), (128, 64, 4, 3, "kv")]}
tag = os.environ.get("TILEBOOK_BULK_RELEASE", "-")
for D, N, causal in SHAPES:
    torch.manual_seed(0)
    q, k, v = (torch.randn(Z, H, N, D, device="cuda", dtype=torch.float16) for _ in range(3))
    flops = 4 * Z * H * N * N * D * (0.5 if causal else 1.0)
    ref = None
    out = []
    for cfg in CFGS[D]:
        o, _ = attention_fwd(q, k, v, causal, D ** -0.5, cfg)
        if ref is None:
            ref = o
            err = 0.0
        else:
            err = (o.float() - ref.float()).abs().max().item()
        ms = triton.testing.do_bench(lambda: attention_fwd(q, k, v, causal, D ** -0.5, cfg),
                                     return_mode="median")
        out.append(f"{cfg}: {flops / ms * 1e-9:.0f}" + (f" ERR {err:.3g}" if err > 1e-2 else ""))
    print(f"release={tag} D={D} N={N} causal={int(causal)} | " + " | ".join(out), flush=True)
