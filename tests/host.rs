//! The host language on the Python VM, with the session's own library:
//! what used to be wrong or missing in the hand-written interpreter.

use tilebook_session::Session;

fn run(s: &mut Session, cell: &str) -> String {
    let r = s.run_cell(cell);
    assert!(r.ok, "cell failed:\n{cell}\n{}", r.text());
    r.text()
}

fn session() -> Session {
    let mut s = Session::new();
    s.announce = false;
    s.timing = false;
    s
}

#[test]
fn global_and_nonlocal_update_the_right_scope() {
    let mut s = session();
    let out = run(
        &mut s,
        "count = 0\ndef bump():\n    global count\n    count += 1\nbump(); bump()\n\
         def make():\n    t = 0\n    def add(n):\n        nonlocal t\n        t += n\n        return t\n    return add\n\
         f = make()\nf(3)\nprint(count, f(4))",
    );
    assert_eq!(out, "2 7\n");
}

#[test]
fn classes_and_names_persist_across_cells() {
    let mut s = session();
    run(&mut s, "class Acc:\n    def __init__(self):\n        self.n = 0\n    def add(self, k):\n        self.n += k\n        return self\na = Acc()");
    assert_eq!(run(&mut s, "a.add(2).add(3).n"), "5\n");
    assert_eq!(run(&mut s, "print(__name__)"), "__main__\n");
}

#[test]
fn tensors_are_torch_tensors_with_torch_results() {
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\nx = torch.arange(0, 6, dtype=torch.float32).reshape(2, 3)\n\
         print(type(x), isinstance(x, torch.Tensor))\nprint(x.sum())\nm = x.max(dim=1)\n\
         print(m.values, m.indices)\nv, i = torch.max(x, dim=1)\nprint(v, i, m[0])\nprint(f'{x.sum()}')",
    );
    assert_eq!(
        out,
        "<class 'torch.Tensor'> True\ntensor(15.)\ntensor([2., 5.]) tensor([2, 2])\n\
         tensor([2., 5.]) tensor([2, 2]) tensor([2., 5.])\n15.0\n"
    );
    assert_eq!(
        run(&mut s, "m"),
        "torch.return_types.max(\nvalues=tensor([2., 5.]),\nindices=tensor([2, 2]))\n"
    );
}

#[test]
fn an_unknown_tensor_attribute_is_an_error_where_it_is_read() {
    // Found by the browser test: `x.nosuch` used to be a bound method that
    // failed only when called, so `hasattr` said yes to every name and
    // `x.data` printed `<bound method data>`.
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\nx = torch.ones(3, requires_grad=True)\n\
         print(hasattr(x, 'nosuch'), hasattr(x, 'sum'), x.itemsize)\n\
         d = x.data\nprint(d, d.requires_grad)\n\
         try:\n    x.mT\nexcept AttributeError as e:\n    print(e)",
    );
    assert_eq!(
        out,
        "False True 4\ntensor([1., 1., 1.]) False\n\
         'Tensor' object has no attribute 'mT' in tilebook; did you mean `T` or `t`?\n"
    );
}

#[test]
fn whole_tensor_sums_agree_on_every_layout() {
    // Contiguous fp32 tensors take a fast path; its answers must be the
    // general loop's (shape with keepdim, empty sums, means, views).
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\nx = torch.arange(12, dtype=torch.float32).reshape(3, 4) / 8\n\
         print(x.sum().item(), x.t().sum().item(), x.mean().item(), x.t().mean().item())\n\
         print(x.sum(0, keepdim=True).shape, torch.zeros(0).sum().item(), x.sum().dtype)\n\
         print(torch.allclose(x, x.t().t()), torch.allclose(x, x + 1e-3), torch.allclose(x, x + 1e-9))",
    );
    assert_eq!(
        out,
        "8.25 8.25 0.6875 0.6875\ntorch.Size([1, 4]) 0.0 torch.float32\nTrue False True\n"
    );
}

#[test]
fn isclose_and_allclose_decide_as_torch_does() {
    // `equal_nan=` was ignored, `isclose` called infinities apart and
    // zipped tensors of different shapes instead of broadcasting them.
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\nnan, inf = float('nan'), float('inf')\n\
         a = torch.tensor([1.0, inf, nan, -inf, 2.0])\nb = torch.tensor([1.0, inf, nan, inf, 2.0000001])\n\
         print(torch.isclose(a, b).tolist(), torch.isclose(a, b, equal_nan=True).tolist())\n\
         print(torch.allclose(a[:3], b[:3]), torch.allclose(a[:3], b[:3], equal_nan=True), torch.allclose(a, b, equal_nan=True))\n\
         print(torch.isclose(a, torch.tensor(2.0)).tolist())",
    );
    assert_eq!(
        out,
        "[True, True, False, False, True] [True, True, True, False, True]\n\
         False True False\n[False, False, False, False, True]\n"
    );
}

#[test]
fn dir_of_a_tensor_lists_what_getattr_answers() {
    // `dir(x)` came from a list of its own and had drifted from the
    // methods (no `sort`, `tan`, `itemsize`, ...).
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\nx = torch.ones(3)\nnames = dir(x)\n\
         print(all(hasattr(x, n) for n in names), len(names) > 80)\n\
         print([n for n in ['shape', 'itemsize', 'sort', 'tan', 'log1p', 'sum'] if n not in names])",
    );
    assert_eq!(out, "True True\n[]\n");
}

