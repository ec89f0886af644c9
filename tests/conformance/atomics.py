# Atomics: tl.atomic_add/max/min/and/or/xor/xchg/cas over every dtype each
# takes, with masks, scalar and block pointers, broadcast values, sem= and
# scope=, the old values they return, and a spin lock built from
# atomic_cas/atomic_xchg as layer-norm backward kernels write it. Values are
# chosen so that any order of the atomics gives the same bits (integer-valued
# floats), since programs run concurrently on both backends.


@triton.jit
def histogram(x_ptr, bins_ptr, n, NB: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    tl.atomic_add(bins_ptr + x % NB, 1, mask=m)


n = 3001
x = torch.randint(0, 1000, (n,), dtype=torch.int32, device=DEVICE)
for dt in [torch.int32, torch.int64, torch.float32, torch.float64, torch.float16]:
    bins = torch.zeros(13, dtype=dt, device=DEVICE)
    histogram[(triton.cdiv(n, 128),)](x, bins, n, NB=13, BLOCK=128)
    want = torch.zeros(13, dtype=torch.int64)
    for v in (x % 13).tolist():
        want[v] += 1
    check(f"histogram {dt}", bins.double(), want.double(), atol=0, rtol=0)


@triton.jit
def extremes(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    tl.atomic_max(out_ptr + 0 * BLOCK + tl.arange(0, BLOCK), x, mask=m)
    tl.atomic_min(out_ptr + 1 * BLOCK + tl.arange(0, BLOCK), x, mask=m)
    # A scalar pointer with a block of values: every lane on one element.
    tl.atomic_max(out_ptr + 2 * BLOCK, x, mask=m)
    tl.atomic_min(out_ptr + 2 * BLOCK + 1, x, mask=m, sem="relaxed")


n = 1000
for dt in [torch.int32, torch.int64, torch.float32, torch.float64]:
    x = (torch.randn(n, device=DEVICE) * 1000).round().to(dt)
    big, small = (1e30, -1e30) if dt.is_floating_point else (2**30, -2**30)
    out = torch.tensor([small] * 64 + [big] * 64 + [small, big], dtype=dt, device=DEVICE)
    extremes[(triton.cdiv(n, 64),)](x, out, n, BLOCK=64)
    xs = x.tolist()
    cols_max = torch.tensor([float(max(xs[j::64])) for j in range(64)], dtype=torch.float64)
    cols_min = torch.tensor([float(min(xs[j::64])) for j in range(64)], dtype=torch.float64)
    check(f"atomic_max per lane {dt}", out[:64].double(), cols_max, atol=0, rtol=0)
    check(f"atomic_min per lane {dt}", out[64:128].double(), cols_min, atol=0, rtol=0)
    assert out[128].item() == x.max().item() and out[129].item() == x.min().item(), f"scalar max/min {dt}"


@triton.jit
def bits(a_ptr, o_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(a_ptr + offs, mask=m, other=0)
    tl.atomic_and(o_ptr + 0, v | ~(1 << (offs % 31)), mask=m)
    tl.atomic_or(o_ptr + 1, v & (1 << (offs % 31)), mask=m)
    tl.atomic_xor(o_ptr + 2, v, mask=m, scope="gpu")
    # Each element is its own address: the old value is deterministic.
    old = tl.atomic_xchg(x_ptr + offs, offs * 2, mask=m)
    tl.store(a_ptr + offs, old, mask=m)


n = 777
for dt in [torch.int32, torch.int64]:
    a = torch.randint(0, 2**30, (n,), dtype=dt, device=DEVICE)
    o = torch.tensor([-1, 0, 0], dtype=dt, device=DEVICE)
    xs = torch.arange(n, dtype=dt, device=DEVICE) * 7
    keep_a = a.clone()
    bits[(triton.cdiv(n, 128),)](a, o, xs, n, BLOCK=128)
    want_and, want_or, want_xor = -1, 0, 0
    for i, v in enumerate(keep_a.tolist()):
        want_and &= v | ~(1 << (i % 31))
        want_or |= v & (1 << (i % 31))
        want_xor ^= v
    assert o.tolist() == [want_and, want_or, want_xor], (dt, o.tolist(), [want_and, want_or, want_xor])
    assert a.tolist() == [7 * i for i in range(n)], f"atomic_xchg old values {dt}"
    assert xs.tolist() == [2 * i for i in range(n)], f"atomic_xchg new values {dt}"


@triton.jit
def float_exchange(x_ptr, old_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    old = tl.atomic_xchg(x_ptr + offs, offs.to(tl.float32) * 0.5, mask=m)
    tl.store(old_ptr + offs, old, mask=m)


x = torch.randn(50, device=DEVICE)
olds = torch.zeros(50, device=DEVICE)
keep = x.clone()
float_exchange[(1,)](x, olds, 50, BLOCK=64)
check("atomic_xchg fp32 old", olds, keep, atol=0, rtol=0)
check("atomic_xchg fp32 new", x, torch.arange(50, device=DEVICE).float() * 0.5, atol=0, rtol=0)


@triton.jit
def locked_sum(x_ptr, total_ptr, count_ptr, lock_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    part = tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0), axis=0)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    # Plain loads and stores inside the critical section.
    tl.store(total_ptr, tl.load(total_ptr) + part)
    tl.store(count_ptr, tl.load(count_ptr) + 1)
    tl.debug_barrier()
    tl.atomic_xchg(lock_ptr, 0)


n = 5000
x = torch.randint(-100, 100, (n,), dtype=torch.int32, device=DEVICE)
total = torch.zeros(1, dtype=torch.int32, device=DEVICE)
count = torch.zeros(1, dtype=torch.int32, device=DEVICE)
lock = torch.zeros(1, dtype=torch.int32, device=DEVICE)
locked_sum[(triton.cdiv(n, 64),)](x, total, count, lock, n, BLOCK=64)
assert total.item() == x.sum().item(), (total.item(), x.sum().item())
assert count.item() == triton.cdiv(n, 64) and lock.item() == 0


@triton.jit
def cas_values(x_ptr, old_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    # Swap in 100 + i where the element equals i (the even ones).
    old = tl.atomic_cas(x_ptr + offs, offs, offs + 100)
    tl.store(old_ptr + offs, old)


x = torch.tensor([i if i % 2 == 0 else -i for i in range(32)], dtype=torch.int32, device=DEVICE)
olds = torch.zeros(32, dtype=torch.int32, device=DEVICE)
cas_values[(1,)](x, olds, BLOCK=32)
assert olds.tolist() == [i if i % 2 == 0 else -i for i in range(32)]
assert x.tolist() == [100 + i if i % 2 == 0 else -i for i in range(32)]
