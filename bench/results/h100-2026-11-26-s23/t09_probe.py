# Cold autotuning of a TMA-descriptor persistent matmul over tutorial 09's
# config space (48 configs): the time of the first launch (compile every
# config, time them, run the best). Runs under tilebook and under Triton.
import os, sys, time
import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()
triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=DEVICE))


def configs():
    return [triton.Config({'BM': 128, 'BN': bn, 'BK': bk, 'GROUP': 8, 'SUB': sub}, num_stages=s, num_warps=w)
            for bn in [128, 256] for bk in [64, 128] for s in [2, 3, 4] for w in [4, 8] for sub in [True, False]]


@triton.jit
def tile_position(tile, tiles_m, tiles_n, GROUP: tl.constexpr):
    per_group = GROUP * tiles_n
    first = (tile // per_group) * GROUP
    rows = min(tiles_m - first, GROUP)
    return first + tile % rows, (tile % per_group) // rows


@triton.autotune(configs=configs(), key=['M', 'N', 'K'])
@triton.jit
def tma_persistent(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                   GROUP: tl.constexpr, SUB: tl.constexpr, SMS: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    if SUB:
        c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN // 2])
    else:
        c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, SMS, flatten=True):
        pm, pn = tile_position(tile, tiles_m, tiles_n, GROUP)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for kt in range(tl.cdiv(K, BK)):
            acc = tl.dot(a_desc.load([pm * BM, kt * BK]), b_desc.load([pn * BN, kt * BK]).T, acc)
        if SUB:
            halves = tl.reshape(acc, (BM, 2, BN // 2)).permute(0, 2, 1)
            left, right = tl.split(halves)
            c_desc.store([pm * BM, pn * BN], left.to(tl.float16))
            c_desc.store([pm * BM, pn * BN + BN // 2], right.to(tl.float16))
        else:
            c_desc.store([pm * BM, pn * BN], acc.to(tl.float16))


S = 4096
SMS = torch.cuda.get_device_properties(0).multi_processor_count
a = torch.randn((S, S), device=DEVICE, dtype=torch.float16)
bt = torch.randn((S, S), device=DEVICE, dtype=torch.float16)
c = torch.empty((S, S), device=DEVICE, dtype=torch.float16)
grid = lambda META: (min(SMS, triton.cdiv(S, META['BM']) * triton.cdiv(S, META['BN'])),)
torch.cuda.synchronize()
t0 = time.perf_counter()
tma_persistent[grid](a, bt, c, S, S, S, SMS=SMS)
torch.cuda.synchronize()
first = time.perf_counter() - t0
ok = torch.allclose(c.float(), a.float() @ bt.float().T, atol=0.5, rtol=1e-2)
ms = triton.testing.do_bench(lambda: tma_persistent[grid](a, bt, c, S, S, S, SMS=SMS))
print(f"T09 first launch (48 configs cold): {first:.2f} s; correct {ok}; best {tma_persistent.best_config}; "
      f"{2 * S**3 * 1e-12 / (ms * 1e-3):.0f} TFLOPS")