#[test]
fn a_kernel_defined_under_main_guard_and_in_a_with_block_launches() {
    let mut s = session();
    let out = run(
        &mut s,
        "import torch, triton, contextlib\nimport triton.language as tl\n\
         if __name__ == '__main__':\n    with contextlib.nullcontext():\n        @triton.jit\n        def twice(p, n, B: tl.constexpr):\n            o = tl.arange(0, B)\n            tl.store(p + o, tl.load(p + o, mask=o < n) * 2, mask=o < n)\n\
         x = torch.ones(10, device='cuda')\nclass Launcher:\n    def go(self):\n        twice[(1,)](x, 10, B=16)\n\
         Launcher().go()\nprint(x.sum().item())",
    );
    assert_eq!(out, "20.0\n");
}

#[test]
fn an_extension_module_import_says_why() {
    let mut s = session();
    let r = s.run_cell("import numpy");
    let (kind, msg, line) = r.error().expect("an error");
    assert_eq!(kind, "ModuleNotFoundError");
    assert!(msg.contains("extension module"), "{msg}");
    assert_eq!(line, Some(1));
}

#[test]
fn ctrl_c_stops_a_cpu_backend_launch_within_100_ms() {
    let mut s = session();
    run(
        &mut s,
        "import torch, triton\nimport triton.language as tl\n@triton.jit\ndef spin(p, B: tl.constexpr):\n    acc = tl.zeros((B,), tl.float32)\n    for i in range(2000):\n        acc = acc * 0.5 + 1.0\n    tl.store(p + tl.program_id(0) * B + tl.arange(0, B), acc)\nx = torch.empty(4096 * 1024, device='cuda')\nspin[(1,)](x, B=1024)",
    );
    let flag = s.interrupt.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        let at = std::time::Instant::now();
        flag.store(true, std::sync::atomic::Ordering::Relaxed);
        at
    });
    let r = s.run_cell("spin[(4096,)](x, B=1024)");
    let ended = std::time::Instant::now();
    let asked = t.join().unwrap();
    assert_eq!(
        r.error().map(|e| e.0),
        Some("KeyboardInterrupt"),
        "{}",
        r.text()
    );
    let latency = ended.duration_since(asked);
    assert!(
        latency.as_millis() <= 100,
        "stopped {latency:?} after Ctrl-C"
    );
    // The session goes on, and the next cell is not interrupted.
    assert_eq!(run(&mut s, "print(1 + 1)"), "2\n");
}

#[test]
fn a_changed_global_or_callee_is_seen_by_the_next_launch() {
    let mut s = session();
    run(
        &mut s,
        "import torch, triton\nimport triton.language as tl\nFACTOR = 2\n@triton.jit\ndef f(x):\n    return x + 1\n@triton.jit\ndef k(p, B: tl.constexpr):\n    o = tl.arange(0, B)\n    tl.store(p + o, f(tl.load(p + o)) * FACTOR)\nx = torch.ones(8, device='cuda')\nk[(1,)](x, B=8)\nprint(x[0].item())",
    );
    assert_eq!(
        run(&mut s, "FACTOR = 3\nk[(1,)](x, B=8)\nprint(x[0].item())"),
        "15.0\n"
    );
    assert_eq!(
        run(
            &mut s,
            "@triton.jit\ndef f(x):\n    return x - 1\nk[(1,)](x, B=8)\nprint(x[0].item())"
        ),
        "42.0\n"
    );
}

/// Autograd: gradients of a composite expression and of layer_norm agree
/// with central finite differences (float64), a custom Function's backward
/// is used, and an operation without a rule raises instead of dropping the
/// gradient.
#[test]
fn autograd_gradients_match_finite_differences() {
    let mut s = session();
    let program = tilebook_tests::FINITE_DIFFERENCES.to_string()
        + r#"
torch.manual_seed(0)

x = torch.randn(3, 4, dtype=torch.float64)
w = torch.randn(4, dtype=torch.float64)
b = torch.randn(4, dtype=torch.float64)

def composite(t):
    return ((t * w - b / 2.0) @ torch.ones(4, 2, dtype=torch.float64)).exp().mean()

def normed(t):
    return (torch.nn.functional.layer_norm(t, (4,), w, b, 1e-5) * torch.arange(12, dtype=torch.float64).reshape(3, 4)).sum()

for f in (composite, normed):
    with torch.no_grad():
        want = numeric(f, x.clone())
    xs = x.clone().requires_grad_(True)
    f(xs).backward()
    print(f.__name__, torch.allclose(xs.grad, want, atol=1e-6, rtol=1e-5))

class Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        ctx.save_for_backward(t)
        return t * 2
    @staticmethod
    def backward(ctx, g):
        (t,) = ctx.saved_tensors
        return g * 2 + 100

v = torch.ones(3, requires_grad=True)
Twice.apply(v).sum().backward()
print(v.grad.tolist())
try:
    v.log().sum()
except NotImplementedError as e:
    print("NotImplementedError", "Tensor.log" in str(e))
try:
    torch.ones(2).sum().backward()
except RuntimeError as e:
    print("RuntimeError", e)
"#;
    let out = run(&mut s, &program);
    assert_eq!(
        out,
        "composite True\nnormed True\n[102.0, 102.0, 102.0]\nNotImplementedError True\nRuntimeError element 0 of tensors does not require grad and does not have a grad_fn\n"
    );
}

