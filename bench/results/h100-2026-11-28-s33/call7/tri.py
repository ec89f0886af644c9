import sys, shutil, torch, triton
shutil.copy('tests/ir/matmul.py', '/tmp/mm_src.py'); sys.path.insert(0, '/tmp'); sys.path.insert(0, 'bench')
from mm_src import matmul_kernel
from ln_attn_kernels import attn_fwd
s = 1024
a = torch.randn(s, s, device='cuda', dtype=torch.float16); c = torch.empty_like(a)
for bm, bn, bk, nw, st in [(128, 256, 64, 8, 3), (128, 128, 32, 4, 4)]:
    k = matmul_kernel[(triton.cdiv(s, bm) * triton.cdiv(s, bn),)](a, a, c, s, s, s, s, 1, s, 1, s, 1, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn,
        BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION="", num_warps=nw, num_stages=st)
    print("triton matmul", bm, bn, bk, nw, st, "regs", k.n_regs, "spills", k.n_spills)
for D, bm, bn, nw, ns in [(64, 128, 64, 4, 3), (128, 128, 64, 8, 3)]:
    for causal in (0, 1):
        q = torch.randn(1, 2, 1024, D, device='cuda', dtype=torch.float16)
        o = torch.empty_like(q); lse = torch.empty((1, 2, 1024), device='cuda', dtype=torch.float32)
        k = attn_fwd[(1024 // bm, 2)](q, q, q, o, lse, 0.1, 1024, D=D, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal, num_warps=nw, num_stages=ns)
        print("triton attn_fwd D", D, "causal", causal, "regs", k.n_regs, "spills", k.n_spills)
