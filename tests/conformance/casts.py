# .to() between float and int dtypes, bitcast, fp8 round trips.
@triton.jit
def conv(x_ptr, f16_ptr, bf16_ptr, i32_ptr, u8_ptr, f64_ptr, bits_ptr, back_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(f16_ptr + offs, x.to(tl.float16))
    tl.store(bf16_ptr + offs, x.to(tl.bfloat16))
    tl.store(i32_ptr + offs, (x * 10).to(tl.int32))
    tl.store(u8_ptr + offs, (tl.abs(x) * 10).to(tl.uint8))
    tl.store(f64_ptr + offs, x.to(tl.float64) * 3)
    bits = x.to(tl.int32, bitcast=True)
    tl.store(bits_ptr + offs, bits)
    tl.store(back_ptr + offs, bits.to(tl.float32, bitcast=True))

N = 64
x = torch.randn(N, device=DEVICE) * 4
outs = [torch.zeros(N, dtype=d, device=DEVICE) for d in [torch.float16, torch.bfloat16, torch.int32, torch.uint8, torch.float64, torch.int32, torch.float32]]
conv[(1,)](x, *outs, N=N)
check("to fp16", outs[0], x.half())
check("to bf16", outs[1], x.bfloat16())
check("to int32 truncates", outs[2], (x * 10).int())
check("to uint8", outs[3], (torch.abs(x) * 10).to(torch.uint8))
check("to fp64", outs[4], x.double() * 3)
check("bitcast round trip", outs[6], x)
assert (outs[5] != 0).all(), "bitcast bits"

@triton.jit
def fp8_round(x_ptr, e5_ptr, e4_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(e5_ptr + offs, x.to(tl.float8e5))
    tl.store(e4_ptr + offs, x.to(tl.float8e4nv))

x = torch.randn(N, device=DEVICE) * 3
e5 = torch.zeros(N, dtype=torch.float8_e5m2, device=DEVICE)
e4 = torch.zeros(N, dtype=torch.float8_e4m3fn, device=DEVICE)
fp8_round[(1,)](x, e5, e4, N=N)
check("to fp8e5", e5, x.to(torch.float8_e5m2))
check("to fp8e4nv", e4, x.to(torch.float8_e4m3fn))

# fp8 bits: .to(tl.uint8, bitcast=True) gives the encoded byte and a byte
# bitcast to an fp8 dtype reads as that encoding (the GPU keeps fp8 values
# in f32 registers, so both directions encode or decode).
@triton.jit
def fp8_bits(x_ptr, e5_bits_ptr, e4_bits_ptr, e5_back_ptr, e4_back_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    b5 = x.to(tl.float8e5).to(tl.uint8, bitcast=True)
    b4 = x.to(tl.float8e4nv).to(tl.int8, bitcast=True)
    tl.store(e5_bits_ptr + offs, b5)
    tl.store(e4_bits_ptr + offs, b4)
    tl.store(e5_back_ptr + offs, b5.to(tl.float8e5, bitcast=True).to(tl.float32))
    tl.store(e4_back_ptr + offs, b4.to(tl.float8e4nv, bitcast=True).to(tl.float32))

x = torch.tensor([1.0, -2.0, 448.0, 0.0, 0.5, -0.375, 3.0, 1e-3] * 4, device=DEVICE)
n = x.numel()
bits5 = torch.zeros(n, dtype=torch.uint8, device=DEVICE)
bits4 = torch.zeros(n, dtype=torch.int8, device=DEVICE)
back5 = torch.zeros(n, device=DEVICE)
back4 = torch.zeros(n, device=DEVICE)
fp8_bits[(1,)](x, bits5, bits4, back5, back4, N=n)
# e5m2: 1 = 0x3C, -2 = 0xC0, 448 = 0x5F, 0.5 = 0x38, -0.375 = 0xB6, 3 = 0x42;
# e4m3fn: 1 = 0x38, -2 = 0xC0 (-64 as int8), 448 = 0x7E, 0.5 = 0x30, -0.375 = 0xAC (-84).
assert bits5[:7].tolist() == [0x3C, 0xC0, 0x5F, 0x00, 0x38, 0xB6, 0x42], bits5[:8].tolist()
assert bits4[:7].tolist() == [0x38, -64, 0x7E, 0x00, 0x30, -84, 0x44], bits4[:8].tolist()
check("fp8e5 bits round trip", back5, x.to(torch.float8_e5m2).float())
check("fp8e4nv bits round trip", back4, x.to(torch.float8_e4m3fn).float())
