# Attention backward's two kernels (bench/ln_attn_kernels.py) alone, each
# config with its loop's blocks through pointers and through host
# descriptors ("desc"), ms by do_bench's median; every desc result checked
# against the pointer kernel's. Run by tilebook and by Triton.
import sys
import torch
import triton

sys.path.insert(0, "bench")
from ln_attn_kernels import attention_bwd_delta, attention_bwd_kv, attention_bwd_q, attention_fwd, FWD_CONFIGS

Z, H = 4, 32
SHAPES = [(64, 16384, False), (64, 4096, True), (128, 4096, True), (128, 4096, False)]
KV = {64: [(64, 64, 4, 2), (64, 64, 4, 3), (64, 128, 8, 2)], 128: [(64, 64, 4, 2), (64, 128, 8, 2), (64, 64, 4, 3)]}
Q = {64: [(64, 64, 4, 2), (128, 64, 4, 2), (128, 64, 8, 3)], 128: [(64, 64, 4, 2), (128, 64, 8, 2), (128, 64, 8, 3)]}
for D, N, causal in SHAPES:
    torch.manual_seed(0)
    q, k, v, do = (torch.randn(Z, H, N, D, device="cuda", dtype=torch.float16) for _ in range(4))
    s = D ** -0.5
    o, lse = attention_fwd(q, k, v, causal, s, FWD_CONFIGS[D][0])
    delta = attention_bwd_delta(o, do)
    out = []
    for name, part, cfgs in (("kv", lambda c: attention_bwd_kv(do, q, k, v, lse, delta, causal, s, c), KV[D]),
                             ("q", lambda c: attention_bwd_q(do, q, k, v, lse, delta, causal, s, c), Q[D])):
        for cfg in cfgs:
            for c in (cfg, cfg + ("desc",)):
                try:
                    got = part(c)
                    got = got if isinstance(got, tuple) else (got,)
                    if c is cfg:
                        ref = got
                        err = 0.0
                    else:
                        err = max((a.float() - b.float()).abs().max().item() for a, b in zip(got, ref))
                    ms = triton.testing.do_bench(lambda: part(c), return_mode="median")
                    out.append(f"{name}{c}: {ms:.3f}" + (f" ERR {err:.3g}" if err > 1e-2 else ""))
                except Exception as e:
                    out.append(f"{name}{c}: FAILED {type(e).__name__}: {str(e)[:80]}")
    print(f"D={D} N={N} causal={int(causal)} | " + " | ".join(out), flush=True)
