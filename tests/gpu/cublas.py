import torch
# torch.matmul of 'cuda' tensors runs on cuBLAS; it must agree with the host
# computation on contiguous, transposed and sliced operands and on 1-D ones.
torch.manual_seed(7)
for dt, tol in [(torch.float16, 2e-2), (torch.bfloat16, 1e-1), (torch.float32, 1e-3)]:
    a = torch.randn(70, 45, device='cuda').to(dt)
    b = torch.randn(45, 33, device='cuda').to(dt)
    for x, y, what in [(a, b, "contiguous"), (b.T, a.T, "transposed views"), (a[5:40], b[:, 3:20], "slices")]:
        got = x @ y
        want = x.cpu().float() @ y.cpu().float()
        assert got.dtype == dt and got.device.type == 'cuda', (got.dtype, got.device)
        assert torch.allclose(got.cpu().float(), want, atol=tol, rtol=tol), (what, dt, torch.max(torch.abs(got.cpu().float() - want)))
    v = torch.randn(45, device='cuda').to(dt)
    assert torch.allclose((a @ v).cpu().float(), a.cpu().float() @ v.cpu().float(), atol=tol, rtol=tol)
print("cuBLAS matmul agrees with the host")
