import torch
# torch operations on 'cuda' tensors run as stdlib tile kernels on a GPU
# session (stdlib/torch_ops.py); their host versions, on .cpu() copies, are
# the reference. The CPU test suite runs this file too, with the kernels
# forced onto the CPU backend (tests/device_ops.rs).
torch.manual_seed(3)


def same(got, want, what, tol):
    assert got.device.type == 'cuda', (what, got.device)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert torch.allclose(got.cpu().float(), want.float(), atol=tol, rtol=tol), (what, torch.max(torch.abs(got.cpu().float() - want.float())))


for dt, tol in [(torch.float32, 1e-5), (torch.float16, 2e-3), (torch.bfloat16, 2e-2)]:
    x = torch.randn(37, 300, device='cuda').to(dt)
    y = torch.randn(37, 300, device='cuda').to(dt)
    hx, hy = x.cpu(), y.cpu()
    same(x + y, hx + hy, "add", tol)
    same(x - y, hx - hy, "sub", tol)
    same(x * y, hx * hy, "mul", tol)
    same(x / (y + 4.0), hx / (hy + 4.0), "div", tol)
    same(2.0 - x, 2.0 - hx, "scalar - tensor", tol)
    same(1.0 / (x + 5.0), 1.0 / (hx + 5.0), "scalar / tensor", tol)
    same(x * 3, hx * 3, "tensor * int", tol)
    same(x[:, 5:50] * y[:, 7:52], hx[:, 5:50] * hy[:, 7:52], "column slices", tol)
    same(x.T + y.T, hx.T + hy.T, "transposed views", tol)
    same(x[1::2] - y[2::2], hx[1::2] - hy[2::2], "row steps", tol)
    v, i = x.max(dim=1)
    hv, hi = hx.max(dim=1)
    same(v, hv, "max values", tol)
    assert i.dtype == torch.int64 and (i.cpu() == hi).all(), "max indices"
    same(x - v[:, None], hx - hv[:, None], "broadcast column", tol)
    same(x + y[0], hx + hy[0], "broadcast row", tol)
    same(x.amax(dim=-1, keepdim=True), hx.amax(dim=-1, keepdim=True), "amax keepdim", tol)
    same(x.T.max(dim=1)[0], hx.T.max(dim=1)[0], "max of a transposed view", tol)
    same(x.sum(dim=1), hx.sum(dim=1), "sum", tol * 30)
    same(torch.sum(x, dim=-1, keepdim=True), torch.sum(hx, dim=-1, keepdim=True), "torch.sum keepdim", tol * 30)
    same(torch.exp(x), torch.exp(hx), "exp", tol)
    same(x.exp(), hx.exp(), "exp method", tol)
    same(torch.abs(x), torch.abs(hx), "abs", tol)
    same(x.relu(), hx.relu(), "relu", tol)
    same(torch.softmax(x, dim=1), torch.softmax(hx, dim=1), "softmax", tol)
    same(torch.softmax(x[:, 3:290], -1), torch.softmax(hx[:, 3:290], -1), "softmax of a slice", tol)

# Ties: the first position of the maximum, as torch answers.
t = torch.tensor([[1.0, 5.0, 5.0, 2.0], [7.0, 7.0, 7.0, 7.0]], device='cuda')
assert t.max(dim=1)[1].tolist() == [1, 0], t.max(dim=1)[1]
# NaN is every row's maximum that holds one, at its first position, as torch
# answers (the kernels' tl.max alone ignores a NaN operand).
nan = float('nan')
t = torch.tensor([[1.0, nan, 9.0, nan], [nan, nan, nan, nan], [-1.0, -2.0, -3.0, -4.0]], device='cuda')
v, i = t.max(dim=1)
assert torch.allclose(v.cpu(), torch.tensor([nan, nan, -1.0]), equal_nan=True), v
assert i.tolist() == [1, 0, 0], i
assert torch.allclose(t.amax(dim=1).cpu(), torch.tensor([nan, nan, -1.0]), equal_nan=True)
long_nan = torch.randn(2, 20000, device='cuda')
long_nan[0, 17777] = nan
v, i = long_nan.max(dim=1)
assert v[0].item() != v[0].item() and i[0].item() == 17777, (v, i)
assert (v[1].cpu() == long_nan.cpu()[1].max()).item()
# Rows longer than one block, 3-D tensors, vectors, empty tensors.
w = torch.randn(3, 20000, device='cuda')
same(torch.softmax(w, dim=1), torch.softmax(w.cpu(), dim=1), "long softmax", 1e-6)
same(w.sum(dim=1), w.cpu().sum(dim=1), "long sum", 1e-3)
same(w.max(dim=1)[0], w.cpu().max(dim=1)[0], "long max", 0)
assert (w.max(dim=1)[1].cpu() == w.cpu().max(dim=1)[1]).all()
c = torch.randn(4, 5, 6, device='cuda')
same(c * 2.5 + c, c.cpu() * 2.5 + c.cpu(), "3-D", 1e-6)
same(torch.softmax(c, dim=-1), torch.softmax(c.cpu(), dim=-1), "3-D softmax", 1e-6)
u = torch.rand(1000, device='cuda')
same(u + u, u.cpu() + u.cpu(), "vector", 0)
same(u.sum(dim=0), u.cpu().sum(dim=0), "vector sum", 1e-4)
e = torch.empty(0, 8, device='cuda')
assert (e + e).shape == (0, 8)

