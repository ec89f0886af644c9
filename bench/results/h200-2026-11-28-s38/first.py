# (appended to tests/ir/matmul.py) the benchmark's first launch, and whether
# its kernel spills (so the predicated-store rebuild would run)
import time
a = torch.randn(512, 512, device='cuda', dtype=torch.float16)
c = torch.empty((512, 512), device='cuda', dtype=torch.float16)
t0 = time.perf_counter()
args = (a, a, c, 512, 512, 512, a.stride(0), a.stride(1), a.stride(0), a.stride(1), c.stride(0), c.stride(1))
meta = dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, ACTIVATION="", num_warps=4, num_stages=4)
matmul_kernel[(16,)](*args, **meta)
torch.cuda.synchronize()
t = time.perf_counter() - t0
k = matmul_kernel.warmup(*args, grid=(16,), **meta)
print(f"first launch {t:.3f} s; regs {k.n_regs} spills {k.n_spills}")
