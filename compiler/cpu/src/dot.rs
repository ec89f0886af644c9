//! The fp32 matrix product behind `tl.dot` on the CPU backend (and the
//! host's `torch.matmul` on it): one summation order everywhere, fast paths
//! that keep it bit for bit.
//!
//! Every output element is `out += ((a0*b0 + a1*b1) + a2*b2) + a3*b3` over
//! groups of four along K, in order, then `out += a*b` for the last K % 4.
//! The register-blocked kernels (AVX2, and AVX-512's 32 registers where the
//! CPU has them) hold a tile of `out` in registers across the whole K loop;
//! that changes which element is computed when, never the operations on an
//! element, so their results equal the scalar loop's exactly (no FMA: the
//! products are rounded before they are added, as in the scalar code).

/// `out += a @ b` in fp32 over row-major `m x k` and `k x n` operands, in
/// the CPU backend's summation order (four products summed, then added).
/// The host's `torch.matmul` uses it too, so that on the CPU backend a
/// kernel's `tl.dot` and `torch.matmul` agree bit for bit where the kernel
/// walks K in blocks of a multiple of four (as they agree on a GPU).
pub fn dot_kernel(a: &[f32], b: &[f32], out: &mut [f32], m: usize, n: usize, k: usize) {
    if fits(a.len(), m, k) && fits(b.len(), k, n) && fits(out.len(), m, n) {
        dot_block(a, b, out, (n, k), m, 0..n, 0..k);
    }
}

fn fits(len: usize, r: usize, c: usize) -> bool {
    r.checked_mul(c).is_some_and(|x| x <= len)
}

/// `out = a @ b` for the host's `torch.matmul` of large operands: the same
/// summation order as [`dot_kernel`] (so the same bits), computed in blocks
/// of rows on all cores, and within a block over K in slices of `KB` (a
/// multiple of four, so the groups of four products stay where they were)
/// and columns in slices of `NB`, so that the slice of `b` in use stays in
/// cache. `out` starts as the caller's values (zeros for a plain product).
pub fn matmul_parallel(a: &[f32], b: &[f32], out: &mut [f32], m: usize, n: usize, k: usize) {
    const KB: usize = 256;
    const NB: usize = 512;
    if !(fits(a.len(), m, k) && fits(b.len(), k, n) && fits(out.len(), m, n)) {
        return;
    }
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    // Rows per task: a multiple of four, about four tasks per core.
    let tasks = 4 * rayon::current_num_threads().max(1);
    let rb = (m.div_ceil(tasks).div_ceil(4) * 4).clamp(4, 64);
    use rayon::prelude::*;
    out[..m * n]
        .par_chunks_mut(rb * n)
        .enumerate()
        .for_each(|(c, oc)| {
            let rows = oc.len() / n;
            let ac = &a[c * rb * k..(c * rb + rows) * k];
            for k0 in (0..k).step_by(KB) {
                for j0 in (0..n).step_by(NB) {
                    dot_block(
                        ac,
                        b,
                        oc,
                        (n, k),
                        rows,
                        j0..(j0 + NB).min(n),
                        k0..(k0 + KB).min(k),
                    );
                }
            }
        });
}

/// `out[0..m, cols] += a[0..m, ks] @ b[ks, cols]` (row strides `k` and `n`);
/// `ks` starts at a multiple of four. The caller checked the lengths.
fn dot_block(
    a: &[f32],
    b: &[f32],
    out: &mut [f32],
    (n, k): (usize, usize),
    m: usize,
    cols: std::ops::Range<usize>,
    ks: std::ops::Range<usize>,
) {
    let mut done = Done {
        rows: 0,
        cols: cols.start,
    };
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (and AVX-512 where that kernel runs);
            // the operands hold at least `m*k`, `k*n` and `m*n` elements and
            // `cols.end <= n`, `ks.end <= k`.
            unsafe {
                let rows = m / 4 * 4;
                let mut j = cols.start;
                if std::is_x86_feature_detected!("avx512f")
                    && std::is_x86_feature_detected!("avx512vl")
                {
                    j += cols.len() / 32 * 32;
                    tile4x32(a, b, out, (n, k), rows, cols.start..j, ks.clone());
                }
                let j8 = j + (cols.end - j) / 8 * 8;
                tile4x8(a, b, out, (n, k), rows, j..j8, ks.clone());
                done = Done { rows, cols: j8 };
            }
        }
    }
    // What the tiles left: the last rows in full, the last columns above them.
    scalar(a, b, out, (n, k), done.rows..m, cols.clone(), ks.clone());
    scalar(a, b, out, (n, k), 0..done.rows, done.cols..cols.end, ks);
}

