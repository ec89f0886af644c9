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
print("torch operations on 'cuda' tensors agree with the host")
