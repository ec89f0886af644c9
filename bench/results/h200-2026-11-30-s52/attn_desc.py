# Attention forward through host tensor descriptors (bulk tensor copies on
# both sides, as Triton's own tutorial does on Hopper) against the
# benchmark's pointer kernel: the same file under tilebook and python3.
import sys
import time
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

sys.path.insert(0, "bench")
from ln_attn_kernels import attn_fwd


@triton.jit
def desc_fwd_blocks(acc, l_i, m_i, q, k_desc, v_desc, base, offs_m, lo, hi, qk_scale,
                    BLOCK_N: tl.constexpr, DIAGONAL: tl.constexpr):
    for start in range(lo, hi, BLOCK_N):
        k = k_desc.load([base + start, 0])
        s = tl.dot(q, tl.trans(k)) * qk_scale
        if DIAGONAL:
            offs_n = start + tl.arange(0, BLOCK_N)
            s = tl.where(offs_m[:, None] >= offs_n[None, :], s, -1.0e6)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = v_desc.load([base + start, 0])
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def desc_fwd(q_desc, k_desc, v_desc, o_desc, LSE, sm_scale, N_CTX, D: tl.constexpr, BLOCK_M: tl.constexpr,
             BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    if CAUSAL:
        i = tl.num_programs(0) - 1 - tl.program_id(0)
    else:
        i = tl.program_id(0)
    base = tl.program_id(1) * N_CTX
    offs_m = i * BLOCK_M + tl.arange(0, BLOCK_M)
    q = q_desc.load([base + i * BLOCK_M, 0])
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    if CAUSAL:
        acc, l_i, m_i = desc_fwd_blocks(acc, l_i, m_i, q, k_desc, v_desc, base, offs_m, 0, i * BLOCK_M,
                                        qk_scale, BLOCK_N, False)
        acc, l_i, m_i = desc_fwd_blocks(acc, l_i, m_i, q, k_desc, v_desc, base, offs_m, i * BLOCK_M,
                                        (i + 1) * BLOCK_M, qk_scale, BLOCK_N, True)
    else:
        acc, l_i, m_i = desc_fwd_blocks(acc, l_i, m_i, q, k_desc, v_desc, base, offs_m, 0, N_CTX, qk_scale,
                                        BLOCK_N, False)
    tl.store(LSE + base + offs_m, m_i + tl.math.log2(l_i))
    o_desc.store([base + i * BLOCK_M, 0], (acc / l_i[:, None]).to(tl.float16))


@triton.jit
def desc_kv_fwd(Q, k_desc, v_desc, O, LSE, sm_scale, N_CTX, D: tl.constexpr, BLOCK_M: tl.constexpr,
                BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """K and V through descriptors, Q and O through pointers."""
    if CAUSAL:
        i = tl.num_programs(0) - 1 - tl.program_id(0)
    else:
        i = tl.program_id(0)
    base = tl.program_id(1) * N_CTX
    offs_m = i * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + (base + offs_m)[:, None] * D + offs_d[None, :])
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    if CAUSAL:
        acc, l_i, m_i = desc_fwd_blocks(acc, l_i, m_i, q, k_desc, v_desc, base, offs_m, 0, i * BLOCK_M,
                                        qk_scale, BLOCK_N, False)
        acc, l_i, m_i = desc_fwd_blocks(acc, l_i, m_i, q, k_desc, v_desc, base, offs_m, i * BLOCK_M,
                                        (i + 1) * BLOCK_M, qk_scale, BLOCK_N, True)
    else:
        acc, l_i, m_i = desc_fwd_blocks(acc, l_i, m_i, q, k_desc, v_desc, base, offs_m, 0, N_CTX, qk_scale,
                                        BLOCK_N, False)
    tl.store(LSE + base + offs_m, m_i + tl.math.log2(l_i))
    tl.store(O + (base + offs_m)[:, None] * D + offs_d[None, :], (acc / l_i[:, None]).to(tl.float16))


def stats(k):
    try:
        return f"{k.n_regs}r/{k.n_spills}s/{k.metadata.shared // 1024}K"
    except Exception as e:
        return "?"


def bench(fn, reps=20):
    fn()
    torch.cuda.synchronize()
    best = 1e9
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def main():
    Z, H = 4, 32
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    for D, N, causal, cfgs in [(128, 4096, False, [(128, 64, 8, 2), (128, 64, 4, 2), (128, 128, 8, 2)]),
                               (128, 16384, True, [(128, 64, 8, 2), (128, 128, 8, 2)]),
                               (64, 4096, False, [(128, 128, 4, 3), (128, 64, 4, 3)]),
                               (64, 16384, True, [(128, 128, 4, 3), (128, 64, 4, 3)])]:
        q = torch.randn((Z, H, N, D), device="cuda", dtype=torch.float16)
        k = torch.randn_like(q)
        v = torch.randn_like(q)
        sm = 1.0 / D ** 0.5
        # The reference: the benchmark's pointer kernel (the GPU suite
        # checks it against torch and the CPU backend).
        ref = None
        flops = 4 * Z * H * N * N * D * (0.5 if causal else 1.0)
        for bm, bn, nw, ns in cfgs:
            o = torch.empty_like(q)
            lse = torch.empty((Z, H, N), device="cuda", dtype=torch.float32)
            q2, k2, v2, o2 = (t.view(Z * H * N, D) for t in (q, k, v, o))
            qd = TensorDescriptor.from_tensor(q2, [bm, D])
            kd = TensorDescriptor.from_tensor(k2, [bn, D])
            vd = TensorDescriptor.from_tensor(v2, [bn, D])
            od = TensorDescriptor.from_tensor(o2, [bm, D])
            grid = (N // bm, Z * H)
            run_d = lambda: desc_fwd[grid](qd, kd, vd, od, lse, sm, N, D=D, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal,
                                           num_warps=nw, num_stages=ns)
            run_p = lambda: attn_fwd[grid](q, k, v, o, lse, sm, N, D=D, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal,
                                           num_warps=nw, num_stages=ns)
            run_kv = lambda: desc_kv_fwd[grid](q, kd, vd, o, lse, sm, N, D=D, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal,
                                               num_warps=nw, num_stages=ns)
            row = []
            if ref is None:
                run_p()
                ref = o.clone()
            for name, fn in (("desc", run_d), ("kv", run_kv), ("ptr", run_p), ("desc", run_d)):
                o.zero_()
                st = stats(fn())
                err = (o.float() - ref.float()).abs().max().item()
                t = bench(fn)
                row.append(f"{name} {flops / t / 1e12:6.1f} ({st}, err {err:.2g})")
            print(f"D={D} N={N} causal={int(causal)} cfg=({bm},{bn},{nw},{ns}): " + " | ".join(row), flush=True)


main()
