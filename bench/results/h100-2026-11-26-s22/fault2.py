import torch, triton
import triton.language as tl

@triton.jit
def poke(p, off):
    tl.store(p + off, 1.0)

@triton.jit
def add(x, y, o, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    m = i < n
    tl.store(o + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)

kept = 41
h = torch.arange(4.0)
for rnd in range(2):
    x = torch.ones(1000, device='cuda')
    try:
        poke[(1,)](x, 1 << 40)
        torch.cuda.synchronize()
        print("no fault?")
    except Exception as e:
        print("fault:", type(e).__name__, str(e)[:900])
    print("host kept", kept + 1, h.sum().item())
    a = torch.ones(1000, device='cuda'); b = torch.ones(1000, device='cuda'); o = torch.empty_like(a)
    add[(4,)](a, b, o, 1000, B=256)
    print("after fault:", o.sum().item(), o.device)
    print("do_bench ms %.4f" % triton.testing.do_bench(lambda: add[(4,)](a, b, o, 1000, B=256)))
