# Broadcasting, [:, None] / [None, :], expand_dims, broadcast_to, reshape,
# view, trans / .T, permute.
@triton.jit
def outer(a_ptr, b_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    a = tl.load(a_ptr + tl.arange(0, M))
    b = tl.load(b_ptr + tl.arange(0, N))
    prod = a[:, None] * b[None, :]
    plus = tl.expand_dims(a, 1) + tl.expand_dims(b, 0)
    bc = tl.broadcast_to(a[:, None], (M, N))
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(out_ptr + offs, prod)
    tl.store(out_ptr + M * N + offs, plus)
    tl.store(out_ptr + 2 * M * N + offs, bc)

a = torch.randn(8, device=DEVICE)
b = torch.randn(16, device=DEVICE)
out = torch.zeros(3 * 8 * 16, device=DEVICE)
outer[(1,)](a, b, out, M=8, N=16)
o = out.reshape(3, 8, 16)
check("a[:, None] * b[None, :]", o[0], a[:, None] * b[None, :])
check("expand_dims + broadcasting", o[1], a[:, None] + b[None, :])
check("broadcast_to", o[2], a[:, None] + b[None, :] * 0)

@triton.jit
def reshapes(x_ptr, out_ptr):
    offs = tl.arange(0, 8)[:, None] * 4 + tl.arange(0, 4)[None, :]
    x = tl.load(x_ptr + offs)
    t = tl.trans(x)
    t2 = x.T
    r = tl.reshape(x, (4, 8))
    v = tl.view(x, (32,))
    o = tl.arange(0, 4)[:, None] * 8 + tl.arange(0, 8)[None, :]
    tl.store(out_ptr + o, t)
    tl.store(out_ptr + 32 + o, t2)
    tl.store(out_ptr + 64 + o, r)
    tl.store(out_ptr + 96 + tl.arange(0, 32), v)

x = torch.randn(8, 4, device=DEVICE)
out = torch.zeros(128, device=DEVICE)
reshapes[(1,)](x, out)
check("tl.trans", out[:32].reshape(4, 8), x.T)
check(".T", out[32:64].reshape(4, 8), x.T)
check("tl.reshape", out[64:96].reshape(4, 8), x.reshape(4, 8))
check("tl.view", out[96:], x.reshape(32))

@triton.jit
def perm3(x_ptr, out_ptr):
    i = tl.arange(0, 2)[:, None, None]
    j = tl.arange(0, 4)[None, :, None]
    k = tl.arange(0, 8)[None, None, :]
    x = tl.load(x_ptr + i * 32 + j * 8 + k)
    p = tl.permute(x, (2, 0, 1))
    a = tl.arange(0, 8)[:, None, None]
    b = tl.arange(0, 2)[None, :, None]
    c = tl.arange(0, 4)[None, None, :]
    tl.store(out_ptr + a * 8 + b * 4 + c, p)

x = torch.randn(2, 4, 8, device=DEVICE)
out = torch.zeros(64, device=DEVICE)
perm3[(1,)](x, out)
check("tl.permute", out.reshape(8, 2, 4), x.permute(2, 0, 1))

# A square block keeps its type when transposed; the values must still move.
@triton.jit
def square_trans(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.trans(x))
    tl.store(out_ptr + N * N + offs, x.T + x)

x = torch.randn(16, 16, device=DEVICE)
out = torch.zeros(2 * 256, device=DEVICE)
square_trans[(1,)](x, out, N=16)
check("tl.trans of a square block", out[:256].reshape(16, 16), x.T)
check("x.T + x of a square block", out[256:].reshape(16, 16), x.T + x)