/// Device indices on the CPU backend: no GPUs are counted, `cuda:0` is the
/// host-memory 'cuda' device the tutorials use, and any other index is
/// refused as torch refuses a device that does not exist, never run on
/// another device than the one named (issue 22's device-index logic).
#[test]
fn cuda_indices_are_checked_against_the_devices_present() {
    let mut s = session();
    assert_eq!(
        run(
            &mut s,
            "import torch\nprint(torch.cuda.device_count(), torch.cuda.is_available())"
        ),
        "0 False\n"
    );
    assert_eq!(
        run(&mut s, "x = torch.ones(2, device='cuda:0')\ntorch.cuda.set_device(0)\nwith torch.cuda.device(0):\n    y = x + 1\nprint(y.device, torch.device('cuda', 0))"),
        "cuda:0 cuda:0\n"
    );
    for (bad, kind) in [
        ("torch.ones(4, device='cuda:1')", "RuntimeError"),
        ("x.to('cuda:2')", "RuntimeError"),
        ("torch.device('cuda', 3)", "RuntimeError"),
        ("torch.device('cuda', -1)", "RuntimeError"),
        ("torch.cuda.set_device(1)", "RuntimeError"),
        ("torch.cuda.get_device_properties(1)", "RuntimeError"),
        ("with torch.cuda.device(1):\n    pass", "RuntimeError"),
        ("torch.cuda.set_device('cpu')", "ValueError"),
    ] {
        let r = s.run_cell(bad);
        let (k, msg, _) = r.error().unwrap_or_else(|| panic!("no error from {bad}"));
        assert_eq!(k, kind, "{bad}: {msg}");
        if kind == "RuntimeError" && !bad.contains("-1") {
            assert!(msg.contains("invalid device ordinal"), "{bad}: {msg}");
        }
    }
}

/// `tilebook.distributed` on one device: collectives over a list of
/// tensors give NCCL's results (here all on the CPU backend's cuda:0).
#[test]
fn collectives_over_a_list_of_tensors_on_one_device() {
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\nimport tilebook.distributed as dist\n\
         xs = [torch.arange(4, dtype=torch.float32, device='cuda') * (i + 1) for i in range(3)]\n\
         dist.all_reduce(xs)\nprint(xs[2].tolist())\n\
         m = [torch.tensor([1., 5.]), torch.tensor([4., 0.])]\ndist.all_reduce(m, op='min')\nprint(m[0].tolist())\n\
         ins = [torch.tensor([1, 2]), torch.tensor([3, 4])]\nouts = [torch.zeros(4, dtype=torch.int64) for _ in ins]\n\
         dist.all_gather(outs, ins)\nprint(outs[1].tolist())\n\
         rs = [torch.zeros(2), torch.zeros(2)]\ndist.reduce_scatter(rs, [torch.arange(4.), torch.arange(4.) * 10])\nprint(rs[1].tolist())\n\
         b = [torch.zeros(2), torch.ones(2)]\ndist.broadcast(b, root=1)\nprint(b[0].tolist())\n\
         print(dist.bus_bandwidth('all_reduce', 4e9, 1.0, 4))",
    );
    assert_eq!(
        out,
        "[0.0, 6.0, 12.0, 18.0]\n[1.0, 0.0]\n[1, 2, 3, 4]\n[22.0, 33.0]\n[1.0, 1.0]\n6.0\n"
    );
    let r = s.run_cell("dist.all_reduce([torch.zeros(2), torch.zeros(3)])");
    assert_eq!(r.error().map(|e| e.0), Some("ValueError"), "{}", r.text());
}

/// `.to(device)`, `.cuda()` and `.cpu()` copy, as torch does: writing to
/// the result leaves the source as it was (they used to share memory when
/// the device changed between the host and a GPU).
#[test]
fn moving_a_tensor_between_devices_copies_it() {
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\nx = torch.zeros(3)\ny = x.cuda()\ny.fill_(2.0)\nz = y.cpu()\nz.fill_(5.0)\n\
         w = x.to('cuda:0')\nw.fill_(7.0)\n\
         print(x.tolist(), y.tolist(), z.tolist(), w.tolist(), y.to('cuda:0') is not None, str(y.device))",
    );
    assert_eq!(
        out,
        "[0.0, 0.0, 0.0] [2.0, 2.0, 2.0] [5.0, 5.0, 5.0] [7.0, 7.0, 7.0] True cuda:0\n"
    );
    // A collective over tensors on different devices needs them all on GPUs.
    let r = s.run_cell(
        "import tilebook.distributed as dist
dist.all_reduce([torch.zeros(2), torch.zeros(2, device='cuda')])",
    );
    let (kind, msg, _) = r.error().expect("an error");
    assert_eq!(kind, "ValueError");
    assert!(msg.contains("needs every tensor on a GPU"), "{msg}");
}

#[test]
fn dtype_conversions_keep_a_permuted_layout_as_torch_does() {
    // torch's `preserve_format`: `b.T.to(fp8)` stays column-major (tutorial
    // 03's pre-transposed fp8 operand relies on it); a tensor with gaps
    // (a slice) becomes contiguous.
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\nb = torch.arange(0, 12, dtype=torch.float32).reshape(3, 4)\n\
         t = b.T.to(torch.float16)\nprint(t.stride(), t.is_contiguous(), t.shape)\n\
         print(torch.equal(t.float(), b.T), t.half().stride(), b.T.float().stride())\n\
         u = b[:, ::2].to(torch.float16)\nprint(u.stride(), u.is_contiguous())\n\
         p = torch.arange(0, 24).reshape(2, 3, 4).permute(2, 0, 1).double()\nprint(p.stride())\n\
         print(b.T.to(torch.float8_e5m2).float().T.contiguous().stride())",
    );
    assert_eq!(
        out,
        "(1, 4) False torch.Size([4, 3])\nTrue (1, 4) (1, 4)\n(2, 1) True\n(1, 12, 4)\n(4, 1)\n"
    );
}

