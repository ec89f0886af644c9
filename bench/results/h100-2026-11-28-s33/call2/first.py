import time
a = torch.randn(512, 512, device='cuda', dtype=torch.float16)
c = torch.empty((512, 512), device='cuda', dtype=torch.float16)
t0 = time.perf_counter()
matmul_kernel[(triton.cdiv(512, 128) * triton.cdiv(512, 128),)](a, a, c, 512, 512, 512, a.stride(0), a.stride(1), a.stride(0), a.stride(1),
    c.stride(0), c.stride(1), BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=32,
    GROUP_SIZE_M=8, ACTIVATION="", num_warps=4, num_stages=4)
torch.cuda.synchronize()
print("first launch", time.perf_counter() - t0)
assert torch.allclose(c.float(), (a.float() @ a.float()), atol=5e-2, rtol=1e-2)
