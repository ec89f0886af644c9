# %% [markdown]
# # 7. Several GPUs from one notebook
#
# Everything so far ran on one device. This tutorial uses every GPU of the
# machine from one session, with no processes to launch and no ranks to
# coordinate:
#
# - devices by index (`cuda:0`, `cuda:1`, ...), and copies between them;
# - NCCL collectives over a list of tensors, one per GPU
#   (`tilebook.distributed`), and their *bus bandwidth*;
# - an all-reduce written in the tile language, where a kernel on one GPU
#   reads and writes the other GPU's memory directly, checked against NCCL;
# - autotuning tutorial 03's matmul with its configurations timed on two
#   GPUs at once.
#
# On a machine with one GPU, or on the CPU backend, every cell still runs:
# a collective over one device is a copy, and the two-GPU experiments say
# that they need two GPUs.

# %% tags=["tilebook-device-dependent"]
import time
import torch
import triton
import triton.language as tl
import tilebook
import tilebook.distributed as dist

N_GPUS = torch.cuda.device_count()
ON_GPU = N_GPUS > 0
print(f"{N_GPUS} GPU(s)")
for i in range(N_GPUS):
    p = torch.cuda.get_device_properties(i)
    print(f"  cuda:{i}: {p.name}, {p.multi_processor_count} multiprocessors, {p.total_memory / 2**30:.0f} GiB")

# %% [markdown]
# ## Devices and copies
#
# A tensor lives on the device its `device=` names; `torch.cuda.set_device`
# and `with torch.cuda.device(i):` choose where a bare `'cuda'` goes. A kernel
# runs on the device of its tensor arguments. `x.to('cuda:1')` copies over
# NVLink when the GPUs have a direct path (`nvidia-smi topo -m` shows it).
# (`torch.ones(..., device='cuda:0')` fills the tensor on the GPU, so the
# copy starts from GPU memory, as it would in torch.)
#
# Cells whose outputs depend on the machine are tagged
# `tilebook-device-dependent`: `tilebook notebook check` on another backend
# skips them.
#
# We time copies of growing size from `cuda:0` to the last GPU. With one
# device this copies within it.

# %% tags=["tilebook-device-dependent"]
LAST = f"cuda:{max(N_GPUS - 1, 0)}"
SIZES = [1 << 20, 16 << 20, 64 << 20, 256 << 20] if ON_GPU else [1 << 16, 1 << 20]


def wall_time(f, reps):
    """Seconds per call of f, all GPUs idle before and after."""
    f()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        f()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / reps


