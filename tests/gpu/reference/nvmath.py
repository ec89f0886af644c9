# Triton's fp32 log, log2, sin, cos and sqrt on this GPU, for checking the
# CPU backend's versions of them (compiler/cpu/src/nvmath.rs) bit for bit.
#   python3 tests/gpu/reference/nvmath.py samples > compiler/cpu/tests/data/nvmath_sm90.txt
#     a few thousand inputs per function: special values, the inputs
#     tl.randn gives each, and bit patterns from the whole range;
#   python3 tests/gpu/reference/nvmath.py dump DIR
#     every fifth bit pattern of the 2^32 (DIR/<fn>.bin, raw fp32), for
#     `TILEBOOK_NVMATH_DUMP=DIR cargo test -p tilebook-cpu --test nvmath`.
import os
import sys
import torch
import triton
import triton.language as tl

STRIDE = 5
FUNCTIONS = ["log", "log2", "sin", "cos", "sqrt"]


@triton.jit
def apply(x_ptr, y_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    x = tl.load(x_ptr + i, mask=m)
    if FN == "log":
        y = tl.log(x)
    elif FN == "log2":
        y = tl.log2(x)
    elif FN == "sin":
        y = tl.sin(x)
    elif FN == "cos":
        y = tl.cos(x)
    else:
        y = tl.sqrt(x)
    tl.store(y_ptr + i, y, mask=m)


def run(fn, bits):
    x = bits.to(torch.int32).view(torch.float32)
    y = torch.empty_like(x)
    apply[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), FN=fn, BLOCK=1024)
    return y.view(torch.int32).long() & 0xFFFFFFFF


def samples():
    g = torch.Generator(device="cuda").manual_seed(42)
    special = [0, 0x80000000, 1, 0x807FFFFF, 0x00800000, 0x3F800000, 0xBF800000, 0x7F800000,
               0xFF800000, 0x7FC00000, 0x7F7FFFFF, 0x47CE4780, 0x47CE4700, 0x4B000000, 0x49800000]
    spread = torch.randint(0, 1 << 32, (1500,), generator=g, device="cuda", dtype=torch.int64)
    # tl.randn's log sees [1e-7, 1), its sin and cos [0, 2 pi), its sqrt [0, 32.3].
    u = torch.rand(500, generator=g, device="cuda").clamp(min=1e-7)
    th = torch.rand(500, generator=g, device="cuda") * 6.2831855
    r2 = torch.rand(500, generator=g, device="cuda") * 32.3
    domain = {"log": u, "log2": u, "sin": th, "cos": th, "sqrt": r2}
    for fn in FUNCTIONS:
        own = domain[fn].view(torch.int32).long() & 0xFFFFFFFF
        bits = torch.cat([torch.tensor(special, device="cuda"), spread, own])
        for a, b in zip(bits.tolist(), run(fn, bits).tolist()):
            print(f"{fn} {a:08x} {b:08x}")


def dump(folder):
    os.makedirs(folder, exist_ok=True)
    chunk = STRIDE << 26
    for fn in FUNCTIONS:
        with open(os.path.join(folder, fn + ".bin"), "wb") as f:
            for start in range(0, 1 << 32, chunk):
                bits = torch.arange(start, min(start + chunk, 1 << 32), STRIDE, device="cuda")
                f.write(run(fn, bits).to(torch.int32).cpu().numpy().tobytes())


if sys.argv[1] == "samples":
    samples()
else:
    dump(sys.argv[2])
