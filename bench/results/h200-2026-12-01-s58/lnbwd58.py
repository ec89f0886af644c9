# Session 58: the layer-norm backward's rows kernel (bench/ln_attn_kernels.py
# `ln_bwd_rows`) in three orders of the same arithmetic, to see what the
# order does to registers and spills on both compilers: `orig` is the
# benchmark's; `early` adds the row's dw, db terms right after xh (before
# the two row sums), so dy is dead across them; `early16` also keeps w in
# fp16 and converts it where it is used. Runs under tilebook and under
# python3 with Triton (same file); prints registers, spills, GB/s and the
# largest difference from the benchmark kernel's results.
import os
import sys
import torch
import triton
import triton.language as tl

sys.path.insert(0, "bench")
from ln_attn_kernels import ln_bwd_rows


@triton.jit
def rows_early(DX, DY, X, W, Mean, Rstd, PartW, PartB, M, stride, N, BLOCK: tl.constexpr):
    p = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    ok = cols < N
    w = tl.load(W + cols, mask=ok, other=0.).to(tl.float32)
    dw = tl.zeros([BLOCK], dtype=tl.float32)
    db = tl.zeros([BLOCK], dtype=tl.float32)
    for r in range(p, M, tl.num_programs(0)):
        x = tl.load(X + r * stride + cols, mask=ok, other=0.).to(tl.float32)
        dy = tl.load(DY + r * stride + cols, mask=ok, other=0.).to(tl.float32)
        rs = tl.load(Rstd + r)
        xh = tl.where(ok, (x - tl.load(Mean + r)) * rs, 0.)
        dw += dy * xh
        db += dy
        g = w * dy
        a = tl.sum(xh * g, axis=0) / N
        c = tl.sum(g, axis=0) / N
        tl.store(DX + r * stride + cols, ((g - (xh * a + c)) * rs).to(tl.float16), mask=ok)
    tl.store(PartW + p * N + cols, dw, mask=ok)
    tl.store(PartB + p * N + cols, db, mask=ok)


@triton.jit
def rows_early16(DX, DY, X, W, Mean, Rstd, PartW, PartB, M, stride, N, BLOCK: tl.constexpr):
    p = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    ok = cols < N
    w16 = tl.load(W + cols, mask=ok, other=0.)
    dw = tl.zeros([BLOCK], dtype=tl.float32)
    db = tl.zeros([BLOCK], dtype=tl.float32)
    for r in range(p, M, tl.num_programs(0)):
        x = tl.load(X + r * stride + cols, mask=ok, other=0.).to(tl.float32)
        dy = tl.load(DY + r * stride + cols, mask=ok, other=0.).to(tl.float32)
        rs = tl.load(Rstd + r)
        xh = tl.where(ok, (x - tl.load(Mean + r)) * rs, 0.)
        dw += dy * xh
        db += dy
        g = w16.to(tl.float32) * dy
        a = tl.sum(xh * g, axis=0) / N
        c = tl.sum(g, axis=0) / N
        tl.store(DX + r * stride + cols, ((g - (xh * a + c)) * rs).to(tl.float16), mask=ok)
    tl.store(PartW + p * N + cols, dw, mask=ok)
    tl.store(PartB + p * N + cols, db, mask=ok)


M = 4096
for N, configs in ((16384, [(128, 8), (128, 16), (256, 16)]), (4096, [(256, 4), (256, 8)])):
    torch.manual_seed(0)
    x = torch.randn(M, N, device="cuda", dtype=torch.float16)
    w = torch.rand(N, device="cuda", dtype=torch.float16)
    dy = torch.randn(M, N, device="cuda", dtype=torch.float16)
    mean = x.float().mean(1)
    rstd = 1 / (x.float().var(1, unbiased=False) + 1e-5).sqrt()
    block = triton.next_power_of_2(N)
    for programs, warps in configs:
        ref = None
        line = []
        for name, kern in (("orig", ln_bwd_rows), ("early", rows_early), ("early16", rows_early16)):
            dx = torch.empty_like(x)
            pw = torch.empty(programs, N, device="cuda", dtype=torch.float32)
            pb = torch.empty_like(pw)

            def go():
                return kern[(programs,)](dx, dy, x, w, mean, rstd, pw, pb, M, x.stride(0), N, BLOCK=block,
                                         num_warps=warps)

            c = go()
            try:
                if warps == 8 and N == 16384 and os.environ.get("OUT") and "ptx" in c.asm:
                    with open(os.path.join(os.environ["OUT"], f"triton_{name}.ptx"), "w") as f:
                        f.write(c.asm["ptx"])
            except Exception:
                pass
            got = torch.cat([dx.float().flatten(), pw.flatten(), pb.flatten()])
            if ref is None:
                ref = got
            err = (got - ref).abs().max().item()
            ms = triton.testing.do_bench(go, return_mode="median")
            line.append(f"{name} {c.n_regs}r {c.n_spills}s {3 * M * N * 2 / ms / 1e6:.0f} GB/s"
                        + (f" ERR {err:.3g}" if err > 1e-3 else ""))
        print(f"N={N} {(programs, warps)}: " + " | ".join(line), flush=True)
