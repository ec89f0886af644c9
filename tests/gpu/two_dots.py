# Two dots in one loop, sharing A, with their B operands in each
# combination of layouts (plain or pre-transposed), fp8 and fp16, 4 and 8
# warps, BLOCK_K 64 and 32. Their operands stay in registers, so each dot
# writes its tiles to shared memory before reading them back; the two dots
# must use different copies, or the second overwrites the first's tiles
# while slower warps still read them. Until session 18 every dot had its own
# counter and both took the same copy: on the H100 about half the launches
# gave wrong sums in one warp's rows, varying from run to run. A race shows
# only now and then, so each case runs several times, against a reference
# from host copies.
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


def operand(dt, k_major, zero):
    make = torch.zeros if zero else torch.randn
    if k_major:
        return make((N, K), device="cuda").to(dt).T
    return make((K, N), device="cuda").to(dt)


def check(dt, b1_kmajor, b2_kmajor, zero=None, warps=8, bk=64, reps=6):
    a = torch.randn((M, K), device="cuda").to(dt)
    b1 = operand(dt, b1_kmajor, zero == 1)
    b2 = operand(dt, b2_kmajor, zero == 2)
    ah, b1h, b2h = a.cpu().float(), b1.cpu().float(), b2.cpu().float()
    ref = ah @ b1h + ah @ b2h
    for rep in range(reps):
        c = torch.zeros((M, N), device="cuda", dtype=torch.float16)
        two_b_kernel[(M // 128, N // 128)](a, b1, b2, c, M, N, K, a.stride(0), a.stride(1), b1.stride(0),
                                           b1.stride(1), b2.stride(0), b2.stride(1), c.stride(0), c.stride(1),
                                           BM=128, BN=128, BK=bk, num_warps=warps)
        err = (c.cpu().float() - ref).abs().max().item()
        case = f"{dt} b1_kmajor={b1_kmajor} b2_kmajor={b2_kmajor} zero={zero} warps={warps} bk={bk} rep {rep}"
        # fp16 output of sums up to ~120: half an ulp is 0.03
        assert err < 0.1, f"{case}: max error {err} (max {ref.abs().max().item():.1f})"
    print(f"ok {dt} b1_kmajor={b1_kmajor} b2_kmajor={b2_kmajor} zero={zero} warps={warps} bk={bk}")


f8 = torch.float8_e5m2
for args in [(f8, True, False), (f8, True, False, 1), (f8, True, False, 2), (f8, False, True), (f8, False, False),
             (f8, True, True), (torch.float16, True, False), (torch.float16, True, True),
             (f8, True, False, None, 4), (f8, True, False, None, 8, 32)]:
    check(*args)
