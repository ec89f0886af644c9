# Host-descriptor matmul (bulk tensor copies on both sides) against the
# pointer matmul, ours and Triton's: same file under tilebook and python3.
import sys
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def desc_mm(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kt in range(tl.cdiv(K, BK)):
        a = a_desc.load([pm * BM, kt * BK])
        b = b_desc.load([pn * BN, kt * BK])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([pm * BM, pn * BN], acc.to(tl.float16))


@triton.jit
def desc_ptr_mm(a_desc, b_desc, c_ptr, K, scm, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kt in range(tl.cdiv(K, BK)):
        a = a_desc.load([pm * BM, kt * BK])
        b = b_desc.load([pn * BN, kt * BK])
        acc = tl.dot(a, b.T, acc)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :], acc.to(tl.float16))


@triton.jit
def ptr_mm(a_ptr, b_ptr, c_ptr, M, N, K, sam, sbn, scm, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kt in range(tl.cdiv(K, BK)):
        a = tl.load(a_ptr + rm[:, None] * sam + (kt * BK + rk)[None, :])
        b = tl.load(b_ptr + rn[:, None] * sbn + (kt * BK + rk)[None, :])
        acc = tl.dot(a, b.T, acc)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :], acc.to(tl.float16))


def main():
    if hasattr(triton, "set_allocator"):
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    S = 4096
    a = torch.randn((S, S), device="cuda", dtype=torch.float16)
    b = torch.randn((S, S), device="cuda", dtype=torch.float16)
    ref = torch.matmul(a, b.T)
    for BM, BN, BK, w, s in [(128, 128, 64, 4, 3), (128, 128, 64, 4, 4), (128, 256, 64, 8, 3), (128, 128, 64, 8, 4)]:
        c = torch.empty((S, S), device="cuda", dtype=torch.float16)
        ad = TensorDescriptor.from_tensor(a, [BM, BK])
        bd = TensorDescriptor.from_tensor(b, [BN, BK])
        cd = TensorDescriptor.from_tensor(c, [BM, BN])
        grid = (S // BM, S // BN)
        f1 = lambda: desc_mm[grid](ad, bd, cd, S, BM=BM, BN=BN, BK=BK, num_warps=w, num_stages=s)
        f1()
        ok1 = torch.allclose(c.float(), ref.float(), atol=0.5, rtol=1e-2)
        t1 = triton.testing.do_bench(f1, warmup=50, rep=300)
        c2 = torch.empty((S, S), device="cuda", dtype=torch.float16)
        f2 = lambda: ptr_mm[grid](a, b, c2, S, S, S, a.stride(0), b.stride(0), c2.stride(0), BM=BM, BN=BN, BK=BK, num_warps=w, num_stages=s)
        f2()
        ok2 = torch.allclose(c2.float(), ref.float(), atol=0.5, rtol=1e-2)
        t2 = triton.testing.do_bench(f2, warmup=50, rep=300)
        c3 = torch.empty((S, S), device="cuda", dtype=torch.float16)
        f3 = lambda: desc_ptr_mm[grid](ad, bd, c3, S, c3.stride(0), BM=BM, BN=BN, BK=BK, num_warps=w, num_stages=s)
        f3()
        ok3 = torch.allclose(c3.float(), ref.float(), atol=0.5, rtol=1e-2)
        t3 = triton.testing.do_bench(f3, warmup=50, rep=300)
        tf = lambda t: 2 * S ** 3 / t * 1e-9
        print(f"{BM}x{BN}x{BK} w{w} s{s}: desc {tf(t1):6.1f} ok={ok1}  desc+ptr store {tf(t3):6.1f} ok={ok3}  ptr {tf(t2):6.1f} ok={ok2}")


main()
