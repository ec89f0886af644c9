# matmul 4096^3 fp16 at the benchmark's chosen config (128x256x64, 8 warps,
# 3 stages), timed three times in a row with do_bench (median); run under
# tilebook and under python3 + Triton, alternating, to read the spread.
import sys
s = 4096
a = torch.randn(s, s, device='cuda', dtype=torch.float16)
b = torch.randn(s, s, device='cuda', dtype=torch.float16)
c = torch.empty((s, s), device='cuda', dtype=torch.float16)
out = []
for bm, bn, bk, nw, st in [(128, 256, 64, 8, 3), (128, 128, 64, 4, 4)]:
    grid = (triton.cdiv(s, bm) * triton.cdiv(s, bn),)
    f = lambda: matmul_kernel[grid](a, b, c, s, s, s, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                    BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION="", num_warps=nw, num_stages=st)
    f()
    for _ in range(3):
        ms = triton.testing.do_bench(f, warmup=25, rep=200, return_mode="median")
        out.append(f"{bm}x{bn}x{bk}w{nw}s{st} {2 * s ** 3 / ms / 1e9:.0f}")
print(" | ".join(out))
