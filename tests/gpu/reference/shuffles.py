# tl.sort / flip / gather / join / split / interleave / histogram /
# associative_scan, block pointers and tensor descriptors, through tilebook
# against Triton: the same program runs under python3 (Triton) and
# `tilebook run --device cuda`, with inputs computed from indices (no random
# numbers), and prints every result; the two outputs must be identical.
import torch
import triton
import triton.language as tl

DEVICE = 'cuda'
triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=DEVICE))


@triton.jit
def combine_add(a, b):
    return a + b


@triton.jit
def combine_affine(a1, b1, a2, b2):
    return a1 * a2, b1 * a2 + b2


@triton.jit
def moves(x_ptr, i_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    idx = tl.load(i_ptr + offs)
    tl.store(out_ptr + 0 * N + offs, tl.sort(x))
    tl.store(out_ptr + 1 * N + offs, tl.sort(x, descending=True))
    tl.store(out_ptr + 2 * N + offs, tl.flip(x, 0))
    tl.store(out_ptr + 3 * N + offs, tl.gather(x, idx, 0))
    a, b = tl.split(tl.reshape(x, (N // 2, 2)))
    tl.store(out_ptr + 4 * N + tl.arange(0, N), tl.interleave(b, a))
    tl.store(out_ptr + 5 * N + offs, tl.associative_scan(x, 0, combine_add))
    tl.store(out_ptr + 6 * N + offs, tl.associative_scan(x, 0, combine_add, reverse=True))
    r = tl.reshape(x, (8, N // 8))
    tl.store(out_ptr + 7 * N + offs, tl.reshape(tl.sort(r, descending=True), (N,)))


@triton.jit
def counts(x_ptr, out_ptr, N: tl.constexpr, BINS: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + tl.arange(0, BINS), tl.histogram(x, BINS))
    a = (x % 3 - 1).to(tl.int32)
    _, y = tl.associative_scan((a, x), 0, combine_affine)
    tl.store(out_ptr + BINS + offs, y)


@triton.jit
def blocks(x_ptr, y_ptr, z_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    bp = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (pm * BM, 0), (BM, BN), (1, 0))
    yp = tl.make_block_ptr(y_ptr, (M, N), (N, 1), (pm * BM, 0), (BM, BN), (1, 0))
    zd = tl.make_tensor_descriptor(z_ptr, [M, N], [N, 1], [BM, BN])
    for j in range(0, tl.cdiv(N, BN)):
        v = tl.load(bp, boundary_check=(0, 1), padding_option="zero")
        tl.store(yp, v * 2 + 1, boundary_check=(0, 1))
        zd.store([pm * BM, j * BN], v - 1)
        bp = tl.advance(bp, (0, BN))
        yp = tl.advance(yp, (0, BN))


N = 128
i = torch.arange(N, device=DEVICE, dtype=torch.int32)
x = ((i * 37 + 11) % 101 - 50).to(torch.float32) * 0.25
idx = (i * 53 + 7) % N
out = torch.zeros(8 * N, device=DEVICE)
moves[(1,)](x, idx, out, N=N)
for r in range(8):
    print("moves", r, out[r * N:(r + 1) * N].tolist())

xi = (i * 29 + 3) % 16
out = torch.zeros(16 + N, device=DEVICE, dtype=torch.int32)
counts[(1,)](xi, out, N=N, BINS=16)
print("histogram", out[:16].tolist())
print("affine scan", out[16:].tolist())

M, Nc = 37, 44  # rows of 176 bytes: TMA needs 16-byte-aligned strides
k = torch.arange(M * Nc, device=DEVICE, dtype=torch.float32).reshape(M, Nc)
y = torch.zeros(M, Nc, device=DEVICE)
z = torch.zeros(M, Nc, device=DEVICE)
blocks[(triton.cdiv(M, 16),)](k, y, z, M, Nc, BM=16, BN=16)
print("block ptr", y.sum().item(), y[36].tolist())
print("descriptor", z.sum().item(), z[36].tolist())
