# fp8 e5m2 M = N = 4096, b pre-transposed, 128x128x128 w8 s3, K from 512 to
# 16384: the time per launch against K splits into a fixed cost per program
# (prologue, epilogue) and a cost per K step. (tests/ir/matmul.py prepended)
import torch, triton, os
s = 4096
for r in range(int(os.environ.get('P8K_ROUNDS', '2'))):
    for k in [int(x) for x in os.environ.get('P8K_KS', '512 1024 2048 4096 8192 16384').split()]:
        a = torch.randn(s, k, device='cuda', dtype=torch.float16).to(torch.float8_e5m2)
        b = torch.randn(s, k, device='cuda', dtype=torch.float16).to(torch.float8_e5m2).T
        c = torch.empty((s, s), device='cuda', dtype=torch.float16)
        bm, bn, bk, nw, st = 128, 128, 128, 8, 3
        grid = (triton.cdiv(s, bm) * triton.cdiv(s, bn),)
        f = lambda: matmul_kernel[grid](a, b, c, s, s, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                        BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION="", num_warps=nw, num_stages=st)
        f()
        if r == 0 and k == 512:
            ref = a[:256].float() @ b.float()
            assert torch.allclose(c[:256].float(), ref, atol=0.5, rtol=2e-2)
        ms = triton.testing.do_bench(f, warmup=5, rep=30, return_mode="median")
        print(f"K={k}: {ms * 1000:.1f} us  {2 * s * s * k / ms / 1e9:.0f} TFLOPS", flush=True)
