import os, sys, time, json
import nbformat, nbclient
cells = [
"import torch, triton\nimport triton.language as tl\nimport tilebook\n%device",
"""@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + y, mask=mask)

def add(x, y):
    output = torch.empty_like(x)
    n = output.numel()
    grid = lambda meta: (triton.cdiv(n, meta['BLOCK_SIZE']),)
    add_kernel[grid](x, y, output, n, BLOCK_SIZE=1024)
    return output""",
"""torch.manual_seed(0)
x = torch.rand(98432, device='cuda')
y = torch.rand(98432, device='cuda')
out = add(x, y)
print(f'max difference: {torch.max(torch.abs(out - (x + y))).item()}')""",
"""@triton.testing.perf_report(triton.testing.Benchmark(
    x_names=['size'], x_vals=[2**i for i in range(16, 29, 3)], x_log=True,
    line_arg='provider', line_vals=['tilebook'], line_names=['tilebook'],
    styles=[('blue', '-')], ylabel='GB/s', plot_name='vector-add', args={}))
def benchmark(size, provider):
    x = torch.rand(size, device='cuda', dtype=torch.float32)
    y = torch.rand(size, device='cuda', dtype=torch.float32)
    ms = triton.testing.do_bench(lambda: add(x, y))
    return 3 * x.numel() * x.element_size() * 1e-9 / (ms * 1e-3)
benchmark.run(print_data=True, show_plots=True)""",
"%timeit add(x, y)",
"add_kernel?",
"""t = tilebook.trace(add_kernel[(4,)], x, y, out, 3200, BLOCK_SIZE=1024)
t.mask_view(pid=3)""",
"undefined_name",
"print('the kernel is still alive:', out.shape)",
]
nb = nbformat.v4.new_notebook()
nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
t0 = time.time()
client = nbclient.NotebookClient(nb, kernel_name="tilebook", timeout=300, allow_errors=True)
client.execute()
print(f"executed in {time.time() - t0:.1f} s")
nbformat.write(nb, os.path.join(os.environ.get("OUT", "/tmp"), "gpu_notebook.ipynb"))
for i, c in enumerate(nb.cells):
    print(f"--- cell {i + 1}: {c.source.splitlines()[0][:60]}")
    for o in c.outputs:
        t = o["output_type"]
        if t == "stream":
            print(f"[{o['name']}] {o['text'].rstrip()[:600]}")
        elif t in ("execute_result", "display_data"):
            d = o["data"]
            print(f"[{t}] mimes={sorted(d)}")
            print("   " + d.get("text/plain", "")[:700].replace("\n", "\n   "))
        elif t == "error":
            print(f"[error] {o['ename']}: {o['evalue']}")
