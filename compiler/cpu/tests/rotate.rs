//! The rotation of two-dot loops (`tilebook_tir::rotate`, applied by the GPU
//! backend) keeps a kernel's results: the same attention kernel, rotated and
//! not, run on the CPU backend gives the same bits, for key counts that run
//! the loop zero, one and several times and end in a partial block.

use tilebook_cpu::{compile, CpuOptions};
use tilebook_tir::parse::parse_kernel;

const ATTENTION: &str = include_str!("data/attn_small.tile");

/// fp16 bits of `i / 8` for small `i` (exact).
fn half_bits(i: i32) -> u16 {
    half::f16::from_f32(i as f32 / 8.0).to_bits()
}

fn bounds_of<T>(v: &[T]) -> [u64; 2] {
    let lo = v.as_ptr() as u64;
    [lo, lo + std::mem::size_of_val(v) as u64]
}

/// `O` of the kernel for `n` keys and queries of 16 rows, D = 16.
fn run(k: &tilebook_tir::Kernel, n: usize) -> Vec<u32> {
    let ck = compile(k, &CpuOptions::default()).expect("compiles");
    let d = 16;
    let q: Vec<u16> = (0..16 * d)
        .map(|i| half_bits((i * 7 % 13) as i32 - 6))
        .collect();
    let keys = n.max(1) * d;
    let kk: Vec<u16> = (0..keys)
        .map(|i| half_bits((i * 5 % 11) as i32 - 5))
        .collect();
    let v: Vec<u16> = (0..keys)
        .map(|i| half_bits((i * 3 % 17) as i32 - 8))
        .collect();
    let o = vec![0f32; 16 * d];
    let args = [
        q.as_ptr() as u64,
        kk.as_ptr() as u64,
        v.as_ptr() as u64,
        o.as_ptr() as u64,
        n as u64,
    ];
    let bounds = [
        bounds_of(&q),
        bounds_of(&kk),
        bounds_of(&v),
        bounds_of(&o),
        [0, 0],
    ];
    ck.launch([1, 1, 1], &args, &bounds, vec![])
        .expect("runs within bounds");
    o.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn a_rotated_attention_loop_gives_the_same_bits() {
    let plain = parse_kernel(ATTENTION).expect("parses");
    let mut rotated = plain.clone();
    assert!(tilebook_tir::rotate::rotate_dot_loops(
        &mut rotated,
        128,
        1024,
        0
    ));
    tilebook_tir::passes::optimize(&mut rotated);
    tilebook_tir::verify::verify(&rotated).expect("verifies");
    assert_ne!(plain, rotated);
    for n in [0, 1, 15, 16, 17, 40, 64] {
        let (a, b) = (run(&plain, n), run(&rotated, n));
        assert_eq!(a, b, "n = {n}");
        // n = 0 divides 0 by 0; elsewhere the output is finite.
        assert!(
            n == 0 || a.iter().all(|&x| f32::from_bits(x).is_finite()),
            "n = {n}"
        );
    }
}
