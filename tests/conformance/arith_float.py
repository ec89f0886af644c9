# + - * / % ** and negation on fp32, fp16, bf16, fp64 (odd sizes, masked).
@triton.jit
def farith(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m, other=1.0)
    tl.store(out_ptr + 0 * n + offs, x + y, mask=m)
    tl.store(out_ptr + 1 * n + offs, x - y, mask=m)
    tl.store(out_ptr + 2 * n + offs, x * y, mask=m)
    tl.store(out_ptr + 3 * n + offs, x / y, mask=m)
    tl.store(out_ptr + 4 * n + offs, -x, mask=m)
    tl.store(out_ptr + 5 * n + offs, x * 2.5 - 1, mask=m)

n = 777
for tdt, tol in [(torch.float32, 1e-6), (torch.float16, 2e-3), (torch.bfloat16, 2e-2), (torch.float64, 1e-12)]:
    x = torch.randn(n, device=DEVICE).to(tdt)
    y = (torch.rand(n, device=DEVICE) + 0.5).to(tdt)
    out = torch.zeros(6 * n, device=DEVICE, dtype=tdt)
    farith[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    o = out.reshape(6, n)
    check(f"{tdt} +", o[0], (x.double() + y.double()).to(tdt), atol=tol, rtol=tol)
    check(f"{tdt} -", o[1], (x.double() - y.double()).to(tdt), atol=tol, rtol=tol)
    check(f"{tdt} *", o[2], (x.double() * y.double()).to(tdt), atol=tol, rtol=tol)
    check(f"{tdt} /", o[3], (x.double() / y.double()).to(tdt), atol=tol, rtol=tol)
    check(f"{tdt} neg", o[4], -x, atol=tol)
    check(f"{tdt} scalar ops", o[5], (x.double() * 2.5 - 1).to(tdt), atol=max(tol, 1e-6), rtol=tol)

@triton.jit
def fmodpow(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, x % y)
    tl.store(out_ptr + N + offs, tl.abs(x) ** 1.5)

x = torch.randn(64, device=DEVICE) * 5
y = torch.rand(64, device=DEVICE) + 0.5
out = torch.zeros(128, device=DEVICE)
fmodpow[(1,)](x, y, out, N=64)
# Triton's float % keeps the dividend's sign (C fmod).
fm = x - y * torch.where(x >= 0, torch.floor(x / y), torch.ceil(x / y))
check("float %", out[:64], fm, atol=1e-5)
check("float **", out[64:], torch.abs(x) ** 1.5, atol=1e-4, rtol=1e-5)
