import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def combine(a, b):
    return a + b


@triton.jit
def moves(x_ptr, i_ptr, o_ptr, addrs, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    idx = tl.load(i_ptr + offs)
    y = tl.sort(x, descending=True) + tl.flip(x, 0) + tl.gather(x, idx, 0)
    a, b = tl.split(tl.reshape(x, (N // 2, 2)))
    y += tl.interleave(b, a) + tl.associative_scan(x, 0, combine)
    y += tl.cat(a, b, can_reorder=True)
    h = tl.histogram(idx, N)
    p = tl.load(addrs).to(tl.pointer_type(tl.float32))
    tl.store(p + offs, y + h.to(tl.float32))


@triton.jit
def blocks(x_ptr, d, M, BM: tl.constexpr):
    bp = tl.make_block_ptr(x_ptr, (M, 16), (16, 1), (tl.program_id(0) * BM, 0), (BM, 16), (1, 0))
    v = tl.load(bp, boundary_check=(0, 1), padding_option="zero")
    desc = tl.make_tensor_descriptor(x_ptr, [M, 16], [16, 1], [BM, 16])
    desc.store([tl.program_id(0) * BM, 0], v * 2)
    bp = tl.advance(bp, (BM, 0))
    blk = d.load([0, 0])
    d.store([0, 0], blk + 1)


N = 32
x = torch.randn(N, device='cuda')
i = torch.randint(0, N, (N,), device='cuda', dtype=torch.int32)
o = torch.zeros(N, device='cuda')
addrs = torch.tensor([o.data_ptr()], device='cuda')
moves[(1,)](x, i, o, addrs, N=N)
m = torch.randn(40, 16, device='cuda')
blocks[(3,)](m, TensorDescriptor.from_tensor(m, [16, 16]), 40, BM=16)
print(o.sum().item() != 0, m.shape)
