# Masked loads with `other`, masked stores, scalar pointers, `+=` on pointer
# blocks, 2-D strided access of a transposed (non-contiguous) view.
@triton.jit
def masked_copy(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(src + offs, mask=offs < n, other=-1.0)
    tl.store(dst + offs, x * 2, mask=offs < n + 5)

n = 1000
src = torch.randn(n, device=DEVICE)
dst = torch.zeros(n + 5, device=DEVICE)
masked_copy[(triton.cdiv(n + 5, 128),)](src, dst, n, BLOCK=128)
check("masked load/store body", dst[:n], src * 2)
check("other fills masked lanes", dst[n:], torch.full((5,), -2.0))

@triton.jit
def scalar_ptrs(x_ptr, out_ptr, n):
    total = tl.load(x_ptr)
    p = x_ptr + 1
    for i in range(1, n):
        total += tl.load(p)
        p += 1
    tl.store(out_ptr, total)

x = torch.randn(37, device=DEVICE)
out = torch.zeros(1, device=DEVICE)
scalar_ptrs[(1,)](x, out, 37)
check("scalar pointer loop", out, x.sum().reshape(1), atol=1e-4)

@triton.jit
def copy2d(src, dst, M, N, s0, s1, d0, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    ptrs = src + rm[:, None] * s0 + rn[None, :] * s1
    v = tl.load(ptrs, mask=mask)
    tl.store(dst + rm[:, None] * d0 + rn[None, :], v, mask=mask)

a = torch.randn(45, 70, device=DEVICE)
at = a.T
out = torch.zeros(70, 45, device=DEVICE)
copy2d[(triton.cdiv(70, 16), triton.cdiv(45, 32))](at, out, 70, 45, at.stride(0), at.stride(1), out.stride(0), BM=16, BN=32)
check("2-D strided copy of a transposed view", out, at.contiguous())

@triton.jit
def ptr_sub(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    end = x_ptr + BLOCK - 1
    tl.store(out_ptr + offs, tl.load(end - offs))

x = torch.randn(32, device=DEVICE)
out = torch.zeros(32, device=DEVICE)
ptr_sub[(1,)](x, out, BLOCK=32)
check("pointer minus offsets", out, torch.tensor([x[31 - i].item() for i in range(32)]))

# int64 offsets (as kernels for tensors past 2^31 elements write them) with a
# ragged tail: on the GPU these become 16-byte accesses under the mask.
@triton.jit
def add_int64(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)

n = 5000
x = torch.randn(n, device=DEVICE)
y = torch.randn(n, device=DEVICE)
out = torch.zeros(n + 16, device=DEVICE)
add_int64[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
check("int64 offsets", out[:n], x + y)
check("int64 offsets leave the tail alone", out[n:], torch.zeros(16, device=DEVICE))
n = 4096
out = torch.zeros(n, device=DEVICE)
add_int64[(triton.cdiv(n, 1024),)](x[:n], y[:n], out, n, BLOCK=1024)
check("int64 offsets, divisible size", out, x[:n] + y[:n])

# Offsets that run backwards (`c - arange`) and a column reshaped into a row:
# neither is a run of consecutive addresses, whatever the vector paths assume.
@triton.jit
def backwards(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + ((BLOCK - 1) - offs)))
    col = tl.load(x_ptr + offs[:, None] * 2)
    tl.store(out_ptr + BLOCK + offs, tl.reshape(col, [BLOCK]))

x = torch.randn(64, device=DEVICE)
out = torch.zeros(64, device=DEVICE)
backwards[(1,)](x, out, BLOCK=32)
check("offsets running backwards", out[:32], torch.tensor([x[31 - i].item() for i in range(32)]))
check("a column reshaped into a row", out[32:], torch.tensor([x[2 * i].item() for i in range(32)]))
