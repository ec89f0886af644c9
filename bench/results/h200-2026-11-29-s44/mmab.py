# Tutorial matmul configs, fp16 and fp8, each timed three times (TFLOPS, do_bench medians).
import os, torch, triton
tag = os.environ.get("TILEBOOK_SPLIT_MASKED", "triton" if not hasattr(triton, "__tilebook__") else "1")
def run(s, a, b, cfg):
    bm, bn, bk, nw, st = cfg
    c = torch.empty((s, s), device="cuda", dtype=torch.float16)
    f = lambda: matmul_kernel[(triton.cdiv(s, bm) * triton.cdiv(s, bn),)](a, b, c, s, s, s, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION="", num_warps=nw, num_stages=st)
    f()
    ref = a[:128].float() @ b.float()
    tol = 0.5 if a.dtype != torch.float16 else 5e-2
    assert torch.allclose(c[:128].float(), ref, atol=tol, rtol=2e-2), (cfg, torch.max(torch.abs(c[:128].float() - ref)))
    r = [2 * s ** 3 / triton.testing.do_bench(f, warmup=5, rep=60, return_mode="median") / 1e9 for _ in range(3)]
    print(f"{tag} {a.dtype} {s} {cfg}: " + " / ".join(f"{v:.0f}" for v in r), flush=True)
for s in (4096, 8192):
    a = torch.randn(s, s, device="cuda", dtype=torch.float16)
    b = torch.randn(s, s, device="cuda", dtype=torch.float16)
    for cfg in ([(128, 256, 64, 8, 3), (128, 128, 64, 4, 4)] if s == 4096 else [(128, 256, 64, 8, 3)]):
        run(s, a, b, cfg)
# a ragged K (masked last block) checked, fp16
a = torch.randn(1000, 1000 + 8, device="cuda", dtype=torch.float16)[:, :1000]
b = torch.randn(1000, 1000, device="cuda", dtype=torch.float16)
for K in (1000, 992, 40, 8):
    aa, bb = a[:, :K], b[:K]
    c = torch.empty((1000, 1000), device="cuda", dtype=torch.float16)
    matmul_kernel[(triton.cdiv(1000, 128) * triton.cdiv(1000, 256),)](aa, bb, c, 1000, 1000, K, aa.stride(0), aa.stride(1), bb.stride(0), bb.stride(1), c.stride(0), c.stride(1), BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, ACTIVATION="", num_warps=8, num_stages=3)
    ref = aa.float() @ bb.float()
    assert torch.allclose(c.float(), ref, atol=5e-2, rtol=2e-2), (K, torch.max(torch.abs(c.float() - ref)))
print(tag, "ragged K checked", flush=True)
s = 4096
a = torch.randn(s, s, device="cuda", dtype=torch.float16).to(torch.float8_e5m2)
b = torch.randn(s, s, device="cuda", dtype=torch.float16).T.to(torch.float8_e5m2)
for cfg in [(128, 128, 128, 8, 3), (128, 256, 128, 8, 3)]:
    run(s, a, b, cfg)
