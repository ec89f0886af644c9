# A kernel that faults (a store far outside any allocation) poisons the CUDA
# context. The session must raise an error naming the kernel, report the
# tensors whose data lived only on the GPU, and go on: the tilebook binary
# runs GPU work in a worker process, so on a fresh worker, on the GPU, with
# every host variable kept; in-process (TILEBOOK_GPU_WORKER=0) on the CPU
# backend, since the driver keeps CUDA unusable in a process that saw such
# a fault.
# run.sh runs this file without TILEBOOK_CHECK_GPU (the CPU reference would
# refuse the wild store before the GPU saw it).
@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)


@triton.jit
def wild_store(x_ptr, off):
    tl.store(x_ptr + off, 1.0)


x = torch.rand(1024, device='cuda')
y = torch.empty_like(x)
scale_kernel[(1,)](x, y, 1024, BLOCK=1024)
torch.cuda.synchronize()
# Never used by a kernel: its data are on the host only. (Arithmetic on
# 'cuda' tensors runs as GPU kernels, so the expected values are computed
# on a CPU copy.)
z = torch.rand(1024, device='cuda')
zz = z.cpu() * 2
msg = ""
try:
    wild_store[(1,)](y, 1 << 40)
    torch.cuda.synchronize()
except RuntimeError as e:
    msg = str(e)
print(msg)
assert "wild_store" in msg, msg
on_gpu = "replaced by a fresh one" in msg
assert on_gpu or "goes on with the CPU backend" in msg, msg
assert "lost: x, y." in msg, msg
assert torch.cuda.is_available() == on_gpu

# The session goes on: host tensors are intact and kernels run again.
w = torch.empty_like(z)
scale_kernel[(1,)](z, w, 1024, BLOCK=1024)
assert torch.allclose(w.cpu(), zz)

# A lost tensor cannot be used again.
msg = ""
try:
    scale_kernel[(1,)](y, w, 1024, BLOCK=1024)
except RuntimeError as e:
    msg = str(e)
assert "lost" in msg, msg

# Reading it on the host, printing it included, is an error a try catches.
for read in [lambda: y.sum().item(), lambda: print(y), lambda: y.cpu(), lambda: bool(y[0] > 0)]:
    msg = ""
    try:
        read()
    except RuntimeError as e:
        msg = str(e)
    assert "lost" in msg, msg

# On a fresh worker a second fault is recovered from the same way.
if on_gpu:
    v = torch.empty_like(z)
    msg = ""
    try:
        wild_store[(1,)](v, 1 << 41)
        torch.cuda.synchronize()
    except RuntimeError as e:
        msg = str(e)
    assert "wild_store" in msg and "replaced by a fresh one" in msg, msg
    # (z went to the GPU as a kernel argument since: lost as well.)
    lost = msg.split("lost: ")[1].split(".")[0].split(", ")
    assert "v" in lost and "z" in lost, msg
    t = torch.rand(1024, device='cuda')
    tt = t.cpu() * 2
    u = torch.empty_like(t)
    scale_kernel[(1,)](t, u, 1024, BLOCK=1024)
    assert torch.allclose(u.cpu(), tt)
    assert torch.cuda.is_available()
print("fault recovery ok", "(GPU worker)" if on_gpu else "(in-process: CPU backend after)")