# Dtype conversions on the device (tb_cast): the same rounding as the host's.
src = torch.randn(77, 301, device='cuda') * 1000
for a_dt in [torch.float32, torch.float16, torch.bfloat16]:
    x = src.to(a_dt)
    for b_dt in [torch.float32, torch.float16, torch.bfloat16]:
        got = x.to(b_dt)
        assert got.dtype == b_dt and got.device.type == 'cuda', (a_dt, b_dt, got.dtype)
        assert torch.equal(got.cpu(), x.cpu().to(b_dt)), ("cast", a_dt, b_dt)
assert torch.equal(src.half().cpu(), src.cpu().half()) and torch.equal(src.half().float().cpu(), src.cpu().half().float())
assert torch.equal(src.bfloat16().cpu(), src.cpu().bfloat16())

# fp8 on the device (tb_cast_fp8, and tb_cast back): torch's rounding, with
# inf (e5m2) or NaN (e4m3fn) past the largest finite value, ties, subnormals.
edge = torch.tensor([0.0, -0.0, 1.0625, 1.1875, -1.375, 448.0, 464.0, 464.5, -470.0, 57344.0, 61439.0,
                     61440.0, -70000.0, 2.0**-9, 2.0**-10, 3 * 2.0**-11, 2.0**-17, -2.0**-16,
                     float('inf'), float('-inf'), float('nan')])
for f8 in [torch.float8_e5m2, torch.float8_e4m3fn]:
    for a_dt in [torch.float32, torch.float16, torch.bfloat16]:
        for vals in [src, src * 1e-4, edge.to('cuda')]:
            x = vals.to(a_dt)
            got = x.to(f8)
            want = x.cpu().to(f8)
            assert got.dtype == f8 and got.device.type == 'cuda', (f8, a_dt, got.dtype)
            g, w = got.cpu().float(), want.float()
            assert torch.equal(g.isnan(), w.isnan()), ("fp8 NaN", f8, a_dt)
            assert torch.equal(torch.where(w.isnan(), 0.0, g), torch.where(w.isnan(), 0.0, w)), ("fp8", f8, a_dt)
            back = got.to(a_dt)
            assert back.device.type == 'cuda' and back.dtype == a_dt
            b, wb = back.cpu().float(), want.to(a_dt).float()
            assert torch.equal(torch.where(wb.isnan(), 0.0, b), torch.where(wb.isnan(), 0.0, wb)), ("from fp8", f8, a_dt)

# Batched matmul (one cuBLAS product per entry into one device tensor on a
# GPU): a transposed operand, broadcast batch dims, a 2-D right operand.
qa = torch.randn(2, 3, 64, 32, device='cuda').half()
ka = torch.randn(2, 3, 48, 32, device='cuda').half()
got = torch.matmul(qa, ka.transpose(2, 3))
want = torch.matmul(qa.cpu().float(), ka.cpu().float().transpose(2, 3))
assert got.shape == (2, 3, 64, 48) and got.dtype == torch.float16 and got.device.type == 'cuda'
assert torch.allclose(got.cpu().float(), want, atol=2e-2, rtol=2e-2), "batched matmul"
got = torch.matmul(qa.float(), torch.randn(1, 3, 32, 5, device='cuda'))
assert got.shape == (2, 3, 64, 5)
w2 = torch.randn(32, 16, device='cuda')
assert torch.allclose((qa.float() @ w2).cpu(), qa.cpu().float() @ w2.cpu(), atol=1e-3, rtol=1e-3), "@ 2-D"

