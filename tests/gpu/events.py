# torch.cuda.Event on the GPU: events are recorded on the device's stream,
# so the time between two of them is the GPU work queued between, measured
# by the device. Checked against the host's clock around the same work (with
# a synchronize at each end, the host's span contains the device's).
import time
import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 3.0, mask=m)


n = 1 << 24
x = torch.rand(n, device='cuda')
y = torch.empty_like(x)
scale_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
torch.cuda.synchronize()

start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
t0 = time.perf_counter()
start.record()
for _ in range(50):
    scale_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
end.record()
end.synchronize()
host_ms = (time.perf_counter() - t0) * 1e3
ms = start.elapsed_time(end)
# 50 passes over 128 MB: at least 6.4 GB moved, well over a millisecond on
# any GPU, and never more than the host saw.
assert 0.5 < ms <= host_ms * 1.01 + 0.05, (ms, host_ms)
assert torch.allclose(y, x * 3.0)

# An event recorded later reads later; the same event twice reads zero.
mid = torch.cuda.current_stream().record_event(torch.cuda.Event(enable_timing=True))
torch.cuda.synchronize()
assert 0.0 <= start.elapsed_time(mid) and abs(start.elapsed_time(start)) < 1e-3
assert mid.query()
print("events ok", round(ms, 3), "ms on the device,", round(host_ms, 3), "ms on the host")
