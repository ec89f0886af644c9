# Several independent products C_g = A_g @ B_g of different shapes in one
# persistent launch: the kernel receives tensors holding the addresses of the
# operands (data_ptr()), turns each loaded address back into a pointer with
# .to(tl.pointer_type(...)), and a fixed number of programs walks the tiles
# of all products in turn. A second version reads the operands through
# descriptors made inside the kernel when the GPU has them (compute
# capability 9 or later). Our own program, using the surface of Triton's
# grouped-GEMM tutorial.
import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


def on_cuda():
    return triton.runtime.driver.active.get_current_target().backend == "cuda"


def has_descriptors():
    return on_cuda() and torch.cuda.get_device_capability()[0] >= 9


def sm_count():
    return torch.cuda.get_device_properties("cuda").multi_processor_count


@triton.autotune(
    configs=[
        triton.Config({'TM': 64, 'TN': 64, 'TK': 32, 'PROGRAMS': 4}),
        triton.Config({'TM': 128, 'TN': 64, 'TK': 32, 'PROGRAMS': sm_count()}),
        triton.Config({'TM': 64, 'TN': 128, 'TK': 64, 'PROGRAMS': 2 * sm_count()}),
    ],
    key=['n_groups'],
)
@triton.jit
def grouped_product(a_addrs, b_addrs, c_addrs, dims, strides, n_groups,
                    PROGRAMS: tl.constexpr, TM: tl.constexpr, TN: tl.constexpr, TK: tl.constexpr):
    tile = tl.program_id(0)
    first_tile = 0
    for g in range(n_groups):
        m = tl.load(dims + 3 * g)
        n = tl.load(dims + 3 * g + 1)
        k = tl.load(dims + 3 * g + 2)
        tiles_m = tl.cdiv(m, TM)
        tiles_n = tl.cdiv(n, TN)
        count = tiles_m * tiles_n
        while tile >= first_tile and tile < first_tile + count:
            sa = tl.load(strides + 3 * g)
            sb = tl.load(strides + 3 * g + 1)
            sc = tl.load(strides + 3 * g + 2)
            a = tl.load(a_addrs + g).to(tl.pointer_type(tl.float16))
            b = tl.load(b_addrs + g).to(tl.pointer_type(tl.float16))
            c = tl.load(c_addrs + g).to(tl.pointer_type(tl.float16))
            local = tile - first_tile
            row = local // tiles_n
            col = local % tiles_n
            rm = row * TM + tl.arange(0, TM)
            rn = col * TN + tl.arange(0, TN)
            rk = tl.arange(0, TK)
            a_tile = a + rm[:, None] * sa + rk[None, :]
            b_tile = b + rk[:, None] * sb + rn[None, :]
            acc = tl.zeros((TM, TN), dtype=tl.float32)
            for kk in range(0, tl.cdiv(k, TK)):
                left = k - kk * TK
                x = tl.load(a_tile, mask=(rm[:, None] < m) & (rk[None, :] < left), other=0.0)
                y = tl.load(b_tile, mask=(rk[:, None] < left) & (rn[None, :] < n), other=0.0)
                acc += tl.dot(x, y)
                a_tile += TK
                b_tile += TK * sb
            out = c + rm[:, None] * sc + rn[None, :]
            tl.store(out, acc.to(tl.float16), mask=(rm[:, None] < m) & (rn[None, :] < n))
            tile += PROGRAMS
        first_tile = first_tile + count


