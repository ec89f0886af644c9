# matmul 4096 fp16: cuBLAS (torch) and the tutorial kernel alternating in one process, with idle gaps.
import time, torch, triton
a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
b = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
c = torch.empty_like(a)
s = 4096
f = lambda: matmul_kernel[(triton.cdiv(s, 128) * triton.cdiv(s, 256),)](a, b, c, s, s, s, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1), BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, ACTIVATION="", num_warps=8, num_stages=3)
f(); torch.cuda.synchronize()
tf = lambda ms: 2 * s ** 3 / ms / 1e9
for rnd in range(3):
    for name, g in (("cublas", lambda: a @ b), ("kernel", f)):
        time.sleep(3)
        r = [tf(triton.testing.do_bench(g, warmup=25, rep=100, return_mode="median")) for _ in range(3)]
        print(f"r{rnd} {name} after 3 s idle: " + " / ".join(f"{v:.0f}" for v in r), flush=True)
