//! The CPU backend's fp32 `log`, `log2`, `sin`, `cos` and `tl.sqrt`
//! (`tilebook_cpu::nvmath`) give the GPU's bits: against results Triton
//! computed on an H200 (`data/nvmath_sm90.txt`, made by
//! `tests/gpu/reference/nvmath.py samples`), and, where
//! `TILEBOOK_NVMATH_DUMP` names a folder of that script's `dump`, against
//! every fifth bit pattern of the 2^32.

use rayon::prelude::*;
use tilebook_cpu::nvmath;

fn function(name: &str) -> fn(f32) -> f32 {
    match name {
        "log" => nvmath::logf,
        "log2" => nvmath::log2f,
        "sin" => nvmath::sinf,
        "cos" => nvmath::cosf,
        "sqrt" => nvmath::sqrt_approx,
        _ => panic!("no function {name}"),
    }
}

/// Equal bits, or both NaN (the GPU's NaNs carry no payload we follow).
fn same(got: f32, want: u32) -> bool {
    let want = f32::from_bits(want);
    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan())
}

#[test]
fn measured_samples() {
    let text = include_str!("data/nvmath_sm90.txt");
    let mut per_function = std::collections::BTreeMap::<&str, usize>::new();
    let mut wrong = vec![];
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        let (Some(name), Some(x), Some(y)) = (parts.next(), parts.next(), parts.next()) else {
            panic!("bad line {line:?}");
        };
        let x = u32::from_str_radix(x, 16).expect("hex input");
        let y = u32::from_str_radix(y, 16).expect("hex output");
        let got = function(name)(f32::from_bits(x));
        if !same(got, y) {
            wrong.push(format!(
                "{name}({x:08x}) = {:08x}, GPU {y:08x}",
                got.to_bits()
            ));
        }
        *per_function.entry(name).or_default() += 1;
    }
    assert_eq!(per_function.len(), 5, "{per_function:?}");
    assert!(
        per_function.values().all(|&n| n >= 2000),
        "{per_function:?}"
    );
    assert!(
        wrong.is_empty(),
        "{} of {} differ: {:?}",
        wrong.len(),
        text.lines().count(),
        &wrong[..wrong.len().min(20)]
    );
}

#[test]
fn against_gpu_dump() {
    let Some(dir) = std::env::var_os("TILEBOOK_NVMATH_DUMP") else {
        eprintln!("skipped: TILEBOOK_NVMATH_DUMP names no folder of GPU results");
        return;
    };
    const STRIDE: u64 = 5;
    let mut failures = vec![];
    for name in ["log", "log2", "sin", "cos", "sqrt"] {
        let path = std::path::Path::new(&dir).join(format!("{name}.bin"));
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let f = function(name);
        let wrong: Vec<(u32, u32, u32)> = bytes
            .par_chunks_exact(4)
            .enumerate()
            .filter_map(|(i, w)| {
                let x = (i as u64 * STRIDE) as u32;
                let want = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
                let got = f(f32::from_bits(x));
                (!same(got, want)).then_some((x, got.to_bits(), want))
            })
            .collect();
        println!("{name}: {} inputs, {} differ", bytes.len() / 4, wrong.len());
        for (x, got, want) in wrong.iter().take(10) {
            println!("  {name}({x:08x}) = {got:08x}, GPU {want:08x}");
        }
        if !wrong.is_empty() {
            failures.push(name);
        }
    }
    assert!(failures.is_empty(), "differ from the GPU: {failures:?}");
}