/// The rows and columns of `out` the tiled kernels computed (a rectangle
/// from the top-left corner).
struct Done {
    rows: usize,
    cols: usize,
}

/// `out[rows, cols] += a[rows, :] @ b[:, cols]` one element at a time.
fn scalar(
    a: &[f32],
    b: &[f32],
    out: &mut [f32],
    (n, k): (usize, usize),
    rows: std::ops::Range<usize>,
    cols: std::ops::Range<usize>,
    ks: std::ops::Range<usize>,
) {
    for i in rows {
        let arow = &a[i * k..(i + 1) * k];
        let mut p = ks.start;
        while p + 4 <= ks.end {
            let (a0, a1, a2, a3) = (arow[p], arow[p + 1], arow[p + 2], arow[p + 3]);
            for j in cols.clone() {
                let t = a0 * b[p * n + j]
                    + a1 * b[(p + 1) * n + j]
                    + a2 * b[(p + 2) * n + j]
                    + a3 * b[(p + 3) * n + j];
                out[i * n + j] += t;
            }
            p += 4;
        }
        while p < ks.end {
            let av = arow[p];
            for j in cols.clone() {
                out[i * n + j] += av * b[p * n + j];
            }
            p += 1;
        }
    }
}

/// A kernel over rows `0..rows` (a multiple of `R`), columns `j0..j1` (a
/// multiple of `8 * C` apart) and the slice `ks` of K, holding an `R x 8C`
/// tile of `out` in registers.
macro_rules! tile_kernel {
    ($name:ident, $features:literal, $r:expr, $c:expr) => {
        /// # Safety
        /// The CPU has the named features; `a`, `b`, `out` hold `rows x k`,
        /// `k x n` and `rows x n` elements, `j1 <= n` and `ks.end <= k`.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        unsafe fn $name(
            a: &[f32],
            b: &[f32],
            out: &mut [f32],
            (n, k): (usize, usize),
            rows: usize,
            std::ops::Range { start: j0, end: j1 }: std::ops::Range<usize>,
            ks: std::ops::Range<usize>,
        ) {
            use std::arch::x86_64::*;
            const R: usize = $r;
            const C: usize = $c;
            let k4 = ks.start + (ks.end - ks.start) / 4 * 4;
            let (ap, bp, op) = (a.as_ptr(), b.as_ptr(), out.as_mut_ptr());
            // SAFETY: every index below is inside the bounds the caller promised.
            unsafe {
                let mut i = 0;
                while i + R <= rows {
                    let mut j = j0;
                    while j + 8 * C <= j1 {
                        let mut acc = [[_mm256_setzero_ps(); C]; R];
                        for (r, row) in acc.iter_mut().enumerate() {
                            for (c, x) in row.iter_mut().enumerate() {
                                *x = _mm256_loadu_ps(op.add((i + r) * n + j + 8 * c));
                            }
                        }
                        let mut p = ks.start;
                        while p < k4 {
                            let mut bv = [[_mm256_setzero_ps(); C]; 4];
                            for (q, brow) in bv.iter_mut().enumerate() {
                                for (c, x) in brow.iter_mut().enumerate() {
                                    *x = _mm256_loadu_ps(bp.add((p + q) * n + j + 8 * c));
                                }
                            }
                            for (r, row) in acc.iter_mut().enumerate() {
                                let ar = ap.add((i + r) * k + p);
                                let x0 = _mm256_broadcast_ss(&*ar);
                                let x1 = _mm256_broadcast_ss(&*ar.add(1));
                                let x2 = _mm256_broadcast_ss(&*ar.add(2));
                                let x3 = _mm256_broadcast_ss(&*ar.add(3));
                                for (c, x) in row.iter_mut().enumerate() {
                                    let t = _mm256_add_ps(
                                        _mm256_add_ps(
                                            _mm256_add_ps(
                                                _mm256_mul_ps(x0, bv[0][c]),
                                                _mm256_mul_ps(x1, bv[1][c]),
                                            ),
                                            _mm256_mul_ps(x2, bv[2][c]),
                                        ),
                                        _mm256_mul_ps(x3, bv[3][c]),
                                    );
                                    *x = _mm256_add_ps(*x, t);
                                }
                            }
                            p += 4;
                        }
                        while p < ks.end {
                            for (r, row) in acc.iter_mut().enumerate() {
                                let x = _mm256_broadcast_ss(&*ap.add((i + r) * k + p));
                                for (c, y) in row.iter_mut().enumerate() {
                                    let bj = _mm256_loadu_ps(bp.add(p * n + j + 8 * c));
                                    *y = _mm256_add_ps(*y, _mm256_mul_ps(x, bj));
                                }
                            }
                            p += 1;
                        }
                        for (r, row) in acc.iter().enumerate() {
                            for (c, x) in row.iter().enumerate() {
                                _mm256_storeu_ps(op.add((i + r) * n + j + 8 * c), *x);
                            }
                        }
                        j += 8 * C;
                    }
                    i += R;
                }
            }
        }
    };
}

