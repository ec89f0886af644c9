# fp8 probe (appended after tests/ir/matmul.py): for b pre-transposed
# (K-major) and b in its plain layout, every tile config checked against
# torch at 1024^3, then timed at 4096^3.
import torch
import triton

def run(a, b, c, s, bm, bn, bk, nw, st):
    grid = (triton.cdiv(s, bm) * triton.cdiv(s, bn),)
    return lambda: matmul_kernel[grid](a, b, c, s, s, s, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                       BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION="", num_warps=nw, num_stages=st)

configs = [(128, 128, 64, 8, 3), (128, 128, 64, 4, 3), (128, 128, 32, 4, 3), (128, 256, 64, 8, 3), (64, 128, 64, 4, 3),
           (128, 128, 128, 8, 3), (128, 256, 128, 8, 3), (128, 128, 128, 4, 4)]

def operands(s, k_major):
    a = torch.randn(s, s, device='cuda', dtype=torch.float16).to(torch.float8_e5m2)
    b = torch.randn(s, s, device='cuda', dtype=torch.float16)
    b = b.T.to(torch.float8_e5m2) if k_major else b.to(torch.float8_e5m2)
    return a, b, torch.empty((s, s), device='cuda', dtype=torch.float16)

for label, k_major in [("K-major", True), ("plain", False)]:
    a, b, c = operands(1024, k_major)
    print(label, "b strides", b.stride())
    ref = a.float() @ b.float()
    for cfg in configs:
        try:
            run(a, b, c, 1024, *cfg)()
            err = torch.max(torch.abs(c.float() - ref)).item()
            print(label, "check", cfg, "max err", err, "ok" if err < 0.5 else "BAD")
        except Exception as e:
            print(label, "check", cfg, "error", e)
    a, b, c = operands(4096, k_major)
    for cfg in configs:
        try:
            ms = triton.testing.do_bench(run(a, b, c, 4096, *cfg), warmup=5, rep=30, return_mode="median")
            print(label, "fp8 4096", cfg, f"{2 * 4096 ** 3 / ms / 1e9:.1f} TFLOPS")
        except Exception as e:
            print(label, "fp8 4096", cfg, "error", e)
