# %% [markdown]
# # 3. Matrix multiplication
#
# Matrix multiplication is where a GPU's arithmetic units finally become the
# limit: an `M x K` matrix times a `K x N` matrix costs `2MNK` floating-point
# operations but only moves `MK + KN + MN` elements, so a good kernel can
# keep the tensor cores busy instead of waiting for memory. This tutorial
# writes one that comes close to the vendor library, cuBLAS, and covers:
#
# - the **blocked algorithm**: each program computes one tile of the output
#   by walking along `K`;
# - **multi-dimensional pointer arithmetic**: building a 2-D block of
#   pointers from row and column offsets and the tensors' strides;
# - **program ordering**: which output tiles run at the same time decides
#   how well the L2 cache is reused, shown as a picture and measured;
# - **autotuning**: letting the machine choose tile sizes;
# - **fusion**: applying an activation (leaky ReLU) before the result leaves
#   the chip;
# - **fp8 inputs**, with fp32 accumulation.
#
# On the CPU backend the sizes are small and the timings are CPU timings.

# %%
import torch
import triton
import triton.language as tl
import tilebook

DEVICE = triton.runtime.driver.active.get_active_torch_device()
ON_GPU = torch.cuda.is_available()
%device

# %% [markdown]
# ## The blocked algorithm
#
# Split `C` into tiles of `BLOCK_SIZE_M x BLOCK_SIZE_N`; one program computes
# one tile. A tile of `C` needs a strip of `BLOCK_SIZE_M` rows of `A` and a
# strip of `BLOCK_SIZE_N` columns of `B`. Those strips are too long to load
# at once, so the program walks along `K` in steps of `BLOCK_SIZE_K`,
# multiplying a small tile of `A` by a small tile of `B` each step and adding
# the product into an accumulator:
#
# ```
# acc = zeros(BLOCK_SIZE_M, BLOCK_SIZE_N)            # fp32, in registers
# for k in range(0, K, BLOCK_SIZE_K):
#     acc += A[m : m+BM, k : k+BK] @ B[k : k+BK, n : n+BN]
# C[m : m+BM, n : n+BN] = acc
# ```
#
# `tl.dot` multiplies the two tiles on the tensor cores. The accumulator
# stays in fp32 even for fp16 inputs, which is what keeps long sums
# accurate; it is rounded to fp16 once, when stored.
#
# ## Pointers to a 2-D tile
#
# Element `(i, j)` of a matrix lives at `ptr + i * stride_row + j * stride_col`.
# With a vector of row offsets `rm` and a vector of column offsets `rk`,
# broadcasting `rm[:, None]` (a column) against `rk[None, :]` (a row) gives
# the full `BM x BK` grid of addresses in one expression:
#
# ```
# a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
# ```
#
# Moving one step along `K` is adding `BLOCK_SIZE_K * stride_ak` to every
# pointer. Passing the strides in, rather than assuming a layout, means the
# same kernel multiplies transposed views without copying them.
#
# Two kinds of edge need care. Rows and columns past the end of `M` or `N`
# are wrapped with `% M` and `% N` so that every load stays inside the
# matrix (their results are never stored). The last step along `K` may be
# partial, so those loads are masked and read zeros, which add nothing to
# the dot product.

# %%
@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


@triton.jit
def matmul_kernel(
        a_ptr, b_ptr, c_ptr,
        M, N, K,
        stride_am, stride_ak,
        stride_bk, stride_bn,
        stride_cm, stride_cn,
        BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
        GROUP_SIZE_M: tl.constexpr,
        ACTIVATION: tl.constexpr,
):
    # Which tile of C this program computes (see "Program order" below).
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    # Pointers to the first tiles of A and B.
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    # Walk along K, accumulating in fp32.
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    # The activation runs on the accumulator, before anything is stored.
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu(accumulator)
    c = accumulator.to(tl.float16)

    # Store the tile, masking rows and columns past the end of C.
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)

# %% [markdown]
# ## Autotuning
#
# The best tile sizes depend on the GPU and on the shape of the problem:
# big tiles reuse more data per load but need more registers and shared
# memory, and leave fewer programs to spread over the multiprocessors.
# Rather than guess, we give `triton.autotune` a list of candidate
# configurations. The first call for each distinct `(M, N, K)` (the `key`)
# times every candidate and keeps the fastest; later calls with the same key
# use it directly. `num_stages` is how many `K` steps of loads are kept in
# flight ahead of the math, and `num_warps` how many warps share a program.
#
# We keep the plain `matmul_kernel` as well, to launch it with fixed
# configurations in the experiment on program order below.

