import sys, torch, triton
sys.path.insert(0, 'bench')
from ln_attn_kernels import layer_norm_fwd, layer_norm_bwd
for N in (4096, 16384):
    x = torch.randn(4096, N, device='cuda', dtype=torch.float16)
    w = torch.rand(N, device='cuda', dtype=torch.float16); b = torch.rand(N, device='cuda', dtype=torch.float16)
    y, m, r = layer_norm_fwd(x, w, b)
    dy = torch.randn_like(x)
    layer_norm_bwd(dy, x, w, m, r)
    torch.cuda.synchronize()
    for name, f in (("fwd", lambda: layer_norm_fwd(x, w, b)), ("bwd", lambda: layer_norm_bwd(dy, x, w, m, r))):
        ms = triton.testing.do_bench(f, return_mode="median")
        print(name, N, ms)
