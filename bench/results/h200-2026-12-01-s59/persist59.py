# Session 59 probe: the benchmark's attention forward as a persistent loop
# over (query block, head) tiles, against the benchmark kernel's configs.
# Runs under `tilebook run` and python3 (Triton) alike, from the repo root.
import math
import sys
sys.path.insert(0, "bench")
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor
from ln_attn_kernels import attn_fwd_blocks, attention_fwd

DEV = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def attn_fwd_persist(Q, K, V, O, LSE, sm_scale, N_CTX, HEADS, D: tl.constexpr, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, KV_DESC: tl.constexpr):
    n_m = N_CTX // BLOCK_M
    n_tiles = n_m * HEADS
    qk_scale = sm_scale * 1.4426950408889634
    offs_d = tl.arange(0, D)
    for t in range(tl.program_id(0), n_tiles, tl.num_programs(0)):
        if CAUSAL:
            i = n_m - 1 - t // HEADS
            head = t % HEADS
        else:
            i = t % n_m
            head = t // n_m
        base = head * N_CTX
        offs_m = i * BLOCK_M + tl.arange(0, BLOCK_M)
        q = tl.load(Q + (base + offs_m)[:, None] * D + offs_d[None, :])
        m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
        l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
        acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
        if CAUSAL:
            acc, l_i, m_i = attn_fwd_blocks(acc, l_i, m_i, q, K, V, base, offs_m, 0, i * BLOCK_M, qk_scale,
                                            D, BLOCK_N, False, KV_DESC)
            acc, l_i, m_i = attn_fwd_blocks(acc, l_i, m_i, q, K, V, base, offs_m, i * BLOCK_M,
                                            (i + 1) * BLOCK_M, qk_scale, D, BLOCK_N, True, KV_DESC)
        else:
            acc, l_i, m_i = attn_fwd_blocks(acc, l_i, m_i, q, K, V, base, offs_m, 0, N_CTX, qk_scale,
                                            D, BLOCK_N, False, KV_DESC)
        tl.store(LSE + base + offs_m, m_i + tl.math.log2(l_i))
        tl.store(O + (base + offs_m)[:, None] * D + offs_d[None, :], (acc / l_i[:, None]).to(tl.float16))


SMS = torch.cuda.get_device_properties(0).multi_processor_count if DEV == "cuda" else 4


def persist(q, k, v, causal, sm_scale, cfg):
    bm, bn, nw, ns, per_sm = cfg[:5]
    Z, H, N, D = q.shape
    o = torch.empty_like(q)
    lse = torch.empty((Z, H, N), device=q.device, dtype=torch.float32)
    kv = cfg[5:] == ("kv",)
    if kv:
        k = TensorDescriptor.from_tensor(k.view(Z * H * N, D), [bn, D])
        v = TensorDescriptor.from_tensor(v.view(Z * H * N, D), [bn, D])
    tiles = (N // bm) * Z * H
    attn_fwd_persist[(min(tiles, SMS * per_sm),)](q, k, v, o, lse, sm_scale, N, Z * H, D=D, BLOCK_M=bm,
                                                  BLOCK_N=bn, CAUSAL=causal, KV_DESC=kv, num_warps=nw,
                                                  num_stages=ns)
    return o, lse


def bench(f):
    return triton.testing.do_bench(f, return_mode="median")


BASE = {64: [(128, 64, 4, 3), (128, 128, 4, 3, "kv")], 128: [(128, 64, 8, 3), (128, 128, 8, 2, "kv")]}
PERS = {64: [(128, 64, 4, 3, 1), (128, 64, 4, 3, 2), (128, 128, 4, 3, 1, "kv"), (128, 128, 4, 3, 2, "kv")],
        128: [(128, 64, 8, 3, 1), (128, 128, 8, 2, 1, "kv"), (128, 64, 8, 2, 1, "kv"), (128, 128, 8, 2, 2, "kv")]}

# Correctness against the benchmark kernel at a small shape, every config.
for D in (64, 128):
    for causal in (False, True):
        q, k, v = (torch.randn((1, 3, 256, D), device=DEV, dtype=torch.float16) for _ in range(3))
        ref, ref_lse = attention_fwd(q, k, v, causal, 0.125, BASE[D][0])
        for cfg in PERS[D]:
            o, lse = persist(q, k, v, causal, 0.125, cfg)
            err = (o.float() - ref.float()).abs().max().item()
            err2 = (lse - ref_lse).abs().max().item()
            assert err < 1e-2 and err2 < 1e-2, f"D={D} causal={causal} {cfg}: {err} {err2}"
print("persistent forward matches the benchmark kernel, every config", flush=True)
if DEV != "cuda":
    sys.exit(0)
for D in (128, 64):
    for causal in (False, True):
        for N in (1024, 4096):
            B, H = 4, 32
            q, k, v = (torch.randn((B, H, N, D), device=DEV, dtype=torch.float16) for _ in range(3))
            flops = 4 * B * H * N * N * D * (0.5 if causal else 1.0)
            sm_scale = 1 / math.sqrt(D)
            for _ in range(30):
                attention_fwd(q, k, v, causal, sm_scale, BASE[D][0])
            line = []
            for cfg in BASE[D]:
                line.append(f"{cfg}: {flops / bench(lambda: attention_fwd(q, k, v, causal, sm_scale, cfg)) / 1e9:.0f}")
            for cfg in PERS[D]:
                line.append(f"P{cfg}: {flops / bench(lambda: persist(q, k, v, causal, sm_scale, cfg)) / 1e9:.0f}")
            print(f"D={D} causal={int(causal)} N={N}: " + "  ".join(line), flush=True)
