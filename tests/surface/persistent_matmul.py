# One program per multiprocessor walks all output tiles of a product
# (a persistent kernel), in three forms: plain pointers, host-made tensor
# descriptors whose block shapes an autotuning pre-hook sets, and
# descriptors made inside the kernel. Scopes and launches (named by the
# kernels' launch_metadata) timed with triton.profiler and read back with
# its viewer; cuBLAS through triton._C; sizes from the command line. Our own program, using the surface of
# Triton's persistent-matmul tutorial.
import argparse
import os
import tempfile

import torch
import triton
import triton.language as tl
import triton.profiler as proton
import triton.profiler.viewer as proton_viewer
from triton._C.libtriton import nvidia
from triton.tools.tensor_descriptor import TensorDescriptor

DEVICE = triton.runtime.driver.active.get_active_torch_device()


def descriptors_on_device():
    return torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 9


def tile_configs(pre_hook=None):
    return [
        triton.Config({'BM': bm, 'BN': bn, 'BK': bk, 'GROUP': 8}, num_stages=3, num_warps=4, pre_hook=pre_hook)
        for bm, bn, bk in [(64, 64, 32), (128, 64, 32), (64, 128, 64)]
    ]


@triton.jit
def tile_position(tile, tiles_m, tiles_n, GROUP: tl.constexpr):
    per_group = GROUP * tiles_n
    first = (tile // per_group) * GROUP
    rows = min(tiles_m - first, GROUP)
    return first + tile % rows, (tile % per_group) // rows


@triton.autotune(configs=tile_configs(), key=['M', 'N', 'K'])
@triton.jit
def persistent(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr, SMS: tl.constexpr):
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    rk = tl.arange(0, BK)
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, SMS, flatten=True):
        pm, pn = tile_position(tile, tiles_m, tiles_n, GROUP)
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
        tl.store(c_ptr + om[:, None] * scm + on[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
                 mask=(om[:, None] < M) & (on[None, :] < N))


def set_block_shapes(nargs):
    nargs['a_desc'].block_shape = [nargs['BM'], nargs['BK']]
    nargs['b_desc'].block_shape = [nargs['BN'], nargs['BK']]
    nargs['c_desc'].block_shape = [nargs['BM'], nargs['BN']]


def name_launch(grid, kernel, args):
    M, N, K = args["M"], args["N"], args["K"]
    return {"name": f"{kernel.name} <{M}x{N}x{K}>", "flops16": 2.0 * M * N * K,
            "bytes": 2 * (M * K + N * K + M * N)}


@triton.autotune(configs=tile_configs(set_block_shapes), key=['M', 'N', 'K'])
@triton.jit(launch_metadata=name_launch)
def persistent_host_desc(a_desc, b_desc, c_desc, M, N, K,
                         BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
                         SMS: tl.constexpr):
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, SMS, flatten=True, warp_specialize=False):
        pm, pn = tile_position(tile, tiles_m, tiles_n, GROUP)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for kt in range(tl.cdiv(K, BK)):
            x = a_desc.load([pm * BM, kt * BK])
            y = b_desc.load([pn * BN, kt * BK])
            acc = tl.dot(x, y.T, acc)
        c_desc.store([pm * BM, pn * BN], acc.to(tl.float16))


@triton.jit
def persistent_device_desc(a_ptr, b_ptr, c_ptr, M, N, K,
                           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
                           SMS: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, SMS, flatten=True):
        pm, pn = tile_position(tile, tiles_m, tiles_n, GROUP)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for kt in range(tl.cdiv(K, BK)):
            acc = tl.dot(a_desc.load([pm * BM, kt * BK]), b_desc.load([pn * BN, kt * BK]).T, acc)
        c_desc.store([pm * BM, pn * BN], acc.to(tl.float16))


def sms():
    return torch.cuda.get_device_properties("cuda").multi_processor_count


def run_pointers(a, b):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=DEVICE, dtype=torch.float16)
    grid = lambda meta: (min(sms(), triton.cdiv(M, meta['BM']) * triton.cdiv(N, meta['BN'])),)
    persistent[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                     c.stride(0), c.stride(1), SMS=sms())
    return c


