# Layer-norm forward at 4096 x N (N = 1024, 4096, 16384): the benchmark
# kernel over num_warps 2..16, three alternating do_bench rounds; runs on
# both sides (tilebook run / python3 with Triton).
import sys, torch, triton
sys.path.insert(0, "bench")
from ln_attn_kernels import ln_fwd
torch.manual_seed(0)
M = 4096
ONCE = "--once" in sys.argv
for N in ((4096,) if ONCE else (1024, 4096, 16384)):
    x = torch.randn(M, N, device="cuda", dtype=torch.float16)
    w = torch.randn(N, device="cuda", dtype=torch.float16)
    b = torch.randn(N, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    mean = torch.empty(M, device="cuda", dtype=torch.float32)
    rstd = torch.empty(M, device="cuda", dtype=torch.float32)
    block = triton.next_power_of_2(N)
    res = {}
    if ONCE:
        for _ in range(3):
            ln_fwd[(M,)](x, y, w, b, mean, rstd, x.stride(0), N, 1e-5, BLOCK=block, num_warps=8)
        torch.cuda.synchronize()
        continue
    for rnd in range(3):
        for nw in (2, 4, 8, 16):
            if block // (32 * nw) < 1:
                continue
            f = lambda: ln_fwd[(M,)](x, y, w, b, mean, rstd, x.stride(0), N, 1e-5, BLOCK=block, num_warps=nw)
            ms = triton.testing.do_bench(f, return_mode="median")
            res.setdefault(nw, []).append(2 * M * N * 2 / ms / 1e6)
    print(f"N={N} " + "  ".join(f"w{nw}: " + "/".join(f"{v:.0f}" for v in vals) for nw, vals in res.items()), flush=True)
