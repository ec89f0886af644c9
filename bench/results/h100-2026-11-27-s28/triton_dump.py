import sys, os
sys.path.insert(0, "bench")
import torch, triton
from ln_attn_kernels import ln_fwd, ln_bwd_rows, ln_warps, ln_groups, attn_fwd
out = sys.argv[1]
for N in (16384,):
    M = 64
    x = torch.randn(M, N, device="cuda", dtype=torch.float16)
    w = torch.rand(N, device="cuda", dtype=torch.float16); b = torch.rand_like(w)
    y = torch.empty_like(x); mean = torch.empty(M, device="cuda"); rstd = torch.empty(M, device="cuda")
    block, nw = ln_warps(N)
    k = ln_fwd[(M,)](x, y, w, b, mean, rstd, x.stride(0), N, 1e-5, BLOCK=block, num_warps=nw)
    open(f"{out}/tr_ln_fwd_{N}.ptx", "w").write(k.asm["ptx"])
    print(f"triton ln_fwd N={N} warps={nw} regs={k.n_regs} spills={k.n_spills}")
for D, cfg in ((64, (128, 64, 4, 3)), (128, (128, 64, 8, 3))):
    Z, H, NC = 1, 2, 1024
    q = torch.randn(Z * H * NC, D, device="cuda", dtype=torch.float16)
    o = torch.empty_like(q); lse = torch.empty(Z * H * NC, device="cuda")
    bm, bn, nw, ns = cfg
    k = attn_fwd[(NC // bm, Z * H)](q, q, q, o, lse, 0.125, NC, D=D, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=False,
                                    num_warps=nw, num_stages=ns)
    open(f"{out}/tr_attn_fwd_{D}.ptx", "w").write(k.asm["ptx"])
    print(f"triton attn_fwd D={D} cfg={cfg} regs={k.n_regs} spills={k.n_spills} shared={k.metadata.shared}")
