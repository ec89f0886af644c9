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
# tutorials, unless a tensor is too large for them (`WIDE`): 64-bit offsets
# cost the alignment facts that let loads be vectorised, so only tensors
# that need them pay.

import triton
import triton.language as tl


@triton.jit
def _index(axis: tl.constexpr, WIDE: tl.constexpr):
    # This program's index along `axis`, as a 64-bit integer when the
    # tensors are too large for 32-bit offsets (`WIDE`), so that offsets
    # computed from it are 64-bit too.
    i = tl.program_id(axis)
    if WIDE:
        i = i.to(tl.int64)
    return i


@triton.jit
def tb_binary(x_ptr, y_ptr, out_ptr, n_rows, n_cols, sx0, sx1, sy0, sy1, y_value,
              OP: tl.constexpr, Y_SCALAR: tl.constexpr, WIDE: tl.constexpr, BLOCK: tl.constexpr):
    # Program (i, j) computes columns [i * BLOCK, (i + 1) * BLOCK) of row j.
    cols = _index(0, WIDE) * BLOCK + tl.arange(0, BLOCK)
    row = _index(1, WIDE)
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
    # torch divides correctly rounded (a kernel's fp32 `/` is Triton's
    # `div.full.f32`, within 2 ulp).
    elif OP == 'div':
        z = tl.div_rn(x, y)
    elif OP == 'rdiv':
        z = tl.div_rn(y, x)
    # Comparisons store one byte per element (torch.bool).
    elif OP == 'eq':
        z = (x == y).to(tl.int8)
    elif OP == 'ne':
        z = (x != y).to(tl.int8)
    elif OP == 'lt':
        z = (x < y).to(tl.int8)
    elif OP == 'le':
        z = (x <= y).to(tl.int8)
    elif OP == 'gt':
        z = (x > y).to(tl.int8)
    else:
        z = (x >= y).to(tl.int8)
    tl.store(out_ptr + row * n_cols + cols, z, mask=mask)


