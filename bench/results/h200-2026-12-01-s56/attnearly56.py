# Attention backward's two kernels (bench/ln_attn_kernels.py) alone: dK/dV
# and dQ at the benchmark's configs, ms by do_bench's median; every result
# compared with the first config's. Run by tilebook under
# TILEBOOK_EARLY_DOTS=0 and unset (the independent dot issued early).
import sys
import torch
import triton

sys.path.insert(0, "bench")
from ln_attn_kernels import (attention_bwd_delta, attention_bwd_kv, attention_bwd_q, attention_fwd, FWD_CONFIGS,
                             BWD_KV_CONFIGS, BWD_Q_CONFIGS)

Z, H = 4, 32
SHAPES = [(64, 16384, False), (64, 4096, True), (128, 4096, False), (128, 4096, True)]
for D, N, causal in SHAPES:
    torch.manual_seed(0)
    q, k, v, do = (torch.randn(Z, H, N, D, device="cuda", dtype=torch.float16) for _ in range(4))
    s = D ** -0.5
    o, lse = attention_fwd(q, k, v, causal, s, FWD_CONFIGS[D][0])
    delta = attention_bwd_delta(o, do)
    for name, fn, configs in (("kv", attention_bwd_kv, BWD_KV_CONFIGS[D]), ("q", attention_bwd_q, BWD_Q_CONFIGS[D])):
        ref = None
        out = []
        for cfg in configs:
            got = fn(do, q, k, v, lse, delta, causal, s, cfg)
            got = got if isinstance(got, tuple) else (got,)
            if ref is None:
                ref = got
            err = max((a.float() - b.float()).abs().max().item() for a, b in zip(got, ref))
            ms = triton.testing.do_bench(lambda: fn(do, q, k, v, lse, delta, causal, s, cfg), return_mode="median")
            out.append(f"{cfg}: {ms:.3f}" + (f" ERR {err:.3g}" if err > 1e-2 else ""))
        print(f"{name} D={D} N={N} causal={int(causal)} | " + " | ".join(out), flush=True)
