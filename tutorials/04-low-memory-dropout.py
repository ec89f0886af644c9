# %% [markdown]
# # 4. Low-memory dropout
#
# Dropout zeroes each element of its input with probability `p` and scales
# the survivors by `1 / (1 - p)`, so the expected value of every element is
# unchanged. Training code applies it in the forward pass and must apply the
# *same* zeros again in the backward pass.
#
# The usual implementation draws a random keep-mask, stores it (one byte or
# more per element), and reads it back later. This tutorial builds the other
# kind: the mask is never stored. Each element's random number is a pure
# function of a seed and the element's index, so it can be drawn again, in
# any kernel, on any program, whenever it is needed. State shrinks from a
# tensor the size of the input to one integer.
#
# This tutorial shows:
#
# - a dropout kernel that reads a stored mask, as a baseline;
# - `tl.rand(seed, offsets)`, a *counter-based* generator (Philox), and why
#   its numbers do not depend on how the work is split into programs;
# - a picture of which program drew which numbers;
# - the memory traffic each version needs, measured.

# %%
import torch
import triton
import triton.language as tl
import tilebook

DEVICE = triton.runtime.driver.active.get_active_torch_device()
ON_GPU = torch.cuda.is_available()
%device

# %% [markdown]
# ## The baseline: a stored mask
#
# The kernel reads `x` and a mask of zeros and ones, and writes the result.
# Three tensors cross memory: `x`, the mask, and the output.

