import torch, triton, sys
configs = [(128, 256, 64, 8, 3), (128, 128, 64, 4, 4), (128, 128, 32, 4, 4), (256, 128, 128, 8, 3), (128, 256, 128, 8, 3), (128, 128, 128, 4, 4), (64, 256, 32, 4, 4)]
for s in [4096, 8192]:
    a = torch.randn(s, s, device='cuda', dtype=torch.float16)
    b = torch.randn(s, s, device='cuda', dtype=torch.float16)
    c = torch.empty((s, s), device='cuda', dtype=torch.float16)
    for bm, bn, bk, nw, st in configs:
        grid = (triton.cdiv(s, bm) * triton.cdiv(s, bn),)
        f = lambda: matmul_kernel[grid](a, b, c, s, s, s, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                        BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION="", num_warps=nw, num_stages=st)
        try:
            ms = triton.testing.do_bench(f, warmup=5, rep=40, return_mode="median")
        except Exception as e:
            print(f"{s} {bm}x{bn}x{bk} w{nw} s{st}: {e}")
            continue
        print(f"{s} {bm}x{bn}x{bk} w{nw} s{st}: {2 * s ** 3 / ms / 1e9:.1f} TFLOPS")
fp8 = [(128, 128, 64, 8, 3), (128, 256, 64, 8, 3), (128, 256, 128, 8, 3), (128, 128, 128, 8, 3)]
s = 4096
a = torch.randn(s, s, device='cuda', dtype=torch.float16).to(torch.float8_e5m2)
b = torch.randn(s, s, device='cuda', dtype=torch.float16).T.to(torch.float8_e5m2)
c = torch.empty((s, s), device='cuda', dtype=torch.float16)
for bm, bn, bk, nw, st in fp8:
    grid = (triton.cdiv(s, bm) * triton.cdiv(s, bn),)
    f = lambda: matmul_kernel[grid](a, b, c, s, s, s, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                    BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION="", num_warps=nw, num_stages=st)
    ms = triton.testing.do_bench(f, warmup=5, rep=40, return_mode="median")
    print(f"fp8 {s} {bm}x{bn}x{bk} w{nw} s{st}: {2 * s ** 3 / ms / 1e9:.1f} TFLOPS")
