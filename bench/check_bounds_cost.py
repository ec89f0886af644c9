# What checked GPU mode (`%config check_bounds=True`) costs on the benchmark
# kernels: each workload is timed without and then with the checks, in one
# process (run by bench/run_gpu.sh, tests/ir/matmul.py prepended). Prints
# `ROW check_<workload> size x <checked / unchecked time>` lines.
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def softmax_kernel(y_ptr, x_ptr, xs, ys, n_cols, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r * xs + cols, mask=cols < n_cols, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + r * ys + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)


def workloads():
    out = []
    for p in [24, 28]:
        n = 2 ** p
        x = torch.rand(n, device='cuda')
        z = torch.empty_like(x)
        f = lambda: add_kernel[(triton.cdiv(n, 1024),)](x, x, z, n, BLOCK=1024)
        f()
        assert torch.allclose(z, x + x)
        out.append(("vadd", n, f))
    for N in [1024, 16384]:
        xx = torch.randn(4096, N, device='cuda')
        yy = torch.empty_like(xx)
        B = triton.next_power_of_2(N)
        nw = 4 if B < 2048 else 16
        out.append(("softmax", N, lambda xx=xx, yy=yy, N=N, B=B, nw=nw:
                    softmax_kernel[(4096,)](yy, xx, xx.stride(0), yy.stride(0), N, BLOCK=B, num_warps=nw)))
    for s in [4096]:
        a = torch.randn(s, s, device='cuda', dtype=torch.float16)
        c = torch.empty((s, s), device='cuda', dtype=torch.float16)
        grid = (triton.cdiv(s, 128) * triton.cdiv(s, 256),)
        out.append(("matmul_fp16", s, lambda a=a, c=c, s=s, grid=grid: matmul_kernel[grid](
            a, a, c, s, s, s, a.stride(0), a.stride(1), a.stride(0), a.stride(1), c.stride(0), c.stride(1),
            BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, ACTIVATION="", num_warps=8, num_stages=3)))
    return out


def timed():
    return [(w, n, triton.testing.do_bench(f, warmup=10, rep=100, return_mode="median")) for w, n, f in workloads()]


plain = timed()
%config check_bounds=True
checked = timed()
%config check_bounds=False
for (w, n, a), (_, _, b) in zip(plain, checked):
    print(f"{w} {n}: {a * 1e3:.1f} us unchecked, {b * 1e3:.1f} us checked")
    print(f"ROW check_{w} {n} x {b / a:.3f}")
