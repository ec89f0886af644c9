//! Surface programs (`tests/surface/`): programs of our own that use the
//! same API surface as Triton's tutorials 01–05 and 07–09 (the same calls and the same
//! checks), run unchanged by the session engine (the CPU backend here;
//! `tests/gpu/seeds.sh` runs them on a GPU), and the MIME bundles their
//! displays produce.

use tilebook_session::Output;
use tilebook_tests::{ok, root, session};

fn program(name: &str) -> String {
    std::fs::read_to_string(root().join("tests/surface").join(name)).expect("surface program")
}

/// The MIME types of every display a cell produced, in order.
fn bundles(outputs: &[Output]) -> Vec<Vec<(String, String)>> {
    outputs
        .iter()
        .filter_map(|o| match o {
            Output::Display { data } | Output::Result { data } => Some(data.clone()),
            _ => None,
        })
        .collect()
}

/// The matmul program with its benchmark sweep cut to two sizes (the only
/// change: the sweep runs to 4096³, minutes on a CPU).
#[test]
fn matmul_runs_unchanged_with_autotuning_and_perf_report() {
    let text = program("matmul.py");
    let sweep = "x_vals=[128 * i for i in range(2, 33)]";
    assert!(text.contains(sweep));
    let text = text.replace(sweep, "x_vals=[128 * i for i in range(2, 4)]");
    let mut s = session();
    let r = s.run_cell(&text);
    let out = r.text();
    assert!(r.ok, "{out}");
    assert!(out.contains("fp16 products agree"), "{out}");
    assert!(out.contains("leaky epilogue agrees"), "{out}");
    assert!(!out.contains("DIFFER"), "{out}");
    // The autotuner picked a config for the 512³ problem and keeps it.
    let best = ok(&mut s, "print(product_kernel.best_config)");
    assert!(
        best.contains("TM: ") && best.contains("num_warps: "),
        "{best}"
    );
    let d = bundles(&r.outputs);
    // print_data: the table as aligned text (pandas layout) and HTML.
    let table = d
        .iter()
        .find(|b| b.iter().any(|(m, _)| m == "text/html"))
        .expect("a table display");
    let text_table = &table.iter().find(|(m, _)| m == "text/plain").unwrap().1;
    assert!(text_table.starts_with("product-fp16:\n"), "{text_table}");
    let header = text_table.lines().nth(1).unwrap();
    let cols: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(cols, ["M", "N", "K", "cuBLAS", "Kernel"], "{text_table}");
    assert_eq!(text_table.lines().count(), 4, "{text_table}");
    assert!(text_table
        .lines()
        .nth(2)
        .unwrap()
        .starts_with("0  256.0  256.0  256.0"));
    let html = &table.iter().find(|(m, _)| m == "text/html").unwrap().1;
    assert!(
        html.starts_with("<table") && html.contains("<th>Kernel</th>"),
        "{html}"
    );
    assert_eq!(html.matches("<tr><th>").count(), 3, "{html}");
    // show_plots: SVG with both lines and labels, braille text for terminals.
    let plot = d
        .iter()
        .find(|b| b.iter().any(|(m, _)| m == "image/svg+xml"))
        .expect("a plot display");
    let svg = &plot.iter().find(|(m, _)| m == "image/svg+xml").unwrap().1;
    assert!(
        svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
        "{svg}"
    );
    assert!(svg.contains("product-fp16") && svg.contains("TFLOPS"));
    // Legend entries (plotters writes each text on its own line).
    assert!(
        svg.contains("\ncuBLAS\n") && svg.contains("\nKernel\n"),
        "{svg}"
    );
    let plain = &plot.iter().find(|(m, _)| m == "text/plain").unwrap().1;
    assert!(
        plain
            .chars()
            .any(|c| ('\u{2801}'..='\u{28ff}').contains(&c)),
        "{plain}"
    );
    assert!(plain.contains("product-fp16.svg"), "{plain}");
    // Each line's points show its letter, named in the legend.
    assert!(plain.contains("lines A cuBLAS, B Kernel"), "{plain}");
    let plot_rows: String = plain
        .lines()
        .filter(|l| l.contains('│') || l.contains('┤'))
        .collect();
    assert!(
        plot_rows.contains('A') && plot_rows.contains('B'),
        "{plain}"
    );
}

