# tilebook's side of the GPU benchmark (run by bench/run_gpu.sh through
# `tilebook run --device cuda`). Prints one `ROW workload size unit value`
# line per measurement; bench/merge.py pairs them with the peers' numbers.
import torch
import triton
import triton.language as tl
import time

QUICK = True


@triton.jit
def add_kernel(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def row(workload, size, unit, value):
    print(f"ROW {workload} {size} {unit} {value}")


# Correctness once, at a size the host can check quickly.
x = torch.rand(2 ** 20, device='cuda')
y = torch.rand(2 ** 20, device='cuda')
z = torch.empty_like(x)
add_kernel[(triton.cdiv(2 ** 20, 1024),)](x, y, z, 2 ** 20, BLOCK=1024)
assert torch.allclose(z, x + y)

for p in [20, 24, 28]:
    n = 2 ** p
    x = torch.rand(n, device='cuda')
    y = torch.rand(n, device='cuda')
    z = torch.empty_like(x)
    ms = triton.testing.do_bench(lambda: add_kernel[(triton.cdiv(n, 1024),)](x, y, z, n, BLOCK=1024), return_mode="median")
    row("vadd", n, "GB/s", 12 * n / ms / 1e6)

xs = torch.rand(4096, device='cuda')
zs = torch.empty_like(xs)
add_kernel[(4,)](xs, xs, zs, 4096, BLOCK=1024)
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(2000):
    add_kernel[(4,)](xs, xs, zs, 4096, BLOCK=1024)
torch.cuda.synchronize()
row("launch_overhead", 4096, "us", (time.perf_counter() - t0) / 2000 * 1e6)


@triton.jit
def softmax_kernel(y_ptr, x_ptr, xs, ys, n_cols, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r * xs + cols, mask=cols < n_cols, other=-float("inf"))
    zz = x - tl.max(x, axis=0)
    num = tl.exp(zz)
    y = num / tl.sum(num, axis=0)
    tl.store(y_ptr + r * ys + cols, y, mask=cols < n_cols)


for N in [1024, 4096, 16384]:
    xx = torch.randn(4096, N, device='cuda')
    yy = torch.empty_like(xx)
    BLOCK = triton.next_power_of_2(N)
    nw = 4 if BLOCK < 2048 else (8 if BLOCK < 4096 else 16)
    f = lambda: softmax_kernel[(4096,)](yy, xx, xx.stride(0), yy.stride(0), N, BLOCK=BLOCK, num_warps=nw)
    f()
    if N == 1024:
        assert torch.allclose(yy, torch.softmax(xx, 1), atol=1e-6)
    ms = triton.testing.do_bench(f, return_mode="median")
    row("softmax", N, "GB/s", 2 * xx.numel() * 4 / ms / 1e6)

