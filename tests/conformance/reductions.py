# max/min/sum/argmax/argmin along axis 0, 1 and all, with keep_dims; cumsum;
# tl.reduce with a @jit combine function; xor_sum; integer sums widen.
@triton.jit
def reds(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    rn = tl.arange(0, N)
    rm = tl.arange(0, M)
    tl.store(out_ptr + rn, tl.max(x, axis=0))
    tl.store(out_ptr + N + rm, tl.min(x, axis=1))
    tl.store(out_ptr + N + M + rn, tl.sum(x, axis=0))
    tl.store(out_ptr + 2 * N + M + rm, tl.argmax(x, axis=1).to(tl.float32))
    tl.store(out_ptr + 2 * N + 2 * M + rn, tl.argmin(x, axis=0).to(tl.float32))
    tl.store(out_ptr + 3 * N + 2 * M, tl.sum(x))
    tl.store(out_ptr + 3 * N + 2 * M + 1, tl.max(x))
    k = tl.sum(x, axis=1, keep_dims=True)
    tl.static_assert(k.shape[0] == M and k.shape[1] == 1)
    tl.store(out_ptr + 3 * N + 2 * M + 2 + rm[:, None], k)

M, N = 16, 32
x = torch.randn(M, N, device=DEVICE)
out = torch.zeros(3 * N + 3 * M + 2, device=DEVICE)
reds[(1,)](x, out, M=M, N=N)
o = 0
check("max axis 0", out[0:N], x.max(dim=0)[0]); o = N
check("min axis 1", out[o:o + M], x.min(dim=1)[0]); o += M
check("sum axis 0", out[o:o + N], x.sum(dim=0), atol=1e-5); o += N
check("argmax axis 1", out[o:o + M], x.argmax(dim=1).float()); o += M
check("argmin axis 0", out[o:o + N], x.argmin(dim=0).float()); o += N
check("sum all", out[o:o + 1], x.sum().reshape(1), atol=1e-4)
check("max all", out[o + 1:o + 2], x.max().reshape(1))
check("sum keep_dims", out[o + 2:o + 2 + M], x.sum(dim=1), atol=1e-5)

@triton.jit
def scans(x_ptr, out_ptr, i_ptr, iout_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.cumsum(x, axis=0))
    i = tl.load(i_ptr + offs)
    tl.store(iout_ptr + offs, tl.cumsum(i, 0))

x = torch.randn(128, device=DEVICE)
i = torch.randint(-5, 5, (128,), dtype=torch.int8, device=DEVICE)
out = torch.zeros(128, device=DEVICE)
iout = torch.zeros(128, dtype=torch.int32, device=DEVICE)
scans[(1,)](x, out, i, iout, N=128)
check("cumsum fp32", out, torch.cumsum(x, 0), atol=1e-4)
check("cumsum int8 widens to int32", iout, torch.cumsum(i.long(), 0))

@triton.jit
def add_sq(a, b):
    return a + b * 0 + b

@triton.jit
def maxabs(a, b):
    return tl.maximum(tl.abs(a), tl.abs(b))

@triton.jit
def custom(x_ptr, out_ptr, i_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(out_ptr + tl.arange(0, M), tl.reduce(x, 1, add_sq))
    tl.store(out_ptr + M + tl.arange(0, N), tl.reduce(x, 0, maxabs))
    ix = tl.load(i_ptr + tl.arange(0, N))
    tl.store(out_ptr + M + N, tl.xor_sum(ix, axis=0).to(tl.float32))

x = torch.randn(8, 16, device=DEVICE)
ix = torch.randint(0, 1000, (16,), dtype=torch.int32, device=DEVICE)
out = torch.zeros(8 + 16 + 1, device=DEVICE)
custom[(1,)](x, out, ix, M=8, N=16)
check("tl.reduce sum", out[:8], x.sum(dim=1), atol=1e-5)
check("tl.reduce max |x|", out[8:24], torch.abs(x).max(dim=0)[0])
xs = 0
for v in ix.tolist():
    xs = xs ^ v
check("xor_sum", out[24:], torch.tensor([float(xs)]))
