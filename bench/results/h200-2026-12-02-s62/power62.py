# Session 62: the 8192 fp16 product held for a while, as the table's final
# measurement holds it (rep=50) and as peers.py holds cuBLAS (warmup=25,
# rep=100), three times each, while nvidia-smi samples clocks and power.
import sys, time, torch, triton
import os
s = int(os.environ.get("S", "8192"))
a = torch.randn(s, s, device='cuda', dtype=torch.float16)
b = torch.randn(s, s, device='cuda', dtype=torch.float16)
c = torch.empty((s, s), device='cuda', dtype=torch.float16)
bm, bn, bk, nw, st = 128, 256, 64, 8, 3
grid = (triton.cdiv(s, bm) * triton.cdiv(s, bn),)
ours = lambda: matmul_kernel[grid](a, b, c, s, s, s, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                   BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION="", num_warps=nw, num_stages=st)
cublas = lambda: a @ b
who = sys.argv[1] if len(sys.argv) > 1 else "tilebook"
for name, f in ([("kernel", ours)] + ([("cublas", cublas)] if who == "triton" else [])):
    f(); torch.cuda.synchronize()
    for warm, rep in [(5, 20), (5, 50), (25, 100), (5, 20)]:
        t = time.time()
        ms = triton.testing.do_bench(f, warmup=warm, rep=rep, return_mode="median")
        print(f"{who} {name} warmup={warm} rep={rep} at {t:.3f}: {2 * s ** 3 / ms / 1e9:.1f} TFLOPS", flush=True)
        time.sleep(1.0)
