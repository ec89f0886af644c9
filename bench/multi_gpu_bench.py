# tilebook's side of the multi-GPU benchmark (bench/run_multi_gpu.sh runs it
# after tests/ir/matmul.py, which defines matmul_kernel). Prints one
# `ROW workload size unit value` line per measurement; bench/merge_multi.py
# pairs them with peers_multi_gpu.py's numbers into multi_gpu.json.
import time
import torch
import triton
import triton.language as tl
import tilebook.distributed as dist

N_GPUS = torch.cuda.device_count()
assert N_GPUS >= 2, "the multi-GPU benchmark needs two GPUs"
for i in range(2):
    print("device", i, torch.cuda.get_device_name(i))


def row(workload, size, unit, value):
    print(f"ROW {workload} {size} {unit} {value}")


def wall_time(f, reps, warm=3):
    for _ in range(warm):
        f()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        f()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / reps


# ---------------------------------------------------------------- autotuning
def config(m, n, k, stages, warps):
    return triton.Config({'BLOCK_SIZE_M': m, 'BLOCK_SIZE_N': n, 'BLOCK_SIZE_K': k, 'GROUP_SIZE_M': 8},
                         num_stages=stages, num_warps=warps)


CONFIGS = [
    config(128, 256, 64, 3, 8), config(64, 256, 32, 4, 4), config(128, 128, 32, 4, 4), config(128, 64, 32, 4, 4),
    config(64, 128, 32, 4, 4), config(128, 32, 32, 4, 4), config(64, 32, 32, 5, 2), config(32, 64, 32, 5, 2),
    config(128, 256, 128, 3, 8), config(256, 128, 128, 3, 8), config(256, 64, 128, 4, 4), config(64, 256, 128, 4, 4),
    config(128, 128, 128, 4, 4), config(128, 64, 64, 4, 4), config(64, 128, 64, 4, 4), config(128, 32, 64, 4, 4),
]
tuned = triton.autotune(configs=CONFIGS, key=['M', 'N', 'K'])(matmul_kernel)


def tune_seconds(s, a, c):
    grid = lambda META: (triton.cdiv(s, META['BLOCK_SIZE_M']) * triton.cdiv(s, META['BLOCK_SIZE_N']),)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    tuned[grid](a, a, c, s, s, s, a.stride(0), a.stride(1), a.stride(0), a.stride(1), c.stride(0), c.stride(1),
                ACTIVATION="")
    torch.cuda.synchronize()
    return time.perf_counter() - t0


results = {}
for s in [512, 4096]:
    a = torch.randn((s, s), device='cuda:0', dtype=torch.float16)
    c = torch.empty((s, s), device='cuda:0', dtype=torch.float16)
    # Cold: compiling the 16 configs (no disk cache, no driver cache: the
    # script runs with TILEBOOK_CACHE=off and CUDA_CACHE_DISABLE=1) and tuning.
    for devs in [1, 2]:
        %cache clear
        if devs == 1:
            %config bench_devices=1
        else:
            %config bench_devices=2
        t = tune_seconds(s, a, c)
        row(f"autotune16_cold_{devs}gpu", s, "s", t)
        results[("cold", s, devs)] = (t, str(tuned.best_config))
        assert torch.allclose(c.float(), a.float() @ a.float(), atol=0.5, rtol=1e-2)
    # Warm: the 16 configs compiled, tuning only; three times each, alternating.
    for rep in range(3):
        for devs in [1, 2]:
            %cache clear tuning
            if devs == 1:
                %config bench_devices=1
            else:
                %config bench_devices=2
            t = tune_seconds(s, a, c)
            row(f"autotune16_warm_{devs}gpu", s, "s", t)
            results.setdefault(("warm", s, devs), []).append((t, str(tuned.best_config)))
    for devs in [1, 2]:
        print(f"best at {s}: {devs} GPU(s):", sorted(set(b for _, b in results[('warm', s, devs)])),
              "cold:", results[("cold", s, devs)][1])
%config bench_devices=0

