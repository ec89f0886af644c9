# Triton's type promotion: mixed dtypes, weakly typed Python scalars,
# int / int -> fp32, results stored (and converted) into the output dtype.
@triton.jit
def mixed(a_ptr, b_ptr, c_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs)  # fp16
    b = tl.load(b_ptr + offs)  # int32
    c = tl.load(c_ptr + offs)  # fp32
    s1 = a + b            # fp16
    s2 = a * c            # fp32
    s3 = b / 4            # fp32 (true division of ints)
    s4 = a * 3            # fp16: the Python int does not widen it
    s5 = b + 2.5          # fp32: a float scalar meets an int tensor
    tl.static_assert(s1.dtype == tl.float16)
    tl.static_assert(s2.dtype == tl.float32)
    tl.static_assert(s3.dtype == tl.float32)
    tl.static_assert(s4.dtype == tl.float16)
    tl.static_assert(s5.dtype == tl.float32)
    tl.store(out_ptr + 0 * N + offs, s1)
    tl.store(out_ptr + 1 * N + offs, s2)
    tl.store(out_ptr + 2 * N + offs, s3)
    tl.store(out_ptr + 3 * N + offs, s4)
    tl.store(out_ptr + 4 * N + offs, s5)

N = 32
a = torch.randn(N, device=DEVICE).half()
b = torch.randint(-20, 20, (N,), dtype=torch.int32, device=DEVICE)
c = torch.randn(N, device=DEVICE)
out = torch.zeros(5 * N, device=DEVICE)
mixed[(1,)](a, b, c, out, N=N)
o = out.reshape(5, N)
check("fp16 + int32 -> fp16", o[0], (a.float() + b.float()).half(), atol=2e-2)
check("fp16 * fp32 -> fp32", o[1], a.float() * c)
check("int32 / 4 -> fp32", o[2], b.float() / 4)
check("fp16 * 3 stays fp16", o[3], (a.float() * 3).half(), atol=2e-2)
check("int32 + 2.5 -> fp32", o[4], b.float() + 2.5)