def run_host_desc(a, bt):
    M, K = a.shape
    N = bt.shape[0]
    c = torch.empty((M, N), device=DEVICE, dtype=torch.float16)
    placeholder = [1, 1]
    a_desc = TensorDescriptor.from_tensor(a, placeholder)
    b_desc = TensorDescriptor.from_tensor(bt, placeholder)
    c_desc = TensorDescriptor(c, c.shape, c.stride(), placeholder)
    grid = lambda meta: (min(sms(), triton.cdiv(M, meta['BM']) * triton.cdiv(N, meta['BN'])),)
    persistent_host_desc[grid](a_desc, b_desc, c_desc, M, N, K, SMS=sms())
    return c


def run_device_desc(a, bt):
    M, K = a.shape
    N = bt.shape[0]
    c = torch.empty((M, N), device=DEVICE, dtype=torch.float16)
    triton.set_allocator(lambda size, align, stream: torch.empty(size, device=DEVICE, dtype=torch.int8))
    grid = (min(sms(), triton.cdiv(M, 64) * triton.cdiv(N, 64)),)
    persistent_device_desc[grid](a, bt, c, M, N, K, BM=64, BN=64, BK=32, GROUP=8, SMS=sms())
    return c


def check_all(M, N, K):
    a = torch.randn((M, K), device=DEVICE, dtype=torch.float16)
    b = torch.randn((K, N), device=DEVICE, dtype=torch.float16)
    ref = torch.matmul(a, b)
    results = [("pointers", run_pointers(a, b))]
    bt = b.T.contiguous()
    results.append(("host descriptors", run_host_desc(a, bt)))
    results.append(("device descriptors", run_device_desc(a, bt)))
    for name, c in results:
        assert torch.allclose(c, ref, atol=5e-2, rtol=1e-2), f"{name} differs for {M}x{N}x{K}"
    print(f"{M}x{N}x{K}: {', '.join(n for n, _ in results)} agree with torch.matmul")


BLAS = nvidia.cublas.CublasLt(torch.empty(1 << 20, device=DEVICE, dtype=torch.uint8))


def blas_matmul(a, bt):
    c = torch.empty((a.shape[0], bt.shape[0]), device=DEVICE, dtype=a.dtype)
    BLAS.matmul(a, bt, c)
    return c


def profile(M, N, K, reps):
    a = torch.randn((M, K), device=DEVICE, dtype=torch.float16)
    b = torch.randn((K, N), device=DEVICE, dtype=torch.float16)
    bt = b.T.contiguous()
    assert torch.allclose(blas_matmul(a, bt), torch.matmul(a, b), atol=5e-2, rtol=1e-2), "cuBLAS handle"
    for name, fn, args in [("torch", torch.matmul, (a, b)), ("pointers", run_pointers, (a, b)),
                           ("cublas", blas_matmul, (a, bt))]:
        fn(*args)
        with proton.scope(f"{name} [M={M}, N={N}, K={K}]", {"flops16": 2.0 * M * N * K * reps}):
            for _ in range(reps):
                fn(*args)
    # Unscoped launches are named by the kernel's launch_metadata.
    proton.activate()
    run_host_desc(a, bt)
    proton.deactivate()


def main(argv):
    parser = argparse.ArgumentParser(description="persistent products")
    parser.add_argument("-K", type=int, nargs=2, default=[128, 512])
    parser.add_argument("--step", type=int, default=128)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    check_all(200, 136, 72)
    where = os.path.join(tempfile.mkdtemp(), "persistent")
    proton.start(where, hook="triton")
    for K in range(args.K[0], args.K[1] + 1, args.step):
        profile(512, 512, K, args.reps)
    proton.finalize()
    tree, metrics = proton_viewer.parse(["tflop16/s", "time/ms"], where + ".hatchet")
    proton_viewer.print_tree(tree, metrics)
    os.remove(where + ".hatchet")
    print(f"device descriptors native here: {descriptors_on_device()}")


if __name__ == "__main__":
    main(["-K", "128", "512", "--step", "128"])
