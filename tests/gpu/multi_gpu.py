# Several GPUs (issue 22): device placement, copies between devices, NCCL
# collectives against host arithmetic, a kernel with tensors on two GPUs
# (peer access), torch's mixed-device error, and autotuning spread over two
# GPUs choosing a config that runs correctly. With one GPU the same file
# checks that everything degrades: cuda:1 is a clear error and collectives
# over one device are copies.
import torch
import triton
import triton.language as tl
import tilebook.distributed as dist

n_gpus = torch.cuda.device_count()
print("GPUs:", n_gpus)
torch.manual_seed(7)


def expect_error(f, kind, text):
    try:
        f()
    except Exception as e:
        assert type(e).__name__ == kind and text in str(e), (type(e).__name__, str(e))
        return
    raise AssertionError("no error raised")


expect_error(lambda: torch.ones(2, device=f"cuda:{max(n_gpus, 1)}"), "RuntimeError", "invalid device ordinal")

if n_gpus < 2:
    xs = [torch.full((8,), 2.0, device="cuda"), torch.full((8,), 3.0, device="cuda")]
    dist.all_reduce(xs)
    assert all(torch.equal(x.cpu(), torch.full((8,), 5.0)) for x in xs)
    print("multi_gpu: SKIPPED the two-GPU checks (one GPU); one-device collectives ok")
