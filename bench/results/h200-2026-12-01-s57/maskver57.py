# Layer norm (bench/ln_attn_kernels.py) with and without the unmasked
# version of its kernels (TILEBOOK_MASK_VERSIONS=0/1/2 under tilebook; run
# by python3 for Triton's figures). First every backward config and the
# forward checked against an fp32 reference at row widths that take the
# unmasked copy (N a power of two) and the masked one (N below the block);
# then GB/s at the benchmark's sizes, as ln_attn_bench.py counts them.
import sys
import torch
import triton

sys.path.insert(0, "bench")
from ln_attn_kernels import LN_BWD_CONFIGS, layer_norm_bwd, layer_norm_bwd_locks, layer_norm_fwd


def reference(x, w, b, dy):
    xf, wf, dyf = x.float(), w.float(), dy.float()
    mu = xf.mean(1, keepdim=True)
    rs = 1 / torch.sqrt(((xf - mu) ** 2).mean(1, keepdim=True) + 1e-5)
    xh = (xf - mu) * rs
    g = wf * dyf
    dx = (g - (xh * (xh * g).mean(1, keepdim=True) + g.mean(1, keepdim=True))) * rs
    return xh * wf + b.float(), dx, (dyf * xh).sum(0), dyf.sum(0)


def inputs(M, N):
    torch.manual_seed(N)
    return (torch.randn(M, N, device="cuda", dtype=torch.float16), torch.rand(N, device="cuda", dtype=torch.float16),
            torch.rand(N, device="cuda", dtype=torch.float16), torch.randn(M, N, device="cuda", dtype=torch.float16))


bad = 0
for N, size in [(1000, 1024), (1024, 1024), (4000, 4096), (4096, 4096), (16000, 16384), (16384, 16384)]:
    x, w, b, dy = inputs(67, N)
    y_ref, dx_ref, dw_ref, db_ref = reference(x, w, b, dy)
    y, mean, rstd = layer_norm_fwd(x, w, b)
    checks = [("fwd", (y.float() - y_ref).abs().max().item())]
    for cfg in LN_BWD_CONFIGS[size] + ["locks"]:
        dx, dw, db = (layer_norm_bwd_locks(dy, x, w, mean, rstd) if cfg == "locks"
                      else layer_norm_bwd(dy, x, w, mean, rstd, cfg))
        err = max((dx.float() - dx_ref).abs().max().item(),
                  ((dw.float() - dw_ref).abs() / (1 + dw_ref.abs())).max().item(),
                  ((db.float() - db_ref).abs() / (1 + db_ref.abs())).max().item())
        checks.append((str(cfg), err))
    worst = max(e for _, e in checks)
    ok = worst < 5e-2
    bad += not ok
    print(f"check N={N}: {'ok' if ok else 'MISMATCH'} (largest error {worst:.3g}: "
          + ", ".join(f"{n} {e:.2g}" for n, e in checks) + ")", flush=True)

M = 4096
for N in [1024, 4096, 16384]:
    x, w, b, dy = inputs(M, N)
    y, mean, rstd = layer_norm_fwd(x, w, b)
    ms = triton.testing.do_bench(lambda: layer_norm_fwd(x, w, b), return_mode="median")
    line = [f"fwd {2 * M * N * 2 / ms / 1e6:.0f}"]
    for cfg in LN_BWD_CONFIGS[N]:
        ms = triton.testing.do_bench(lambda: layer_norm_bwd(dy, x, w, mean, rstd, cfg), return_mode="median")
        line.append(f"bwd{cfg} {3 * M * N * 2 / ms / 1e6:.0f}")
    ms = triton.testing.do_bench(lambda: layer_norm_bwd_locks(dy, x, w, mean, rstd), return_mode="median")
    line.append(f"locks {3 * M * N * 2 / ms / 1e6:.0f}")
    print(f"GB/s N={N}: " + "  ".join(line), flush=True)
print("checks", "passed" if bad == 0 else f"FAILED ({bad})")
