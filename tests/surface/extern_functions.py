# The API surface of an extern-functions program (ours): a kernel that calls
# NVIDIA's math library through `triton.language.extra.libdevice`, checked
# against torch's own function; then the same launch naming its libdevice
# file through `extern_libs` (a path computed from this file's location,
# which need not exist: the default library is linked then).
import inspect
import os
from pathlib import Path

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def special_kernel(src_ptr, dst_ptr, count, BLOCK: tl.constexpr):
    start = tl.program_id(axis=0) * BLOCK
    idx = start + tl.arange(0, BLOCK)
    inside = idx < count
    v = tl.load(src_ptr + idx, mask=inside)
    # arcsine and the error function, as libdevice spells them
    out = libdevice.asin(v) + libdevice.erf(v) * 0.5
    tl.store(dst_ptr + idx, out, mask=inside)


torch.manual_seed(3)
count = 77777
src = torch.rand(count, device=DEVICE) * 1.8 - 0.9
reference = torch.asin(src) + torch.erf(src) * 0.5
dst = torch.zeros(count, device=DEVICE)
assert src.is_cuda and dst.is_cuda
grid = lambda meta: (triton.cdiv(count, meta['BLOCK']), )
special_kernel[grid](src, dst, count, BLOCK=1024)
print(f'largest difference from torch: {torch.max(torch.abs(reference - dst)):.3e}')
assert torch.allclose(reference, dst, atol=1e-6)


target = triton.runtime.driver.active.get_current_target()
print(f'target backend: {target.backend}')
here = Path(os.path.dirname(os.path.abspath(inspect.getfile(inspect.currentframe()))))
libs = {'libdevice': str(here.parent / 'backend-lib' / 'libdevice.10.bc')}
again = torch.empty_like(src)
special_kernel[grid](src, again, count, BLOCK=1024, extern_libs=libs)
print(f'with extern_libs, largest difference: {torch.max(torch.abs(reference - again)):.3e}')
assert torch.equal(dst, again)
print('extern functions agree with torch')
