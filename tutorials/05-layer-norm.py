# %% [markdown]
# # 5. Layer normalization, forward and backward
#
# Layer normalization rescales each row of a matrix to mean 0 and variance 1,
# then applies a learned per-column scale `w` and shift `b`:
#
# `y = (x - mean) * rstd * w + b`, with `rstd = 1 / sqrt(var + eps)`.
#
# The forward pass is a row reduction followed by an element-wise step, like
# the softmax of tutorial 2. The backward pass is more interesting: the
# gradient of `x` is again per row, but the gradients of `w` and `b` are
# sums *over all rows*, so many programs must add into the same columns.
# This tutorial shows:
#
# - a forward kernel that keeps its row on chip and saves `mean` and `rstd`
#   for the backward pass;
# - a backward kernel where programs add their rows' contributions into a
#   small number of partial buffers, each guarded by a spin lock built from
#   `tl.atomic_cas` and `tl.atomic_xchg`;
# - a picture of which lock each row took, and in which order the programs
#   got it;
# - `torch.autograd.Function`, so that `y.backward(dy)` runs our kernels, and
#   checks against `torch.nn.functional.layer_norm`.

# %%
import torch
import triton
import triton.language as tl
import tilebook

DEVICE = triton.runtime.driver.active.get_active_torch_device()
ON_GPU = torch.cuda.is_available()
%device

# %% [markdown]
# ## Forward
#
# One program per row. The row is loaded once (it fits in a block for the
# widths used here), reduced twice (mean, then variance of the centred
# values), normalized and stored. `mean` and `rstd` are stored too: the
# backward pass needs them and recomputing them would cost another read.

