# Tutorial 02 (fused softmax) and tutorial 03 (matmul) on the GPU at sizes that
# are not multiples of the blocks; run.sh prepends the kernels from
# tests/ir/softmax.py and tests/ir/matmul.py.
import torch
import triton
import triton.language as tl


for rows, cols in [(1823, 781), (64, 1024), (7, 4000)]:
    x = torch.randn(rows, cols, device='cuda')
    y = torch.empty_like(x)
    softmax_kernel[(min(rows, 132),)](y, x, x.stride(0), y.stride(0), rows, cols, triton.next_power_of_2(cols), 2, num_warps=8)
    ref = torch.softmax(x, 1)
    assert torch.allclose(y, ref, atol=1e-5), torch.max(torch.abs(y - ref))
print("softmax ok")

for m, n, k in [(100, 77, 50), (257, 129, 95), (512, 512, 512)]:
    a = torch.randn((m, k), device='cuda', dtype=torch.float16)
    b = torch.randn((k, n), device='cuda', dtype=torch.float16)
    c = torch.empty((m, n), device='cuda', dtype=torch.float16)
    grid = (triton.cdiv(m, 64) * triton.cdiv(n, 64),)
    matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, ACTIVATION="leaky_relu")
    ref = torch.nn.functional.leaky_relu(torch.matmul(a, b).float(), 0.01).half()
    assert torch.allclose(c, ref, atol=2e-2, rtol=1e-2), torch.max(torch.abs(c - ref))
print("matmul ok")

# Divisible sizes take the cp.async path (operands copied straight to shared
# memory); cover the tile shapes and warp counts the benchmark uses, and bf16.
for (bm, bn, bk, nw, ns) in [(128, 128, 32, 4, 4), (128, 128, 32, 8, 3), (256, 128, 32, 8, 3), (128, 256, 32, 8, 2),
                             (128, 128, 64, 8, 3), (64, 128, 64, 4, 4), (64, 64, 32, 4, 1),
                             (64, 256, 64, 8, 3), (128, 64, 16, 4, 3)]:
    for dt in [torch.float16, torch.bfloat16]:
        m, n, k = 512, 256, 1024
        a = torch.randn((m, k), device='cuda', dtype=dt)
        b = torch.randn((k, n), device='cuda', dtype=dt)
        c = torch.empty((m, n), device='cuda', dtype=dt)
        grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
        matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                            BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION="", num_warps=nw, num_stages=ns)
        ref = torch.matmul(a.float(), b.float()).to(dt)
        assert torch.allclose(c.float(), ref.float(), atol=0.25, rtol=2e-2), (bm, bn, bk, nw, ns, dt, torch.max(torch.abs(c.float() - ref.float())))
print("matmul tile configs ok")

def check_fp8(configs, make_b):
    """fp8 matmuls with b from make_b(k, n, dtype), against torch; the CPU
    backend runs the same launches (TILEBOOK_CHECK_GPU) and must agree. K
    not a multiple of the block (the K mask cuts runs of 16 at whole runs);
    e5m2 and e4m3."""
    for (bm, bn, bk, nw, ns) in configs:
        for dt in [torch.float8_e5m2, torch.float8_e4m3fn]:
            for m, n, k in [(256, 256, 512), (384, 256, 208)]:
                a = torch.randn((m, k), device='cuda', dtype=torch.float16).to(dt)
                b = make_b(k, n, dt)
                c = torch.empty((m, n), device='cuda', dtype=torch.float16)
                grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
                matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                    BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION="", num_warps=nw, num_stages=ns)
                ref = torch.matmul(a.float(), b.float())
                assert torch.allclose(c.float(), ref, atol=0.25, rtol=2e-2), (bm, bn, bk, nw, ns, dt, m, n, k, torch.max(torch.abs(c.float() - ref)))


# fp8 as tutorial 03 runs it: b pre-transposed (its columns contiguous), so
# both tiles are K-major and `wgmma` reads e5m2/e4m3 directly on Hopper; the
# tile configs of the benchmark.
check_fp8([(128, 128, 64, 8, 3), (128, 128, 32, 4, 3), (128, 256, 64, 8, 3), (64, 128, 64, 4, 3)],
          lambda k, n, dt: torch.randn((n, k), device='cuda', dtype=torch.float16).to(dt).T)
print("fp8 matmul (K-major b) ok")
# b in its plain layout (rows contiguous): B's tiles are copied as loaded
# and transposed into K-major tiles before each `wgmma`.
check_fp8([(128, 128, 64, 8, 3), (128, 128, 32, 4, 3), (64, 128, 64, 4, 3), (128, 256, 128, 8, 3)],
          lambda k, n, dt: torch.randn((k, n), device='cuda', dtype=torch.float16).to(dt))
print("fp8 matmul (plain b) ok")

# fp16/bf16 with b column-major (`a @ w.T`, a `[K, N]` view of an `[N, K]`
# tensor, as tutorial 09's `matmul(a, b.T)` passes it): B's tiles are filled
# by K-major copies down its columns and `wgmma` reads them untransposed.
# K not a multiple of the block (208: the K mask cuts runs at whole runs),
# rows of N that are not (200), and every config shape of tutorial 09.
for (bm, bn, bk, nw, ns) in [(128, 256, 64, 8, 3), (128, 128, 64, 4, 4), (128, 128, 128, 8, 2),
                             (64, 256, 64, 4, 4), (64, 128, 32, 4, 3), (128, 64, 64, 4, 3)]:
    for dt in [torch.float16, torch.bfloat16]:
        for m, n, k in [(512, 256, 512), (384, 200, 208)]:
            a = torch.randn((m, k), device='cuda', dtype=dt)
            b = torch.randn((n, k), device='cuda', dtype=dt).T
            c = torch.empty((m, n), device='cuda', dtype=dt)
            grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
            matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION="", num_warps=nw, num_stages=ns)
            ref = torch.matmul(a.float(), b.float()).to(dt)
            assert torch.allclose(c.float(), ref.float(), atol=0.25, rtol=2e-2), (bm, bn, bk, nw, ns, dt, m, n, k, torch.max(torch.abs(c.float() - ref.float())))
print("matmul (column-major b) ok")
