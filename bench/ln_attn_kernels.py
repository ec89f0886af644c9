# The layer-norm and attention kernels of the GPU benchmark, one source for
# both sides: bench/run_gpu.sh prepends this file to bench/ln_attn_bench.py
# for tilebook, and bench/peers_ln_attn.py imports it so that Triton runs the
# same kernels. Pointers, and host tensor descriptors for the attention
# forward's K and V where a config asks for them (Triton's in-kernel
# descriptors would need an allocator set on the host); fp16 data, fp32
# arithmetic.
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


# ---------------------------------------------------------------- layer norm
@triton.jit
def ln_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK: tl.constexpr):
    """One program per row: y = (x - mean) * rstd * w + b; saves mean, rstd."""
    r = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    ok = cols < N
    x = tl.load(X + r * stride + cols, mask=ok, other=0.).to(tl.float32)
    mu = tl.sum(x, axis=0) / N
    d = tl.where(ok, x - mu, 0.)
    rs = 1 / tl.sqrt(tl.sum(d * d, axis=0) / N + eps)
    w = tl.load(W + cols, mask=ok).to(tl.float32)
    b = tl.load(B + cols, mask=ok).to(tl.float32)
    tl.store(Y + r * stride + cols, (d * rs * w + b).to(tl.float16), mask=ok)
    tl.store(Mean + r, mu)
    tl.store(Rstd + r, rs)


@triton.jit
def ln_bwd_rows(DX, DY, X, W, Mean, Rstd, PartW, PartB, M, stride, N, BLOCK: tl.constexpr):
    """dx of rows p, p + P, p + 2P, ... (P programs); the program sums its
    rows' dw, db terms in registers and writes them as partial row p: no
    locks, one partial row per program instead of one update per row (the
    design of the stdlib's `F.layer_norm` backward, stdlib/torch_ops.py)."""
    p = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    ok = cols < N
    w = tl.load(W + cols, mask=ok, other=0.).to(tl.float32)
    dw = tl.zeros([BLOCK], dtype=tl.float32)
    db = tl.zeros([BLOCK], dtype=tl.float32)
    for r in range(p, M, tl.num_programs(0)):
        x = tl.load(X + r * stride + cols, mask=ok, other=0.).to(tl.float32)
        dy = tl.load(DY + r * stride + cols, mask=ok, other=0.).to(tl.float32)
        rs = tl.load(Rstd + r)
        xh = tl.where(ok, (x - tl.load(Mean + r)) * rs, 0.)
        g = w * dy
        a = tl.sum(xh * g, axis=0) / N
        c = tl.sum(g, axis=0) / N
        tl.store(DX + r * stride + cols, ((g - (xh * a + c)) * rs).to(tl.float16), mask=ok)
        dw += dy * xh
        db += dy
    tl.store(PartW + p * N + cols, dw, mask=ok)
    tl.store(PartB + p * N + cols, db, mask=ok)


@triton.jit
def ln_bwd_locked(DX, DY, X, W, Mean, Rstd, PartW, PartB, Locks, stride, N,
                  GROUPS: tl.constexpr, BLOCK: tl.constexpr):
    """Tutorial 05's way: dx of one row; the row's dw, db terms are added into partial sums
    `PartW/PartB[r % GROUPS]` under a spin lock (Locks[g]), the count of
    rows already in a group at Locks[GROUPS + g]."""
    r = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    ok = cols < N
    x = tl.load(X + r * stride + cols, mask=ok, other=0.).to(tl.float32)
    dy = tl.load(DY + r * stride + cols, mask=ok, other=0.).to(tl.float32)
    w = tl.load(W + cols, mask=ok, other=0.).to(tl.float32)
    xh = tl.where(ok, (x - tl.load(Mean + r)) * tl.load(Rstd + r), 0.)
    g = w * dy
    a = tl.sum(xh * g, axis=0) / N
    c = tl.sum(g, axis=0) / N
    tl.store(DX + r * stride + cols, ((g - (xh * a + c)) * tl.load(Rstd + r)).to(tl.float16), mask=ok)
    grp = r % GROUPS
    dw = dy * xh
    db = dy
    while tl.atomic_cas(Locks + grp, 0, 1) == 1:
        pass
    seen = tl.load(Locks + GROUPS + grp)
    if seen == 0:
        tl.atomic_xchg(Locks + GROUPS + grp, 1)
    else:
        dw += tl.load(PartW + grp * N + cols, mask=ok, other=0.)
        db += tl.load(PartB + grp * N + cols, mask=ok, other=0.)
    tl.store(PartW + grp * N + cols, dw, mask=ok)
    tl.store(PartB + grp * N + cols, db, mask=ok)
    tl.debug_barrier()
    tl.atomic_xchg(Locks + grp, 0)


