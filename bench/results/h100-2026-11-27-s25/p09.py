# Per-call cost of tutorial 09's wrappers (published file, imported), at a
# GPU-bound size (8192 x 8192 x 512, as its bench) and a host-bound one.
import sys, time, os
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "published"))
import torch
import t09
for M, K, reps in [(8192, 512, 300), (32, 32, 2000)]:
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((K, M), device="cuda", dtype=torch.float16).T.contiguous()
    for name, fn in [("naive", lambda: t09.matmul(a, b.T)), ("persistent", lambda: t09.matmul_persistent(a, b.T)),
                     ("tma_persistent", lambda: t09.matmul_tma_persistent(a, b, False)),
                     ("descriptor_persistent", lambda: t09.matmul_descriptor_persistent(a, b, False)),
                     ("torch", lambda: torch.matmul(a, b.T)),
                     ("props", lambda: torch.cuda.get_device_properties("cuda").multi_processor_count),
                     ("empty", lambda: torch.empty((M, M), device="cuda", dtype=torch.float16))]:
        fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
        print(f"M={M} K={K} {name:24s} {(time.perf_counter() - t0) / reps * 1e6:9.1f} us per call", flush=True)
