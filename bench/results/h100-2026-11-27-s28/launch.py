import torch, triton, time
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

@triton.jit
def nop_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass

xs = torch.rand(4096, device='cuda')
zs = torch.empty_like(xs)
add_kernel[(4,)](xs, xs, zs, 4096, BLOCK=1024)
nop_kernel[(1,)](xs, 4096, BLOCK=1024)
N = 20000
for rep in range(3):
    t0 = time.perf_counter()
    for _ in range(N):
        add_kernel[(4,)](xs, xs, zs, 4096, BLOCK=1024)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    for _ in range(N):
        nop_kernel[(1,)](xs, 4096, BLOCK=1024)
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    def f(a, b, c, d, BLOCK=1):
        pass
    g = (4,)
    for _ in range(N):
        f(xs, xs, zs, 4096, BLOCK=1024)
    t3 = time.perf_counter()
    print(f"add {(t1-t0)/N*1e6:.2f} us, nop {(t2-t1)/N*1e6:.2f} us, python call {(t3-t2)/N*1e6:.2f} us")
