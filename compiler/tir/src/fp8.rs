//! Exact fp8 conversions (e5m2 and e4m3fn), rounding to nearest, ties to even.
//!
//! Kernels convert with saturation to the largest finite value, as Triton's
//! GPU code does (`cvt.rn.satfinite`); the host follows torch, where an
//! overflow becomes infinity (e5m2) or NaN (e4m3fn, which has no infinity).

use crate::types::DType;

struct Format {
    mbits: i32,
    bias: i32,
    max_finite: f64,
    has_inf: bool,
}

fn format(d: DType) -> Format {
    match d {
        DType::F8E5 => Format {
            mbits: 2,
            bias: 15,
            max_finite: 57344.0,
            has_inf: true,
        },
        _ => Format {
            mbits: 3,
            bias: 7,
            max_finite: 448.0,
            has_inf: false,
        },
    }
}

/// Encode `x` as an fp8 byte of format `d`. With `saturate`, magnitudes past the
/// largest finite value become it; otherwise they become infinity or NaN.
pub fn encode_fp8(x: f64, d: DType, saturate: bool) -> u8 {
    let f = format(d);
    let nan: u8 = 0x7F;
    if x.is_nan() {
        return nan;
    }
    let sign: u8 = if x.is_sign_negative() { 0x80 } else { 0 };
    let a = x.abs();
    if a == 0.0 {
        return sign;
    }
    let overflow = |sign: u8| {
        if saturate {
            sign | encode_fp8(f.max_finite, d, false)
        } else if f.has_inf {
            sign | 0x7C
        } else {
            sign | nan
        }
    };
    // Far past the largest finite value (and infinity): no encoding arithmetic needed.
    if a > 2.0 * f.max_finite {
        return overflow(sign);
    }
    let emin = 1 - f.bias;
    let mut e = a.log2().floor() as i32;
    // log2 of a value just below a power of two can round up; correct it.
    if 2f64.powi(e) > a {
        e -= 1;
    }
    let bits: u32 = if e < emin {
        // Subnormal: multiples of 2^(emin - mbits). A round up to 2^mbits is
        // the smallest normal, which the same bit pattern encodes.
        (a / 2f64.powi(emin - f.mbits)).round_ties_even() as u32
    } else {
        let mut q = (a / 2f64.powi(e - f.mbits)).round_ties_even() as u32;
        if q == 1 << (f.mbits + 1) {
            e += 1;
            q = 1 << f.mbits;
        }
        (((e + f.bias) as u32) << f.mbits) | (q - (1 << f.mbits))
    };
    let value = decode_fp8(bits.min(0x7F) as u8, d);
    if bits > 0x7F || value.is_nan() || value.is_infinite() || value > f.max_finite {
        return overflow(sign);
    }
    sign | bits as u8
}

/// Decode an fp8 byte of format `d`.
pub fn decode_fp8(b: u8, d: DType) -> f64 {
    let f = format(d);
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let ebits = 7 - f.mbits;
    let exp = ((b & 0x7F) >> f.mbits) as i32;
    let man = (b & ((1 << f.mbits) - 1)) as i32;
    let emax_field = (1 << ebits) - 1;
    if f.has_inf && exp == emax_field {
        return if man == 0 {
            sign * f64::INFINITY
        } else {
            f64::NAN
        };
    }
    if !f.has_inf && exp == emax_field && man == (1 << f.mbits) - 1 {
        return f64::NAN;
    }
    if exp == 0 {
        return sign * man as f64 * 2f64.powi(1 - f.bias - f.mbits);
    }
    sign * (1.0 + man as f64 / (1 << f.mbits) as f64) * 2f64.powi(exp - f.bias)
}

/// [`encode_fp8`] of an `f32`, computed on its bits (no logarithm or
/// division): the CPU backend's per-element conversion. Gives the same
/// byte as `encode_fp8(x as f64, d, saturate)` for every input (tested).
pub fn encode_fp8_f32(x: f32, d: DType, saturate: bool) -> u8 {
    let f = format(d);
    let bits = x.to_bits();
    let sign = ((bits >> 24) & 0x80) as u8;
    let mag = bits & 0x7FFF_FFFF;
    if mag > 0x7F80_0000 {
        return 0x7F;
    }
    let max_code: u32 = if f.has_inf { 0x7B } else { 0x7E };
    let overflow = if saturate {
        sign | max_code as u8
    } else if f.has_inf {
        sign | 0x7C
    } else {
        sign | 0x7F
    };
    if mag == 0x7F80_0000 {
        return overflow;
    }
    let exp_field = (mag >> 23) as i32;
    if exp_field == 0 {
        // fp32 subnormals (below 2^-126) are far under half of the
        // smallest fp8 value.
        return sign;
    }
    let m = f.mbits as u32;
    let e = exp_field - 127;
    let sig = (mag & 0x7F_FFFF) | 0x80_0000; // 24 bits: 1.mantissa
    let emin = 1 - f.bias;
    // Drop `shift` low bits of the significand, to nearest, ties to even.
    let shift = 23 - m + (emin - e).max(0) as u32;
    let q = if shift > 25 {
        0
    } else {
        let kept = sig >> shift;
        let rest = sig & ((1u32 << shift) - 1);
        let half = 1u32 << (shift - 1);
        kept + u32::from(rest > half || (rest == half && kept & 1 == 1))
    };
    let code = if e < emin {
        // Subnormal; a round up to 2^m is the smallest normal's code.
        q
    } else if q == 1 << (m + 1) {
        ((e + 1 + f.bias) as u32) << m
    } else {
        (((e + f.bias) as u32) << m) | (q - (1 << m))
    };
    if code > max_code {
        return overflow;
    }
    sign | code as u8
}

