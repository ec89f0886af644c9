//! The math library functions of the tile IR (`lib.asin`, `lib.atan2`, ...)
//! on the CPU backend: the `libm` crate's functions, chosen by the
//! function's index in `tilebook_tir::libm::LIB_FNS` / `LIB_FNS2` (generated
//! code passes the index as the first argument).

use tilebook_tir::libm::{LibFn, LibFn2, LIB_FNS, LIB_FNS2};

fn lib1(i: i32) -> LibFn {
    LIB_FNS.get(i as usize).map_or(LibFn::Erf, |e| e.0)
}

fn lib2(i: i32) -> LibFn2 {
    LIB_FNS2.get(i as usize).map_or(LibFn2::Atan2, |e| e.0)
}

pub extern "C" fn tb_lib1_f64(f: i32, x: f64) -> f64 {
    match lib1(f) {
        LibFn::Acos => libm::acos(x),
        LibFn::Acosh => libm::acosh(x),
        LibFn::Asin => libm::asin(x),
        LibFn::Asinh => libm::asinh(x),
        LibFn::Atan => libm::atan(x),
        LibFn::Atanh => libm::atanh(x),
        LibFn::Cbrt => libm::cbrt(x),
        LibFn::Cosh => libm::cosh(x),
        LibFn::Erf => libm::erf(x),
        LibFn::Erfc => libm::erfc(x),
        LibFn::Exp10 => libm::exp10(x),
        LibFn::Expm1 => libm::expm1(x),
        LibFn::J0 => libm::j0(x),
        LibFn::J1 => libm::j1(x),
        LibFn::Lgamma => libm::lgamma(x),
        LibFn::Log10 => libm::log10(x),
        LibFn::Log1p => libm::log1p(x),
        LibFn::Rint => libm::rint(x),
        LibFn::Round => libm::round(x),
        LibFn::Sinh => libm::sinh(x),
        LibFn::Tan => libm::tan(x),
        LibFn::Tanh => libm::tanh(x),
        LibFn::Tgamma => libm::tgamma(x),
        LibFn::Trunc => libm::trunc(x),
        LibFn::Y0 => libm::y0(x),
        LibFn::Y1 => libm::y1(x),
    }
}

pub extern "C" fn tb_lib1_f32(f: i32, x: f32) -> f32 {
    match lib1(f) {
        LibFn::Acos => libm::acosf(x),
        LibFn::Acosh => libm::acoshf(x),
        LibFn::Asin => libm::asinf(x),
        LibFn::Asinh => libm::asinhf(x),
        LibFn::Atan => libm::atanf(x),
        LibFn::Atanh => libm::atanhf(x),
        LibFn::Cbrt => libm::cbrtf(x),
        LibFn::Cosh => libm::coshf(x),
        LibFn::Erf => libm::erff(x),
        LibFn::Erfc => libm::erfcf(x),
        LibFn::Exp10 => libm::exp10f(x),
        LibFn::Expm1 => libm::expm1f(x),
        LibFn::J0 => libm::j0f(x),
        LibFn::J1 => libm::j1f(x),
        LibFn::Lgamma => libm::lgammaf(x),
        LibFn::Log10 => libm::log10f(x),
        LibFn::Log1p => libm::log1pf(x),
        LibFn::Rint => libm::rintf(x),
        LibFn::Round => libm::roundf(x),
        LibFn::Sinh => libm::sinhf(x),
        LibFn::Tan => libm::tanf(x),
        LibFn::Tanh => libm::tanhf(x),
        LibFn::Tgamma => libm::tgammaf(x),
        LibFn::Trunc => libm::truncf(x),
        LibFn::Y0 => libm::y0f(x),
        LibFn::Y1 => libm::y1f(x),
    }
}

pub extern "C" fn tb_lib2_f64(f: i32, x: f64, y: f64) -> f64 {
    match lib2(f) {
        LibFn2::Atan2 => libm::atan2(x, y),
        LibFn2::Copysign => libm::copysign(x, y),
        LibFn2::Fdim => libm::fdim(x, y),
        LibFn2::Fmod => libm::fmod(x, y),
        LibFn2::Hypot => libm::hypot(x, y),
        LibFn2::Nextafter => libm::nextafter(x, y),
        LibFn2::Remainder => libm::remainder(x, y),
    }
}

pub extern "C" fn tb_lib2_f32(f: i32, x: f32, y: f32) -> f32 {
    match lib2(f) {
        LibFn2::Atan2 => libm::atan2f(x, y),
        LibFn2::Copysign => libm::copysignf(x, y),
        LibFn2::Fdim => libm::fdimf(x, y),
        LibFn2::Fmod => libm::fmodf(x, y),
        LibFn2::Hypot => libm::hypotf(x, y),
        LibFn2::Nextafter => libm::nextafterf(x, y),
        LibFn2::Remainder => libm::remainderf(x, y),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_function_is_reached_by_its_index() {
        // Each index maps to its own function: values at 0.5 differ
        // between neighbours, and asin(0.5) is pi/6.
        let i = LibFn::Asin.index() as i32;
        assert!((tb_lib1_f64(i, 0.5) - std::f64::consts::FRAC_PI_6).abs() < 1e-15);
        assert!((tb_lib1_f32(LibFn::Erf.index() as i32, 0.5) - 0.520_499_9).abs() < 1e-6);
        assert_eq!(tb_lib2_f64(LibFn2::Hypot.index() as i32, 3.0, 4.0), 5.0);
        assert_eq!(
            tb_lib2_f32(LibFn2::Copysign.index() as i32, 2.0, -1.0),
            -2.0
        );
    }
}
