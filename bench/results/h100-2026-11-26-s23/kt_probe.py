# x @ w.T through tl.dot(a, b.T) with b an [N, K] block, over block shapes,
# warps, dtypes and ragged sizes: every result against torch.
import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def linear(x_ptr, w_ptr, y_ptr, M, N, K, sxm, swn, sym, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        x = tl.load(x_ptr + rm[:, None] * sxm + ks[None, :], mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[:, None] * swn + ks[None, :], mask=(rn[:, None] < N) & (ks[None, :] < K), other=0.0)
        acc = tl.dot(x, w.T, acc)
    tl.store(y_ptr + rm[:, None] * sym + rn[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


bad = 0
runs = 0
for dt in [torch.float16, torch.bfloat16]:
    for (M, N, K) in [(256, 512, 384), (1000, 520, 264), (128, 128, 64)]:
        x = torch.randn((M, K), device=DEVICE, dtype=dt)
        w = torch.randn((N, K), device=DEVICE, dtype=dt)
        ref = (x.float() @ w.float().T)
        for BM, BN, BK, warps, stages in [(128, 128, 64, 8, 3), (64, 128, 32, 4, 3), (128, 256, 64, 8, 3),
                                          (64, 64, 128, 4, 2), (128, 64, 16, 4, 4)]:
            y = torch.empty((M, N), device=DEVICE, dtype=dt)
            grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
            linear[grid](x, w, y, M, N, K, x.stride(0), w.stride(0), y.stride(0), BM=BM, BN=BN, BK=BK,
                         num_warps=warps, num_stages=stages)
            err = (y.float() - ref).abs().max().item()
            ok = err <= 0.02 * ref.abs().max().item() + 0.5
            runs += 1
            if not ok:
                bad += 1
                print("MISMATCH", dt, M, N, K, BM, BN, BK, warps, stages, err)
print(f"KT linear x @ w.T: {runs - bad}/{runs} agree with torch")
S = 4096
x = torch.randn((S, S), device=DEVICE, dtype=torch.float16)
w = torch.randn((S, S), device=DEVICE, dtype=torch.float16)
y = torch.empty((S, S), device=DEVICE, dtype=torch.float16)
for BM, BN, BK, warps, stages in [(128, 256, 64, 8, 3), (128, 128, 64, 8, 4)]:
    grid = (S // BM, S // BN)
    f = lambda: linear[grid](x, w, y, S, S, S, S, S, S, BM=BM, BN=BN, BK=BK, num_warps=warps, num_stages=stages)
    ms = triton.testing.do_bench(f)
    print(f"KT linear 4096^3 {BM}x{BN}x{BK} w{warps} s{stages}: {2 * S**3 * 1e-12 / (ms * 1e-3):.0f} TFLOPS")
ms = triton.testing.do_bench(lambda: x @ w.T)
print(f"KT torch x @ w.T: {2 * S**3 * 1e-12 / (ms * 1e-3):.0f} TFLOPS")