# %%
@triton.jit
def ln_forward(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    inside = cols < N
    x = tl.load(X + row * stride + cols, mask=inside, other=0.).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(inside, x - mean, 0.)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    w = tl.load(W + cols, mask=inside).to(tl.float32)
    b = tl.load(B + cols, mask=inside).to(tl.float32)
    tl.store(Y + row * stride + cols, xc * rstd * w + b, mask=inside)


def layer_norm_forward(x, w, b, eps=1e-5):
    M, N = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(M, dtype=torch.float32, device=x.device)
    rstd = torch.empty(M, dtype=torch.float32, device=x.device)
    BLOCK = triton.next_power_of_2(N)
    ln_forward[(M,)](x, y, w, b, mean, rstd, x.stride(0), N, eps,
                     BLOCK=BLOCK, num_warps=min(max(BLOCK // 256, 1), 8))
    return y, mean, rstd


torch.manual_seed(0)
M, N = (1151, 2000) if ON_GPU else (97, 300)
x = torch.randn(M, N, device=DEVICE, dtype=torch.float16)
w = torch.rand(N, device=DEVICE, dtype=torch.float16)
b = torch.rand(N, device=DEVICE, dtype=torch.float16)
y, mean, rstd = layer_norm_forward(x, w, b)
ref = torch.nn.functional.layer_norm(x, (N,), w, b, 1e-5)
print('forward matches torch:', torch.allclose(y.float(), ref.float(), atol=1e-2))

# %% [markdown]
# ## Backward: the math
#
# With `xhat = (x - mean) * rstd` and `g = dy * w`, each row's input gradient
# is
#
# `dx = (g - (xhat * c1 + c2)) * rstd`, where `c1 = mean(xhat * g)` and `c2 = mean(g)`,
#
# which only needs the row itself. The parameter gradients are column sums
# over all `M` rows: `dw = sum_rows(dy * xhat)` and `db = sum_rows(dy)`.
#
# ## Backward: many rows, few buffers, one lock each
#
# Letting every program add into `dw` directly would serialize all `M`
# programs on one vector. Instead, row `r` adds into partial buffer
# `r % GROUPS`: `GROUPS` programs can add at the same time, each into its
# own buffer, and a last small kernel sums the `GROUPS` buffers.
#
# Adding a whole vector is not one atomic operation, so each buffer has a
# lock: `tl.atomic_cas(lock, 0, 1)` sets it to 1 only if it was 0 and
# returns the old value, so a program spins until it reads 0. A second flag
# says whether the buffer already holds a sum (the first program stores,
# later ones add). `tl.debug_barrier()` makes sure every thread of the
# program finished its stores before `tl.atomic_xchg(lock, 0)` releases the
# lock. The kernel also takes a ticket from a counter per buffer while it
# holds the lock, which records the order in which programs got it.

# %%
@triton.jit
def ln_backward_dx(DX, DY, DW_parts, DB_parts, X, W, Mean, Rstd, Locks, Tickets, stride, N,
                   GROUPS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    inside = cols < N
    x = tl.load(X + row * stride + cols, mask=inside, other=0).to(tl.float32)
    dy = tl.load(DY + row * stride + cols, mask=inside, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=inside).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    xhat = tl.where(inside, (x - mean) * rstd, 0.)
    g = tl.where(inside, w * dy, 0.)
    c1 = tl.sum(xhat * g, axis=0) / N
    c2 = tl.sum(g, axis=0) / N
    tl.store(DX + row * stride + cols, (g - (xhat * c1 + c2)) * rstd, mask=inside)
    # This row's share of dw and db, added into buffer row % GROUPS.
    group = row % GROUPS
    lock = Locks + group
    filled = Locks + GROUPS + group
    dw = dy * xhat
    db = dy
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    tl.store(Tickets + row, tl.atomic_add(Locks + 2 * GROUPS + group, 1))
    if tl.load(filled) == 0:
        tl.atomic_xchg(filled, 1)
    else:
        dw += tl.load(DW_parts + group * N + cols, mask=inside)
        db += tl.load(DB_parts + group * N + cols, mask=inside)
    tl.store(DW_parts + group * N + cols, dw, mask=inside)
    tl.store(DB_parts + group * N + cols, db, mask=inside)
    tl.debug_barrier()
    tl.atomic_xchg(lock, 0)


@triton.jit
def ln_backward_dwdb(DW_parts, DB_parts, DW, DB, N, GROUPS: tl.constexpr, COLS: tl.constexpr):
    # All GROUPS partial rows of COLS columns at once, summed down the rows.
    cols = tl.program_id(0) * COLS + tl.arange(0, COLS)
    at = tl.arange(0, GROUPS)[:, None] * N + cols[None, :]
    inside = cols < N
    dw = tl.load(DW_parts + at, mask=inside[None, :], other=0.)
    db = tl.load(DB_parts + at, mask=inside[None, :], other=0.)
    tl.store(DW + cols, tl.sum(dw, axis=0), mask=inside)
    tl.store(DB + cols, tl.sum(db, axis=0), mask=inside)


def layer_norm_backward(dy, x, w, mean, rstd, groups=32):
    # groups: a power of two (the last kernel loads all partial rows at once).
    M, N = x.shape
    BLOCK = triton.next_power_of_2(N)
    locks = torch.zeros(3 * groups, dtype=torch.int32, device=x.device)
    tickets = torch.empty(M, dtype=torch.int32, device=x.device)
    dw_parts = torch.empty((groups, N), dtype=torch.float32, device=x.device)
    db_parts = torch.empty((groups, N), dtype=torch.float32, device=x.device)
    dx = torch.empty_like(x)
    ln_backward_dx[(M,)](dx, dy, dw_parts, db_parts, x, w, mean, rstd, locks, tickets, x.stride(0), N,
                         GROUPS=groups, BLOCK=BLOCK, num_warps=min(max(BLOCK // 256, 1), 8))
    dw = torch.empty(N, dtype=w.dtype, device=w.device)
    db = torch.empty(N, dtype=w.dtype, device=w.device)
    ln_backward_dwdb[(triton.cdiv(N, 64),)](dw_parts, db_parts, dw, db, N, GROUPS=groups, COLS=64)
    return dx, dw, db, tickets

# %% [markdown]
# ## The lock picture
#
# Rows are drawn as a grid with `GROUPS` columns, so each column is one
# buffer and its lock. The first picture is the buffer each row added into
# (by construction, its column). The second is the ticket each row drew: the
# order in which programs of the same buffer got its lock. Programs run in
# parallel on both backends (the CPU backend spreads a launch over its
# threads, a GPU over its multiprocessors), so the order depends on which
# programs started first: on a small launch the CPU backend may keep program
# order and tickets grow down each column; on a GPU the picture shows the
# scramble. The sums do not depend on the order beyond rounding.

# %%
GROUPS = 32
dy = 0.1 * torch.randn(M, N, device=DEVICE, dtype=torch.float16)
dx, dw, db, tickets = layer_norm_backward(dy, x, w, mean, rstd, groups=GROUPS)
rows_shown = (M // GROUPS) * GROUPS
grid_rows = torch.arange(rows_shown, device=DEVICE).view(-1, GROUPS) % GROUPS
tilebook.heatmap(grid_rows[:16], title='buffer (lock) each row adds into, 16 x 32 rows')
tilebook.heatmap(tickets[:rows_shown].view(-1, GROUPS)[:16], title='order in which rows got their lock')
in_order = bool((tickets[:rows_shown].view(-1, GROUPS) == torch.arange(rows_shown // GROUPS, device=DEVICE)[:, None]).all())
print('every lock taken in row order:', in_order)
print('each buffer got', (M + GROUPS - 1) // GROUPS, 'or', M // GROUPS, 'rows; tickets per buffer:',
      sorted(set(int(t) for t in tickets.tolist()))[-1] + 1, 'at most')

# %% [markdown]
# ## Checking the gradients
#
# `torch.nn.functional.layer_norm` records its own backward; we run it on
# copies of the inputs that require gradients and compare.

# %%
xr = x.clone().requires_grad_(True)
wr = w.clone().requires_grad_(True)
br = b.clone().requires_grad_(True)
torch.nn.functional.layer_norm(xr, (N,), wr, br, 1e-5).backward(dy)
torch.testing.assert_close(dx, xr.grad, atol=1e-2, rtol=0)
torch.testing.assert_close(dw, wr.grad, atol=5e-2, rtol=1e-2)
torch.testing.assert_close(db, br.grad, atol=5e-2, rtol=1e-2)
print('dx, dw and db match torch')

# %% [markdown]
# ## As an autograd function
#
# Wrapping the two passes in `torch.autograd.Function` makes our kernels what
# `y.backward(dy)` runs: `forward` saves what `backward` needs with
# `ctx.save_for_backward`, and `backward` returns one gradient per input of
# `forward` (`None` for the ones without).

# %%
class LayerNorm(torch.autograd.Function):

    @staticmethod
    def forward(ctx, x, w, b, eps):
        y, mean, rstd = layer_norm_forward(x, w, b, eps)
        ctx.save_for_backward(x, w, mean, rstd)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, w, mean, rstd = ctx.saved_tensors
        dx, dw, db, _ = layer_norm_backward(dy, x, w, mean, rstd)
        return dx, dw, db, None


xa = x.clone().requires_grad_(True)
wa = w.clone().requires_grad_(True)
ba = b.clone().requires_grad_(True)
LayerNorm.apply(xa, wa, ba, 1e-5).backward(dy)
print('autograd dx matches:', torch.allclose(xa.grad.float(), xr.grad.float(), atol=1e-2))
print('autograd dw matches:', torch.allclose(wa.grad.float(), wr.grad.float(), atol=5e-2, rtol=1e-2))

# %% [markdown]
# ## Speed
#
# Both passes are memory-bound: the forward reads `x` and writes `y`; the
# backward reads `x` and `dy` and writes `dx` (the partial buffers are small).
# Bandwidth below counts those bytes. The reference is tilebook's
# `torch.nn.functional.layer_norm`, composed of tensor operations (the
# repository's benchmark measures PyTorch's own kernel; see
# `bench/NOTES.md`).

# %%
ROWS = 2048 if ON_GPU else 64
WIDTHS = [1024, 4096, 8192] if ON_GPU else [256, 512]


@triton.testing.perf_report([
    triton.testing.Benchmark(
        x_names=['N'], x_vals=WIDTHS, line_arg='provider', line_vals=['kernel', 'torch'],
        line_names=['our kernels', 'torch (tilebook)'], styles=[('blue', '-'), ('green', '-')],
        ylabel='GB/s', plot_name=f'layer-norm-{mode} (M={ROWS}, fp16)', args={'mode': mode})
    for mode in ['forward', 'backward']
])
def bench_layer_norm(N, provider, mode):
    x = torch.randn(ROWS, N, device=DEVICE, dtype=torch.float16)
    w = torch.rand(N, device=DEVICE, dtype=torch.float16)
    b = torch.rand(N, device=DEVICE, dtype=torch.float16)
    dy = torch.randn(ROWS, N, device=DEVICE, dtype=torch.float16)
    if mode == 'forward':
        if provider == 'kernel':
            ms = triton.testing.do_bench(lambda: layer_norm_forward(x, w, b))
        else:
            ms = triton.testing.do_bench(lambda: torch.nn.functional.layer_norm(x, (N,), w, b, 1e-5))
        moved = 2 * x.numel() * x.element_size()
    else:
        if provider == 'kernel':
            _, mean, rstd = layer_norm_forward(x, w, b)
            ms = triton.testing.do_bench(lambda: layer_norm_backward(dy, x, w, mean, rstd))
        else:
            xr = x.clone().requires_grad_(True)
            y = torch.nn.functional.layer_norm(xr, (N,), w, b, 1e-5)
            ms = triton.testing.do_bench(lambda: y.backward(dy, retain_graph=True), grad_to_none=[xr])
        moved = 3 * x.numel() * x.element_size()
    return moved * 1e-9 / (ms * 1e-3)


results = bench_layer_norm.run(print_data=True, show_plots=True, return_df=True)
