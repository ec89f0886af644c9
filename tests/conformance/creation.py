# tl.zeros, tl.full, tl.zeros_like, tl.full_like in several dtypes.
@triton.jit
def create(a_ptr, b_ptr, c_ptr, d_ptr, N: tl.constexpr, VALUE: tl.constexpr, DT: tl.constexpr):
    offs = tl.arange(0, N)
    z = tl.zeros((N,), dtype=DT)
    f = tl.full((N,), VALUE, DT)
    tl.store(a_ptr + offs, z + 1)
    tl.store(b_ptr + offs, f)
    tl.store(c_ptr + offs, tl.zeros_like(f) + 2)
    tl.store(d_ptr + offs, tl.full_like(f, 7))

for dt, tdt, value in [(tl.float32, torch.float32, 2.5), (tl.int32, torch.int32, -3), (tl.float16, torch.float16, 0.125), (tl.int8, torch.int8, 100)]:
    a = torch.empty(64, dtype=tdt, device=DEVICE)
    b = torch.empty(64, dtype=tdt, device=DEVICE)
    c = torch.empty(64, dtype=tdt, device=DEVICE)
    d = torch.empty(64, dtype=tdt, device=DEVICE)
    create[(1,)](a, b, c, d, N=64, VALUE=value, DT=dt)
    check(f"zeros {dt}", a, torch.ones(64))
    check(f"full {dt}", b, torch.full((64,), value))
    check(f"zeros_like {dt}", c, torch.full((64,), 2))
    check(f"full_like {dt}", d, torch.full((64,), 7))
