//! The Rust API (`tilebook::Session`, `Tensor`, `Kernel`) on the CPU
//! backend: values in and out, launches, and bad input returning the
//! error a notebook shows.

use tilebook::{Error, Session, Tensor};

const ADD: &str = r#"
@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
"#;

const UNMASKED: &str = r#"
@triton.jit
def copy_unmasked(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))
"#;

#[test]
fn variables_move_between_rust_and_the_namespace() -> Result<(), Error> {
    let s = Session::cpu();
    s.set("x", Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?)?;
    s.set("k", 3)?;
    s.set("name", "tile")?;
    let cell = s.run("y = x * k + 1\nprint(name, y.shape)\ny.sum().item()")?;
    assert_eq!(
        cell.text(),
        "tile torch.Size([2, 2])\n34.0\n",
        "outputs: {:?}",
        cell.outputs
    );
    let y: Tensor = s.get("y")?;
    assert_eq!(y.shape(), &[2, 2]);
    assert_eq!(y.to_vec::<f32>()?, vec![4.0, 7.0, 10.0, 13.0]);
    assert_eq!(s.get::<i64>("k")?, 3);
    assert_eq!(s.get::<String>("name")?, "tile");
    // A tensor made in a cell, in another dtype.
    s.run("import torch\nh = torch.arange(6, dtype=torch.float16).reshape(2, 3)")?;
    let h: Tensor = s.get("h")?;
    assert_eq!(h.dtype_name(), "torch.float16");
    assert_eq!(
        h.to_vec::<half::f16>()?,
        (0..6)
            .map(|i| half::f16::from_f32(i as f32))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        h.to_string(),
        "tensor([[0., 1., 2.],\n        [3., 4., 5.]], dtype=torch.float16)"
    );
    Ok(())
}

#[test]
fn a_kernel_launches_with_rust_arguments_and_caches_its_specialization() -> Result<(), Error> {
    let s = Session::cpu();
    let outputs = std::rc::Rc::new(std::cell::RefCell::new(vec![]));
    let seen = outputs.clone();
    s.on_output(move |o| seen.borrow_mut().push(o.clone()));
    let k = s.kernel(ADD)?;
    assert_eq!(k.name(), "add");
    assert!(k.tile_ir().is_none());
    for n in [1024usize, 999, 4096] {
        let x = Tensor::from_slice(&(0..n).map(|i| i as f32).collect::<Vec<_>>());
        let y = Tensor::from_slice(&vec![0.5f32; n]);
        let mut out = Tensor::zeros::<f32>(&[n])?;
        k.launch(n.div_ceil(256), (&x, &y, &mut out, n), &[("BLOCK", 256)])?;
        let got = out.to_vec::<f32>()?;
        assert!(
            got.iter().enumerate().all(|(i, &v)| v == i as f32 + 0.5),
            "n = {n}"
        );
    }
    // 1024 and 4096 are divisible by 16, 999 is not: two specializations.
    assert_eq!(k.compiles(), 2);
    assert!(k.tile_ir().unwrap().contains("add"), "{:?}", k.tile_ir());
    // The timing footer of each launch reached the callback.
    let footers = outputs
        .borrow()
        .iter()
        .filter(|o| matches!(o, tilebook::Output::Display { data } if data[0].1.starts_with("[add] grid")))
        .count();
    assert_eq!(footers, 3, "{:?}", outputs.borrow());
    Ok(())
}

