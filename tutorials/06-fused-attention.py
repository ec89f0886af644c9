# %% [markdown]
# # 6. Fused attention
#
# Attention computes `softmax(Q Kᵀ · scale) V` for every head of every
# sequence in a batch. Written with tensor operations it materializes the
# `N x N` score matrix of each head in memory (at `N = 4096`, 64 MB per head in
# fp32) and reads it back twice. A fused kernel never stores it: each program
# owns a block of query rows, walks the key/value blocks, and keeps only a
# running result on chip. What makes that possible is the *online softmax*.
#
# This tutorial shows:
#
# - the online softmax, on a small example you can check by hand;
# - a forward kernel with tensor descriptors (`tl.make_tensor_descriptor`),
#   two chained `tl.dot`s with the softmax between them, `exp2`, and causal
#   masking applied only on the blocks that need it;
# - a picture of the block schedule: which key blocks each query block
#   visits, and which of them are masked;
# - the backward pass in two kernels, and `torch.autograd.Function`, checked
#   against `torch.nn.functional.scaled_dot_product_attention` forward and
#   backward.

# %%
import math
import torch
import triton
import triton.language as tl
import tilebook

DEVICE = triton.runtime.driver.active.get_active_torch_device()
ON_GPU = torch.cuda.is_available()
# Descriptors made inside kernels need scratch memory from the host.
triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=DEVICE))
%device

# %% [markdown]
# ## The online softmax
#
# A softmax over a row needs the row's maximum `m` (for stability) and the sum
# `l` of `exp(s - m)`. Seen in blocks, both can be kept *running*: when a new
# block raises the maximum from `m` to `m'`, everything summed so far was
# scaled by `exp(-m)` and must be rescaled by `alpha = exp(m - m')`. The same
# factor rescales the running weighted sum of `V` rows, so after the last block
# `acc / l` is exactly the softmax-weighted sum, computed in one pass. The
# kernel uses `exp2` with the scores pre-multiplied by `log2(e)`: the same
# arithmetic, one instruction cheaper.

# %%
torch.manual_seed(0)
s = torch.randn(12, dtype=torch.float64) * 3
vals = torch.randn(12, 4, dtype=torch.float64)
m, l, acc = float('-inf'), 0.0, torch.zeros(4, dtype=torch.float64)
for block in range(3):
    sb, vb = s[4 * block:4 * block + 4], vals[4 * block:4 * block + 4]
    m_new = max(m, sb.max().item())
    alpha = math.exp(m - m_new)
    p = (sb - m_new).exp()
    l = l * alpha + p.sum().item()
    acc = acc * alpha + p @ vb
    m = m_new
    print(f"block {block}: running max {m:7.3f}  rescale {alpha:6.3f}  running sum {l:8.3f}")
print('online result equals softmax(s) @ v:', torch.allclose(acc / l, torch.softmax(s, dim=0) @ vals))

# %% [markdown]
# ## The forward kernel
#
# Program `(i, bh)` computes query rows `[i·BLOCK_M, (i+1)·BLOCK_M)` of head
# `bh`. `q` is loaded once. For a causal model, query row `r` may only attend
# to keys `≤ r`, so key blocks strictly left of the diagonal need no mask
# (stage 1), the blocks on the diagonal do (stage 2), and blocks right of it
# are never visited. The inner loop is one `@triton.jit` function called
# twice with a constant `MASKED`, so the mask costs nothing off the diagonal.
# With `RECORD`, head 0 writes which stage each (query block, key block) pair
# ran in, for the picture below.

