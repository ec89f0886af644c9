# test lower special *fp32:16, *fp64:16, i32, BLOCK=64
import triton
import triton.language as tl


# libdevice's functions become the IR's math library ops (lib.*), and its
# names for language functions (fabs, fmax) lower as those.
@triton.jit
def special(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    libdevice = tl.extra.cuda.libdevice
    a = libdevice.asin(x) + libdevice.atan2(x, libdevice.fabs(x)) + tl.erf(x)
    tl.store(y_ptr + offs, libdevice.fmax(a, 0.0).to(tl.float64), mask=m)
# expect:
# kernel @special(%0: *fp32 {div=16} "x_ptr", %1: *fp64 {div=16} "y_ptr", %2: i32 "n") {
#   %3 = program_id[0] : i32 loc(10:12)
#   %4 = const[64] : i32 loc(10:12)
#   %5 = mul %3, %4 : i32 loc(10:12)
#   %6 = arange[0, 64] : <64xi32> loc(10:39)
#   %7 = splat %5 : <64xi32> loc(10:12)
#   %8 = add %7, %6 : <64xi32> loc(10:12)
#   %9 = splat %2 : <64xi32> loc(11:9)
#   %10 = cmp[lt] %8, %9 : <64xi1> loc(11:9)
#   %11 = splat %0 : <64x*fp32> loc(12:17)
#   %12 = addptr %11, %8 : <64x*fp32> loc(12:17)
#   %13 = load[mask] %12, %10 : <64xfp32> loc(12:9)
#   %14 = lib.asin %13 : <64xfp32> loc(14:9)
#   %15 = abs %13 : <64xfp32> loc(14:48)
#   %16 = lib.atan2 %13, %15 : <64xfp32> loc(14:29)
#   %17 = add %14, %16 : <64xfp32> loc(14:9)
#   %18 = lib.erf %13 : <64xfp32> loc(14:69)
#   %19 = add %17, %18 : <64xfp32> loc(14:9)
#   %20 = splat %1 : <64x*fp64> loc(15:14)
#   %21 = addptr %20, %8 : <64x*fp64> loc(15:14)
#   %22 = const[0.0] : <64xfp32> loc(15:28)
#   %23 = max %19, %22 : <64xfp32> loc(15:28)
#   %24 = cast %23 : <64xfp64> loc(15:28)
#   store[mask] %21, %24, %10 loc(15:5)
# }
