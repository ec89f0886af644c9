# Session 59 probe 2: the attention forward as one flat loop over a
# persistent program's (tile, key block) steps, so the pipeliner's copies
# for the next tile's first keys (and its q) are issued while this tile
# finishes; non-causal. Both compilers, from the repo root.
import math
import sys
sys.path.insert(0, "bench")
import torch
import triton
import triton.language as tl
from ln_attn_kernels import attention_fwd

DEV = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def attn_fwd_flat(Q, K, V, O, LSE, sm_scale, N_CTX, HEADS, D: tl.constexpr, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr):
    n_m = N_CTX // BLOCK_M
    n_k = N_CTX // BLOCK_N
    n_tiles = n_m * HEADS
    prog = tl.program_id(0)
    nprog = tl.num_programs(0)
    mine = (n_tiles - prog + nprog - 1) // nprog
    qk_scale = sm_scale * 1.4426950408889634
    offs_d = tl.arange(0, D)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    for it in range(0, mine * n_k):
        t = prog + (it // n_k) * nprog
        j = it % n_k
        base = (t // n_m) * N_CTX
        offs_m = (t % n_m) * BLOCK_M + tl.arange(0, BLOCK_M)
        q = tl.load(Q + (base + offs_m)[:, None] * D + offs_d[None, :])
        offs_n = j * BLOCK_N + tl.arange(0, BLOCK_N)
        k = tl.load(K + (base + offs_n)[:, None] * D + offs_d[None, :])
        s = tl.dot(q, tl.trans(k)) * qk_scale
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + (base + offs_n)[:, None] * D + offs_d[None, :])
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m_i = m_new
        if j == n_k - 1:
            tl.store(LSE + base + offs_m, m_i + tl.math.log2(l_i))
            tl.store(O + (base + offs_m)[:, None] * D + offs_d[None, :], (acc / l_i[:, None]).to(tl.float16))
            m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
            l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
            acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)


SMS = torch.cuda.get_device_properties(0).multi_processor_count if DEV == "cuda" else 4


def flat(q, k, v, sm_scale, cfg):
    bm, bn, nw, ns, per_sm = cfg
    Z, H, N, D = q.shape
    o = torch.empty_like(q)
    lse = torch.empty((Z, H, N), device=q.device, dtype=torch.float32)
    tiles = (N // bm) * Z * H
    attn_fwd_flat[(min(tiles, SMS * per_sm),)](q, k, v, o, lse, sm_scale, N, Z * H, D=D, BLOCK_M=bm, BLOCK_N=bn,
                                               num_warps=nw, num_stages=ns)
    return o, lse


def bench_slow(f, budget_ms=40.0):
    """The table's timing (bench/ln_attn_bench.py): mean over a run of calls."""
    import time
    f()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    f()
    torch.cuda.synchronize()
    est = (time.perf_counter() - t0) * 1e3
    n = max(1, min(100, int(budget_ms / max(est, 1e-3))))
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3 / n


BASE = {64: [(128, 64, 4, 3), (128, 128, 4, 3, "kv")], 128: [(128, 64, 8, 3), (128, 128, 8, 2, "kv")]}
FLAT = {64: [(128, 64, 4, 3, 1), (128, 64, 4, 3, 2), (128, 128, 4, 3, 1), (128, 128, 4, 2, 2)],
        128: [(128, 64, 8, 3, 1), (128, 64, 8, 2, 1), (128, 128, 8, 2, 1)]}

for D in (64, 128):
    q, k, v = (torch.randn((1, 3, 256, D), device=DEV, dtype=torch.float16) for _ in range(3))
    ref, ref_lse = attention_fwd(q, k, v, False, 0.125, BASE[D][0])
    for cfg in FLAT[D]:
        o, lse = flat(q, k, v, 0.125, cfg)
        err = (o.float() - ref.float()).abs().max().item()
        err2 = (lse - ref_lse).abs().max().item()
        assert err < 1e-2 and err2 < 1e-2, f"D={D} {cfg}: {err} {err2}"
print("flat persistent forward matches the benchmark kernel, every config", flush=True)
if DEV != "cuda":
    sys.exit(0)
for D in (128, 64):
    for N in (1024, 4096, 16384):
        B, H = 4, 32
        q, k, v = (torch.randn((B, H, N, D), device=DEV, dtype=torch.float16) for _ in range(3))
        flops = 4 * B * H * N * N * D
        sm_scale = 1 / math.sqrt(D)
        for _ in range(20):
            attention_fwd(q, k, v, False, sm_scale, BASE[D][0])
        line = []
        for cfg in BASE[D]:
            line.append(f"{cfg}: {flops / bench_slow(lambda: attention_fwd(q, k, v, False, sm_scale, cfg)) / 1e9:.0f}")
        for cfg in FLAT[D]:
            line.append(f"F{cfg}: {flops / bench_slow(lambda: flat(q, k, v, sm_scale, cfg)) / 1e9:.0f}")
        print(f"D={D} N={N}: " + "  ".join(line), flush=True)
