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
}
