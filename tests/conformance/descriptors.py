# Block pointers (tl.make_block_ptr, tl.advance, boundary_check,
# padding_option) and tensor descriptors (tl.make_tensor_descriptor,
# desc.load/desc.store), carried through for and while loops, with ragged
# shapes (out-of-bounds elements read as padding and are never written).

triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=DEVICE))


@triton.jit
def bp_matmul(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    a_bp = tl.make_block_ptr(a_ptr, (M, K), (sam, sak), (pm * BM, 0), (BM, BK), (1, 0))
    b_bp = tl.make_block_ptr(base=b_ptr, shape=(K, N), strides=(sbk, sbn), offsets=(0, pn * BN),
                             block_shape=(BK, BN), order=(1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_bp, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_bp, boundary_check=(0, 1))
        acc += tl.dot(a, b)
        a_bp = tl.advance(a_bp, (0, BK))
        b_bp = b_bp.advance((BK, 0))
    c_bp = tl.make_block_ptr(c_ptr, (M, N), (scm, scn), (pm * BM, pn * BN), (BM, BN), (1, 0))
    tl.store(c_bp, acc.to(c_ptr.dtype.element_ty), boundary_check=(0, 1))


for (M, N, K) in [(100, 70, 90), (64, 64, 64), (33, 17, 5)]:
    a = torch.randn(M, K, device=DEVICE, dtype=torch.float16)
    b = torch.randn(N, K, device=DEVICE, dtype=torch.float16).T  # strided B
    c = torch.full((M, N), -1.0, device=DEVICE, dtype=torch.float16)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
    bp_matmul[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                    c.stride(0), c.stride(1), BM=32, BN=32, BK=16)
    check(f"block-pointer matmul {M}x{N}x{K}", c, (a.float() @ b.float()).half(), atol=3e-2, rtol=1e-2)


@triton.jit
def bp_pad(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    x_bp = tl.make_block_ptr(x_ptr, (n,), (1,), (tl.program_id(0) * BLOCK,), (BLOCK,), (0,))
    o_bp = tl.make_block_ptr(o_ptr, (2 * BLOCK * tl.num_programs(0),), (1,), (tl.program_id(0) * 2 * BLOCK,), (BLOCK,), (0,))
    tl.store(o_bp, tl.load(x_bp, boundary_check=(0,), padding_option="nan"))
    o_bp = tl.advance(o_bp, (BLOCK,))
    tl.store(o_bp, tl.load(x_bp, boundary_check=(0,), padding_option="zero") + 1)


for dtype in [torch.float32, torch.float16, torch.bfloat16, torch.float64]:
    n = 50
    x = torch.randn(n, device=DEVICE).to(dtype)
    o = torch.zeros(2 * 32 * 2, device=DEVICE, dtype=dtype)
    bp_pad[(2,)](x, o, n, BLOCK=32)
    got = o.reshape(2, 2, 32)
    nan_part = torch.cat([got[0, 0], got[1, 0]])
    one_part = torch.cat([got[0, 1], got[1, 1]])
    assert torch.equal(nan_part[:n], x), f"padding nan {dtype}: data"
    assert bool((nan_part[n:] != nan_part[n:]).all()), f"padding nan {dtype}: {nan_part[n:].tolist()}"
    want = torch.cat([x, torch.zeros(64 - n, device=DEVICE, dtype=dtype)]) + 1
    assert torch.equal(one_part, want), f"padding zero {dtype}"


@triton.jit
def desc_scale(x_ptr, y_ptr, M, N, S, BM: tl.constexpr, BN: tl.constexpr):
    xd = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[S, 1], block_shape=[BM, BN])
    yd = tl.make_tensor_descriptor(y_ptr, [M, N], [S, 1], [BM, BN])
    row = tl.program_id(0) * BM
    col = 0
    while col < N:
        blk = xd.load([row, col])
        yd.store([row, col], blk * 3)
        col += BN
    tl.static_assert(xd.block_shape[1] == BN)


# A ragged shape in rows padded to 48 elements: strides are multiples of 16
# bytes, as a descriptor's contract asks.
for dtype in [torch.float32, torch.float16, torch.int32, torch.int8, torch.int64]:
    M, N, S = 37, 45, 48
    if dtype.is_floating_point:
        x = torch.randn(M, S, device=DEVICE).to(dtype)
    else:
        x = torch.randint(-40, 40, (M, S), device=DEVICE).to(dtype)
    y = torch.zeros(M, S, device=DEVICE, dtype=dtype)
    desc_scale[(triton.cdiv(M, 16),)](x, y, M, N, S, BM=16, BN=16)
    assert torch.equal(y[:, :N], x[:, :N] * 3), f"descriptor load/store {dtype}"
    assert torch.all(y[:, N:] == 0), f"descriptor store past the shape {dtype}"


@triton.jit
def carried_tuple(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    pair = (tl.zeros((BLOCK,), tl.float32), tl.zeros((BLOCK,), tl.int32))
    for i in range(0, tl.cdiv(n, BLOCK)):
        x = tl.load(x_ptr + i * BLOCK + offs, mask=i * BLOCK + offs < n, other=0.0)
        pair = (pair[0] + x, pair[1] + (i * BLOCK + offs < n).to(tl.int32))
    tl.store(o_ptr + offs, pair[0] / tl.maximum(pair[1], 1).to(tl.float32))


x = torch.randn(300, device=DEVICE)
o = torch.zeros(64, device=DEVICE)
carried_tuple[(1,)](x, o, 300, BLOCK=64)
padded = torch.cat([x, torch.zeros(320 - 300, device=DEVICE)]).reshape(5, 64)
counts = torch.tensor([5.0] * (300 - 256) + [4.0] * (64 - 44), device=DEVICE)
check("tuple carried through a loop", o, padded.sum(0) / counts)


# Host descriptors (triton.tools.tensor_descriptor.TensorDescriptor) as
# kernel arguments; block shapes set by an autotuning config's pre_hook.
from triton.tools.tensor_descriptor import TensorDescriptor


def blocks_from_config(nargs):
    nargs["x_desc"].block_shape = [nargs["BM"], nargs["BN"]]
    nargs["y_desc"].block_shape = [nargs["BM"], nargs["BN"]]
    nargs["z_desc"].block_shape = [nargs["BM"], nargs["BN"]]


@triton.autotune(configs=[triton.Config({'BM': 16, 'BN': 32}, pre_hook=blocks_from_config),
                          triton.Config({'BM': 32, 'BN': 16}, pre_hook=blocks_from_config)],
                 key=['M', 'N'])
@triton.jit
def host_desc_axpy(x_desc, y_desc, z_desc, M, N, alpha, BM: tl.constexpr, BN: tl.constexpr):
    om = tl.program_id(0) * BM
    on = tl.program_id(1) * BN
    x = x_desc.load([om, on])
    y = y_desc.load([om, on])
    z_desc.store([om, on], alpha * x + y)


for dtype in [torch.float32, torch.float16]:
    M, N = 45, 72
    x = torch.randn(M, N, device=DEVICE).to(dtype)
    y = torch.randn(M, N, device=DEVICE).to(dtype)
    want = (2.0 * x.float() + y.float()).to(dtype)
    xd = TensorDescriptor.from_tensor(x, [1, 1])
    yd = TensorDescriptor(y, y.shape, y.stride(), [1, 1])
    z = torch.zeros(M, N, device=DEVICE, dtype=dtype)
    zd = TensorDescriptor.from_tensor(z, [1, 1])
    grid = lambda meta: (triton.cdiv(M, meta['BM']), triton.cdiv(N, meta['BN']))
    host_desc_axpy[grid](xd, yd, zd, M, N, 2.0)
    check(f"host TensorDescriptor arguments {dtype}", z.float(), want.float(), atol=1e-2, rtol=1e-3)
    bm = host_desc_axpy.best_config.kwargs['BM']
    assert xd.block_shape == [bm, host_desc_axpy.best_config.kwargs['BN']], f"pre_hook set {xd.block_shape}"


@triton.jit
def host_desc_pad(x_desc, o_ptr, B: tl.constexpr):
    blk = x_desc.load([0, 0])
    offs = tl.arange(0, B)[:, None] * B + tl.arange(0, B)[None, :]
    tl.store(o_ptr + offs, blk)


x = torch.randn(5, 8, device=DEVICE)
o = torch.zeros(16, 16, device=DEVICE)
host_desc_pad[(1,)](TensorDescriptor.from_tensor(x, [16, 16], padding="nan"), o, B=16)
assert torch.equal(o[:5, :8], x), "nan padding: data"
assert bool((o[5:] != o[5:]).all()) and bool((o[:, 8:] != o[:, 8:]).all()), "nan padding: pad"

try:
    TensorDescriptor.from_tensor(torch.zeros(4, 7, device=DEVICE), [4, 8])
    raise AssertionError("a 28-byte row stride was accepted")
except ValueError as e:
    assert "multiple of 16 bytes" in str(e), str(e)


# isinstance inside kernels is decided at compile time, as in Triton: one
# @jit helper takes a host descriptor or a pointer and builds a descriptor
# only for the pointer (tutorial 06's pattern).
@triton.jit
def as_desc(desc_or_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    if isinstance(desc_or_ptr, tl.tensor_descriptor):
        return desc_or_ptr
    else:
        return tl.make_tensor_descriptor(desc_or_ptr, [M, N], [N, 1], [BM, BN])


@triton.jit
def either_copy(src, dst_ptr, flags_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    d = as_desc(src, M, N, BM, BN)
    pm = tl.program_id(0)
    blk = d.load([pm * BM, 0])
    rows = pm * BM + tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    tl.store(dst_ptr + rows * N + cols, blk, mask=(rows < M) & (cols < N))
    kinds = (isinstance(src, tl.tensor), isinstance(src, tl.tensor_descriptor),
             isinstance(M, (tl.constexpr, int)), isinstance(BM, int), isinstance(d, tl.tensor),
             isinstance(src.dtype, tl.dtype), isinstance(BM, (float, bool)))
    if pm == 0:
        tl.store(flags_ptr + tl.arange(0, 8), tl.zeros([8], dtype=tl.int32) + (
            kinds[0] * 1 + kinds[1] * 2 + kinds[2] * 4 + kinds[3] * 8 + kinds[4] * 16 + kinds[5] * 32 + kinds[6] * 64))


for M in (40, 64):
    x = torch.randn(M, 32, device=DEVICE)
    for use_desc in (False, True):
        y = torch.zeros(M, 32, device=DEVICE)
        flags = torch.zeros(8, dtype=torch.int32, device=DEVICE)
        src = TensorDescriptor.from_tensor(x, [16, 32]) if use_desc else x
        either_copy[(triton.cdiv(M, 16),)](src, y, flags, M, 32, BM=16, BN=32)
        check(f"isinstance(desc_or_ptr, tl.tensor_descriptor) M={M} desc={use_desc}", y, x)
        # pointer: tensor (1), descriptor: 2; both: BM is an int (8) and
        # src.dtype a dtype (32). M is a runtime scalar, d a descriptor.
        want = (2 if use_desc else 1) + 8 + 32
        assert flags[0].item() == want, f"isinstance flags {flags[0].item()} != {want} (desc={use_desc})"