# torch.rand/randn on the device (tb_random): the right range, moments and
# dtypes, repeated by manual_seed, different from call to call.
for dt in [torch.float32, torch.float16, torch.bfloat16]:
    r = torch.rand(1000, 1001, device='cuda', dtype=dt)
    assert r.dtype == dt and r.shape == (1000, 1001) and r.device.type == 'cuda'
    h = r.cpu().float()
    assert h.min().item() >= 0.0 and h.max().item() < 1.0, (dt, h.min().item(), h.max().item())
    assert abs(h.mean().item() - 0.5) < 0.005, (dt, h.mean().item())
    g = torch.randn(1000, 1001, device='cuda', dtype=dt).cpu().float()
    assert abs(g.mean().item()) < 0.01 and abs(g.std().item() - 1.0) < 0.01, (dt, g.mean().item(), g.std().item())
    assert (g.abs() > 3.0).float().mean().item() < 0.005
torch.manual_seed(11)
a = torch.randn(4097, device='cuda')
b = torch.rand_like(a)
torch.manual_seed(11)
assert torch.equal(torch.randn(4097, device='cuda').cpu(), a.cpu()) and torch.equal(torch.rand_like(a).cpu(), b.cpu())
assert not torch.equal(torch.randn(4097, device='cuda').cpu(), a.cpu())
assert torch.randn_like(a, dtype=torch.float16).dtype == torch.float16
assert torch.rand(0, 3, device='cuda').shape == (0, 3)

# Copies of strided views (tb_copy): contiguous() and clone() of permuted,
# transposed and sliced views, any dtype.
base = torch.randn(3, 4, 5, 6, device='cuda')
for view in [base.permute(0, 2, 3, 1), base.transpose(1, 3), base[:, 1:3, ::2], base[1].T, base.half().permute(3, 2, 1, 0)]:
    got = view.contiguous()
    assert got.is_contiguous() and got.device.type == 'cuda' and got.shape == view.shape
    assert torch.equal(got.cpu(), view.cpu().contiguous()), ("contiguous", view.shape)
    assert torch.equal(view.clone().cpu(), view.cpu()), ("clone", view.shape)
ints = torch.arange(24, device='cuda').reshape(2, 3, 4)
assert torch.equal(ints.permute(2, 0, 1).contiguous().cpu(), ints.cpu().permute(2, 0, 1).contiguous())
assert base.clone().data_ptr() != base.data_ptr()
flags = torch.rand(5, 7, device='cuda') > 0.5
assert torch.equal(flags.T.contiguous().cpu(), flags.cpu().T.contiguous()) and torch.equal(flags.clone().cpu(), flags.cpu())

# Comparisons into torch.bool tensors on the device (tb_binary's eq ... ge).
for dt in [torch.float32, torch.float16, torch.bfloat16]:
    x = torch.randn(41, 67, device='cuda').to(dt)
    y = torch.randn(41, 67, device='cuda').to(dt)
    x[0, :5] = y[0, :5]
    hx, hy = x.cpu(), y.cpu()
    for got, want in [(x == y, hx == hy), (x != y, hx != hy), (x < y, hx < hy), (x <= y, hx <= hy),
                      (x > 0, hx > 0), (x >= 0.5, hx >= 0.5), (0.25 < x, 0.25 < hx), (1 >= x.T, 1 >= hx.T),
                      (x == x[3], hx == hx[3]), (x.half() == 0.1, hx.half() == torch.tensor(0.1).half())]:
        assert got.dtype == torch.bool and got.device.type == 'cuda' and got.shape == want.shape
        assert torch.equal(got.cpu(), want), ("compare", dt)
nan = torch.tensor([float('nan'), 1.0], device='cuda')
assert (nan != nan).tolist() == [True, False] and (nan == nan).tolist() == [False, True]

# Boolean-mask assignment of a number (tb_masked_fill), as an attention
# reference masks its scores: p[:, :, M == 0] = -inf.
for dt in [torch.float32, torch.float16, torch.bfloat16]:
    p = torch.randn(2, 3, 40, 33, device='cuda').to(dt)
    host = p.cpu()
    keep = torch.tril(torch.ones((40, 33), device='cuda'))
    p[:, :, keep == 0] = float('-inf')
    host[:, :, keep.cpu() == 0] = float('-inf')
    assert torch.equal(p.cpu(), host), ("masked fill", dt)
    row_mask = torch.rand(2, device='cuda') > 0.5
    p[row_mask] = 7
    host[row_mask.cpu()] = 7
    assert torch.equal(p.cpu(), host), ("leading mask", dt)

