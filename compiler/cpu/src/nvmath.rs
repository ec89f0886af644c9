//! fp32 `log`, `log2`, `sin`, `cos` and `tl.sqrt` as the GPU computes them,
//! so that the CPU backend, the reference every GPU result is compared
//! with, gives the same bits (`tl.randn` is `sqrt(-2 log u) * cos(2 pi v)`,
//! and Triton's numbers are the ones people compare with).
//!
//! On the GPU the four functions are NVIDIA's libdevice (`__nv_logf`, ...)
//! in its flush-to-zero flavour (Triton links it so; so does the GPU
//! backend): a reduction to a small interval and a polynomial evaluated with
//! fused multiply-adds that flush subnormal operands and results to zero.
//! The functions below follow that evaluation step for step (the same
//! reduction, the same coefficients, read from the library's bitcode, the
//! same order of `fma`s), so each rounding happens as it does there. Plain
//! multiplies and adds of the library keep subnormals, as theirs do.
//!
//! `tl.sqrt` is the hardware's `sqrt.approx.ftz.f32`, faithful but not
//! correctly rounded (1 ulp off for about 17 % of inputs). Its result
//! depends only on the mantissa and the parity of the exponent; the table
//! `data/sqrt_approx_sm90.zlib` holds, for those 2^24 cases, the difference
//! in ulps between the hardware's result and the correctly rounded root, as
//! measured on an sm_90 GPU by `tests/gpu/reference/sqrt_approx.py`.

use std::sync::OnceLock;

/// `x` with a subnormal value flushed to a zero of its sign.
fn ftz(x: f32) -> f32 {
    if x.is_subnormal() {
        f32::from_bits(x.to_bits() & 0x8000_0000)
    } else {
        x
    }
}

/// `fma.rn.ftz.f32`: subnormal operands and result flushed.
fn fma(a: f32, b: f32, c: f32) -> f32 {
    ftz(ftz(a).mul_add(ftz(b), ftz(c)))
}

/// `mul.rn.ftz.f32`.
fn mul(a: f32, b: f32) -> f32 {
    ftz(ftz(a) * ftz(b))
}

const fn f(bits: u32) -> f32 {
    f32::from_bits(bits)
}

/// 2^-126, the smallest normal float.
const MIN_NORMAL: f32 = f(0x0080_0000);

/// The reduction shared by `log` and `log2`: `x = 2^e * m` with `m` in
/// `[2/3, 4/3)` (`log`) or `[0.707, 1.414)` (`log2`, `split` says where the
/// interval starts), subnormals scaled up first. Returns (the scaled input,
/// `e` as a float, `m - 1`).
fn log_reduce(a: f32, split: u32) -> (f32, f32, f32) {
    let (x, bias) = if a < MIN_NORMAL {
        (a * f(0x4b00_0000), -23.0)
    } else {
        (a, 0.0)
    };
    let e = (x.to_bits().wrapping_sub(split) & 0xff80_0000) as i32;
    let m = f(x.to_bits().wrapping_sub(e as u32));
    (x, fma(e as f32, f(0x3400_0000), bias), m - 1.0)
}

/// Infinities, NaNs, negative inputs and zeros, as the library finishes.
fn log_special(x: f32, r: f32) -> f32 {
    let r = if x.to_bits() >= 0x7f80_0000 {
        fma(x, f32::INFINITY, f32::INFINITY)
    } else {
        r
    };
    if x == 0.0 {
        f32::NEG_INFINITY
    } else {
        r
    }
}

/// Horner's rule in `fma`s, highest coefficient first.
fn horner(t: f32, coeffs: &[u32]) -> f32 {
    let mut p = f(coeffs[0]);
    for &c in &coeffs[1..] {
        p = fma(p, t, f(c));
    }
    p
}

/// `log(1 + t) = t + t^2 * P(t)` of `__nv_logf`: P's coefficients, highest
/// first (the last is -1/2).
const LOG_POLY: [u32; 9] = [
    0xbe05_5027,
    0x3e10_39f6,
    0xbdf8_cdcc,
    0x3e0f_2955,
    0xbe2a_d8b9,
    0x3e4c_ed0b,
    0xbe7f_ff22,
    0x3eaa_aa78,
    0xbf00_0000,
];

/// `log2(1 + t) = t / ln 2 + t^2 * P(t)` of `__nv_log2f`.
const LOG2_POLY: [u32; 10] = [
    0x3dc6_b27f,
    0xbe2c_7f30,
    0x3e2f_cf2a,
    0xbe37_4e43,
    0x3e52_0bf4,
    0xbe76_3c8b,
    0x3e93_bf99,
    0xbeb8_aa49,
    0x3ef6_384a,
    0xbf38_aa3b,
];

/// `__nv_logf`.
pub fn logf(a: f32) -> f32 {
    let (x, e, t) = log_reduce(a, 0x3f2a_aaab);
    let p = horner(t, &LOG_POLY);
    let q = fma(p * t, t, t);
    log_special(x, fma(e, f(0x3f31_7218), q))
}

/// `__nv_log2f`.
pub fn log2f(a: f32) -> f32 {
    let (x, e, t) = log_reduce(a, 0x3f35_04f3);
    let p = horner(t, &LOG2_POLY);
    let q = fma(t, f(0x3fb8_aa3b), p * t * t);
    log_special(x, q + e)
}

/// 2/pi in 192 bits, for the reduction of large arguments.
const TWO_OVER_PI: [u32; 6] = [
    0x3c43_9041,
    0xdb62_9599,
    0xf534_ddc0,
    0xfc27_57d1,
    0x4e44_1529,
    0xa2f9_836e,
];

