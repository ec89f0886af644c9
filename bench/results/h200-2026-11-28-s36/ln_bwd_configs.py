import sys
sys.path.insert(0, "bench")
import torch, triton
from ln_attn_kernels import ln_bwd_rows, ln_bwd_cols, layer_norm_fwd, layer_norm_bwd_locks
M = 4096
for N in (1024, 4096, 16384):
    x = torch.randn(M, N, device="cuda", dtype=torch.float16)
    w = torch.rand(N, device="cuda", dtype=torch.float16)
    b = torch.rand(N, device="cuda", dtype=torch.float16)
    dy = torch.randn(M, N, device="cuda", dtype=torch.float16)
    y, mean, rstd = layer_norm_fwd(x, w, b)
    dx0, dw0, db0 = layer_norm_bwd_locks(dy, x, w, mean, rstd)
    block = triton.next_power_of_2(N)
    out = []
    for P in (128, 256, 512, 1024):
        for nw in (4, 8, 16, 32):
            if block // (nw * 32) > 64 or block // (nw * 32) < 2:
                continue
            dx = torch.empty_like(x)
            pw = torch.empty((P, N), device="cuda", dtype=torch.float32)
            pb = torch.empty((P, N), device="cuda", dtype=torch.float32)
            dw = torch.empty_like(w)
            db = torch.empty_like(w)
            def f():
                ln_bwd_rows[(P,)](dx, dy, x, w, mean, rstd, pw, pb, M, x.stride(0), N, BLOCK=block, num_warps=nw)
                ln_bwd_cols[(triton.cdiv(N, 128),)](pw, pb, dw, db, P, N, BLOCK_G=32, BLOCK_N=128)
            f()
            ok = torch.allclose(dx.float(), dx0.float(), atol=2e-2) and torch.allclose(dw.float(), dw0.float(), rtol=1e-2, atol=0.5)
            ms = triton.testing.do_bench(f, return_mode="median")
            out.append(f"P={P} w{nw}: {3 * M * N * 2 / ms / 1e6:.0f}{'' if ok else ' WRONG'}")
    print(f"N={N}: " + ", ".join(out), flush=True)
