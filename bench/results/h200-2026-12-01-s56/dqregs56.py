# The backward's dQ kernel (bench/ln_attn_kernels.py) at its 8-warp configs
# with and without maxnreg=128 (two 256-thread blocks per SM when it fits),
# registers and spills as the compiled kernel reports them, ms by
# do_bench's median, the result compared with the first build's. Runs
# under tilebook and under python3 with Triton (same file).
import sys
import torch
import triton

sys.path.insert(0, "bench")
from ln_attn_kernels import attn_bwd_q, attention_bwd_delta, attention_fwd, FWD_CONFIGS

Z, H = 4, 32
for D, N, causal in [(64, 16384, False), (64, 4096, True), (128, 4096, False)]:
    torch.manual_seed(0)
    q, k, v, do = (torch.randn(Z, H, N, D, device="cuda", dtype=torch.float16) for _ in range(4))
    s = D ** -0.5
    o, lse = attention_fwd(q, k, v, causal, s, FWD_CONFIGS[D][0])
    delta = attention_bwd_delta(o, do)
    for bm, bn, nw, ns in [(128, 64, 8, 3), (128, 64, 8, 2)]:
        ref = None
        out = []
        for reg in (None, 128):
            dq = torch.empty_like(q)
            extra = {} if reg is None else {"maxnreg": reg}

            def go():
                return attn_bwd_q[(N // bm, Z * H)](q, k, v, do, dq, lse, delta, s, N, D=D, BLOCK_M=bm, BLOCK_N=bn,
                                                    CAUSAL=causal, num_warps=nw, num_stages=ns, **extra)

            c = go()
            if ref is None:
                ref = dq.clone()
            err = (dq.float() - ref.float()).abs().max().item()
            ms = triton.testing.do_bench(go, return_mode="median")
            out.append(f"maxnreg={reg}: {ms:.3f} ms, {c.n_regs} regs, {c.n_spills} spills"
                       + (f" ERR {err:.3g}" if err > 1e-2 else ""))
        print(f"dq D={D} N={N} causal={int(causal)} {(bm, bn, nw, ns)} | " + " | ".join(out), flush=True)
