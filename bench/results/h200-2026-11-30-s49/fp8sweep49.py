# Session 49: fp8 (e5m2, b pre-transposed) tile configs outside the benchmark's six, both sides,
# do_bench median, two rounds. Prepend tests/ir/matmul.py.
import sys
s = 4096
a = torch.randn(s, s, device="cuda", dtype=torch.float16).to(torch.float8_e5m2)
b = torch.randn(s, s, device="cuda", dtype=torch.float16).T.to(torch.float8_e5m2)
c = torch.empty((s, s), device="cuda", dtype=torch.float16)
cfgs = [(128, 128, 128, 8, 3), (128, 256, 128, 8, 3), (128, 128, 128, 8, 4), (128, 128, 128, 8, 2),
        (128, 256, 128, 8, 2), (128, 256, 128, 8, 4), (256, 128, 128, 8, 3), (256, 128, 128, 8, 2),
        (128, 128, 256, 8, 2), (128, 128, 256, 8, 3), (128, 128, 128, 4, 3), (128, 64, 128, 4, 4),
        (64, 256, 128, 4, 3), (128, 256, 64, 8, 4), (256, 128, 64, 8, 4), (128, 128, 64, 8, 4)]
for rnd in range(2):
    for bm, bn, bk, nw, st in cfgs:
        grid = (triton.cdiv(s, bm) * triton.cdiv(s, bn),)
        f = lambda: matmul_kernel[grid](a, b, c, s, s, s, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                        c.stride(0), c.stride(1), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
                                        GROUP_SIZE_M=8, ACTIVATION="", num_warps=nw, num_stages=st)
        try:
            f()
            if rnd == 0:
                ref = a[:128].float() @ b.float()
                ok = torch.allclose(c[:128].float(), ref, atol=0.5, rtol=2e-2)
            ms = triton.testing.do_bench(f, warmup=25, rep=100, return_mode="median")
            print(f"r{rnd} fp8 {bm}x{bn}x{bk} w{nw} s{st}: {2 * s ** 3 / ms / 1e9:.1f} TFLOPS" + ("" if rnd or ok else " WRONG"), flush=True)
        except Exception as e:
            print(f"r{rnd} fp8 {bm}x{bn}x{bk} w{nw} s{st}: failed {str(e)[:120]}", flush=True)
