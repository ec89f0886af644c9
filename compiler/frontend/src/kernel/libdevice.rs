//! `libdevice.*` in kernels (`from triton.language.extra import libdevice`,
//! or `triton.language.extra.cuda.libdevice`), and `tl.erf`: NVIDIA's math
//! library by its own names. Functions the language already has (`exp`,
//! `sqrt`, `fabs`, `pow`, `fmin`, ...) lower as those; the rest become the
//! tile IR's math library ops (`lib.asin`, `lib.atan2`), which the GPU
//! backend calls in libdevice and the CPU backend in `libm`.
//!
//! As in Triton, the arguments must be floating-point (fp16 and bf16 are
//! computed in fp32 and rounded back).

use super::builtins::Args;
use super::lower::{KVal, LResult, Lowerer};
use crate::source::Span;
use tilebook_tir::libm::{LibFn, LibFn2, LIB_FNS, LIB_FNS2};
use tilebook_tir::{BinOp, DType, OpKind, UnOp};

/// libdevice names that are functions of the language already.
const ALIASES: &[(&str, &str)] = &[
    ("exp", "tl.exp"),
    ("exp2", "tl.exp2"),
    ("log", "tl.log"),
    ("log2", "tl.log2"),
    ("sin", "tl.sin"),
    ("cos", "tl.cos"),
    ("sqrt", "tl.sqrt"),
    ("rsqrt", "tl.rsqrt"),
    ("floor", "tl.floor"),
    ("ceil", "tl.ceil"),
    ("fabs", "tl.abs"),
    ("abs", "tl.abs"),
    ("pow", "tl.pow"),
    ("fmin", "tl.minimum"),
    ("fmax", "tl.maximum"),
    ("fma", "tl.fma"),
    ("div_rn", "tl.div_rn"),
    ("sqrt_rn", "tl.sqrt_rn"),
    ("umulhi", "tl.umulhi"),
];

/// Every name `libdevice` has in tilebook (completion, "did you mean").
pub fn names() -> impl Iterator<Item = &'static str> {
    ALIASES
        .iter()
        .map(|(n, _)| *n)
        .chain(LIB_FNS.iter().map(|e| e.1))
        .chain(LIB_FNS2.iter().map(|e| e.1))
}

/// The documentation line of `libdevice.<name>`: (signature, text).
pub fn doc(name: &str) -> Option<(String, String)> {
    if let Some((_, tl)) = ALIASES.iter().find(|(n, _)| *n == name) {
        return Some((
            format!("libdevice.{name}(...)"),
            format!("The same as {tl}."),
        ));
    }
    let what = "elementwise on floating-point blocks (fp16 and bf16 computed in fp32); \
                NVIDIA's libdevice on the GPU, the libm crate on the CPU backend.";
    if LIB_FNS.iter().any(|e| e.1 == name) {
        return Some((
            format!("libdevice.{name}(x)"),
            format!("libdevice's {name}, {what}"),
        ));
    }
    if LIB_FNS2.iter().any(|e| e.1 == name) {
        return Some((
            format!("libdevice.{name}(x, y)"),
            format!("libdevice's {name}, {what}"),
        ));
    }
    None
}

/// Whether `libdevice.<name>` exists.
pub(crate) fn is_member(name: &str) -> bool {
    names().any(|n| n == name)
}

impl Lowerer<'_> {
    /// A call of `libdevice.<name>` (or `tl.erf`, which is `libdevice.erf`).
    pub(super) fn libdevice(&mut self, name: &str, args: Args, span: &Span) -> LResult<KVal> {
        if let Some((_, tl)) = ALIASES.iter().find(|(n, _)| *n == name) {
            return self.builtin(tl, args, span);
        }
        let what = format!("libdevice.{name}");
        if let Some(f) = LibFn::from_base(name) {
            let a = self.bind(&what, &["arg0"], &args, span)?;
            let x = self.required(&what, "arg0", &a[0], span)?;
            self.float_dtype(&x.0, &what, span)?;
            return self.math(UnOp::Lib(f), &x.0, &what, span);
        }
        if let Some(f) = LibFn2::from_base(name) {
            let a = self.bind(&what, &["arg0", "arg1"], &args, span)?;
            let x = self.required(&what, "arg0", &a[0], span)?;
            let y = self.required(&what, "arg1", &a[1], span)?;
            self.float_dtype(&x.0, &what, span)?;
            self.float_dtype(&y.0, &what, span)?;
            let (xv, yv, d) = self.promote_pair(&x.0, &y.0, false, &what, span)?;
            let compute = if d == DType::F64 { d } else { DType::F32 };
            let xc = self.cast(xv, compute, span);
            let yc = self.cast(yv, compute, span);
            let t = self.ty(xc);
            let r = self.emit1(OpKind::Binary(BinOp::Lib(f)), vec![xc, yc], t, span);
            return Ok(KVal::T(self.cast(r, d, span)));
        }
        let hint = crate::diag::did_you_mean(name, names(), "libdevice.");
        Err(self.err(
            "AttributeError",
            format!("libdevice has no function `{name}` in tilebook{hint}"),
            span,
        ))
    }

    /// The dtype of a libdevice argument, which must be floating-point.
    fn float_dtype(&mut self, v: &KVal, what: &str, span: &Span) -> LResult<DType> {
        match self.operand_dtype(v) {
            Some(d) if d.is_float() => Ok(d),
            Some(d) => Err(self.err(
                "TypeError",
                format!("{what} expects floating-point arguments, got {d}"),
                span,
            )),
            None => Err(self.err(
                "TypeError",
                format!("{what} expects floating-point arguments, got a pointer"),
                span,
            )),
        }
    }
}
