# Inline PTX on the GPU (the CPU backend refuses it, so this file is not a
# conformance case): tl.inline_asm_elementwise over int32 and float32
# blocks with broadcast operands, and tl.extra.cuda.globaltimer/smid.
import torch
import triton
import triton.language as tl


@triton.jit
def asm_ops(x_ptr, y_ptr, shl_ptr, fma_ptr, when_ptr, sm_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    x = tl.load(x_ptr + offs, mask=inside, other=0)
    y = tl.load(y_ptr + offs, mask=inside, other=0.0)
    shifted = tl.inline_asm_elementwise("shl.b32 $0, $1, 3;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
    # A scalar operand broadcast against a block: y * 2 + 0.5 in one fma.
    fused = tl.inline_asm_elementwise("fma.rn.f32 $0, $1, $2, $3;", "=f,f,f,f", [y, 2.0, 0.5],
                                      dtype=tl.float32, is_pure=True, pack=1)
    tl.store(shl_ptr + offs, shifted, mask=inside)
    tl.store(fma_ptr + offs, fused, mask=inside)
    tl.store(when_ptr + tl.program_id(0), tl.extra.cuda.globaltimer())
    tl.store(sm_ptr + tl.program_id(0), tl.extra.cuda.smid())


n = 1000
x = torch.arange(n, dtype=torch.int32, device="cuda") - 500
y = torch.randn(n, device="cuda")
shl = torch.empty_like(x)
fma = torch.empty_like(y)
programs = triton.cdiv(n, 128)
when = torch.zeros(programs, dtype=torch.int64, device="cuda")
sm = torch.full((programs,), -1, dtype=torch.int32, device="cuda")
asm_ops[(programs,)](x, y, shl, fma, when, sm, n, BLOCK=128)
assert torch.equal(shl, x * 8), "shl.b32 by 3"
assert torch.allclose(fma, y * 2 + 0.5), "fma.rn.f32"
t = when.tolist()
assert min(t) > 0 and max(t) - min(t) < 10**9, f"globaltimer readings {t}"
sms = torch.cuda.get_device_properties("cuda").multi_processor_count
assert all(0 <= s < sms for s in sm.tolist()), f"smid {sm.tolist()}"
print("inline PTX: shl, fma, globaltimer and smid as expected")
