# fp8 e5m2 4096^3 (b pre-transposed) at 128x128x128 / 128x256x128, w8 s3,
# with a, b, c placed after pads of different sizes: is the time a matter of
# where the operands lie? (tests/ir/matmul.py prepended)
import torch, triton
s = 4096
keep = []
for pad_kb in [0, 1, 64, 512, 1024, 2048, 3072, 0, 5120]:
    if pad_kb:
        keep.append(torch.empty(pad_kb * 1024, device='cuda', dtype=torch.uint8))
    a = torch.randn(s, s, device='cuda', dtype=torch.float16).to(torch.float8_e5m2)
    b = torch.randn(s, s, device='cuda', dtype=torch.float16).T.to(torch.float8_e5m2)
    c = torch.empty((s, s), device='cuda', dtype=torch.float16)
    keep += [a, b, c]
    out = []
    for bm, bn, bk, nw, st in [(128, 128, 128, 8, 3), (128, 256, 128, 8, 3)]:
        grid = (triton.cdiv(s, bm) * triton.cdiv(s, bn),)
        f = lambda: matmul_kernel[grid](a, b, c, s, s, s, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                        BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION="", num_warps=nw, num_stages=st)
        ms = triton.testing.do_bench(f, warmup=5, rep=20, return_mode="median")
        out.append(f"{bm}x{bn}x{bk} {2 * s ** 3 / ms / 1e9:.1f}")
    m = 1 << 21
    print(f"pad {pad_kb} KB: a%2M={a.data_ptr() % m:#x} b%2M={b.data_ptr() % m:#x} c%2M={c.data_ptr() % m:#x} a={a.data_ptr():#x} | " + " | ".join(out), flush=True)
