# The surface of Triton's first tutorial, in a program of our own: a kernel
# over a 1-D grid with a masked tail, a host wrapper with a grid function,
# a check against torch, and a perf_report sweep on a log axis with
# do_bench quantiles.
import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def sum_two(a_ptr,  # first operand
            b_ptr,  # second operand
            out_ptr,  # result
            count,  # elements in each vector
            TILE: tl.constexpr,  # elements per program
            ):
    program = tl.program_id(axis=0)
    first = program * TILE
    idx = first + tl.arange(0, TILE)
    inside = idx < count
    a = tl.load(a_ptr + idx, mask=inside)
    b = tl.load(b_ptr + idx, mask=inside)
    tl.store(out_ptr + idx, a + b, mask=inside)


def vector_sum(a: torch.Tensor, b: torch.Tensor):
    out = torch.empty_like(a)
    assert a.device == DEVICE and b.device == DEVICE and out.device == DEVICE
    count = out.numel()
    launch_grid = lambda meta: (triton.cdiv(count, meta['TILE']), )
    sum_two[launch_grid](a, b, out, count, TILE=1024)
    return out


torch.manual_seed(1)
length = 77777
a = torch.rand(length, device=DEVICE)
b = torch.rand(length, device=DEVICE)
expected = a + b
got = vector_sum(a, b)
print(expected)
print(got)
print(f'largest difference from torch: {torch.max(torch.abs(expected - got))}')


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=['length'],
        x_vals=[2**k for k in range(12, 28, 1)],
        x_log=True,
        line_arg='impl',
        line_vals=['kernel', 'torch'],
        line_names=['Kernel', 'Torch'],
        styles=[('blue', '-'), ('green', '-')],
        ylabel='GB/s',
        plot_name='vector-sum-throughput',
        args={},
    ))
def throughput(length, impl):
    a = torch.rand(length, device=DEVICE, dtype=torch.float32)
    b = torch.rand(length, device=DEVICE, dtype=torch.float32)
    q = [0.5, 0.2, 0.8]
    if impl == 'torch':
        mid, low, high = triton.testing.do_bench(lambda: a + b, quantiles=q)
    if impl == 'kernel':
        mid, low, high = triton.testing.do_bench(lambda: vector_sum(a, b), quantiles=q)
    to_gbps = lambda ms: 3 * a.numel() * a.element_size() * 1e-9 / (ms * 1e-3)
    return to_gbps(mid), to_gbps(high), to_gbps(low)


throughput.run(print_data=True, show_plots=True)
