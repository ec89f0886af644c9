# libdevice through tilebook against Triton, bit for bit: the same program
# runs under python3 (Triton) and `tilebook run --device cuda`; each prints
# every result as float.hex, and the outputs must be identical (both call
# NVIDIA's libdevice; the inputs are made inside the kernel, so both see the
# same fp32 values). Usage on the GPU machine:
#   python3 tests/gpu/reference/libdevice.py > triton.txt
#   tilebook run --device cuda tests/gpu/reference/libdevice.py > ours.txt
#   diff triton.txt ours.txt
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def special(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    # x in (-1, 1), y in (0.5, 3.5), from the index alone.
    x = (offs.to(tl.float32) - n / 2) * (1.98 / n)
    y = offs.to(tl.float32) * (3.0 / n) + 0.5
    tl.store(out_ptr + 0 * n + offs, libdevice.asin(x), mask=m)
    tl.store(out_ptr + 1 * n + offs, libdevice.erf(y - 2.0), mask=m)
    tl.store(out_ptr + 2 * n + offs, libdevice.tanh(y * x), mask=m)
    tl.store(out_ptr + 3 * n + offs, libdevice.atan2(x, y), mask=m)
    tl.store(out_ptr + 4 * n + offs, libdevice.lgamma(y), mask=m)
    tl.store(out_ptr + 5 * n + offs, libdevice.log1p(y), mask=m)
    tl.store(out_ptr + 6 * n + offs, libdevice.cbrt(x), mask=m)
    tl.store(out_ptr + 7 * n + offs, libdevice.hypot(x, y), mask=m)


n = 2048
out = torch.zeros(8 * n, device="cuda", dtype=torch.float32)
special[(triton.cdiv(n, 256),)](out, n, BLOCK=256)
for v in out.tolist():
    print(float(v).hex())