#[test]
fn kernels_defined_in_an_imported_module_launch() {
    // Triton reads a kernel's source from its module's file; so does
    // tilebook, for modules imported from .py files.
    let dir = std::env::temp_dir().join(format!("tb_import_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("tb_kernels_mod.py"),
        "import triton\nimport triton.language as tl\nSCALE = 3.0\n\n\
         @triton.jit\ndef scale(p, n, B: tl.constexpr):\n    o = tl.arange(0, B)\n    \
         tl.store(p + o, tl.load(p + o, mask=o < n) * SCALE, mask=o < n)\n",
    )
    .unwrap();
    let mut s = session();
    let out = run(
        &mut s,
        &format!(
            "import sys, torch\nsys.path.insert(0, {:?})\nfrom tb_kernels_mod import scale\n\
             x = torch.ones(10, device='cuda')\nscale[(1,)](x, 10, B=16)\nprint(x.sum().item())",
            dir.to_string_lossy()
        ),
    );
    assert!(out.contains("30.0"), "{out}");
    // A file's text run by `exec(compile(text, path, 'exec'))` (how a script
    // loads another without importing it) finds its kernels in the file, as
    // Triton's `inspect` does; a file that no longer holds the `def` at the
    // code object's line, or a path that is not a file, is an error.
    std::fs::write(
        dir.join("tb_other.py"),
        "import triton\nimport triton.language as tl\n@triton.jit\ndef k(p):\n    tl.store(p, 7.0)\n",
    )
    .unwrap();
    let path = dir.join("tb_other.py").to_string_lossy().to_string();
    let out = run(
        &mut s,
        &format!(
            "ns = {{}}\nexec(compile(open({path:?}).read(), {path:?}, 'exec'), ns)\n\
             y = torch.zeros(1, device='cuda')\nns['k'][(1,)](y)\nprint(y.item())"
        ),
    );
    assert!(out.contains("7.0"), "{out}");
    let r = s.run_cell(&format!(
        "import triton\nexec(compile('\\n\\n\\ndef j(p):\\n    pass\\n', {path:?}, 'exec'))\ntriton.jit(j)"
    ));
    assert!(!r.ok, "{}", r.text());
    assert!(r.text().contains("cannot find `def j`"), "{}", r.text());
    let r = s.run_cell(&format!(
        "import triton\nexec(compile('def m(p):\\n    pass\\n', {:?}, 'exec'))\ntriton.jit(m)",
        dir.join("absent.py").to_string_lossy()
    ));
    assert!(!r.ok, "{}", r.text());
    assert!(
        r.text().contains("source of `m` is not known"),
        "{}",
        r.text()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tensors_of_a_graph_never_walked_backward_are_freed() {
    // A backward rule that kept its own output (softmax, exp, a Function's
    // saved output) made a cycle the VM never collects: forward-only
    // references (tutorial 06's fp8 test) kept gigabytes alive.
    let mut s = session();
    let out = run(
        &mut s,
        r#"import weakref, torch
a = torch.randn(1000, requires_grad=True)
y = torch.softmax(a * 2.0, dim=0).exp()
ry = weakref.ref(y)
del y
class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        o = x * 2
        ctx.save_for_backward(x, o)
        return o
    @staticmethod
    def backward(ctx, g):
        x, o = ctx.saved_tensors
        assert o.shape == x.shape
        return g * 2
z = Double.apply(a)
rz = weakref.ref(z)
del z
print(ry() is None, rz() is None)
w = Double.apply(a)
w.exp().sum().backward()
print(torch.allclose(a.grad, 2 * (2 * a).exp().detach()))
"#,
    );
    assert!(out.contains("True True\nTrue"), "{out}");
}

#[test]
fn matmul_writes_into_out_and_tensor_members_read_as_torch_gives_them() {
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\na = torch.randn(5, 7)\nb = torch.randn(9, 7)\nc = torch.empty(5, 9)\n\
         r = torch.matmul(a, b.T, out=c)\n\
         print(torch.allclose(c, a @ b.T), r.shape, c.shape[1:], a.dtype, a.ndim, a.T.shape, a.stride(0), a.size(1))\n\
         try:\n    torch.matmul(a, b.T, out=torch.empty(3, 3))\nexcept RuntimeError as e:\n    print('RuntimeError')\n\
         w = torch.ones(2, 3, requires_grad=True)\n\
         try:\n    torch.matmul(w, torch.ones(3, 2), out=torch.empty(2, 2))\nexcept RuntimeError as e:\n    print('no grad through out=')",
    );
    assert_eq!(
        out,
        "True torch.Size([5, 9]) torch.Size([9]) torch.float32 2 torch.Size([7, 5]) 7 7\nRuntimeError\nno grad through out=\n"
    );
}

#[test]
fn isnan_isinf_isfinite_as_torch_gives_them() {
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\nx = torch.tensor([1.0, float('nan'), float('inf'), -float('inf'), -0.0])\n\
         print(x.isnan().tolist(), torch.isinf(x).tolist(), torch.isfinite(x).tolist())\n\
         h = x.half()\nprint(torch.isnan(h).dtype, h.isinf().tolist())\n\
         i = torch.arange(3)\nprint(i.isnan().tolist(), torch.isinf(i).tolist(), i.isfinite().tolist())",
    );
    assert_eq!(
        out,
        "[False, True, False, False, False] [False, False, True, True, False] [True, False, False, False, True]\n\
         torch.bool [False, False, True, True, False]\n\
         [False, False, False] [False, False, False] [True, True, True]\n"
    );
}

/// Float arguments in `[2^-60, 2^60]` are specialized `fp32:pos` (a
/// second compile), and every value reaches the kernel unchanged on either
/// side of the range's bounds.
#[test]
fn float_arguments_specialize_by_range_and_arrive_unchanged() {
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\nimport triton\nimport triton.language as tl\n\
         @triton.jit\ndef k(o, x):\n    tl.store(o + tl.arange(0, 1), tl.full([1], x * 2.0, tl.float32))\n\
         vals = [2.0 ** -61, 2.0 ** -60, 0.5, 2.0 ** 60, 2.0 ** 61, -1.0, 0.0, float('inf'), float('nan')]\n\
         got = []\n\
         for v in vals:\n    o = torch.zeros(1)\n    k[(1,)](o, v)\n    got.append(o.item())\n\
         print([g == v * 2.0 or (g != g and v != v) for g, v in zip(got, vals)])",
    );
    assert_eq!(
        out,
        "[True, True, True, True, True, True, True, True, True]\n"
    );
    let out = run(&mut s, "%cache info");
    assert!(out.contains("k: 2 specialization(s)"), "{out}");
    // `do_not_specialize` (names or positions) leaves floats and integers alone.
    let out = run(
        &mut s,
        "@triton.jit(do_not_specialize=['x', 2])\ndef k2(o, x, n):\n    tl.store(o + tl.arange(0, 1), tl.full([1], x + n, tl.float32))\n\
         for v, n in [(0.5, 16), (-1.0, 3), (2.0, 1)]:\n    k2[(1,)](torch.zeros(1), v, n)\n",
    );
    assert_eq!(out, "");
    let out = run(&mut s, "%cache info");
    assert!(out.contains("k2: 1 specialization(s)"), "{out}");
}

