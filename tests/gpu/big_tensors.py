import torch
# Tensors past 2^31 elements on the GPU: the stdlib kernels behind torch
# operations switch to 64-bit offsets (WIDE), and more than 65535 rows go in
# several launches. Each result is checked on slices copied off the device
# (the host reference of the whole tensor would take minutes).
torch.manual_seed(5)
ROWS, COLS = 131074, 16384          # 2^31 + 32768 elements, 131074 rows
x = torch.empty((ROWS, COLS), device='cuda', dtype=torch.float16).normal_(std=2.0)
assert x.numel() > 2**31


def rows(t, which):
    # Rows of t, copied (on the device) into a small tensor, then to the host.
    return torch.stack([t[r].clone() for r in which]).cpu().float()


check = [0, 1, 65534, 65535, 65536, 131073]
hx = rows(x, check)
y = x * 3.0 - x
assert torch.allclose(rows(y, check), (hx * 3.0).half().float() - hx, atol=1e-2, rtol=1e-3), "binary"
m = x.amax(dim=-1, keepdim=True)
assert torch.equal(rows(m, check)[:, 0], hx.max(dim=1)[0]), "amax"
c = x - m
assert torch.equal(rows(c, check), (hx - hx.max(dim=1, keepdim=True)[0]).half().float()), "broadcast column"
s = x.float().sum(dim=-1)
assert torch.allclose(torch.stack([s[r] for r in check]).cpu(), hx.sum(dim=1), rtol=1e-4, atol=1e-2), "sum"
p = torch.softmax(x, dim=-1)
assert torch.allclose(rows(p, check), torch.softmax(hx, dim=1), atol=1e-3, rtol=1e-2), "softmax"
keep = torch.tril(torch.ones((2, COLS), device='cuda'))[1] > 0     # the first two columns
x3 = x.view(2, ROWS // 2, COLS)
x3[:, :, ~keep] = 0.0
assert torch.equal(rows(x, check)[:, 2:], torch.zeros(len(check), COLS - 2)), "masked fill"
assert torch.equal(rows(x, check)[:, :2], hx[:, :2]), "masked fill kept"
t = torch.tril(x3)
assert t.shape == x3.shape and torch.equal(rows(t.view(ROWS, COLS), [0, 1])[0, 1], torch.tensor(0.0))
torch.testing.assert_close(x, x.clone())
assert not torch.allclose(x, x * 2.0)
print("tensors past 2^31 elements: operations agree on sampled rows")
