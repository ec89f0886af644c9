//! The unmasked version of a kernel (`tilebook_tir::versions`, applied by
//! the GPU backend) keeps its results: the same kernel, versioned and not,
//! run on the CPU backend (which checks every access against its tensor)
//! gives the same bits, with rows wider, as wide as and narrower than the
//! block, and with an offset mask whose `i32` elements wrap.

use tilebook_cpu::{compile, CpuOptions};
use tilebook_tir::ir::{walk_ops, Kernel, OpKind, Region};
use tilebook_tir::parse::parse_kernel;
use tilebook_tir::versions::{version_masks, MaskVersions, TrueMasks};

const ROWS: &str = include_str!("data/masked_rows.tile");

fn bounds_of<T>(v: &[T]) -> [u64; 2] {
    let lo = v.as_ptr() as u64;
    [lo, lo + std::mem::size_of_val(v) as u64]
}

/// `Y`, `Z` and `W` of the kernel over `programs` programs and `m` rows of
/// `n` columns.
fn run(k: &Kernel, programs: u32, m: i32, n: i32, off: i32, limit: i32) -> Vec<u32> {
    let ck = compile(k, &CpuOptions::default()).expect("compiles");
    let x: Vec<f32> = (0..m * n).map(|i| (i % 23) as f32 - 11.0).collect();
    let y = vec![-1f32; (m * n) as usize];
    let z = vec![-1i32; 16 * programs as usize];
    let w = vec![-1f32; 16 * programs as usize];
    let int = |v: i32| v as i64 as u64;
    let args = [
        x.as_ptr() as u64,
        y.as_ptr() as u64,
        z.as_ptr() as u64,
        w.as_ptr() as u64,
        int(m),
        int(n),
        int(off),
        int(limit),
    ];
    let bounds = [
        bounds_of(&x),
        bounds_of(&y),
        bounds_of(&z),
        bounds_of(&w),
        [0, 0],
        [0, 0],
        [0, 0],
        [0, 0],
    ];
    ck.launch([programs, 1, 1], &args, &bounds, vec![])
        .expect("runs within bounds");
    let mut out: Vec<u32> = y.iter().map(|v| v.to_bits()).collect();
    out.extend(z.iter().map(|&v| v as u32));
    out.extend(w.iter().map(|v| v.to_bits()));
    out
}

/// Whether some load or store of `r` (nested regions included) has a mask.
fn masked(r: &Region) -> bool {
    let mut any = false;
    walk_ops(r, &mut |op| {
        any |= matches!(
            op.kind,
            OpKind::Load { mask: true, .. } | OpKind::Store { mask: true, .. }
        );
    });
    any
}

fn versioned(which: MaskVersions) -> (Kernel, Kernel) {
    let plain = parse_kernel(ROWS).expect("parses");
    let mut k = plain.clone();
    assert!(version_masks(&mut k, which, TrueMasks::Drop));
    tilebook_tir::verify::verify(&k).expect("verifies");
    (plain, k)
}

#[test]
fn the_unmasked_version_gives_the_same_bits() {
    let (plain, k) = versioned(MaskVersions::Loops);
    // The body is one `if`: its first copy has no masked access left, its
    // second is the kernel as written.
    let top = k.body.ops.last().expect("an op");
    assert_eq!(top.kind, OpKind::If);
    assert!(!masked(&top.regions[0]));
    assert!(masked(&top.regions[1]));
    let near_max = i32::MAX - 40;
    for (programs, m, n, off, limit) in [
        (3, 7, 16, 0, 1000),
        (3, 7, 20, 5, 1000),
        (2, 5, 9, 0, 1000),
        (4, 9, 16, 0, 40),
        (4, 9, 16, 0, 31),
        (3, 5, 15, 0, 1000),
        (1, 0, 16, 0, 1000),
        (4, 6, 16, near_max, i32::MAX),
        (4, 6, 17, -16, 1000),
        (2, 3, 16, i32::MIN, 0),
        (2, 3, 0, 0, 1000),
    ] {
        let case = format!("programs {programs}, m {m}, n {n}, off {off}, limit {limit}");
        assert_eq!(
            run(&plain, programs, m, n, off, limit),
            run(&k, programs, m, n, off, limit),
            "{case}"
        );
    }
}

#[test]
fn only_kernels_testing_a_mask_in_a_loop_are_versioned_by_default() {
    // The offset mask alone (used after the loop) qualifies only under `All`.
    let text = ROWS.replace("%10 = splat %5", "%10 = splat %4");
    let text = text.replace("%11 = cmp[lt] %9, %10", "%11 = cmp[ge] %9, %9");
    let plain = parse_kernel(&text).expect("parses");
    let mut k = plain.clone();
    assert!(!version_masks(&mut k, MaskVersions::Loops, TrueMasks::Drop));
    assert!(!version_masks(&mut k, MaskVersions::Off, TrueMasks::Drop));
    assert_eq!(k, plain);
    assert!(version_masks(&mut k, MaskVersions::All, TrueMasks::Drop));
    tilebook_tir::verify::verify(&k).expect("verifies");
    for (off, limit) in [(0, 1000), (0, 20), (i32::MAX - 20, i32::MAX)] {
        assert_eq!(
            run(&plain, 3, 4, 16, off, limit),
            run(&k, 3, 4, 16, off, limit)
        );
    }
    let (_, all) = versioned(MaskVersions::All);
    let (_, loops) = versioned(MaskVersions::Loops);
    assert_eq!(all, loops);
}
