import os, sys
import torch, triton
sys.path.insert(0, os.path.join(os.getcwd(), "tests", "ir"))
from matmul import matmul_kernel
s = 4096
a = torch.randn(s, s, device="cuda", dtype=torch.float16).to(torch.float8_e5m2)
b = torch.randn(s, s, device="cuda", dtype=torch.float16).to(torch.float8_e5m2)
c = torch.empty((s, s), device="cuda", dtype=torch.float16)
for bm, bn, bk, nw, st in [(128, 128, 64, 8, 3), (128, 128, 64, 4, 3), (128, 256, 64, 8, 3), (128, 128, 128, 8, 3), (128, 256, 128, 8, 3)]:
    grid = (triton.cdiv(s, bm) * triton.cdiv(s, bn),)
    f = lambda: matmul_kernel[grid](a, b, c, s, s, s, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                    BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION="", num_warps=nw, num_stages=st)
    try:
        ms = triton.testing.do_bench(f, warmup=5, rep=30, return_mode="median")
        print("triton plain fp8 4096", (bm, bn, bk, nw, st), f"{2 * s ** 3 / ms / 1e9:.1f} TFLOPS")
    except Exception as e:
        print("triton plain fp8", (bm, bn, bk, nw, st), "error", str(e)[:200])
