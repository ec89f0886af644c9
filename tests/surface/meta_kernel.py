# An old-style kernel: meta-parameters through `**meta` (Triton 1.x), read
# with meta['BLOCK'] in the kernel and in the grid function.
import torch
import triton
import triton.language as tl


@triton.jit
def _add(X, Y, Z, N, **meta):
    pid = tl.program_id(0)
    BLOCK = meta['BLOCK']
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask)
    y = tl.load(Y + offs, mask=mask)
    tl.store(Z + offs, x + y, mask=mask)


N = 10007
x = torch.randn(N, device='cuda')
y = torch.randn(N, device='cuda')
z = torch.empty_like(x)
grid = lambda meta: (triton.cdiv(N, meta['BLOCK']),)
_add[grid](x, y, z, N, BLOCK=1024)
assert torch.allclose(z, x + y)
_add[grid](x, y, z, N, BLOCK=256, num_warps=2)
assert torch.allclose(z, x + y)
print("meta kernel ok")
