//! Line magics through the session engine (CPU backend).

use tilebook_tests::{ok, session};

const KERNEL: &str = r#"
import torch
import triton
import triton.language as tl

@triton.jit
def inc(x_ptr, n, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n) + 1, mask=o < n)

x = torch.zeros(10, device='cuda')
"#;

#[test]
fn time_and_timeit_run_the_statement_and_report() {
    let mut s = session();
    ok(&mut s, KERNEL);
    let out = ok(&mut s, "%time inc[(1,)](x, 10, B=16)");
    assert!(out.starts_with("Wall time: "), "{out}");
    let out = ok(&mut s, "%timeit inc[(1,)](x, 10, B=16)");
    assert!(
        out.contains(" per loop (median of ") && out.contains("wall clock"),
        "{out}"
    );
    // Every run of both magics really launched the kernel.
    let out = ok(&mut s, "print(x[0].item() > 2, (x == x[0]).all().item())");
    assert_eq!(out, "True True\n");
}

#[test]
fn stage_magics_show_the_latest_specialization() {
    let mut s = session();
    ok(&mut s, KERNEL);
    let r = s.run_cell("%ir inc");
    assert!(
        !r.ok && r.text().contains("has not been compiled yet"),
        "{}",
        r.text()
    );
    ok(&mut s, "inc[(1,)](x, 10, B=16)");
    let ir = ok(&mut s, "%ir inc");
    assert!(
        ir.starts_with("// inc [") && ir.contains("kernel @inc("),
        "{ir}"
    );
    let clif = ok(&mut s, "%clif inc");
    assert!(clif.contains("function"), "{clif}");
    let r = s.run_cell("%ptx inc");
    assert!(!r.ok && r.text().contains("CPU backend"), "{}", r.text());
}

#[test]
fn who_reset_lsmagic_and_unknown_magics() {
    let mut s = session();
    ok(&mut s, KERNEL);
    assert_eq!(ok(&mut s, "%who"), "inc\tx\n");
    assert!(ok(&mut s, "%lsmagic").contains("%timeit"));
    let r = s.run_cell("%reset");
    assert!(!r.ok && r.text().contains("%reset -f"), "{}", r.text());
    ok(&mut s, "%reset -f");
    assert_eq!(ok(&mut s, "%who"), "Interactive namespace is empty.\n");
    let r = s.run_cell("%frobnicate");
    assert!(
        !r.ok && r.text().contains("available: %time"),
        "{}",
        r.text()
    );
}

#[test]
fn cells_that_launch_kernels_end_with_a_timing_footer() {
    let mut s = session();
    s.timing = true;
    ok(&mut s, KERNEL);
    let r = s.run_cell("inc[(1,)](x, 10, B=16)\ninc[(1,)](x, 10, B=16)");
    assert!(r.ok, "{}", r.text());
    let text = r.text();
    let footer = text.lines().last().unwrap();
    assert!(footer.starts_with("[inc] grid (1, 1, 1) x2: "), "{text}");
    assert!(footer.contains(" ms CPU wall, compiled in "), "{text}");
    // Launches inside a measurement are not the cell's own.
    let text = ok(&mut s, "%timeit inc[(1,)](x, 10, B=16)");
    assert!(!text.contains("[inc]"), "{text}");
    ok(&mut s, "%timing off");
    assert_eq!(ok(&mut s, "inc[(1,)](x, 10, B=16)"), "");
}

#[test]
fn cell_magics_time_and_timeit_a_whole_cell() {
    let mut s = session();
    ok(&mut s, KERNEL);
    let out = ok(&mut s, "%%time\ninc[(1,)](x, 10, B=16)\nprint('ran')");
    assert!(out.starts_with("ran\nWall time: "), "{out}");
    let out = ok(&mut s, "%%timeit\nprint('quiet')\ninc[(1,)](x, 10, B=16)");
    assert!(
        !out.contains("quiet") && out.contains(" per loop "),
        "{out}"
    );
    // The body keeps its line numbers in errors.
    let r = s.run_cell("%%time\ny = 1\nz = undefined_name");
    assert!(
        !r.ok && r.text().contains("3 │ z = undefined_name"),
        "{}",
        r.text()
    );
    let r = s.run_cell("y = 1\n%%time\nz = 2");
    assert!(
        !r.ok && r.text().contains("must be the first line"),
        "{}",
        r.text()
    );
}
