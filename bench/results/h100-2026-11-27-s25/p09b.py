import sys, time, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
import t09
M = int(os.environ.get("P09_M", "8192"))
K = int(os.environ.get("P09_K", "512"))
reps = int(os.environ.get("P09_REPS", "1000"))
t0 = time.perf_counter()
t09.validate(32, 32, 32, torch.float16)
print("validate 32: %.2f s" % (time.perf_counter() - t0), flush=True)
t0 = time.perf_counter()
t09.validate(M, M, K, torch.float16)
print("validate %d: %.2f s" % (M, time.perf_counter() - t0), flush=True)
a = torch.randn((M, K), device="cuda", dtype=torch.float16)
b = torch.randn((K, M), device="cuda", dtype=torch.float16).T.contiguous()
t09.proton.start("matmul", hook="triton")
t09.proton.deactivate()
for label, fn, args in [("cublas", t09.device_blas_matmul, (a, b)), ("torch", t09.torch_matmul, (a, b)),
                        ("naive", t09.matmul, (a, b.T)), ("persistent", t09.matmul_persistent, (a, b.T)),
                        ("tma_persistent", lambda a, b: t09.matmul_tma_persistent(a, b, False), (a, b)),
                        ("tma", lambda a, b: t09.matmul_tma(a, b, False), (a, b)),
                        ("descriptor_persistent", lambda a, b: t09.matmul_descriptor_persistent(a, b, False), (a, b))]:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn(*args)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    with t09.proton_context():
        for _ in range(reps):
            fn(*args)
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    print("%-22s warmup %8.1f us/call   profiled %8.1f us/call" % (label, (t1 - t0) / reps * 1e6, (t2 - t1) / reps * 1e6), flush=True)
t09.proton.finalize()
t09.show_profile("fp16", "matmul")
