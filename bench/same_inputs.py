# The published tutorials 04-09, same inputs on both sides: this one file runs
# under python3 (Triton and torch) and under `tilebook run`, loads each
# tutorial's kernels and wrappers from a copy of Triton's published files
# (kept outside the repository), calls them on inputs made the same way on
# both sides, and writes every output to OUT/<side>/<case>.out (a text line: dtype
# and shape; then the values as little-endian fp32).
# bench/same_inputs_compare.py then compares two sides element by element.
#
#   python3 bench/same_inputs.py PUBLISHED_DIR OUT
#   tilebook run --device cuda bench/same_inputs.py PUBLISHED_DIR OUT
#   tilebook run --device cpu bench/same_inputs.py PUBLISHED_DIR OUT   (side "tilebook-cpu")
#   python3 bench/same_inputs_compare.py OUT   (every side against torch's fp32
#   reference, then tilebook against triton)
#
# Inputs come from integer hashing on the host, converted exactly (no random
# generator, no transcendental function), so both sides start from the same
# bits. Each tutorial's module-level benchmarks are skipped (perf_report's
# `run` does nothing while a tutorial loads); its module-level checks run.
import array
import os
import sys
import time

import torch
import triton
import triton.testing

PUBLISHED, OUT = sys.argv[1], sys.argv[2]
TILEBOOK = sys.implementation.name == "rustpython"
DEVICE = triton.runtime.driver.active.get_active_torch_device()
ON_CPU = TILEBOOK and not torch.cuda.is_available()
SIDE = ("tilebook-cpu" if ON_CPU else "tilebook") if TILEBOOK else "triton"
os.makedirs(os.path.join(OUT, SIDE), exist_ok=True)
ONLY = os.environ.get("SAME_INPUTS_ONLY", "").split(",") if os.environ.get("SAME_INPUTS_ONLY") else None


def det(shape, dtype, seed, scale=1.0, offset=0.0):
    """Values in [-scale, scale) + offset from an integer hash of the index."""
    n = 1
    for s in shape:
        n *= s
    i = torch.arange(n, dtype=torch.int64)
    h = (i * 2654435761 + (seed + 1) * 40503) % 65521
    x = (h - 32760).to(torch.float32) * (scale / 32768.0) + offset
    return x.reshape(shape).to(dtype).to(DEVICE)


REFERENCE = SIDE == "triton"   # python3 also writes torch's answers in fp32
if REFERENCE:
    os.makedirs(os.path.join(OUT, "reference"), exist_ok=True)


def save(name, t, side=None):
    t = t.detach()
    flat = t.float().cpu().reshape(-1).tolist()
    with open(os.path.join(OUT, side or SIDE, name + ".out"), "wb") as f:
        f.write(f"{str(t.dtype).replace('torch.', '')} {' '.join(str(d) for d in t.shape)}\n".encode())
        f.write(array.array("f", flat).tobytes())   # every output dtype fits fp32 exactly


def ref(name, t, like):
    """torch's answer, computed in fp32 (or from fp32 operands), rounded once
    to the dtype of the output it checks."""
    if REFERENCE:
        save(name, t.to(like.dtype), "reference")


class _Skipped:
    def __init__(self, fn):
        self.fn = fn

    def run(self, *args, **kwargs):
        pass


def load(stem):
    """Execute a published tutorial as a module named `published` (its
    `__main__` block does not run) and return its namespace."""
    path = os.path.join(PUBLISHED, stem + ".py")
    with open(path) as f:
        src = f.read()
    ns = {"__name__": "published", "__file__": path}
    keep = triton.testing.perf_report
    triton.testing.perf_report = lambda benchmarks: (lambda fn: _Skipped(fn))
    try:
        exec(compile(src, path, "exec"), ns)
    except Exception as e:
        # What the tutorial defined before the failing line is still used
        # (07's second launch names a libdevice path inside Triton's tree).
        print(f"{SIDE}: {stem}: module-level code stopped: {type(e).__name__}: {e}", flush=True)
    finally:
        triton.testing.perf_report = keep
    return ns


def case(stem):
    def wrap(fn):
        if ONLY is not None and stem[:2] not in ONLY:
            return fn
        t0 = time.perf_counter()
        ns = load(stem)
        t1 = time.perf_counter()
        fn(ns)
        print(f"{SIDE}: {stem}: loaded in {t1 - t0:.1f} s, cases in {time.perf_counter() - t1:.1f} s", flush=True)
        return fn
    return wrap


@case("04-low-memory-dropout")
def t04(ns):
    n = 100_003
    x = det((n,), torch.float32, 1)
    keep = (det((n,), torch.float32, 2) > 0.0).to(torch.int32)
    out = ns["dropout"](x, x_keep=keep, p=0.375)
    save("04_dropout", out)
    ref("04_dropout", torch.where(keep != 0, x / (1 - 0.375), 0.0), out)
    for seed in (123, 2**31 - 1):
        save(f"04_seeded_dropout_{seed}", ns["seeded_dropout"](x, p=0.5, seed=seed))