for nbytes in SIZES:
    x = torch.ones(nbytes // 4, device="cuda:0")
    s = wall_time(lambda: x.to(LAST), 10)
    print(f"copy cuda:0 -> {LAST} {nbytes / 2**20:6.0f} MiB: {nbytes / s / 1e9:7.1f} GB/s")
y = x.to(LAST)
assert torch.equal(y.cpu(), x.cpu()) and str(y.device) == LAST

# %% [markdown]
# ## NCCL all-reduce
#
# `dist.all_reduce(tensors)` takes one tensor per GPU and leaves their sum
# in every one of them, through NCCL (one process drives all GPUs; NCCL's
# "group" calls queue each GPU's part on its own stream). A collective's
# speed is reported as *bus bandwidth*: the bytes per second each link
# carries, which for an all-reduce over `n` GPUs is the data size over the
# time, times `2(n-1)/n` (as nccl-tests reports it). It can be compared
# across GPU counts and with the links' peak.

# %% tags=["tilebook-device-dependent"]
devices = [f"cuda:{i}" for i in range(max(N_GPUS, 1))]
ranks = len(devices)
for nbytes in SIZES:
    xs = [torch.full((nbytes // 4,), float(i + 1), device=d) for i, d in enumerate(devices)]
    s = wall_time(lambda: dist.all_reduce(xs), 10)
    bw = dist.bus_bandwidth("all_reduce", nbytes, s, ranks) if ranks > 1 else 0.0
    print(f"all_reduce over {ranks} device(s) {nbytes / 2**20:6.0f} MiB: {s * 1e3:8.3f} ms, bus bandwidth {bw:7.1f} GB/s")
# Each reduction ran 12 times on the running sums (a warm-up, then 10 timed, all in place).
xs = [torch.full((1000,), float(i + 1), device=d) for i, d in enumerate(devices)]
dist.all_reduce(xs)
expected = float(sum(range(1, ranks + 1)))
print("all_reduce sums:", [t[0].item() for t in xs], "expected", expected)

# %% [markdown]
# ## An all-reduce in the tile language
#
# With peer access, a kernel on one GPU can load from and store to another
# GPU's memory: the pointers are just addresses. The kernel below runs on
# `cuda:0`, reads both GPUs' tensors, adds them, and writes the sum into
# both, so one launch is a complete all-reduce of two GPUs. Its traffic
# crosses NVLink twice (the other GPU's values in, the sums out), as a ring
# all-reduce of two GPUs does.
#
# A launch whose tensors are on several devices runs on the current device
# (`torch.cuda.set_device`), which must reach the others' memory; tilebook
# enables peer access the first time and orders the GPUs' streams around
# the launch, so what the other GPU computed before is read, and what it
# computes after sees the sums.

# %%
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


# Correct against NCCL on the same inputs.
n = (64 << 20) // 4 if ON_GPU else 1 << 16
torch.manual_seed(0)
data = [torch.randn(n) for _ in range(2)]
second = LAST if N_GPUS > 1 else "cuda:0"
ours = [data[0].to("cuda:0"), data[1].to(second)]
theirs = [data[0].to("cuda:0"), data[1].to(second)]
tile_all_reduce(ours[0], ours[1])
if N_GPUS > 1:
    dist.all_reduce(theirs)
else:
    # One GPU: both tensors share it, and NCCL's answer is the sum itself.
    total = theirs[0] + theirs[1]
    theirs = [total, total.clone()]
print("tile all-reduce equals NCCL's:", all(torch.equal(a.cpu(), b.cpu()) for a, b in zip(ours, theirs)))

# %% tags=["tilebook-device-dependent"]
for nbytes in SIZES:
    x = torch.ones(nbytes // 4, device="cuda:0")
    y = torch.ones(nbytes // 4, device=second)
    s = wall_time(lambda: tile_all_reduce(x, y), 10)
    xs = [x, y] if N_GPUS > 1 else [x]
    s_nccl = wall_time(lambda: dist.all_reduce(xs), 10)
    bw = lambda t: dist.bus_bandwidth("all_reduce", nbytes, t, 2)
    print(f"{nbytes / 2**20:6.0f} MiB: tile kernel {bw(s):7.1f} GB/s, NCCL {bw(s_nccl):7.1f} GB/s (bus bandwidth, 2 ranks)")

# %% [markdown]
# ## Autotuning on two GPUs
#
# Autotuning times every configuration, one after another, while the
# machine's other GPUs idle. With several GPUs of the same model, tilebook
# times the configurations side by side, one per GPU (`%config
# bench_devices`, or `TILEBOOK_BENCH_DEVICES`; 0 means all of them, 1 only
# the current device). Each configuration is compiled once and loaded on
# every GPU; the launch's tensors are copied to each GPU once.
#
# We tune tutorial 03's matmul over its 16 configurations at 4096³, first on
# one GPU, then on two. `%cache clear tuning` forgets the results but not
# the compiled code, so both timings measure tuning alone (the first launch
# compiled the 16 configurations). The best configuration should be the
# same both times, unless two configurations time within noise of each
# other.

# %%
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, acc.to(tl.float16), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def config(m, n, k, stages, warps):
    return triton.Config({'BLOCK_SIZE_M': m, 'BLOCK_SIZE_N': n, 'BLOCK_SIZE_K': k, 'GROUP_SIZE_M': 8},
                         num_stages=stages, num_warps=warps)


CONFIGS = [
    config(128, 256, 64, 3, 8), config(64, 256, 32, 4, 4), config(128, 128, 32, 4, 4), config(128, 64, 32, 4, 4),
    config(64, 128, 32, 4, 4), config(128, 32, 32, 4, 4), config(64, 32, 32, 5, 2), config(32, 64, 32, 5, 2),
    config(128, 256, 128, 3, 8), config(256, 128, 128, 3, 8), config(256, 64, 128, 4, 4), config(64, 256, 128, 4, 4),
    config(128, 128, 128, 4, 4), config(128, 64, 64, 4, 4), config(64, 128, 64, 4, 4), config(128, 32, 64, 4, 4),
]
matmul_tuned = triton.autotune(configs=CONFIGS, key=['M', 'N', 'K'])(matmul_kernel)


def tune_seconds(a, b):
    """Seconds of the first launch for this key (tuning and the launch)."""
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = lambda META: (triton.cdiv(M, META['BLOCK_SIZE_M']) * triton.cdiv(N, META['BLOCK_SIZE_N']),)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    matmul_tuned[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                       c.stride(0), c.stride(1))
    torch.cuda.synchronize()
    return time.perf_counter() - t0, c


# %% tags=["tilebook-device-dependent"]
# 4096^3 on GPUs; a small size elsewhere, where the cells still run the same way.
S = 4096 if ON_GPU else 64
a = torch.randn((S, S), device="cuda:0", dtype=torch.float16)
b = torch.randn((S, S), device="cuda:0", dtype=torch.float16)
%config bench_devices=1
compile_and_tune, _ = tune_seconds(a, b)
print(f"first launch (compiling 16 configs, tuning on 1 GPU): {compile_and_tune:.2f} s")

# %% tags=["tilebook-device-dependent"]
%cache clear tuning
one, _ = tune_seconds(a, b)
best_one = str(matmul_tuned.best_config)
%cache clear tuning
%config bench_devices=2
two, c = tune_seconds(a, b)
best_two = str(matmul_tuned.best_config)
%config bench_devices=0
gpus = min(N_GPUS, 2)
print(f"tuning 16 configs at {S}^3: 1 GPU {one:.3f} s, {gpus} GPU(s) {two:.3f} s ({two / one:.2f}x)")
print("same best config:", best_one == best_two)
print("result correct:", torch.allclose(c.float(), a.float() @ b.float(), atol=0.5, rtol=1e-2))
if N_GPUS < 2:
    print(f"(this machine has {N_GPUS} GPU(s): both timings ran on one device)")

# %% [markdown]
# ## A benchmark sweep on two GPUs
#
# `Benchmark.run` spreads its points the same way: with `bench_devices`
# above 1 (or 0, every GPU of the model), each round of points runs one per
# GPU. A sweep is a Python function whose every call waits for its
# `do_bench`, so a round runs in three steps: each point runs until its first
# `do_bench` (on its own GPU: tensors it asks for on `DEVICE` are placed
# there), the functions those `do_bench` calls were given are timed side by
# side, then each point runs again with that `do_bench` answered. What a
# point prints shows once; the code before its first `do_bench` runs twice,
# so it should not count on running once.
#
# Below, the matmul of the last section against cuBLAS over eight sizes, on
# one GPU and then on two: the same table, in less time.

# %% tags=["tilebook-device-dependent"]
DEVICE = triton.runtime.driver.active.get_active_torch_device()
SIZES = [512 * i for i in range(1, 9)] if ON_GPU else [64]


def matmul(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    grid = lambda META: (triton.cdiv(M, META['BLOCK_SIZE_M']) * triton.cdiv(N, META['BLOCK_SIZE_N']),)
    matmul_tuned[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                       c.stride(0), c.stride(1))


@triton.testing.perf_report(triton.testing.Benchmark(
    x_names=["M", "N", "K"], x_vals=SIZES, line_arg="provider", line_vals=["tile", "cublas"],
    line_names=["Tile", "cuBLAS"], ylabel="TFLOPS", plot_name="matmul-sweep", args={}))
def matmul_sweep(M, N, K, provider):
    a = torch.randn((M, K), device=DEVICE, dtype=torch.float16)
    b = torch.randn((K, N), device=DEVICE, dtype=torch.float16)
    if provider == "cublas":
        ms = triton.testing.do_bench(lambda: torch.matmul(a, b))
    else:
        c = torch.empty((M, N), device=DEVICE, dtype=torch.float16)
        ms = triton.testing.do_bench(lambda: matmul(a, b, c))
    return 2 * M * N * K * 1e-12 / (ms * 1e-3)


matmul_sweep.run(return_df=True)  # tunes each size once
for devs in [1, 2]:
    if devs == 1:
        %config bench_devices=1
    else:
        %config bench_devices=2
    t0 = time.perf_counter()
    matmul_sweep.run(return_df=True)
    print(f"{min(devs, max(N_GPUS, 1))} GPU(s): {time.perf_counter() - t0:.2f} s")
%config bench_devices=0
matmul_sweep.run(print_data=True)
