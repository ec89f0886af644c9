# fp8 probe (appended after tests/ir/matmul.py): correctness at 1024 against
# torch, then a tile sweep at 4096 with b pre-transposed (K-major).
import torch
import triton

def run(a, b, c, s, bm, bn, bk, nw, st):
    grid = (triton.cdiv(s, bm) * triton.cdiv(s, bn),)
    return lambda: matmul_kernel[grid](a, b, c, s, s, s, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                       BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION="", num_warps=nw, num_stages=st)

configs = [(128, 128, 64, 8, 3), (128, 128, 64, 4, 3), (128, 128, 32, 4, 3), (128, 256, 64, 8, 3), (64, 128, 64, 4, 3),
           (128, 128, 128, 8, 3), (128, 256, 128, 8, 3), (128, 128, 128, 4, 4)]
s = 1024
a = torch.randn(s, s, device='cuda', dtype=torch.float16).to(torch.float8_e5m2)
b = torch.randn(s, s, device='cuda', dtype=torch.float16).T.to(torch.float8_e5m2)
print("b strides", b.stride())
c = torch.empty((s, s), device='cuda', dtype=torch.float16)
ref = a.float() @ b.float()
for cfg in configs:
    try:
        run(a, b, c, s, *cfg)()
        err = torch.max(torch.abs(c.float() - ref)).item()
        print("check", cfg, "max err", err, "ok" if err < 0.5 else "BAD")
    except Exception as e:
        print("check", cfg, "error", e)
s = 4096
a = torch.randn(s, s, device='cuda', dtype=torch.float16).to(torch.float8_e5m2)
b = torch.randn(s, s, device='cuda', dtype=torch.float16).T.to(torch.float8_e5m2)
c = torch.empty((s, s), device='cuda', dtype=torch.float16)
for cfg in configs:
    try:
        ms = triton.testing.do_bench(run(a, b, c, s, *cfg), warmup=5, rep=30, return_mode="median")
        print("fp8 4096", cfg, f"{2 * s ** 3 / ms / 1e9:.1f} TFLOPS")
    except Exception as e:
        print("fp8 4096", cfg, "error", e)
# Plain-layout b (rows contiguous): transposed in shared memory per dot.
s = 1024
a = torch.randn(s, s, device='cuda', dtype=torch.float16).to(torch.float8_e5m2)
b = torch.randn(s, s, device='cuda', dtype=torch.float16).to(torch.float8_e5m2)
c = torch.empty((s, s), device='cuda', dtype=torch.float16)
ref = a.float() @ b.float()
for cfg in configs:
    try:
        run(a, b, c, s, *cfg)()
        err = torch.max(torch.abs(c.float() - ref)).item()
        print("plain check", cfg, "max err", err, "ok" if err < 0.5 else "BAD")
    except Exception as e:
        print("plain check", cfg, "error", e)
s = 4096
a = torch.randn(s, s, device='cuda', dtype=torch.float16).to(torch.float8_e5m2)
b = torch.randn(s, s, device='cuda', dtype=torch.float16).to(torch.float8_e5m2)
c = torch.empty((s, s), device='cuda', dtype=torch.float16)
for cfg in configs:
    try:
        ms = triton.testing.do_bench(run(a, b, c, s, *cfg), warmup=5, rep=30, return_mode="median")
        print("plain fp8 4096", cfg, f"{2 * s ** 3 / ms / 1e9:.1f} TFLOPS")
    except Exception as e:
        print("plain fp8 4096", cfg, "error", e)