else:
    # Placement and the current device.
    x1 = torch.randn(1000).to("cuda:1")
    assert str(x1.device) == "cuda:1"
    torch.cuda.set_device(1)
    assert torch.cuda.current_device() == 1
    assert str(torch.empty(3, device="cuda").device) == "cuda:1"
    torch.cuda.set_device(0)
    with torch.cuda.device(1):
        assert torch.cuda.current_device() == 1
        assert str(torch.zeros(2).cuda().device) == "cuda:1"
    assert torch.cuda.current_device() == 0

    # Copies between devices keep the data; the copy is independent.
    h = torch.randn(4096)
    a0 = h.to("cuda:0")
    a1 = a0.to("cuda:1")
    a0.copy_(a0 + 1.0)
    assert torch.equal(a1.cpu(), h) and torch.equal(a0.cpu(), h + 1.0)

    # torch operations on the second GPU run there.
    y1 = x1 * 2.0 + 1.0
    assert str(y1.device) == "cuda:1"
    assert torch.allclose(y1.cpu(), x1.cpu() * 2.0 + 1.0)
    m1 = torch.randn((64, 64)).half().to("cuda:1")
    assert torch.allclose((m1 @ m1).float().cpu(), m1.float().cpu() @ m1.float().cpu(), atol=0.1, rtol=1e-2)
    expect_error(lambda: a0 @ torch.ones((4096, 1), device="cuda:1"), "RuntimeError", "same device")

    # A kernel on the second GPU alone, and one with tensors on both.
    @triton.jit
    def axpy(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, alpha * tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

    n = 100_003
    hx, hy = torch.randn(n), torch.randn(n)
    out1 = torch.empty(n, device="cuda:1")
    axpy[(triton.cdiv(n, 1024),)](hx.to("cuda:1"), hy.to("cuda:1"), out1, 3.0, n, BLOCK=1024)
    assert torch.allclose(out1.cpu(), 3.0 * hx + hy, atol=1e-5)  # the kernel may fuse the multiply-add
    # Mixed: runs on the current device (cuda:0) through peer access.
    out0 = torch.empty(n, device="cuda:0")
    x_on_1 = hx.to("cuda:1")
    x_on_1 = x_on_1 * 2.0  # a kernel on cuda:1 whose result the launch must see
    axpy[(triton.cdiv(n, 1024),)](x_on_1, hy.to("cuda:0"), out0, 1.0, n, BLOCK=1024)
    assert torch.allclose(out0.cpu(), 2.0 * hx + hy)
    # Writing the other GPU's memory from cuda:0, then reading it on cuda:1.
    dst1 = torch.zeros(n, device="cuda:1")
    axpy[(triton.cdiv(n, 1024),)](hx.to("cuda:0"), hy.to("cuda:0"), dst1, 1.0, n, BLOCK=1024)
    assert torch.allclose((dst1 + 0.0).cpu(), hx + hy)

    # NCCL collectives against host arithmetic.
    parts = [torch.randn(1 << 16) for _ in range(2)]
    devs = ["cuda:0", "cuda:1"]
    for op, ref in [("sum", parts[0] + parts[1]), ("max", torch.maximum(parts[0], parts[1])),
                    ("min", torch.minimum(parts[0], parts[1])), ("avg", (parts[0] + parts[1]) / 2)]:
        xs = [p.to(d) for p, d in zip(parts, devs)]
        dist.all_reduce(xs, op=op)
        assert all(torch.allclose(x.cpu(), ref) for x in xs), op
    xs = [p.to(d) for p, d in zip(parts, devs)]
    dist.broadcast(xs, root=1)
    assert all(torch.equal(x.cpu(), parts[1]) for x in xs)
    outs = [torch.empty(2 << 16, device=d) for d in devs]
    dist.all_gather(outs, [p.to(d) for p, d in zip(parts, devs)])
    assert all(torch.equal(o.cpu(), torch.cat(parts)) for o in outs)
    outs = [torch.empty(1 << 15, device=d) for d in devs]
    dist.reduce_scatter(outs, [p.to(d) for p, d in zip(parts, devs)])
    total = parts[0] + parts[1]
    assert torch.allclose(outs[0].cpu(), total[: 1 << 15]) and torch.allclose(outs[1].cpu(), total[1 << 15:])
    expect_error(lambda: dist.all_reduce([torch.ones(4, device="cuda:0"), torch.ones(4, device="cuda:0"),
                                          torch.ones(4, device="cuda:1")]), "ValueError", "one tensor per device")

    # Autotuning spread over both GPUs picks a config that runs correctly.
    configs = [triton.Config({'BLOCK_SIZE_M': m, 'BLOCK_SIZE_N': nn, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8},
                             num_stages=3, num_warps=4) for m, nn in [(64, 64), (128, 64), (64, 128), (128, 128)]]
    tuned = triton.autotune(configs=configs, key=['M', 'N', 'K'])(matmul_kernel)
    s = 1024
    a = torch.randn((s, s)).half().to("cuda:0")
    c = torch.empty((s, s), device="cuda:0", dtype=torch.float16)
    grid = lambda META: (triton.cdiv(s, META['BLOCK_SIZE_M']) * triton.cdiv(s, META['BLOCK_SIZE_N']),)
    tuned[grid](a, a, c, s, s, s, a.stride(0), a.stride(1), a.stride(0), a.stride(1), c.stride(0), c.stride(1),
                ACTIVATION="")
    assert torch.allclose(c.float().cpu(), a.float().cpu() @ a.float().cpu(), atol=0.5, rtol=1e-2)
    print("autotuned on two GPUs:", tuned.best_config)

    # Benchmark.run spread over both GPUs: the points of a sweep written for
    # DEVICE (cuda:0) run on both, each checks its own result, the table
    # has every point, and the current device is the same after.
    DEVICE = triton.runtime.driver.active.get_active_torch_device()
    seen = []

    @triton.testing.perf_report(triton.testing.Benchmark(
        x_names=['s'], x_vals=[256, 512, 1024], line_arg='p', line_vals=['tile', 'torch'],
        plot_name='spread', args={}))
    def spread(s, p):
        a = torch.randn((s, s), device=DEVICE, dtype=torch.float16)
        c = torch.empty((s, s), device=DEVICE, dtype=torch.float16)
        seen.append(str(a.device))
        if p == 'torch':
            return triton.testing.do_bench(lambda: a @ a, warmup=2, rep=5)
        grid = (triton.cdiv(s, 64) * triton.cdiv(s, 64),)
        ms = triton.testing.do_bench(lambda: matmul_kernel[grid](
            a, a, c, s, s, s, a.stride(0), a.stride(1), a.stride(0), a.stride(1), c.stride(0), c.stride(1),
            BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, ACTIVATION=""), warmup=2, rep=5)
        ref = a.float() @ a.float()
        assert torch.allclose(c.float(), ref, atol=0.5, rtol=1e-2), f"spread point {s} on {c.device}"
        return ms

    df = spread.run(return_df=True)
    assert len(df['s']) == 3 and all(v > 0 for v in df['tile']) and all(v > 0 for v in df['torch']), df
    assert "cuda:0" in seen and "cuda:1" in seen, seen
    assert torch.cuda.current_device() == 0
    print("Benchmark.run spread over:", sorted(set(seen)))
    print("multi_gpu: all two-GPU checks ok")
