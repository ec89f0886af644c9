# tl.device_print, tl.static_print, tl.static_assert, hints (multiple_of,
# max_contiguous, max_constancy), and a device_assert that holds.
@triton.jit
def hints(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)
    # every element of a row of `base` is the same: a constancy hint
    base = tl.max_constancy(tl.zeros((BLOCK,), dtype=tl.int32) + tl.program_id(0), [BLOCK])
    offs = offs + base * 0
    tl.static_print("BLOCK is", BLOCK)
    tl.static_assert(BLOCK % 16 == 0, "BLOCK must be a multiple of 16")
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.device_assert(offs >= 0, "negative offset")
    tl.store(out_ptr + offs, x + 1, mask=offs < n)

x = torch.randn(100, device=DEVICE)
out = torch.zeros(100, device=DEVICE)
hints[(4,)](x, out, 100, BLOCK=32)
check("hints are identities", out, x + 1)

@triton.jit
def printer(x_ptr):
    v = tl.load(x_ptr + tl.arange(0, 2))
    tl.device_print("v=", v)

printer[(1,)](torch.tensor([1.5, 2.5], device=DEVICE))


@triton.jit
def two_printer(x_ptr):
    v = tl.load(x_ptr + tl.arange(0, 2))
    tl.device_print("x", v, tl.arange(0, 2) * 3)

two_printer[(1,)](torch.tensor([1.5, 2.5], device=DEVICE))
