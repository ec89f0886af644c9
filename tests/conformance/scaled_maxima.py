# Row maxima and minima of scaled dot products (attention's
# `max(q @ k.T * scale)`): on the GPU they are taken on the unscaled
# products where 0 < scale < inf and the subtractions that follow become
# one fma each (codegen/scaled.rs), on the scaled products otherwise. Every
# scale must give torch's answer: positive, negative, zero, infinite, NaN.
@triton.jit
def scaled_rows(q_ptr, k_ptr, mx_ptr, mn_ptr, p_ptr, d_ptr, scale, M: tl.constexpr, N: tl.constexpr,
                D: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    k = tl.load(k_ptr + rn[:, None] * D + rd[None, :])
    s = tl.dot(q, tl.trans(k)) * scale
    mx = tl.max(s, 1)
    mn = tl.min(s, axis=1)
    tl.store(mx_ptr + rm, mx)
    tl.store(mn_ptr + rm, mn)
    tl.store(p_ptr + rm[:, None] * N + rn[None, :], tl.math.exp2(s - mx[:, None]))
    # exp2 of it, not the difference itself: where the score is the row's
    # minimum the GPU's fma leaves the product's rounding error (about 1e-5
    # at these magnitudes) where the CPU's separate multiply leaves 0.
    tl.store(d_ptr + rm[:, None] * N + rn[None, :], tl.math.exp2(mn[:, None] - s))


def close(name, got, want, tol):
    assert got.shape == want.shape, f"{name}: shape {got.shape} != {want.shape}"
    ok = torch.allclose(got.double(), want.double(), atol=tol, rtol=tol, equal_nan=True)
    bad = ~torch.isclose(got.double(), want.double(), atol=tol, rtol=tol, equal_nan=True)
    assert ok, f"{name}: got {got[bad][:6].tolist()}, want {want[bad][:6].tolist()}"


for M, N, D, warps in [(64, 64, 64, 4), (128, 64, 32, 8)]:
    # Small positive integers: every dot is exact on both backends and the
    # host, and none is zero, so an infinite scale makes every score the
    # same infinity (no NaN beside numbers in a row: tl.max ignores such a
    # NaN, torch.max here returns it; row_reductions.py covers that case).
    q = torch.randint(1, 5, (M, D), device=DEVICE).half()
    k = torch.randint(1, 5, (N, D), device=DEVICE).half()
    dots = q.float() @ k.float().T
    for scale in [0.37, 1.0, -0.7, 0.0, float("inf"), float("-inf"), float("nan")]:
        mx = torch.zeros(M, device=DEVICE)
        mn = torch.zeros(M, device=DEVICE)
        p = torch.zeros(M, N, device=DEVICE)
        d = torch.zeros(M, N, device=DEVICE)
        scaled_rows[(1,)](q, k, mx, mn, p, d, scale, M=M, N=N, D=D, num_warps=warps)
        s = dots * scale
        tag = f"scale {scale}, [{M}, {N}] on {warps} warps"
        close(f"row max, {tag}", mx, s.max(dim=1)[0], 1e-3)
        close(f"row min, {tag}", mn, s.min(dim=1)[0], 1e-3)
        close(f"exp2(s - max), {tag}", p, torch.exp2(s - s.max(dim=1, keepdim=True)[0]), 2e-3)
        close(f"exp2(min - s), {tag}", d, torch.exp2(s.min(dim=1, keepdim=True)[0] - s), 2e-3)
print("scaled row maxima: every scale agrees")
