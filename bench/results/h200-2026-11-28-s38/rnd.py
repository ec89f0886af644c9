import torch, triton, time
for n in (1 << 20, 1 << 24, 1 << 28):
    x = torch.randn(n, device='cuda')
    ms = triton.testing.do_bench(lambda: torch.randn(n, device='cuda'), return_mode="median")
    print(f"randn {n}: {ms*1e3:.1f} us, {4 * n / ms / 1e6:.0f} GB/s")
for n in (1 << 24,):
    ms = triton.testing.do_bench(lambda: torch.rand(n, device='cuda'), return_mode="median")
    print(f"rand {n}: {ms*1e3:.1f} us")
