# Registers, spills and speed of ln_bwd_rows at the benchmark's configs
# (the rows kernel alone); run under TILEBOOK_PRED_STORES=0, =1 and unset.
import sys
sys.path.insert(0, "bench")
import torch, triton
from ln_attn_kernels import ln_bwd_rows, layer_norm_fwd, LN_BWD_CONFIGS
M = 4096
for N, cfgs in LN_BWD_CONFIGS.items():
    x = torch.randn(M, N, device="cuda", dtype=torch.float16)
    w = torch.rand(N, device="cuda", dtype=torch.float16)
    b = torch.rand(N, device="cuda", dtype=torch.float16)
    dy = torch.randn_like(x)
    y, mean, rstd = layer_norm_fwd(x, w, b)
    out = []
    for P, nw in cfgs:
        dx = torch.empty_like(x)
        pw = torch.empty((P, N), device="cuda", dtype=torch.float32)
        pb = torch.empty_like(pw)
        args = (dx, dy, x, w, mean, rstd, pw, pb, M, x.stride(0), N)
        c = ln_bwd_rows.warmup(*args, BLOCK=N, num_warps=nw, grid=(P,))
        ln_bwd_rows[(P,)](*args, BLOCK=N, num_warps=nw)
        ms = triton.testing.do_bench(lambda: ln_bwd_rows[(P,)](*args, BLOCK=N, num_warps=nw), return_mode="median")
        pred = c.asm["ptx"].count(" st.global") if "ptx" in c.asm else -1
        out.append(f"P={P} w{nw}: {c.n_regs} regs {c.n_spills} spills {pred} pred-st {3 * M * N * 2 / ms / 1e6:.0f} GB/s")
    print(f"N={N}: " + "; ".join(out), flush=True)
