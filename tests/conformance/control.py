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
