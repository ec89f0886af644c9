import torch
import triton
import triton.language as tl

LIMIT = 5


@triton.jit
def helper(x, k: tl.constexpr):
    return x * k + 1


@triton.jit
def loops(out_ptr, n, steps, MODE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.int32)
    for i in range(0, steps):
        acc += i
    j = 0
    while j < LIMIT:
        acc = acc + j
        j += 1
    for s in tl.static_range(3):
        acc = helper(acc, 2)
    if MODE == "neg":
        acc = -acc
    else:
        acc = acc // 3 % 7
    tl.store(out_ptr + offs, acc, mask=offs < n)


out = torch.zeros(32, dtype=torch.int32, device='cuda')
loops[(1,)](out, 32, 4, MODE="neg", BLOCK=32)
loops[(1,)](out, 20, 7, MODE="mod", BLOCK=32)
print(out.tolist()[:4])