@triton.jit
def ln_bwd_cols(PartW, PartB, DW, DB, GROUPS, N, BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr):
    """dw, db: the column sums of the GROUPS partial rows."""
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    sw = tl.zeros([BLOCK_G, BLOCK_N], dtype=tl.float32)
    sb = tl.zeros([BLOCK_G, BLOCK_N], dtype=tl.float32)
    for g0 in range(0, GROUPS, BLOCK_G):
        rows = g0 + tl.arange(0, BLOCK_G)
        m = (rows[:, None] < GROUPS) & (cols[None, :] < N)
        at = rows[:, None] * N + cols[None, :]
        sw += tl.load(PartW + at, mask=m, other=0.)
        sb += tl.load(PartB + at, mask=m, other=0.)
    tl.store(DW + cols, tl.sum(sw, axis=0).to(tl.float16), mask=cols < N)
    tl.store(DB + cols, tl.sum(sb, axis=0).to(tl.float16), mask=cols < N)


def ln_warps(n):
    block = triton.next_power_of_2(n)
    return block, min(max(block // 256, 1), 8)


def layer_norm_fwd(x, w, b, eps=1e-5):
    M, N = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(M, device=x.device, dtype=torch.float32)
    rstd = torch.empty(M, device=x.device, dtype=torch.float32)
    block, nw = ln_warps(N)
    ln_fwd[(M,)](x, y, w, b, mean, rstd, x.stride(0), N, eps, BLOCK=block, num_warps=nw)
    return y, mean, rstd


def ln_groups(n):
    """Partial-sum rows for dw, db: more for narrow rows (their critical
    sections are short, so more groups keep more programs adding at once).
    Measured on the H100 for both tilebook and Triton over 32-512 groups
    (bench/results/h100-2026-11-28-s34/call2_groups_attn_configs.txt): the
    best counts of both were 512 / 256 / 128 / 64 at 1024 / 4096 / 8192 /
    16384 columns (tutorial 05's counts, 256 / 128 / 96 / 64, were tuned
    on older GPUs)."""
    return 512 if n <= 1024 else (256 if n <= 4096 else (128 if n <= 8192 else 64))


def ln_bwd_config(n):
    """(programs, warps) of `ln_bwd_rows` when the caller names none: a few
    hundred programs (their partial rows stay in L2 for `ln_bwd_cols`), 32
    columns a thread."""
    return (512 if n <= 1024 else 256 if n <= 8192 else 128,
            min(max(triton.next_power_of_2(n) // 1024, 4), 16))


# (programs, warps) of `ln_bwd_rows` tried on both sides at the benchmark's
# sizes; each side's row takes its best. The best of 128-2048 programs and
# 4-32 warps on the H200, ours and Triton's, are among them
# (bench/results/h200-2026-11-28-s36/call1_late_chain_ln.txt, call2_plain_pipeline.txt).
LN_BWD_CONFIGS = {1024: [(256, 4), (512, 4), (512, 8)],
                  4096: [(256, 4), (256, 8), (256, 16)],
                  16384: [(128, 8), (128, 16), (256, 16)]}


def layer_norm_bwd(dy, x, w, mean, rstd, cfg=None):
    M, N = x.shape
    programs, warps = cfg or ln_bwd_config(N)
    programs = min(programs, M)
    dx = torch.empty_like(x)
    part_w = torch.empty((programs, N), device=x.device, dtype=torch.float32)
    part_b = torch.empty((programs, N), device=x.device, dtype=torch.float32)
    dw = torch.empty_like(w)
    db = torch.empty_like(w)
    block = triton.next_power_of_2(N)
    ln_bwd_rows[(programs,)](dx, dy, x, w, mean, rstd, part_w, part_b, M, x.stride(0), N, BLOCK=block,
                             num_warps=warps)
    ln_bwd_cols[(triton.cdiv(N, 128),)](part_w, part_b, dw, db, programs, N, BLOCK_G=32, BLOCK_N=128)
    return dx, dw, db


def layer_norm_bwd_locks(dy, x, w, mean, rstd):
    """Tutorial 05's backward: one program per row, partial sums under locks."""
    M, N = x.shape
    groups = ln_groups(N)
    dx = torch.empty_like(x)
    part_w = torch.empty((groups, N), device=x.device, dtype=torch.float32)
    part_b = torch.empty((groups, N), device=x.device, dtype=torch.float32)
    locks = torch.zeros(2 * groups, device=x.device, dtype=torch.int32)
    dw = torch.empty_like(w)
    db = torch.empty_like(w)
    block, nw = ln_warps(N)
    ln_bwd_locked[(M,)](dx, dy, x, w, mean, rstd, part_w, part_b, locks, x.stride(0), N,
                        GROUPS=groups, BLOCK=block, num_warps=nw)
    # With fewer rows than groups only the first M partial rows were written.
    ln_bwd_cols[(triton.cdiv(N, 128),)](part_w, part_b, dw, db, min(groups, M), N, BLOCK_G=32, BLOCK_N=128)
    return dx, dw, db


# ----------------------------------------------------------------- attention
@triton.jit
def attn_fwd_blocks(acc, l_i, m_i, q, K, V, base, offs_m, lo, hi, qk_scale, D: tl.constexpr,
                    BLOCK_N: tl.constexpr, DIAGONAL: tl.constexpr, KV_DESC: tl.constexpr):
    """Key blocks [lo, hi) of one query block: the online softmax (base 2).
    `KV_DESC`: K and V are host tensor descriptors of [Z * H * N, D] views."""
    offs_d = tl.arange(0, D)
    for start in range(lo, hi, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        if KV_DESC:
            k = K.load([base + start, 0])
        else:
            k = tl.load(K + (base + offs_n)[:, None] * D + offs_d[None, :])
        s = tl.dot(q, tl.trans(k)) * qk_scale
        if DIAGONAL:
            s = tl.where(offs_m[:, None] >= offs_n[None, :], s, -1.0e6)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        if KV_DESC:
            v = V.load([base + start, 0])
        else:
            v = tl.load(V + (base + offs_n)[:, None] * D + offs_d[None, :])
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def attn_fwd(Q, K, V, O, LSE, sm_scale, N_CTX, D: tl.constexpr, BLOCK_M: tl.constexpr,
             BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, KV_DESC: tl.constexpr = False):
    """Program (i, head): query rows [i*BLOCK_M, (i+1)*BLOCK_M) of one head;
    causal: the blocks left of the diagonal unmasked, the diagonal masked.
    Causal programs run in reverse (the longest rows first) so that the
    short ones fill the GPU's last wave."""
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
        acc, l_i, m_i = attn_fwd_blocks(acc, l_i, m_i, q, K, V, base, offs_m, 0, i * BLOCK_M, qk_scale,
                                        D, BLOCK_N, False, KV_DESC)
        acc, l_i, m_i = attn_fwd_blocks(acc, l_i, m_i, q, K, V, base, offs_m, i * BLOCK_M, (i + 1) * BLOCK_M,
                                        qk_scale, D, BLOCK_N, True, KV_DESC)
    else:
        acc, l_i, m_i = attn_fwd_blocks(acc, l_i, m_i, q, K, V, base, offs_m, 0, N_CTX, qk_scale,
                                        D, BLOCK_N, False, KV_DESC)
    tl.store(LSE + base + offs_m, m_i + tl.math.log2(l_i))
    tl.store(O + (base + offs_m)[:, None] * D + offs_d[None, :], (acc / l_i[:, None]).to(tl.float16))


@triton.jit
def attn_bwd_delta(O, DO, Delta, D: tl.constexpr, BLOCK_M: tl.constexpr):
    """delta_i = sum_d o_id * do_id, for BLOCK_M rows of all heads."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    o = tl.load(O + rows[:, None] * D + offs_d[None, :]).to(tl.float32)
    do = tl.load(DO + rows[:, None] * D + offs_d[None, :]).to(tl.float32)
    tl.store(Delta + rows, tl.sum(o * do, axis=1))


@triton.jit
def attn_bwd_kv_blocks(dk, dv, k, v, Q, DO, LSE, Delta, base, offs_n, lo, hi, qk_scale,
                       D: tl.constexpr, BLOCK_M: tl.constexpr, DIAGONAL: tl.constexpr):
    """dK, dV of one key block over query blocks [lo, hi)."""
    offs_d = tl.arange(0, D)
    for start in range(lo, hi, BLOCK_M):
        offs_m = start + tl.arange(0, BLOCK_M)
        q = tl.load(Q + (base + offs_m)[:, None] * D + offs_d[None, :])
        do = tl.load(DO + (base + offs_m)[:, None] * D + offs_d[None, :])
        pt = tl.math.exp2(tl.dot(k, tl.trans(q)) * qk_scale - tl.load(LSE + base + offs_m)[None, :])
        if DIAGONAL:
            pt = tl.where(offs_m[None, :] >= offs_n[:, None], pt, 0.0)
        dv = tl.dot(pt.to(tl.float16), do, dv)
        dst = pt * (tl.dot(v, tl.trans(do)) - tl.load(Delta + base + offs_m)[None, :])
        dk = tl.dot(dst.to(tl.float16), q, dk)
    return dk, dv


@triton.jit
def attn_bwd_kv(Q, K, V, DO, DK, DV, LSE, Delta, sm_scale, N_CTX, D: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """Program (j, head): dK, dV of key rows [j*BLOCK_N, (j+1)*BLOCK_N)."""
    j = tl.program_id(0)
    base = tl.program_id(1) * N_CTX
    offs_n = j * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    k = tl.load(K + (base + offs_n)[:, None] * D + offs_d[None, :])
    v = tl.load(V + (base + offs_n)[:, None] * D + offs_d[None, :])
    dk = tl.zeros([BLOCK_N, D], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, D], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    if CAUSAL:
        # Query blocks that hold the diagonal of this key block are masked;
        # the ones below it are not.
        diag_end = (j + 1) * BLOCK_N
        dk, dv = attn_bwd_kv_blocks(dk, dv, k, v, Q, DO, LSE, Delta, base, offs_n, j * BLOCK_N, diag_end,
                                    qk_scale, D, BLOCK_M, True)
        dk, dv = attn_bwd_kv_blocks(dk, dv, k, v, Q, DO, LSE, Delta, base, offs_n, diag_end, N_CTX,
                                    qk_scale, D, BLOCK_M, False)
    else:
        dk, dv = attn_bwd_kv_blocks(dk, dv, k, v, Q, DO, LSE, Delta, base, offs_n, 0, N_CTX,
                                    qk_scale, D, BLOCK_M, False)
    tl.store(DK + (base + offs_n)[:, None] * D + offs_d[None, :], (dk * sm_scale).to(tl.float16))
    tl.store(DV + (base + offs_n)[:, None] * D + offs_d[None, :], dv.to(tl.float16))


@triton.jit
def attn_bwd_q(Q, K, V, DO, DQ, LSE, Delta, sm_scale, N_CTX, D: tl.constexpr,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """Program (i, head): dQ of query rows [i*BLOCK_M, (i+1)*BLOCK_M);
    causal ones in reverse, the longest first (as `attn_fwd`)."""
    if CAUSAL:
        i = tl.num_programs(0) - 1 - tl.program_id(0)
    else:
        i = tl.program_id(0)
    base = tl.program_id(1) * N_CTX
    offs_m = i * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + (base + offs_m)[:, None] * D + offs_d[None, :])
    do = tl.load(DO + (base + offs_m)[:, None] * D + offs_d[None, :])
    lse = tl.load(LSE + base + offs_m)
    delta = tl.load(Delta + base + offs_m)
    dq = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    hi = (i + 1) * BLOCK_M if CAUSAL else N_CTX
    for start in range(0, hi, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        k = tl.load(K + (base + offs_n)[:, None] * D + offs_d[None, :])
        v = tl.load(V + (base + offs_n)[:, None] * D + offs_d[None, :])
        p = tl.math.exp2(tl.dot(q, tl.trans(k)) * qk_scale - lse[:, None])
        if CAUSAL:
            p = tl.where(offs_m[:, None] >= offs_n[None, :], p, 0.0)
        ds = p * (tl.dot(do, tl.trans(v)) - delta[:, None])
        dq = tl.dot(ds.to(tl.float16), k, dq)
    tl.store(DQ + (base + offs_m)[:, None] * D + offs_d[None, :], (dq * sm_scale).to(tl.float16))


def attention_fwd(q, k, v, causal, sm_scale, cfg):
    """`cfg`: (BLOCK_M, BLOCK_N, warps, stages), and "kv" last where K and
    V go through host tensor descriptors (bulk tensor copies on Hopper, as
    Triton's own attention tutorial does there)."""
    bm, bn, nw, ns = cfg[:4]
    Z, H, N, D = q.shape
    o = torch.empty_like(q)
    lse = torch.empty((Z, H, N), device=q.device, dtype=torch.float32)
    kv_desc = cfg[4:] == ("kv",)
    if kv_desc:
        k = TensorDescriptor.from_tensor(k.view(Z * H * N, D), [bn, D])
        v = TensorDescriptor.from_tensor(v.view(Z * H * N, D), [bn, D])
    attn_fwd[(N // bm, Z * H)](q, k, v, o, lse, sm_scale, N, D=D, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal,
                               KV_DESC=kv_desc, num_warps=nw, num_stages=ns)
    return o, lse


def attention_bwd_delta(o, do):
    Z, H, N, D = o.shape
    delta = torch.empty((Z, H, N), device=o.device, dtype=torch.float32)
    attn_bwd_delta[(Z * H * N // 64,)](o, do, delta, D=D, BLOCK_M=64)
    return delta


def attention_bwd_kv(do, q, k, v, lse, delta, causal, sm_scale, cfg):
    bm, bn, nw, ns = cfg
    Z, H, N, D = q.shape
    dk, dv = torch.empty_like(k), torch.empty_like(v)
    attn_bwd_kv[(N // bn, Z * H)](q, k, v, do, dk, dv, lse, delta, sm_scale, N, D=D, BLOCK_M=bm, BLOCK_N=bn,
                                  CAUSAL=causal, num_warps=nw, num_stages=ns)
    return dk, dv


def attention_bwd_q(do, q, k, v, lse, delta, causal, sm_scale, cfg):
    bm, bn, nw, ns = cfg
    Z, H, N, D = q.shape
    dq = torch.empty_like(q)
    attn_bwd_q[(N // bm, Z * H)](q, k, v, do, dq, lse, delta, sm_scale, N, D=D, BLOCK_M=bm, BLOCK_N=bn,
                                 CAUSAL=causal, num_warps=nw, num_stages=ns)
    return dq


def attention_bwd(do, q, k, v, o, lse, causal, sm_scale, kv_cfg, q_cfg):
    """dq, dk, dv; `kv_cfg` and `q_cfg` are the tile configs of the two
    kernels (each tuned on its own, as `@triton.autotune` on each would)."""
    delta = attention_bwd_delta(o, do)
    dk, dv = attention_bwd_kv(do, q, k, v, lse, delta, causal, sm_scale, kv_cfg)
    dq = attention_bwd_q(do, q, k, v, lse, delta, causal, sm_scale, q_cfg)
    return dq, dk, dv


# Tile configs tried on both sides: (BLOCK_M, BLOCK_N, warps, stages). Each
# side's rows take its best. Forward: each side's best of eight configs per
# head dim on the H100 is in the list (call2_groups_attn_configs.txt in
# bench/results/h100-2026-11-28-s34/); (128, 64, 4, 2) at D = 64 since
# session 41 (tilebook's best there once its loop is rotated). Since session
# 48, from 18 configs outside the list timed on both sides on the H200
# (bench/results/h200-2026-11-29-s48/): at D = 64 (128, 128, 4, 3) and
# (128, 64, 4, 4), at D = 128 (256, 64, 8, 2), (128, 64, 8, 2) and
# (128, 64, 4, 2) (Triton's best of the 18 at D = 128).
# Session 52: K and V through host descriptors ("kv") at the 128-key
# configs, where the bulk copies measured 1-10 % faster than pointers on our
# side (bench/results/h200-2026-11-30-s52/, `attn_desc.py`).
FWD_CONFIGS = {64: [(128, 64, 4, 3), (128, 64, 8, 3), (64, 64, 4, 3), (128, 64, 4, 2), (128, 128, 4, 3),
                    (128, 64, 4, 4), (128, 128, 4, 3, "kv")],
               128: [(128, 64, 8, 3), (128, 32, 4, 3), (64, 64, 4, 3), (128, 128, 8, 2), (256, 64, 8, 2),
                     (128, 64, 8, 2), (128, 64, 4, 2), (128, 128, 8, 2, "kv")]}
# Backward: the `dk`/`dv` kernel and the `dq` kernel each take their own
# config (BLOCK_M, BLOCK_N, warps, stages); each side's row times its best
# of each list alone, then the whole backward with the two. From each
# kernel timed alone over 6 / 8 configs on both sides on the H200 (session
# 49, bench/results/h200-2026-11-30-s49/call3/): (64, 64, 4, 2) is both
# sides' best `dk`/`dv` config at almost every shape; the `dq` kernel is
# 1-8 % faster with 128 query rows ((128, 64, 4, 2) at D = 64, (128, 64, 8,
# 2-3) at D = 128) on both sides. The first entry is the default.
BWD_KV_CONFIGS = {64: [(64, 64, 4, 2), (64, 64, 4, 3), (32, 128, 4, 3), (32, 64, 4, 3)],
                  128: [(64, 64, 4, 2), (64, 128, 8, 2), (32, 64, 4, 3), (64, 64, 4, 3)]}
BWD_Q_CONFIGS = {64: [(64, 64, 4, 2), (128, 64, 4, 2), (128, 64, 8, 3), (64, 128, 4, 2), (64, 64, 4, 3)],
                 128: [(64, 64, 4, 2), (128, 64, 8, 2), (128, 64, 8, 3), (128, 32, 4, 3), (64, 64, 4, 3)]}
