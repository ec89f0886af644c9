# Layer-norm backward rows kernel at 16384 columns: variants on both sides.
import sys
sys.path.insert(0, "bench")
import torch, triton
import triton.language as tl
from ln_attn_kernels import ln_bwd_rows, layer_norm_fwd


@triton.jit
def ln_bwd_wloop(DX, DY, X, W, Mean, Rstd, PartW, PartB, M, stride, N, BLOCK: tl.constexpr):
    # ln_bwd_rows with w loaded (fp16, from L1/L2) in every row instead of held in registers
    p = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    ok = cols < N
    dw = tl.zeros([BLOCK], dtype=tl.float32)
    db = tl.zeros([BLOCK], dtype=tl.float32)
    for r in range(p, M, tl.num_programs(0)):
        x = tl.load(X + r * stride + cols, mask=ok, other=0.).to(tl.float32)
        dy = tl.load(DY + r * stride + cols, mask=ok, other=0.).to(tl.float32)
        w = tl.load(W + cols, mask=ok, other=0.).to(tl.float32)
        rs = tl.load(Rstd + r)
        xh = tl.where(ok, (x - tl.load(Mean + r)) * rs, 0.)
        g = w * dy
        a = tl.sum(xh * g, axis=0) / N
        c = tl.sum(g, axis=0) / N
        tl.store(DX + r * stride + cols, ((g - (xh * a + c)) * rs).to(tl.float16), mask=ok)
        dw += dy * xh
        db += dy
    tl.store(PartW + p * N + cols, dw, mask=ok)
    tl.store(PartB + p * N + cols, db, mask=ok)


from ln_attn_kernels import LN_BWD_CONFIGS
M = 4096 if torch.cuda.is_available() else 256
for N in (1024, 4096, 16384):
    x = torch.randn(M, N, device="cuda", dtype=torch.float16)
    w = torch.rand(N, device="cuda", dtype=torch.float16)
    b = torch.rand(N, device="cuda", dtype=torch.float16)
    dy = torch.randn_like(x)
    y, mean, rstd = layer_norm_fwd(x, w, b)
    ref = None
    for rnd in range(2):
        for name, kern in (("rows", ln_bwd_rows),) + ((("wloop", ln_bwd_wloop),) if N == 16384 else ()):
            for P, nw in LN_BWD_CONFIGS[N]:
                dx = torch.empty_like(x)
                pw = torch.empty((P, N), device="cuda", dtype=torch.float32)
                pb = torch.empty_like(pw)
                c = kern.warmup(dx, dy, x, w, mean, rstd, pw, pb, M, x.stride(0), N, BLOCK=N, num_warps=nw, grid=(P,))
                kern[(P,)](dx, dy, x, w, mean, rstd, pw, pb, M, x.stride(0), N, BLOCK=N, num_warps=nw)
                if ref is None:
                    ref = (dx.clone(), pw.sum(0))
                else:
                    assert torch.allclose(dx.float(), ref[0].float(), atol=1e-2, rtol=1e-2)
                    assert torch.allclose(pw.sum(0), ref[1], atol=1e-1, rtol=1e-3)
                ms = triton.testing.do_bench(lambda: kern[(P,)](dx, dy, x, w, mean, rstd, pw, pb, M, x.stride(0), N, BLOCK=N, num_warps=nw), return_mode="median")
                print(f"r{rnd} N={N} {name} P={P} w{nw}: regs {c.n_regs} spills {c.n_spills} {3 * M * N * 2 / ms / 1e6:.0f} GB/s", flush=True)
