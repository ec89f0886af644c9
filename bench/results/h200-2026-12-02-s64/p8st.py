# Per-program timestamps of a matmul tile (P8ST_DT fp8: e5m2, b
# pre-transposed; fp16: b row-major; M = N = 4096; P8ST_CFG the tile, warps, stages) whose PTX stamps.py instrumented: each
# program's %globaltimer and %clock64 at start and end, %clock64 at the
# epilogue's start, and its SM, 64 bytes a program past the end of c.
# (tests/ir/matmul.py prepended; runs under tilebook and under Triton)
import torch, triton, triton.language as tl, os

@triton.jit
def bits16(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    x = tl.load(x_ptr + o, mask=m)
    tl.store(y_ptr + o, x.to(tl.int16, bitcast=True).to(tl.int32) & 0xFFFF, mask=m)

def q(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]

def report(P, rep):
    if max(p[1] for p in P) == 0:
        print('  no stamps (plain kernel)')
        return False
    g0 = min(p[0] for p in P)
    total = max(p[1] for p in P) - g0
    dur = [p[4] - p[2] for p in P]
    pro = [p[3] - p[2] for p in P]
    epi = [p[4] - p[3] for p in P]
    gns = [p[1] - p[0] for p in P]
    ghz = sum(dur) / max(1, sum(gns))
    print(f"  rep {rep}: span {total / 1000:.1f} us, clock {ghz:.3f} GHz, programs {len(P)}")
    for name, xs in (("program cycles", dur), ("start..epilogue", pro), ("epilogue", epi)):
        print(f"    {name:16s} mean {sum(xs) / len(xs):8.0f}  p10 {q(xs, .1):7d}  p50 {q(xs, .5):7d}  p90 {q(xs, .9):7d}  max {max(xs):7d}")
    by = {}
    for p in P:
        by.setdefault(p[5], []).append(p)
    cnt = [len(v) for v in by.values()]
    starts = sorted(p[0] - g0 for p in P)
    ends = sorted(p[1] - g0 for p in P)
    print(f"    SMs {len(by)}, programs per SM min {min(cnt)} max {max(cnt)}; first start {starts[0]} ns, 264th start {starts[min(263, len(starts) - 1)]} ns, last start {starts[-1]} ns, first end {ends[0]} ns, last end {ends[-1]} ns")
    # refill gap: on each SM, each program after the first SLOTS starts when one ends
    gaps = []
    for v in by.values():
        v = sorted(v, key=lambda p: p[0])
        fin = sorted(p[1] for p in v[:SLOTS])
        for p in v[SLOTS:]:
            e = fin.pop(0)
            gaps.append(p[0] - e)
            fin = sorted(fin + [p[1]])
    if gaps:
        print(f"    refill gap ns: mean {sum(gaps) / len(gaps):.0f} p10 {q(gaps, .1)} p50 {q(gaps, .5)} p90 {q(gaps, .9)}")
    # end of the last wave: the spread of the final programs' ends
    tail = sorted((p[1] - g0 for p in P), reverse=True)[:264]
    print(f"    last 264 ends from {min(tail)} to {max(tail)} ns; busy per SM slot {sum(gns) / (SLOTS * len(by)) / 1000:.1f} us of {total / 1000:.1f}")
    return True

s = int(os.environ.get('P8ST_S', '4096'))
DT = os.environ.get('P8ST_DT', 'fp8')
SLOTS = int(os.environ.get('P8ST_SLOTS', '2'))
BM, BN, BK, NW, NS = [int(x) for x in os.environ.get('P8ST_CFG', '128 128 128 8 3').split()]
for k in [int(x) for x in os.environ.get('P8ST_KS', '512 4096').split()]:
    if DT == 'fp8':
        a = torch.randn(s, k, device='cuda', dtype=torch.float16).to(torch.float8_e5m2)
        b = torch.randn(s, k, device='cuda', dtype=torch.float16).to(torch.float8_e5m2).T
    else:
        a = torch.randn(s, k, device='cuda', dtype=torch.float16)
        b = torch.randn(k, s, device='cuda', dtype=torch.float16)
    cb = torch.zeros((s + max(16, 32 * 1024 // s + 1), s), device='cuda', dtype=torch.float16)
    c = cb[:s]
    grid = (triton.cdiv(s, BM) * triton.cdiv(s, BN),)
    f = lambda: matmul_kernel[grid](a, b, c, s, s, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                    BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK, GROUP_SIZE_M=8, ACTIVATION="", num_warps=NW, num_stages=NS)
    f()
    ms = triton.testing.do_bench(f, warmup=5, rep=30, return_mode="median")
    print(f"K={k}: {ms * 1000:.1f} us  {2 * s * s * k / ms / 1e9:.0f} TFLOPS", flush=True)
    if DT != 'fp8':
        ms = triton.testing.do_bench(lambda: torch.matmul(a, b), warmup=5, rep=30, return_mode="median")
        print(f"  torch.matmul K={k}: {ms * 1000:.1f} us  {2 * s * s * k / ms / 1e9:.0f} TFLOPS", flush=True)
    for rep in range(2):
        f()
        torch.cuda.synchronize()
        n = grid[0] * 32
        raw = cb[s:].reshape(-1)[:n]
        w = torch.empty(n, device='cuda', dtype=torch.int32)
        bits16[(triton.cdiv(n, 1024),)](raw, w, n, BLOCK=1024)
        L = w.cpu().tolist()
        P = []
        for j in range(grid[0]):
            v = [L[32 * j + 4 * i] | (L[32 * j + 4 * i + 1] << 16) | (L[32 * j + 4 * i + 2] << 32) | (L[32 * j + 4 * i + 3] << 48) for i in range(6)]
            P.append(v)
        if not report(P, rep):
            break
