# A vector loaded a block at a time and broadcast along the columns of a
# dot's result in the same loop (the attention backward's `lse[None, :]`):
# the GPU loads it straight into the columns each thread holds
# (codegen/mma_cols.rs) where the block allows (8 warps, or 32-column
# blocks), including the pipelined prefetch, a ragged last block (the mask
# differs within a warp's columns) and a masked-off `other`. Compared with
# a float32 host reference here, and with the CPU backend by the suite. The
# output is fp16: `ex2.approx` and the CPU's exp2 may round a probability
# to different halves, which moves an fp32 sum by more than fp32's
# tolerance (seen on the H200), not by more than fp16's.
import torch
import triton
import triton.language as tl


@triton.jit
def column_bias(X, Y, B, O, N, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, OTHER: tl.constexpr):
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_k = tl.arange(0, K)
    x = tl.load(X + offs_m[:, None] * K + offs_k[None, :])
    acc = tl.zeros([BM, K], dtype=tl.float32)
    for start in range(0, N, BN):
        offs_n = start + tl.arange(0, BN)
        y = tl.load(Y + offs_n[:, None] * K + offs_k[None, :], mask=offs_n[:, None] < N, other=0.0)
        if OTHER:
            b = tl.load(B + offs_n, mask=offs_n < N, other=1000.0)
        else:
            b = tl.load(B + offs_n, mask=offs_n < N)
        p = tl.math.exp2(tl.dot(x, tl.trans(y)) * 0.125 - b[None, :])
        acc = tl.dot(p.to(tl.float16), y, acc)
    tl.store(O + offs_m[:, None] * K + offs_k[None, :], acc.to(tl.float16))


torch.manual_seed(5)
K = 64
for n, bm, bn, warps, other in [(256, 128, 64, 8, False), (200, 128, 64, 8, True), (203, 64, 32, 4, True),
                                (96, 64, 32, 4, False), (200, 64, 64, 4, False)]:
    m = 2 * bm
    x = torch.randn((m, K), device="cuda", dtype=torch.float16)
    y = torch.randn((n, K), device="cuda", dtype=torch.float16)
    b = torch.rand((n,), device="cuda", dtype=torch.float32) * 4.0
    o = torch.zeros((m, K), device="cuda", dtype=torch.float16)
    column_bias[(m // bm,)](x, y, b, o, n, K=K, BM=bm, BN=bn, OTHER=other, num_warps=warps)
    xh, yh, bh = x.cpu().float(), y.cpu().float(), b.cpu()
    p = torch.exp(((xh @ yh.T) * 0.125 - bh[None, :]) * 0.6931471805599453)
    ref = p.half().float() @ yh
    err = ((o.cpu().float() - ref).abs() / (ref.abs() + 1.0)).max().item()
    case = f"n={n} BM={bm} BN={bn} warps={warps} other={other}"
    assert err < 2e-2, f"{case}: relative error {err}"
    print(f"ok {case}")
