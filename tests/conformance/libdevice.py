# libdevice (`from triton.language.extra import libdevice`) and tl.erf:
# every function of one and of two floats tilebook has, in fp32, fp64 and
# fp16, against Python's math module; the names that are language functions
# already (fabs, fmin, pow, ...) as those.
import math
from triton.language.extra import libdevice
from triton.language.extra.cuda import libdevice as cuda_libdevice

# (name, Python's function, domain (lo, hi)); the kernel's F-th branch calls it.
ONE = [
    ("acos", math.acos, (-0.99, 0.99)),
    ("acosh", math.acosh, (1.01, 5.0)),
    ("asin", math.asin, (-0.99, 0.99)),
    ("asinh", math.asinh, (-5.0, 5.0)),
    ("atan", math.atan, (-5.0, 5.0)),
    ("atanh", math.atanh, (-0.9, 0.9)),
    ("cbrt", lambda v: math.copysign(abs(v) ** (1 / 3), v), (-8.0, 8.0)),
    ("cosh", math.cosh, (-3.0, 3.0)),
    ("erf", math.erf, (-3.0, 3.0)),
    ("erfc", math.erfc, (-2.0, 2.0)),
    ("exp10", lambda v: 10.0 ** v, (-2.0, 2.0)),
    ("expm1", math.expm1, (-1.0, 1.0)),
    ("lgamma", math.lgamma, (0.5, 6.0)),
    ("log10", math.log10, (0.1, 100.0)),
    ("log1p", math.log1p, (-0.5, 3.0)),
    ("sinh", math.sinh, (-3.0, 3.0)),
    ("tan", math.tan, (-1.2, 1.2)),
    ("tanh", math.tanh, (-4.0, 4.0)),
    ("tgamma", math.gamma, (0.5, 5.0)),
    ("trunc", math.trunc, (-9.0, 9.0)),
    ("tl.erf", math.erf, (-3.0, 3.0)),
    ("fabs", abs, (-3.0, 3.0)),
    ("exp", math.exp, (-3.0, 3.0)),
]


@triton.jit
def one_arg(x_ptr, out_ptr, n, F: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    if F == 0:
        y = libdevice.acos(x)
    elif F == 1:
        y = libdevice.acosh(x)
    elif F == 2:
        y = libdevice.asin(x)
    elif F == 3:
        y = libdevice.asinh(x)
    elif F == 4:
        y = libdevice.atan(x)
    elif F == 5:
        y = libdevice.atanh(x)
    elif F == 6:
        y = libdevice.cbrt(x)
    elif F == 7:
        y = libdevice.cosh(x)
    elif F == 8:
        y = libdevice.erf(x)
    elif F == 9:
        y = libdevice.erfc(x)
    elif F == 10:
        y = libdevice.exp10(x)
    elif F == 11:
        y = libdevice.expm1(x)
    elif F == 12:
        y = libdevice.lgamma(x)
    elif F == 13:
        y = libdevice.log10(x)
    elif F == 14:
        y = libdevice.log1p(x)
    elif F == 15:
        y = libdevice.sinh(x)
    elif F == 16:
        y = libdevice.tan(x)
    elif F == 17:
        y = libdevice.tanh(x)
    elif F == 18:
        y = libdevice.tgamma(x)
    elif F == 19:
        y = libdevice.trunc(x)
    elif F == 20:
        y = tl.erf(x)
    elif F == 21:
        y = cuda_libdevice.fabs(x)
    elif F == 22:
        y = libdevice.exp(x)
    tl.store(out_ptr + offs, y, mask=m)


n = 300
for i, (name, ref, (lo, hi)) in enumerate(ONE):
    for dt, tol in [(torch.float32, 2e-5), (torch.float64, 1e-12), (torch.float16, 3e-3)]:
        x = (torch.rand(n, device=DEVICE, dtype=torch.float64) * (hi - lo) + lo).to(dt)
        out = torch.zeros(n, device=DEVICE, dtype=dt)
        one_arg[(triton.cdiv(n, 128),)](x, out, n, F=i, BLOCK=128)
        want = torch.tensor([ref(v) for v in x.double().tolist()], dtype=torch.float64)
        # fp16 results are rounded to fp16: compare with the reference rounded too.
        want = want.to(dt).double()
        check(f"libdevice {name} {dt}", out, want, atol=tol, rtol=tol)

TWO = [
    ("atan2", math.atan2),
    ("hypot", math.hypot),
    ("copysign", math.copysign),
    ("fmod", math.fmod),
    ("remainder", math.remainder),
    ("fdim", lambda a, b: max(a - b, 0.0)),
    ("fmax", max),
    ("fmin", min),
    ("pow", math.pow),
]


@triton.jit
def two_args(x_ptr, y_ptr, out_ptr, n, F: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.load(y_ptr + offs, mask=m, other=1.0)
    if F == 0:
        r = libdevice.atan2(x, y)
    elif F == 1:
        r = libdevice.hypot(x, y)
    elif F == 2:
        r = libdevice.copysign(x, y)
    elif F == 3:
        r = libdevice.fmod(x, y)
    elif F == 4:
        r = libdevice.remainder(x, y)
    elif F == 5:
        r = libdevice.fdim(x, y)
    elif F == 6:
        r = libdevice.fmax(x, y)
    elif F == 7:
        r = libdevice.fmin(x, y)
    elif F == 8:
        r = libdevice.pow(x, y)
    tl.store(out_ptr + offs, r, mask=m)


for i, (name, ref) in enumerate(TWO):
    for dt, tol in [(torch.float32, 2e-5), (torch.float64, 1e-12)]:
        x = (torch.rand(n, device=DEVICE, dtype=torch.float64) * 4 + 0.25).to(dt)
        y = (torch.rand(n, device=DEVICE, dtype=torch.float64) * 3 + 0.5).to(dt)
        if name in ("atan2", "copysign"):
            x = x - 2.0
            y = y - 2.0
        out = torch.zeros(n, device=DEVICE, dtype=dt)
        two_args[(triton.cdiv(n, 128),)](x, y, out, n, F=i, BLOCK=128)
        want = torch.tensor(
            [ref(a, b) for a, b in zip(x.double().tolist(), y.double().tolist())],
            dtype=torch.float64,
        )
        # pow on the GPU is exp2(y * log2(x)) in fp32, as Triton's fast path.
        t = 2e-4 if (name == "pow" and dt == torch.float32) else tol
        check(f"libdevice {name} {dt}", out, want, atol=t, rtol=t)