# torch.tril / torch.triu (tb_triangle) with diagonals, batched, and views.
m = torch.randn(2, 37, 29, device='cuda')
for d in [-3, 0, 1, 40]:
    assert torch.equal(torch.tril(m, d).cpu(), torch.tril(m.cpu(), d)), ("tril", d)
    assert torch.equal(torch.triu(m, diagonal=d).cpu(), torch.triu(m.cpu(), diagonal=d)), ("triu", d)
assert torch.equal(torch.tril(m.transpose(1, 2)).cpu(), torch.tril(m.cpu().transpose(1, 2)))

# Closeness counted on the device (tb_mismatches): allclose and
# assert_close, with infinities and NaN.
a = torch.randn(1000, device='cuda')
b = a + 1e-4
assert torch.allclose(a, b, atol=2e-4, rtol=0) and not torch.allclose(a, b, atol=5e-5, rtol=0)
torch.testing.assert_close(a, b, atol=2e-4, rtol=0)
special = torch.tensor([float('inf'), float('-inf'), float('nan'), 1.0], device='cuda')
same_special = torch.tensor([float('inf'), float('-inf'), float('nan'), 1.0], device='cuda')
assert not torch.allclose(special, same_special)
torch.testing.assert_close(special, same_special, equal_nan=True)
for other in [[float('inf'), float('-inf'), 1.0, 1.0], [float('-inf'), float('-inf'), float('nan'), 1.0]]:
    try:
        torch.testing.assert_close(special, torch.tensor(other, device='cuda'), equal_nan=True)
    except AssertionError as e:
        assert "Mismatched elements: 1 / 4" in str(e), str(e)
    else:
        raise AssertionError("assert_close passed NaN against a number, or inf against -inf")
try:
    torch.testing.assert_close(a.half(), b.half(), atol=1e-6, rtol=0)
except AssertionError as e:
    assert "Mismatched elements" in str(e)
else:
    raise AssertionError("assert_close missed a difference")

# normal_ / uniform_ in place on the device.
n = torch.empty(1000, 1000, device='cuda', dtype=torch.float16).normal_(mean=2.0, std=0.5).cpu().float()
assert abs(n.mean().item() - 2.0) < 0.01 and abs(n.std().item() - 0.5) < 0.01, (n.mean().item(), n.std().item())
uni = torch.empty(1000, 1000, device='cuda').uniform_(-3.0, 5.0).cpu()
assert uni.min().item() >= -3.0 and uni.max().item() < 5.0 and abs(uni.mean().item() - 1.0) < 0.02
# dst.copy_(src) into a contiguous GPU tensor: from a transposed view, a
# broadcast row, another dtype (cast first), and between overlapping views
# (left to the host); each against the same copy of host tensors.
src = torch.randn(48, 33, device='cuda')
for make_src, shape, dt in [(lambda: src.T, (33, 48), torch.float32), (lambda: src[3], (48, 33), torch.float32),
                            (lambda: src, (48, 33), torch.float16), (lambda: src.half().T, (33, 48), torch.float32)]:
    dst = torch.empty(shape, device='cuda', dtype=dt)
    s_ = make_src()
    dst.copy_(s_)
    want = torch.empty(shape, dtype=dt)
    want.copy_(s_.cpu())
    assert torch.equal(dst.cpu(), want), (shape, dt)
