# Reductions over the last axis of 2-D and 3-D blocks at many widths and
# warp counts: on the GPU a row whose elements sit within one warp is
# combined by shuffles (rows of 1 to 32 lanes), wider rows take shared
# memory; every result must agree with torch's either way. fp16 inputs are
# widened before the sum (as attention's backward does), int32 sums stay
# exact, max/min see negative rows.
@triton.jit
def rows2d(x_ptr, s_ptr, mx_ptr, mn_ptr, i_ptr, si_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    offs = rm[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs).to(tl.float32)
    tl.store(s_ptr + rm, tl.sum(x * x, axis=1))
    tl.store(mx_ptr + rm, tl.max(x, axis=1))
    tl.store(mn_ptr + rm, tl.min(-x, 1))
    xi = tl.load(i_ptr + offs)
    tl.store(si_ptr + rm, tl.sum(xi, axis=1))


for M, N, warps in [(64, 64, 4), (16, 8, 1), (8, 256, 2), (32, 512, 4), (128, 16, 8), (4, 1024, 8),
                    (2, 32, 4), (64, 2, 2)]:
    x = torch.randn(M, N, device=DEVICE).half()
    xi = torch.randint(-1000, 1000, (M, N), dtype=torch.int32, device=DEVICE)
    s = torch.zeros(M, device=DEVICE)
    mx = torch.zeros(M, device=DEVICE)
    mn = torch.zeros(M, device=DEVICE)
    si = torch.zeros(M, dtype=torch.int32, device=DEVICE)
    rows2d[(1,)](x, s, mx, mn, xi, si, M=M, N=N, num_warps=warps)
    xf = x.float()
    tag = f"[{M}, {N}] on {warps} warps"
    check(f"sum of squares {tag}", s, (xf * xf).sum(dim=1), atol=1e-3, rtol=1e-4)
    check(f"max {tag}", mx, xf.max(dim=1)[0])
    check(f"min {tag}", mn, (-xf).min(dim=1)[0])
    check(f"int32 sum {tag}", si, xi.sum(dim=1).int())


@triton.jit
def rows3d(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    ra = tl.arange(0, A)[:, None, None]
    rb = tl.arange(0, B)[None, :, None]
    rc = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + ra * B * C + rb * C + rc)
    m = tl.max(x, axis=2)
    tl.store(out_ptr + tl.arange(0, A)[:, None] * B + tl.arange(0, B)[None, :], m)


x = torch.randn(2, 8, 64, device=DEVICE)
out = torch.zeros(2, 8, device=DEVICE)
rows3d[(1,)](x, out, A=2, B=8, C=64)
check("max over the last axis of [2, 8, 64]", out, x.max(dim=2)[0])


# NaN beside numbers: tl.max, tl.min and tl.maximum give the number (the
# GPU's max.f32, Triton's maxnumf); NaN only where every operand is NaN. The
# CPU backend returned NaN here until session 49.
@triton.jit
def nan_rows(x_ptr, y_ptr, mx_ptr, mn_ptr, e_ptr, N: tl.constexpr):
    rm = tl.arange(0, 4)
    offs = rm[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(mx_ptr + rm, tl.max(x, axis=1))
    tl.store(mn_ptr + rm, tl.min(x, axis=1))
    tl.store(e_ptr + offs, tl.maximum(x, tl.load(y_ptr + offs)))


nan = float("nan")
x = torch.randn(4, 32, device=DEVICE)
x[0, 3] = nan
x[1, :] = nan
x[2, ::2] = nan
y = torch.randn(4, 32, device=DEVICE)
y[0, 3] = nan
y[3, 5] = nan
mx = torch.zeros(4, device=DEVICE)
mn = torch.zeros(4, device=DEVICE)
e = torch.zeros(4, 32, device=DEVICE)
nan_rows[(1,)](x, y, mx, mn, e, N=32)
isn = x != x
want_mx = torch.where(isn, torch.full_like(x, float("-inf")), x).max(dim=1)[0]
want_mn = torch.where(isn, torch.full_like(x, float("inf")), x).min(dim=1)[0]
all_nan = isn.all(dim=1)
want_mx = torch.where(all_nan, torch.full_like(want_mx, nan), want_mx)
want_mn = torch.where(all_nan, torch.full_like(want_mn, nan), want_mn)
want_e = torch.where(isn, y, torch.where(y != y, x, torch.maximum(x, y)))
assert torch.allclose(mx, want_mx, equal_nan=True), f"max with NaN: {mx.tolist()} != {want_mx.tolist()}"
assert torch.allclose(mn, want_mn, equal_nan=True), f"min with NaN: {mn.tolist()} != {want_mn.tolist()}"
assert torch.allclose(e, want_e, equal_nan=True), "tl.maximum with NaN"
