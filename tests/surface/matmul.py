# The surface of Triton's third tutorial, in a program of our own: an
# autotuned fp16 matrix product over a 1-D grid with grouped tile order
# (configs from a function, keyed on the sizes), tl.assume hints, wrapped
# row/column offsets, pointer blocks advanced with +=, an optional epilogue
# chosen by a constexpr string and defined after the kernel, an fp8 pass
# with a transposed operand, and a perf_report over a list of Benchmarks.
import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


def nvidia():
    return triton.runtime.driver.active.get_current_target().backend == "cuda"


def tile_choices():
    shapes = [(128, 256, 64, 3, 8), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4), (128, 64, 32, 4, 4),
              (64, 128, 32, 4, 4), (64, 32, 32, 5, 2), (128, 128, 64, 4, 4), (64, 128, 64, 4, 4)]
    return [
        triton.Config({'TM': m, 'TN': n, 'TK': k, 'GROUP': 8}, num_stages=stages, num_warps=warps)
        for m, n, k, stages, warps in shapes
    ]


@triton.autotune(
    configs=tile_choices(),
    key=['M', 'N', 'K'],
)
@triton.jit
def product_kernel(
        a_ptr, b_ptr, c_ptr,
        M, N, K,
        sa_m, sa_k,
        sb_k, sb_n,
        sc_m, sc_n,
        TM: tl.constexpr, TN: tl.constexpr, TK: tl.constexpr,
        GROUP: tl.constexpr,
        EPILOGUE: tl.constexpr
):
    pid = tl.program_id(axis=0)
    tiles_m = tl.cdiv(M, TM)
    tiles_n = tl.cdiv(N, TN)
    per_group = GROUP * tiles_n
    group = pid // per_group
    row0 = group * GROUP
    rows_here = min(tiles_m - row0, GROUP)
    tile_m = row0 + ((pid % per_group) % rows_here)
    tile_n = (pid % per_group) // rows_here
    tl.assume(tile_m >= 0)
    tl.assume(tile_n >= 0)
    tl.assume(sa_m > 0)
    tl.assume(sa_k > 0)
    tl.assume(sb_k > 0)
    tl.assume(sb_n > 0)
    tl.assume(sc_m > 0)
    tl.assume(sc_n > 0)
    rm = (tile_m * TM + tl.arange(0, TM)) % M
    rn = (tile_n * TN + tl.arange(0, TN)) % N
    rk = tl.arange(0, TK)
    a_blk = a_ptr + (rm[:, None] * sa_m + rk[None, :] * sa_k)
    b_blk = b_ptr + (rk[:, None] * sb_k + rn[None, :] * sb_n)
    acc = tl.zeros((TM, TN), dtype=tl.float32)
    for step in range(0, tl.cdiv(K, TK)):
        left = K - step * TK
        a = tl.load(a_blk, mask=rk[None, :] < left, other=0.0)
        b = tl.load(b_blk, mask=rk[:, None] < left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_blk += TK * sa_k
        b_blk += TK * sb_k
    if EPILOGUE == "leaky":
        acc = leaky(acc)
    c = acc.to(tl.float16)
    cm = tile_m * TM + tl.arange(0, TM)
    cn = tile_n * TN + tl.arange(0, TN)
    c_blk = c_ptr + sc_m * cm[:, None] + sc_n * cn[None, :]
    tl.store(c_blk, c, mask=(cm[:, None] < M) & (cn[None, :] < N))


@triton.jit
def leaky(x):
    return tl.where(x >= 0, x, 0.01 * x)


def product(a, b, epilogue=""):
    assert a.shape[1] == b.shape[0], "inner sizes differ"
    assert a.is_contiguous(), "a must be contiguous"
    M, K = a.shape
    K, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = lambda META: (triton.cdiv(M, META['TM']) * triton.cdiv(N, META['TN']), )
    product_kernel[grid](
        a, b, c,
        M, N, K,
        a.stride(0), a.stride(1),
        b.stride(0), b.stride(1),
        c.stride(0), c.stride(1),
        EPILOGUE=epilogue
    )
    return c


torch.manual_seed(3)
a = torch.rand((384, 512), device=DEVICE, dtype=torch.float16) - 0.5
b = torch.rand((512, 320), device=DEVICE, dtype=torch.float16) - 0.5
mine = product(a, b)
theirs = torch.matmul(a, b)
print(f"fp16 product={mine}")
print(f"torch product={theirs}")
print("fp16 products agree" if torch.allclose(mine, theirs, atol=1e-2, rtol=0) else "fp16 products DIFFER")
leaky_mine = product(a, b, "leaky")
leaky_ref = torch.where(theirs >= 0, theirs, 0.01 * theirs)
print("leaky epilogue agrees" if torch.allclose(leaky_mine, leaky_ref, atol=1e-2, rtol=0) else "leaky epilogue DIFFERS")

HAVE_FP8 = hasattr(torch, "float8_e5m2") and torch.cuda.is_available()
if HAVE_FP8 and nvidia():
    torch.manual_seed(3)
    a = torch.randn((512, 512), device=DEVICE, dtype=torch.float16).to(torch.float8_e5m2)
    b = torch.randn((512, 512), device=DEVICE, dtype=torch.float16).T.to(torch.float8_e5m2)
    mine = product(a, b)
    theirs = torch.matmul(a.to(torch.float16), b.to(torch.float16))
    print(f"fp8 product={mine}")
    print("fp8 products agree" if torch.allclose(mine, theirs, atol=0.125, rtol=0) else "fp8 products DIFFER")

library = 'cuBLAS' if nvidia() else 'rocBLAS'
sweeps = []
for use_fp8 in [False, True]:
    if use_fp8 and (not HAVE_FP8 or not nvidia()):
        continue
    sweeps.append(
        triton.testing.Benchmark(
            x_names=["M", "N", "K"],
            x_vals=[128 * i for i in range(2, 33)],
            line_arg="impl",
            line_vals=["kernel"] if use_fp8 else [library.lower(), "kernel"],
            line_names=["Kernel"] if use_fp8 else [library, "Kernel"],
            styles=[("green", "-"), ("blue", "-")],
            ylabel="TFLOPS",
            plot_name="product-" + ("fp8" if use_fp8 else "fp16"),
            args={"use_fp8": use_fp8},
        ))


@triton.testing.perf_report(sweeps)
def throughput(M, N, K, impl, use_fp8):
    a = torch.randn((M, K), device=DEVICE, dtype=torch.float16)
    b = torch.randn((K, N), device=DEVICE, dtype=torch.float16)
    if HAVE_FP8 and use_fp8:
        a = a.to(torch.float8_e5m2)
        b = b.T.to(torch.float8_e5m2)
    q = [0.5, 0.2, 0.8]
    if impl == library.lower():
        mid, low, high = triton.testing.do_bench(lambda: torch.matmul(a, b), quantiles=q)
    if impl == 'kernel':
        mid, low, high = triton.testing.do_bench(lambda: product(a, b), quantiles=q)
    tflops = lambda ms: 2 * M * N * K * 1e-12 / (ms * 1e-3)
    return tflops(mid), tflops(high), tflops(low)


throughput.run(show_plots=True, print_data=True)
