import math

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def special(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.5)
    y = tl.load(y_ptr + offs, mask=mask, other=1.5)
    a = libdevice.asin(x) + libdevice.atan2(x, y) - libdevice.erf(y) * libdevice.tanh(x)
    b = libdevice.lgamma(y) + libdevice.log1p(y) + libdevice.hypot(x, y) + tl.erf(x)
    tl.store(out_ptr + offs, a + b + libdevice.fmax(x, y), mask=mask)


n = 777
x = torch.rand(n, device='cuda') * 1.8 - 0.9
y = torch.rand(n, device='cuda') * 3.0 + 0.5
out = torch.empty(n, device='cuda')
special[(triton.cdiv(n, 128),)](x, y, out, n, BLOCK=128)
xs, ys, got = x.tolist(), y.tolist(), out.tolist()
worst = 0.0
for i in range(n):
    a, b = xs[i], ys[i]
    want = (math.asin(a) + math.atan2(a, b) - math.erf(b) * math.tanh(a)
            + math.lgamma(b) + math.log1p(b) + math.hypot(a, b) + math.erf(a) + max(a, b))
    worst = max(worst, abs(want - got[i]))
print("worst difference", worst < 1e-4)
