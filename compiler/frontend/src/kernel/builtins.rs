//! The `tl.*` builtins (and the Python builtins kernels may call), with
//! argument binding that reports unknown or missing arguments by name.

use super::lower::{KVal, LResult, Lowerer};
use super::semantic::{const_truth, shape_str, PyOp};
use super::ConstVal;
use crate::source::Span;
use tilebook_tir::{BinOp, Combine, DType, Elem, OpKind, Type, UnOp};

/// Positional and keyword arguments of a call, with their spans.
#[derive(Default, Clone)]
pub(crate) struct Args {
    pub pos: Vec<(KVal, Span)>,
    pub kw: Vec<(String, KVal, Span)>,
}

/// Largest block Triton allows (elements).
const MAX_NUMEL: usize = 1 << 20;

fn is_pow2(n: usize) -> bool {
    n > 0 && n & (n - 1) == 0
}

impl Lowerer<'_> {
    /// Bind arguments to parameter names; `*rest` collects the remaining positionals.
    pub(super) fn bind(
        &self,
        fname: &str,
        params: &[&str],
        args: &Args,
        span: &Span,
    ) -> LResult<Vec<Option<(KVal, Span)>>> {
        let mut out: Vec<Option<(KVal, Span)>> = vec![None; params.len()];
        let star = params.iter().position(|p| p.starts_with('*'));
        let npos = star.unwrap_or(params.len());
        for (i, a) in args.pos.iter().enumerate() {
            if i < npos {
                out[i] = Some(a.clone());
            } else if let Some(s) = star {
                let prev = out[s].take();
                let mut items = match prev {
                    Some((KVal::Tuple(t), _)) => t,
                    _ => vec![],
                };
                items.push(a.0.clone());
                out[s] = Some((KVal::Tuple(items), a.1.clone()));
            } else {
                return Err(self.err(
                    "TypeError",
                    format!(
                        "{fname}() takes at most {npos} positional arguments but {} were given",
                        args.pos.len()
                    ),
                    &a.1,
                ));
            }
        }
        for (k, v, s) in &args.kw {
            match params.iter().position(|p| p.trim_start_matches('*') == k) {
                Some(i) if out[i].is_some() => {
                    return Err(self.err(
                        "TypeError",
                        format!("{fname}() got multiple values for argument `{k}`"),
                        s,
                    ))
                }
                Some(i) => out[i] = Some((v.clone(), s.clone())),
                None => {
                    return Err(self.err(
                        "TypeError",
                        format!(
                            "{fname}() got an unexpected keyword argument `{k}` (it takes: {})",
                            params.join(", ")
                        ),
                        s,
                    ))
                }
            }
        }
        let _ = span;
        Ok(out)
    }

    pub(super) fn required(
        &self,
        fname: &str,
        name: &str,
        v: &Option<(KVal, Span)>,
        span: &Span,
    ) -> LResult<(KVal, Span)> {
        v.clone().ok_or_else(|| {
            self.err(
                "TypeError",
                format!("{fname}() is missing the argument `{name}`"),
                span,
            )
        })
    }

    pub(super) fn const_int(&self, v: &(KVal, Span), what: &str) -> LResult<i64> {
        match &v.0 {
            KVal::C(ConstVal::Int(i)) => Ok(*i),
            KVal::C(ConstVal::Bool(b)) => Ok(*b as i64),
            other => Err(self.err(
                "TypeError",
                format!(
                    "{what} must be a constexpr integer, got {}",
                    self.describe_kval(other)
                ),
                &v.1,
            )),
        }
    }

    pub(super) fn dtype_arg(&self, v: &(KVal, Span), what: &str) -> LResult<DType> {
        match &v.0 {
            KVal::C(ConstVal::DType(d)) => Ok(*d),
            KVal::C(ConstVal::PtrType(d)) => Err(self.err(
                "TypeError",
                format!(
                    "{what} must be an element dtype here, got the pointer type pointer<{}>",
                    d.name()
                ),
                &v.1,
            )),
            other => Err(self.err(
                "TypeError",
                format!(
                    "{what} must be a dtype such as tl.float32, got {}",
                    other.describe()
                ),
                &v.1,
            )),
        }
    }

    /// A block shape: a constexpr int or tuple of them, each a power of two.
    pub(super) fn shape_arg(&self, v: &(KVal, Span)) -> LResult<Vec<usize>> {
        let dims: Vec<ConstVal> = match &v.0 {
            KVal::C(ConstVal::Tuple(t)) => t.clone(),
            KVal::C(c @ ConstVal::Int(_)) => vec![c.clone()],
            KVal::Tuple(items) => {
                let mut out = vec![];
                for it in items {
                    match it {
                        KVal::C(c) => out.push(c.clone()),
                        _ => {
                            return Err(self.err(
                                "TypeError",
                                "block shapes must be constexpr integers",
                                &v.1,
                            ))
                        }
                    }
                }
                out
            }
            other => {
                return Err(self.err(
                    "TypeError",
                    format!(
                        "a shape must be a tuple of constexpr integers, got {}",
                        other.describe()
                    ),
                    &v.1,
                ))
            }
        };
        let mut shape = vec![];
        for d in dims {
            let ConstVal::Int(n) = d else {
                return Err(self.err(
                    "TypeError",
                    format!("block dimensions must be constexpr integers, got {d}"),
                    &v.1,
                ));
            };
            if n <= 0 || !is_pow2(n as usize) {
                return Err(self.err(
                    "ValueError",
                    format!("block dimensions must be powers of 2, got {n}"),
                    &v.1,
                ));
            }
            shape.push(n as usize);
        }
        self.check_numel(&shape, &v.1)?;
        Ok(shape)
    }

    pub(super) fn check_numel(&self, shape: &[usize], span: &Span) -> LResult<()> {
        let n: usize = shape.iter().product();
        if n > MAX_NUMEL {
            return Err(self.err(
                "ValueError",
                format!(
                    "a block of shape {} has {n} elements, more than the maximum of {MAX_NUMEL}",
                    shape_str(shape)
                ),
                span,
            ));
        }
        Ok(())
    }

    pub(super) fn axis_arg(
        &self,
        v: &Option<(KVal, Span)>,
        rank: usize,
        span: &Span,
    ) -> LResult<Option<usize>> {
        match v {
            None | Some((KVal::C(ConstVal::None), _)) => Ok(None),
            Some(a) => {
                let i = self.const_int(a, "axis")?;
                let r = rank as i64;
                if i < -r || i >= r {
                    return Err(self.err(
                        "ValueError",
                        format!("axis {i} is out of range for a block of rank {rank}"),
                        span,
                    ));
                }
                Ok(Some(if i < 0 { (i + r) as usize } else { i as usize }))
            }
        }
    }

    pub(super) fn flag(&self, v: &Option<(KVal, Span)>) -> bool {
        matches!(v, Some((KVal::C(c), _)) if const_truth(c))
    }

    /// Call a builtin function by its qualified name.
    pub fn builtin(&mut self, name: &str, args: Args, span: &Span) -> LResult<KVal> {
        if let Some(f) = name.strip_prefix("libdevice.") {
            return self.libdevice(f, args, span);
        }
        let n = name
            .strip_prefix("tl.")
            .or_else(|| name.strip_prefix("tl.math."))
            .unwrap_or(name);
        match n {
            "program_id" | "num_programs" => {
                let a = self.bind(n, &["axis"], &args, span)?;
                let axis = self.const_int(&self.required(n, "axis", &a[0], span)?, "axis")?;
                if !(0..3).contains(&axis) {
                    return Err(self.err(
                        "ValueError",
                        format!("{n} axis must be 0, 1 or 2, got {axis}"),
                        span,
                    ));
                }
                let kind = if n == "program_id" {
                    OpKind::ProgramId(axis as u8)
                } else {
                    OpKind::NumPrograms(axis as u8)
                };
                Ok(KVal::T(self.emit1(
                    kind,
                    vec![],
                    Type::scalar(DType::I32),
                    span,
                )))
            }
            "arange" => {
                let a = self.bind(n, &["start", "end"], &args, span)?;
                let start =
                    self.const_int(&self.required(n, "start", &a[0], span)?, "tl.arange start")?;
                let end =
                    self.const_int(&self.required(n, "end", &a[1], span)?, "tl.arange end")?;
                if end <= start {
                    return Err(self.err(
                        "ValueError",
                        format!("tl.arange needs end > start, got {start} and {end}"),
                        span,
                    ));
                }
                let len = (end - start) as usize;
                if !is_pow2(len) {
                    return Err(self.err(
                        "ValueError",
                        format!("tl.arange's range must be a power of 2, got {len} (end - start)"),
                        span,
                    ));
                }
                self.check_numel(&[len], span)?;
                let t = Type::block(Elem::Scalar(DType::I32), vec![len]);
                Ok(KVal::T(self.emit1(
                    OpKind::Arange(start, end),
                    vec![],
                    t,
                    span,
                )))
            }
            "zeros" | "full" => {
                let params: &[&str] = if n == "zeros" {
                    &["shape", "dtype"]
                } else {
                    &["shape", "value", "dtype"]
                };
                let a = self.bind(n, params, &args, span)?;
                let shape = self.shape_arg(&self.required(n, "shape", &a[0], span)?)?;
                let dt = self.dtype_arg(
                    &self.required(n, "dtype", &a[params.len() - 1], span)?,
                    "dtype",
                )?;
                let value = if n == "zeros" {
                    (KVal::C(ConstVal::Int(0)), span.clone())
                } else {
                    self.required(n, "value", &a[1], span)?
                };
                self.full(&shape, &value, dt)
            }
            "zeros_like" | "full_like" => {
                let params: &[&str] = if n == "zeros_like" {
                    &["input", "dtype"]
                } else {
                    &["input", "value", "dtype"]
                };
                let a = self.bind(n, params, &args, span)?;
                let input = self.required(n, "input", &a[0], span)?;
                let x = self.value_of(&input.0, &input.1)?;
                let t = self.ty(x);
                let dt = match &a[params.len() - 1] {
                    Some(d) if !matches!(d.0, KVal::C(ConstVal::None)) => {
                        self.dtype_arg(d, "dtype")?
                    }
                    _ => t.dtype().unwrap_or(DType::I64),
                };
                let value = if n == "zeros_like" {
                    (KVal::C(ConstVal::Int(0)), span.clone())
                } else {
                    self.required(n, "value", &a[1], span)?
                };
                self.full(&t.shape, &value, dt)
            }
            "load" => self.load(&args, span),
            "store" => self.store(&args, span),
            n if n.starts_with("atomic_") => self.atomic(n, &args, span),
            "dot" => self.dot(&args, span),
            "where" => {
                let a = self.bind(n, &["condition", "x", "y"], &args, span)?;
                let c = self.required(n, "condition", &a[0], span)?;
                let x = self.required(n, "x", &a[1], span)?;
                let y = self.required(n, "y", &a[2], span)?;
                self.select(&c.0, &x.0, &y.0, span)
            }
            "maximum" | "minimum" => {
                let a = self.bind(n, &["x", "y", "propagate_nan"], &args, span)?;
                let x = self.required(n, "x", &a[0], span)?;
                let y = self.required(n, "y", &a[1], span)?;
                self.minmax(n == "maximum", &x.0, &y.0, span)
            }
            "clamp" => {
                let a = self.bind(n, &["x", "min", "max", "propagate_nan"], &args, span)?;
                let x = self.required(n, "x", &a[0], span)?;
                let lo = self.required(n, "min", &a[1], span)?;
                let hi = self.required(n, "max", &a[2], span)?;
                let m = self.minmax(true, &x.0, &lo.0, span)?;
                self.minmax(false, &m, &hi.0, span)
            }
            "fma" => {
                let a = self.bind(n, &["x", "y", "z"], &args, span)?;
                let x = self.required(n, "x", &a[0], span)?;
                let y = self.required(n, "y", &a[1], span)?;
                let z = self.required(n, "z", &a[2], span)?;
                let prod = self.binary(PyOp::Mul, &x.0, &y.0, span)?;
                // Typing as `x * y + z`, then one fused op on the promoted operands.
                let sum = self.binary(PyOp::Add, &prod, &z.0, span)?;
                let KVal::T(sv) = sum else { return Ok(sum) };
                let t = self.ty(sv);
                let Some(d) = t.dtype().filter(|d| d.is_float()) else {
                    return Ok(KVal::T(sv));
                };
                let mut ops = vec![];
                for v in [&x.0, &y.0, &z.0] {
                    let vv = match v {
                        KVal::C(c) => self.const_as(c, d, span),
                        other => {
                            let vv = self.value_of(other, span)?;
                            self.cast(vv, d, span)
                        }
                    };
                    ops.push(self.broadcast_to(vv, &t.shape, span)?);
                }
                Ok(KVal::T(self.emit1(OpKind::Fma, ops, t, span)))
            }
            "cdiv" => {
                let a = self.bind(n, &["x", "div"], &args, span)?;
                let x = self.required(n, "x", &a[0], span)?;
                let d = self.required(n, "div", &a[1], span)?;
                let one = KVal::C(ConstVal::Int(1));
                let s = self.binary(PyOp::Add, &x.0, &d.0, span)?;
                let s = self.binary(PyOp::Sub, &s, &one, span)?;
                self.binary(PyOp::FloorDiv, &s, &d.0, span)
            }
            "next_power_of_2" | "triton.next_power_of_2" => {
                let a = self.bind(n, &["n"], &args, span)?;
                let v = self.const_int(&self.required(n, "n", &a[0], span)?, "n")?;
                (v.max(1) as u64)
                    .checked_next_power_of_two()
                    .and_then(|p| i64::try_from(p).ok())
                    .map(|p| KVal::C(ConstVal::Int(p)))
                    .ok_or_else(|| {
                        self.err(
                            "OverflowError",
                            format!("next_power_of_2({v}) does not fit in 64 bits"),
                            span,
                        )
                    })
            }
            "abs" => {
                let a = self.bind(n, &["x"], &args, span)?;
                let x = self.required(n, "x", &a[0], span)?;
                match &x.0 {
                    KVal::C(ConstVal::Int(i)) => i
                        .checked_abs()
                        .map(|a| KVal::C(ConstVal::Int(a)))
                        .ok_or_else(|| {
                            self.err(
                                "OverflowError",
                                "abs() of the smallest 64-bit integer",
                                span,
                            )
                        }),
                    KVal::C(ConstVal::Float(f)) => Ok(KVal::C(ConstVal::Float(f.abs()))),
                    other => {
                        let v = self.value_of(other, &x.1)?;
                        if self.ty(v).dtype().is_some_and(DType::is_unsigned_int) {
                            return Ok(KVal::T(v));
                        }
                        Ok(KVal::T(self.unary(UnOp::Abs, v, span)))
                    }
                }
            }
            "erf" => self.libdevice("erf", args, span),
            "gather" | "flip" | "sort" | "join" | "split" | "interleave" | "cat" | "histogram"
            | "associative_scan" => self.shuffle(n, &args, span),
            "make_block_ptr" => self.make_block_ptr(&args, span),
            "pointer_type" => self.pointer_type(&args, span),
            "make_tensor_descriptor" => self.make_tensor_descriptor(&args, span),
            "advance" => self.advance(&args, span),
            "exp" | "exp2" | "log" | "log2" | "sqrt" | "sqrt_rn" | "rsqrt" | "sin" | "cos"
            | "floor" | "ceil" => {
                let a = self.bind(n, &["x"], &args, span)?;
                let x = self.required(n, "x", &a[0], span)?;
                let op = match n {
                    "exp" => UnOp::Exp,
                    "exp2" => UnOp::Exp2,
                    "log" => UnOp::Log,
                    "log2" => UnOp::Log2,
                    "sqrt" => UnOp::SqrtApprox,
                    "sqrt_rn" => UnOp::Sqrt,
                    "rsqrt" => UnOp::Rsqrt,
                    "sin" => UnOp::Sin,
                    "cos" => UnOp::Cos,
                    "floor" => UnOp::Floor,
                    _ => UnOp::Ceil,
                };
                self.math(op, &x.0, &format!("tl.{n}"), span)
            }
            "math.log2" | "math.sqrt" | "math.ceil" | "math.floor" | "math.exp" | "math.log" => {
                let a = self.bind(name, &["x"], &args, span)?;
                let x = self.required(name, "x", &a[0], span)?;
                let KVal::C(c) = &x.0 else {
                    return Err(self.err(
                        "TypeError",
                        format!(
                            "{name}() in a kernel works on constexprs only; use tl.{}",
                            &name[5..]
                        ),
                        span,
                    ));
                };
                let f = match c {
                    ConstVal::Int(i) => *i as f64,
                    ConstVal::Float(f) => *f,
                    _ => {
                        return Err(self.err("TypeError", format!("{name}() needs a number"), span))
                    }
                };
                Ok(KVal::C(match &name[5..] {
                    "log2" => ConstVal::Float(f.log2()),
                    "sqrt" => ConstVal::Float(f.sqrt()),
                    "exp" => ConstVal::Float(f.exp()),
                    "log" => ConstVal::Float(f.ln()),
                    "ceil" => ConstVal::Int(f.ceil() as i64),
                    _ => ConstVal::Int(f.floor() as i64),
                }))
            }
            "pow" => {
                let a = self.bind(n, &["x", "y"], &args, span)?;
                let x = self.required(n, "x", &a[0], span)?;
                let y = self.required(n, "y", &a[1], span)?;
                let xf = self.float_operand(&x)?;
                let yf = self.float_operand(&y)?;
                self.binary(PyOp::Pow, &xf, &yf, span)
            }
            "sigmoid" => {
                let a = self.bind(n, &["x"], &args, span)?;
                let x = self.required(n, "x", &a[0], span)?;
                let v = self.value_of(&x.0, &x.1)?;
                let d = self.ty(v).dtype().unwrap_or(DType::F32);
                let f = self.cast(v, if d == DType::F64 { d } else { DType::F32 }, span);
                let neg = self.unary(UnOp::Neg, f, span);
                let e = self.unary(UnOp::Exp, neg, span);
                let den =
                    self.binary(PyOp::Add, &KVal::C(ConstVal::Float(1.0)), &KVal::T(e), span)?;
                let r = self.binary(PyOp::TrueDiv, &KVal::C(ConstVal::Float(1.0)), &den, span)?;
                let rv = self.value_of(&r, span)?;
                Ok(KVal::T(if d.is_float() {
                    self.cast(rv, d, span)
                } else {
                    rv
                }))
            }
            "softmax" => {
                let a = self.bind(n, &["x", "dim", "keep_dims", "ieee_rounding"], &args, span)?;
                let x = self.required(n, "x", &a[0], span)?;
                let v = self.value_of(&x.0, &x.1)?;
                let rank = self.ty(v).shape.len();
                if rank == 0 {
                    return Err(self.err("ValueError", "tl.softmax needs a block", span));
                }
                let axis = self.axis_arg(&a[1], rank, span)?.unwrap_or(rank - 1);
                let m = self.reduce(Combine::Max, v, Some(axis), true, span)?;
                let z = self.binary(PyOp::Sub, &KVal::T(v), &KVal::T(m), span)?;
                let z = self.value_of(&z, span)?;
                let num = self.math(UnOp::Exp, &KVal::T(z), "tl.exp", span)?;
                let num = self.value_of(&num, span)?;
                let den = self.reduce(Combine::Add, num, Some(axis), true, span)?;
                self.binary(PyOp::TrueDiv, &KVal::T(num), &KVal::T(den), span)
            }
            "fdiv" | "div_rn" => {
                let a = self.bind(n, &["x", "y", "ieee_rounding"], &args, span)?;
                let x = self.required(n, "x", &a[0], span)?;
                let y = self.required(n, "y", &a[1], span)?;
                // `tl.fdiv` is `/` unless asked for IEEE rounding.
                let ieee = n == "div_rn" || self.flag(&a[2]);
                self.binary_with(PyOp::TrueDiv, &x.0, &y.0, ieee, span)
            }
            "umulhi" => {
                let a = self.bind(n, &["x", "y"], &args, span)?;
                let x = self.required(n, "x", &a[0], span)?;
                let y = self.required(n, "y", &a[1], span)?;
                let (xv, yv, _) = self.promote_pair(&x.0, &y.0, false, "tl.umulhi", span)?;
                let t = self.ty(xv);
                if !t.dtype().is_some_and(|d| d.is_int() && d.bits() >= 32) {
                    return Err(self.err(
                        "TypeError",
                        "tl.umulhi needs two 32- or 64-bit integer operands of the same type",
                        span,
                    ));
                }
                Ok(KVal::T(self.emit1(
                    OpKind::Binary(BinOp::UMulHi),
                    vec![xv, yv],
                    t,
                    span,
                )))
            }
            "max" | "min" | "sum" | "argmax" | "argmin" | "xor_sum" => {
                let params: &[&str] = match n {
                    "argmax" | "argmin" => &["input", "axis", "tie_break_left", "keep_dims"],
                    "sum" => &["input", "axis", "keep_dims", "dtype"],
                    _ => &[
                        "input",
                        "axis",
                        "return_indices",
                        "return_indices_tie_break_left",
                        "keep_dims",
                    ],
                };
                let a = self.bind(n, params, &args, span)?;
                let input = self.required(n, "input", &a[0], span)?;
                let v = self.value_of(&input.0, &input.1)?;
                let rank = self.ty(v).shape.len();
                let axis = self.axis_arg(&a[1], rank, span)?;
                let keep =
                    self.flag(&a[params.iter().position(|p| *p == "keep_dims").unwrap_or(0)]);
                if (n == "max" || n == "min") && self.flag(&a[2]) {
                    let vals = self.reduce(
                        if n == "max" {
                            Combine::Max
                        } else {
                            Combine::Min
                        },
                        v,
                        axis,
                        keep,
                        span,
                    )?;
                    let idx = self.reduce(
                        if n == "max" {
                            Combine::ArgMax
                        } else {
                            Combine::ArgMin
                        },
                        v,
                        axis,
                        keep,
                        span,
                    )?;
                    return Ok(KVal::Tuple(vec![KVal::T(vals), KVal::T(idx)]));
                }
                let mut v = v;
                if n == "sum" {
                    if let Some(d) = &a[3] {
                        if !matches!(d.0, KVal::C(ConstVal::None)) {
                            let dt = self.dtype_arg(d, "dtype")?;
                            v = self.cast(v, dt, span);
                        }
                    }
                }
                let combine = match n {
                    "max" => Combine::Max,
                    "min" => Combine::Min,
                    "sum" => Combine::Add,
                    "xor_sum" => Combine::Xor,
                    "argmax" => Combine::ArgMax,
                    _ => Combine::ArgMin,
                };
                Ok(KVal::T(self.reduce(combine, v, axis, keep, span)?))
            }
            "cumsum" | "cumprod" => {
                let a = self.bind(n, &["input", "axis", "reverse", "dtype"], &args, span)?;
                let input = self.required(n, "input", &a[0], span)?;
                let v = self.value_of(&input.0, &input.1)?;
                let t = self.ty(v);
                if !t.is_block() {
                    return Err(self.err("ValueError", format!("tl.{n} needs a block"), span));
                }
                let axis = self.axis_arg(&a[1], t.shape.len(), span)?.unwrap_or(0);
                let reverse = self.flag(&a[2]);
                let v = self.promote_for_sum(v, span);
                let t = self.ty(v);
                let combine = if n == "cumsum" {
                    Combine::Add
                } else {
                    Combine::Mul
                };
                Ok(KVal::T(self.emit1(
                    OpKind::Scan {
                        axis,
                        combine,
                        reverse,
                    },
                    vec![v],
                    t,
                    span,
                )))
            }
            "reduce" => self.reduce_custom(&args, span),
            "expand_dims" => {
                let a = self.bind(n, &["input", "axis"], &args, span)?;
                let input = self.required(n, "input", &a[0], span)?;
                let axis_v = self.required(n, "axis", &a[1], span)?;
                let mut v = self.value_of(&input.0, &input.1)?;
                let axes: Vec<i64> = match &axis_v.0 {
                    KVal::C(ConstVal::Tuple(t)) => t
                        .iter()
                        .map(|c| if let ConstVal::Int(i) = c { *i } else { 0 })
                        .collect(),
                    _ => vec![self.const_int(&axis_v, "axis")?],
                };
                for ax in axes {
                    let t = self.ty(v);
                    let r = t.shape.len() as i64 + 1;
                    if ax < -r || ax >= r {
                        return Err(self.err(
                            "ValueError",
                            format!(
                                "axis {ax} is out of range for expand_dims of rank {}",
                                r - 1
                            ),
                            span,
                        ));
                    }
                    let ax = if ax < 0 { ax + r } else { ax } as usize;
                    let mut shape = t.shape.clone();
                    shape.insert(ax, 1);
                    v = self.emit1(OpKind::ExpandDims(ax), vec![v], t.with_shape(shape), span);
                }
                Ok(KVal::T(v))
            }
            "broadcast_to" => {
                let a = self.bind(n, &["input", "*shape"], &args, span)?;
                let input = self.required(n, "input", &a[0], span)?;
                let shape_v = self.required(n, "shape", &a[1], span)?;
                let shape = self.shape_from_star(&shape_v)?;
                let v = self.value_of(&input.0, &input.1)?;
                Ok(KVal::T(self.broadcast_to(v, &shape, span)?))
            }
            "broadcast" => {
                let a = self.bind(n, &["input", "other"], &args, span)?;
                let x = self.required(n, "input", &a[0], span)?;
                let y = self.required(n, "other", &a[1], span)?;
                let xv = self.value_of(&x.0, &x.1)?;
                let yv = self.value_of(&y.0, &y.1)?;
                let (xv, yv) = self.broadcast_pair(xv, yv, span)?;
                Ok(KVal::Tuple(vec![KVal::T(xv), KVal::T(yv)]))
            }
            "reshape" | "view" => {
                let a = self.bind(n, &["input", "*shape", "can_reorder"], &args, span)?;
                let input = self.required(n, "input", &a[0], span)?;
                let shape_v = self.required(n, "shape", &a[1], span)?;
                let shape = self.shape_from_star(&shape_v)?;
                let v = self.value_of(&input.0, &input.1)?;
                self.reshape(v, shape, span)
            }
            "trans" | "permute" => {
                let a = self.bind(n, &["input", "*dims"], &args, span)?;
                let input = self.required(n, "input", &a[0], span)?;
                let v = self.value_of(&input.0, &input.1)?;
                let t = self.ty(v);
                let perm: Vec<usize> = match &a[1] {
                    None => (0..t.shape.len()).rev().collect(),
                    Some(d) => self
                        .shape_from_star_raw(d)?
                        .into_iter()
                        .map(|x| x as usize)
                        .collect(),
                };
                let mut sorted = perm.clone();
                sorted.sort();
                if sorted != (0..t.shape.len()).collect::<Vec<_>>() {
                    return Err(self.err(
                        "ValueError",
                        format!(
                            "{perm:?} is not a permutation of the {} dimensions",
                            t.shape.len()
                        ),
                        span,
                    ));
                }
                let shape = perm.iter().map(|&p| t.shape[p]).collect();
                Ok(KVal::T(self.emit1(
                    OpKind::Trans(perm),
                    vec![v],
                    t.with_shape(shape),
                    span,
                )))
            }
            "static_assert" | "static_print" | "device_print" | "print" | "device_assert" => {
                self.debug_builtin(n, &args, span)
            }
            "inline_asm_elementwise" | "cuda.globaltimer" | "cuda.smid" => {
                self.inline_asm_builtin(n.trim_start_matches("cuda."), &args, span)
            }
            "multiple_of" | "max_contiguous" => {
                let a = self.bind(n, &["input", "values"], &args, span)?;
                let input = self.required(n, "input", &a[0], span)?;
                let vals = self.required(n, "values", &a[1], span)?;
                let v = self.value_of(&input.0, &input.1)?;
                let list = self.shape_from_star_raw(&vals)?;
                let t = self.ty(v);
                let kind = if n == "multiple_of" {
                    OpKind::MultipleOf(list)
                } else {
                    OpKind::MaxContiguous(list)
                };
                Ok(KVal::T(self.emit1(kind, vec![v], t, span)))
            }
            // A hint that the first `values` elements along each axis are
            // equal; nothing here uses constancy, so the value passes through.
            "max_constancy" => {
                let a = self.bind(n, &["input", "values"], &args, span)?;
                let input = self.required(n, "input", &a[0], span)?;
                let vals = self.required(n, "values", &a[1], span)?;
                let v = self.value_of(&input.0, &input.1)?;
                let list = self.shape_from_star_raw(&vals)?;
                let rank = self.ty(v).shape.len().max(1);
                if list.len() != rank {
                    return Err(self.err(
                        "ValueError",
                        format!(
                            "tl.max_constancy: {} values for a {rank}-d block (one per axis)",
                            list.len()
                        ),
                        span,
                    ));
                }
                Ok(KVal::T(v))
            }
            "to_tensor" => {
                let a = self.bind(n, &["x"], &args, span)?;
                let x = self.required(n, "x", &a[0], span)?;
                Ok(KVal::T(self.value_of(&x.0, &x.1)?))
            }
            "cast" => {
                let a = self.bind(
                    n,
                    &["input", "dtype", "fp_downcast_rounding", "bitcast"],
                    &args,
                    span,
                )?;
                let input = self.required(n, "input", &a[0], span)?;
                let to = self.required(n, "dtype", &a[1], span)?;
                if let KVal::C(ConstVal::PtrType(pd)) = to.0 {
                    return self.pointer_from(&input, pd, span);
                }
                let d = self.dtype_arg(&to, "dtype")?;
                let bitcast = self.flag(&a[3]);
                self.convert(&input, d, bitcast, span)
            }
            "constexpr" => {
                let a = self.bind(n, &["value"], &args, span)?;
                Ok(self.required(n, "value", &a[0], span)?.0)
            }
            "debug_barrier" => {
                self.emit(OpKind::Barrier, vec![], vec![], span);
                Ok(KVal::C(ConstVal::None))
            }
            // A promise to the optimiser; the condition is checked for type
            // (a boolean scalar) and otherwise has no effect.
            "assume" => {
                let a = self.bind(n, &["cond"], &args, span)?;
                let c = self.required(n, "cond", &a[0], span)?;
                if let KVal::C(_) = &c.0 {
                    return Ok(KVal::C(ConstVal::None));
                }
                let v = self.value_of(&c.0, &c.1)?;
                if self.ty(v).is_block() {
                    return Err(self.err(
                        "TypeError",
                        "tl.assume takes a scalar condition, not a block",
                        span,
                    ));
                }
                Ok(KVal::C(ConstVal::None))
            }
            "range" | "static_range" => Err(self.err(
                "TypeError",
                format!("{name}() can only be used as the iterable of a `for` loop"),
                span,
            )),
            "py.min" | "py.max" => {
                // Python's builtin min/max.
                let mut acc: Option<KVal> = None;
                let items: Vec<KVal> = if args.pos.len() == 1 {
                    match &args.pos[0].0 {
                        KVal::C(ConstVal::Tuple(t)) => t.iter().cloned().map(KVal::C).collect(),
                        KVal::Tuple(t) => t.clone(),
                        other => vec![other.clone()],
                    }
                } else {
                    args.pos.iter().map(|(v, _)| v.clone()).collect()
                };
                for it in items {
                    acc = Some(match acc {
                        None => it,
                        Some(prev) => self.minmax(n == "py.max", &prev, &it, span)?,
                    });
                }
                acc.ok_or_else(|| {
                    self.err(
                        "TypeError",
                        format!("{n}() expects at least one argument"),
                        span,
                    )
                })
            }
            "float" | "int" | "bool" => {
                let a = self.bind(n, &["x"], &args, span)?;
                let x = self.required(n, "x", &a[0], span)?;
                match (&x.0, n) {
                    (KVal::C(ConstVal::Str(s)), "float") => {
                        match s.trim().to_ascii_lowercase().as_str() {
                            "inf" | "+inf" | "infinity" => {
                                Ok(KVal::C(ConstVal::Float(f64::INFINITY)))
                            }
                            "-inf" | "-infinity" => Ok(KVal::C(ConstVal::Float(f64::NEG_INFINITY))),
                            "nan" => Ok(KVal::C(ConstVal::Float(f64::NAN))),
                            other => other
                                .parse::<f64>()
                                .map(|f| KVal::C(ConstVal::Float(f)))
                                .map_err(|_| {
                                    self.err(
                                        "ValueError",
                                        format!("could not convert string to float: '{s}'"),
                                        span,
                                    )
                                }),
                        }
                    }
                    (KVal::C(ConstVal::Int(i)), "float") => Ok(KVal::C(ConstVal::Float(*i as f64))),
                    (KVal::C(ConstVal::Float(f)), "float") => Ok(KVal::C(ConstVal::Float(*f))),
                    (KVal::C(ConstVal::Float(f)), "int") => {
                        Ok(KVal::C(ConstVal::Int(f.trunc() as i64)))
                    }
                    (KVal::C(ConstVal::Int(i)), "int") => Ok(KVal::C(ConstVal::Int(*i))),
                    (KVal::C(ConstVal::Bool(b)), "int") => Ok(KVal::C(ConstVal::Int(*b as i64))),
                    (KVal::C(c), "bool") => Ok(KVal::C(ConstVal::Bool(const_truth(c)))),
                    (KVal::T(v), _) => {
                        let d = match n {
                            "float" => DType::F32,
                            "int" => DType::I32,
                            _ => DType::I1,
                        };
                        let v = *v;
                        if d == DType::I1 {
                            return Ok(KVal::T(self.condition_of(v, span)?));
                        }
                        Ok(KVal::T(self.cast(v, d, span)))
                    }
                    (other, _) => Err(self.err(
                        "TypeError",
                        format!("{n}() cannot convert {}", other.describe()),
                        span,
                    )),
                }
            }
            "len" => {
                let a = self.bind(n, &["x"], &args, span)?;
                let x = self.required(n, "x", &a[0], span)?;
                match &x.0 {
                    KVal::C(ConstVal::Tuple(t)) => Ok(KVal::C(ConstVal::Int(t.len() as i64))),
                    KVal::Tuple(t) => Ok(KVal::C(ConstVal::Int(t.len() as i64))),
                    KVal::C(ConstVal::Str(s)) => {
                        Ok(KVal::C(ConstVal::Int(s.chars().count() as i64)))
                    }
                    KVal::T(v) => match self.ty(*v).shape.first() {
                        Some(&d) => Ok(KVal::C(ConstVal::Int(d as i64))),
                        None => Err(self.err("TypeError", "len() of a scalar", span)),
                    },
                    other => {
                        Err(self.err("TypeError", format!("len() of {}", other.describe()), span))
                    }
                }
            }
            "isinstance" => {
                let a = self.bind(n, &["obj", "class_or_tuple"], &args, span)?;
                let obj = self.required(n, "obj", &a[0], span)?;
                let cls = self.required(n, "class_or_tuple", &a[1], span)?;
                let classes = match &cls.0 {
                    KVal::Tuple(items) => items.clone(),
                    other => vec![other.clone()],
                };
                let mut hit = false;
                for c in &classes {
                    let decided = match c {
                        KVal::Builtin(b) => super::names::instance_of(&obj.0, b),
                        _ => None,
                    };
                    match decided {
                        Some(h) => hit |= h,
                        None => {
                            return Err(self.err(
                                "TypeError",
                                format!(
                                    "isinstance() arg 2 must be a class a kernel knows (tl.tensor, tl.tensor_descriptor, tl.constexpr, tl.dtype, tl.pointer_type, tl.tuple, int, float, bool), not {}",
                                    c.describe()
                                ),
                                span,
                            ))
                        }
                    }
                }
                Ok(KVal::C(ConstVal::Bool(hit)))
            }
            _ if name.starts_with("tl.") && super::library::function(n).is_some() => {
                let f = super::library::function(n).expect("checked");
                self.inline_call(&f, args, span)
            }
            _ => Err(self.err(
                "UnsupportedError",
                format!("`{name}` is not available in kernels"),
                span,
            )),
        }
    }
}
