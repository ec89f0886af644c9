# test lower add_kernel *fp32:16, *fp32:16, *fp32:16, i32:16, BLOCK_SIZE=1024
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)
# expect:
# kernel @add_kernel(%0: *fp32 {div=16} "x_ptr", %1: *fp32 {div=16} "y_ptr", %2: *fp32 {div=16} "output_ptr", %3: i32 {div=16} "n_elements") {
#   %4 = program_id[0] : i32 loc(8:11)
#   %5 = const[1024] : i32 loc(9:19)
#   %6 = mul %4, %5 : i32 loc(9:19)
#   %7 = arange[0, 1024] : <1024xi32> loc(10:29)
#   %8 = splat %6 : <1024xi32> loc(10:15)
#   %9 = add %8, %7 : <1024xi32> loc(10:15)
#   %10 = splat %3 : <1024xi32> loc(11:12)
#   %11 = cmp[lt] %9, %10 : <1024xi1> loc(11:12)
#   %12 = splat %0 : <1024x*fp32> loc(12:17)
#   %13 = addptr %12, %9 : <1024x*fp32> loc(12:17)
#   %14 = load[mask] %13, %11 : <1024xfp32> loc(12:9)
#   %15 = splat %1 : <1024x*fp32> loc(13:17)
#   %16 = addptr %15, %9 : <1024x*fp32> loc(13:17)
#   %17 = load[mask] %16, %11 : <1024xfp32> loc(13:9)
#   %18 = add %14, %17 : <1024xfp32> loc(14:14)
#   %19 = splat %2 : <1024x*fp32> loc(15:14)
#   %20 = addptr %19, %9 : <1024x*fp32> loc(15:14)
#   store[mask] %20, %18, %11 loc(15:5)
# }
