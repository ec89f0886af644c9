# The surface of Triton's fifth tutorial, in a program of our own: layer
# normalisation forward and backward as a torch.autograd.Function. The
# forward kernel normalises one row per program, walking the row in chunks;
# the backward kernel computes dx and adds each row's share of dw and db into
# one of GROUPS partial buffers under a spin lock (atomic_cas/atomic_xchg),
# and a last kernel sums the partial buffers. Checked against
# torch.nn.functional.layer_norm and its backward with assert_close, then a
# perf_report of the backward pass with do_bench(grad_to_none=...).
import torch

import triton
import triton.language as tl

try:
    import apex  # NVIDIA's fused kernels, when installed (they are not here)
    HAVE_APEX = True
except ModuleNotFoundError:
    HAVE_APEX = False

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def norm_forward(X, Y, W, B, Mean, Rstd, stride, N, eps, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    total = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(0, N, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        total += tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
    mean = tl.sum(total, axis=0) / N
    spread = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(0, N, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        spread += x * x
    var = tl.sum(spread, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for start in range(0, N, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        inside = cols < N
        w = tl.load(W + cols, mask=inside)
        b = tl.load(B + cols, mask=inside)
        x = tl.load(X + cols, mask=inside, other=0.).to(tl.float32)
        tl.store(Y + cols, (x - mean) * rstd * w + b, mask=inside)


@triton.jit
def norm_backward_dx(DX, DY, DW_parts, DB_parts, X, W, Mean, Rstd, Locks, stride, N,
                     GROUPS: tl.constexpr, WIDTH: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, WIDTH)
    inside = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    group = row % GROUPS
    Lock = Locks + group
    Filled = Locks + GROUPS + group
    DW_parts = DW_parts + group * N + cols
    DB_parts = DB_parts + group * N + cols
    x = tl.load(X + cols, mask=inside, other=0).to(tl.float32)
    dy = tl.load(DY + cols, mask=inside, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=inside).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    xhat = tl.where(inside, (x - mean) * rstd, 0.)
    wdy = tl.where(inside, w * dy, 0.)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    tl.store(DX + cols, (wdy - (xhat * c1 + c2)) * rstd, mask=inside)
    dw = (dy * xhat).to(w.dtype)
    db = dy.to(w.dtype)
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    filled = tl.load(Filled)
    if filled == 0:
        tl.atomic_xchg(Filled, 1)
    else:
        dw += tl.load(DW_parts, mask=inside)
        db += tl.load(DB_parts, mask=inside)
    tl.store(DW_parts, dw, mask=inside)
    tl.store(DB_parts, db, mask=inside)
    tl.debug_barrier()
    tl.atomic_xchg(Lock, 0)


@triton.jit
def norm_backward_dwdb(DW_parts, DB_parts, DW, DB, GROUPS, N, ROWS: tl.constexpr, COLS: tl.constexpr):
    cols = tl.program_id(0) * COLS + tl.arange(0, COLS)
    dw = tl.zeros((ROWS, COLS), dtype=tl.float32)
    db = tl.zeros((ROWS, COLS), dtype=tl.float32)
    for first in range(0, GROUPS, ROWS):
        rows = first + tl.arange(0, ROWS)
        m = (rows[:, None] < GROUPS) & (cols[None, :] < N)
        at = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW_parts + at, mask=m, other=0.)
        db += tl.load(DB_parts + at, mask=m, other=0.)
    tl.store(DW + cols, tl.sum(dw, axis=0), mask=cols < N)
    tl.store(DB + cols, tl.sum(db, axis=0), mask=cols < N)


class RowNorm(torch.autograd.Function):

    @staticmethod
    def forward(ctx, x, shape, weight, bias, eps):
        y = torch.empty_like(x)
        rows2d = x.reshape(-1, x.shape[-1])
        M, N = rows2d.shape
        mean = torch.empty((M, ), dtype=torch.float32, device=x.device)
        rstd = torch.empty((M, ), dtype=torch.float32, device=x.device)
        most = 65536 // x.element_size()
        width = min(most, triton.next_power_of_2(N))
        if N > width:
            raise RuntimeError("rows wider than 64 KB are not supported")
        warps = min(max(width // 256, 1), 8)
        norm_forward[(M, )](rows2d, y, weight, bias, mean, rstd, rows2d.stride(0), N, eps,
                            CHUNK=width, num_warps=warps)
        ctx.save_for_backward(x, weight, bias, mean, rstd)
        ctx.width = width
        ctx.warps = warps
        ctx.eps = eps
        return y

    @staticmethod
    def backward(ctx, dy):
        x, w, b, mean, rstd = ctx.saved_tensors
        N = w.shape[0]
        groups = 64
        if N <= 8192: groups = 96
        if N <= 4096: groups = 128
        if N <= 1024: groups = 256
        locks = torch.zeros(2 * groups, dtype=torch.int32, device=w.device)
        dw_parts = torch.zeros((groups, N), dtype=x.dtype, device=w.device)
        db_parts = torch.zeros((groups, N), dtype=x.dtype, device=w.device)
        dw = torch.empty((N, ), dtype=w.dtype, device=w.device)
        db = torch.empty((N, ), dtype=w.dtype, device=w.device)
        dx = torch.empty_like(dy)
        rows2d = x.reshape(-1, x.shape[-1])
        M, N = rows2d.shape
        norm_backward_dx[(M, )](dx, dy, dw_parts, db_parts, x, w, mean, rstd, locks, rows2d.stride(0), N,
                                WIDTH=ctx.width, GROUPS=groups, num_warps=ctx.warps)
        grid = lambda meta: (triton.cdiv(N, meta['COLS']), )
        norm_backward_dwdb[grid](dw_parts, db_parts, dw, db, min(groups, M), N, ROWS=32, COLS=128)
        return dx, None, dw, db, None


row_norm = RowNorm.apply


def check(M, N, dtype, eps=1e-5, device=DEVICE):
    w_shape = (N, )
    weight = torch.rand(w_shape, dtype=dtype, device=device, requires_grad=True)
    bias = torch.rand(w_shape, dtype=dtype, device=device, requires_grad=True)
    x = -2.3 + 0.5 * torch.randn((M, N), dtype=dtype, device=device)
    dy = .1 * torch.randn_like(x)
    x.requires_grad_(True)
    y_mine = row_norm(x, w_shape, weight, bias, eps)
    y_ref = torch.nn.functional.layer_norm(x, w_shape, weight, bias, eps).to(dtype)
    y_mine.backward(dy, retain_graph=True)
    dx_mine, dw_mine, db_mine = [t.grad.clone() for t in [x, weight, bias]]
    x.grad, weight.grad, bias.grad = None, None, None
    y_ref.backward(dy, retain_graph=True)
    dx_ref, dw_ref, db_ref = [t.grad.clone() for t in [x, weight, bias]]
    torch.testing.assert_close(y_mine, y_ref, atol=1e-2, rtol=0)
    torch.testing.assert_close(dx_mine, dx_ref, atol=1e-2, rtol=0)
    torch.testing.assert_close(db_mine, db_ref, atol=1e-2, rtol=0)
    torch.testing.assert_close(dw_mine, dw_ref, atol=1e-2, rtol=0)
    print(f"layer norm {M}x{N} {dtype}: forward and backward match torch")


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=['N'],
        x_vals=[512 * i for i in range(2, 32)],
        line_arg='impl',
        line_vals=['kernel', 'torch'] + (['apex'] if HAVE_APEX else []),
        line_names=['Kernel', 'Torch'] + (['Apex'] if HAVE_APEX else []),
        styles=[('blue', '-'), ('green', '-'), ('orange', '-')],
        ylabel='GB/s',
        plot_name='row-norm-backward',
        args={'M': 4096, 'dtype': torch.float16, 'mode': 'backward'},
    ))
def throughput(M, N, dtype, impl, mode='backward', eps=1e-5, device=DEVICE):
    w_shape = (N, )
    weight = torch.rand(w_shape, dtype=dtype, device=device, requires_grad=True)
    bias = torch.rand(w_shape, dtype=dtype, device=device, requires_grad=True)
    x = -2.3 + 0.5 * torch.randn((M, N), dtype=dtype, device=device)
    dy = .1 * torch.randn_like(x)
    x.requires_grad_(True)
    q = [0.5, 0.2, 0.8]
    if impl == 'kernel':
        forward = lambda: row_norm(x, w_shape, weight, bias, eps)
    if impl == 'torch':
        forward = lambda: torch.nn.functional.layer_norm(x, w_shape, weight, bias, eps)
    if mode == 'forward':
        to_gbps = lambda ms: 2 * x.numel() * x.element_size() * 1e-9 / (ms * 1e-3)
        mid, low, high = triton.testing.do_bench(forward, quantiles=q, rep=500)
    if mode == 'backward':
        y = forward()
        to_gbps = lambda ms: 3 * x.numel() * x.element_size() * 1e-9 / (ms * 1e-3)
        mid, low, high = triton.testing.do_bench(lambda: y.backward(dy, retain_graph=True), quantiles=q,
                                                 grad_to_none=[x], rep=500)
    return to_gbps(mid), to_gbps(high), to_gbps(low)


check(1151, 8192, torch.float16)
check(97, 300, torch.float32)
throughput.run(save_path='.', print_data=True)
