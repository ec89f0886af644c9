# tl.dot with an accumulator on fp16, bf16, fp32, fp8 (e5m2, e4m3) and int8
# inputs, odd sizes with masked K tails, against a host matmul.
@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, OUT: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=OUT)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))

def dot_cases(M, N, K, BM, BN, BK, lim, cases):
    for tdt, out_t, out_tl, tol in cases:
        if tdt == torch.int8:
            a = torch.randint(-lim, lim, (M, K), dtype=torch.int8, device=DEVICE)
            b = torch.randint(-lim, lim, (K, N), dtype=torch.int8, device=DEVICE)
        else:
            a = torch.randn(M, K, device=DEVICE).to(tdt)
            b = torch.randn(K, N, device=DEVICE).to(tdt)
        c = torch.zeros(M, N, dtype=out_t, device=DEVICE)
        dot_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](a, b, c, M, N, K, BM=BM, BN=BN, BK=BK, OUT=out_tl)
        check(f"tl.dot {tdt} {BM}x{BN}x{BK}", c, a.double() @ b.double(), atol=tol, rtol=tol)

# fp32 inputs run at the default precision, tf32 (10 mantissa bits kept):
# over K = 83 products of unit normals an element can be off by ~0.012
# (seed 229289), so it gets tf32's 5e-2 as the tensor-core case below.
dot_cases(45, 70, 83, 16, 32, 16, 8,
          [(torch.float16, torch.float32, tl.float32, 1e-2), (torch.bfloat16, torch.float32, tl.float32, 5e-2),
           (torch.float32, torch.float32, tl.float32, 5e-2), (torch.float8_e5m2, torch.float32, tl.float32, 1e-2),
           (torch.float8_e4m3fn, torch.float32, tl.float32, 1e-2), (torch.int8, torch.int32, tl.int32, 0)])

@triton.jit
def dot_fp16_out(a_ptr, b_ptr, c_ptr):
    r = tl.arange(0, 16)
    a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * 16 + r[None, :])
    c = tl.dot(a, b, out_dtype=tl.float16)
    tl.static_assert(c.dtype == tl.float16)
    tl.store(c_ptr + r[:, None] * 16 + r[None, :], c)

a = torch.randn(16, 16, device=DEVICE).half()
b = torch.randn(16, 16, device=DEVICE).half()
c = torch.zeros(16, 16, dtype=torch.float16, device=DEVICE)
dot_fp16_out[(1,)](a, b, c)
check("tl.dot out_dtype=fp16", c, (a.float() @ b.float()).half(), atol=2e-2, rtol=1e-2)

# Tensor-core shapes: fp32 inputs at the default precision (tf32, K a
# multiple of 8), int8 and fp8 (K a multiple of 32), several K steps, masked edges.
dot_cases(70, 90, 160, 32, 64, 32, 128,
          [(torch.float32, torch.float32, tl.float32, 5e-2), (torch.int8, torch.int32, tl.int32, 0),
           (torch.float8_e5m2, torch.float32, tl.float32, 1e-2), (torch.float8_e4m3fn, torch.float32, tl.float32, 1e-2)])

# input_precision: tf32 keeps 10 mantissa bits of each input (1 + 2^-12
# rounds to 1), ieee keeps fp32.
@triton.jit
def dot_precision(a_ptr, b_ptr, c_ptr, d_ptr):
    r = tl.arange(0, 16)
    a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * 16 + r[None, :])
    tl.store(c_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, b))
    tl.store(d_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, b, input_precision="ieee"))

a = torch.full((16, 16), 1.0 + 2.0 ** -12, device=DEVICE)
b = torch.full((16, 16), 1.0, device=DEVICE)
c = torch.zeros(16, 16, device=DEVICE)
d = torch.zeros(16, 16, device=DEVICE)
dot_precision[(1,)](a, b, c, d)
check("tl.dot tf32 rounds its inputs", c, torch.full((16, 16), 16.0, device=DEVICE), atol=0, rtol=0)
check("tl.dot ieee keeps fp32", d, torch.full((16, 16), 16.0 + 16 * 2.0 ** -12, device=DEVICE), atol=0, rtol=0)

