# Elementwise math: exp exp2 log log2 sqrt rsqrt sin cos sigmoid abs floor ceil
# fdiv fma where maximum minimum clamp cdiv umulhi, in fp32 and fp16.
@triton.jit
def unary(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    ax = tl.abs(x) + 0.5
    tl.store(out_ptr + 0 * n + offs, tl.exp(x), mask=m)
    tl.store(out_ptr + 1 * n + offs, tl.exp2(x), mask=m)
    tl.store(out_ptr + 2 * n + offs, tl.log(ax), mask=m)
    tl.store(out_ptr + 3 * n + offs, tl.log2(ax), mask=m)
    tl.store(out_ptr + 4 * n + offs, tl.sqrt(ax), mask=m)
    tl.store(out_ptr + 5 * n + offs, tl.rsqrt(ax), mask=m)
    tl.store(out_ptr + 6 * n + offs, tl.sin(x), mask=m)
    tl.store(out_ptr + 7 * n + offs, tl.cos(x), mask=m)
    tl.store(out_ptr + 8 * n + offs, tl.sigmoid(x), mask=m)
    tl.store(out_ptr + 9 * n + offs, tl.abs(x), mask=m)
    tl.store(out_ptr + 10 * n + offs, tl.floor(x * 3), mask=m)
    tl.store(out_ptr + 11 * n + offs, tl.ceil(x * 3), mask=m)
    tl.store(out_ptr + 12 * n + offs, tl.math.exp(x) * 0 + tl.fdiv(x, ax), mask=m)

n = 301
for tdt, tol in [(torch.float32, 1e-5), (torch.float16, 3e-3)]:
    x = torch.randn(n, device=DEVICE).to(tdt)
    out = torch.zeros(13 * n, device=DEVICE, dtype=tdt)
    unary[(triton.cdiv(n, 64),)](x, out, n, BLOCK=64)
    o = out.reshape(13, n)
    xf = x.float()
    axf = torch.abs(xf) + 0.5
    for i, (name, want) in enumerate([("exp", torch.exp(xf)), ("exp2", torch.exp2(xf)), ("log", torch.log(axf)), ("log2", torch.log2(axf)),
                                      ("sqrt", torch.sqrt(axf)), ("rsqrt", torch.rsqrt(axf)), ("sin", torch.sin(xf)), ("cos", torch.cos(xf)),
                                      ("sigmoid", torch.sigmoid(xf)), ("abs", torch.abs(xf)), ("floor", torch.floor((x * 3).float())), ("ceil", torch.ceil((x * 3).float())),
                                      ("fdiv", xf / axf)]):
        check(f"{tdt} tl.{name}", o[i], want.to(tdt), atol=tol, rtol=tol)

@triton.jit
def binary_math(x_ptr, y_ptr, z_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    z = tl.load(z_ptr + offs)
    tl.store(out_ptr + 0 * N + offs, tl.where(x > y, x, y * 2))
    tl.store(out_ptr + 1 * N + offs, tl.maximum(x, y))
    tl.store(out_ptr + 2 * N + offs, tl.minimum(x, y))
    tl.store(out_ptr + 3 * N + offs, tl.clamp(x, -0.5, 0.5))
    tl.store(out_ptr + 4 * N + offs, tl.fma(x, y, z))
    tl.store(out_ptr + 5 * N + offs, tl.where(x > 0, 1.0, 0.0))

N = 128
x = torch.randn(N, device=DEVICE)
y = torch.randn(N, device=DEVICE)
z = torch.randn(N, device=DEVICE)
out = torch.zeros(6 * N, device=DEVICE)
binary_math[(1,)](x, y, z, out, N=N)
o = out.reshape(6, N)
check("tl.where", o[0], torch.where(x > y, x, y * 2))
check("tl.maximum", o[1], torch.maximum(x, y))
check("tl.minimum", o[2], torch.minimum(x, y))
check("tl.clamp", o[3], torch.maximum(torch.minimum(x, torch.full((N,), 0.5)), torch.full((N,), -0.5)))
check("tl.fma", o[4], x * y + z, atol=1e-5)
check("tl.where with scalars", o[5], (x > 0).float())

@triton.jit
def int_math(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, tl.cdiv(x, 7))
    tl.store(out_ptr + N + offs, tl.umulhi(x, y))

x = torch.randint(0, 2 ** 31 - 10, (64,), dtype=torch.int64, device=DEVICE).to(torch.int32)
y = torch.randint(0, 2 ** 31 - 1, (64,), dtype=torch.int64, device=DEVICE).to(torch.int32)
out = torch.zeros(128, dtype=torch.int32, device=DEVICE)
int_math[(1,)](x, y, out, N=64)
check("tl.cdiv", out[:64].long(), torch.tensor([(a + 6) // 7 for a in x.tolist()]))
check("tl.umulhi", out[64:].long() & 0xFFFFFFFF, torch.tensor([(a * b) >> 32 for a, b in zip(x.tolist(), y.tolist())]))
