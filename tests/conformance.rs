//! The CPU conformance suite: every file in `tests/conformance/` (one or more
//! cases per SPEC §4 operation) runs in a fresh session after `prelude.py`,
//! with fresh random inputs each run. Each case compares kernel results with
//! a reference computed on the host and fails with the case's message.
//! Set `TILEBOOK_SEED` to replay a run; the seed is printed on failure.

use std::time::{SystemTime, UNIX_EPOCH};
use tilebook_tests::{root, session};

fn seed() -> u64 {
    std::env::var("TILEBOOK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64 % 1_000_000)
                .unwrap_or(0)
        })
}

/// Run one case file; returns its text output.
fn run_case(name: &str) -> String {
    let dir = root().join("tests/conformance");
    let prelude = std::fs::read_to_string(dir.join("prelude.py")).unwrap();
    let body = std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let seed = seed();
    let mut s = session();
    // Also compile every kernel for the GPU (to PTX): CI has no GPU, and this
    // is how it notices a kernel the GPU backend cannot compile.
    s.check_ptx = true;
    let mut out = String::new();
    for (label, cell) in [
        ("seed", format!("SEED = {seed}")),
        ("prelude.py", prelude),
        (name, body),
    ] {
        let r = s.run_cell_named(&cell, &format!("tests/conformance/{label}"));
        out.push_str(&r.text());
        assert!(
            r.ok,
            "conformance case {name} failed (TILEBOOK_SEED={seed}):\n{}",
            r.text()
        );
    }
    out
}

#[test]
fn every_case_file_is_listed() {
    let mut files: Vec<String> = std::fs::read_dir(root().join("tests/conformance"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".py") && n != "prelude.py")
        .collect();
    files.sort();
    let mut listed: Vec<String> = CASES.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(files, listed, "add new conformance files to CASES");
}

const CASES: &[&str] = &[
    "indices.py",
    "creation.py",
    "memory.py",
    "shapes.py",
    "arith_float.py",
    "arith_int.py",
    "promotion.py",
    "math_ops.py",
    "casts.py",
    "reductions.py",
    "row_reductions.py",
    "scaled_maxima.py",
    "dot.py",
    "control.py",
    "constexpr.py",
    "debug.py",
    "random.py",
    "atomics.py",
    "libdevice.py",
    "shuffles.py",
    "descriptors.py",
    "pointers.py",
    "ragged_copies.py",
];

macro_rules! cases {
    ($($test:ident => $file:expr;)*) => { $( #[test] fn $test() { run_case($file); } )* };
}

cases! {
    indices => "indices.py";
    creation => "creation.py";
    memory => "memory.py";
    shapes => "shapes.py";
    arith_float => "arith_float.py";
    arith_int => "arith_int.py";
    promotion => "promotion.py";
    math_ops => "math_ops.py";
    casts => "casts.py";
    reductions => "reductions.py";
    row_reductions => "row_reductions.py";
    scaled_maxima => "scaled_maxima.py";
    dot => "dot.py";
    control => "control.py";
    constexpr => "constexpr.py";
    random => "random.py";
    atomics => "atomics.py";
    libdevice => "libdevice.py";
    shuffles => "shuffles.py";
    descriptors => "descriptors.py";
    pointers => "pointers.py";
    ragged_copies => "ragged_copies.py";
}

#[test]
fn debug_prints() {
    let out = run_case("debug.py");
    assert!(out.contains("BLOCK is 32\n"), "{out}");
    // Triton's prefix rule: it ends with ": " and starts with a space.
    assert!(
        out.contains("pid (0, 0, 0) idx (0) v=: 1.500000\n"),
        "{out}"
    );
    assert!(
        out.contains("pid (0, 0, 0) idx (1) v=: 2.500000\n"),
        "{out}"
    );
    assert!(
        out.contains("pid (0, 0, 0) idx (1) x: (operand 0) 2.500000\n"),
        "{out}"
    );
    assert!(
        out.contains("pid (0, 0, 0) idx (1) x: (operand 1) 3\n"),
        "{out}"
    );
}