/// fp32 values just above a half-way point round up into fp16 and bf16
/// (`half`'s `from_f64` dropped the low 32 bits and rounded them down), on
/// the host and in a kernel's constants.
#[test]
fn fp32_just_above_a_tie_rounds_up_into_fp16_and_bf16() {
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\nimport triton\nimport triton.language as tl\n\
         x = torch.tensor([762.0001831054688, 228.5000762939453, 762.0, 1.0 + 2.0 ** -11 + 2.0 ** -23])\n\
         print(x.bfloat16()[:3].tolist(), x.half()[3].item())\n\
         @triton.jit\ndef k(o):\n    tl.store(o + tl.arange(0, 1), tl.full([1], 1.0 + 2.0 ** -11 + 2.0 ** -23, tl.float16))\n\
         o = torch.zeros(1, dtype=torch.float16)\nk[(1,)](o)\nprint(o.item())",
    );
    assert_eq!(out, "[764.0, 229.0, 760.0] 1.0009765625\n1.0009765625\n");
}

#[test]
fn all_any_and_sums_of_empty_tensors_as_torch_gives_them() {
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\ne = torch.zeros(3, 0)\n\
         print(torch.all(e).item(), e.any().item(), e.sum().item(), e.sum(1).tolist(), e.mean().isnan().item())\n\
         x = torch.tensor([[1.0, 0.0], [2.0, 3.0]])\n\
         print(torch.all(x).item(), torch.any(x).item(), torch.all(x, 1).tolist(), torch.amax(x, 0).tolist(), torch.amin(x).item())",
    );
    assert_eq!(
        out,
        "True False 0.0 [0.0, 0.0, 0.0] True\nFalse True [False, True] [2.0, 3.0] 0.0\n"
    );
}

/// Reductions over a leading dimension of a 3-D or 4-D tensor keep the other
/// dimensions in order (a swap with the last dimension once gave `x.sum(0)`
/// of a [2, 3, 4] tensor the shape [4, 3], silently transposed).
#[test]
fn reductions_keep_the_other_dimensions_in_order() {
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\nx = torch.arange(24.0).reshape(2, 3, 4)\n\
         print(list(x.sum(0).shape), x.sum(0)[1].tolist(), list(x.amax(0, keepdim=True).shape))\n\
         y = torch.arange(48.0).reshape(2, 3, 2, 4)\n\
         print(list(y.sum(1).shape), y.sum(1)[0, 1].tolist(), y.argmax(1)[1, 0].tolist())\n\
         z = torch.randn(2, 3, 2, 4)\n\
         print(torch.allclose(z.mean(1), (z[:, 0] + z[:, 1] + z[:, 2]) / 3, atol=1e-6),\
         torch.equal(z.max(0).values, torch.maximum(z[0], z[1])))",
    );
    assert_eq!(
        out,
        "[3, 4] [20.0, 22.0, 24.0, 26.0] [1, 3, 4]\n\
         [2, 2, 4] [36.0, 39.0, 42.0, 45.0] [2, 2, 2, 2]\nTrue True\n"
    );
}

