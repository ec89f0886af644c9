# An exploration: attention's backward as one kernel over key blocks that
# also adds each query block's `ds @ k` into an fp32 dQ with relaxed
# atomics (five dots an iteration, FlashAttention-2's design), against the
# benchmark's two kernels (seven dots: the dQ kernel recomputes the scores).
# Non-causal; ms by do_bench's median of the whole backward (delta, the
# kernels, and for the fused one the zeroing and the fp16 conversion of
# dQ); results compared with the two-kernel backward's. Runs under
# tilebook and under python3 with Triton (same file).
import os
import sys
import torch
import triton
import triton.language as tl

sys.path.insert(0, "bench")
from ln_attn_kernels import attention_bwd, attention_bwd_delta, attention_fwd, FWD_CONFIGS


@triton.jit
def bwd_fused(Q, K, V, DO, DK, DV, DQA, LSE, Delta, sm_scale, N_CTX, D: tl.constexpr, BLOCK_M: tl.constexpr,
              BLOCK_N: tl.constexpr):
    j = tl.program_id(0)
    base = tl.program_id(1) * N_CTX
    offs_n = j * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    k = tl.load(K + (base + offs_n)[:, None] * D + offs_d[None, :])
    v = tl.load(V + (base + offs_n)[:, None] * D + offs_d[None, :])
    dk = tl.zeros([BLOCK_N, D], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, D], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    for start in range(0, N_CTX, BLOCK_M):
        offs_m = start + tl.arange(0, BLOCK_M)
        q = tl.load(Q + (base + offs_m)[:, None] * D + offs_d[None, :])
        do = tl.load(DO + (base + offs_m)[:, None] * D + offs_d[None, :])
        pt = tl.math.exp2(tl.dot(k, tl.trans(q)) * qk_scale - tl.load(LSE + base + offs_m)[None, :])
        dv = tl.dot(pt.to(tl.float16), do, dv)
        dst = (pt * (tl.dot(v, tl.trans(do)) - tl.load(Delta + base + offs_m)[None, :])).to(tl.float16)
        dk = tl.dot(dst, q, dk)
        dq = tl.dot(tl.trans(dst), k)
        tl.atomic_add(DQA + (base + offs_m)[:, None] * D + offs_d[None, :], dq, sem="relaxed")
    tl.store(DK + (base + offs_n)[:, None] * D + offs_d[None, :], (dk * sm_scale).to(tl.float16))
    tl.store(DV + (base + offs_n)[:, None] * D + offs_d[None, :], dv.to(tl.float16))


@triton.jit
def dq_convert(DQA, DQ, sm_scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(DQ + offs, (tl.load(DQA + offs) * sm_scale).to(tl.float16))


def fused_bwd(do, q, k, v, o, lse, sm_scale, cfg):
    bm, bn, nw, ns = cfg
    Z, H, N, D = q.shape
    delta = attention_bwd_delta(o, do)
    dk, dv = torch.empty_like(k), torch.empty_like(v)
    dqa = torch.zeros((Z, H, N, D), device=q.device, dtype=torch.float32)
    bwd_fused[(N // bn, Z * H)](q, k, v, do, dk, dv, dqa, lse, delta, sm_scale, N, D=D, BLOCK_M=bm, BLOCK_N=bn,
                                num_warps=nw, num_stages=ns)
    dq = torch.empty_like(q)
    dq_convert[(Z * H * N * D // 1024,)](dqa, dq, sm_scale, BLOCK=1024)
    return dq, dk, dv


Z, H = (1, 2) if os.environ.get("SMALL") else (4, 32)
SIZES = [int(a) for a in sys.argv[1:]] or [4096, 16384]
TWO = {64: ((64, 64, 4, 2), (128, 64, 8, 3)), 128: ((64, 64, 4, 2), (128, 64, 8, 2))}
FUSED = [(64, 64, 4, 2), (64, 128, 8, 2), (64, 64, 4, 3), (32, 64, 4, 3)]
for D in (64, 128):
    for N in SIZES:
        torch.manual_seed(0)
        q, k, v, do = (torch.randn(Z, H, N, D, device="cuda", dtype=torch.float16) for _ in range(4))
        s = D ** -0.5
        o, lse = attention_fwd(q, k, v, False, s, FWD_CONFIGS[D][0])
        kv_cfg, q_cfg = TWO[D]
        ref = attention_bwd(do, q, k, v, o, lse, False, s, kv_cfg, q_cfg)
        ms = triton.testing.do_bench(lambda: attention_bwd(do, q, k, v, o, lse, False, s, kv_cfg, q_cfg),
                                     return_mode="median")
        out = [f"two kernels {ms:.3f}"]
        for cfg in FUSED:
            if D == 128 and cfg[2] == 4 and cfg[3] == 3:
                continue
            got = fused_bwd(do, q, k, v, o, lse, s, cfg)
            err = max((a.float() - b.float()).abs().max().item() for a, b in zip(got, ref))
            ms = triton.testing.do_bench(lambda: fused_bwd(do, q, k, v, o, lse, s, cfg), return_mode="median")
            out.append(f"fused {cfg} {ms:.3f}" + (f" ERR {err:.3g}" if err > 2e-2 else ""))
        print(f"D={D} N={N} | " + " | ".join(out), flush=True)
