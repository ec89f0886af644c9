# Session 62 probe: the tutorial matmul (tests/ir/matmul.py prepended) at the
# table's configs, fp16 and fp8 (b pre-transposed); runs under tilebook and
# under Triton alike.
import torch, triton
def run(label, s, a, b, cfgs):
    c = torch.empty((s, s), device='cuda', dtype=torch.float16)
    for bm, bn, bk, nw, st in cfgs:
        grid = (triton.cdiv(s, bm) * triton.cdiv(s, bn),)
        f = lambda: matmul_kernel[grid](a, b, c, s, s, s, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                        BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION="", num_warps=nw, num_stages=st)
        f()
        ref = a[:256].float() @ b.float()
        assert torch.allclose(c[:256].float(), ref, atol=0.5, rtol=2e-2), (label, torch.max(torch.abs(c[:256].float() - ref)))
        ms = triton.testing.do_bench(f, warmup=5, rep=40, return_mode="median")
        print(f"{label} {s} {bm}x{bn}x{bk} w{nw} s{st}: {2 * s ** 3 / ms / 1e9:.1f} TFLOPS", flush=True)
for s in [4096, 8192]:
    a = torch.randn(s, s, device='cuda', dtype=torch.float16)
    b = torch.randn(s, s, device='cuda', dtype=torch.float16)
    run("fp16", s, a, b, [(128, 256, 64, 8, 3), (128, 128, 64, 4, 4)])
s = 4096
a = torch.randn(s, s, device='cuda', dtype=torch.float16).to(torch.float8_e5m2)
b = torch.randn(s, s, device='cuda', dtype=torch.float16).T.to(torch.float8_e5m2)
run("fp8", s, a, b, [(128, 128, 128, 8, 3), (128, 256, 128, 8, 3), (128, 256, 64, 8, 3)])