/// Reductions over several dimensions at once, as torch takes them
/// (`x.sum((0, 2))`, `amax(dim=[..])`, `var`, `all`); a repeated or
/// out-of-range dimension, and a tuple for `max`, are torch's errors.
#[test]
fn reductions_over_a_tuple_of_dimensions() {
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\nx = torch.arange(24.0).reshape(2, 3, 4)\n\
         print(x.sum((0, 2)).tolist(), torch.sum(x, (0, 2)).tolist(), x.sum(dim=[2, 0]).tolist())\n\
         print(list(x.sum((0, 2), keepdim=True).shape), x.mean((1, 2)).tolist(), x.amax((0, 1)).tolist())\n\
         print(x.sum(()).item(), round(x.var((0, 2))[0].item(), 4), (x > 5).all((1, 2)).tolist())\n\
         for bad in ['x.sum((0, 0))', 'x.sum((0, 3))', 'x.max((0, 1))']:\n\
         \x20   try:\n\
         \x20       eval(bad)\n\
         \x20   except Exception as e:\n\
         \x20       print(type(e).__name__, e)",
    );
    assert_eq!(
        out,
        "[60.0, 92.0, 124.0] [60.0, 92.0, 124.0] [60.0, 92.0, 124.0]\n\
         [1, 3, 1] [5.5, 17.5] [20.0, 21.0, 22.0, 23.0]\n\
         276.0 42.5714 [False, True]\n\
         RuntimeError dim 0 appears multiple times in the list of dims\n\
         IndexError Dimension out of range (expected to be in range of [-3, 2], but got 3)\n\
         TypeError max(): argument 'dim' must be int, not tuple\n"
    );
}

/// `torch.cuda.Event` on the CPU backend: a launch returns when its kernel
/// has run, so an event is the host clock at `record()`; the time between
/// two events lies inside the host's own measurement around them. Errors
/// are torch's own.
#[test]
fn cuda_events_time_the_work_between_them() {
    let mut s = session();
    let out = run(
        &mut s,
        r#"import time, torch, triton
import triton.language as tl
@triton.jit
def twice(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)
x = torch.rand(1 << 18, device="cuda")
y = torch.empty_like(x)
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
t0 = time.perf_counter()
start.record()
for _ in range(5):
    twice[(256,)](x, y, 1 << 18, BLOCK=1024)
end.record()
end.synchronize()
host = (time.perf_counter() - t0) * 1e3
ms = start.elapsed_time(end)
print(type(ms).__name__, 0.0 < ms <= host, end.elapsed_time(start) < 0.0, start.elapsed_time(start))
print(torch.allclose(y, 2 * x), torch.cuda.current_stream().record_event().query())
for a, b in [(torch.cuda.Event(), end), (torch.cuda.Event(enable_timing=True), end)]:
    try:
        a.elapsed_time(b)
    except RuntimeError as e:
        print(e)"#,
    );
    assert_eq!(
        out,
        "float True True 0.0\nTrue True\n\
         Both events must be created with argument 'enable_timing=True'.\n\
         Both events must be recorded before calculating elapsed time.\n"
    );
}

#[test]
fn bad_ranges_reshapes_and_stacks_are_torch_errors() {
    // Found by trying odd inputs: a zero step read as a range of 2^64 - 1
    // elements, a step away from the end as an empty range, two `-1`s as
    // a size-0 dimension, and `stack` named the shapes after unsqueezing.
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\n\
         cases = [lambda: torch.arange(0, 10, 0), lambda: torch.arange(0, 10, -1),\n\
         \x20        lambda: torch.arange(0, float('inf')), lambda: torch.ones(3).reshape(-1, -1),\n\
         \x20        lambda: torch.ones(4).view(2, -2),\n\
         \x20        lambda: torch.stack([torch.ones(2), torch.ones(3)])]\n\
         for f in cases:\n\
         \x20   try:\n\
         \x20       f()\n\
         \x20   except RuntimeError as e:\n\
         \x20       print(e)\n\
         print(torch.arange(10, 0, -3), torch.arange(5, 5), torch.ones(2, 3).reshape(-1).shape)",
    );
    assert_eq!(
        out,
        "step must be nonzero\n\
         upper bound and larger bound inconsistent with step sign\n\
         unsupported range: 0 -> inf\n\
         only one dimension can be inferred\n\
         invalid shape dimension -2\n\
         stack expects each tensor to be equal size, but got [2] at entry 0 and [3] at entry 1\n\
         tensor([10,  7,  4,  1]) tensor([], dtype=torch.int64) torch.Size([6])\n"
    );
}