# %%
def config(m, n, k, group, stages, warps):
    return triton.Config({'BLOCK_SIZE_M': m, 'BLOCK_SIZE_N': n, 'BLOCK_SIZE_K': k, 'GROUP_SIZE_M': group},
                         num_stages=stages, num_warps=warps)


GPU_CONFIGS = [
    config(128, 256, 64, 8, 3, 8), config(64, 256, 32, 8, 4, 4), config(128, 128, 32, 8, 4, 4),
    config(128, 64, 32, 8, 4, 4), config(64, 128, 32, 8, 4, 4), config(128, 32, 32, 8, 4, 4),
    config(64, 32, 32, 8, 5, 2), config(32, 64, 32, 8, 5, 2), config(128, 256, 128, 8, 3, 8),
    config(256, 128, 128, 8, 3, 8), config(256, 64, 128, 8, 4, 4), config(64, 256, 128, 8, 4, 4),
    config(128, 128, 128, 8, 4, 4), config(128, 64, 64, 8, 4, 4), config(64, 128, 64, 8, 4, 4),
    config(128, 32, 64, 8, 4, 4),
]
CPU_CONFIGS = [config(32, 32, 32, 4, 1, 4), config(64, 64, 32, 4, 1, 4)]

matmul_tuned = triton.autotune(configs=GPU_CONFIGS if ON_GPU else CPU_CONFIGS,
                               key=['M', 'N', 'K'])(matmul_kernel)


def matmul(a, b, activation=""):
    assert a.shape[1] == b.shape[0], "incompatible dimensions"
    M, K = a.shape
    K, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = lambda META: (triton.cdiv(M, META['BLOCK_SIZE_M']) * triton.cdiv(N, META['BLOCK_SIZE_N']),)
    matmul_tuned[grid](
        a, b, c, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        ACTIVATION=activation)
    return c

# %% [markdown]
# ## Checking it against cuBLAS
#
# `torch.matmul` on `'cuda'` tensors calls cuBLAS on a GPU (and computes on
# the host on the CPU backend). Both accumulate in fp32 and round once to
# fp16, but they add the products in different orders, so an element whose
# fp32 sum lies near the midpoint between two fp16 values can round
# differently: one fp16 step, 0.0625 for values between 64 and 128. The
# comparison therefore allows a relative difference of 1%, and we also count
# how many elements differ at all. This first call also runs the autotuner
# for this shape.

# %%
torch.manual_seed(0)
a = torch.randn((512, 512), device=DEVICE, dtype=torch.float16)
b = torch.randn((512, 512), device=DEVICE, dtype=torch.float16)
ours = matmul(a, b)
ref = torch.matmul(a, b)
print('largest difference from torch.matmul:', torch.max(torch.abs(ours.float() - ref.float())).item())
print('elements that differ:', (ours != ref).sum().item(), 'of', ours.numel())
print('matches:', torch.allclose(ours, ref, atol=1e-2, rtol=1e-2))
print('configuration chosen for 512 x 512 x 512:', matmul_tuned.best_config)

# %% [markdown]
# The same kernel multiplies a transposed view, because it reads the
# strides instead of assuming a layout:

# %%
ours_t = matmul(a, b.T)
print('A @ B.T matches:', torch.allclose(ours_t, torch.matmul(a, b.T), atol=1e-2, rtol=1e-2))

# %% [markdown]
# ## Program order and the L2 cache
#
# Programs are numbered along one axis, and the GPU starts them roughly in
# that order, as many at a time as fit (a *wave*). With the natural
# row-major numbering, the first wave covers part of one row of output
# tiles: it needs one strip of `A` but many strips of `B`. Each strip of
# `B` is then needed again by the next row of tiles, long after it has left
# the L2 cache.
#
# Grouping fixes this. With `GROUP_SIZE_M` rows per group, program numbers
# run down a column of `GROUP_SIZE_M` tiles before moving to the next
# column, so a wave covers a squarer block of the output and its tiles share
# both their `A` strips and their `B` strips. That is what the index
# arithmetic at the top of the kernel computes.
#
# `tilebook.trace` records a launch on the CPU backend, and
# `visiting_order` draws which program wrote each output tile, numbered in
# launch order, with the first `wave` programs outlined. Below, a 288 x 288
# output in 32 x 32 tiles, with waves of 9 programs. The text under each
# picture counts the distinct bytes of `A` and `B` the first wave loads.

