# Tensors of pointers: addresses (data_ptr()) stored in int64 tensors,
# loaded in a kernel and turned back into pointers of several element types
# with .to(tl.pointer_type(...)) / tl.cast; pointers as int64 addresses and
# back; ptr.dtype.element_ty. On the CPU backend every access through such
# a pointer is checked against the live tensors.


@triton.jit
def through_addresses(addrs, sizes, out_ptr, BLOCK: tl.constexpr):
    g = tl.program_id(0)
    n = tl.load(sizes + g)
    offs = tl.arange(0, BLOCK)
    if g == 0:
        p16 = tl.load(addrs + g).to(tl.pointer_type(tl.float16))
        x = tl.load(p16 + offs, mask=offs < n, other=0.0).to(tl.float32)
    elif g == 1:
        p32 = tl.cast(tl.load(addrs + g), tl.pointer_type(tl.int32))
        x = tl.load(p32 + offs, mask=offs < n, other=0).to(tl.float32)
    else:
        p64 = tl.load(addrs + g).to(tl.pointer_type(tl.float64))
        x = tl.load(p64 + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.store(out_ptr + g * BLOCK + offs, x * 2, mask=offs < n)


a = torch.randn(50, device=DEVICE).half()
b = torch.randint(-100, 100, (7,), device=DEVICE, dtype=torch.int32)
c = torch.randn(64, device=DEVICE, dtype=torch.float64)
addrs = torch.tensor([a.data_ptr(), b.data_ptr(), c.data_ptr()], device=DEVICE)
sizes = torch.tensor([50, 7, 64], device=DEVICE, dtype=torch.int32)
out = torch.zeros(3 * 64, device=DEVICE)
through_addresses[(3,)](addrs, sizes, out, BLOCK=64)
check("fp16 through an address", out[:50], a.float() * 2)
check("int32 through an address", out[64:71], b.float() * 2)
check("fp64 through an address", out[128:192], c.float() * 2)


@triton.jit
def scatter_to_many(addrs, value_ptr, N: tl.constexpr):
    g = tl.program_id(0)
    dst = tl.load(addrs + g).to(tl.pointer_type(value_ptr.dtype.element_ty))
    offs = tl.arange(0, N)
    tl.store(dst + offs, tl.load(value_ptr + offs) + g)


outs = [torch.zeros(16, device=DEVICE) for _ in range(4)]
addrs = torch.tensor([o.data_ptr() for o in outs], device=DEVICE)
v = torch.randn(16, device=DEVICE)
scatter_to_many[(4,)](addrs, v, N=16)
for g in range(4):
    check(f"store through address {g}", outs[g], v + g)


@triton.jit
def address_round_trip(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    as_int = (x_ptr + offs).to(tl.int64)
    back = (as_int + 4).to(tl.pointer_type(tl.float32))  # one element on
    tl.store(out_ptr + offs, tl.load(back, mask=offs < N - 1, other=-1.0))


x = torch.randn(32, device=DEVICE)
out = torch.zeros(32, device=DEVICE)
address_round_trip[(1,)](x, out, N=32)
check("pointer -> int64 -> pointer", out, torch.cat([x[1:], torch.tensor([-1.0], device=DEVICE)]))


# Pointer blocks carried through loops and advanced by one offset for every
# element (the K loop of a matmul): by a runtime stride, by a constant, going
# backwards, in nested loops, read again after the increment and after the
# loop. (The CPU backend carries these as one scalar offset.)
@triton.jit
def walking_pointers(x_ptr, out_ptr, stride, R: tl.constexpr, C: tl.constexpr, STEPS: tl.constexpr):
    rows = tl.arange(0, R)
    cols = tl.arange(0, C)
    fwd = x_ptr + rows[:, None] * stride + cols[None, :]
    back = x_ptr + (STEPS - 1) * C + cols
    acc = tl.zeros([R, C], dtype=tl.float32)
    after = tl.zeros([C], dtype=tl.float32)
    total = tl.zeros([C], dtype=tl.float32)
    for i in range(STEPS):
        acc += tl.load(fwd, mask=cols[None, :] < C - i, other=-1.0)
        fwd += C
        after += tl.load(back) * (i + 1)
        back -= C
        inner = x_ptr + cols
        for j in range(3):
            total += tl.load(inner)
            inner += 2 * C
        total += tl.load(inner)
    tl.store(out_ptr + rows[:, None] * C + cols[None, :], acc)
    tl.store(out_ptr + R * C + cols, after)
    tl.store(out_ptr + R * C + C + cols, total)
    # Where the loops left the pointers: one step past the last row read,
    # and one step before the first.
    tl.store(out_ptr + R * C + 2 * C + rows[:, None] * C + cols[None, :], tl.load(fwd - C))
    tl.store(out_ptr + 2 * R * C + 2 * C + cols, tl.load(back + C))


R, C, STEPS = 4, 8, 6
stride = STEPS * C + 8
x = torch.randn(R * stride + STEPS * C, device=DEVICE)
out = torch.zeros(2 * R * C + 3 * C, device=DEVICE)
walking_pointers[(1,)](x, out, stride, R=R, C=C, STEPS=STEPS)
xh = x.cpu().double()
acc = torch.zeros(R, C, dtype=torch.float64)
after = torch.zeros(C, dtype=torch.float64)
total = torch.zeros(C, dtype=torch.float64)
for i in range(STEPS):
    block = torch.stack([xh[r * stride + i * C: r * stride + i * C + C] for r in range(R)])
    keep = torch.arange(C) < C - i
    acc += torch.where(keep[None, :], block, torch.full_like(block, -1.0))
    after += xh[(STEPS - 1 - i) * C:(STEPS - i) * C] * (i + 1)
    total += xh[0:C] + xh[2 * C:3 * C] + xh[4 * C:5 * C] + xh[6 * C:7 * C]
check("walking pointers: runtime stride, masked", out[:R * C].cpu().reshape(R, C), acc, rtol=1e-5)
check("walking pointers: backwards", out[R * C:R * C + C].cpu(), after, rtol=1e-5)
check("walking pointers: nested loop, read after it", out[R * C + C:R * C + 2 * C].cpu(), total, rtol=1e-5)
last = torch.stack([xh[r * stride + (STEPS - 1) * C: r * stride + STEPS * C] for r in range(R)])
check("walking pointers: the block after the loop", out[R * C + 2 * C:2 * R * C + 2 * C].cpu().reshape(R, C), last, rtol=1e-6)
check("walking pointers: backwards, after the loop", out[2 * R * C + 2 * C:].cpu(), xh[0:C], rtol=1e-6)


# Hint statements (`tl.multiple_of(p, [16, 16])` with its result unused, as
# tutorial 08 writes them) rebind the name to the hinted value: pointers cast
# from loaded addresses, runtime leading dimensions, a K loop; two problems
# of different sizes in one launch. `tests/ptx.rs` compiles this kernel too
# (with HINT=False the addresses may be odd and the loads stay scalar).
@triton.jit
def hinted_groups(addrs, dims, count, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, HINT: tl.constexpr):
    tile = tl.program_id(0)
    for g in range(count):
        m = tl.load(dims + g * 4)
        kk = tl.load(dims + g * 4 + 2)
        ld = tl.load(dims + g * 4 + 3)
        tiles = tl.cdiv(m, BM) * tl.cdiv(tl.load(dims + g * 4 + 1), BN)
        if tile < tiles:
            x = tl.load(addrs + g * 3).to(tl.pointer_type(tl.float16))
            y = tl.load(addrs + g * 3 + 1).to(tl.pointer_type(tl.float16))
            z = tl.load(addrs + g * 3 + 2).to(tl.pointer_type(tl.float16))
            rows = (tile % tl.cdiv(m, BM)) * BM + tl.arange(0, BM)
            cols = (tile // tl.cdiv(m, BM)) * BN + tl.arange(0, BN)
            ks = tl.arange(0, BK)
            xp = x + rows[:, None] * ld + ks[None, :]
            yp = y + ks[:, None] * ld + cols[None, :]
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            for _ in range(0, tl.cdiv(kk, BK)):
                if HINT:
                    tl.multiple_of(xp, [16, 16])
                    tl.multiple_of(yp, [16, 16])
                acc += tl.dot(tl.load(xp), tl.load(yp))
                xp += BK
                yp += BK * ld
            tl.store(z + rows[:, None] * ld + cols[None, :], acc.to(tl.float16))


mats = []
for size in (128, 256):
    a = (torch.randn(size, size, device=DEVICE) / 8).half()
    b = (torch.randn(size, size, device=DEVICE) / 8).half()
    mats.append((a, b, torch.zeros(size, size, device=DEVICE, dtype=torch.float16)))
addrs = torch.tensor([t.data_ptr() for trio in mats for t in trio], device=DEVICE)
dims = torch.tensor([d for a, _, _ in mats for d in (a.shape[0], a.shape[0], a.shape[0], a.shape[0])],
                    dtype=torch.int32, device=DEVICE)
for hint in (True, False):
    for _, _, c in mats:
        c.zero_()
    hinted_groups[(4,)](addrs, dims, 2, BM=128, BN=128, BK=32, HINT=hint, num_warps=4)
    for a, b, c in mats:
        check(f"hint statements (HINT={hint}): grouped product {a.shape[0]}", c.cpu(), a.cpu().float() @ b.cpu().float(),
              atol=2e-2, rtol=1e-2)
