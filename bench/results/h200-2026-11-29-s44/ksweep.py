# Tutorial matmul 128x256x64 (8 warps, 3 stages) at M = N = 4096 and K from 1024 to 16384:
# TFLOPS (do_bench medians, three each), to tell the K loop from the per-tile prologue/epilogue.
import os, torch, triton
tag = os.environ.get("TAG", "triton")
s = 4096
for K in (1024, 4096, 16384, 1024, 4096, 16384):
    a = torch.randn(s, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, s, device="cuda", dtype=torch.float16)
    c = torch.empty((s, s), device="cuda", dtype=torch.float16)
    f = lambda: matmul_kernel[(triton.cdiv(s, 128) * triton.cdiv(s, 256),)](a, b, c, s, s, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1), BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, ACTIVATION="", num_warps=8, num_stages=3)
    f()
    r = [2 * s * s * K / triton.testing.do_bench(f, warmup=5, rep=60, return_mode="median") / 1e9 for _ in range(3)]
    cb = 2 * s * s * K / triton.testing.do_bench(lambda: a @ b, warmup=5, rep=60, return_mode="median") / 1e9
    print(f"{tag} K={K}: " + " / ".join(f"{v:.0f}" for v in r) + f"  cublas {cb:.0f}", flush=True)