# %%
Mt = Nt = 288
Kt = 64
at = torch.randn((Mt, Kt), device=DEVICE, dtype=torch.float16)
bt = torch.randn((Kt, Nt), device=DEVICE, dtype=torch.float16)
ct = torch.empty((Mt, Nt), device=DEVICE, dtype=torch.float16)


def trace_order(group):
    grid = (triton.cdiv(Mt, 32) * triton.cdiv(Nt, 32),)
    t = tilebook.trace(matmul_kernel[grid], at, bt, ct, Mt, Nt, Kt,
                       at.stride(0), at.stride(1), bt.stride(0), bt.stride(1), ct.stride(0), ct.stride(1),
                       BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32, GROUP_SIZE_M=group, ACTIVATION='')
    return t.visiting_order(ct, wave=9)


trace_order(1)

# %%
trace_order(3)

# %% [markdown]
# Row-major, the first wave loads one 4 KB strip of `A` and nine strips of
# `B` (36 KB in all); grouped by 3, it loads three strips of each (12 KB +
# 12 KB). Fewer distinct bytes per wave means more of each wave's loads hit
# in L2 instead of DRAM.
#
# How much does this matter on real hardware? We time the same
# configuration with `GROUP_SIZE_M=1` (row-major) and `GROUP_SIZE_M=8`.

# %%
def time_order(size, group, bm, bn, bk, stages, warps):
    a = torch.randn((size, size), device=DEVICE, dtype=torch.float16)
    b = torch.randn((size, size), device=DEVICE, dtype=torch.float16)
    c = torch.empty((size, size), device=DEVICE, dtype=torch.float16)
    grid = (triton.cdiv(size, bm) * triton.cdiv(size, bn),)
    run = lambda: matmul_kernel[grid](a, b, c, size, size, size, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                      c.stride(0), c.stride(1), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
                                      GROUP_SIZE_M=group, ACTIVATION='', num_stages=stages, num_warps=warps)
    ms = triton.testing.do_bench(run)
    return 2 * size ** 3 * 1e-12 / (ms * 1e-3)


ORDER_SIZES = [4096, 8192] if ON_GPU else [256]
tile = (128, 256, 64, 3, 8) if ON_GPU else (32, 32, 32, 1, 4)
for size in ORDER_SIZES:
    row_major = time_order(size, 1, *tile)
    grouped = time_order(size, 8, *tile)
    print(f'{size} x {size}: row-major {row_major:.1f} TFLOPS, grouped {grouped:.1f} TFLOPS, '
          f'grouped / row-major = {grouped / row_major:.3f}')

# %% [markdown]
# On an H100 the difference is small. In the run saved here grouping
# gained 1% at 4096 and 8% at 8192; over five runs on the same GPU the
# ratio ranged from 0.98 to 1.08, so a single run says little beyond
# "a few percent at most", and the 8192 gain did not repeat reliably. Two reasons: the 50 MB L2 cache holds a large share of the
# inputs (a 4096 x 4096 fp16 matrix is 32 MB), and with 132
# multiprocessors a wave of 128 x 256 tiles already spans several rows of
# the output, so even "row-major" waves reuse strips of `B`. The grouped
# order matters more when the inputs are much larger than L2, when the
# cache is smaller, or when tiles are small. It costs nothing, so it is
# worth keeping. On the CPU backend the experiment says nothing about
# GPUs; it runs only so the notebook runs everywhere.
#
# ## A fused activation
#
# `ACTIVATION="leaky_relu"` applies `leaky_relu` (a `@triton.jit` function,
# called from the kernel like any Python function and inlined when compiled)
# to the fp32 accumulator, in registers. Doing it in a separate kernel
# would read and write all of `C` once more.

# %%
ours = matmul(a, b, activation="leaky_relu")
ref = torch.nn.functional.leaky_relu(torch.matmul(a, b).float(), 0.01).half()
print('leaky ReLU fused in the kernel matches:', torch.allclose(ours, ref, atol=1e-2, rtol=1e-2))

