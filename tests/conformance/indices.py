# program_id / num_programs on a 3-D grid, arange with an offset start.
@triton.jit
def ids(out_ptr):
    x = tl.program_id(0)
    y = tl.program_id(axis=1)
    z = tl.program_id(2)
    nx = tl.num_programs(0)
    ny = tl.num_programs(1)
    lin = (z * ny + y) * nx + x
    tl.store(out_ptr + lin * 3 + tl.arange(0, 4) * 0 + tl.arange(0, 4), tl.arange(10, 14) + lin, mask=tl.arange(0, 4) < 3)

G = (5, 3, 2)
out = torch.zeros(5 * 3 * 2 * 3, dtype=torch.int32, device=DEVICE)
ids[G](out)
want = torch.tensor([[10 + i, 11 + i, 12 + i] for i in range(30)], dtype=torch.int32).reshape(90)
check("program_id/num_programs/arange", out, want)