@triton.jit
def grouped_product_desc(a_addrs, b_addrs, c_addrs, dims, n_groups, PROGRAMS: tl.constexpr,
                         TM: tl.constexpr, TN: tl.constexpr, TK: tl.constexpr):
    tile = tl.program_id(0)
    first_tile = 0
    for g in range(n_groups):
        m = tl.load(dims + 3 * g)
        n = tl.load(dims + 3 * g + 1)
        k = tl.load(dims + 3 * g + 2)
        tiles_n = tl.cdiv(n, TN)
        count = tl.cdiv(m, TM) * tiles_n
        if tile >= first_tile and tile < first_tile + count:
            a = tl.load(a_addrs + g).to(tl.pointer_type(tl.float16))
            bt = tl.load(b_addrs + g).to(tl.pointer_type(tl.float16))
            c = tl.load(c_addrs + g).to(tl.pointer_type(tl.float16))
            a_desc = tl.make_tensor_descriptor(a, shape=[m, k], strides=[k, 1], block_shape=[TM, TK])
            bt_desc = tl.make_tensor_descriptor(bt, shape=[n, k], strides=[k, 1], block_shape=[TN, TK])
            c_desc = tl.make_tensor_descriptor(c, shape=[m, n], strides=[n, 1], block_shape=[TM, TN])
            while tile >= first_tile and tile < first_tile + count:
                local = tile - first_tile
                om = (local // tiles_n) * TM
                on = (local % tiles_n) * TN
                acc = tl.zeros((TM, TN), dtype=tl.float32)
                for kk in range(0, tl.cdiv(k, TK)):
                    x = a_desc.load([om, kk * TK])
                    y = bt_desc.load([on, kk * TK])
                    acc += tl.dot(x, y.T)
                c_desc.store([om, on], acc.to(tl.float16))
                tile += PROGRAMS
        first_tile = first_tile + count


def grouped(As, Bs, transposed_b=False):
    Cs, a_list, b_list, c_list, dims, strides = [], [], [], [], [], []
    for a, b in zip(As, Bs):
        m, k = a.shape
        n = b.shape[0] if transposed_b else b.shape[1]
        c = torch.empty((m, n), device=DEVICE, dtype=torch.float16)
        Cs.append(c)
        a_list.append(a.data_ptr())
        b_list.append(b.data_ptr())
        c_list.append(c.data_ptr())
        dims += [m, n, k]
        strides += [a.stride(0), b.stride(0), c.stride(0)]
    addrs = [torch.tensor(x, device=DEVICE) for x in (a_list, b_list, c_list)]
    d = torch.tensor(dims, dtype=torch.int32, device=DEVICE)
    s = torch.tensor(strides, dtype=torch.int32, device=DEVICE)
    if transposed_b:
        programs = sm_count()
        grouped_product_desc[(programs,)](addrs[0], addrs[1], addrs[2], d, len(As),
                                          PROGRAMS=programs, TM=64, TN=64, TK=32)
    else:
        grid = lambda meta: (meta['PROGRAMS'],)
        grouped_product[grid](addrs[0], addrs[1], addrs[2], d, s, len(As))
    return Cs


triton.set_allocator(lambda size, alignment, stream: torch.empty(size, device=DEVICE, dtype=torch.int8))
shapes = [(128, 96, 64), (200, 64, 40), (64, 256, 128), (33, 47, 72)]
As = [torch.rand((m, k), device=DEVICE, dtype=torch.float16) for m, n, k in shapes]
Bs = [torch.rand((k, n), device=DEVICE, dtype=torch.float16) for m, n, k in shapes]
Cs = grouped(As, Bs)
for (m, n, k), a, b, c in zip(shapes, As, Bs, Cs):
    ref = torch.matmul(a, b)
    assert torch.allclose(c, ref, atol=1e-2, rtol=1e-2), f"group {m}x{n}x{k} differs"
print(f'{len(shapes)} grouped products agree with torch.matmul')
print(f'chosen config: {grouped_product.best_config}')

if has_descriptors():
    Bts = [b.T.contiguous() for b in Bs]
    Cs = grouped(As, Bts, transposed_b=True)
    for (m, n, k), a, b, c in zip(shapes, As, Bs, Cs):
        assert torch.allclose(c, torch.matmul(a, b), atol=1e-2, rtol=1e-2), f"descriptor group {m}x{n}x{k} differs"
    print('descriptor version agrees')
else:
    print('no tensor descriptors on this device (compute capability < 9): descriptor version skipped')


def torch_loop(As, Bs):
    return [torch.matmul(a, b) for a, b in zip(As, Bs)]


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=['N'],
        x_vals=[2**i for i in range(7, 11)],
        line_arg='provider',
        line_vals=['torch', 'triton'],
        line_names=['torch (one matmul per group)', 'grouped kernel'],
        styles=[('green', '-'), ('blue', '-')],
        ylabel='runtime (ms)',
        plot_name='grouped-products',
        args={},
    ))
def bench(N, provider):
    groups = 4
    As = [torch.rand((N, N), device=DEVICE, dtype=torch.float16) for _ in range(groups)]
    Bs = [torch.rand((N, N), device=DEVICE, dtype=torch.float16) for _ in range(groups)]
    quantiles = [0.5, 0.2, 0.8]
    if provider == 'torch':
        ms, lo, hi = triton.testing.do_bench(lambda: torch_loop(As, Bs), quantiles=quantiles)
    else:
        ms, lo, hi = triton.testing.do_bench(lambda: grouped(As, Bs), quantiles=quantiles)
    return ms, hi, lo


bench.run(show_plots=True, print_data=True)
