# Where a launch's host time goes (bench/NOTES.md, session 35): the benchmark's
# launch loop timed before and after synchronizing, a plain Python call for
# the VM's share, and launches queued behind busy work timed by the device.
# Run: tilebook run --device cuda bench/launch_probe.py
import torch, triton, time
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

xs = torch.rand(4096, device='cuda')
zs = torch.empty_like(xs)
add_kernel[(4,)](xs, xs, zs, 4096, BLOCK=1024)
torch.cuda.synchronize()
for n in [2000, 2000, 2000, 20000, 20000]:
    t0 = time.perf_counter()
    for _ in range(n):
        add_kernel[(4,)](xs, xs, zs, 4096, BLOCK=1024)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    print(f"n={n} loop {(t1-t0)/n*1e6:.2f} us  with sync {(t2-t0)/n*1e6:.2f} us")
# an empty Python loop calling a trivial function, for the VM's share
def f(a, b, c, d, BLOCK=0):
    return None
t0 = time.perf_counter()
for _ in range(20000):
    f(xs, xs, zs, 4096, BLOCK=1024)
print(f"python call {(time.perf_counter()-t0)/20000*1e6:.2f} us")
g = add_kernel[(4,)]
t0 = time.perf_counter()
for _ in range(20000):
    g(xs, xs, zs, 4096, BLOCK=1024)
t1 = time.perf_counter()
torch.cuda.synchronize()
t2 = time.perf_counter()
print(f"bound launcher loop {(t1-t0)/20000*1e6:.2f} us with sync {(t2-t0)/20000*1e6:.2f}")
# GPU time of launches queued behind busy work: the device's own rate.
big = torch.rand(1 << 27, device='cuda')
bz = torch.empty_like(big)
for rep in range(3):
    for _ in range(12):
        add_kernel[(triton.cdiv(1 << 27, 1024),)](big, big, bz, 1 << 27, BLOCK=1024)
    e0 = torch.cuda.Event(enable_timing=True); e1 = torch.cuda.Event(enable_timing=True)
    e0.record()
    t0 = time.perf_counter()
    for _ in range(2000):
        add_kernel[(4,)](xs, xs, zs, 4096, BLOCK=1024)
    t1 = time.perf_counter()
    e1.record()
    torch.cuda.synchronize()
    print(f"queued: device {e0.elapsed_time(e1)/2000*1e3:.2f} us per launch, host loop {(t1-t0)/2000*1e6:.2f} us")
