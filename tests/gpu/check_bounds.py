# Checked GPU mode (run.sh runs this file with TILEBOOK_CHECK_BOUNDS=1 and
# without the CPU cross-check, which would stop each bad launch on the CPU
# first): out-of-bounds stores, loads, atomics, tile loads of a dot,
# accesses through addresses loaded from memory and integer division by
# zero are each reported with the kernel line, the program and the element,
# the bad access is not made, and the session goes on on the GPU. The CPU
# backend (always checked) reports the same lines.
import os

import torch
import triton
import triton.language as tl


@triton.jit
def add_store_unmasked(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    s = tl.load(x_ptr + offs, mask=inside) + tl.load(y_ptr + offs, mask=inside)
    tl.store(out_ptr + offs, s)


@triton.jit
def load_unmasked(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, v, mask=offs < n)


@triton.jit
def count_unmasked(hist_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(hist_ptr + offs, 1)


@triton.jit
def dot_rows_unmasked(a_ptr, b_ptr, c_ptr, M, BM: tl.constexpr, K: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    ks = tl.arange(0, K)
    a = tl.load(a_ptr + rows[:, None] * K + ks[None, :])
    b = tl.load(b_ptr + ks[:, None] * K + ks[None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + rows[:, None] * K + ks[None, :], c, mask=rows[:, None] < M)


@triton.jit
def through_addresses(addr_ptr, out_ptr):
    i = tl.program_id(0)
    p = tl.load(addr_ptr + i).to(tl.pointer_type(tl.float32))
    tl.store(out_ptr + i, tl.load(p))


@triton.jit
def divide(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    q = tl.load(x_ptr + offs) // tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, q)


def expect_index_error(run, *parts, kind=IndexError):
    try:
        run()
        torch.cuda.synchronize()
    except kind as e:
        msg = str(e)
        for p in parts:
            assert p in msg, (p, msg)
        if os.environ.get("TILEBOOK_CHECK_BOUNDS") == "1":
            assert "checked GPU mode" in msg, msg
        print("caught:", msg)
        return
    raise AssertionError("no IndexError for " + " ".join(parts))


n = 1000
x = torch.rand(n, device="cuda")
y = torch.rand(n, device="cuda")
out = torch.full((n,), -1.0, device="cuda")
# 8 programs of 128 cover 1024 elements: the last program stores 24 past the end.
expect_index_error(
    lambda: add_store_unmasked[(8,)](x, y, out, n, BLOCK=128),
    "out-of-bounds store in kernel `add_store_unmasked` at line 20",
    "program (7, 0, 0)",
    "of `out_ptr`, which has 1000 elements",
)
# Every in-bounds element was written; nothing else was.
assert torch.allclose(out, x + y)

expect_index_error(
    lambda: load_unmasked[(8,)](x, out, n, BLOCK=128),
    "out-of-bounds load in kernel `load_unmasked` at line 26",
    "of `x_ptr`",
)

hist = torch.zeros(100, dtype=torch.int32, device="cuda")
expect_index_error(
    lambda: count_unmasked[(1,)](hist, BLOCK=128),
    "out-of-bounds atomic in kernel `count_unmasked` at line 33",
    "of `hist_ptr`",
)
assert hist.sum().item() == 100, hist

M, K = 100, 64
a = torch.randn(M, K, device="cuda", dtype=torch.float16)
b = torch.randn(K, K, device="cuda", dtype=torch.float16)
c = torch.zeros(M, K, device="cuda", dtype=torch.float32)
expect_index_error(
    lambda: dot_rows_unmasked[(2,)](a, b, c, M, BM=64, K=K),
    "out-of-bounds load in kernel `dot_rows_unmasked` at line 40",
    "program (1, 0, 0)",
    "of `a_ptr`",
)

src = torch.arange(4, dtype=torch.float32, device="cuda")
addrs = torch.tensor([src.data_ptr(), src.data_ptr() + 4 * 10**7], dtype=torch.int64, device="cuda")
got = torch.zeros(2, device="cuda")
expect_index_error(
    lambda: through_addresses[(2,)](addrs, got),
    "out-of-bounds load in kernel `through_addresses` at line 50",
    "outside every tensor it may address",
)

# An integer division by zero is named too (the GPU's own answer would be
# meaningless): element 5 of the block divides by zero.
num = torch.arange(64, dtype=torch.int32, device="cuda")
den = torch.ones(64, dtype=torch.int32, device="cuda")
den[5] = 0
quot = torch.empty_like(num)
expect_index_error(
    lambda: divide[(1,)](num, den, quot, BLOCK=64),
    "integer division by zero in kernel `divide` at line 56: program (0, 0, 0), element 5",
    kind=ZeroDivisionError,
)

# No fault happened: the session is still on the GPU, and correct launches
# pass their checks.
ok = torch.empty_like(x)
add_store_unmasked[(1,)](x[:128].contiguous(), y[:128].contiguous(), ok[:128], 128, BLOCK=128)
assert torch.allclose(ok[:128], x[:128] + y[:128])
c_ok = torch.zeros(128, K, device="cuda", dtype=torch.float32)
a_ok = torch.randn(128, K, device="cuda", dtype=torch.float16)
dot_rows_unmasked[(2,)](a_ok, b, c_ok, 128, BM=64, K=K)
assert torch.allclose(c_ok, a_ok.float() @ b.float(), atol=1e-2, rtol=1e-2)
assert x.device.type == "cuda"
print("checked GPU mode ok")
