import torch
import triton
import triton.language as tl


@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x + y * 2.0, mask=mask)


n = 1000
x = torch.rand(n, device='cuda', dtype=torch.float32)
y = torch.rand(n, device='cuda', dtype=torch.float32)
out = torch.empty_like(x)
grid = lambda meta: (triton.cdiv(n, meta['BLOCK']),)
add[grid](x, y, out, n, BLOCK=128)
print(torch.allclose(out, x + y * 2.0), out[:3])