#[test]
fn bad_input_returns_the_notebooks_error() -> Result<(), Error> {
    let s = Session::cpu();
    let k = s.kernel(ADD)?;
    let x = Tensor::from_slice(&[1.0f32; 8]);

    // Too few arguments: the message a notebook launch gives.
    let e = k.launch(1, (&x, &x, 8), &[("BLOCK", 8)]).unwrap_err();
    let nb = Session::cpu();
    nb.set("x", x.clone())?;
    nb.run(&format!(
        "import triton\nimport triton.language as tl\n{ADD}"
    ))?;
    let want = nb.run("add[(1,)](x, x, 8, BLOCK=8)").unwrap_err();
    assert_eq!(
        (e.kind.as_str(), e.message.as_str()),
        (want.kind.as_str(), want.message.as_str())
    );
    assert_eq!(e.kind, "TypeError", "{e}");
    assert!(e.to_string().starts_with("TypeError: add()"), "{e}");

    // A missing constexpr.
    let out = Tensor::zeros::<f32>(&[8])?;
    let e = k
        .launch(1, (&x, &x, &out, 8), &[] as &[(&str, i32)])
        .unwrap_err();
    assert!(e.message.contains("BLOCK"), "{e}");

    // A kernel with a syntax error: the rendered error points at the line.
    let e = s
        .kernel("@triton.jit\ndef broken(x_ptr):\n    x = tl.load(x_ptr +)\n")
        .err()
        .unwrap();
    assert_eq!(e.kind, "SyntaxError", "{e}");
    assert_eq!(e.line, Some(3), "{e}");
    assert!(e.to_string().contains('^'), "no carets in:\n{e}");

    // A file that is not there.
    let e = s.kernel_file("/nonexistent/kernel.py").err().unwrap();
    assert_eq!(e.kind, "FileNotFoundError");

    // Source without a kernel.
    let e = s.kernel("def host_only():\n    return 1\n").err().unwrap();
    assert_eq!(e.kind, "ValueError");

    // An out-of-bounds access on the CPU backend: an IndexError naming the
    // kernel line, as in a notebook, and nothing written past the buffer.
    let k = s.kernel(UNMASKED)?;
    let small = Tensor::from_slice(&[2.0f32; 100]);
    let dst = Tensor::zeros::<f32>(&[100])?;
    let e = k.launch(1, (&small, &dst), &[("BLOCK", 128)]).unwrap_err();
    assert_eq!(e.kind, "IndexError", "{e}");
    assert!(e.message.contains("line 5"), "{e}");
    nb.set("small", small.clone())?;
    nb.set("dst", dst.clone())?;
    nb.run(&format!(
        "import triton\nimport triton.language as tl\n{UNMASKED}"
    ))?;
    let want = nb
        .run("copy_unmasked[(1,)](small, dst, BLOCK=128)")
        .unwrap_err();
    assert_eq!(e.message, want.message);

    // Wrong dtypes and names on the Rust side.
    assert_eq!(small.to_vec::<f64>().unwrap_err().kind, "TypeError");
    assert_eq!(
        s.get::<Tensor>("nothing_here").unwrap_err().kind,
        "NameError"
    );
    s.set("n", 5)?;
    assert_eq!(s.get::<Tensor>("n").unwrap_err().kind, "TypeError");
    assert_eq!(s.set("not a name", 1).unwrap_err().kind, "ValueError");
    assert_eq!(
        Tensor::from_vec(vec![1.0f32; 5], &[2, 3]).unwrap_err().kind,
        "ValueError"
    );
    assert_eq!(
        Tensor::zeros::<f32>(&[usize::MAX, 4]).unwrap_err().kind,
        "RuntimeError"
    );
    assert_eq!(x.to_device("tpu").unwrap_err().kind, "RuntimeError");
    // Numbers that do not fit: an error, never a wrapped value.
    assert_eq!(s.set("big", usize::MAX).unwrap_err().kind, "OverflowError");
    let k = s.kernel(ADD)?;
    let e = k
        .launch(1, (&x, &x, &out, u64::MAX as usize), &[("BLOCK", 8)])
        .unwrap_err();
    assert_eq!(e.kind, "OverflowError", "{e}");
    let e = k
        .launch(usize::MAX, (&x, &x, &out, 8), &[("BLOCK", 8)])
        .unwrap_err();
    assert!(!e.message.is_empty(), "{e}");
    // A failing cell; the session goes on.
    let e = s.run("1 / 0").unwrap_err();
    assert_eq!(e.kind, "ZeroDivisionError");
    assert_eq!(s.run("1 + 1")?.text(), "2\n");
    Ok(())
}

#[test]
fn a_cell_displays_for_evcxr_as_text_and_html() -> Result<(), Error> {
    let s = Session::cpu();
    let t = Tensor::from_slice(&[1i32, 2, 3]);
    assert_eq!(t.to_string(), "tensor([1, 2, 3], dtype=torch.int32)");
    let cell = s.run(
        "import triton\nb = triton.testing.Benchmark(x_names=['n'], x_vals=[1, 2], line_arg='p', line_vals=['a'], line_names=['A'], styles=[('blue', '-')], ylabel='v', plot_name='demo', args={})\n\
@triton.testing.perf_report(b)\ndef f(n, p):\n    return float(n)\nf.run(print_data=True, show_plots=True)\n",
    )?;
    let shown = cell.evcxr_text();
    assert!(
        shown.starts_with("EVCXR_BEGIN_CONTENT text/plain\n"),
        "{shown}"
    );
    assert!(shown.contains("EVCXR_BEGIN_CONTENT text/html\n"), "{shown}");
    assert!(
        shown.contains("<svg"),
        "the plot is not in the HTML:\n{shown}"
    );
    Ok(())
}
