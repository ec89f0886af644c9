# Layer-norm forward PTX variants (.carry/s45ln/*.ptx, our parameter list)
# and Triton's PTX of the benchmark kernel at 4096 x 4096, 8 warps, through
# the driver API: CUDA events around each launch after an L2 flush (as
# do_bench), alternating rounds; ptxas -v of each.
import ctypes, sys, os, glob, subprocess, statistics, torch, triton
sys.path.insert(0, "bench")
from ln_attn_kernels import ln_fwd
cuda = ctypes.CDLL("libcuda.so.1")
cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
def ck(r, what):
    if r != 0:
        raise RuntimeError(f"{what}: CUDA error {r}")
M = N = 4096
torch.manual_seed(0)
x = torch.randn(M, N, device="cuda", dtype=torch.float16)
w = torch.randn(N, device="cuda", dtype=torch.float16); b = torch.randn(N, device="cuda", dtype=torch.float16)
y = torch.empty_like(x); mean = torch.empty(M, device="cuda"); rstd = torch.empty(M, device="cuda")
tk = ln_fwd.warmup(x, y, w, b, mean, rstd, N, N, 1e-5, BLOCK=4096, num_warps=8, grid=(M,))
variants = {os.path.basename(f)[:-4]: open(f).read() for f in sorted(glob.glob(".carry/s45ln/*.ptx"))}
variants["triton"] = tk.asm["ptx"]
B = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin")
for n, p in variants.items():
    open(f"/tmp/{n}.ptx", "w").write(p)
    r = subprocess.run([f"{B}/ptxas", "-arch=sm_90a", "-v", f"/tmp/{n}.ptx", "-o", f"/tmp/{n}.cubin"], capture_output=True, text=True)
    print(n, [l.strip() for l in r.stderr.splitlines() if "registers" in l or "spill" in l or "rror" in l])
# Our PTX through ptxas with a register cap (a cubin, loaded as is).
cubins = {}
for cap in (40, 48):
    r = subprocess.run([f"{B}/ptxas", "-arch=sm_90a", "-v", f"-maxrregcount={cap}", "/tmp/ln_ours.ptx", "-o", f"/tmp/ln_ours_r{cap}.cubin"], capture_output=True, text=True)
    print(f"ln_ours_r{cap}", [l.strip() for l in r.stderr.splitlines() if "registers" in l or "spill" in l or "rror" in l])
    cubins[f"ln_ours_r{cap}"] = open(f"/tmp/ln_ours_r{cap}.cubin", "rb").read()
    variants[f"ln_ours_r{cap}"] = None
keep = []
def launcher(name):
    mod = ctypes.c_void_p()
    image = cubins[name] if name in cubins else variants[name].encode() + b"\0"
    keep.append(image)
    ck(cuda.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(image)), "load")
    fn = ctypes.c_void_p()
    ck(cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"ln_fwd"), "get")
    vals = [ctypes.c_uint64(t.data_ptr()) for t in (x, y, w, b, mean, rstd)] + [ctypes.c_uint32(N), ctypes.c_uint32(N), ctypes.c_float(1e-5)]
    if name == "triton":
        vals = [ctypes.c_uint64(t.data_ptr()) for t in (x, y, w, b, mean, rstd)]
        vals += [ctypes.c_uint32(N), ctypes.c_uint32(N), ctypes.c_float(1e-5), ctypes.c_uint64(0), ctypes.c_uint64(0)]
    params = (ctypes.c_void_p * len(vals))(*[ctypes.addressof(v) for v in vals])
    keep.append((vals, params))
    smem = tk.metadata.shared if name == "triton" else 1024
    return lambda: ck(cuda.cuLaunchKernel(fn, M, 1, 1, 256, 1, 1, smem, None, params, None), "launch")
runs = {n: launcher(n) for n in variants}
ref = torch.nn.functional.layer_norm(x.float(), (N,), w.float(), b.float(), 1e-5)
for n, f in runs.items():
    y.zero_(); f(); torch.cuda.synchronize()
    print(f"{n}: max abs error {(y.float() - ref).abs().max().item():.4f}")
cache = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
res = {n: [] for n in runs}
for rnd in range(6):
    for n, f in runs.items():
        es = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(30)]
        for e0, e1 in es:
            cache.zero_(); e0.record(); f(); e1.record()
        torch.cuda.synchronize()
        ms = statistics.median(e0.elapsed_time(e1) for e0, e1 in es)
        res[n].append(2 * M * N * 2 / ms / 1e6)
for n, v in res.items():
    print(f"{n:12s} median {statistics.median(v):7.1f} GB/s  rounds " + " ".join(f"{x:.0f}" for x in v), flush=True)
