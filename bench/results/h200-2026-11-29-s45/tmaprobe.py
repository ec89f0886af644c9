# What TMA alone is worth at the tutorial matmul's best config: Triton's own
# kernel written with in-kernel tensor descriptors (TMA loads), 128x256x64,
# 8 warps, 3 stages, 4096^3 fp16, against Triton's pointer kernel and cuBLAS;
# CUDA events, alternating rounds. Also the K loop with warp_specialize.
import sys, statistics, torch, triton, triton.language as tl
sys.path.insert(0, "tests/ir")
from matmul import matmul_kernel

def alloc(size, alignment, stream):
    return torch.empty(size, device="cuda", dtype=torch.int8)
triton.set_allocator(alloc)

@triton.jit
def mm_desc(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr, WS: tl.constexpr):
    a_d = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_d = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    c_d = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pid = tl.program_id(0)
    npm = tl.cdiv(M, BM)
    npn = tl.cdiv(N, BN)
    width = GROUP_M * npn
    g = pid // width
    first = g * GROUP_M
    gs = min(npm - first, GROUP_M)
    pm = first + (pid % width) % gs
    pn = (pid % width) // gs
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), warp_specialize=WS):
        a = a_d.load([pm * BM, k * BK])
        b = b_d.load([k * BK, pn * BN])
        acc = tl.dot(a, b, acc)
    c_d.store([pm * BM, pn * BN], acc.to(tl.float16))

s = 4096
torch.manual_seed(0)
a = torch.randn(s, s, device="cuda", dtype=torch.float16)
b = torch.randn(s, s, device="cuda", dtype=torch.float16)
c = torch.empty((s, s), device="cuda", dtype=torch.float16)
grid = (s // 128) * (s // 256)
runs = {
    "triton_ptr": lambda: matmul_kernel[(grid,)](a, b, c, s, s, s, s, 1, s, 1, s, 1, BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, ACTIVATION="", num_warps=8, num_stages=3),
    "triton_tma": lambda: mm_desc[(grid,)](a, b, c, s, s, s, 128, 256, 64, 8, False, num_warps=8, num_stages=3),
    "triton_tma_ws": lambda: mm_desc[(grid,)](a, b, c, s, s, s, 128, 256, 64, 8, True, num_warps=8, num_stages=3),
    "triton_tma_s4": lambda: mm_desc[(grid,)](a, b, c, s, s, s, 128, 256, 64, 8, False, num_warps=8, num_stages=4),
    "cublas": lambda: torch.matmul(a, b, out=c),
}
ref = a.float() @ b.float()
ok = {}
for n, f in runs.items():
    try:
        c.zero_(); f(); torch.cuda.synchronize()
        print(f"{n}: max abs error {(c.float() - ref).abs().max().item():.3f}", flush=True)
        ok[n] = f
    except Exception as e:
        print(f"{n}: failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
res = {n: [] for n in ok}
e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
for rnd in range(8):
    for n, f in ok.items():
        for _ in range(3):
            f()
        e0.record()
        for _ in range(20):
            f()
        e1.record(); torch.cuda.synchronize()
        res[n].append(2 * s ** 3 * 20 / (e0.elapsed_time(e1) * 1e-3) / 1e12)
for n, v in res.items():
    print(f"{n:22s} median {statistics.median(v):6.1f} TFLOPS  rounds " + " ".join(f"{x:.0f}" for x in v), flush=True)
