# Attention backward's dK/dV kernel (bench/ln_attn_kernels.py) alone, every
# benchmark config, ms by do_bench's median; each result checked against a
# float32 torch reference of dK, dV. Run by tilebook (old and new binary).
import sys
import torch
import triton

sys.path.insert(0, "bench")
from ln_attn_kernels import attention_bwd_delta, attention_bwd_kv, attention_fwd, FWD_CONFIGS, BWD_KV_CONFIGS

Z, H = 4, 32
SHAPES = [(64, 16384, False), (64, 4096, False), (128, 4096, True), (128, 4096, False)]
CONFIGS = {64: [(64, 64, 4, 2), (64, 64, 4, 3)], 128: [(64, 64, 4, 2), (64, 64, 4, 3)]}
for D, N, causal in SHAPES:
    torch.manual_seed(0)
    q, k, v, do = (torch.randn(Z, H, N, D, device="cuda", dtype=torch.float16) for _ in range(4))
    s = D ** -0.5
    o, lse = attention_fwd(q, k, v, causal, s, FWD_CONFIGS[D][0])
    delta = attention_bwd_delta(o, do)
    ref = None
    out = []
    for cfg in CONFIGS[D]:
        got = attention_bwd_kv(do, q, k, v, lse, delta, causal, s, cfg)
        if ref is None:
            ref = got
        err = max((a.float() - b.float()).abs().max().item() for a, b in zip(got, ref))
        ms = triton.testing.do_bench(lambda: attention_bwd_kv(do, q, k, v, lse, delta, causal, s, cfg),
                                     return_mode="median")
        out.append(f"{cfg}: {ms:.3f}" + (f" ERR {err:.3g}" if err > 1e-2 else ""))
    print(f"D={D} N={N} causal={int(causal)} | " + " | ".join(out), flush=True)
