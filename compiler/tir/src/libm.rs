//! The math library behind `libdevice.*` (and `tl.erf`, `tl.tanh`, ...):
//! functions of one or two floats that neither backend has as an
//! instruction. Each has the name its libdevice function carries
//! (`__nv_asinf` / `__nv_asin`); the GPU backend calls libdevice, the CPU
//! backend the same function of the `libm` crate. The IR prints them as
//! `lib.asin` and `lib.atan2`.

/// A function of one float.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum LibFn {
    Acos,
    Acosh,
    Asin,
    Asinh,
    Atan,
    Atanh,
    Cbrt,
    Cosh,
    Erf,
    Erfc,
    Exp10,
    Expm1,
    J0,
    J1,
    Lgamma,
    Log10,
    Log1p,
    Rint,
    Round,
    Sinh,
    Tan,
    Tanh,
    Tgamma,
    Trunc,
    Y0,
    Y1,
}

/// A function of two floats.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum LibFn2 {
    Atan2,
    Copysign,
    Fdim,
    Fmod,
    Hypot,
    Nextafter,
    Remainder,
}

/// (function, its libdevice base name, its IR name).
pub const LIB_FNS: [(LibFn, &str, &str); 26] = [
    (LibFn::Acos, "acos", "lib.acos"),
    (LibFn::Acosh, "acosh", "lib.acosh"),
    (LibFn::Asin, "asin", "lib.asin"),
    (LibFn::Asinh, "asinh", "lib.asinh"),
    (LibFn::Atan, "atan", "lib.atan"),
    (LibFn::Atanh, "atanh", "lib.atanh"),
    (LibFn::Cbrt, "cbrt", "lib.cbrt"),
    (LibFn::Cosh, "cosh", "lib.cosh"),
    (LibFn::Erf, "erf", "lib.erf"),
    (LibFn::Erfc, "erfc", "lib.erfc"),
    (LibFn::Exp10, "exp10", "lib.exp10"),
    (LibFn::Expm1, "expm1", "lib.expm1"),
    (LibFn::J0, "j0", "lib.j0"),
    (LibFn::J1, "j1", "lib.j1"),
    (LibFn::Lgamma, "lgamma", "lib.lgamma"),
    (LibFn::Log10, "log10", "lib.log10"),
    (LibFn::Log1p, "log1p", "lib.log1p"),
    (LibFn::Rint, "rint", "lib.rint"),
    (LibFn::Round, "round", "lib.round"),
    (LibFn::Sinh, "sinh", "lib.sinh"),
    (LibFn::Tan, "tan", "lib.tan"),
    (LibFn::Tanh, "tanh", "lib.tanh"),
    (LibFn::Tgamma, "tgamma", "lib.tgamma"),
    (LibFn::Trunc, "trunc", "lib.trunc"),
    (LibFn::Y0, "y0", "lib.y0"),
    (LibFn::Y1, "y1", "lib.y1"),
];

pub const LIB_FNS2: [(LibFn2, &str, &str); 7] = [
    (LibFn2::Atan2, "atan2", "lib.atan2"),
    (LibFn2::Copysign, "copysign", "lib.copysign"),
    (LibFn2::Fdim, "fdim", "lib.fdim"),
    (LibFn2::Fmod, "fmod", "lib.fmod"),
    (LibFn2::Hypot, "hypot", "lib.hypot"),
    (LibFn2::Nextafter, "nextafter", "lib.nextafter"),
    (LibFn2::Remainder, "remainder", "lib.remainder"),
];

impl LibFn {
    /// The libdevice base name (`asin` for `__nv_asinf`).
    pub fn base(self) -> &'static str {
        LIB_FNS
            .iter()
            .find(|(f, _, _)| *f == self)
            .map_or("?", |e| e.1)
    }
    pub fn ir_name(self) -> &'static str {
        LIB_FNS
            .iter()
            .find(|(f, _, _)| *f == self)
            .map_or("?", |e| e.2)
    }
    pub fn from_base(name: &str) -> Option<LibFn> {
        LIB_FNS.iter().find(|e| e.1 == name).map(|e| e.0)
    }
    /// Its position in `LIB_FNS` (the CPU runtime's function index).
    pub fn index(self) -> u32 {
        LIB_FNS.iter().position(|(f, _, _)| *f == self).unwrap_or(0) as u32
    }
}

impl LibFn2 {
    pub fn base(self) -> &'static str {
        LIB_FNS2
            .iter()
            .find(|(f, _, _)| *f == self)
            .map_or("?", |e| e.1)
    }
    pub fn ir_name(self) -> &'static str {
        LIB_FNS2
            .iter()
            .find(|(f, _, _)| *f == self)
            .map_or("?", |e| e.2)
    }
    pub fn from_base(name: &str) -> Option<LibFn2> {
        LIB_FNS2.iter().find(|e| e.1 == name).map(|e| e.0)
    }
    pub fn index(self) -> u32 {
        LIB_FNS2
            .iter()
            .position(|(f, _, _)| *f == self)
            .unwrap_or(0) as u32
    }
}
