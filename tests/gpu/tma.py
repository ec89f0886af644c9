# Products are stored in fp16, as the tutorials do: the launch-by-launch
# comparison with the CPU backend allows fp16's rounding, while fp32 sums
# of 512 products in another order may differ by more than fp32's allowance.
#
# Dot operands loaded through host tensor descriptors, which on Hopper
# become bulk tensor copies (TMA) into swizzled tiles, completing on
# mbarriers. run.sh runs this file without checked bounds (checked mode
# keeps per-thread copies, so it would not exercise the copy engine) and
# with every launch compared with the CPU backend.
#
# Covered: a plain K loop and a persistent loop over output tiles (the
# inner loop's stages and barrier phases carry on from tile to tile),
# A @ B and A @ B.T (B loaded as [N, K]), fp16 and bf16, 2 to 4 stages,
# 4 and 8 warps, BK 32 and 64 (64- and 128-byte swizzles), shapes that
# are not multiples of the blocks (the engine's zero fill past the edges),
# K shorter than one block, and NaN padding (the engine's NaN fill).
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def desc_mm(a_desc, b_desc, c_ptr, M, N, K, stride_cm,
            BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, B_T: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kt in range(tl.cdiv(K, BK)):
        a = a_desc.load([pm * BM, kt * BK])
        if B_T:
            b = b_desc.load([pn * BN, kt * BK])
            acc = tl.dot(a, b.T, acc)
        else:
            b = b_desc.load([kt * BK, pn * BN])
            acc = tl.dot(a, b, acc)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def desc_mm_persistent(a_desc, b_desc, c_ptr, M, N, K, stride_cm,
                       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, PROGRAMS: tl.constexpr):
    tiles_n = tl.cdiv(N, BN)
    for tile in range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n, PROGRAMS):
        pm = tile // tiles_n
        pn = tile % tiles_n
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for kt in range(tl.cdiv(K, BK)):
            a = a_desc.load([pm * BM, kt * BK])
            b = b_desc.load([pn * BN, kt * BK])
            acc = tl.dot(a, b.T, acc)
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def desc_mm_desc_store(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kt in range(tl.cdiv(K, BK)):
        acc = tl.dot(a_desc.load([pm * BM, kt * BK]), b_desc.load([pn * BN, kt * BK]).T, acc)
    c_desc.store([pm * BM, pn * BN], acc.to(c_desc.dtype))


@triton.jit
def fixed_a(q_desc, k_desc, o_ptr, N, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    # q is loaded once before the loop (a fixed A tile); with N == 0 the
    # loop runs no iteration and q's copy must still land before the
    # epilogue reuses its shared memory.
    pm = tl.program_id(0)
    q = q_desc.load([pm * BM, 0])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for start in range(0, N, BN):
        k = k_desc.load([start, 0])
        acc += tl.dot(q, k.T)
    rm = pm * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    tl.store(o_ptr + rm[:, None] * BN + rn[None, :], acc.to(tl.float16))


torch.manual_seed(11)
failures = []


def check(name, got, ref, tol=2e-2):
    err = (got - ref).abs().max().item() if got.numel() else 0.0
    scale = max(ref.abs().max().item() if ref.numel() else 0.0, 1.0)
    if not err <= tol * scale:
        failures.append(f"{name}: max error {err} against a scale of {scale}")
    print(("ok      " if err <= tol * scale else "FAILED  ") + name)


def plain(M, N, K, dt=torch.float16, b_t=False, BM=128, BN=128, BK=64, warps=4, stages=3):
    a = torch.randn((M, K), device="cuda").to(dt)
    b = torch.randn((N, K) if b_t else (K, N), device="cuda").to(dt)
    c = torch.zeros((M, N), device="cuda", dtype=torch.float16)
    ad = TensorDescriptor.from_tensor(a, [BM, BK])
    bd = TensorDescriptor.from_tensor(b, [BN, BK] if b_t else [BK, BN])
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    desc_mm[grid](ad, bd, c, M, N, K, c.stride(0), BM=BM, BN=BN, BK=BK, B_T=b_t,
                  num_warps=warps, num_stages=stages)
    bf = b.float().T if b_t else b.float()
    ref = a.float().cpu() @ bf.cpu()
    check(f"desc_mm {M}x{N}x{K} {dt} b_t={b_t} {BM}x{BN}x{BK} w{warps} s{stages}", c.cpu().float(), ref)


def persistent(M, N, K, BM=128, BN=128, BK=64, warps=8, stages=3, programs=5):
    a = torch.randn((M, K), device="cuda").half()
    b = torch.randn((N, K), device="cuda").half()
    c = torch.zeros((M, N), device="cuda", dtype=torch.float16)
    ad = TensorDescriptor.from_tensor(a, [BM, BK])
    bd = TensorDescriptor.from_tensor(b, [BN, BK])
    desc_mm_persistent[(programs,)](ad, bd, c, M, N, K, c.stride(0), BM=BM, BN=BN, BK=BK,
                                    PROGRAMS=programs, num_warps=warps, num_stages=stages)
    ref = a.float().cpu() @ b.float().cpu().T
    check(f"persistent {M}x{N}x{K} {BM}x{BN}x{BK} w{warps} s{stages} p{programs}", c.cpu().float(), ref)


plain(256, 256, 256)
plain(256, 256, 256, b_t=True)
plain(200, 136, 328)
plain(200, 136, 328, b_t=True, stages=4)
plain(128, 128, 40, b_t=True)
plain(64, 64, 512, BM=64, BN=64, BK=32, stages=2)
plain(320, 192, 192, dt=torch.bfloat16, warps=8, stages=2)
plain(256, 256, 1024, BN=256, warps=8, stages=3)
persistent(512, 384, 320)
persistent(300, 260, 200, stages=4, programs=3)
persistent(128, 128, 64, stages=2, programs=1)

def stored(M, N, K, BM=128, BN=128, BK=64, warps=4, stages=3, dt=torch.float16):
    # The product stored through a descriptor too (a bulk tensor store,
    # clipped at the edges): the guard band around it must stay untouched.
    # Small integers: every sum is exact, so fp32 outputs compare exactly.
    a = torch.randint(-3, 4, (M, K), device="cuda").half()
    b = torch.randint(-3, 4, (N, K), device="cuda").half()
    big = torch.full((M + 8, N + 16), 7.0, device="cuda", dtype=dt)
    c = big[4:4 + M, 8:8 + N]
    ad = TensorDescriptor.from_tensor(a, [BM, BK])
    bd = TensorDescriptor.from_tensor(b, [BN, BK])
    cd = TensorDescriptor(c, c.shape, c.stride(), [BM, BN])
    desc_mm_desc_store[(triton.cdiv(M, BM), triton.cdiv(N, BN))](ad, bd, cd, K, BM=BM, BN=BN, BK=BK,
                                                                 num_warps=warps, num_stages=stages)
    ref = a.float().cpu() @ b.float().cpu().T
    check(f"desc store {M}x{N}x{K} {dt} {BM}x{BN}x{BK} w{warps} s{stages}", c.cpu().float(), ref)
    host = big.cpu().float()
    host[4:4 + M, 8:8 + N] = 7.0
    if not bool((host == 7.0).all()):
        failures.append(f"desc store {M}x{N}x{K}: elements outside the tensor were written")


stored(256, 256, 256)
stored(200, 136, 328, stages=4)
stored(256, 128, 512, BN=64, warps=8, dt=torch.float32)
stored(192, 320, 128, BN=64, warps=4, stages=2, dt=torch.bfloat16)


for n in (0, 64, 320):
    q = torch.randint(-2, 3, (256, 64), device="cuda").half()
    k = torch.randint(-2, 3, (max(n, 64), 64), device="cuda").half()
    o = torch.full((256, 64), 5.0, device="cuda", dtype=torch.float16)
    qd = TensorDescriptor.from_tensor(q, [128, 64])
    kd = TensorDescriptor(k, [n if n else 64, 64], k.stride(), [64, 64])
    fixed_a[(2,)](qd, kd, o, n, BM=128, BN=64, D=64)
    want = torch.zeros((256, 64))
    for s0 in range(0, n, 64):
        want += q.float().cpu() @ k[s0:s0 + 64].float().cpu().T
    check(f"fixed A, N = {n}", o.cpu().float(), want)


# NaN padding: out-of-bounds elements read as NaN; only rows and columns
# past the edges are NaN in the product.
M, N, K = 100, 96, 64
a = torch.randn((M, K), device="cuda").half()
b = torch.randn((N, K), device="cuda").half()
c = torch.zeros((128, 128), device="cuda", dtype=torch.float16)
ad = TensorDescriptor(a, a.shape, a.stride(), [128, 64], padding="nan")
bd = TensorDescriptor(b, b.shape, b.stride(), [128, 64], padding="nan")
desc_mm[(1, 1)](ad, bd, c, 128, 128, K, c.stride(0), BM=128, BN=128, BK=64, B_T=True)
cc = c.cpu().float()
inside = cc[:M, :N]
ref = a.float().cpu() @ b.float().cpu().T
check("nan padding: the tensor's own block", inside, ref)
if not (torch.isnan(cc[M:, :]).all() and torch.isnan(cc[:, N:]).all()):
    failures.append("nan padding: rows and columns past the edges should be NaN")

assert not failures, "\n".join(failures)
print("tma: all cases agree")
