# test lower matmul_kernel *fp16:16, *fp16:16, *fp16:16, i32, i32, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, ACTIVATION='leaky_relu'
import torch
import triton
import triton.language as tl

@triton.jit
def matmul_kernel(
        a_ptr, b_ptr, c_ptr,
        M, N, K,
        stride_am, stride_ak,
        stride_bk, stride_bn,
        stride_cm, stride_cn,
        BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
        GROUP_SIZE_M: tl.constexpr,
        ACTIVATION: tl.constexpr
):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu(accumulator)
    c = accumulator.to(tl.float16)

    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)

@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)
# expect:
# kernel @matmul_kernel(%0: *fp16 {div=16} "a_ptr", %1: *fp16 {div=16} "b_ptr", %2: *fp16 {div=16} "c_ptr", %3: i32 "M", %4: i32 "N", %5: i32 {div=16} "K", %6: i32 {div=16} "stride_am", %7: i32 "stride_ak", %8: i32 {div=16} "stride_bk", %9: i32 "stride_bn", %10: i32 {div=16} "stride_cm", %11: i32 "stride_cn") {
#   %12 = program_id[0] : i32 loc(17:11)
#   %13 = const[64] : i32 loc(18:17)
#   %14 = add %3, %13 : i32 loc(18:17)
#   %15 = const[1] : i32 loc(18:17)
#   %16 = sub %14, %15 : i32 loc(18:17)
#   %17 = div %16, %13 : i32 loc(18:17)
#   %18 = add %4, %13 : i32 loc(19:17)
#   %19 = sub %18, %15 : i32 loc(19:17)
#   %20 = div %19, %13 : i32 loc(19:17)
#   %21 = const[8] : i32 loc(20:24)
#   %22 = mul %21, %20 : i32 loc(20:24)
#   %23 = div %12, %22 : i32 loc(21:16)
#   %24 = mul %23, %21 : i32 loc(22:19)
#   %25 = sub %17, %24 : i32 loc(23:24)
#   %26 = min %25, %21 : i32 loc(23:20)
#   %27 = rem %12, %22 : i32 loc(24:29)
#   %28 = rem %27, %26 : i32 loc(24:28)
#   %29 = add %24, %28 : i32 loc(24:13)
#   %30 = div %27, %26 : i32 loc(25:13)
#   %31 = mul %29, %13 : i32 loc(27:16)
#   %32 = arange[0, 64] : <64xi32> loc(27:39)
#   %33 = splat %31 : <64xi32> loc(27:16)
#   %34 = add %33, %32 : <64xi32> loc(27:16)
#   %35 = splat %3 : <64xi32> loc(27:15)
#   %36 = rem %34, %35 : <64xi32> loc(27:15)
#   %37 = mul %30, %13 : i32 loc(28:16)
#   %38 = splat %37 : <64xi32> loc(28:16)
#   %39 = add %38, %32 : <64xi32> loc(28:16)
#   %40 = splat %4 : <64xi32> loc(28:15)
#   %41 = rem %39, %40 : <64xi32> loc(28:15)
#   %42 = arange[0, 32] : <32xi32> loc(29:14)
#   %43 = reshape %36 : <64x1xi32> loc(30:23)
#   %44 = splat %6 : <64x1xi32> loc(30:23)
#   %45 = mul %43, %44 : <64x1xi32> loc(30:23)
#   %46 = reshape %42 : <1x32xi32> loc(30:54)
#   %47 = broadcast %45 : <64x32xi32> loc(30:23)
#   %48 = broadcast %46 : <64x32xi32> loc(30:23)
#   %49 = add %47, %48 : <64x32xi32> loc(30:23)
#   %50 = splat %0 : <64x32x*fp16> loc(30:14)
#   %51 = addptr %50, %49 : <64x32x*fp16> loc(30:14)
#   %52 = reshape %42 : <32x1xi32> loc(31:23)
#   %53 = splat %8 : <32x1xi32> loc(31:23)
#   %54 = mul %52, %53 : <32x1xi32> loc(31:23)
#   %55 = reshape %41 : <1x64xi32> loc(31:53)
#   %56 = broadcast %54 : <32x64xi32> loc(31:23)
#   %57 = broadcast %55 : <32x64xi32> loc(31:23)
#   %58 = add %56, %57 : <32x64xi32> loc(31:23)
#   %59 = splat %1 : <32x64x*fp16> loc(31:14)
#   %60 = addptr %59, %58 : <32x64x*fp16> loc(31:14)
#   %61 = const[0.0] : <64x64xfp32> loc(33:19)
#   %62 = const[32] : i32 loc(34:23)
#   %63 = add %5, %62 : i32 loc(34:23)
#   %64 = sub %63, %15 : i32 loc(34:23)
#   %65 = div %64, %62 : i32 loc(34:23)
#   %66 = const[0] : i32 loc(34:20)
#   %67, %68, %69 = for %66, %65, %15, %51, %61, %60 : <64x32x*fp16>, <64x64xfp32>, <32x64x*fp16> loc(34:5) {
#     ^(%70: i32, %71: <64x32x*fp16>, %72: <64x64xfp32>, %73: <32x64x*fp16>):
#     %74 = mul %70, %62 : i32 loc(35:56)
#     %75 = sub %5, %74 : i32 loc(35:52)
#     %76 = splat %75 : <1x32xi32> loc(35:34)
#     %77 = cmp[lt] %46, %76 : <1x32xi1> loc(35:34)
#     %78 = broadcast %77 : <64x32xi1> loc(35:13)
#     %79 = const[0.0] : <64x32xfp16> loc(35:74)
#     %80 = load[mask, other] %71, %78, %79 : <64x32xfp16> loc(35:13)
#     %81 = splat %75 : <32x1xi32> loc(36:34)
#     %82 = cmp[lt] %52, %81 : <32x1xi1> loc(36:34)
#     %83 = broadcast %82 : <32x64xi1> loc(36:13)
#     %84 = const[0.0] : <32x64xfp16> loc(36:74)
#     %85 = load[mask, other] %73, %83, %84 : <32x64xfp16> loc(36:13)
#     %86 = dot %80, %85, %72 : <64x64xfp32> loc(37:23)
#     %87 = const[32] : <64x32xi32> loc(38:9)
#     %88 = addptr %71, %87 : <64x32x*fp16> loc(38:9)
#     %89 = mul %62, %8 : i32 loc(39:19)
#     %90 = splat %89 : <32x64xi32> loc(39:9)
#     %91 = addptr %73, %90 : <32x64x*fp16> loc(39:9)
#     yield %88, %86, %91 loc(34:5)
#   }
#   %92 = cmp[ge] %68, %61 : <64x64xi1> loc(52:21)
#   %93 = const[0.009999999776482582] : <64x64xfp32> loc(52:32)
#   %94 = mul %93, %68 : <64x64xfp32> loc(52:32)
#   %95 = select %92, %68, %94 : <64x64xfp32> loc(52:12)
#   %96 = cast %95 : <64x64xfp16> loc(42:9)
#   %97 = reshape %34 : <64x1xi32> loc(46:34)
#   %98 = splat %10 : <64x1xi32> loc(46:22)
#   %99 = mul %98, %97 : <64x1xi32> loc(46:22)
#   %100 = splat %2 : <64x1x*fp16> loc(46:14)
#   %101 = addptr %100, %99 : <64x1x*fp16> loc(46:14)
#   %102 = reshape %39 : <1x64xi32> loc(46:65)
#   %103 = broadcast %101 : <64x64x*fp16> loc(46:14)
#   %104 = broadcast %102 : <64x64xi32> loc(46:14)
#   %105 = addptr %103, %104 : <64x64x*fp16> loc(46:14)
#   %106 = splat %3 : <64x1xi32> loc(47:15)
#   %107 = cmp[lt] %97, %106 : <64x1xi1> loc(47:15)
#   %108 = splat %4 : <1x64xi32> loc(47:40)
#   %109 = cmp[lt] %102, %108 : <1x64xi1> loc(47:40)
#   %110 = broadcast %107 : <64x64xi1> loc(47:14)
#   %111 = broadcast %109 : <64x64xi1> loc(47:14)
#   %112 = and %110, %111 : <64x64xi1> loc(47:14)
#   store[mask] %105, %96, %112 loc(48:5)
# }