# %% [markdown]
# ## fp8 inputs
#
# fp8 (`float8_e5m2`: 5 exponent bits, 2 mantissa bits) halves the bytes per
# element again and doubles the tensor cores' peak rate on Hopper GPUs. The
# kernel needs no change: `tl.dot` of two fp8 tiles accumulates in fp32.
# As in Triton's tutorial, `B` is stored transposed (`b.T` before the
# conversion), which keeps both operands' `K` dimension contiguous, the
# layout Hopper's fp8 instructions want. With only 2 mantissa bits the
# inputs themselves are coarse, so we compare with fp16 matmul of the same
# fp8 values.

# %%
a8 = torch.randn((512, 512), device=DEVICE, dtype=torch.float16).to(torch.float8_e5m2)
b8 = torch.randn((512, 512), device=DEVICE, dtype=torch.float16).T.to(torch.float8_e5m2)
ours8 = matmul(a8, b8)
ref8 = torch.matmul(a8.to(torch.float16), b8.to(torch.float16))
print('fp8 inputs match fp16 matmul of the same values:', torch.allclose(ours8, ref8, atol=0.125, rtol=0.01))

# %% [markdown]
# ## Benchmark
#
# Square matrices of growing size, in TFLOPS (`2 * M * N * K` operations
# per multiplication). The fp16 plot compares with cuBLAS through
# `torch.matmul`. cuBLAS has no fp8 path through `torch.matmul`, so the fp8
# plot shows our kernel alone, next to its own fp16 line. The first call at
# each size runs the autotuner, which `do_bench`'s warm-up absorbs.

# %%
SIZES = [512, 1024, 2048, 3072, 4096, 6144, 8192] if ON_GPU else [64, 128]


@triton.testing.perf_report([
    triton.testing.Benchmark(
        x_names=['M', 'N', 'K'],
        x_vals=SIZES,
        line_arg='provider',
        line_vals=['cublas', 'tilebook'] if fp8 is False else ['tilebook', 'tilebook-fp16'],
        line_names=['cuBLAS', 'tilebook kernel'] if fp8 is False else ['tilebook kernel (fp8)', 'tilebook kernel (fp16)'],
        styles=[('green', '-'), ('blue', '-')],
        ylabel='TFLOPS',
        plot_name='matmul-performance-' + ('fp16' if fp8 is False else 'fp8'),
        args={'fp8_inputs': fp8},
    ) for fp8 in [False, True]])
def benchmark(M, N, K, provider, fp8_inputs):
    a = torch.randn((M, K), device=DEVICE, dtype=torch.float16)
    b = torch.randn((K, N), device=DEVICE, dtype=torch.float16)
    if fp8_inputs and provider == 'tilebook':
        a = a.to(torch.float8_e5m2)
        b = b.T.to(torch.float8_e5m2)
    if provider == 'cublas':
        ms = triton.testing.do_bench(lambda: torch.matmul(a, b))
    else:
        ms = triton.testing.do_bench(lambda: matmul(a, b))
    return 2 * M * N * K * 1e-12 / (ms * 1e-3)


benchmark.run(show_plots=True, print_data=True)

# %% [markdown]
# ## Reading the results
#
# In the H100 run saved here, the fp16 kernel reached 580 to 600 TFLOPS
# from 4096 up, 83% to 87% of cuBLAS (670 to 720 TFLOPS). For small
# matrices every kernel is limited by how few tiles there are to spread
# over 132 multiprocessors, and at 3072 the autotuner's best candidate was
# a poor fit. The autotuner's log above names the configuration it chose
# at each size it tuned, with its time: compare them to see whether one
# configuration wins everywhere on your GPU.
#
# The gap to cuBLAS is in tilebook's code generation, not in the
# algorithm: autotuned over these same configurations, Triton's compiler
# runs this kernel about 5% faster than tilebook at 4096 and 8192 on the
# same GPU (`bench/NOTES.md`, `bench/results/latest.json`).
#
# tilebook's fp8 path is correct but not yet fast: about 70 TFLOPS, well
# below its own fp16 line, because its code generation does not yet feed
# Hopper's fp8 tensor-core instructions from K-major tiles at their full
# rate. Triton gets a large speed-up from fp8 on an H100; closing this gap
# is open work.
#
# This ends the three tutorials: a memory-bound kernel measured in bytes,
# a fused kernel that saves bytes, and a compute-bound kernel measured in
# operations, where the order of the work and the choice of tiles decide
# how close it comes to the hardware's peak.
