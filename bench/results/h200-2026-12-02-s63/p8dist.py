# fp8 e5m2 4096^3 (b pre-transposed): per-launch time distribution of
# 128x128x128 w8 s3 (and 128x256x128) from do_bench(return_mode="all"),
# five rounds in one process. (tests/ir/matmul.py prepended)
import torch, triton
s = 4096
a = torch.randn(s, s, device='cuda', dtype=torch.float16).to(torch.float8_e5m2)
b = torch.randn(s, s, device='cuda', dtype=torch.float16).T.to(torch.float8_e5m2)
c = torch.empty((s, s), device='cuda', dtype=torch.float16)
def tf(ms):
    return 2 * s ** 3 / ms / 1e9
for bm, bn, bk, nw, st in [(128, 128, 128, 8, 3), (128, 256, 128, 8, 3), (128, 128, 128, 8, 3)]:
    grid = (triton.cdiv(s, bm) * triton.cdiv(s, bn),)
    f = lambda: matmul_kernel[grid](a, b, c, s, s, s, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                    BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION="", num_warps=nw, num_stages=st)
    for r in range(4):
        ts = sorted(triton.testing.do_bench(f, warmup=5, rep=40, return_mode="all"))
        q = lambda p: tf(ts[min(len(ts) - 1, int(p * len(ts)))])
        hist = [0] * 8
        for t in ts:
            v = tf(t)
            hist[min(7, max(0, int((v - 1000) // 50)))] += 1
        print(f"{bm}x{bn}x{bk} round {r}: n={len(ts)} TFLOPS p90/p75/p50/p25/p10 (slow..fast reversed) "
              f"{q(0.9):.0f} {q(0.75):.0f} {q(0.5):.0f} {q(0.25):.0f} {q(0.1):.0f}  hist[1000..1400 by 50]={hist}", flush=True)
