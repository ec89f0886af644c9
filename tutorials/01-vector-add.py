# %% [markdown]
# # 1. Vector addition
#
# This first tutorial builds the smallest useful GPU kernel, `z = x + y`, and
# uses it to introduce the ideas every later kernel relies on:
#
# - **the programming model**: a kernel is one *program* that runs many
#   times in parallel, once per point of a *grid*; each program handles one
#   *block* of the data;
# - **pointer arithmetic and masks**: a program computes the addresses of its
#   block and masks off the ones past the end of the data;
# - **measuring**: how fast the kernel is, in bytes moved per second, next to
#   a reference.
#
# The notebook runs on the GPU when there is one and on tilebook's CPU
# backend otherwise (then with smaller sizes, and timings that are CPU
# timings). The cell below says which device produced the outputs you see.

# %%
import torch
import triton
import triton.language as tl
import tilebook

DEVICE = triton.runtime.driver.active.get_active_torch_device()
ON_GPU = torch.cuda.is_available()
%device

# %% [markdown]
# ## The kernel
#
# `@triton.jit` marks a function as a kernel. Its body is written for *one*
# program: `tl.program_id(0)` says which one it is. With a block of
# `BLOCK_SIZE` elements per program, program `pid` owns the elements from
# `pid * BLOCK_SIZE` up to `pid * BLOCK_SIZE + BLOCK_SIZE - 1`, and
# `tl.arange(0, BLOCK_SIZE)` gives the offsets inside the block as a vector.
# Adding them to a pointer gives a block of pointers; `tl.load` reads them
# all at once.
#
# The vectors rarely divide evenly into blocks. The last program's block
# reaches past the end, so every load and store takes a **mask**: lanes
# where `offsets < n_elements` is false read nothing and write nothing.
#
# `BLOCK_SIZE` is a `tl.constexpr`: a compile-time value. Each value gets its
# own compiled code, in which the block size is a constant.

# %%
@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + y, mask=mask)

# %% [markdown]
# ## Launching it
#
# The host side allocates the output and launches the kernel on a grid:
# `kernel[grid](args...)`. The grid can be a function of the launch's
# meta-parameters, so the number of programs follows the block size:
# `triton.cdiv(n, BLOCK_SIZE)` programs cover `n` elements. Tensors are
# passed as pointers to their first element. The launch is asynchronous;
# reading the result waits for it.

# %%
def add(x: torch.Tensor, y: torch.Tensor):
    output = torch.empty_like(x)
    n_elements = output.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta['BLOCK_SIZE']),)
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=1024)
    return output


torch.manual_seed(0)
size = 98432
x = torch.rand(size, device=DEVICE)
y = torch.rand(size, device=DEVICE)
output = add(x, y)
print(output)
print(f'largest difference from x + y: {torch.max(torch.abs(output - (x + y))).item()}')

# %% [markdown]
# The lines under the cell are tilebook's timing footer: for each kernel the
# cell launched, its grid, its time on the device, and how long compiling it
# took the first time. On a GPU you will also see `tb_binary` and
# `tb_unary`: the check `torch.abs(output - (x + y))` is made of torch
# operations on `'cuda'` tensors, and tilebook runs those as small kernels
# of its own.
#
# ## What the mask did
#
# 98432 elements in blocks of 1024 make 97 programs; the last one has
# 98432 - 96 * 1024 = 128 elements to add. `tilebook.trace` runs a launch on
# the CPU backend with every load and store recorded, and `mask_view` shows
# one program's lanes: coloured where the mask let the access through, grey
# where it did not.

# %%
t = tilebook.trace(add_kernel[(97,)], x, y, output, size, BLOCK_SIZE=1024)
t.mask_view(pid=96)

# %% [markdown]
# ## How fast is it?
#
# Adding two vectors does almost no arithmetic: each element costs two
# loads and one store, 12 bytes for `float32`. The kernel is limited by how
# fast memory moves bytes, so the measure is bandwidth: bytes moved divided
# by time. `triton.testing.do_bench` times a function the way GPU kernels
# should be timed (warm-up first, the L2 cache flushed between runs, device
# events around each run) and returns milliseconds; `perf_report` sweeps it
# over sizes and draws the table and the plot.
#
# The reference line is `x + y` written with torch. On a GPU session,
# tilebook runs torch's element-wise operations on `'cuda'` tensors as
# small tile kernels of its own standard library (`stdlib/torch_ops.py`),
# so the reference is GPU code doing the same work; on the CPU backend it is
# computed on the host.

# %%
SIZES = [2**i for i in range(12, 29)] if ON_GPU else [2**i for i in range(10, 17, 2)]


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=['size'],
        x_vals=SIZES,
        x_log=True,
        line_arg='provider',
        line_vals=['tilebook', 'torch'],
        line_names=['tilebook kernel', 'torch x + y'],
        styles=[('blue', '-'), ('green', '-')],
        ylabel='GB/s',
        plot_name='vector-add-performance',
        args={},
    ))
def benchmark(size, provider):
    x = torch.rand(size, device=DEVICE, dtype=torch.float32)
    y = torch.rand(size, device=DEVICE, dtype=torch.float32)
    quantiles = [0.5, 0.2, 0.8]
    if provider == 'torch':
        ms, min_ms, max_ms = triton.testing.do_bench(lambda: x + y, quantiles=quantiles)
    else:
        ms, min_ms, max_ms = triton.testing.do_bench(lambda: add(x, y), quantiles=quantiles)
    gbps = lambda ms: 3 * x.numel() * x.element_size() * 1e-9 / (ms * 1e-3)
    return gbps(ms), gbps(max_ms), gbps(min_ms)


benchmark.run(print_data=True, show_plots=True)

# %% [markdown]
# Read the plot from left to right. Small vectors are dominated by the fixed
# cost of a launch, so bandwidth is low. As the size grows it climbs
# towards what the memory delivers; on an H100, vectors that no longer fit
# in the 50 MB L2 cache are limited by HBM3, about 3 TB/s. Each `add` call
# also allocates its output, and the timing includes that, as it would in a
# program; tilebook keeps freed GPU memory in a pool for reuse, as torch
# does, so that costs little.
#
# Next: fused softmax, where one kernel replaces several and the bytes it
# saves are the speed-up.
