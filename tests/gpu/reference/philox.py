# Reference numbers for tests/conformance/random.py, made with Triton itself
# on a GPU (python3 tests/gpu/reference/philox.py > philox.out): for a few
# seeds (int32, negative, int64) and offsets (int32, near 2^31, int64), the
# four words of tl.randint4x and the bits of tl.rand and tl.randn.
import torch
import triton
import triton.language as tl


@triton.jit
def draw(out, seed, base, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    offs = i + base
    a, b, c, d = tl.randint4x(seed, offs)
    tl.store(out + 0 * n + i, a.to(tl.int32, bitcast=True), mask=m)
    tl.store(out + 1 * n + i, b.to(tl.int32, bitcast=True), mask=m)
    tl.store(out + 2 * n + i, c.to(tl.int32, bitcast=True), mask=m)
    tl.store(out + 3 * n + i, d.to(tl.int32, bitcast=True), mask=m)
    tl.store(out + 4 * n + i, tl.rand(seed, offs).to(tl.int32, bitcast=True), mask=m)
    tl.store(out + 5 * n + i, tl.randn(seed, offs).to(tl.int32, bitcast=True), mask=m)


N = 37
CASES = [(0, 0), (123, 0), (-7, 1000), (2**40 + 5, 2**31 - 20), (99, 2**33 + 3)]
print("PHILOX_REFERENCE = [")
for seed, base in CASES:
    out = torch.zeros(6 * N, dtype=torch.int32, device="cuda")
    draw[(triton.cdiv(N, 16),)](out, seed, base, N, BLOCK=16)
    rows = out.reshape(6, N).cpu().tolist()
    words = [" ".join(f"{v & 0xffffffff:08x}" for v in row) for row in rows]
    print(f"    ({seed}, {base}, [")
    for w in words:
        print(f'        "{w}",')
    print("    ]),")
print("]")
print("# triton", triton.__version__, "torch", torch.__version__)
