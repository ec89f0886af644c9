import torch, triton, time
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

def loop(n, label):
    xs = torch.rand(4096, device='cuda')
    zs = torch.empty_like(xs)
    add_kernel[(4,)](xs, xs, zs, 4096, BLOCK=1024)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        add_kernel[(4,)](xs, xs, zs, 4096, BLOCK=1024)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    print(f"{label}: n={n} enqueue {(t1-t0)/n*1e6:.2f} us/launch, with sync {(t2-t0)/n*1e6:.2f} us/launch")

loop(2000, "fresh")
loop(2000, "again")
loop(20000, "long")
for p in [20, 24, 28]:
    n = 2 ** p
    x = torch.rand(n, device='cuda')
    y = torch.rand(n, device='cuda')
    z = torch.empty_like(x)
    ms = triton.testing.do_bench(lambda: add_kernel[(triton.cdiv(n, 1024),)](x, y, z, n, BLOCK=1024), return_mode="median")
    print("vadd", n, 12 * n / ms / 1e6)
loop(2000, "after vadd")
loop(2000, "after vadd again")
del x, y, z
loop(2000, "after del")
loop(20000, "long after")