@case("05-layer-norm")
def t05(ns):
    for m, n in ((257, 1024), (100, 3000)):
        x = det((m, n), torch.float16, 3, 0.5, -2.3).requires_grad_(True)
        w = det((n,), torch.float16, 4, 0.5, 0.5).requires_grad_(True)
        b = det((n,), torch.float16, 5, 0.5, 0.5).requires_grad_(True)
        dy = det((m, n), torch.float16, 6, 0.1)
        y = ns["layer_norm"](x, (n,), w, b, 1e-5)
        y.backward(dy)
        tag = f"{m}x{n}"
        for name, t in (("y", y), ("dx", x.grad), ("dw", w.grad), ("db", b.grad)):
            save(f"05_{name}_{tag}", t)
        if REFERENCE:
            xf, wf, bf = (t.detach().float().requires_grad_(True) for t in (x, w, b))
            yf = torch.nn.functional.layer_norm(xf, (n,), wf, bf, 1e-5)
            yf.backward(dy.float())
            for name, r, t in (("y", yf, y), ("dx", xf.grad, x.grad), ("dw", wf.grad, w.grad), ("db", bf.grad, b.grad)):
                ref(f"05_{name}_{tag}", r, t)


@case("06-fused-attention")
def t06(ns):
    attention = ns["attention"]
    for d in (64, 128):
        for causal in (False, True):
            shape = (1, 1, 768, d)
            q = det(shape, torch.float16, 7, 1.0).requires_grad_(True)
            k = det(shape, torch.float16, 8, 1.0).requires_grad_(True)
            v = det(shape, torch.float16, 9, 1.0).requires_grad_(True)
            do = det(shape, torch.float16, 10, 1.0)
            o = attention(q, k, v, causal, 0.5, False)
            o.backward(do)
            tag = f"d{d}_{'causal' if causal else 'full'}"
            save(f"06_o_{tag}", o)
            save(f"06_dq_{tag}", q.grad)
            save(f"06_dk_{tag}", k.grad)
            save(f"06_dv_{tag}", v.grad)
            if REFERENCE:
                qf, kf, vf = (t.detach().float().requires_grad_(True) for t in (q, k, v))
                s_ = torch.matmul(qf, kf.transpose(2, 3)) * 0.5
                if causal:
                    s_ = s_.masked_fill(torch.ones(768, 768, device=DEVICE).tril() == 0, float("-inf"))
                of = torch.matmul(torch.softmax(s_, dim=-1), vf)
                of.backward(do.float())
                for name, r in (("o", of), ("dq", qf.grad), ("dk", kf.grad), ("dv", vf.grad)):
                    ref(f"06_{name}_{tag}", r, o)
    if hasattr(torch, "float8_e5m2"):
        # The tutorial's fp8 forward: operands in e5m2, v through a transposed copy.
        shape = (1, 1, 768, 64)
        q = det(shape, torch.float16, 11).to(torch.float8_e5m2)
        k = det(shape, torch.float16, 12).to(torch.float8_e5m2)
        v = det(shape, torch.float16, 13).permute(0, 1, 3, 2).contiguous().permute(0, 1, 3, 2)
        v = v.to(torch.float8_e5m2)
        o = attention(q, k, v, False, 0.5, False).half()
        save("06_o_fp8_d64_full", o)
        if REFERENCE:
            p_ = torch.softmax(torch.matmul(q.float(), k.float().transpose(2, 3)) * 0.5, dim=-1)
            ref("06_o_fp8_d64_full", torch.matmul(p_, v.float()), o)


@case("07-extern-functions")
def t07(ns):
    n = 98_432
    x = det((n,), torch.float32, 14, 1.0)
    out = torch.empty_like(x)
    ns["asin_kernel"][(triton.cdiv(n, 1024),)](x, out, n, BLOCK_SIZE=1024)
    save("07_asin", out)
    ref("07_asin", torch.asin(x), out)


@case("08-grouped-gemm")
def t08(ns):
    sizes = [(512, 512, 512), (512, 256, 384), (256, 512, 128), (128, 128, 64)]
    a = [det((m, k), torch.float16, 20 + i, 0.5) for i, (m, n, k) in enumerate(sizes)]
    b = [det((k, n), torch.float16, 30 + i, 0.5) for i, (m, n, k) in enumerate(sizes)]
    for i, c in enumerate(ns["group_gemm_fn"](a, b)):
        save(f"08_group_{i}", c)
        ref(f"08_group_{i}", a[i].float() @ b[i].float(), c)
    if ns["supports_tma"]():
        bt = [x.T.contiguous() for x in b]
        for i, c in enumerate(ns["group_gemm_tma_fn"](a, bt)):
            save(f"08_group_tma_{i}", c)
            ref(f"08_group_tma_{i}", a[i].float() @ b[i].float(), c)


@case("09-persistent-matmul")
def t09(ns):
    for m, n, k in ((500, 376, 520), (512, 512, 512)):
        a = det((m, k), torch.float16, 40, 0.5)
        b = det((n, k), torch.float16, 41, 0.5)   # the tutorial's b, pre-transposed
        tag = f"{m}x{n}x{k}"
        want = a.float() @ b.float().T
        for kind in ("naive", "persistent", "tma", "tma_persistent", "descriptor_persistent"):
            ref(f"09_{kind}_{tag}", want, a)
        save(f"09_naive_{tag}", ns["matmul"](a, b.T))
        save(f"09_persistent_{tag}", ns["matmul_persistent"](a, b.T))
        if ns["supports_tma"]():
            save(f"09_tma_{tag}", ns["matmul_tma"](a, b, False))
            save(f"09_tma_persistent_{tag}", ns["matmul_tma_persistent"](a, b, False))
            save(f"09_descriptor_persistent_{tag}", ns["matmul_descriptor_persistent"](a, b, False))

print(f"{SIDE}: outputs in {os.path.join(OUT, SIDE)}")