@triton.jit
def tb_unary(x_ptr, out_ptr, n_rows, n_cols, sx0, sx1, OP: tl.constexpr, WIDE: tl.constexpr,
             BLOCK: tl.constexpr):
    cols = _index(0, WIDE) * BLOCK + tl.arange(0, BLOCK)
    row = _index(1, WIDE)
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
def tb_row_sum(x_ptr, out_ptr, n_rows, n_cols, sx0, sx1, WIDE: tl.constexpr, BLOCK: tl.constexpr):
    # One program per row, walking the row in blocks.
    row = _index(0, WIDE)
    offsets = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offsets
        x = tl.load(x_ptr + row * sx0 + cols * sx1, mask=cols < n_cols, other=0.0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def tb_row_max(x_ptr, out_ptr, idx_ptr, n_rows, n_cols, sx0, sx1, WIDE: tl.constexpr,
               BLOCK: tl.constexpr):
    # Each lane keeps the largest value it has seen and where; the first
    # position of the row's maximum is the smallest such index, as in torch.
    # A NaN is the maximum, as in torch (tl.max alone would ignore it): a
    # lane keeps its first NaN, and a row with one answers NaN and the
    # first NaN's position.
    row = _index(0, WIDE)
    offsets = tl.arange(0, BLOCK)
    best = tl.full([BLOCK], -float('inf'), dtype=tl.float32)
    where = tl.zeros([BLOCK], dtype=tl.int32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offsets
        x = tl.load(x_ptr + row * sx0 + cols * sx1, mask=cols < n_cols, other=-float('inf'))
        x = x.to(tl.float32)
        better = (x > best) | ((x != x) & (best == best))
        best = tl.where(better, x, best)
        where = tl.where(better, cols, where)
    nan = best != best
    any_nan = tl.max(nan.to(tl.int32), axis=0) > 0
    m = tl.where(any_nan, float('nan'), tl.max(best, axis=0))
    hit = tl.where(any_nan, nan, best == m)
    first = tl.min(tl.where(hit, where, n_cols), axis=0)
    tl.store(out_ptr + row, m)
    tl.store(idx_ptr + row, first.to(tl.int64))


@triton.jit
def tb_softmax_row(x_ptr, out_ptr, n_rows, n_cols, sx0, WIDE: tl.constexpr, BLOCK: tl.constexpr):
    # A whole row in one block: read once, write once.
    row = _index(0, WIDE)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * sx0 + cols, mask=mask, other=-float('inf')).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def tb_softmax_long(x_ptr, out_ptr, n_rows, n_cols, sx0, WIDE: tl.constexpr, BLOCK: tl.constexpr):
    # Rows longer than a block: one pass for the running maximum and sum
    # (rescaling the sum whenever the maximum grows), one pass to write.
    row = _index(0, WIDE)
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
def tb_softmax_bwd(g_ptr, y_ptr, out_ptr, n_rows, n_cols, sg0, sy0, WIDE: tl.constexpr, BLOCK: tl.constexpr):
    # softmax's backward along rows (each contiguous), one row per program:
    # dx = y * (g - sum(g * y)), in fp32, stored in the output's dtype.
    row = _index(0, WIDE)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    g = tl.load(g_ptr + row * sg0 + cols, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + row * sy0 + cols, mask=mask, other=0.0).to(tl.float32)
    s = tl.sum(g * y, axis=0)
    tl.store(out_ptr + row * n_cols + cols, y * (g - s), mask=mask)


@triton.jit
def tb_layer_norm_fwd(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, n, sx0, eps,
                      HAS_W: tl.constexpr, HAS_B: tl.constexpr, WIDE: tl.constexpr, BLOCK: tl.constexpr):
    # F.layer_norm over rows of n (each contiguous), one row per program, in
    # fp32: y = (x - mean) * rstd * w + b in y's dtype; mean and rstd kept
    # for the backward.
    row = _index(0, WIDE)
    cols = tl.arange(0, BLOCK)
    inside = cols < n
    x = tl.load(x_ptr + row * sx0 + cols, mask=inside, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n
    xc = tl.where(inside, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(xc * xc, axis=0) / n + eps)
    y = xc * rstd
    if HAS_W:
        y = y * tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    if HAS_B:
        y = y + tl.load(b_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * n + cols, y.to(y_ptr.dtype.element_ty), mask=inside)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def tb_layer_norm_bwd(x_ptr, g_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, dw_ptr, db_ptr, m, n, sx0, sg0,
                      HAS_W: tl.constexpr, NEED_WB: tl.constexpr, WIDE: tl.constexpr, BLOCK: tl.constexpr):
    # Its backward. Program p takes rows p, p + P, p + 2P, ... (P programs):
    # dx = (wg - (xhat * c1 + c2)) * rstd with wg = g * w, c1 = mean(xhat *
    # wg), c2 = mean(wg); its rows' dw = sum g * xhat and db = sum g are kept
    # in registers and written as row p of the fp32 partial sums dw_ptr,
    # db_ptr ([P, n]), which tb_col_sums adds up: no atomics, and the same
    # sums in the same order every run.
    p = _index(0, WIDE)
    programs = tl.num_programs(0)
    cols = tl.arange(0, BLOCK)
    inside = cols < n
    w = tl.full([BLOCK], 1.0, tl.float32)
    if HAS_W:
        w = tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    dw = tl.zeros([BLOCK], tl.float32)
    db = tl.zeros([BLOCK], tl.float32)
    for row in range(p, m, programs):
        x = tl.load(x_ptr + row * sx0 + cols, mask=inside, other=0.0).to(tl.float32)
        g = tl.load(g_ptr + row * sg0 + cols, mask=inside, other=0.0).to(tl.float32)
        rstd = tl.load(rstd_ptr + row)
        xhat = tl.where(inside, (x - tl.load(mean_ptr + row)) * rstd, 0.0)
        wg = g * w
        c1 = tl.sum(xhat * wg, axis=0) / n
        c2 = tl.sum(wg, axis=0) / n
        dx = (wg - (xhat * c1 + c2)) * rstd
        tl.store(dx_ptr + row * n + cols, dx.to(dx_ptr.dtype.element_ty), mask=inside)
        if NEED_WB:
            dw += g * xhat
            db += g
    if NEED_WB:
        tl.store(dw_ptr + p * n + cols, dw, mask=inside)
        tl.store(db_ptr + p * n + cols, db, mask=inside)


@triton.jit
def tb_col_sums(a_ptr, b_ptr, a_out, b_out, rows, n, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    # The column sums of two fp32 [rows, n] matrices (layer norm's partial
    # dw and db rows), BLOCK_N columns per program.
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    sa = tl.zeros([BLOCK_R, BLOCK_N], tl.float32)
    sb = tl.zeros([BLOCK_R, BLOCK_N], tl.float32)
    for r0 in range(0, rows, BLOCK_R):
        r = r0 + tl.arange(0, BLOCK_R)
        ok = (r[:, None] < rows) & (cols[None, :] < n)
        at = r[:, None] * n + cols[None, :]
        sa += tl.load(a_ptr + at, mask=ok, other=0.0)
        sb += tl.load(b_ptr + at, mask=ok, other=0.0)
    tl.store(a_out + cols, tl.sum(sa, axis=0), mask=cols < n)
    tl.store(b_out + cols, tl.sum(sb, axis=0), mask=cols < n)


@triton.jit
def tb_random(out_ptr, n, seed, mean, std, NORMAL: tl.constexpr, BELOW_ONE: tl.constexpr,
              SCALED: tl.constexpr, WIDE: tl.constexpr, BLOCK: tl.constexpr):
    # torch.rand/randn on a GPU: Philox (tl.rand/tl.randn) keyed by a seed
    # drawn from the session's generator, one counter per element. Uniform
    # values are kept below 1 in the output dtype (rounding to fp16 or bf16
    # could reach it). `normal_(mean, std)` and `uniform_(a, b)` (mean = a,
    # std = b - a) scale the samples.
    offs = _index(0, WIDE) * BLOCK + tl.arange(0, BLOCK)
    if NORMAL:
        r = tl.randn(seed, offs)
    else:
        r = tl.minimum(tl.rand(seed, offs), BELOW_ONE)
    if SCALED:
        r = r * std + mean
    tl.store(out_ptr + offs, r, mask=offs < n)


@triton.jit
def tb_cast(x_ptr, out_ptr, n, WIDE: tl.constexpr, BLOCK: tl.constexpr):
    # x.to(dtype), x.float(), x.half(), ... of a contiguous tensor between
    # fp32, fp16 and bf16: the store rounds to nearest even, as torch does.
    offs = _index(0, WIDE) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def tb_cast_fp8(x_ptr, out_ptr, n, E5: tl.constexpr, WIDE: tl.constexpr, BLOCK: tl.constexpr):
    # x.to(torch.float8_e5m2 / float8_e4m3fn) as torch rounds: to nearest
    # even, and past the largest finite value to inf (e5m2) or NaN (e4m3fn,
    # which has no inf) where a kernel's own conversion saturates. out_ptr
    # holds the result's bytes (uint8).
    offs = _index(0, WIDE) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    sign = tl.where(x < 0, 0x80, 0)
    if E5:
        code = x.to(tl.float8e5).to(tl.uint8, bitcast=True).to(tl.int32)
        code = tl.where(tl.abs(x) >= 61440.0, sign | 0x7C, code)
    else:
        code = x.to(tl.float8e4nv).to(tl.uint8, bitcast=True).to(tl.int32)
        code = tl.where(tl.abs(x) > 464.0, sign | 0x7F, code)
    code = tl.where(x != x, 0x7F, code)
    tl.store(out_ptr + offs, code.to(tl.uint8), mask=mask)


@triton.jit
def tb_copy(x_ptr, out_ptr, n, d1, d2, d3, s0, s1, s2, s3, WIDE: tl.constexpr, BLOCK: tl.constexpr):
    # x.contiguous() / x.clone() of a strided view of rank <= 4 (sizes
    # (., d1, d2, d3), strides s0..s3; missing dimensions have size 1):
    # element i of the output is the view's element at i's row-major index.
    offs = _index(0, WIDE) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    i3 = offs % d3
    rest = offs // d3
    i2 = rest % d2
    rest = rest // d2
    i1 = rest % d1
    i0 = rest // d1
    x = tl.load(x_ptr + i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3, mask=mask)
    tl.store(out_ptr + offs, x, mask=mask)


@triton.jit
def tb_copy_flat(x_ptr, out_ptr, n, WIDE: tl.constexpr, BLOCK: tl.constexpr):
    # A contiguous copy (the view's elements in storage order).
    offs = _index(0, WIDE) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def tb_masked_fill(x_ptr, mask_ptr, n, inner, mask_n, value, WIDE: tl.constexpr, BLOCK: tl.constexpr):
    # x[..., mask, ...] = value on a contiguous x, the mask (one byte per
    # element) covering mask_n elements of x's middle dimensions: element i
    # of x lies under mask element (i // inner) % mask_n.
    offs = _index(0, WIDE) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    chosen = tl.load(mask_ptr + (offs // inner) % mask_n, mask=inside, other=0)
    fill = tl.full([BLOCK], value, tl.float32)
    tl.store(x_ptr + offs, fill, mask=inside & (chosen != 0))


@triton.jit
def tb_triangle(x_ptr, out_ptr, n, rows, cols, diagonal, LOWER: tl.constexpr, WIDE: tl.constexpr,
                BLOCK: tl.constexpr):
    # torch.tril / torch.triu of a contiguous tensor: element (r, c) of each
    # trailing (rows, cols) matrix is kept when c - r <= diagonal (tril) or
    # c - r >= diagonal (triu), else zero.
    offs = _index(0, WIDE) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    c = offs % cols
    r = (offs // cols) % rows
    x = tl.load(x_ptr + offs, mask=inside)
    if LOWER:
        keep = c - r <= diagonal
    else:
        keep = c - r >= diagonal
    tl.store(out_ptr + offs, tl.where(keep, x, 0.0), mask=inside)


@triton.jit
def tb_mismatches(a_ptr, e_ptr, count_ptr, n, rtol, atol, EQUAL_NAN: tl.constexpr, WIDE: tl.constexpr,
                  BLOCK: tl.constexpr):
    # How many elements fail |a - e| <= atol + rtol * |e| (torch.allclose,
    # torch.testing.assert_close), computed in fp64 as the host does, as
    # torch.isclose decides: equal values (infinities included) are close, a
    # difference must be finite (inf is not close to -inf or to a number),
    # NaN is close only to NaN and only with EQUAL_NAN.
    offs = _index(0, WIDE) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    a = tl.load(a_ptr + offs, mask=inside, other=0.0).to(tl.float64)
    e = tl.load(e_ptr + offs, mask=inside, other=0.0).to(tl.float64)
    diff = tl.abs(a - e)
    close = (a == e) | ((diff < float('inf')) & (diff <= atol + rtol * tl.abs(e)))
    if EQUAL_NAN:
        close = close | ((a != a) & (e != e))
    bad = tl.where(close, 0, 1)
    tl.atomic_add(count_ptr, tl.sum(bad, axis=0))


@triton.jit
def tb_attention_fwd(q_ptr, k_ptr, v_ptr, o_ptr, scale, L, S, sq0, sq1, sk0, sk1, sv0, sv1, so0, so1,
                     E: tl.constexpr, CAUSAL: tl.constexpr, IEEE: tl.constexpr, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    # F.scaled_dot_product_attention's forward without materialising the
    # scores: program (i, b) computes query rows [i * BLOCK_M, (i + 1) *
    # BLOCK_M) of batch b (every leading dimension merged), streaming the
    # keys in blocks with an online softmax in base 2. `CAUSAL` keeps key j
    # for query i where j <= i (torch's top-left alignment). Rows past L,
    # keys past S and head-dim columns past E are masked; fp16/bf16 inputs
    # are computed in fp32, the probabilities rounded to the input's type
    # for the second product as flash attention does; fp32 inputs multiply
    # in full precision (`IEEE`).
    i = tl.program_id(0)
    b = tl.program_id(1).to(tl.int64)
    rows = i * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_D)
    keys = tl.arange(0, BLOCK_N)
    row_ok = rows < L
    col_ok = cols < E
    q = tl.load(q_ptr + b * sq0 + rows[:, None] * sq1 + cols[None, :],
                mask=row_ok[:, None] & col_ok[None, :], other=0.0)
    qk_scale = scale * 1.4426950408889634
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    hi = S
    if CAUSAL:
        hi = tl.minimum(S, (i + 1) * BLOCK_M)
    for start in range(0, hi, BLOCK_N):
        n = start + keys
        n_ok = n < S
        kv_mask = n_ok[:, None] & col_ok[None, :]
        k = tl.load(k_ptr + b * sk0 + n[:, None] * sk1 + cols[None, :], mask=kv_mask, other=0.0)
        if IEEE:
            s = tl.dot(q, tl.trans(k), input_precision="ieee")
        else:
            s = tl.dot(q, tl.trans(k))
        keep = n_ok[None, :]
        if CAUSAL:
            keep = keep & (n[None, :] <= rows[:, None])
        s = tl.where(keep, s * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + b * sv0 + n[:, None] * sv1 + cols[None, :], mask=kv_mask, other=0.0)
        if IEEE:
            acc = tl.dot(p, v, acc * alpha[:, None], input_precision="ieee")
        else:
            acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + b * so0 + rows[:, None] * so1 + cols[None, :], out.to(o_ptr.dtype.element_ty),
             mask=row_ok[:, None] & col_ok[None, :])
