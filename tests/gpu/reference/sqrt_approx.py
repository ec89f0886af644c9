# The table behind the CPU backend's tl.sqrt (compiler/cpu/data/
# sqrt_approx_sm90.zlib), measured with Triton on an sm_90 GPU:
#   python3 tests/gpu/reference/sqrt_approx.py compiler/cpu/data/sqrt_approx_sm90.zlib
# Triton's tl.sqrt in fp32 is the hardware's sqrt.approx.ftz.f32, faithful
# but not correctly rounded. Its result depends on the mantissa and the
# exponent's parity only, so inputs in [1, 4) cover every case: for each,
# one signed byte, the GPU's result minus the correctly rounded root in
# units in the last place; [1, 2) first. The script also checks that two
# other exponent pairs give the same differences.
import sys
import zlib
import torch
import triton
import triton.language as tl


@triton.jit
def roots(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(y_ptr + i, tl.sqrt(tl.load(x_ptr + i, mask=m)), mask=m)


def differences(first_bits):
    bits = torch.arange(first_bits, first_bits + (1 << 24), dtype=torch.int64, device="cuda")
    x = bits.to(torch.int32).view(torch.float32)
    y = torch.empty_like(x)
    roots[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    exact = torch.sqrt(x.double()).float()
    d = y.view(torch.int32).long() - exact.view(torch.int32).long()
    assert int(d.abs().max()) <= 1, "sqrt.approx is more than one ulp from the root"
    return d.to(torch.int8)


table = differences(0x3F800000)  # [1, 4)
for first in (0x2F800000, 0x5F800000):  # [2^-32, 2^-30), [2^64, 2^66)
    assert torch.equal(differences(first), table), "the differences depend on the exponent"
data = zlib.compress(table.cpu().numpy().tobytes(), 9)
with open(sys.argv[1], "wb") as f:
    f.write(data)
print(f"{table.numel()} entries, {int((table != 0).sum())} off by one ulp, {len(data)} bytes")