#[test]
fn augmented_assignment_writes_into_the_tensor_and_its_views() {
    // `s = x[:, 1:3]; s *= 10` rebound `s` to a new tensor, so `x` kept its
    // old values: a silent wrong answer. torch writes in place.
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\n\
         x = torch.arange(0, 8, dtype=torch.float32).reshape(2, 4)\n\
         v = x[:, 1:3]\nw = v\nv *= 10\nv += 1\nprint(v is w)\nprint(x)\n\
         t = x.T\nt -= 1\nprint(x[0])\n\
         y = x.view(-1)\ny /= 2\nprint(x[1, 3].item())\n\
         i = torch.arange(4)\ni += 2\ni <<= 1\nprint(i)\n\
         x[0] += 100\nprint(x[0, 0].item(), x[1, 0].item())\n\
         w = torch.ones(3, requires_grad=True)\nl = (w * 2).sum()\nl += (w * w).sum()\nl.backward()\n\
         print(w.grad.tolist())\n\
         for f in [lambda: i.__itruediv__(2), lambda: x[0].__iadd__(torch.ones(3, 4)),\n\
         \x20         lambda: torch.ones(2, requires_grad=True).__imul__(2)]:\n\
         \x20   try:\n\
         \x20       f()\n\
         \x20   except RuntimeError as e:\n\
         \x20       print(e)\n",
    );
    assert_eq!(
        out,
        "True\n\
         tensor([[ 0., 11., 21.,  3.],\n        [ 4., 51., 61.,  7.]])\n\
         tensor([-1., 10., 20.,  2.])\n3.0\ntensor([ 4,  6,  8, 10])\n99.5 1.5\n[4.0, 4.0, 4.0]\n\
         result type Float can't be cast to the desired output type torch.int64\n\
         output with shape [4] doesn't match the broadcast shape [3, 4]\n\
         a leaf Variable that requires grad is being used in an in-place operation.\n"
    );
}

#[test]
fn tensor_indices_take_ellipsis_index_tensors_and_tensor_bounds() {
    // A slice bound that was not a plain int read as absent (`x[:n]` with
    // `n` a 0-d tensor was `x[:]`, `x[:2.5]` too), a one-element 1-D index
    // tensor dropped its dimension, and `...` and integer index tensors
    // were refused.
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\nx = torch.arange(10)\nn = torch.tensor(3)\n\
         print(x[:n], x[n], x[torch.tensor([1])].shape, x[2:10**30], x[-10**30:2])\n\
         for f in [lambda: x[:2.5], lambda: x[torch.tensor(1.0)], lambda: x[..., ...],\n\
         \x20         lambda: x[torch.tensor([10])], lambda: x[[1, 2.0]],\n\
         \x20         lambda: [0, 1][torch.tensor(1.5)]]:\n\
         \x20   try:\n\
         \x20       f()\n\
         \x20   except (TypeError, IndexError) as e:\n\
         \x20       print(type(e).__name__, e)\n\
         y = torch.zeros(2, 3, 4)\n\
         print(y[..., 1].shape, y[0, ...].shape, y[..., None].shape, y[None, ..., 0].shape)\n\
         y[..., 0] = 1\nprint(y.sum().item())\n\
         z = torch.arange(6).reshape(2, 3)\n\
         print(z[:, [2, 0]].tolist(), z[torch.tensor([[0, 1], [1, 0]])].shape)\n\
         z[:, torch.tensor([0, 2])] = 9\nprint(z.tolist())",
    );
    assert_eq!(
        out,
        "tensor([0, 1, 2]) tensor(3) torch.Size([1]) tensor([2, 3, 4, 5, 6, 7, 8, 9]) tensor([0, 1])\n\
         TypeError slice indices must be integers or None or have an __index__ method\n\
         IndexError tensors used as indices must be long, int, byte or bool tensors\n\
         IndexError an index can only have a single ellipsis ('...')\n\
         IndexError index 10 is out of bounds for dimension with size 10\n\
         IndexError tensors used as indices must be long, int, byte or bool tensors\n\
         TypeError only integer tensors of a single element can be converted to an index\n\
         torch.Size([2, 3]) torch.Size([3, 4]) torch.Size([2, 3, 4, 1]) torch.Size([1, 2, 3])\n\
         6.0\n[[2, 0], [5, 3]] torch.Size([2, 2, 3])\n[[9, 1, 9], [9, 4, 9]]\n"
    );
}

#[test]
fn where_and_result_type_join_python_numbers_weakly() {
    // `torch.where(c, fp16, 0.0)` came out float32 (torch keeps float16), a
    // string operand read as 0, and `torch.tensor([])` was int64.
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\nh = torch.ones(2, dtype=torch.float16)\nc = torch.tensor([True, False])\n\
         print(torch.where(c, h, 0.0).dtype, torch.where(c, h, 2).dtype, torch.where(c, 1, 2).dtype)\n\
         print(torch.where(c, 1.0, h.to(torch.int32)).dtype, torch.result_type(h, 1.0), torch.result_type(2, h))\n\
         print(torch.tensor([]).dtype, torch.tensor([[]]).shape)\n\
         try:\n    torch.where(c, h, 'x')\nexcept TypeError as e:\n    print('TypeError')",
    );
    assert_eq!(
        out,
        "torch.float16 torch.float16 torch.int64\n\
         torch.float32 torch.float16 torch.float16\n\
         torch.float32 torch.Size([1, 0])\nTypeError\n"
    );
}

#[test]
fn tensors_print_as_torch_2_11_prints_them() {
    // Expected text from torch 2.11 on the GPU machine (session 60):
    // summarized rows wrapped one element early, continuation lines were
    // indented one column too far, and `inf` / `-0.` widened every element.
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\nx = torch.arange(3000, dtype=torch.float32).reshape(30, 100) / 7\n\
         print(str(x).splitlines()[:2])\n\
         print(torch.tensor([float('inf'), float('-inf'), float('nan'), 1.0]), torch.tensor([-0.0, 0.0]))\n\
         print(torch.tensor([float('nan'), 1.5]), torch.tensor([0.5, 1.25, 100.0]))",
    );
    assert_eq!(
        out,
        "['tensor([[0.0000e+00, 1.4286e-01, 2.8571e-01,  ..., 1.3857e+01, 1.4000e+01,', \
         '         1.4143e+01],']\n\
         tensor([inf, -inf, nan, 1.]) tensor([-0., 0.])\n\
         tensor([   nan, 1.5000]) tensor([  0.5000,   1.2500, 100.0000])\n"
    );
}

