# The backward's 4-warp kernels (bench/ln_attn_kernels.py) at D = 64 with
# the register cap each build is given: none (the runtime's choice), 168
# (three 128-thread blocks per SM) for dK/dV, 128 (four) for dQ; registers
# and spilled words as the compiled kernel reports them, ms by do_bench's
# median, results compared with the first build's. Runs under tilebook and
# under python3 with Triton (same file).
import sys
import torch
import triton

sys.path.insert(0, "bench")
from ln_attn_kernels import attn_bwd_kv, attn_bwd_q, attention_bwd_delta, attention_fwd, FWD_CONFIGS

Z, H, D = 4, 32, 64
for N, causal in [(4096, False), (16384, False), (4096, True)]:
    torch.manual_seed(0)
    q, k, v, do = (torch.randn(Z, H, N, D, device="cuda", dtype=torch.float16) for _ in range(4))
    s = D ** -0.5
    o, lse = attention_fwd(q, k, v, causal, s, FWD_CONFIGS[D][0])
    delta = attention_bwd_delta(o, do)
    dk, dv, dq = torch.empty_like(k), torch.empty_like(v), torch.empty_like(q)
    for name, cfg, caps in [("kv", (64, 64, 4, 2), (None, 168)), ("kv", (64, 64, 4, 3), (None, 168)),
                            ("q", (64, 64, 4, 2), (None, 128))]:
        bm, bn, nw, ns = cfg
        ref = None
        out = []
        for reg in caps:
            extra = {} if reg is None else {"maxnreg": reg}

            def go():
                if name == "kv":
                    return attn_bwd_kv[(N // bn, Z * H)](q, k, v, do, dk, dv, lse, delta, s, N, D=D, BLOCK_M=bm,
                                                         BLOCK_N=bn, CAUSAL=causal, num_warps=nw, num_stages=ns,
                                                         **extra)
                return attn_bwd_q[(N // bm, Z * H)](q, k, v, do, dq, lse, delta, s, N, D=D, BLOCK_M=bm, BLOCK_N=bn,
                                                    CAUSAL=causal, num_warps=nw, num_stages=ns, **extra)

            c = go()
            got = (dk.clone(), dv.clone()) if name == "kv" else (dq.clone(),)
            if ref is None:
                ref = got
            err = max((a.float() - b.float()).abs().max().item() for a, b in zip(got, ref))
            ms = triton.testing.do_bench(go, return_mode="median")
            out.append(f"maxnreg={reg}: {ms:.3f} ms, {c.n_regs} regs, {c.n_spills} spills"
                       + (f" ERR {err:.3g}" if err > 1e-2 else ""))
        print(f"{name} N={N} causal={int(causal)} {cfg} | " + " | ".join(out), flush=True)