# %%
@triton.jit
def masked_dropout_kernel(x_ptr, keep_ptr, out_ptr, n, p, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    x = tl.load(x_ptr + offs, mask=inside)
    keep = tl.load(keep_ptr + offs, mask=inside)
    tl.store(out_ptr + offs, tl.where(keep != 0, x / (1 - p), 0.0), mask=inside)


def masked_dropout(x, keep, p):
    out = torch.empty_like(x)
    n = x.numel()
    masked_dropout_kernel[(triton.cdiv(n, 1024),)](x, keep, out, n, p, BLOCK=1024)
    return out


torch.manual_seed(0)
x = torch.randn(8, device=DEVICE)
keep = (torch.rand(8, device=DEVICE) > 0.5).to(torch.int8)
y = masked_dropout(x, keep, 0.5)
for name, row in [('x', x), ('keep', keep), ('dropout(x)', y)]:
    print(f"{name:>10}: " + "  ".join(f"{v:6.3f}" for v in row.tolist()))

# %% [markdown]
# ## Drawing the mask inside the kernel
#
# `tl.rand(seed, offsets)` returns one uniform number in `[0, 1)` per offset.
# It is Philox-4x32-10: the offset is the *counter*, the seed is the *key*,
# and ten rounds of multiplications and exclusive-ors scramble the counter
# into four 32-bit words. Nothing is carried from one call to the next, so
# there is no generator state to save or restore: the same `(seed, offset)`
# gives the same number every time, on the GPU and on the CPU backend alike.

# %%
@triton.jit
def seeded_dropout_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    x = tl.load(x_ptr + offs, mask=inside)
    r = tl.rand(seed, offs)
    tl.store(out_ptr + offs, tl.where(r > p, x / (1 - p), 0.0), mask=inside)


def seeded_dropout(x, p, seed, block=1024):
    out = torch.empty_like(x)
    n = x.numel()
    seeded_dropout_kernel[(triton.cdiv(n, block),)](x, out, n, p, seed, BLOCK=block)
    return out


a = seeded_dropout(x, 0.5, seed=123)
b = seeded_dropout(x, 0.5, seed=123)
c = seeded_dropout(x, 0.5, seed=512)
for name, row in [('x', x), ('seed 123', a), ('seed 123', b), ('seed 512', c)]:
    print(f"{name:>10}: " + "  ".join(f"{v:6.3f}" for v in row.tolist()))
print('same seed, same zeros:', torch.equal(a, b))

# %% [markdown]
# ## Which program drew which numbers
#
# Because a number depends only on its offset, how the vector is split into
# programs cannot change it. Below, 4096 elements are processed once with
# blocks of 256 (16 programs) and once with blocks of 1024 (4 programs). The
# trace shows which program wrote each element; the heat map shows the kept
# elements of the two runs, as a 32 x 128 picture of the same vector. The two
# pictures of the mask are identical although different programs drew them.

# %%
n = 4096
ones = torch.ones(n, device=DEVICE)
small_blocks = torch.empty_like(ones)
t = tilebook.trace(seeded_dropout_kernel[(n // 256,)], ones, small_blocks, n, 0.5, 7, BLOCK=256)
t.visiting_order(small_blocks.view(32, 128))
big_blocks = seeded_dropout(ones, 0.5, seed=7, block=1024)
tilebook.heatmap(small_blocks.view(32, 128), title='kept (dark) with 16 programs of 256')
tilebook.heatmap(big_blocks.view(32, 128), title='kept (dark) with 4 programs of 1024')
print('identical masks:', torch.equal(small_blocks, big_blocks))
print('fraction kept:', (big_blocks != 0).float().mean().item())

# %% [markdown]
# ## Four numbers per counter
#
# One Philox evaluation yields four 32-bit words. `tl.rand` and
# `tl.randint` use the first; `tl.randint4x` returns all four, which is the
# cheap way to draw several independent numbers per element (for example a
# mask and a noise value). The first word of `randint4x` is exactly
# `randint`.

# %%
@triton.jit
def philox_words(out_ptr, seed, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    r0, r1, r2, r3 = tl.randint4x(seed, offs)
    single = tl.randint(seed, offs)
    tl.store(out_ptr + offs * 5 + 0, r0)
    tl.store(out_ptr + offs * 5 + 1, r1)
    tl.store(out_ptr + offs * 5 + 2, r2)
    tl.store(out_ptr + offs * 5 + 3, r3)
    tl.store(out_ptr + offs * 5 + 4, single)


# torch has no uint32 tensors to speak of; the words are stored as int32 and
# printed as unsigned hex.
words = torch.empty(4 * 5, dtype=torch.int32, device=DEVICE)
philox_words[(1,)](words, 42, BLOCK=4)
for i, row in enumerate(words.view(4, 5).tolist()):
    hexes = [f"{w & 0xffffffff:08x}" for w in row]
    print(f"offset {i}: " + " ".join(hexes[:4]) + f"   randint: {hexes[4]}")

# %% [markdown]
# ## A seed per row
#
# The state being one integer makes per-row (or per-sample) randomness easy:
# pass a vector of seeds and let each program read its own. Rows with the same
# seed get the same mask.

# %%
@triton.jit
def row_seeded_dropout_kernel(x_ptr, out_ptr, seeds_ptr, n_cols, p, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    inside = cols < n_cols
    seed = tl.load(seeds_ptr + row)
    x = tl.load(x_ptr + row * n_cols + cols, mask=inside)
    r = tl.rand(seed, cols)
    tl.store(out_ptr + row * n_cols + cols, tl.where(r > p, x / (1 - p), 0.0), mask=inside)


seeds = torch.tensor([11, 12, 11, 13], dtype=torch.int32, device=DEVICE)
m = torch.ones(4, 48, device=DEVICE)
out = torch.empty_like(m)
row_seeded_dropout_kernel[(4,)](m, out, seeds, 48, 0.5, BLOCK=64)
tilebook.heatmap(out, title='rows 0 and 2 share seed 11')
print('rows 0 and 2 equal:', torch.equal(out[0], out[2]), '| rows 0 and 1 equal:', torch.equal(out[0], out[1]))

# %% [markdown]
# ## What it saves
#
# The stored-mask version moves `x`, the mask and the output: with a one-byte
# mask and `float32` data that is 9 bytes per element, plus the kernel that
# produced the mask (4 more bytes written, and its own launch). The seeded
# version moves `x` and the output: 8 bytes. Its extra work, ten Philox
# rounds per element, is integer arithmetic that a memory-bound kernel hides.
# Below, bandwidth counts the bytes each version actually moves, and the
# time per call shows the saving directly.

# %%
P = 0.5
SIZES = [2**i for i in range(16, 27, 2)] if ON_GPU else [2**12, 2**14]


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=['n'],
        x_vals=SIZES,
        x_log=True,
        line_arg='provider',
        line_vals=['seeded', 'stored'],
        line_names=['seeded (no mask)', 'stored mask (int8)'],
        styles=[('blue', '-'), ('red', '-')],
        ylabel='time (us)',
        plot_name='dropout-time',
        args={},
    ))
def bench_dropout(n, provider):
    x = torch.randn(n, device=DEVICE)
    if provider == 'seeded':
        ms = triton.testing.do_bench(lambda: seeded_dropout(x, P, seed=1))
    else:
        keep = (torch.rand(n, device=DEVICE) > P).to(torch.int8)
        ms = triton.testing.do_bench(lambda: masked_dropout(x, keep, P))
    return ms * 1000


results = bench_dropout.run(print_data=True, show_plots=True, return_df=True)
