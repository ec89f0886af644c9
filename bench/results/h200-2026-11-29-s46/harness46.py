# Session 46: harness45 with the variant folder from VDIR and a SASS opcode count of the K loop.
# One launch path (the driver API) for PTX variants of the tutorial matmul at
# 128x256x64 / 8 warps / 3 stages, 4096^3 fp16: every .carry/s45/*.ptx (our
# parameter list) and Triton's own PTX, plus Triton's native launch. CUDA
# events, alternating rounds (same power state). Usage: harness45.py [rounds]
import ctypes, sys, os, subprocess, statistics, glob
import torch, triton
sys.path.insert(0, "tests/ir")
from matmul import matmul_kernel

cuda = ctypes.CDLL("libcuda.so.1")
cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
def ck(r, what):
    if r != 0:
        raise RuntimeError(f"{what}: CUDA error {r}")
s = int(os.environ.get("S", "4096"))
torch.manual_seed(0)
# DT=fp8: e5m2 with b pre-transposed (tutorial 03's fp8 run; strides (1, s)); BM/BN/BK the tile.
fp8 = os.environ.get("DT") == "fp8"
BM, BN, BK = (int(os.environ.get(k, d)) for k, d in (("BM", 128), ("BN", 256), ("BK", 64)))
a = torch.randn(s, s, device="cuda", dtype=torch.float16)
b = torch.randn(s, s, device="cuda", dtype=torch.float16)
if fp8:
    a, b = a.to(torch.float8_e5m2), b.T.to(torch.float8_e5m2)
c = torch.empty((s, s), device="cuda", dtype=torch.float16)
grid = (s // BM) * (s // BN)
tk = matmul_kernel.warmup(a, b, c, s, s, s, a.stride(0), a.stride(1), b.stride(0), b.stride(1), s, 1, BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK,
                          GROUP_SIZE_M=8, ACTIVATION="", num_warps=8, num_stages=3, grid=(grid,))
variants = {os.path.basename(f)[:-4]: open(f).read() for f in sorted(glob.glob(os.environ.get("VDIR", ".carry/s46") + "/*.ptx"))}
variants["triton_ptx"] = tk.asm["ptx"]
if os.environ.get("PTX_OUT"):
    open(os.environ["PTX_OUT"], "w").write(tk.asm["ptx"])
B = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin")
for n, p in variants.items():
    open(f"/tmp/{n}.ptx", "w").write(p)
    r = subprocess.run([f"{B}/ptxas", "-arch=sm_90a", "-v", f"/tmp/{n}.ptx", "-o", f"/tmp/{n}.cubin"], capture_output=True, text=True)
    print(n, [l for l in r.stderr.splitlines() if "registers" in l or "spill" in l or "rror" in l])
    d = subprocess.run([f"{B}/cuobjdump", "-sass", f"/tmp/{n}.cubin"], capture_output=True, text=True).stdout
    if os.environ.get("SASS_OUT"):
        with open(os.environ["SASS_OUT"], "a") as fh:
            fh.write(f"===== {n}\n{d}\n")
    ins = [l.split("*/", 1)[1].split(";")[0].strip() for l in d.splitlines() if l.strip().startswith("/*") and not l.strip().startswith("/* 0x")]
    ins = [i for i in ins if i]
    hg = [k for k, i in enumerate(ins) if "HGMMA" in i]
    if not hg:
        print("  no HGMMA in", n); continue
    lo, hi = hg[0], hg[-1]
    while lo > 0 and "BAR.SYNC" not in ins[lo]:
        lo -= 1
    while hi < len(ins) - 1 and "BRA" not in ins[hi]:
        hi += 1
    from collections import Counter
    hist = Counter(i.split()[0] if not i.startswith("@") else i.split()[1] for i in ins[lo:hi + 1])
    print(f"  sass {n}: {len(ins)} instructions, loop window {hi - lo + 1}:", ", ".join(f"{k} {v}" for k, v in hist.most_common(18)))
def load(ptx, smem):
    mod = ctypes.c_void_p()
    ck(cuda.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx.encode() + b"\0")), "load")
    fn = ctypes.c_void_p()
    ck(cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"matmul_kernel"), "get")
    ck(cuda.cuFuncSetAttribute(fn, 8, smem), "attr")
    return fn
ours_vals = [ctypes.c_uint64(t.data_ptr()) for t in (a, b, c)] + [ctypes.c_uint32(x) for x in (s, s, s, a.stride(0), a.stride(1), b.stride(0), b.stride(1), s, 1)]
tri_vals = [ctypes.c_uint64(t.data_ptr()) for t in (a, b, c)] + [ctypes.c_uint32(x) for x in (s, s, s, s, s, s)] + [ctypes.c_uint64(0), ctypes.c_uint64(0)]
keep = []
def launcher(name, smem):
    vals = tri_vals if name.startswith("triton") else ours_vals
    params = (ctypes.c_void_p * len(vals))(*[ctypes.addressof(v) for v in vals])
    keep.append(params)
    fn = load(variants[name], smem)
    return lambda: ck(cuda.cuLaunchKernel(fn, grid, 1, 1, 256, 1, 1, smem, None, params, None), "launch")
runs = {}
for n in variants:
    runs[n] = launcher(n, tk.metadata.shared if n == "triton_ptx" else int(os.environ.get("SMEM", 196608)))
runs["triton/native"] = lambda: matmul_kernel[(grid,)](a, b, c, s, s, s, a.stride(0), a.stride(1), b.stride(0), b.stride(1), s, 1, BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK, GROUP_SIZE_M=8, ACTIVATION="", num_warps=8, num_stages=3)
ref = (a.float() @ b.float())
for n, f in runs.items():
    c.zero_(); f(); torch.cuda.synchronize()
    print(f"{n}: max abs error {(c.float() - ref).abs().max().item():.3f}")
res = {n: [] for n in runs}
e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
for rnd in range(int(sys.argv[1]) if len(sys.argv) > 1 else 6):
    for n, f in runs.items():
        for _ in range(3):
            f()
        e0.record()
        for _ in range(20):
            f()
        e1.record(); torch.cuda.synchronize()
        res[n].append(2 * s ** 3 * 20 / (e0.elapsed_time(e1) * 1e-3) / 1e12)
for n, v in res.items():
    print(f"{n:22s} median {statistics.median(v):6.1f} TFLOPS  rounds " + " ".join(f"{x:.0f}" for x in v), flush=True)
