# A pointer-based persistent matmul (tutorial 09's `matmul_kernel_persistent`
# shape: a K loop inside a loop over output tiles), autotuned over 16
# configs, under tilebook and Triton: first launch, correctness, TFLOPS.
import time
import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


def configs():
    return [triton.Config({'BM': 128, 'BN': bn, 'BK': bk, 'GROUP': 8}, num_stages=s, num_warps=w)
            for bn in [128, 256] for bk in [64, 128] for s in [3, 4] for w in [4, 8]]


@triton.jit
def tile_of(tile, tiles_m, tiles_n, GROUP: tl.constexpr):
    per_group = GROUP * tiles_n
    first = (tile // per_group) * GROUP
    rows = min(tiles_m - first, GROUP)
    return first + tile % rows, (tile % per_group) // rows


@triton.autotune(configs=configs(), key=['M', 'N', 'K'])
@triton.jit
def persistent_ptr(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr, SMS: tl.constexpr):
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    rk = tl.arange(0, BK)
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, SMS, flatten=True):
        pm, pn = tile_of(tile, tiles_m, tiles_n, GROUP)
        rm = tl.max_contiguous(tl.multiple_of(tl.where(pm * BM + tl.arange(0, BM) < M, pm * BM + tl.arange(0, BM), 0), BM), BM)
        rn = tl.max_contiguous(tl.multiple_of(tl.where(pn * BN + tl.arange(0, BN) < N, pn * BN + tl.arange(0, BN), 0), BN), BN)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for kt in range(tl.cdiv(K, BK)):
            ks = kt * BK + rk
            x = tl.load(a_ptr + rm[:, None] * sam + ks[None, :] * sak, mask=ks[None, :] < K, other=0.0)
            y = tl.load(b_ptr + ks[:, None] * sbk + rn[None, :] * sbn, mask=ks[:, None] < K, other=0.0)
            acc = tl.dot(x, y, acc)
        om = pm * BM + tl.arange(0, BM)
        on = pn * BN + tl.arange(0, BN)
        tl.store(c_ptr + om[:, None] * scm + on[None, :] * scn, acc.to(tl.float16),
                 mask=(om[:, None] < M) & (on[None, :] < N))


SMS = torch.cuda.get_device_properties(0).multi_processor_count
for S in [4096, 8192, 3000]:
    a = torch.randn((S, S), device=DEVICE, dtype=torch.float16)
    b = torch.randn((S, S), device=DEVICE, dtype=torch.float16)
    c = torch.empty((S, S), device=DEVICE, dtype=torch.float16)
    grid = lambda META: (min(SMS, triton.cdiv(S, META['BM']) * triton.cdiv(S, META['BN'])),)
    run = lambda: persistent_ptr[grid](a, b, c, S, S, S, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                       c.stride(0), c.stride(1), SMS=SMS)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    run()
    torch.cuda.synchronize()
    first = time.perf_counter() - t0
    ok = torch.allclose(c.float(), a.float() @ b.float(), atol=1.0, rtol=1e-2)
    ms = triton.testing.do_bench(run)
    cub = triton.testing.do_bench(lambda: torch.matmul(a, b))
    print(f"PERSISTENT {S}: first launch {first:.2f} s; correct {ok}; {2 * S**3 * 1e-12 / (ms * 1e-3):.0f} TFLOPS "
          f"(torch.matmul {2 * S**3 * 1e-12 / (cub * 1e-3):.0f}); best {persistent_ptr.best_config}")
