# Attention forward configs in and outside the benchmark's list, under the
# loop rewrites being compared (gpu67.sh: TILEBOOK_ROTATE_DOTS=all rotates
# 8-warp loops, TILEBOOK_DEFER_DOTS=1 defers the second dot): TFLOPS (bench_slow, as the table), registers and spills from the
# launch, and the largest difference from the list's first config's output.
# Usage: attncfg67.py [D ...]
import math, sys, torch, triton
sys.path.insert(0, "bench")
from ln_attn_kernels import attn_fwd, FWD_CONFIGS
from triton.tools.tensor_descriptor import TensorDescriptor


def bench_slow(f, budget_ms=40.0):
    import time
    f()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    f()
    torch.cuda.synchronize()
    one = (time.perf_counter() - t0) * 1e3
    n = max(1, int(budget_ms / max(one, 1e-3)))
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3 / n


def fwd(q, k, v, causal, sm_scale, cfg):
    bm, bn, nw, ns = cfg[:4]
    Z, H, N, D = q.shape
    o = torch.empty_like(q)
    lse = torch.empty((Z, H, N), device=q.device, dtype=torch.float32)
    kv = cfg[4:] == ("kv",)
    if kv:
        k = TensorDescriptor.from_tensor(k.view(Z * H * N, D), [bn, D])
        v = TensorDescriptor.from_tensor(v.view(Z * H * N, D), [bn, D])
    c = attn_fwd[(N // bm, Z * H)](q, k, v, o, lse, sm_scale, N, D=D, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal,
                                   KV_DESC=kv, num_warps=nw, num_stages=ns)
    return o, c


EXTRA = {64: [(128, 128, 4, 3), (128, 128, 4, 3, "kv"), (128, 128, 8, 3, "kv"), (128, 64, 8, 3, "kv")],
         128: [(128, 128, 8, 2, "kv"), (128, 64, 8, 2, "kv"), (128, 64, 8, 3, "kv"), (128, 128, 8, 2)]}
Ds = [int(a) for a in sys.argv[1:] if a.isdigit()] if __name__ == "__main__" else []
for D in Ds:
    for causal in (False, True):
        for N in (1024, 4096, 16384):
            torch.manual_seed(0)
            q, k, v = (torch.randn((4, 32, N, D), device="cuda", dtype=torch.float16) for _ in range(3))
            sm_scale = 1 / math.sqrt(D)
            flops = 4 * 4 * 32 * N * N * D * (0.5 if causal else 1.0)
            ref, _ = fwd(q, k, v, causal, sm_scale, FWD_CONFIGS[D][0])
            line = []
            for cfg in EXTRA[D]:
                try:
                    o, c = fwd(q, k, v, causal, sm_scale, cfg)
                    err = (o.float() - ref.float()).abs().max().item()
                    ms = bench_slow(lambda: fwd(q, k, v, causal, sm_scale, cfg))
                    line.append(f"{cfg}: {flops / ms / 1e9:.1f} ({c.n_regs}r {c.n_spills}s)"
                                + (f" ERR {err:.3g}" if err > 2e-2 else ""))
                except Exception as e:
                    line.append(f"{cfg}: {type(e).__name__} {str(e)[:80]}")
            print(f"D={D} causal={causal} N={N}: " + " | ".join(line), flush=True)
            del q, k, v, ref