#[test]
fn a_tensor_displays_as_torch_prints_it() {
    let mut s = session();
    let r = s.run_cell("import torch\ntorch.arange(4, device='cuda').float()");
    assert!(r.ok, "{}", r.text());
    assert_eq!(
        bundles(&r.outputs),
        [[(
            "text/plain".to_string(),
            "tensor([0., 1., 2., 3.], device='cuda:0')".to_string()
        )]]
    );
    // Shapes are torch.Size, a tuple that prints as torch's does.
    let out = ok(
        &mut s,
        "x = torch.zeros(3, 4)\nprint(x.shape, x.size(), x.size(1), x.shape == (3, 4), isinstance(x.shape, tuple), torch.Size([2]).numel())",
    );
    assert_eq!(out, "torch.Size([3, 4]) torch.Size([3, 4]) 4 True True 2\n");
}

#[test]
fn autotune_keys_heuristics_and_reset_to_zero() {
    let mut s = session();
    ok(
        &mut s,
        r#"
import torch
import triton
import triton.language as tl

@triton.autotune(configs=[triton.Config({'BLOCK': 16}, num_warps=1), triton.Config({'BLOCK': 64}, num_warps=2, maxnreg=64)],
                 key=['n'], reset_to_zero=['acc_ptr'], warmup=1, rep=2)
@triton.jit
def count(acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(acc_ptr, tl.load(acc_ptr) + tl.sum((offs < n).to(tl.int32), axis=0))

@triton.heuristics({'BLOCK': lambda args: triton.next_power_of_2(args['n'])})
@triton.jit
def copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
"#,
    );
    // Tuning runs the kernel many times; reset_to_zero starts every timed
    // run from zero. The real launch then adds min(n, BLOCK) once more.
    let out = ok(
        &mut s,
        "acc = torch.zeros(1, dtype=torch.int32, device='cuda')\ncount[(1,)](acc, 100)\nprint(acc.item() == count.best_config.kwargs['BLOCK'])",
    );
    assert_eq!(out, "True\n");
    let out = ok(
        &mut s,
        "x = torch.randn(37, device='cuda')\ny = torch.zeros(37, device='cuda')\ncopy[(1,)](x, y, 37)\nprint(torch.allclose(x, y), copy.compile_count)",
    );
    assert_eq!(out, "True 1\n");
    // `maxnreg` (a register cap on the GPU) is a launch option, kept by the config.
    let out = ok(&mut s, "c = triton.Config({'BLOCK': 64}, num_warps=2, maxnreg=64)\nprint(c, c.maxnreg, triton.Config({}).maxnreg)\ncount[(1,)](acc, 7, maxnreg=None)");
    assert_eq!(
        out,
        "BLOCK: 64, num_warps: 2, num_stages: 3, maxnreg: 64 64 None\n"
    );
}

/// A tensor named in `key` keys the tuning by the object, as in Triton: the
/// same tensor, whatever it holds by then, reuses the tuned config (a key
/// of its contents retuned here, and copied a GPU tensor to the host on
/// every call); another tensor is tuned afresh.
#[test]
fn autotune_keys_a_tensor_by_the_object_not_its_contents() {
    let mut s = session();
    let out = ok(
        &mut s,
        r#"
import torch
import triton
import triton.language as tl

calls = []
hook = lambda nargs: calls.append(1)

@triton.autotune(configs=[triton.Config({'BLOCK': 16}, pre_hook=hook), triton.Config({'BLOCK': 64}, pre_hook=hook)],
                 key=['acc_ptr'], warmup=1, rep=2)
@triton.jit
def tally(acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(acc_ptr, tl.load(acc_ptr) + tl.sum((offs < n).to(tl.int32), axis=0))

acc = torch.zeros(1, dtype=torch.int32, device='cuda')
tally[(1,)](acc, 100)
tuned = len(calls)
tally[(1,)](acc, 100)
again = len(calls) - tuned
other = torch.zeros(1, dtype=torch.int32, device='cuda')
tally[(1,)](other, 100)
print(tuned > 2, again, len(calls) - tuned - again > 2)

@triton.autotune(configs=[triton.Config({'BLOCK': 32}, pre_hook=hook)], key=['n'])
@triton.jit
def single(acc_ptr, n, BLOCK: tl.constexpr):
    tl.store(acc_ptr, tl.load(acc_ptr) + n)

calls.clear()
single[(1,)](acc, 5)
print(len(calls))
"#,
    );
    // Tuned on the first call, the same tensor (now holding a different
    // value) reuses the config, another tensor is tuned again; a single
    // config is launched without timing.
    assert_eq!(out, "True 1 True\n1\n");
}

/// A surface program with its benchmark sweep cut to two points (`from`
/// must occur in the file): the only change made to its text.
fn run_cut(name: &str, from: &str, to: &str) -> (String, Vec<Vec<(String, String)>>) {
    let text = program(name);
    assert!(text.contains(from), "{name} no longer contains {from}");
    let mut s = session();
    let r = s.run_cell(&text.replace(from, to));
    let out = r.text();
    assert!(r.ok, "{out}");
    (out, bundles(&r.outputs))
}

#[test]
fn vector_add_runs_unchanged_with_its_benchmark() {
    let (out, d) = run_cut(
        "vector_add.py",
        "x_vals=[2**k for k in range(12, 28, 1)]",
        "x_vals=[2**k for k in range(12, 14, 1)]",
    );
    assert!(out.contains("largest difference from torch: 0.0"), "{out}");
    assert!(out.contains("vector-sum-throughput:\n"), "{out}");
    assert!(d.iter().any(|b| b
        .iter()
        .any(|(m, v)| m == "image/svg+xml" && v.contains("vector-sum-throughput"))));
}

#[test]
fn softmax_runs_unchanged_with_warmup_occupancy_and_its_benchmark() {
    let (out, d) = run_cut(
        "softmax.py",
        "x_vals=[128 * i for i in range(2, 100)]",
        "x_vals=[128 * i for i in range(2, 4)]",
    );
    assert!(out.contains("softmax matches torch"), "{out}");
    let table = out
        .split("rows-softmax-throughput:\n")
        .nth(1)
        .expect("the table");
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["N", "Kernel", "Torch"], "{out}");
    assert!(d.iter().any(|b| b.iter().any(|(m, _)| m == "text/html")));
}

/// A session with the softmax program's kernel defined (its runs cut).
fn softmax_session() -> tilebook_session::Session {
    let mut s = session();
    ok(
        &mut s,
        program("softmax.py")
            .split("torch.manual_seed(2)")
            .next()
            .unwrap(),
    );
    s
}

#[test]
fn warmup_reports_registers_shared_memory_and_stage_texts() {
    let mut s = softmax_session();
    let out = ok(
        &mut s,
        "x = torch.randn(8, 100, device='cuda')\ny = torch.empty_like(x)\nk = rows_softmax.warmup(y, x, 100, 100, 8, 100, COLS_P2=128, num_stages=2, num_warps=4, grid=(1,))\nprint(k.n_regs > 0, k.n_spills, k.metadata.shared > 0, 'rows_softmax' in k.asm['ttir'])\nk[(8, 1, 1)](y, x, 100, 100, 8, 100, 128, 2)\nprint(torch.allclose(y, torch.softmax(x, 1), atol=1e-6))",
    );
    assert_eq!(out, "True 0 True True\nTrue\n");
}

/// As Triton's, `kernel[grid](...)` returns the compiled kernel of the
/// launch's specialization: the one `warmup` gives, launchable again, with
/// a one-line repr (a notebook cell ending in a launch shows it).
#[test]
fn a_launch_returns_its_compiled_kernel() {
    let mut s = softmax_session();
    let args = "y, x, 100, 100, 8, 100, COLS_P2=128, num_stages=2, num_warps=4";
    let out = ok(
        &mut s,
        &format!(
            "x = torch.randn(8, 100, device='cuda')\ny = torch.empty_like(x)\n\
             k = rows_softmax[(8,)]({args})\nw = rows_softmax.warmup({args}, grid=(8,))\n\
             print(k.n_regs == w.n_regs, k.asm['ttir'] == w.asm['ttir'], k.metadata.num_warps)\n\
             y.zero_()\nk[(8,)]({args})\nprint(torch.allclose(y, torch.softmax(x, 1), atol=1e-6))\n\
             print(repr(k))\nprint(rows_softmax[(0,)]({args}).n_regs == k.n_regs)"
        ),
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[..2], ["True True 4", "True"], "{out}");
    assert!(
        lines[2].starts_with("<CompiledKernel rows_softmax: ") && lines[2].ends_with(" warps>"),
        "{out}"
    );
    assert_eq!(lines[3], "True", "{out}");
}

/// A compiled kernel takes attributes and outlives a redefinition of its
/// kernel: run again with the same text it launches as before; with other
/// text its launch is refused with a message (it would otherwise run the
/// new body).
#[test]
fn an_old_compiled_kernel_after_a_redefinition() {
    let mut s = session();
    ok(
        &mut s,
        "import torch\nimport triton\nimport triton.language as tl",
    );
    let def = |body: &str| {
        format!(
            "@triton.jit\ndef bump(x_ptr, N: tl.constexpr):\n    o = tl.arange(0, N)\n    \
             tl.store(x_ptr + o, tl.load(x_ptr + o) {body})\n"
        )
    };
    ok(&mut s, &def("+ 1"));
    ok(
        &mut s,
        "x = torch.zeros(4, device='cuda')\nc = bump[(1,)](x, N=4)",
    );
    // Attributes can be set on it, as on Triton's; not on a dtype.
    assert_eq!(
        ok(
            &mut s,
            "c.n_regs = 7\nc.mine = 'a'\nprint(c.n_regs, c.mine)"
        ),
        "7 a\n"
    );
    // The same Python object comes back after another kernel's launch.
    let out = ok(
        &mut s,
        "@triton.jit\ndef other(x_ptr):\n    tl.store(x_ptr, 0.0)\n\
         y = torch.ones(1, device='cuda')\nother[(1,)](y)\ne = bump[(1,)](x, N=4)\n\
         print(e is c, e.mine)\n_ = x.fill_(1.0)",
    );
    assert_eq!(out, "True a\n");
    let r = s.run_cell("torch.float16.mine = 1");
    assert!(
        !r.ok
            && r.text()
                .contains("attribute 'mine' of torch.float16 cannot be set"),
        "{}",
        r.text()
    );
    // Deleting: a user attribute goes (the kernel's own shows again); the
    // kernel's own cannot be deleted, and a missing one names the type.
    assert_eq!(
        ok(
            &mut s,
            "del c.n_regs\ndel c.mine\nprint(hasattr(c, 'mine'), c.n_regs != 7)"
        ),
        "False True\n"
    );
    for (cell, want) in [
        ("del c.n_regs", "attribute 'n_regs' of <CompiledKernel bump"),
        (
            "del c.nothing",
            "'CompiledKernel' object has no attribute 'nothing'",
        ),
    ] {
        let r = s.run_cell(cell);
        assert!(!r.ok && r.text().contains(want), "{cell}: {}", r.text());
    }
    ok(&mut s, &def("+ 1"));
    let out = ok(&mut s, "c[(1,)](x, N=4)\nprint(x.tolist())");
    assert_eq!(out, "[2.0, 2.0, 2.0, 2.0]\n");
    ok(&mut s, &def("+ 10"));
    let r = s.run_cell("c[(1,)](x, N=4)");
    assert!(!r.ok, "{}", r.text());
    assert!(
        r.text().contains("earlier definition of `bump`"),
        "{}",
        r.text()
    );
    assert_eq!(ok(&mut s, "print(x.tolist())"), "[2.0, 2.0, 2.0, 2.0]\n");
}

#[test]
fn an_old_style_meta_kernel_runs() {
    let mut s = session();
    assert_eq!(ok(&mut s, &program("meta_kernel.py")), "meta kernel ok\n");
}

/// Dropout from a keep mask, then seeded dropout through `tl.rand`: the
/// same seed twice gives the same output, and the kept fraction is 1 - p.
#[test]
fn dropout_runs_unchanged_with_seeded_masks() {
    let mut s = session();
    let out = ok(&mut s, &program("dropout.py"));
    assert!(out.contains("kept 0.70"), "{out}");
    let rows: Vec<&str> = out.lines().filter(|l| l.contains("seed 123")).collect();
    assert_eq!(rows.len(), 2, "{out}");
    let values = |l: &str| {
        l.split_whitespace()
            .rev()
            .take(10)
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(values(rows[0]), values(rows[1]), "{out}");
}

/// Layer norm forward and backward as a `torch.autograd.Function` whose
/// backward takes a spin lock per group of rows; checked against
/// `torch.nn.functional.layer_norm` and its backward, then a one-point
/// backward benchmark (sweep and M cut: the only changes).
#[test]
fn layer_norm_runs_with_autograd_and_locks() {
    let text = program("layer_norm.py");
    for (from, _) in CUTS {
        assert!(
            text.contains(from),
            "layer_norm.py no longer contains {from}"
        );
    }
    let text = CUTS.iter().fold(text, |t, (from, to)| t.replace(from, to));
    // The sweep's files go to a scratch folder, not the source tree.
    let dir = std::env::temp_dir().join(format!("tilebook-surface-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    assert!(text.contains("save_path='.'"));
    let text = text.replace(
        "save_path='.'",
        &format!("save_path={:?}", dir.display().to_string()),
    );
    let mut s = session();
    let r = s.run_cell(&text);
    let out = r.text();
    assert!(r.ok, "{out}");
    assert!(dir.join("row-norm-backward.csv").exists(), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.contains("layer norm 1151x8192 torch.float16: forward and backward match torch"),
        "{out}"
    );
    assert!(
        out.contains("layer norm 97x300 torch.float32: forward and backward match torch"),
        "{out}"
    );
    let table = out.split("row-norm-backward:\n").nth(1).expect("the table");
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["N", "Kernel", "Torch"], "{out}");
}

const CUTS: [(&str, &str); 2] = [
    (
        "x_vals=[512 * i for i in range(2, 32)]",
        "x_vals=[512 * i for i in range(2, 3)]",
    ),
    ("args={'M': 4096,", "args={'M': 256,"),
];

/// libdevice functions checked against torch's, then the same launch with
/// `extern_libs` naming a libdevice file that does not exist.
#[test]
fn extern_functions_run_with_libdevice_and_extern_libs() {
    let mut s = session();
    let r = s.run_cell(&program("extern_functions.py"));
    let out = r.text();
    assert!(r.ok, "{out}");
    assert!(out.contains("extern functions agree with torch"), "{out}");
}

/// Grouped products through tensors of addresses (`data_ptr()` loaded and
/// turned back into pointers), autotuned with a persistent program count,
/// checked against `torch.matmul`; the descriptor version runs where the
/// device has descriptors (compute capability 9+, which the CPU backend
/// emulates). Sweep cut to two sizes (the only change).
#[test]
fn grouped_gemm_runs_through_tensors_of_pointers() {
    let text = program("grouped_gemm.py");
    let sweep = "x_vals=[2**i for i in range(7, 11)]";
    assert!(text.contains(sweep));
    let mut s = session();
    s.check_ptx = true;
    let r = s.run_cell(&text.replace(sweep, "x_vals=[2**i for i in range(6, 8)]"));
    let out = r.text();
    assert!(r.ok, "{out}");
    assert!(
        out.contains("4 grouped products agree with torch.matmul"),
        "{out}"
    );
    // The CPU backend emulates an sm_90 target, so the descriptor version
    // runs here too.
    assert!(out.contains("descriptor version agrees"), "{out}");
    assert!(out.contains("grouped-products:"), "{out}");
}

/// A persistent product three ways (pointers, host descriptors whose block
/// shapes an autotuning pre-hook sets, descriptors made in the kernel),
/// `tl.range(..., flatten=True)`, `triton.profiler` scopes, a launch hook
/// naming launches by `launch_metadata`, the profile read back with
/// `triton.profiler.viewer`, cuBLAS through `triton._C.libtriton`, and
/// argparse under `if __name__ == "__main__":`. The K sweep cut to one size (the
/// only change).
#[test]
fn persistent_matmul_runs_with_descriptors_and_profiler() {
    let text = program("persistent_matmul.py");
    let argv = r#"main(["-K", "128", "512", "--step", "128"])"#;
    assert!(text.contains(argv));
    let mut s = session();
    // Also compile every kernel to PTX: the GPU backend's codegen is checked
    // here too (a hint in a dot operand's address once failed only there).
    s.check_ptx = true;
    let r = s.run_cell(&text.replace(argv, r#"main(["-K", "64", "64", "--reps", "1"])"#));
    let out = r.text();
    assert!(r.ok, "{out}");
    assert!(
        out.contains(
            "200x136x72: pointers, host descriptors, device descriptors agree with torch.matmul"
        ),
        "{out}"
    );
    assert!(out.contains("persistent (tilebook's profiler"), "{out}");
    // The viewer's table: scopes, then the launch its launch_metadata named.
    let viewer = out.split("tflop16/s").nth(1).expect("the viewer's table");
    for row in [
        "cublas [M=512, N=512, K=64]",
        "pointers [M=512, N=512, K=64]",
        "persistent_host_desc <512x512x64>",
    ] {
        assert!(viewer.contains(row), "{row}: {out}");
    }
}

/// A sweep run the way `Benchmark.run` spreads it over GPUs (each point up
/// to its first `do_bench`, the kept functions measured, each point again
/// with that answer), here on one device: the table is the one the plain
/// run gives, each point's print shows once and in order, a point without
/// `do_bench` runs once, a function that catches everything still gets a
/// measurement, and a failing point stops the run with its own error after
/// the points before it.
#[test]
fn a_sweep_run_in_two_passes_answers_as_the_plain_run_does() {
    let program = r#"
import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()
calls = []

@triton.jit
def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)

@triton.testing.perf_report(triton.testing.Benchmark(
    x_names=['n'], x_vals=[256, 1024], line_arg='p',
    line_vals=['kernel', 'plain', 'guarded'], line_names=['Kernel', 'Plain', 'Guarded'],
    plot_name='two-pass', args={}))
def bench(n, p):
    calls.append((n, p))
    print('point', n, p)
    x = torch.rand(n, device=DEVICE)
    out = torch.empty_like(x)
    if p == 'plain':
        return float(n)
    if p == 'guarded':
        try:
            ms = triton.testing.do_bench(lambda: x * 3, warmup=1, rep=2)
        except:
            return -1.0
        return 1.0 if ms > 0 else 0.0
    ms, lo, hi = triton.testing.do_bench(
        lambda: scale[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256),
        warmup=1, rep=2, quantiles=[0.5, 0.2, 0.8])
    assert torch.allclose(out, x * 2)
    return ms, lo, hi

bench.run(print_data=True)
"#;
    let mut outs = vec![];
    for two_pass in [false, true] {
        let mut s = session();
        s.sweep_two_pass = two_pass;
        let r = s.run_cell(program);
        let text = r.text();
        assert!(r.ok, "{text}");
        let printed: Vec<&str> = text.lines().filter(|l| l.starts_with("point")).collect();
        assert_eq!(
            printed,
            [
                "point 256 kernel",
                "point 256 plain",
                "point 256 guarded",
                "point 1024 kernel",
                "point 1024 plain",
                "point 1024 guarded"
            ],
            "{text}"
        );
        // In two passes a point with a do_bench runs twice (the guarded one
        // too: the first time it caught the stop), one without runs once.
        let calls = ok(&mut s, "print(len(calls))");
        assert_eq!(calls.trim(), if two_pass { "10" } else { "6" }, "{text}");
        let table: Vec<String> = text
            .lines()
            .skip_while(|l| !l.starts_with("two-pass:"))
            .skip(2)
            .take(2)
            .map(str::to_string)
            .collect();
        for row in &table {
            let cells: Vec<f64> = row
                .split_whitespace()
                .map(|c| c.parse().expect("a number"))
                .collect();
            // index, n, Kernel (ms > 0), Plain (n), Guarded (1: measured)
            assert!(cells[2] > 0.0, "{text}");
            assert_eq!(cells[3], cells[1], "{text}");
            assert_eq!(cells[4], 1.0, "{text}");
        }
        outs.push(table.len());
        // A point that fails stops the run with its error, after the
        // points before it printed.
        let r = s.run_cell(
            "@triton.testing.perf_report(triton.testing.Benchmark(x_names=['n'], x_vals=[1, 2, 3], line_arg='p', line_vals=['a'], plot_name='f'))\ndef bad(n, p):\n    print('at', n)\n    if n == 2:\n        raise ValueError('no size 2')\n    return triton.testing.do_bench(lambda: None, warmup=1, rep=1)\nbad.run()",
        );
        let text = r.text();
        assert!(!r.ok && text.contains("ValueError: no size 2"), "{text}");
        assert_eq!(text.matches("at 1\n").count(), 1, "{text}");
        assert_eq!(text.matches("at 2\n").count(), 1, "{text}");
        assert!(!text.contains("at 3"), "{text}");
    }
    assert_eq!(outs, [2, 2]);
}
