# Dot operands loaded through plain pointers that on Hopper become bulk
# tensor copies (TMA) when their blocks are blocks of a 2-D tensor
# (tilebook_tir::pointer_tma): tutorial 03's matmul kernel (prepended by
# run.sh from tests/ir/matmul.py), whose rows and columns wrap with `% M`
# and `% N` (the copy engine reads zeros there instead; those rows reach
# only masked-off stores) and whose K edge is masked (the engine's zero
# fill). run.sh runs this file unchecked (checked mode keeps per-thread
# copies) with every launch compared with the CPU backend.
#
# B's blocks in the two kernels the marking must refuse for A are masked
# on both dims, so B is a bulk copy there.
#
# Covered: sizes that are multiples of the blocks and sizes that are not,
# K not a multiple of BK with rows padded to 16 bytes (a slice of a wider
# tensor), fp16 and bf16, 4 and 8 warps, BK 32 and 64, 2 to 4 stages, b
# passed transposed (fp8 e5m2 and e4m3, fp16, bf16), and
# kernels the marking must refuse (the wrapped rows reach an unmasked
# store, or a row sum), which must still agree with the CPU backend.
import torch
import triton
import triton.language as tl


@triton.jit
def wrapped_product(a_ptr, b_ptr, pm, M, N, K, stride_am, stride_bk,
                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # The tutorial's loop with A's rows wrapped by `% M` and B's block
    # masked on both dims.
    rm = (pm * BM + tl.arange(0, BM)) % M
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    return acc


@triton.jit
def wrapped_rows_stored(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # Rows past M wrap around and, unlike the tutorial's, are stored: the
    # output has a whole number of blocks of rows.
    pm = tl.program_id(0)
    acc = wrapped_product(a_ptr, b_ptr, pm, M, N, K, stride_am, stride_bk, BM, BN, BK)
    cm = pm * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    tl.store(c_ptr + cm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16), mask=rn[None, :] < N)


@triton.jit
def wrapped_rows_summed(a_ptr, b_ptr, s_ptr, M, N, K, stride_am, stride_bk,
                        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # A column sum over the block's rows sees the wrapped rows.
    pm = tl.program_id(0)
    acc = wrapped_product(a_ptr, b_ptr, pm, M, N, K, stride_am, stride_bk, BM, BN, BK)
    tl.store(s_ptr + pm * BN + tl.arange(0, BN), tl.sum(acc, axis=0))


torch.manual_seed(5)
failures = []


def check(name, got, ref, tol=2e-2):
    err = (got - ref).abs().max().item() if got.numel() else 0.0
    scale = max(ref.abs().max().item() if ref.numel() else 0.0, 1.0)
    ok = err <= tol * scale
    if not ok:
        failures.append(f"{name}: max error {err} against a scale of {scale}")
    print(("ok      " if ok else "FAILED  ") + name)


def tutorial(m, n, k, dt=torch.float16, bm=128, bn=128, bk=64, warps=8, stages=4, pad_k=0, act=""):
    # Small integers: every sum is exact, so any row or column read from
    # the wrong place shows.
    a_full = torch.randint(-3, 4, (m, k + pad_k), device="cuda").to(dt)
    b = torch.randint(-3, 4, (k, n), device="cuda").to(dt)
    if k == 0:
        b = torch.randint(-3, 4, (16, n), device="cuda").to(dt)[:0]
    a = a_full[:, :k]
    c = torch.full((m, n), 7.0, device="cuda", dtype=dt)
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
                        GROUP_SIZE_M=8, ACTIVATION=act, num_warps=warps, num_stages=stages)
    ref = a.float().cpu() @ b.float().cpu()
    if act == "leaky_relu":
        ref = torch.where(ref >= 0, ref, 0.01 * ref)
    check(f"tutorial matmul {m}x{n}x{k} (+{pad_k}) {dt} {bm}x{bn}x{bk} w{warps} s{stages} {act}",
          c.cpu().float(), ref.to(dt).float())


tutorial(512, 512, 512)
tutorial(1000, 600, 512)
tutorial(1000, 600, 200, pad_k=56)
tutorial(130, 70, 48, pad_k=16, bk=32, warps=4, stages=3)
tutorial(384, 256, 256, dt=torch.bfloat16, bn=64, warps=4, stages=2)
tutorial(300, 520, 1024, bm=64, bn=256, warps=8, stages=3, act="leaky_relu")
tutorial(256, 256, 64, bk=64, stages=4)
def transposed_b(m, n, k, dt, bm=128, bn=128, bk=64, warps=8, stages=3):
    # b as tutorial 03's fp8 run passes it: the transpose of an N-major
    # tensor, so its [K, N] blocks are transposed blocks of that tensor
    # (`map_t`), copied into the K-major tiles `wgmma` reads.
    a = torch.randint(-3, 4, (m, k), device="cuda").to(dt)
    b = torch.randint(-3, 4, (n, k), device="cuda").to(dt).T
    c = torch.full((m, n), 7.0, device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
                        GROUP_SIZE_M=8, ACTIVATION="", num_warps=warps, num_stages=stages)
    ref = (a.float().cpu() @ b.float().cpu()).half().float()
    check(f"transposed b {m}x{n}x{k} {dt} {bm}x{bn}x{bk} w{warps} s{stages}", c.cpu().float(), ref)


transposed_b(512, 512, 512, torch.float8_e5m2, bk=128)
# fp8 128 x 128 x 128 over 8 warps and 3 stages (two blocks per SM, the
# table's fp8 config): a long K (each stage's barrier through many phases),
# and ragged M, N and K.
transposed_b(512, 512, 4096, torch.float8_e5m2, bk=128)
transposed_b(260, 390, 1008, torch.float8_e4m3fn, bk=128)
transposed_b(1000, 600, 384, torch.float8_e5m2, bn=256, bk=128)
transposed_b(300, 200, 256, torch.float8_e4m3fn)
transposed_b(500, 260, 320, torch.float16)
transposed_b(256, 384, 512, torch.bfloat16, bn=256, stages=3)

# K = 0: the loop runs no iteration; A's map has no columns and B's no
# rows (the launch gives the engine a one-element tensor of zeros).
tutorial(100, 128, 0, pad_k=64)

# A row stride of 0 (every row of A the same): no tensor map can describe
# it, so the launch builds the kernel again without bulk copies.
row = torch.randint(-3, 4, (1, 256), device="cuda").half()
a = row.expand(300, 256)
b = torch.randint(-3, 4, (256, 128), device="cuda").half()
c = torch.zeros((300, 128), device="cuda", dtype=torch.float16)
matmul_kernel[(triton.cdiv(300, 128),)](a, b, c, 300, 128, 256, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                         c.stride(0), c.stride(1), BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64,
                                         GROUP_SIZE_M=8, ACTIVATION="", num_warps=8, num_stages=3)
check("row stride 0", c.cpu().float(), (a.float().cpu() @ b.float().cpu()))

for m in (256, 200):
    k, n = 256, 64
    a = torch.randint(-3, 4, (m, k), device="cuda").half()
    b = torch.randint(-3, 4, (k, n), device="cuda").half()
    rows = triton.cdiv(m, 128) * 128
    c = torch.zeros((rows, n), device="cuda", dtype=torch.float16)
    wrapped_rows_stored[(triton.cdiv(m, 128),)](a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0),
                                                BM=128, BN=64, BK=64, num_warps=8)
    idx = torch.arange(rows) % m
    ref = a.float().cpu()[idx] @ b.float().cpu()
    check(f"wrapped rows stored, M = {m}", c.cpu().float(), ref)
    s = torch.zeros((triton.cdiv(m, 128) * 64,), device="cuda")
    wrapped_rows_summed[(triton.cdiv(m, 128),)](a, b, s, m, n, k, a.stride(0), b.stride(0),
                                                BM=128, BN=64, BK=64, num_warps=8)
    want = ref.reshape(-1, 128, 64).sum(1).reshape(-1)
    check(f"wrapped rows summed, M = {m}", s.cpu(), want)

assert not failures, "\n".join(failures)
print("pointer tma: all cases agree")
