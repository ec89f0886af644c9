# Integer // % & | ^ ~ << >> (C semantics for negative // and %), comparisons,
# and logical and/or/not on blocks, in several integer dtypes.
@triton.jit
def iarith(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + 0 * N + offs, x // y)
    tl.store(out_ptr + 1 * N + offs, x % y)
    tl.store(out_ptr + 2 * N + offs, x & y)
    tl.store(out_ptr + 3 * N + offs, x | y)
    tl.store(out_ptr + 4 * N + offs, x ^ y)
    tl.store(out_ptr + 5 * N + offs, ~x)
    tl.store(out_ptr + 6 * N + offs, x << 2)
    tl.store(out_ptr + 7 * N + offs, x >> 1)
    tl.store(out_ptr + 8 * N + offs, (x < y).to(x.dtype) + (x >= y).to(x.dtype) * 2 + (x == y).to(x.dtype) * 4)
    tl.store(out_ptr + 9 * N + offs, ((x > 0) & (y > 0) | (x == y)).to(x.dtype))

def c_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q

for tdt in [torch.int32, torch.int64, torch.int8, torch.int16]:
    N = 64
    x = torch.randint(-50, 50, (N,), device=DEVICE).to(tdt)
    y = torch.randint(1, 9, (N,), device=DEVICE).to(tdt) * torch.where(torch.rand(N) > 0.5, 1, -1).to(tdt)
    out = torch.zeros(10 * N, dtype=tdt, device=DEVICE)
    iarith[(1,)](x, y, out, N=N)
    o = out.reshape(10, N)
    xs, ys = x.tolist(), y.tolist()
    qs = [c_div(a, b) for a, b in zip(xs, ys)]
    check(f"{tdt} //", o[0], torch.tensor(qs))
    check(f"{tdt} %", o[1], torch.tensor([a - b * q for a, b, q in zip(xs, ys, qs)]))
    check(f"{tdt} &", o[2], x & y)
    check(f"{tdt} |", o[3], x | y)
    check(f"{tdt} ^", o[4], x ^ y)
    check(f"{tdt} ~", o[5], ~x)
    check(f"{tdt} <<", o[6], (x.long() << 2).to(tdt))
    check(f"{tdt} >>", o[7], x >> 1)
    check(f"{tdt} comparisons", o[8], (x < y).long() + (x >= y).long() * 2 + (x == y).long() * 4)
    check(f"{tdt} and/or", o[9], ((x > 0) & (y > 0) | (x == y)).long())

@triton.jit
def logic(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    a = x > 3
    b = x < 7
    tl.store(out_ptr + offs, (a and b).to(tl.int32) + (not (x > 5)).to(tl.int32) * 10 + (a or b).to(tl.int32) * 100)

x = torch.randint(0, 10, (32,), dtype=torch.int32, device=DEVICE)
out = torch.zeros(32, dtype=torch.int32, device=DEVICE)
logic[(1,)](x, out, N=32)
want = ((x > 3) & (x < 7)).long() + (x <= 5).long() * 10 + ((x > 3) | (x < 7)).long() * 100
check("and / or / not on blocks", out, want)

# Shifts by an amount of the width or more, or negative: 0 (or the sign for
# an arithmetic right shift), as PTX and numpy give them; a constant amount
# past the width folds the same way.
@triton.jit
def shifts(x_ptr, s_ptr, out_ptr, N: tl.constexpr, FAR: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    s = tl.load(s_ptr + offs)
    tl.store(out_ptr + offs, x << s)
    tl.store(out_ptr + N + offs, x >> s)
    tl.store(out_ptr + 2 * N + offs, (x >> FAR) + (x << FAR))

for tdt, bits in [(torch.int32, 32), (torch.int64, 64), (torch.int8, 8), (torch.int16, 16)]:
    N = 64
    x = torch.randint(-100, 100, (N,), device=DEVICE).to(tdt)
    s = torch.randint(-3, bits + 9, (N,), device=DEVICE).to(tdt)
    out = torch.zeros(3 * N, dtype=tdt, device=DEVICE)
    shifts[(1,)](x, s, out, N=N, FAR=bits + 3)
    o = out.reshape(3, N)
    wrap = lambda v: (v + 2 ** (bits - 1)) % 2 ** bits - 2 ** (bits - 1)
    xs, ss = x.tolist(), s.tolist()
    check(f"{tdt} << by any amount", o[0], torch.tensor([wrap(a << b) if 0 <= b < bits else 0 for a, b in zip(xs, ss)]))
    check(f"{tdt} >> by any amount", o[1], torch.tensor([a >> b if 0 <= b < bits else (-1 if a < 0 else 0)
                                                       for a, b in zip(xs, ss)]))
    check(f"{tdt} >> and << by a constant past the width", o[2], torch.tensor([-1 if a < 0 else 0 for a in xs]))
