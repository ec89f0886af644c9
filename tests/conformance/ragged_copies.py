# Dot operands whose bound along the contiguous dim is known only at run
# time and may fall inside a 16-byte run: a K that is no multiple of 8 with
# rows padded to 16 bytes, as tensor descriptors require. On the GPU such a
# load keeps its 16-byte copies, each copying only the elements in bounds;
# every element past the bound must read as zero (or the padding). Stores
# past a bound that cuts a run (N no multiple of 8) must leave memory as it
# was.

triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=DEVICE))


def padded(n):
    return (n + 7) // 8 * 8


# Descriptors made in the kernel from a table of addresses and sizes (the
# grouped-GEMM pattern): B is [N, K] and read transposed.
@triton.jit
def table_desc_matmul(ptrs, dims, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    g = tl.program_id(2)
    m = tl.load(dims + g * 6)
    n = tl.load(dims + g * 6 + 1)
    k = tl.load(dims + g * 6 + 2)
    a_ptr = tl.load(ptrs + g * 3).to(tl.pointer_type(tl.float16))
    b_ptr = tl.load(ptrs + g * 3 + 1).to(tl.pointer_type(tl.float16))
    c_ptr = tl.load(ptrs + g * 3 + 2).to(tl.pointer_type(tl.float16))
    ad = tl.make_tensor_descriptor(a_ptr, [m, k], [tl.load(dims + g * 6 + 3), 1], [BM, BK])
    bd = tl.make_tensor_descriptor(b_ptr, [n, k], [tl.load(dims + g * 6 + 4), 1], [BN, BK])
    cd = tl.make_tensor_descriptor(c_ptr, [m, n], [tl.load(dims + g * 6 + 5), 1], [BM, BN])
    om = tl.program_id(0) * BM
    on = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kk in range(0, tl.cdiv(k, BK)):
        acc += tl.dot(ad.load([om, kk * BK]), bd.load([on, kk * BK]).T)
    cd.store([om, on], acc.to(tl.float16))


groups = [(200, 131, 90), (64, 70, 35), (130, 64, 201), (9, 203, 3)]
keep = []
addrs = []
dims = []
for (M, N, K) in groups:
    a = torch.randn(M, padded(K), device=DEVICE, dtype=torch.float16)
    b = torch.randn(N, padded(K), device=DEVICE, dtype=torch.float16)
    c = torch.full((M, padded(N)), -7.0, device=DEVICE, dtype=torch.float16)
    keep.append((a, b, c))
    addrs += [a.data_ptr(), b.data_ptr(), c.data_ptr()]
    dims += [M, N, K, a.stride(0), b.stride(0), c.stride(0)]
d_addrs = torch.tensor(addrs, device=DEVICE)
d_dims = torch.tensor(dims, dtype=torch.int32, device=DEVICE)
for (BM, BN, BK, warps) in [(64, 64, 32, 4), (128, 128, 64, 8)]:
    for (_, _, c) in keep:
        c.fill_(-7.0)
    grid = (triton.cdiv(200, BM), triton.cdiv(203, BN), len(groups))
    table_desc_matmul[grid](d_addrs, d_dims, BM=BM, BN=BN, BK=BK, num_warps=warps, num_stages=3)
    for (M, N, K), (a, b, c) in zip(groups, keep):
        want = (a[:, :K].float() @ b[:, :K].float().T).half()
        name = f"table descriptors {M}x{N}x{K} blocks {BM}x{BN}x{BK}"
        check(name, c[:, :N], want, atol=3e-2, rtol=1e-2)
        # Columns past N are the padding: never written.
        assert torch.all(c[:, N:] == -7.0), name


# Pointers, with the K bound written each way a comparison can put it, and
# A packed so that its last row ends where its storage does.
@triton.jit
def ragged_k_matmul(a_ptr, b_ptr, c_ptr, M, N, K, lda, ldb, ldc, BM: tl.constexpr, BN: tl.constexpr,
                    BK: tl.constexpr, FORM: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * lda + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * ldb + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        left = K - k * BK
        if FORM == 0:
            ka = rk[None, :] < left
        elif FORM == 1:
            ka = left > rk[None, :]
        elif FORM == 2:
            ka = rk[None, :] <= left - 1
        else:
            ka = (left - 1 >= rk[None, :]) & (rk[None, :] < BK)
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & ka, other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < left) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BK
        b_ptrs += BK * ldb
    c_ptrs = c_ptr + rm[:, None] * ldc + rn[None, :]
    tl.store(c_ptrs, acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


for (M, N, K) in [(150, 96, 45), (64, 64, 100)]:
    lda = 16 * ((K + 15) // 16)
    flat = torch.randn((M - 1) * lda + K, device=DEVICE, dtype=torch.float16)
    a = torch.stack([flat[r * lda:r * lda + K] for r in range(M)])
    b = torch.randn(K, N, device=DEVICE, dtype=torch.float16)
    want = (a.float() @ b.float()).half()
    for form in range(4):
        c = torch.empty(M, N, device=DEVICE, dtype=torch.float16)
        grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
        ragged_k_matmul[grid](flat, b, c, M, N, K, lda, b.stride(0), c.stride(0), BM=64, BN=64, BK=32, FORM=form,
                              num_warps=4, num_stages=3)
        check(f"ragged K matmul {M}x{N}x{K} form {form}", c, want, atol=3e-2, rtol=1e-2)


# Element-wise rows and a flat range whose bound cuts a vector: whole runs
# load and store as vectors, the cut run element by element; past the bound
# nothing is read (`other` shows) and nothing is written.
@triton.jit
def ragged_rows(x_ptr, y_ptr, n, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=offs < n, other=7)
    tl.store(y_ptr + row * stride + offs, x * 2 + 1, mask=n > offs)


for dtype in [torch.float32, torch.float16, torch.int8, torch.int64, torch.bfloat16]:
    for n in [1, 13, 45, 64, 127]:
        x = (torch.randn(5, 128, device=DEVICE) * 20).to(dtype)
        y = torch.full((5, 128), 3, device=DEVICE, dtype=dtype)
        ragged_rows[(5,)](x, y, n, 128, BLOCK=128)
        want = torch.full((5, 128), 3, device=DEVICE, dtype=dtype)
        want[:, :n] = x[:, :n] * 2 + 1
        assert torch.equal(y, want), f"ragged rows {dtype} n={n}"


@triton.jit
def ragged_flat(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=-1.0)
    tl.store(o_ptr + offs, x + tl.load(y_ptr + offs, mask=m), mask=m)
    tl.store(o_ptr + n + offs, x, mask=offs < BLOCK)


for n in [1, 7, 1000, 1025]:
    x = torch.randn(n, device=DEVICE)
    y = torch.randn(n, device=DEVICE)
    o = torch.zeros(n + 2048, device=DEVICE)
    ragged_flat[(triton.cdiv(n, 1024),)](x, y, o, n, BLOCK=1024)
    check(f"ragged flat n={n}", o[:n], x + y)
    # Program 0's `x` past n read as `other`.
    tail = torch.full((1024,), -1.0, device=DEVICE)
    tail[:min(n, 1024)] = x[:min(n, 1024)]
    check(f"ragged flat other n={n}", o[n:n + 1024], tail)