# `acc += tl.dot(a, b)` (the compiler folds the add into the dot), and
# `tl.dot(q, tl.trans(k))` on square blocks, as attention kernels write it.
@triton.jit
def dot_plus_equals(a_ptr, b_ptr, c_ptr, d_ptr, K, BK: tl.constexpr):
    r = tl.arange(0, 32)
    rk = tl.arange(0, BK)
    acc = tl.zeros((32, 32), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + r[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * 32 + r[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + r[:, None] * 32 + r[None, :], acc)
    q = tl.load(a_ptr + r[:, None] * K + r[None, :])
    kt = tl.load(a_ptr + r[:, None] * K + (32 + r)[None, :])
    tl.store(d_ptr + r[:, None] * 32 + r[None, :], tl.dot(q, tl.trans(kt)))

a = torch.randn(32, 64, device=DEVICE).half()
b = torch.randn(64, 32, device=DEVICE).half()
c = torch.zeros(32, 32, device=DEVICE)
d = torch.zeros(32, 32, device=DEVICE)
dot_plus_equals[(1,)](a, b, c, d, 64, BK=16)
check("acc += tl.dot(a, b)", c, a.float() @ b.float(), atol=1e-2, rtol=1e-2)
check("tl.dot(q, tl.trans(k)) on square blocks", d, a[:, :32].float() @ a[:, 32:].float().T, atol=1e-2, rtol=1e-2)

# Chained dots outside a loop, at Hopper's warpgroup sizes (128 rows on four
# warps): `s = q @ k.T` reads `k` as loaded (a K-major B tile), and
# `s.to(fp16) @ v` takes `s` straight from the first dot's registers as its
# A operand; a ragged key count masks the rows of `k` and `v` (zero fill).
@triton.jit
def chained_dots(q_ptr, k_ptr, v_ptr, s_ptr, o_ptr, NK, D: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, 128)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    k = tl.load(k_ptr + rn[:, None] * D + rd[None, :], mask=rn[:, None] < NK, other=0.0)
    v = tl.load(v_ptr + rn[:, None] * D + rd[None, :], mask=rn[:, None] < NK, other=0.0)
    s = tl.dot(q, tl.trans(k))
    tl.store(s_ptr + rm[:, None] * BN + rn[None, :], s)
    o = tl.dot((s * 0.125).to(tl.float16), v)
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], o)

for NK in (64, 45):
    # Positive scores and values: the second dot's sums do not cancel, so a
    # one-ulp difference in an fp16 `p` (the first dot's sums rounded after
    # the GPU and the CPU added in different orders) stays inside the
    # cross-backend check's fp32 tolerance; with signed data it did not.
    q = (torch.rand(128, 64, device=DEVICE) / 4).half()
    k = (torch.rand(NK, 64, device=DEVICE) / 4).half()
    v = torch.rand(NK, 64, device=DEVICE).half()
    s = torch.zeros(128, 64, device=DEVICE)
    o = torch.zeros(128, 64, device=DEVICE)
    chained_dots[(1,)](q, k, v, s, o, NK, D=64, BN=64)
    kp = torch.zeros(64, 64, device=DEVICE)
    kp[:NK] = k.float()
    vp = torch.zeros(64, 64, device=DEVICE)
    vp[:NK] = v.float()
    want_s = q.float() @ kp.T
    check(f"tl.dot(q, tl.trans(k)), {NK} keys of 64", s, want_s, atol=1e-2, rtol=1e-2)
    p = (s * 0.125).half().float()
    check(f"tl.dot(s.to(fp16), v) after it, {NK} keys of 64", o, p @ vp, atol=2e-2, rtol=2e-2)