#[test]
fn split_chunk_repeat_and_comparison_functions_as_torch_has_them() {
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\nx = torch.arange(24.).reshape(2, 3, 4)\n\
         print([t.shape[2] for t in x.split(3, 2)], [t.tolist() for t in torch.arange(5).split([2, 3])])\n\
         print([t.shape[1] for t in x.chunk(2, 1)], len(torch.chunk(x, 5, 2)))\n\
         print(torch.arange(3).repeat(2, 2).tolist(), torch.tensor([[1, 2]]).repeat(2, 1, 2).shape)\n\
         print(torch.eq(x, 2).sum().item(), torch.lt(torch.tensor([1, 5]), 3).tolist())\n\
         v = x.split(2, 2)[1]\nv += 100\nprint(x[0, 0].tolist())\n\
         try:\n    torch.arange(5).split([2, 2])\nexcept RuntimeError as e:\n    print(e)",
    );
    assert_eq!(
        out,
        "[3, 1] [[0, 1], [2, 3, 4]]\n[2, 1] 4\n[[0, 1, 2, 0, 1, 2], [0, 1, 2, 0, 1, 2]] torch.Size([2, 1, 4])\n\
         1 [True, False]\n[0.0, 1.0, 102.0, 103.0]\n\
         split_with_sizes expects split_sizes to sum exactly to 5 (input tensor's size at dimension 0), \
         but got split_sizes=[2, 2]\n"
    );
}

#[test]
fn clamp_limits_elements_as_torch_does() {
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\nx = torch.tensor([-2.0, -0.5, float('nan'), 0.25, 3.0])\n\
         print(torch.clamp(x, -1, 1))\nprint(x.clip(max=0.0))\nprint(torch.clip(x, 0.5, 0.1))\n\
         i = torch.arange(-3, 4)\nprint(i.clamp(-1, 2), i.clamp(min=0.5).dtype)\n\
         print(torch.arange(6.0).reshape(2, 3).clamp(torch.tensor([1.0, 2.0, 3.0]), 4.0))\n\
         h = torch.tensor([-1.0, 0.2, 0.9], dtype=torch.float16)\nh.clamp_(0, 0.5)\nprint(h)",
    );
    assert_eq!(
        out,
        "tensor([-1.0000, -0.5000,     nan,  0.2500,  1.0000])\n\
         tensor([-2.0000, -0.5000,     nan,  0.0000,  0.0000])\n\
         tensor([0.1000, 0.1000,    nan, 0.1000, 0.1000])\n\
         tensor([-1, -1, -1,  0,  1,  2,  2]) torch.float32\n\
         tensor([[1., 2., 3.],\n        [3., 4., 4.]])\n\
         tensor([0.0000, 0.2000, 0.5000], dtype=torch.float16)\n"
    );
    for (cell, message) in [
        (
            "x.clamp()",
            "at least one of 'min' or 'max' must not be None",
        ),
        (
            "i.clamp_(min=0.5)",
            "result type torch.float32 can't be cast to the desired output type torch.int64",
        ),
        (
            "torch.clamp(torch.tensor([True]), 0, 1)",
            "not implemented for bool",
        ),
        ("x.clamp(torch.zeros(3))", "does not broadcast"),
    ] {
        let r = s.run_cell(cell);
        assert!(!r.ok && r.text().contains(message), "{cell}: {}", r.text());
    }
}

#[test]
fn linspace_and_logspace_include_both_ends() {
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\nprint(torch.linspace(0, 1, 5), torch.linspace(-1, 1, steps=4))\n\
         print(torch.linspace(3, 10, 1), torch.linspace(0, 1, 0), torch.linspace(0, 10, 4, dtype=torch.int64))\n\
         print(torch.logspace(0, 3, 4), torch.logspace(0, 3, 4, base=2.0))",
    );
    assert_eq!(
        out,
        "tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000]) tensor([-1.0000, -0.3333,  0.3333,  1.0000])\n\
         tensor([3.]) tensor([]) tensor([ 0,  3,  6, 10])\n\
         tensor([   1.,   10.,  100., 1000.]) tensor([1., 2., 4., 8.])\n"
    );
    let r = s.run_cell("torch.linspace(0, 1, -1)");
    assert!(
        !r.ok && r.text().contains("number of steps must be non-negative"),
        "{}",
        r.text()
    );
}

#[test]
fn reductions_take_dtype_and_integer_means_are_refused() {
    // `dtype=` was ignored (integer sums stayed integers) and the mean of
    // integers was a float where torch refuses it.
    let mut s = session();
    let out = run(
        &mut s,
        "import torch\nx = torch.arange(4)\n\
         print(x.sum(dtype=torch.float32), torch.sum(x, dtype=torch.float16).dtype)\n\
         print(x.mean(dtype=torch.float32), x.reshape(2, 2).mean((0, 1), dtype=torch.float64))\n\
         try:\n    x.mean()\nexcept RuntimeError as e:\n    print('refused:', 'floating point' in str(e))",
    );
    assert_eq!(
        out,
        "tensor(6.) torch.float16\ntensor(1.5000) tensor(1.5000, dtype=torch.float64)\nrefused: True\n"
    );
}
