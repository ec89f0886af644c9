# Tile kernels behind tilebook's torch operations on 'cuda' tensors.
#
# When a session runs on a GPU, `x + y`, `torch.exp(x)`, `x.sum(dim=1)`,
# `x.max(dim=1)` and `torch.softmax(x, dim=-1)` on 'cuda' tensors launch
# these kernels instead of computing on the host (see
# runtime/host/src/device_ops.rs, which chooses when they apply and
# launches them). They are ordinary tile-language kernels, compiled by the
# same compiler as user kernels, and the host implementation of each
# operation is the reference they are tested against.
#
# Every operand is seen as a 2-D strided view (rows, cols); broadcast
# dimensions have stride 0. Half-precision inputs are computed in fp32 and
# rounded when stored, as torch does. Offsets are 32-bit, as in Triton's
# tutorials (device_ops.rs sends larger tensors to the host path): 64-bit
# offsets would hide the alignment facts that let loads be vectorised.

import triton
import triton.language as tl


@triton.jit
def tb_binary(x_ptr, y_ptr, out_ptr, n_rows, n_cols, sx0, sx1, sy0, sy1, y_value,
              OP: tl.constexpr, Y_SCALAR: tl.constexpr, BLOCK: tl.constexpr):
    # Program (i, j) computes columns [i * BLOCK, (i + 1) * BLOCK) of row j.
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    row = tl.program_id(1)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * sx0 + cols * sx1, mask=mask).to(tl.float32)
    if Y_SCALAR:
        y = y_value
    else:
        y = tl.load(y_ptr + row * sy0 + cols * sy1, mask=mask).to(tl.float32)
    if OP == 'add':
        z = x + y
    elif OP == 'sub':
        z = x - y
    elif OP == 'rsub':
        z = y - x
    elif OP == 'mul':
        z = x * y
    elif OP == 'div':
        z = x / y
    else:
        z = y / x
    tl.store(out_ptr + row * n_cols + cols, z, mask=mask)


@triton.jit
def tb_unary(x_ptr, out_ptr, n_rows, n_cols, sx0, sx1, OP: tl.constexpr, BLOCK: tl.constexpr):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    row = tl.program_id(1)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * sx0 + cols * sx1, mask=mask).to(tl.float32)
    if OP == 'exp':
        y = tl.exp(x)
    elif OP == 'abs':
        y = tl.abs(x)
    elif OP == 'relu':
        y = tl.maximum(x, 0.0)
    else:
        y = -x
    tl.store(out_ptr + row * n_cols + cols, y, mask=mask)


@triton.jit
def tb_row_sum(x_ptr, out_ptr, n_rows, n_cols, sx0, sx1, BLOCK: tl.constexpr):
    # One program per row, walking the row in blocks.
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offsets
        x = tl.load(x_ptr + row * sx0 + cols * sx1, mask=cols < n_cols, other=0.0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def tb_row_max(x_ptr, out_ptr, idx_ptr, n_rows, n_cols, sx0, sx1, BLOCK: tl.constexpr):
    # Each lane keeps the largest value it has seen and where; the first
    # position of the row's maximum is the smallest such index, as in torch.
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    best = tl.full([BLOCK], -float('inf'), dtype=tl.float32)
    where = tl.zeros([BLOCK], dtype=tl.int32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offsets
        x = tl.load(x_ptr + row * sx0 + cols * sx1, mask=cols < n_cols, other=-float('inf'))
        x = x.to(tl.float32)
        better = x > best
        best = tl.where(better, x, best)
        where = tl.where(better, cols, where)
    m = tl.max(best, axis=0)
    first = tl.min(tl.where(best == m, where, n_cols), axis=0)
    tl.store(out_ptr + row, m)
    tl.store(idx_ptr + row, first.to(tl.int64))


@triton.jit
def tb_softmax_row(x_ptr, out_ptr, n_rows, n_cols, sx0, BLOCK: tl.constexpr):
    # A whole row in one block: read once, write once.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * sx0 + cols, mask=mask, other=-float('inf')).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def tb_softmax_long(x_ptr, out_ptr, n_rows, n_cols, sx0, BLOCK: tl.constexpr):
    # Rows longer than a block: one pass for the running maximum and sum
    # (rescaling the sum whenever the maximum grows), one pass to write.
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], -float('inf'), dtype=tl.float32)
    total = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offsets
        x = tl.load(x_ptr + row * sx0 + cols, mask=cols < n_cols, other=-float('inf')).to(tl.float32)
        new_m = tl.maximum(m, x)
        scale = tl.where(new_m == -float('inf'), 0.0, tl.exp(m - new_m))
        grow = tl.where(new_m == -float('inf'), 0.0, tl.exp(x - new_m))
        total = total * scale + grow
        m = new_m
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(total * tl.exp(m - row_max), axis=0)
    for start in range(0, n_cols, BLOCK):
        cols = start + offsets
        mask = cols < n_cols
        x = tl.load(x_ptr + row * sx0 + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + row * n_cols + cols, tl.exp(x - row_max) / row_sum, mask=mask)


@triton.jit
def tb_random(out_ptr, n, seed, NORMAL: tl.constexpr, BELOW_ONE: tl.constexpr, BLOCK: tl.constexpr):
    # torch.rand/randn on a GPU: Philox (tl.rand/tl.randn) keyed by a seed
    # drawn from the session's generator, one counter per element. Uniform
    # values are kept below 1 in the output dtype (rounding to fp16 or bf16
    # could reach it).
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if NORMAL:
        r = tl.randn(seed, offs)
    else:
        r = tl.minimum(tl.rand(seed, offs), BELOW_ONE)
    tl.store(out_ptr + offs, r, mask=offs < n)


@triton.jit
def tb_cast(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # x.to(dtype), x.float(), x.half(), ... of a contiguous tensor between
    # fp32, fp16 and bf16: the store rounds to nearest even, as torch does.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
