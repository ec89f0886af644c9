# The driver's own cost per launch on this host: cuLaunchKernel of a tiny
# add kernel (4 blocks, 4 params) from a ctypes loop, on the legacy default
# stream and on a non-blocking stream, alternating. Python's loop and ctypes
# add about a microsecond of their own to each.
import ctypes, time, torch
cuda = ctypes.CDLL("libcuda.so.1")
torch.zeros(1, device="cuda")  # a context
ptx = b"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry addk(.param .u64 x, .param .u64 y, .param .u64 z, .param .u32 n)
{
 .reg .b32 %r<6>; .reg .b64 %rd<8>; .reg .f32 %f<4>; .reg .pred %p;
 ld.param.u64 %rd1, [x]; ld.param.u64 %rd2, [y]; ld.param.u64 %rd3, [z]; ld.param.u32 %r1, [n];
 mov.u32 %r2, %ctaid.x; mov.u32 %r3, %tid.x; mad.lo.s32 %r4, %r2, 256, %r3;
 setp.ge.s32 %p, %r4, %r1; @%p bra DONE;
 mul.wide.s32 %rd4, %r4, 4; add.s64 %rd5, %rd1, %rd4; add.s64 %rd6, %rd2, %rd4; add.s64 %rd7, %rd3, %rd4;
 ld.global.f32 %f1, [%rd5]; ld.global.f32 %f2, [%rd6]; add.f32 %f3, %f1, %f2; st.global.f32 [%rd7], %f3;
DONE: ret;
}
"""
mod = ctypes.c_void_p(); assert cuda.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx + b"\0")) == 0
fn = ctypes.c_void_p(); assert cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"addk") == 0
x = torch.rand(4096, device="cuda"); z = torch.empty_like(x)
vals = [ctypes.c_uint64(x.data_ptr()), ctypes.c_uint64(x.data_ptr()), ctypes.c_uint64(z.data_ptr()), ctypes.c_uint32(4096)]
params = (ctypes.c_void_p * 4)(*[ctypes.addressof(v) for v in vals])
cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
own = ctypes.c_void_p(); assert cuda.cuStreamCreate(ctypes.byref(own), 1) == 0
L = cuda.cuLaunchKernel
def run(stream, n=20000):
    cuda.cuCtxSynchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        L(fn, 16, 1, 1, 256, 1, 1, 0, stream, params, None)
    t1 = time.perf_counter()
    cuda.cuCtxSynchronize()
    t2 = time.perf_counter()
    return (t1 - t0) / n * 1e6, (t2 - t0) / n * 1e6
for r in range(3):
    for name, s in [("legacy", None), ("own", own)]:
        a, b = run(s)
        print(f"raw cuLaunchKernel {name}: loop {a:.2f} us, with sync {b:.2f} us")
assert torch.allclose(z, 2 * x)
