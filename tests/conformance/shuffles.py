# Moving elements within a block: tl.gather, tl.flip, tl.sort, tl.join,
# tl.split, tl.interleave, tl.cat, tl.histogram, tl.associative_scan (with
# our own combine functions, tuple-valued too) and a tuple-valued tl.reduce.
# Ragged sizes come in through masked loads; every dtype each op takes.

FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
INTS = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]


def sample(shape, dtype):
    if dtype.is_floating_point:
        return torch.randn(shape, device=DEVICE).to(dtype)
    hi = 100 if dtype != torch.uint8 else 200
    lo = -100 if dtype != torch.uint8 else 0
    return torch.randint(lo, hi, shape, device=DEVICE).to(dtype)


def same(name, got, want):
    assert got.shape == want.shape, f"{name}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{name}: dtype {got.dtype} != {want.dtype}"
    assert torch.equal(got, want), f"{name}: got {got.tolist()} want {want.tolist()}"


@triton.jit
def gather_rows(x_ptr, i_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    x = tl.load(x_ptr + rows * N + tl.arange(0, N)[None, :])
    idx = tl.load(i_ptr + rows * K + tl.arange(0, K)[None, :])
    tl.store(o_ptr + rows * K + tl.arange(0, K)[None, :], tl.gather(x, idx, 1))


@triton.jit
def gather_cols(x_ptr, i_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    cols = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + cols)
    idx = tl.load(i_ptr + tl.arange(0, K)[:, None] * N + cols)
    tl.store(o_ptr + tl.arange(0, K)[:, None] * N + cols, tl.gather(x, idx, axis=0))


for dtype in [torch.float32, torch.float16, torch.int32, torch.int64, torch.int8]:
    for itype in [torch.int32, torch.int64]:
        x = sample((4, 16), dtype)
        idx = torch.randint(0, 16, (4, 32), device=DEVICE).to(itype)
        out = torch.zeros((4, 32), device=DEVICE, dtype=dtype)
        gather_rows[(1,)](x, idx, out, M=4, N=16, K=32)
        want = torch.tensor([[x[r, c].item() for c in idx[r].tolist()] for r in range(4)], dtype=dtype)
        same(f"gather axis 1 {dtype} {itype}", out.cpu(), want)
x = sample((16, 8), torch.float32)
idx = torch.randint(0, 16, (4, 8), device=DEVICE)
out = torch.zeros((4, 8), device=DEVICE)
gather_cols[(1,)](x, idx, out, M=16, N=8, K=4)
want = torch.tensor([[x[idx[r, c].item(), c].item() for c in range(8)] for r in range(4)])
same("gather axis 0", out.cpu(), want)


@triton.jit
def flips(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(o_ptr + offs, tl.flip(x))
    tl.store(o_ptr + M * N + offs, tl.flip(x, 0))
    tl.store(o_ptr + 2 * M * N + offs, x.flip(dim=-1))


for dtype in FLOATS + INTS:
    for (m, n) in [(1, 2), (4, 32), (8, 8)]:
        x = sample((m, n), dtype)
        out = torch.zeros((3, m, n), device=DEVICE, dtype=dtype)
        flips[(1,)](x, out, M=m, N=n)
        same(f"flip last {dtype} {m}x{n}", out[0], x.flip(1))
        same(f"flip dim 0 {dtype} {m}x{n}", out[1], x.flip(0))
        same(f"x.flip(dim=-1) {dtype} {m}x{n}", out[2], x.flip(-1))


@triton.jit
def sorts(x_ptr, o_ptr, n, fill, ROWS: tl.constexpr, BLOCK: tl.constexpr, DESC: tl.constexpr):
    cols = tl.arange(0, BLOCK)[None, :]
    offs = tl.arange(0, ROWS)[:, None] * n + cols
    mask = cols < n
    x = tl.load(x_ptr + offs, mask=mask, other=fill)
    tl.store(o_ptr + offs, tl.sort(x, descending=DESC), mask=mask)


for dtype in FLOATS + INTS:
    for n, block in [(2, 2), (100, 128), (32, 32), (5, 8)]:
        for desc in [False, True]:
            x = sample((4, n), dtype)
            if dtype.is_floating_point:
                fill = float("-inf") if desc else float("inf")
            else:
                info = {torch.int8: (-128, 127), torch.int16: (-32768, 32767),
                        torch.int32: (-2**31, 2**31 - 1), torch.int64: (-2**63, 2**63 - 1),
                        torch.uint8: (0, 255)}[dtype]
                fill = info[0] if desc else info[1]
            out = torch.zeros((4, n), device=DEVICE, dtype=dtype)
            sorts[(1,)](x, out, n, fill, ROWS=4, BLOCK=block, DESC=desc)
            same(f"sort {dtype} n={n} descending={desc}", out, torch.sort(x, dim=1, descending=desc).values)


@triton.jit
def pairs(a_ptr, b_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    j = tl.join(a, b)
    two = tl.arange(0, 2)[None, :]
    tl.store(o_ptr + offs[:, None] * 2 + two, j)
    lo, hi = tl.split(j)
    tl.store(o_ptr + 2 * N + offs, lo)
    tl.store(o_ptr + 3 * N + offs, hi)
    tl.store(o_ptr + 4 * N + tl.arange(0, 2 * N), tl.interleave(b, a))
    tl.store(o_ptr + 6 * N + tl.arange(0, 2 * N), tl.cat(a, b, can_reorder=True))
    s0, s1 = tl.split(tl.join(tl.min(a, 0), tl.max(b, 0)))
    tl.store(o_ptr + 8 * N, s0)
    tl.store(o_ptr + 8 * N + 1, s1)
    k = tl.join(a, 7)
    tl.store(o_ptr + 8 * N + 2 + offs, k.split()[1])


for dtype in [torch.float16, torch.bfloat16, torch.float32, torch.int8, torch.int32, torch.int64]:
    n = 16
    a = sample((n,), dtype)
    b = sample((n,), dtype)
    out = torch.zeros(9 * n + 2, device=DEVICE, dtype=dtype)
    pairs[(1,)](a, b, out, N=n)
    same(f"join {dtype}", out[:2 * n].reshape(n, 2), torch.stack([a, b], dim=1))
    same(f"split {dtype}", out[2 * n:4 * n], torch.cat([a, b]))
    same(f"interleave {dtype}", out[4 * n:6 * n], torch.stack([b, a], dim=1).reshape(2 * n))
    same(f"cat {dtype}", out[6 * n:8 * n], torch.cat([a, b]))
    same(f"split of joined scalars {dtype}", out[8 * n + 1:8 * n + 2], b.max().reshape(1))
    same(f"join with a number {dtype}", out[8 * n + 2:9 * n + 2], torch.full((n,), 7, dtype=dtype))
    same(f"split of joined scalars {dtype} (first)", out[8 * n:8 * n + 1], a.min().reshape(1))


@triton.jit
def cat2d(a_ptr, b_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    tl.store(o_ptr + tl.arange(0, 2 * M)[:, None] * N + tl.arange(0, N)[None, :], tl.cat(a, b, dim=0))
    o2 = o_ptr + 2 * M * N
    tl.store(o2 + tl.arange(0, M)[:, None] * 2 * N + tl.arange(0, 2 * N)[None, :], tl.cat(a, b, dim=1))


a = sample((4, 8), torch.float32)
b = sample((4, 8), torch.float32)
out = torch.zeros(128, device=DEVICE)
cat2d[(1,)](a, b, out, M=4, N=8)
same("cat dim 0", out[:64].reshape(8, 8), torch.cat([a, b], 0))
same("cat dim 1", out[64:].reshape(4, 16), torch.cat([a, b], 1))


@triton.jit
def hist(x_ptr, o_ptr, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(o_ptr + tl.arange(0, BINS), tl.histogram(x, BINS, mask=offs < n))


for dtype in [torch.int32, torch.int64, torch.int16, torch.uint8]:
    for n, block, bins in [(100, 128, 16), (64, 64, 8), (3, 4, 4)]:
        x = torch.randint(0, bins, (n,), device=DEVICE).to(dtype)
        out = torch.zeros(bins, device=DEVICE, dtype=torch.int32)
        hist[(1,)](x, out, n, BINS=bins, BLOCK=block)
        want = torch.tensor([x.tolist().count(i) for i in range(bins)], dtype=torch.int32)
        same(f"histogram {dtype} n={n} bins={bins}", out.cpu(), want)


@triton.jit
def add_fn(a, b):
    return a + b


@triton.jit
def max_fn(a, b):
    return tl.maximum(a, b)


@triton.jit
def affine_fn(a1, b1, a2, b2):
    # Composition of x -> a*x + b maps: first (a1, b1), then (a2, b2).
    return a1 * a2, b1 * a2 + b2


@triton.jit
def scans(x_ptr, a_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    tl.store(o_ptr + offs, tl.associative_scan(x, 0, add_fn), mask=m)
    # Padding lanes come after the data, so a reversed scan sees them first.
    xr = tl.load(x_ptr + offs, mask=m, other=-1000000)
    tl.store(o_ptr + BLOCK + offs, tl.associative_scan(xr, 0, max_fn, reverse=True), mask=m)
    a = tl.load(a_ptr + offs, mask=m, other=1)
    _, b = tl.associative_scan((a, x), 0, affine_fn)
    tl.store(o_ptr + 2 * BLOCK + offs, b, mask=m)


for n, block in [(1, 2), (100, 128), (64, 64)]:
    x = torch.randint(-9, 10, (n,), device=DEVICE)
    a = torch.randint(-2, 3, (n,), device=DEVICE)
    out = torch.zeros(3 * block, device=DEVICE, dtype=torch.int64)
    scans[(1,)](x, a, out, n, BLOCK=block)
    xs, as_ = x.tolist(), a.tolist()
    same(f"associative_scan add n={n}", out[:n], torch.cumsum(x, 0))
    rev = [max(xs[i:]) for i in range(n)]
    same(f"associative_scan max reverse n={n}", out[block:block + n].cpu(), torch.tensor(rev))
    acc, rec = 0, []
    for ai, xi in zip(as_, xs):
        acc = acc * ai + xi
        rec.append(acc)
    same(f"associative_scan tuple (linear recurrence) n={n}", out[2 * block:2 * block + n].cpu(), torch.tensor(rec))


@triton.jit
def fscan(x_ptr, o_ptr, N: tl.constexpr):
    rows = tl.arange(0, 4)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows)
    tl.store(o_ptr + rows, tl.associative_scan(x, 1, add_fn))


x = torch.randn(4, 32, device=DEVICE)
out = torch.zeros(4, 32, device=DEVICE)
fscan[(1,)](x, out, N=32)
check("associative_scan float rows", out, torch.cumsum(x, 1), atol=1e-4)


@triton.jit
def welford_fn(m1, s1, c1, m2, s2, c2):
    c = c1 + c2
    w = tl.where(c == 0, 0.0, c2 / tl.where(c == 0, 1.0, c))
    d = m2 - m1
    return m1 + d * w, s1 + s2 + d * d * c1 * w, c


@triton.jit
def welford(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    mean, m2, cnt = tl.reduce((x, tl.zeros_like(x), m.to(tl.float32)), 0, welford_fn)
    tl.store(o_ptr, mean)
    tl.store(o_ptr + 1, m2 / cnt)


x = torch.randn(100, device=DEVICE) * 3 + 1
out = torch.zeros(2, device=DEVICE)
welford[(1,)](x, out, 100, BLOCK=128)
check("Welford mean (tuple tl.reduce)", out[0], x.mean(), atol=1e-4)
check("Welford variance (tuple tl.reduce)", out[1], x.var(unbiased=False), atol=1e-3, rtol=1e-4)
