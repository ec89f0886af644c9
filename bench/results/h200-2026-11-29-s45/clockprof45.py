# Where the K loop's time goes: each `cp.async.wait_group`, `bar.sync` and
# `wgmma.wait_group` of the tutorial matmul's PTX (128x256x64, 8 warps,
# 3 stages) wrapped in %clock64 reads, summed per thread and added up by
# lane 0 of every warp; ours and Triton's PTX through one launch path.
import ctypes, sys, re, statistics
import torch, triton
sys.path.insert(0, "tests/ir")
from matmul import matmul_kernel

cuda = ctypes.CDLL("libcuda.so.1")
cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
def ck(r, what):
    if r != 0:
        raise RuntimeError(f"{what}: CUDA error {r}")
CATS = ["cpwait", "bar", "wgwait", "total", "epilogue"]
def instrument(ptx, name):
    lines = ptx.split("\n")
    out = []
    n = 0
    for i, l in enumerate(lines):
        s = l.strip()
        cat = None
        if s.startswith("cp.async.wait_group"):
            cat = 0
        elif s.startswith("bar.sync"):
            cat = 1
        elif s.startswith("wgmma.wait_group.sync.aligned"):
            cat = 2
        if s.startswith("$L__BB0_3:"):
            out += [l, "\tmov.u64 %tbx, %clock64;"]
            continue
        if s == "ret;":
            out += ["\tmov.u64 %tbt1, %clock64;", "\tsub.u64 %tbx, %tbt1, %tbx;", "\tsub.u64 %tbt1, %tbt1, %tbt0;", "\tmov.u32 %tbl, %laneid;",
                    "\tsetp.eq.u32 %tbp, %tbl, 0;", f"\tld.param.u64 %tbptr, [{name}_prof];", "\tcvta.to.global.u64 %tbptr, %tbptr;"]
            for k, r in enumerate(["%tba0", "%tba1", "%tba2", "%tbt1", "%tbx"]):
                out.append(f"\t@%tbp red.global.add.u64 [%tbptr+{8 * k}], {r};")
            out.append(l)
            continue
        if cat is None:
            out.append(l)
            continue
        n += 1
        out += ["\tmov.u64 %tbs, %clock64;", l, "\tmov.u64 %tbe, %clock64;", "\tsub.u64 %tbe, %tbe, %tbs;", f"\tadd.u64 %tba{cat}, %tba{cat}, %tbe;"]
    text = "\n".join(out)
    # An extra parameter, registers, and the start of the clock.
    text, k = re.subn(r"(\.param \.[ub]\d+[^\n]*param_\d+)\n\)", rf"\1,\n\t.param .u64 {name}_prof\n)", text, count=1)
    assert k == 1, "param list"
    decl = ("\n\t.reg .u64 %tbs, %tbe, %tba0, %tba1, %tba2, %tbt0, %tbt1, %tbptr, %tbx;\n\t.reg .u32 %tbl;\n\t.reg .pred %tbp;\n"
            "\tmov.u64 %tbx, 0;\n\tmov.u64 %tba0, 0;\n\tmov.u64 %tba1, 0;\n\tmov.u64 %tba2, 0;\n\tmov.u64 %tbt0, %clock64;\n")
    i = text.index("{", text.index(".entry"))
    # after the register declarations that open the body
    j = text.index("\n", i)
    text = text[:j] + decl + text[j:]
    print(name, "instrumented points", n)
    return text
s = 4096
torch.manual_seed(0)
a = torch.randn(s, s, device="cuda", dtype=torch.float16)
b = torch.randn(s, s, device="cuda", dtype=torch.float16)
c = torch.empty((s, s), device="cuda", dtype=torch.float16)
tk = matmul_kernel.warmup(a, b, c, s, s, s, s, 1, s, 1, s, 1, BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64,
                          GROUP_SIZE_M=8, ACTIVATION="", num_warps=8, num_stages=3, grid=(512,))
prof = torch.zeros(5, device="cuda", dtype=torch.int64)
import glob, os
kinds = {"ours_" + os.path.basename(f)[:-4]: (open(f).read(), 196608) for f in sorted(glob.glob(".carry/s45/*.ptx"))}
kinds["triton"] = (tk.asm["ptx"], tk.metadata.shared)
fns = {}
for name, (ptx, smem) in kinds.items():
    ptx = instrument(ptx.replace(".param .u64 .ptr .global .align 1", ".param .u64"), "matmul_kernel")
    mod = ctypes.c_void_p()
    ck(cuda.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx.encode() + b"\0")), "load")
    fn = ctypes.c_void_p()
    ck(cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"matmul_kernel"), "get")
    ck(cuda.cuFuncSetAttribute(fn, 8, smem), "attr")
    fns[name] = (fn, smem)
keep = []
for K in (4096, 4096):
  a = torch.randn(s, K, device="cuda", dtype=torch.float16)
  b = torch.randn(K, s, device="cuda", dtype=torch.float16)
  for name, (fn, smem) in fns.items():
    if name.startswith("ours"):
        vals = [ctypes.c_uint64(t.data_ptr()) for t in (a, b, c)] + [ctypes.c_uint32(x) for x in (s, s, K, K, 1, s, 1, s, 1)]
    else:
        vals = [ctypes.c_uint64(t.data_ptr()) for t in (a, b, c)] + [ctypes.c_uint32(x) for x in (s, s, K, K, s, s)] + [ctypes.c_uint64(0), ctypes.c_uint64(0)]
    vals.append(ctypes.c_uint64(prof.data_ptr()))
    params = (ctypes.c_void_p * len(vals))(*[ctypes.addressof(v) for v in vals])
    keep.append((vals, params))
    f = lambda: ck(cuda.cuLaunchKernel(fn, 512, 1, 1, 256, 1, 1, smem, None, params, None), "launch")
    for _ in range(5):
        f()
    torch.cuda.synchronize()
    ref = a[:128].float() @ b.float()
    err = (c[:128].float() - ref).abs().max().item()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    prof.zero_()
    e0.record()
    for _ in range(20):
        f()
    e1.record(); torch.cuda.synchronize()
    tf = 2 * s * s * K * 20 / (e0.elapsed_time(e1) * 1e-3) / 1e12
    v = prof.tolist()
    tot = v[3]
    print(f"K={K} {name}: err {err:.3f}, {tf:.0f} TFLOPS instrumented; share of warp cycles: " +
          ", ".join(f"{CATS[k]} {v[k] / tot:.3f}" for k in range(3)) + f"; cycles per warp per tile {tot / (20 * 512 * 8):.0f}, epilogue {v[4] / (20 * 512 * 8):.0f}, outside waits per K step {(tot - v[0] - v[1] - v[2] - v[4]) / (20 * 512 * 8) / (K // 64):.0f}", flush=True)
