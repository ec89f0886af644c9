# %% [markdown]
# # 2. Fused softmax
#
# Softmax turns each row of a matrix into probabilities:
# `softmax(x)[i, j] = exp(x[i, j] - m_i) / sum_k exp(x[i, k] - m_i)`, where
# subtracting the row maximum `m_i` keeps `exp` from overflowing. It does
# very little arithmetic per element, so its speed is decided by how many
# bytes it moves between the GPU's memory (DRAM) and its cores.
#
# This tutorial shows:
#
# - why an operation written as several library calls moves far more bytes
#   than it needs to, and how to count them;
# - how one kernel that keeps a whole row on chip (a **fused** kernel)
#   reads the input once and writes the output once;
# - how a row that does not fill its block is padded with a mask whose
#   `other=` value is chosen so it cannot change the answer;
# - the measured effect: the fused kernel against the unfused version and
#   `torch.softmax`.
#
# As in tutorial 1, the notebook runs on the GPU when there is one and on the
# CPU backend otherwise (with smaller sizes).

# %%
import torch
import triton
import triton.language as tl
import tilebook

DEVICE = triton.runtime.driver.active.get_active_torch_device()
ON_GPU = torch.cuda.is_available()
%device

# %% [markdown]
# ## The unfused version, and what it costs
#
# Written with tensor operations, softmax over the rows of an `M x N` matrix
# is five steps. Each one is a separate kernel that reads its inputs from
# DRAM and writes its result back to DRAM:
#
# | step | reads | writes |
# | --- | --- | --- |
# | `x.max(dim=1)` | `MN` | `M` |
# | `x - x_max[:, None]` | `MN + M` | `MN` |
# | `torch.exp(z)` | `MN` | `MN` |
# | `numerator.sum(dim=1)` | `MN` | `M` |
# | `numerator / denominator[:, None]` | `MN + M` | `MN` |
#
# That is `5MN + 2M` elements read and `3MN + 2M` written: about 8 element
# transfers per input element. A kernel that loads a row, computes
# everything while the row sits in registers, and stores the result needs
# `MN` reads and `MN` writes: 2 per element. The arithmetic is the same, so
# we should expect the fused kernel to be up to about 4 times faster.
#
# On a GPU session, tilebook runs each of these tensor operations as a
# small tile kernel of its own (from tilebook's `stdlib/`), so the unfused
# version below really does make five round trips through memory, as it
# would in torch.

# %%
def naive_softmax(x):
    """Softmax over the rows of x, one tensor operation at a time."""
    x_max = x.max(dim=1)[0]
    z = x - x_max[:, None]
    numerator = torch.exp(z)
    denominator = numerator.sum(dim=1)
    return numerator / denominator[:, None]

# %% [markdown]
# ## The fused kernel
#
# Each program handles one row. It loads the whole row as one block, so the
# block size must be a power of two at least as large as the row:
# `BLOCK_SIZE = triton.next_power_of_2(n_cols)`. For a row of 781 columns
# that is 1024, and the last 243 lanes have no data. They are masked, and
# the load gives them `other=-float('inf')`:
#
# - `-inf` never wins `tl.max`, so the row maximum is unchanged;
# - `exp(-inf - max)` is `0`, so they add nothing to the sum;
# - the store is masked as well, so nothing is written past the row.
#
# Rows are addressed with the row stride rather than `n_cols`, so the kernel
# also works on a view whose rows are not packed (a slice of columns).

# %%
@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    row_start_ptr = input_ptr + row_idx * input_row_stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    row = tl.load(row_start_ptr + col_offsets, mask=mask, other=-float('inf'))
    row_minus_max = row - tl.max(row, axis=0)
    numerator = tl.exp(row_minus_max)
    denominator = tl.sum(numerator, axis=0)
    softmax_output = numerator / denominator
    output_row_start_ptr = output_ptr + row_idx * output_row_stride
    tl.store(output_row_start_ptr + col_offsets, softmax_output, mask=mask)

# %% [markdown]
# The host function launches one program per row. It also picks
# `num_warps`, the number of 32-thread groups that share one program's
# work: a row of 16384 floats spread over 4 warps would leave each thread
# 128 values to hold in registers, so wider rows get more warps.

# %%
def softmax(x):
    n_rows, n_cols = x.shape
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    num_warps = 4
    if BLOCK_SIZE >= 2048:
        num_warps = 8
    if BLOCK_SIZE >= 4096:
        num_warps = 16
    y = torch.empty_like(x)
    softmax_kernel[(n_rows,)](y, x, x.stride(0), y.stride(0), n_cols,
                              BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)
    return y

# %% [markdown]
# ## Checking it
#
# A matrix whose row length is not a power of two exercises the mask. We
# compare with `torch.softmax` and with the unfused version.

