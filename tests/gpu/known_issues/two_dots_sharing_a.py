# KNOWN ISSUE (open, session 17): not part of tests/gpu/run.sh.
#
# Two fp8 dots share A in one loop, b1 pre-transposed (K-major), b2 plain.
# Before session 17 this kernel did not load (b1's rows were copied by
# 1-byte cp.async, which the driver refuses); now b1, b2 and A leave the
# tile path and the dots run from registers (mma.sync), and on the H100 the
# result is sometimes wrong (GPU -18.4 vs CPU -14.3 at element 16), varying
# between runs and with TILEBOOK_CHECK_BOUNDS. The variants below (the
# first is that kernel): both B plain or both K-major are right; b1 K-major with b2
# plain, fp16 with a K-major b1, and BLOCK_K=32 go wrong. TILEBOOK_CHECK_GPU=1
# catches it (the CPU backend is right). Run:
#   tilebook run --device cuda tests/gpu/known_issues/two_dots_sharing_a.py
# tests/ptx.rs compiles its kernel (the cp.async part, fixed).
import torch
import triton
import triton.language as tl

@triton.jit
def two_b_kernel(a_ptr, b1_ptr, b2_ptr, c_ptr, M, N, K,
                 stride_am, stride_ak, stride_b1k, stride_b1n, stride_b2k, stride_b2n, stride_cm, stride_cn,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b1_ptrs = b1_ptr + offs_k[:, None] * stride_b1k + offs_n[None, :] * stride_b1n
    b2_ptrs = b2_ptr + offs_k[:, None] * stride_b2k + offs_n[None, :] * stride_b2n
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs)
        b1 = tl.load(b1_ptrs)
        b2 = tl.load(b2_ptrs)
        acc = tl.dot(a, b1, acc)
        acc = tl.dot(a, b2, acc)
        a_ptrs += BK * stride_ak
        b1_ptrs += BK * stride_b1k
        b2_ptrs += BK * stride_b2k
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(tl.float16))


M = N = K = 256
torch.manual_seed(3)
def run(dt, b1_kmajor, b2_kmajor, zero=None, warps=8, bk=64):
    a = torch.randn((M, K), device="cuda").to(dt)
    b1 = (torch.randn((N, K), device="cuda").to(dt).T) if b1_kmajor else torch.randn((K, N), device="cuda").to(dt)
    b2 = (torch.randn((N, K), device="cuda").to(dt).T) if b2_kmajor else torch.randn((K, N), device="cuda").to(dt)
    if zero == 1:
        b1 = (torch.zeros((N, K), device="cuda").to(dt).T) if b1_kmajor else torch.zeros((K, N), device="cuda").to(dt)
    if zero == 2:
        b2 = (torch.zeros((N, K), device="cuda").to(dt).T) if b2_kmajor else torch.zeros((K, N), device="cuda").to(dt)
    c = torch.empty((M, N), device="cuda", dtype=torch.float16)
    two_b_kernel[(M // 128, N // 128)](a, b1, b2, c, M, N, K, a.stride(0), a.stride(1), b1.stride(0), b1.stride(1),
                                       b2.stride(0), b2.stride(1), c.stride(0), c.stride(1), BM=128, BN=128, BK=bk,
                                       num_warps=warps)
    ref = a.float() @ b1.float() + a.float() @ b2.float()
    err = (c.float() - ref).abs().max().item()
    print(f"{str(dt):22} b1_kmajor={b1_kmajor} b2_kmajor={b2_kmajor} zero={zero} warps={warps} bk={bk}: max err {err:.4f} (max {ref.abs().max().item():.1f})")
f8 = torch.float8_e5m2
for args in [(f8, True, False), (f8, True, False, 1), (f8, True, False, 2), (f8, False, False), (f8, True, True),
             (torch.float16, True, False), (torch.float16, True, True), (f8, True, False, None, 4), (f8, True, False, None, 8, 32)]:
    try:
        run(*args)
    except Exception as e:
        print(args, "error:", str(e)[:200])