tile_kernel!(tile4x8, "avx2", 4, 1);
tile_kernel!(tile4x32, "avx2,avx512f,avx512vl", 4, 4);

#[cfg(test)]
mod tests {
    use super::*;

    /// The summation order, written out once more as plainly as possible.
    fn reference(a: &[f32], b: &[f32], out: &mut [f32], m: usize, n: usize, k: usize) {
        scalar(a, b, out, (n, k), 0..m, 0..n, 0..k);
    }

    /// Row-major `m x k` and `k x n` operands of small varied values.
    fn operands(m: usize, n: usize, k: usize) -> (Vec<f32>, Vec<f32>) {
        let a = (0..m * k)
            .map(|i| ((i * 7 % 13) as f32 - 6.0) * 0.37)
            .collect();
        let b = (0..k * n)
            .map(|i| ((i * 5 % 11) as f32 - 5.0) * 0.29)
            .collect();
        (a, b)
    }

    fn same_bits(x: &[f32], y: &[f32]) -> bool {
        x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits())
    }

    #[test]
    fn tiled_kernels_equal_the_scalar_order_bit_for_bit() {
        for &(m, n, k) in &[
            (128, 128, 32),
            (5, 37, 7),
            (4, 8, 4),
            (9, 70, 13),
            (64, 96, 3),
            (1, 1, 1),
        ] {
            let (a, b) = operands(m, n, k);
            let init: Vec<f32> = (0..m * n).map(|i| (i % 17) as f32 * 0.1).collect();
            let mut want = init.clone();
            reference(&a, &b, &mut want, m, n, k);
            let mut got = init.clone();
            dot_kernel(&a, &b, &mut got, m, n, k);
            assert!(same_bits(&got, &want), "{m}x{n}x{k}");
        }
    }

    #[test]
    fn parallel_blocked_product_equals_the_scalar_order_bit_for_bit() {
        // Past the K and N slices (256, 512), K not a multiple of four,
        // rows not a multiple of the row block.
        for &(m, n, k) in &[(70, 530, 517), (3, 9, 1030), (130, 1100, 260), (1, 1, 1)] {
            let (a, b) = operands(m, n, k);
            let mut want = vec![0.0; m * n];
            reference(&a, &b, &mut want, m, n, k);
            let mut got = vec![0.0; m * n];
            matmul_parallel(&a, &b, &mut got, m, n, k);
            assert!(same_bits(&got, &want), "{m}x{n}x{k}");
        }
        // Empty and short operands do nothing.
        let mut none: Vec<f32> = vec![];
        matmul_parallel(&[], &[], &mut none, 0, 0, 0);
        let mut out = vec![1.0; 4];
        matmul_parallel(&[1.0; 3], &[1.0; 4], &mut out, 2, 2, 2);
        assert_eq!(out, vec![1.0; 4]);
    }
}
