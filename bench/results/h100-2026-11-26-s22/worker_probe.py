import time, torch, triton
import triton.language as tl

@triton.jit
def add_kernel(x, y, z, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(z + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)

def per(f, n):
    f()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6

def best(f, n):
    return min(per(f, n) for _ in range(5))

xs = torch.rand(4096, device='cuda')
zs = torch.empty_like(xs)
print("launch_us %.2f" % best(lambda: add_kernel[(4,)](xs, xs, zs, 4096, BLOCK=1024), 2000))
def alloc_launch():
    z = torch.empty_like(xs)
    add_kernel[(4,)](xs, xs, z, 4096, BLOCK=1024)
print("empty_plus_launch_us %.2f" % best(alloc_launch, 2000))
def item():
    add_kernel[(4,)](xs, xs, zs, 4096, BLOCK=1024)
    return zs[7].item()
print("launch_plus_item_us %.2f" % best(item, 300))
n = 64 * 2**20
big = torch.rand(n, device='cuda')
out = torch.empty_like(big)
add_kernel[(n // 1024,)](big, big, out, n, BLOCK=1024)
torch.cuda.synchronize()
t0 = time.perf_counter()
h = out.cpu()
dt = time.perf_counter() - t0
print("download_GBps %.2f" % (4 * n / dt / 1e9))
hx = torch.rand(n)
t0 = time.perf_counter()
gx = hx.cuda()
add_kernel[(n // 1024,)](gx, gx, out, n, BLOCK=1024)
torch.cuda.synchronize()
dt = time.perf_counter() - t0
print("upload_plus_add_GBps %.2f" % (4 * n / dt / 1e9))
print("check", torch.allclose(h, big.cpu() * 2), torch.allclose(out.cpu(), hx * 2))
a = torch.randn(1024, 1024, device='cuda', dtype=torch.float16)
c = a @ a
print("gemm check", torch.allclose(c.float().cpu(), a.float().cpu() @ a.float().cpu(), atol=0.5, rtol=0.02))
