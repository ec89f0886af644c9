# for over range / tl.range / tl.static_range with loop-carried values,
# while loops, runtime and constexpr if/elif/else, nested @jit calls
# returning tuples, early return from a helper.
@triton.jit
def helper_pair(x, y):
    return x + y, x * y

@triton.jit
def sign_of(x):
    if x > 0:
        r = 1
    elif x < 0:
        r = -1
    else:
        r = 0
    return r

@triton.jit
def early(x, FLAG: tl.constexpr):
    if FLAG:
        return x * 2
    return x + 100

@triton.jit
def loops(x_ptr, out_ptr, n, STEPS: tl.constexpr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    acc = tl.zeros((16,), dtype=tl.float32)
    for i in range(n):
        acc += x * i
    acc2 = acc
    for i in tl.range(0, n, 2, num_stages=3):
        acc2 = acc2 + 1
    s = 0.0
    for j in tl.static_range(STEPS):
        s += j
    count = 0
    v = n
    while v > 1:
        v = v // 2
        count += 1
    a, b = helper_pair(x, 2.0)
    tl.store(out_ptr + offs, acc)
    tl.store(out_ptr + 16 + offs, acc2)
    tl.store(out_ptr + 32 + offs, a + b + s)
    tl.store(out_ptr + 48, count.to(tl.float32))
    tl.store(out_ptr + 49, sign_of(n - 5).to(tl.float32))
    tl.store(out_ptr + 50, early(1.0, True) + early(1.0, False))
    if n > 3:
        t = x * 3
    else:
        t = x * 5
    tl.store(out_ptr + 51 + offs, t)

x = torch.randn(16, device=DEVICE)
for n in [0, 3, 7, 37]:
    out = torch.zeros(67, device=DEVICE)
    loops[(1,)](x, out, n, STEPS=4)
    check(f"for range n={n}", out[:16], x * (n * (n - 1) / 2), atol=1e-3, rtol=1e-5)
    check(f"tl.range step 2 n={n}", out[16:32], x * (n * (n - 1) / 2) + (n + 1) // 2, atol=1e-3, rtol=1e-5)
    check(f"static_range + helper tuple n={n}", out[32:48], (x + 2.0) + (x * 2.0) + 6.0, atol=1e-5)
    cnt = 0
    v = n
    while v > 1:
        v = v // 2
        cnt += 1
    check(f"while n={n}", out[48:49], torch.tensor([float(cnt)]))
    check(f"if/elif/else n={n}", out[49:50], torch.tensor([float((n > 5) - (n < 5))]))
    check("early return", out[50:51], torch.tensor([103.0]))
    check(f"runtime if n={n}", out[51:], x * (3 if n > 3 else 5))

# Loop-carried blocks handed around: a new value made while the old one is
# still read later in the body, values swapped, a block yielded unchanged,
# and an accumulator updated in place by tl.dot.
@triton.jit
def carried_blocks(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(x_ptr + offs)
    b = a * 2.0
    c = tl.zeros([N], dtype=tl.float32)
    keep = a + 100.0
    acc = tl.zeros([N, N], dtype=tl.float32)
    m = tl.load(x_ptr + offs[:, None] * N + offs[None, :])
    for i in range(5):
        a2 = a + b
        c = c + a
        acc = tl.dot(m, m, acc)
        a, b = b, a2
        keep = keep
    tl.store(out_ptr + offs, a)
    tl.store(out_ptr + N + offs, b)
    tl.store(out_ptr + 2 * N + offs, c)
    tl.store(out_ptr + 3 * N + offs, keep)
    tl.store(out_ptr + 4 * N + offs[:, None] * N + offs[None, :], acc)

n = 16
x = torch.randn(n * n, device=DEVICE)
out = torch.zeros(4 * n + n * n, device=DEVICE)
carried_blocks[(1,)](x, out, N=n)
a = x[:n].cpu().double()
b = a * 2
c = torch.zeros(n, dtype=torch.float64)
for i in range(5):
    a2 = a + b
    c = c + a
    a, b = b, a2
mm = x.cpu().double().reshape(n, n)
check("carried: swapped", out[:n].cpu(), a, rtol=1e-4)
check("carried: new value", out[n:2 * n].cpu(), b, rtol=1e-4)
check("carried: old value read after the new one was made", out[2 * n:3 * n].cpu(), c, rtol=1e-4)
check("carried: yielded unchanged", out[3 * n:4 * n].cpu(), x[:n].cpu().double() + 100, rtol=1e-4)
# fp32 dots run as tf32 (inputs rounded to 10 mantissa bits, relative
# error <= 2^-11 each), so each product is off by at most about 2^-10 of its
# size: bound the error per element by the sum of the products' magnitudes.
got = out[4 * n:].cpu().double().reshape(n, n)
bound = 5 * (mm.abs() @ mm.abs()) * 2.0 ** -10 * 1.05 + 1e-4
worst = torch.max(torch.abs(got - 5 * (mm @ mm)) - bound)
assert worst <= 0, f"carried: dot accumulator: error over the tf32 bound by {worst}"

# A loop that loads what its previous iteration stored (not prefetched:
# the store may be what the next load reads), and a grid-stride row loop
# whose next row is prefetched (13 rows over 4 programs).
@triton.jit
def running_rows(p, n, B: tl.constexpr):
    o = tl.arange(0, B)
    for i in range(0, n):
        x = tl.load(p + i * B + o)
        tl.store(p + (i + 1) * B + o, x + 1.0)

@triton.jit
def grid_stride_rows(x_ptr, y_ptr, rows, B: tl.constexpr):
    o = tl.arange(0, B)
    for r in range(tl.program_id(0), rows, tl.num_programs(0)):
        x = tl.load(x_ptr + r * B + o)
        tl.store(y_ptr + r * B + o, x * 2.0 + tl.sum(x, 0))

p = torch.zeros(9 * 32, device=DEVICE)
running_rows[(1,)](p, 8, B=32)
check("loop reads what its previous iteration stored", p.reshape(9, 32)[:, 5].cpu(),
      torch.tensor([float(i) for i in range(9)]))
x = torch.randn(13 * 64, device=DEVICE)
y = torch.zeros_like(x)
grid_stride_rows[(4,)](x, y, 13, B=64)
xr = x.cpu().reshape(13, 64)
check("grid-stride rows", y.cpu().reshape(13, 64), xr * 2 + xr.sum(1, keepdim=True), atol=1e-4, rtol=1e-5)

# Several values carried through an `if` that resets them (a flattened
# persistent loop: sums per group of `G` row blocks, stored and restarted
# at each group's last step). Every carried value must keep its rows apart:
# the analysis once took the `if`'s second result for its zero initial
# value, all rows equal, and the CPU backend read row 0 for every row.
@triton.jit
def grouped_sums(x_ptr, out_ptr, steps, G: tl.constexpr, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    total = tl.zeros([R, C], dtype=tl.float32)
    rows = tl.zeros([R], dtype=tl.float32)
    big = tl.full([R], float("-inf"), tl.float32)
    for it in range(0, steps):
        x = tl.load(x_ptr + (it * R + r)[:, None] * C + c[None, :])
        total = total + x
        rows = rows + tl.sum(x, 1)
        big = tl.maximum(big, tl.max(x, 1))
        if it % G == G - 1:
            g = it // G
            tl.store(out_ptr + g * (R * C + 2 * R) + r[:, None] * C + c[None, :], total)
            tl.store(out_ptr + g * (R * C + 2 * R) + R * C + r, rows)
            tl.store(out_ptr + g * (R * C + 2 * R) + R * C + R + r, big)
            total = tl.zeros([R, C], dtype=tl.float32)
            rows = tl.zeros([R], dtype=tl.float32)
            big = tl.full([R], float("-inf"), tl.float32)

G, R, C, groups = 3, 16, 32, 4
x = torch.randn(groups * G * R * C, device=DEVICE)
out = torch.zeros(groups * (R * C + 2 * R), device=DEVICE)
grouped_sums[(1,)](x, out, groups * G, G=G, R=R, C=C)
xg = x.cpu().double().reshape(groups, G, R, C)
got = out.cpu().double().reshape(groups, R * C + 2 * R)
check("if-reset carried: block", got[:, :R * C], xg.sum(1).reshape(groups, R * C), atol=1e-4, rtol=1e-5)
check("if-reset carried: row sums", got[:, R * C:R * C + R], xg.sum(3).sum(1), atol=1e-4, rtol=1e-5)
check("if-reset carried: row maxima", got[:, R * C + R:], xg.amax(3).amax(1))