# %%
torch.manual_seed(0)
x = torch.randn(1823, 781, device=DEVICE)
y_fused = softmax(x)
y_torch = torch.softmax(x, dim=1)
y_naive = naive_softmax(x)
print('fused matches torch.softmax:', torch.allclose(y_fused, y_torch, atol=1e-6))
print('fused matches the unfused version:', torch.allclose(y_fused, y_naive, atol=1e-6))
print('every row sums to 1:', torch.allclose(y_fused.sum(dim=1), torch.ones(1823, device=DEVICE), atol=1e-5))

# %% [markdown]
# The footer lists every kernel the cell launched: `softmax_kernel` once,
# and on a GPU the small kernels behind `torch.softmax` (`tb_softmax_row`)
# and behind each step of the unfused version (`tb_row_max`, `tb_binary`,
# `tb_unary`, `tb_row_sum`).
#
# ## The mask, seen from one program
#
# `mask_view` shows the loads and the store of program 0, the first row: 781
# lanes active out of 1024.

# %%
small = x[:4]
out = torch.empty_like(small)
t = tilebook.trace(softmax_kernel[(4,)], out, small, small.stride(0), out.stride(0), 781, BLOCK_SIZE=1024)
t.mask_view(pid=0)

# %% [markdown]
# ## Benchmark
#
# We sweep the row length `N` for a fixed number of rows and report
# bandwidth as the bytes a softmax must move, read once and written once
# (`2 * M * N * 4` bytes for `float32`), divided by the time. Counting the
# same bytes for all three lines makes their bandwidths directly
# comparable: a version that moves more bytes than needed shows up as lower
# bandwidth.
#
# The `torch.softmax` line is tilebook's implementation of torch's function:
# on a GPU it is a one-pass tile kernel from tilebook's standard library,
# close to what we write here, so it is a fair baseline for the kernel but
# not PyTorch's own code. The repository's benchmark (`bench/run_gpu.sh`)
# measures the real `torch.softmax` and Triton side by side; see
# `bench/NOTES.md` for those numbers.

# %%
M = 4096 if ON_GPU else 64
N_VALS = [256, 512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384] if ON_GPU else [128, 256, 512]


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=['N'],
        x_vals=N_VALS,
        line_arg='provider',
        line_vals=['fused', 'torch', 'naive'],
        line_names=['fused kernel', 'torch.softmax', 'unfused (5 operations)'],
        styles=[('blue', '-'), ('green', '-'), ('red', '-')],
        ylabel='GB/s',
        plot_name=f'softmax-performance (M={M})',
        args={'M': M},
    ))
def benchmark(M, N, provider):
    x = torch.randn(M, N, device=DEVICE, dtype=torch.float32)
    if provider == 'fused':
        ms = triton.testing.do_bench(lambda: softmax(x))
    elif provider == 'torch':
        ms = triton.testing.do_bench(lambda: torch.softmax(x, dim=-1))
    else:
        ms = triton.testing.do_bench(lambda: naive_softmax(x))
    return 2 * x.numel() * x.element_size() * 1e-9 / (ms * 1e-3)


results = benchmark.run(print_data=True, show_plots=True, return_df=True)

# %% [markdown]
# ## What the numbers say
#
# The ratio of the fused kernel to the unfused version, per row length:

# %%
for n, fused, naive in zip(N_VALS, results['fused kernel'], results['unfused (5 operations)']):
    print(f'N = {n:5d}: fused is {fused / naive:.1f}x the unfused version')

# %% [markdown]
# The counting above predicted up to 4x: the fused kernel moves a quarter
# of the bytes. In the H100 run saved in this notebook the ratio is 4.0x to
# 4.1x from `N = 3072` up, the prediction almost exactly, and about 3x for
# shorter rows, where each of the unfused version's five kernels is too
# short to reach full bandwidth and their launches weigh more. On the CPU
# backend the ratio says little: the unfused steps run on the host there,
# not as kernels.
#
# For large rows the fused kernel runs at about 2.9 TB/s on the H100, close
# to what its memory delivers (vector addition reached about 3.0 TB/s in
# tutorial 1). `torch.softmax` gives the same numbers here because, on a
# GPU session, tilebook implements it with a kernel of the same design.
# PyTorch's own softmax, measured by the repository's benchmark on the
# same GPU, ran at 1.8 to 2.5 TB/s for rows of 8192 and more.
#
# For the widest rows, one program per row needs many registers per thread,
# which limits how many rows a multiprocessor works on at once; that is
# where the choice of `num_warps` matters most.
#
# Next: matrix multiplication, where the arithmetic finally outweighs the
# memory traffic and the order in which programs visit the output matters.