/// `a` reduced by multiples of pi/2: (the quadrant, the remainder in
/// `[-pi/4, pi/4]`).
fn trig_reduce(a: f32) -> (i32, f32) {
    let j = ftz(a * f(0x3f22_f983)).round_ties_even() as i32;
    let jf = j as f32;
    let t = fma(jf, f(0xbfc9_0fda), a);
    let t = fma(jf, f(0xb3a2_2168), t);
    let t = fma(jf, f(0xa7c2_34c5), t);
    if ftz(a).abs() < 105615.0 || a.is_nan() {
        return (j, t);
    }
    if a.is_infinite() {
        return (0, mul(a, 0.0));
    }
    // Payne and Hanek: the mantissa times 2/pi in fixed point, keeping the
    // 64 bits around the binary point that the exponent selects.
    let bits = a.to_bits();
    let sign = bits & 0x8000_0000;
    let e = ((bits >> 23) & 0xff) as i32 - 128;
    let mant = (bits << 8) | 0x8000_0000;
    let mut words = [0u32; 7];
    let mut carry = 0u32;
    for (w, &c) in words.iter_mut().zip(&TWO_OVER_PI) {
        let p = u64::from(c) * u64::from(mant) + u64::from(carry);
        *w = p as u32;
        carry = (p >> 32) as u32;
    }
    words[6] = carry;
    let at = (4 - (e >> 5)) as usize;
    let shift = (e & 31) as u32;
    let (mut hi, mut lo) = (words[at + 2], words[at + 1]);
    if shift != 0 {
        hi = (hi << shift).wrapping_add(lo >> (32 - shift));
        lo = (lo << shift).wrapping_add(words[at] >> (32 - shift));
    }
    let q0 = hi >> 30;
    hi = (hi << 2).wrapping_add(lo >> 30);
    lo <<= 2;
    let mut q = q0.wrapping_add(hi >> 31) as i32;
    if sign != 0 {
        q = q.wrapping_neg();
    }
    let mut sign = sign;
    if hi >> 31 != 0 {
        hi = !hi;
        lo = !lo;
        sign ^= 0x8000_0000;
    }
    let fixed = ((u64::from(hi) << 32) | u64::from(lo)) as i64;
    let r = (fixed as f64 * f64::from_bits(0x3bf9_21fb_5444_2d19)) as f32;
    (q, if sign != 0 { -r } else { r })
}

/// sin (quadrant `q`) or cos (quadrant `q + 1`) of the reduced `t`.
fn sin_kernel(q: i32, t: f32) -> f32 {
    let t2 = mul(t, t);
    let odd = q & 1 != 0;
    let base = if odd { 1.0 } else { t };
    let z = fma(t2, base, 0.0);
    let c = if odd {
        fma(f(0x37cb_ac00), t2, f(0xbab6_07ed))
    } else {
        f(0xb94d_4153)
    };
    let c = fma(c, t2, f(if odd { 0x3d2a_aabb } else { 0x3c08_85e4 }));
    let c = fma(c, t2, f(if odd { 0xbeff_ffff } else { 0xbe2a_aaa8 }));
    let r = fma(c, z, base);
    if q & 2 != 0 {
        fma(r, -1.0, 0.0)
    } else {
        r
    }
}

/// `__nv_sinf`.
pub fn sinf(a: f32) -> f32 {
    let (q, t) = trig_reduce(a);
    sin_kernel(q, t)
}

/// `__nv_cosf`.
pub fn cosf(a: f32) -> f32 {
    let (q, t) = trig_reduce(a);
    sin_kernel(q.wrapping_add(1), t)
}

/// The measured table: one signed byte per (exponent parity, mantissa),
/// zlib-compressed; the first 2^23 entries are for even exponents.
static SQRT_TABLE: &[u8] = include_bytes!("../data/sqrt_approx_sm90.zlib");

fn sqrt_table() -> Option<&'static [u8]> {
    static TABLE: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    TABLE
        .get_or_init(|| {
            let t = miniz_oxide::inflate::decompress_to_vec_zlib(SQRT_TABLE).ok()?;
            (t.len() == 1 << 24).then_some(t)
        })
        .as_deref()
}

/// `sqrt.approx.ftz.f32` (Triton's `tl.sqrt` in fp32).
pub fn sqrt_approx(x: f32) -> f32 {
    let x = ftz(x);
    let root = x.sqrt();
    if !root.is_normal() {
        // Zeros, infinities, NaNs (negative inputs included).
        return root;
    }
    let bits = x.to_bits();
    let odd_exponent = (bits >> 23) & 1 == 0;
    let index = (usize::from(odd_exponent) << 23) | (bits & 0x7f_ffff) as usize;
    match sqrt_table() {
        Some(t) => f(root
            .to_bits()
            .wrapping_add_signed(i32::from(t[index] as i8))),
        None => root,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_whole() {
        let t = sqrt_table().expect("the sqrt table decompresses to 2^24 entries");
        assert!(t.iter().all(|&d| matches!(d as i8, -1..=1)));
    }

    #[test]
    fn special_values() {
        assert_eq!(logf(1.0), 0.0);
        assert_eq!(logf(0.0), f32::NEG_INFINITY);
        assert!(logf(-1.0).is_nan());
        assert_eq!(logf(f32::INFINITY), f32::INFINITY);
        assert_eq!(log2f(8.0), 3.0);
        assert!(sinf(f32::INFINITY).is_nan());
        assert_eq!(cosf(0.0), 1.0);
        assert_eq!(sqrt_approx(4.0), 2.0);
        assert_eq!(sqrt_approx(f(1)), 0.0);
        assert!(sqrt_approx(-1.0).is_nan());
    }
}