/// [`decode_fp8`] as an `f32` (exact: every fp8 value is an `f32`), from a
/// table built once per format.
pub fn decode_fp8_f32(b: u8, d: DType) -> f32 {
    static E5: std::sync::OnceLock<[f32; 256]> = std::sync::OnceLock::new();
    static E4: std::sync::OnceLock<[f32; 256]> = std::sync::OnceLock::new();
    let cell = if d == DType::F8E5 { &E5 } else { &E4 };
    let table = cell.get_or_init(|| std::array::from_fn(|i| decode_fp8(i as u8, d) as f32));
    table[b as usize]
}

/// Round to the nearest fp8 value (saturating), as an `f64`.
pub fn round_to_fp8(x: f64, d: DType) -> f64 {
    decode_fp8(encode_fp8(x, d, true), d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_round_trips() {
        for d in [DType::F8E5, DType::F8E4NV] {
            for b in 0..=255u8 {
                let v = decode_fp8(b, d);
                if v.is_nan() {
                    assert!(decode_fp8(encode_fp8(v, d, false), d).is_nan());
                    continue;
                }
                assert_eq!(encode_fp8(v, d, false), b, "{d} byte {b:#x} value {v}");
            }
        }
    }

    #[test]
    fn known_values_and_rounding() {
        assert_eq!(decode_fp8(0x7E, DType::F8E4NV), 448.0);
        assert_eq!(decode_fp8(0x7B, DType::F8E5), 57344.0);
        assert_eq!(decode_fp8(0x01, DType::F8E4NV), 2f64.powi(-9));
        // 1.0625 lies halfway between 1.0 and 1.125 in e4m3: ties go to even (1.0).
        assert_eq!(round_to_fp8(1.0625, DType::F8E4NV), 1.0);
        assert_eq!(round_to_fp8(1.1875, DType::F8E4NV), 1.25);
        assert_eq!(round_to_fp8(1000.0, DType::F8E4NV), 448.0);
        assert!(decode_fp8(encode_fp8(1000.0, DType::F8E4NV, false), DType::F8E4NV).is_nan());
        assert_eq!(
            decode_fp8(encode_fp8(1e6, DType::F8E5, false), DType::F8E5),
            f64::INFINITY
        );
        assert_eq!(round_to_fp8(-3.0, DType::F8E5), -3.0);
    }

    /// Inputs covering every sign, exponent and top seven mantissa bits,
    /// with low bits that put each rounding position below, at and above
    /// its halfway point.
    fn f32_cases() -> impl Iterator<Item = f32> {
        const LOW: [u32; 8] = [0, 1, 0x3FFF, 0x4000, 0x7FFF, 0x8000, 0x8001, 0xFFFF];
        (0..=0xFFFFu32).flat_map(|hi| LOW.iter().map(move |lo| f32::from_bits(hi << 16 | lo)))
    }

    #[test]
    fn f32_encoder_matches_the_exact_one() {
        for d in [DType::F8E5, DType::F8E4NV] {
            for saturate in [true, false] {
                for x in f32_cases() {
                    assert_eq!(
                        encode_fp8_f32(x, d, saturate),
                        encode_fp8(x as f64, d, saturate),
                        "{d} {x:e} ({:#x}) saturate {saturate}",
                        x.to_bits()
                    );
                }
            }
        }
    }

    #[test]
    fn f32_decoder_matches_the_exact_one() {
        for d in [DType::F8E5, DType::F8E4NV] {
            for b in 0..=255u8 {
                let (x, y) = (decode_fp8_f32(b, d), decode_fp8(b, d));
                assert!(x.to_bits() == (y as f32).to_bits(), "{d} {b:#x}");
            }
        }
    }

    /// Every `STRIDE`th fp32 bit pattern (all of them with `STRIDE=1`):
    /// `TILEBOOK_FP8_STRIDE=1 cargo test --release -p tilebook-tir -- --ignored`.
    #[test]
    #[ignore = "long: a sweep over the fp32 bit patterns"]
    fn f32_encoder_sweep() {
        let stride: usize = std::env::var("TILEBOOK_FP8_STRIDE")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(7);
        let mut n = 0u64;
        for bits in (0..=u32::MAX).step_by(stride.max(1)) {
            let x = f32::from_bits(bits);
            for d in [DType::F8E5, DType::F8E4NV] {
                assert_eq!(
                    encode_fp8_f32(x, d, true),
                    encode_fp8(x as f64, d, true),
                    "{bits:#x}"
                );
            }
            n += 1;
        }
        eprintln!("{n} inputs, both formats, saturating: equal");
    }
}