# ---------------------------------------------------------------- NCCL and a tile-language all-reduce
@triton.jit
def all_reduce_2(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(x_ptr + offs, mask=mask)
    b = tl.load(y_ptr + offs, mask=mask)
    s = a + b
    tl.store(x_ptr + offs, s, mask=mask)
    tl.store(y_ptr + offs, s, mask=mask)


def tile_all_reduce(x, y):
    n = x.numel()
    all_reduce_2[(triton.cdiv(n, 4096),)](x, y, n, BLOCK=4096, num_warps=8)


torch.manual_seed(1)
for n in [1000, 4097, (64 << 20) // 4]:
    data = [torch.randn(n) for _ in range(2)]
    ours = [data[0].to("cuda:0"), data[1].to("cuda:1")]
    theirs = [data[0].to("cuda:0"), data[1].to("cuda:1")]
    tile_all_reduce(ours[0], ours[1])
    dist.all_reduce(theirs)
    ok = all(torch.equal(x.cpu(), y.cpu()) for x, y in zip(ours, theirs))
    ok = ok and torch.equal(theirs[0].cpu(), data[0] + data[1])
    print(f"tile all-reduce of {n} elements equals NCCL's and the host sum: {ok}")
    row("tile_allreduce_correct", n, "bool", int(ok))
    assert ok

for op, ref in [("max", torch.maximum), ("min", torch.minimum)]:
    data = [torch.randn(4096) for _ in range(2)]
    xs = [data[0].to("cuda:0"), data[1].to("cuda:1")]
    dist.all_reduce(xs, op=op)
    ok = all(torch.equal(x.cpu(), ref(data[0], data[1])) for x in xs)
    print(f"NCCL all_reduce op={op}: {ok}")
    assert ok

for nbytes in [1 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30]:
    x = torch.ones(nbytes // 4, device="cuda:0")
    y = torch.ones(nbytes // 4, device="cuda:1")
    xs = [x, y]
    t_nccl = wall_time(lambda: dist.all_reduce(xs), 20)
    row("nccl_allreduce_busbw", nbytes, "GB/s", dist.bus_bandwidth("all_reduce", nbytes, t_nccl, 2))
    t_tile = wall_time(lambda: tile_all_reduce(x, y), 20)
    row("tile_allreduce_busbw", nbytes, "GB/s", dist.bus_bandwidth("all_reduce", nbytes, t_tile, 2))
    t_copy = wall_time(lambda: x.to("cuda:1"), 20)
    row("peer_copy", nbytes, "GB/s", nbytes / t_copy / 1e9)

# ---------------------------------------------------------------- Benchmark.run spread over GPUs
# Sweeps written as the tutorials write them (DEVICE = the active device,
# do_bench with quantiles), run with their points on one GPU and spread
# over two; the wall time of each run, and how far each point's value on
# two GPUs is from the one-GPU run's.
DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def sweep_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@triton.testing.perf_report(triton.testing.Benchmark(
    x_names=['size'], x_vals=[2 ** i for i in range(16, 28)], x_log=True, line_arg='provider',
    line_vals=['triton', 'torch'], line_names=['Triton', 'Torch'], ylabel='GB/s', plot_name='sweep-vadd', args={}))
def sweep_vadd(size, provider):
    x = torch.rand(size, device=DEVICE)
    y = torch.rand(size, device=DEVICE)
    q = [0.5, 0.2, 0.8]
    if provider == 'torch':
        ms, lo, hi = triton.testing.do_bench(lambda: x + y, quantiles=q)
    else:
        out = torch.empty_like(x)
        ms, lo, hi = triton.testing.do_bench(
            lambda: sweep_add[(triton.cdiv(size, 1024),)](x, y, out, size, BLOCK=1024), quantiles=q)
    gbps = lambda ms: 3 * x.numel() * x.element_size() * 1e-9 / (ms * 1e-3)
    return gbps(ms), gbps(hi), gbps(lo)


@triton.testing.perf_report(triton.testing.Benchmark(
    x_names=['M', 'N', 'K'], x_vals=[512 * i for i in range(1, 9)], line_arg='provider',
    line_vals=['tile', 'cublas'], line_names=['Tile', 'cuBLAS'], ylabel='TFLOPS', plot_name='sweep-matmul', args={}))
def sweep_mm(M, N, K, provider):
    a = torch.randn((M, K), device=DEVICE, dtype=torch.float16)
    b = torch.randn((K, N), device=DEVICE, dtype=torch.float16)
    q = [0.5, 0.2, 0.8]
    if provider == 'cublas':
        ms, lo, hi = triton.testing.do_bench(lambda: torch.matmul(a, b), quantiles=q)
    else:
        c = torch.empty((M, N), device=DEVICE, dtype=torch.float16)
        grid = (triton.cdiv(M, 128) * triton.cdiv(N, 128),)
        ms, lo, hi = triton.testing.do_bench(lambda: matmul_kernel[grid](
            a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
            BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, ACTIVATION="",
            num_stages=4, num_warps=8), quantiles=q)
    perf = lambda ms: 2 * M * N * K * 1e-12 / (ms * 1e-3)
    return perf(ms), perf(hi), perf(lo)


for name, sweep in [("vadd", sweep_vadd), ("matmul", sweep_mm)]:
    sweep.run(return_df=True)  # compiles and warms both GPUs' caches
    frames = {}
    for rep in range(2):
        for devs in [1, 2]:
            if devs == 1:
                %config bench_devices=1
            else:
                %config bench_devices=2
            t0 = time.perf_counter()
            frames[devs] = sweep.run(return_df=True)
            row(f"bench_run_{name}_{devs}gpu", rep, "s", time.perf_counter() - t0)
    diffs = []
    for col in frames[1]:
        if col in ('size', 'M', 'N', 'K'):
            continue
        for one, two in zip(frames[1][col], frames[2][col]):
            diffs.append(abs(two / one - 1))
    diffs.sort()
    row(f"bench_run_{name}_value_diff_median", 0, "frac", diffs[len(diffs) // 2])
    row(f"bench_run_{name}_value_diff_max", 0, "frac", diffs[-1])
    print(f"Benchmark.run {name}: points, 2-GPU values vs 1-GPU: median |diff| {diffs[len(diffs) // 2]:.3f}, "
          f"max {diffs[-1]:.3f}")
%config bench_devices=0