sq = torch.randn(16, 16, device='cuda')
want = sq.cpu().T.clone()
sq.copy_(sq.T)
assert torch.equal(sq.cpu(), want)
# F.layer_norm forward and backward (tb_layer_norm_fwd/bwd on the device)
# against the same operations composed on host copies; with and without
# weight and bias, fp32 and fp16, a ragged width, a transposed gradient, more
# rows than the backward has programs (each then takes several).
import torch.nn.functional as F
for rows_, cols_, dt, affine in [(37, 100, torch.float32, True), (64, 1000, torch.float16, True),
                                 (5, 33, torch.float32, False), (1100, 300, torch.float16, True),
                                 (300, 5000, torch.float32, True)]:
    xd = torch.randn(rows_, cols_, device='cuda', dtype=dt).requires_grad_(True)
    wd = (torch.rand(cols_, device='cuda', dtype=dt) + 0.5).requires_grad_(True) if affine else None
    bd = torch.randn(cols_, device='cuda', dtype=dt).requires_grad_(True) if affine else None
    gd = torch.randn(cols_, rows_, device='cuda', dtype=dt).T
    xh = xd.detach().cpu().requires_grad_(True)
    wh = wd.detach().cpu().requires_grad_(True) if affine else None
    bh = bd.detach().cpu().requires_grad_(True) if affine else None
    yd = F.layer_norm(xd, (cols_,), wd, bd, 1e-5)
    yh = F.layer_norm(xh, (cols_,), wh, bh, 1e-5)
    tol = 1e-4 if dt == torch.float32 else 2e-2
    assert torch.allclose(yd.cpu().float(), yh.float(), atol=tol, rtol=tol), (rows_, cols_, dt)
    yd.backward(gd)
    yh.backward(gd.cpu())
    assert torch.allclose(xd.grad.cpu().float(), xh.grad.float(), atol=tol, rtol=tol), (rows_, cols_, dt, "dx")
    if affine:
        assert torch.allclose(wd.grad.cpu().float(), wh.grad.float(), atol=tol * 10, rtol=tol), (rows_, cols_, dt, "dw")
        assert torch.allclose(bd.grad.cpu().float(), bh.grad.float(), atol=tol * 10, rtol=tol), (rows_, cols_, dt, "db")

# F.scaled_dot_product_attention without autograd or a mask (tb_attention_fwd
# on the device) against the composed operations on host copies: fp32 (full
# precision products), fp16 and bf16; queries and keys of different lengths
# (ragged blocks at both ends), causal (top-left, as torch) or not, an
# explicit scale, head dims 40 (padded to 64) and 128, one and two leading
# dimensions, and a view whose batch dimensions cannot merge (composed on
# the device instead; still agrees).
for shape_q, n_keys, dt, causal, sc in [((2, 3, 100, 64), 100, torch.float16, False, None),
                                         ((2, 3, 100, 64), 100, torch.float16, True, None),
                                         ((3, 37, 40), 75, torch.float32, True, 0.3),
                                         ((3, 130, 40), 75, torch.float32, False, None),
                                         ((1, 2, 70, 128), 200, torch.bfloat16, True, None),
                                         ((1, 2, 70, 128), 200, torch.bfloat16, False, 0.05)]:
    kv_shape = shape_q[:-2] + (n_keys, shape_q[-1])
    qd = torch.randn(shape_q, device='cuda', dtype=dt)
    kd = torch.randn(kv_shape, device='cuda', dtype=dt)
    vd = torch.randn(kv_shape, device='cuda', dtype=dt)
    od = F.scaled_dot_product_attention(qd, kd, vd, is_causal=causal, scale=sc)
    oh = F.scaled_dot_product_attention(qd.cpu(), kd.cpu(), vd.cpu(), is_causal=causal, scale=sc)
    tol = {torch.float32: 1e-4, torch.float16: 5e-3, torch.bfloat16: 3e-2}[dt]
    same(od, oh, ("attention", shape_q, n_keys, dt, causal), tol)
qd = torch.randn(2, 50, 3, 64, device='cuda', dtype=torch.float16).transpose(1, 2)
kd = torch.randn(2, 3, 80, 64, device='cuda', dtype=torch.float16)
same(F.scaled_dot_product_attention(qd, kd, kd), F.scaled_dot_product_attention(qd.cpu(), kd.cpu(), kd.cpu()),
     "attention of an unmergeable view", 5e-3)
print("torch operations on 'cuda' tensors agree with the host")

# Freed GPU buffers are kept for the next allocation of their size (no round
# trip to the worker): a zeroed one taken back must read as zeros, and after
# torch.cuda.empty_cache() allocation still works.
for _ in range(3):
    x = torch.full((1000, 3), 7.0, device='cuda')
    del x
    z = torch.zeros((1000, 3), device='cuda')
    assert float(z.abs().sum()) == 0.0
    e = torch.empty((1000, 3), device='cuda')
    e.fill_(2.0)
    assert float(e.sum()) == 6000.0
    del z, e
torch.cuda.empty_cache()
assert float(torch.ones((1000, 3), device='cuda').sum()) == 3000.0
print("buffer reuse ok")