# %%
@triton.jit
def attn_inner(acc, l_i, m_i, q, k_desc, v_desc, row0, lo, hi, qk_scale, offs_m, Visits, n_blocks_n,
               record, BLOCK_N: tl.constexpr, MASKED: tl.constexpr, RECORD: tl.constexpr):
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in range(lo, hi, BLOCK_N):
        k = k_desc.load([row0 + start_n, 0])
        qk = tl.dot(q, k.T) * qk_scale
        if MASKED:
            qk = tl.where(offs_m[:, None] >= start_n + offs_n[None, :], qk, -1.0e6)
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = v_desc.load([row0 + start_n, 0])
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m_i = m_new
        if RECORD:
            tl.store(Visits + tl.program_id(0) * n_blocks_n + start_n // BLOCK_N, 1 + MASKED, mask=record)
    return acc, l_i, m_i


@triton.jit
def attn_fwd(Q, K, V, O, LSE, Visits, sm_scale, n_rows, N_CTX, D: tl.constexpr,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, RECORD: tl.constexpr):
    tl.static_assert(BLOCK_M % BLOCK_N == 0)
    i = tl.program_id(0)
    bh = tl.program_id(1)
    q_desc = tl.make_tensor_descriptor(Q, shape=[n_rows, D], strides=[D, 1], block_shape=[BLOCK_M, D])
    k_desc = tl.make_tensor_descriptor(K, shape=[n_rows, D], strides=[D, 1], block_shape=[BLOCK_N, D])
    v_desc = tl.make_tensor_descriptor(V, shape=[n_rows, D], strides=[D, 1], block_shape=[BLOCK_N, D])
    o_desc = tl.make_tensor_descriptor(O, shape=[n_rows, D], strides=[D, 1], block_shape=[BLOCK_M, D])
    row0 = bh * N_CTX
    q = q_desc.load([row0 + i * BLOCK_M, 0])
    offs_m = i * BLOCK_M + tl.arange(0, BLOCK_M)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float('inf')
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504  # log2(e)
    n_blocks_n = tl.cdiv(N_CTX, BLOCK_N)
    record = bh == 0
    if CAUSAL:
        acc, l_i, m_i = attn_inner(acc, l_i, m_i, q, k_desc, v_desc, row0, 0, i * BLOCK_M, qk_scale, offs_m,
                                   Visits, n_blocks_n, record, BLOCK_N, False, RECORD)
        acc, l_i, m_i = attn_inner(acc, l_i, m_i, q, k_desc, v_desc, row0, i * BLOCK_M, (i + 1) * BLOCK_M,
                                   qk_scale, offs_m, Visits, n_blocks_n, record, BLOCK_N, True, RECORD)
    else:
        acc, l_i, m_i = attn_inner(acc, l_i, m_i, q, k_desc, v_desc, row0, 0, N_CTX, qk_scale, offs_m,
                                   Visits, n_blocks_n, record, BLOCK_N, False, RECORD)
    # The log-sum-exp (base 2) of each row, for the backward pass.
    tl.store(LSE + row0 + offs_m, m_i + tl.math.log2(l_i))
    o_desc.store([row0 + i * BLOCK_M, 0], (acc / l_i[:, None]).to(tl.float16))


def attention_forward(q, k, v, causal, sm_scale, BLOCK_M=64, BLOCK_N=32, record=None):
    Z, H, N_CTX, D = q.shape
    assert N_CTX % BLOCK_M == 0, "sequence length must be a multiple of BLOCK_M"
    o = torch.empty_like(q)
    lse = torch.empty((Z, H, N_CTX), device=q.device, dtype=torch.float32)
    visits = record if record is not None else lse
    grid = (N_CTX // BLOCK_M, Z * H)
    attn_fwd[grid](q, k, v, o, lse, visits, sm_scale, Z * H * N_CTX, N_CTX, D=D,
                   BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, CAUSAL=causal, RECORD=record is not None,
                   num_warps=4)
    return o, lse

# %% [markdown]
# ## The block schedule
#
# For one head of 512 positions with `BLOCK_M = 64` and `BLOCK_N = 32`, each
# of the 8 query blocks (rows) visits key blocks (columns). Light cells were
# never visited; mid-blue ones ran without a mask; dark ones are the diagonal
# blocks where the causal mask applies. The causal kernel visits 72 of the 128
# blocks, a little over half the work of the full one, and only the 16 on the
# diagonal (two per query block, as `BLOCK_M = 2 · BLOCK_N`) pay for masking.

# %%
Z, H, N_CTX, D = 1, 2, 512, 64
q = torch.randn((Z, H, N_CTX, D), device=DEVICE, dtype=torch.float16)
k = torch.randn((Z, H, N_CTX, D), device=DEVICE, dtype=torch.float16)
v = torch.randn((Z, H, N_CTX, D), device=DEVICE, dtype=torch.float16)
for causal in (False, True):
    visits = torch.zeros((N_CTX // 64, N_CTX // 32), device=DEVICE, dtype=torch.int32)
    attention_forward(q, k, v, causal, 0.125, record=visits)
    tilebook.heatmap(visits, title=f"causal={causal}: 0 = skipped, 1 = unmasked, 2 = masked", values=True)
    print(f"causal={causal}: {int((visits > 0).sum())} of {visits.numel()} blocks visited, "
          f"{int((visits == 2).sum())} masked")

# %% [markdown]
# ## Checking the forward
#
# `torch.nn.functional.scaled_dot_product_attention` is the reference.

# %%
sm_scale = 1 / math.sqrt(D)
for causal in (False, True):
    o, _ = attention_forward(q, k, v, causal, sm_scale)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sm_scale)
    torch.testing.assert_close(o, ref, atol=1e-2, rtol=0)
    print(f"causal={causal}: forward matches scaled_dot_product_attention")

# %% [markdown]
# ## The backward pass
#
# With `P = softmax(S)` recomputed from the saved log-sum-exp (so `P` is never
# stored either), the gradients are
#
# - `dV = Pᵀ dO`,
# - `dS = P ∘ (dO Vᵀ − δ)`, where `δ_i = Σ_d O_id dO_id` (one number per row),
# - `dQ = scale · dS K` and `dK = scale · dSᵀ Q`.
#
# `dK` and `dV` are sums over query rows, `dQ` a sum over key rows, so they are
# computed by two kernels: one program per key block walks the query blocks
# (for `dK`, `dV`), and one program per query block walks the key blocks (for
# `dQ`). Each writes its output once; no atomics are needed. The causal mask
# is the same as in the forward pass.

# %%
@triton.jit
def attn_bwd_dkdv(Q, K, V, DO, DK, DV, LSE, Delta, sm_scale, N_CTX, D: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    j = tl.program_id(0)
    base = tl.program_id(1) * N_CTX
    offs_n = j * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    k = tl.load(K + (base + offs_n)[:, None] * D + offs_d[None, :])
    v = tl.load(V + (base + offs_n)[:, None] * D + offs_d[None, :])
    dk = tl.zeros([BLOCK_N, D], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, D], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    lo = (j * BLOCK_N // BLOCK_M) * BLOCK_M if CAUSAL else 0
    for start_m in range(lo, N_CTX, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        q = tl.load(Q + (base + offs_m)[:, None] * D + offs_d[None, :])
        do = tl.load(DO + (base + offs_m)[:, None] * D + offs_d[None, :])
        lse = tl.load(LSE + base + offs_m)
        delta = tl.load(Delta + base + offs_m)
        pT = tl.math.exp2(tl.dot(k, q.T) * qk_scale - lse[None, :])
        if CAUSAL:
            pT = tl.where(offs_m[None, :] >= offs_n[:, None], pT, 0.0)
        dv = tl.dot(pT.to(tl.float16), do, dv)
        dpT = tl.dot(v, do.T)
        dsT = pT * (dpT - delta[None, :])
        dk = tl.dot(dsT.to(tl.float16), q, dk)
    tl.store(DK + (base + offs_n)[:, None] * D + offs_d[None, :], (dk * sm_scale).to(tl.float16))
    tl.store(DV + (base + offs_n)[:, None] * D + offs_d[None, :], dv.to(tl.float16))


@triton.jit
def attn_bwd_dq(Q, K, V, DO, DQ, LSE, Delta, sm_scale, N_CTX, D: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    i = tl.program_id(0)
    base = tl.program_id(1) * N_CTX
    offs_m = i * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + (base + offs_m)[:, None] * D + offs_d[None, :])
    do = tl.load(DO + (base + offs_m)[:, None] * D + offs_d[None, :])
    lse = tl.load(LSE + base + offs_m)
    delta = tl.load(Delta + base + offs_m)
    dq = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    hi = (i + 1) * BLOCK_M if CAUSAL else N_CTX
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(K + (base + offs_n)[:, None] * D + offs_d[None, :])
        v = tl.load(V + (base + offs_n)[:, None] * D + offs_d[None, :])
        p = tl.math.exp2(tl.dot(q, k.T) * qk_scale - lse[:, None])
        if CAUSAL:
            p = tl.where(offs_m[:, None] >= offs_n[None, :], p, 0.0)
        ds = p * (tl.dot(do, v.T) - delta[:, None])
        dq = tl.dot(ds.to(tl.float16), k, dq)
    tl.store(DQ + (base + offs_m)[:, None] * D + offs_d[None, :], (dq * sm_scale).to(tl.float16))


class Attention(torch.autograd.Function):

    @staticmethod
    def forward(ctx, q, k, v, causal, sm_scale):
        o, lse = attention_forward(q, k, v, causal, sm_scale)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal, ctx.sm_scale = causal, sm_scale
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        Z, H, N_CTX, D = q.shape
        do = do.contiguous()
        delta = (o.float() * do.float()).sum(-1)
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        BLOCK_M, BLOCK_N = 64, 32
        attn_bwd_dkdv[(N_CTX // BLOCK_N, Z * H)](q, k, v, do, dk, dv, lse, delta, ctx.sm_scale, N_CTX, D=D,
                                                 BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, CAUSAL=ctx.causal)
        attn_bwd_dq[(N_CTX // BLOCK_M, Z * H)](q, k, v, do, dq, lse, delta, ctx.sm_scale, N_CTX, D=D,
                                               BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, CAUSAL=ctx.causal)
        return dq, dk, dv, None, None


attention = Attention.apply

# %% [markdown]
# ## Checking the backward
#
# The same upstream gradient goes through our kernels and through the
# reference, whose backward torch records as it computes the forward.

# %%
Z, H, N_CTX, D = (2, 4, 1024, 64) if ON_GPU else (1, 2, 128, 64)
torch.manual_seed(20)
for causal in (False, True):
    q = torch.empty((Z, H, N_CTX, D), device=DEVICE, dtype=torch.float16).normal_(std=0.5).requires_grad_()
    k = torch.empty((Z, H, N_CTX, D), device=DEVICE, dtype=torch.float16).normal_(std=0.5).requires_grad_()
    v = torch.empty((Z, H, N_CTX, D), device=DEVICE, dtype=torch.float16).normal_(std=0.5).requires_grad_()
    dout = torch.randn_like(q)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=0.5)
    ref.backward(dout)
    ref_grads = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    out = attention(q, k, v, causal, 0.5)
    out.backward(dout)
    torch.testing.assert_close(out, ref, atol=1e-2, rtol=0)
    for name, t, want in zip("qkv", (q, k, v), ref_grads):
        torch.testing.assert_close(t.grad, want, atol=1e-2, rtol=0)
    print(f"causal={causal}: output and dq, dk, dv match scaled_dot_product_attention")

# %% [markdown]
# ## Speed
#
# Attention's arithmetic is `4·N²·D` floating-point operations per head for
# the forward (two matrix products), half that when causal, and 2.5 times the
# forward for the backward (which recomputes `P`). The sweep reports TFLOPS
# for our two passes. The repository's benchmark compares with Triton and
# PyTorch on the same machine (`bench/NOTES.md`).

# %%
BATCH, HEADS, D = (4, 16, 64) if ON_GPU else (1, 1, 64)
CTX = [512, 1024, 2048, 4096] if ON_GPU else [128]


@triton.testing.perf_report([
    triton.testing.Benchmark(
        x_names=['N_CTX'], x_vals=CTX, line_arg='causal', line_vals=[False, True],
        line_names=['full', 'causal'], styles=[('blue', '-'), ('red', '-')], ylabel='TFLOPS',
        plot_name=f'attention-{mode} (batch {BATCH}, {HEADS} heads, d {D})', args={'mode': mode})
    for mode in ['fwd', 'bwd']
])
def bench_attention(N_CTX, causal, mode):
    q, k, v = (torch.randn((BATCH, HEADS, N_CTX, D), device=DEVICE, dtype=torch.float16, requires_grad=True)
               for _ in range(3))
    fn = lambda: attention(q, k, v, causal, 0.125)
    if mode == 'bwd':
        o = fn()
        do = torch.randn_like(o)
        fn = lambda: o.backward(do, retain_graph=True)
    ms = triton.testing.do_bench(fn)
    flops = 4.0 * BATCH * HEADS * N_CTX * N_CTX * D * (0.5 if causal else 1.0) * (2.5 if mode == 'bwd' else 1.0)
    return flops * 1e-12 / (ms * 1e-3)


results = bench_attention.run(print_data=True, show_plots=True, return_df=True)
