import time, torch

def wall(f, reps=20):
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        f()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / reps * 1e6

for nbytes in [1 << 20, 64 << 20]:
    x = torch.ones(nbytes // 4, device="cuda:0")
    x = x + 1
    print(nbytes, "empty cuda:1 us %.1f" % wall(lambda: torch.empty(nbytes // 4, device="cuda:1")))
    print(nbytes, "empty cuda:0 us %.1f" % wall(lambda: torch.empty(nbytes // 4, device="cuda:0")))
    print(nbytes, "x.to(cuda:1) us %.1f" % wall(lambda: x.to("cuda:1")))
    keep = []
    print(nbytes, "x.to(cuda:1) kept us %.1f" % wall(lambda: keep.append(x.to("cuda:1"))))
    del keep
    print(nbytes, "x+1 us %.1f" % wall(lambda: x + 1))
