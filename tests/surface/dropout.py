# The surface of Triton's fourth tutorial, in a program of our own: dropout
# from a keep-mask tensor, then "seeded" dropout whose mask a kernel draws
# with tl.rand from a seed and the element offsets, so that nothing but the
# seed has to be stored. The same seed gives the same mask; another seed
# another. Tables print with the `tabulate` package when it is installed.
import torch
import triton
import triton.language as tl

try:
    import tabulate
except ImportError:
    tabulate = None

DEVICE = triton.runtime.driver.active.get_active_torch_device()


def show(rows):
    if tabulate is not None:
        print(tabulate.tabulate(rows))
        return
    for row in rows:
        print(" ".join(f"{v:>9.4f}" if isinstance(v, float) else f"{v!s:>9}" for v in row))


@triton.jit
def masked_dropout(x_ptr, keep_ptr, out_ptr, count, p, TILE: tl.constexpr):
    idx = tl.program_id(axis=0) * TILE + tl.arange(0, TILE)
    inside = idx < count
    x = tl.load(x_ptr + idx, mask=inside)
    keep = tl.load(keep_ptr + idx, mask=inside)
    tl.store(out_ptr + idx, tl.where(keep, x / (1 - p), 0.0), mask=inside)


def dropout_with(x, keep, p):
    out = torch.empty_like(x)
    assert x.is_contiguous()
    count = x.numel()
    grid = lambda meta: (triton.cdiv(count, meta['TILE']), )
    masked_dropout[grid](x, keep, out, count, p, TILE=1024)
    return out


x = torch.randn(size=(10, ), device=DEVICE)
p = 0.5
keep = (torch.rand(size=(10, ), device=DEVICE) > p).to(torch.int32)
out = dropout_with(x, keep=keep, p=p)
show([["input"] + x.tolist(), ["keep"] + keep.tolist(), ["output"] + out.tolist()])
assert torch.equal(out, torch.where(keep.bool(), x / (1 - p), torch.zeros_like(x)))


@triton.jit
def seeded_dropout_kernel(x_ptr, out_ptr, count, p, seed, TILE: tl.constexpr):
    idx = tl.program_id(axis=0) * TILE + tl.arange(0, TILE)
    inside = idx < count
    x = tl.load(x_ptr + idx, mask=inside)
    keep = tl.rand(seed, idx) > p
    tl.store(out_ptr + idx, tl.where(keep, x / (1 - p), 0.0), mask=inside)


def seeded_dropout(x, p, seed):
    out = torch.empty_like(x)
    assert x.is_contiguous()
    count = x.numel()
    grid = lambda meta: (triton.cdiv(count, meta['TILE']), )
    seeded_dropout_kernel[grid](x, out, count, p, seed, TILE=1024)
    return out


x = torch.randn(size=(10, ), device=DEVICE)
first = seeded_dropout(x, p=0.5, seed=123)
again = seeded_dropout(x, p=0.5, seed=123)
other = seeded_dropout(x, p=0.5, seed=512)
show([["input"] + x.tolist(), ["seed 123"] + first.tolist(), ["seed 123 again"] + again.tolist(),
      ["seed 512"] + other.tolist()])
assert torch.equal(first, again), "the same seed must give the same mask"

# Over many elements the kept fraction is 1 - p, and kept values are scaled.
big = torch.ones(100000, device=DEVICE)
dropped = seeded_dropout(big, p=0.3, seed=7)
kept = (dropped != 0).float().mean().item()
assert abs(kept - 0.7) < 0.01, kept
scale = torch.full_like(dropped, 1 / 0.7)
assert torch.allclose(torch.where(dropped != 0, dropped, scale), scale)
print(f"kept {kept:.3f} of 100000 at p=0.3")
