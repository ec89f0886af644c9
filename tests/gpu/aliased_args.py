# Two arguments of one launch that are the same tensor (tutorial 06 passes
# its `lse` again as an unused `Visits`): run.sh cross-checks every launch
# on the CPU backend (TILEBOOK_CHECK_GPU=1), whose copies of such arguments
# must be one copy, so a write through one is seen through the other, as on
# the GPU. (Each had its own copy until session 41: a launch writing `lse`
# was reported as disagreeing on `Visits`.)
import torch
import triton
import triton.language as tl


@triton.jit
def row_sums(X, Out, Unused, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + row * n + cols, mask=cols < n, other=0.0)
    tl.store(Out + row, tl.sum(x, axis=0))


@triton.jit
def bump_through_second(A, B, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    tl.store(B + offs, tl.load(A + offs, mask=inside) + 1.0, mask=inside)


x = torch.randn((37, 50), device="cuda")
out = torch.empty(37, device="cuda")
row_sums[(37,)](x, out, out, 50, BLOCK=64)
torch.testing.assert_close(out, x.sum(dim=1), atol=1e-4, rtol=1e-4)

a = torch.arange(300, device="cuda", dtype=torch.float32)
bump_through_second[(3,)](a, a, 300, BLOCK=128)
torch.testing.assert_close(a, torch.arange(300, device="cuda", dtype=torch.float32) + 1.0)
# Overlapping views of one storage: the second starts 10 elements in.
b = torch.zeros(310, device="cuda")
row_sums[(1,)](x, b[10:], b, 50, BLOCK=64)
assert float(b[10]) == float(x[0].sum()) or abs(float(b[10]) - float(x[0].sum())) < 1e-4
print("aliased arguments: the GPU and the CPU reference agree")
