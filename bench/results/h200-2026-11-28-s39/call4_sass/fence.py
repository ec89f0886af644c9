# The 4096^3 fp16 tutorial matmul (128x256x64, 8 warps, 3 stages): tilebook's
# PTX as compiled (ours_mm.ptx), the same PTX without its per-iteration
# `fence.proxy.async.shared::cta`, and Triton's own kernel, launched in turn
# (ours through the driver API here, Triton's through Triton) and timed with
# CUDA events in rounds, so that all three see the same power state.
import ctypes, sys
import torch, triton
sys.path.insert(0, "tests/ir")
from matmul import matmul_kernel

cuda = ctypes.CDLL("libcuda.so.1")
cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]


def ck(r, what):
    if r != 0:
        raise RuntimeError(f"{what}: CUDA error {r}")


s = 4096
torch.manual_seed(0)
a = torch.randn(s, s, device="cuda", dtype=torch.float16)
b = torch.randn(s, s, device="cuda", dtype=torch.float16)
c = torch.empty((s, s), device="cuda", dtype=torch.float16)
torch.cuda.synchronize()
SMEM = 232448


def load(ptx):
    mod = ctypes.c_void_p()
    ck(cuda.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx.encode() + b"\0")), "cuModuleLoadData")
    fn = ctypes.c_void_p()
    ck(cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"matmul_kernel"), "cuModuleGetFunction")
    ck(cuda.cuFuncSetAttribute(fn, 8, SMEM), "cuFuncSetAttribute")
    return fn


vals = [ctypes.c_uint64(t.data_ptr()) for t in (a, b, c)] + [ctypes.c_uint32(x) for x in (s, s, s, s, 1, s, 1, s, 1)]
params = (ctypes.c_void_p * len(vals))(*[ctypes.addressof(v) for v in vals])
ptx = open(".carry/ours_mm.ptx").read()
fence = "\tfence.proxy.async.shared::cta;\n"
print("fences in ours:", ptx.count(fence))
fns = {"ours": load(ptx), "ours_nofence": load(ptx.replace(fence, ""))}


def launcher(name):
    if name == "triton":
        return lambda: matmul_kernel[(512,)](a, b, c, s, s, s, s, 1, s, 1, s, 1, BLOCK_SIZE_M=128, BLOCK_SIZE_N=256,
                                             BLOCK_SIZE_K=64, GROUP_SIZE_M=8, ACTIVATION="", num_warps=8, num_stages=3)
    fn = fns[name]
    return lambda: ck(cuda.cuLaunchKernel(fn, 512, 1, 1, 256, 1, 1, SMEM, None, params, None), "cuLaunchKernel")


ref = (a[:512].float() @ b.float())
for name in ["ours", "ours_nofence", "triton"]:
    c.zero_()
    launcher(name)()
    torch.cuda.synchronize()
    err = (c[:512].float() - ref).abs().max().item()
    print(f"{name}: max abs error against fp32 {err:.3f}")
import threading, time
try:
    import pynvml
    pynvml.nvmlInit()
    nv = pynvml.nvmlDeviceGetHandleByIndex(0)
except Exception as e:
    print("no pynvml:", e)
    nv = None


def sample(stop, out):
    while not stop.is_set():
        out.append((pynvml.nvmlDeviceGetClockInfo(nv, pynvml.NVML_CLOCK_SM), pynvml.nvmlDeviceGetPowerUsage(nv) / 1000))
        time.sleep(0.01)


names = ["ours", "ours_nofence", "triton"]
for rnd in range(3):
    line = []
    for name in names[rnd % 3:] + names[:rnd % 3]:
        f = launcher(name)
        for _ in range(5):
            f()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        stop, got = threading.Event(), []
        th = threading.Thread(target=sample, args=(stop, got)) if nv else None
        if th:
            th.start()
        e0.record()
        for _ in range(1000):
            f()
        e1.record()
        torch.cuda.synchronize()
        if th:
            stop.set()
            th.join()
        ms = e0.elapsed_time(e1) / 1000
        clk = sum(g[0] for g in got) / max(len(got), 1)
        pw = sum(g[1] for g in got) / max(len(got), 1)
        line.append(f"{name} {2 * s ** 3 / ms / 1e9:.0f} ({clk:.0f} MHz, {pw:.0f} W)")
    print(f"round {rnd}: " + " | ".join(line), flush=True)
