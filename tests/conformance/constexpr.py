# Constexpr ints, floats, bools, strings, dtypes and @jit functions as
# arguments; globals; the legacy **meta form; builtins on constexprs;
# integer specialization (== 1 becomes a constant).
SCALE = 3


@triton.jit
def double(x):
    return x * 2


@triton.jit
def triple(x):
    return x * 3


@triton.jit
def cfg(x_ptr, out_ptr, stride, N: tl.constexpr, F: tl.constexpr, USE: tl.constexpr, MODE: tl.constexpr,
        DT: tl.constexpr, FN: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs * stride)
    if MODE == "add":
        y = x + F
    else:
        y = x - F
    if USE:
        y = FN(y)
    y = y * SCALE + min(N, 4) + max(1, 2) + len((1, 2, 3))
    tl.static_assert(float('inf') > 1e30)
    tl.store(out_ptr + offs, y.to(DT))

x = torch.randn(32, device=DEVICE)
for mode, use, fn, dt in [("add", True, double, tl.float32), ("sub", False, triple, tl.float16), ("sub", True, triple, tl.float32)]:
    out = torch.zeros(32, dtype=torch.float32 if dt == tl.float32 else torch.float16, device=DEVICE)
    cfg[(1,)](x, out, 1, N=32, F=0.5, USE=use, MODE=mode, DT=dt, FN=fn)
    y = x + 0.5 if mode == "add" else x - 0.5
    if use:
        y = y * (2 if fn is double else 3)
    check(f"constexpr {mode} {use}", out, (y * 3 + 4 + 2 + 3).to(out.dtype), atol=1e-2)
assert cfg.compile_count == 3, cfg.compile_count

@triton.jit
def legacy(X, Y, N, **meta):
    offs = tl.arange(0, meta['BLOCK'])
    m = offs < N
    tl.store(Y + offs, tl.load(X + offs, mask=m) + meta['BIAS'], mask=m)

y = torch.zeros(32, device=DEVICE)
legacy[(1,)](x, y, 30, BLOCK=32, BIAS=1.5)
check("**meta kernel", y[:30], x[:30] + 1.5)
check("**meta kernel mask", y[30:], torch.zeros(2))
