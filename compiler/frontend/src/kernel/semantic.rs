//! Typed tensor operations with Triton's rules: type promotion (including
//! weakly typed Python scalars), broadcasting, pointer arithmetic, casts, and
//! constexpr arithmetic with Python's semantics.

use super::lower::{KVal, LResult, Lowerer};
use super::ConstVal;
use crate::diag::Diagnostic;
use crate::source::Span;
use tilebook_tir::{BinOp, CmpPred, Const, DType, Elem, OpKind, Type, UnOp, Value};

/// Python's binary operators.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum PyOp {
    Add,
    Sub,
    Mul,
    TrueDiv,
    FloorDiv,
    Mod,
    Pow,
    And,
    Or,
    Xor,
    LShift,
    RShift,
}

impl PyOp {
    pub fn symbol(self) -> &'static str {
        match self {
            PyOp::Add => "+",
            PyOp::Sub => "-",
            PyOp::Mul => "*",
            PyOp::TrueDiv => "/",
            PyOp::FloorDiv => "//",
            PyOp::Mod => "%",
            PyOp::Pow => "**",
            PyOp::And => "&",
            PyOp::Or => "|",
            PyOp::Xor => "^",
            PyOp::LShift => "<<",
            PyOp::RShift => ">>",
        }
    }
}

/// The dtype a Python constant takes when it becomes a tensor.
pub(crate) fn const_dtype(c: &ConstVal) -> Option<DType> {
    match c {
        ConstVal::Bool(_) => Some(DType::I1),
        // Triton's `to_tensor`: the narrowest of int32, uint32, int64 that holds it.
        ConstVal::Int(i) => Some(if i32::try_from(*i).is_ok() {
            DType::I32
        } else if u32::try_from(*i).is_ok() {
            DType::U32
        } else {
            DType::I64
        }),
        ConstVal::Float(_) => Some(DType::F32),
        _ => None,
    }
}

fn integer_promote(a: DType, b: DType) -> DType {
    let (sa, sb) = (a.is_signed_int(), b.is_signed_int());
    if a == DType::I1 {
        return b;
    }
    if b == DType::I1 {
        return a;
    }
    if sa == sb {
        return if a.bits() >= b.bits() { a } else { b };
    }
    let (u, s) = if sa { (b, a) } else { (a, b) };
    if u.bits() >= s.bits() {
        u
    } else {
        s
    }
}

/// Triton's `computation_type_impl`: the dtype both operands convert to.
pub(crate) fn computation_type(
    a: DType,
    a_scalar: bool,
    b: DType,
    b_scalar: bool,
    div_or_mod: bool,
) -> Result<DType, String> {
    if a_scalar != b_scalar {
        let (s, t) = if a_scalar { (a, b) } else { (b, a) };
        if s.kind() <= t.kind() {
            if div_or_mod && matches!(t, DType::F16 | DType::BF16) {
                return Ok(DType::F32);
            }
            return Ok(t);
        }
    }
    if a == DType::F64 || b == DType::F64 {
        return Ok(DType::F64);
    }
    if a == DType::F32 || b == DType::F32 {
        return Ok(DType::F32);
    }
    if a == DType::F16 || b == DType::F16 {
        return Ok(if div_or_mod { DType::F32 } else { DType::F16 });
    }
    if a == DType::BF16 || b == DType::BF16 {
        if div_or_mod || a != b {
            return Ok(DType::F32);
        }
        return Ok(DType::BF16);
    }
    if a.is_fp8() && b.is_fp8() {
        return Ok(if a == b { a } else { DType::F16 });
    }
    if a.is_float() || b.is_float() {
        return Err(format!(
            "unexpected operand types {} and {}",
            a.tl_name(),
            b.tl_name()
        ));
    }
    if div_or_mod && a.is_unsigned_int() != b.is_unsigned_int() && a != DType::I1 && b != DType::I1
    {
        return Err(format!(
            "cannot use `/`, `//` or `%` on {} and {}: their signedness differs; cast one of them first",
            a.tl_name(),
            b.tl_name()
        ));
    }
    Ok(integer_promote(a, b))
}

pub(crate) use tilebook_tir::types::broadcast_shapes;

pub(crate) fn shape_str(s: &[usize]) -> String {
    format!(
        "[{}]",
        s.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

impl Lowerer<'_> {
    pub fn ty(&self, v: Value) -> Type {
        self.k.ty(v).clone()
    }

    pub fn err(&self, kind: &str, msg: impl Into<String>, span: &Span) -> Diagnostic {
        let mut d = Diagnostic::error(kind, msg, span);
        for site in self.call_stack.iter().rev() {
            d = d.with_label(site.clone(), "in the inlined call here");
        }
        d
    }

    /// A constant tensor of `ty` (scalar or block).
    pub fn constant(&mut self, c: Const, ty: Type, span: &Span) -> Value {
        let d = ty.dtype().unwrap_or(DType::I32);
        let c = match c {
            Const::Int(i) if d.is_float() => Const::Float(tilebook_tir::round_float(i as f64, d)),
            Const::Float(f) if d.is_int() => Const::Int(tilebook_tir::wrap_int(f as i64, d)),
            Const::Float(f) => Const::Float(tilebook_tir::round_float(f, d)),
            Const::Int(i) => Const::Int(tilebook_tir::wrap_int(i, d)),
        };
        self.emit1(OpKind::Const(c), vec![], ty, span)
    }

    /// Materialize a constexpr number as a scalar tensor of its natural dtype.
    pub fn const_tensor(&mut self, c: &ConstVal, span: &Span) -> LResult<Value> {
        let Some(d) = const_dtype(c) else {
            return Err(self.err(
                "TypeError",
                format!("{c} cannot be used as a tensor value"),
                span,
            ));
        };
        Ok(self.const_as(c, d, span))
    }

    /// A constexpr number as a scalar of dtype `d`.
    pub fn const_as(&mut self, c: &ConstVal, d: DType, span: &Span) -> Value {
        let v = match c {
            ConstVal::Bool(b) => Const::Int(*b as i64),
            ConstVal::Int(i) => Const::Int(*i),
            ConstVal::Float(f) => Const::Float(*f),
            _ => Const::Int(0),
        };
        self.constant(v, Type::scalar(d), span)
    }

    pub fn value_of(&mut self, v: &KVal, span: &Span) -> LResult<Value> {
        match v {
            KVal::T(v) => Ok(*v),
            KVal::C(c) => self.const_tensor(c, span),
            other => Err(self.err(
                "TypeError",
                format!(
                    "expected a tensor or a number here, got {}",
                    other.describe()
                ),
                span,
            )),
        }
    }

    /// The dtype of a tensor or constexpr number (pointer elements have none).
    pub(super) fn operand_dtype(&self, v: &KVal) -> Option<DType> {
        match v {
            KVal::T(v) => self.k.ty(*v).dtype(),
            KVal::C(c) => const_dtype(c),
            _ => None,
        }
    }

    pub fn cast(&mut self, v: Value, d: DType, span: &Span) -> Value {
        let t = self.ty(v);
        if t.dtype() == Some(d) {
            return v;
        }
        self.emit1(OpKind::Cast, vec![v], t.with_elem(Elem::Scalar(d)), span)
    }

    /// Broadcast (splat, add leading dims, stretch 1s) to `shape`.
    pub fn broadcast_to(&mut self, v: Value, shape: &[usize], span: &Span) -> LResult<Value> {
        let t = self.ty(v);
        if t.shape == shape {
            return Ok(v);
        }
        if !t.is_block() {
            return Ok(self.emit1(OpKind::Splat, vec![v], t.with_shape(shape.to_vec()), span));
        }
        if broadcast_shapes(&t.shape, shape).as_deref() != Some(shape) {
            return Err(self.err(
                "ValueError",
                format!(
                    "cannot broadcast a block of shape {} to {}",
                    shape_str(&t.shape),
                    shape_str(shape)
                ),
                span,
            ));
        }
        let mut v = v;
        let mut cur = t.shape.clone();
        while cur.len() < shape.len() {
            cur.insert(0, 1);
            v = self.emit1(
                OpKind::ExpandDims(0),
                vec![v],
                t.with_shape(cur.clone()),
                span,
            );
        }
        if cur != shape {
            v = self.emit1(
                OpKind::Broadcast,
                vec![v],
                t.with_shape(shape.to_vec()),
                span,
            );
        }
        Ok(v)
    }

    /// Broadcast two values to their common shape.
    pub fn broadcast_pair(&mut self, a: Value, b: Value, span: &Span) -> LResult<(Value, Value)> {
        let (sa, sb) = (self.ty(a).shape, self.ty(b).shape);
        if sa == sb {
            return Ok((a, b));
        }
        let Some(shape) = broadcast_shapes(&sa, &sb) else {
            return Err(self.err(
                "ValueError",
                format!(
                    "incompatible shapes {} and {} (they cannot be broadcast together)",
                    shape_str(&sa),
                    shape_str(&sb)
                ),
                span,
            ));
        };
        Ok((
            self.broadcast_to(a, &shape, span)?,
            self.broadcast_to(b, &shape, span)?,
        ))
    }

    /// Convert two operands to their computation dtype and common shape.
    pub(super) fn promote_pair(
        &mut self,
        a: &KVal,
        b: &KVal,
        div_or_mod: bool,
        what: &str,
        span: &Span,
    ) -> LResult<(Value, Value, DType)> {
        let (Some(da), Some(db)) = (self.operand_dtype(a), self.operand_dtype(b)) else {
            return Err(self.err(
                "TypeError",
                format!(
                    "unsupported operand types for {what}: {} and {}",
                    self.describe_kval(a),
                    self.describe_kval(b)
                ),
                span,
            ));
        };
        let d = computation_type(
            da,
            matches!(a, KVal::C(_)),
            db,
            matches!(b, KVal::C(_)),
            div_or_mod,
        )
        .map_err(|m| self.err("TypeError", m, span))?;
        let va = match a {
            KVal::C(c) => self.const_as(c, d, span),
            _ => {
                let v = self.value_of(a, span)?;
                self.cast(v, d, span)
            }
        };
        let vb = match b {
            KVal::C(c) => self.const_as(c, d, span),
            _ => {
                let v = self.value_of(b, span)?;
                self.cast(v, d, span)
            }
        };
        let (va, vb) = self.broadcast_pair(va, vb, span)?;
        Ok((va, vb, d))
    }

    pub fn describe_kval(&self, v: &KVal) -> String {
        match v {
            KVal::T(v) => format!("tensor of type {}", self.k.ty(*v)),
            other => other.describe(),
        }
    }

    /// `a <op> b` for tensors and constexprs.
    pub fn binary(&mut self, op: PyOp, a: &KVal, b: &KVal, span: &Span) -> LResult<KVal> {
        self.binary_with(op, a, b, false, span)
    }

    /// `a <op> b`, with `/` correctly rounded (`ieee_div`: `tl.div_rn`)
    /// rather than as Triton's `/` on fp32.
    pub fn binary_with(
        &mut self,
        op: PyOp,
        a: &KVal,
        b: &KVal,
        ieee_div: bool,
        span: &Span,
    ) -> LResult<KVal> {
        if let (KVal::C(x), KVal::C(y)) = (a, b) {
            return const_binary(op, x, y)
                .map(KVal::C)
                .map_err(|m| self.err("TypeError", m, span));
        }
        // Pointer arithmetic.
        let is_ptr = |s: &Self, v: &KVal| matches!(v, KVal::T(t) if s.k.ty(*t).elem.is_ptr());
        if is_ptr(self, a) || is_ptr(self, b) {
            return self.pointer_arith(op, a, b, span).map(KVal::T);
        }
        let symbol = op.symbol();
        let (div_or_mod, float_div) = match op {
            PyOp::TrueDiv => (true, true),
            PyOp::FloorDiv | PyOp::Mod => (true, false),
            _ => (false, false),
        };
        let (mut x, mut y, mut d) =
            self.promote_pair(a, b, div_or_mod, &format!("`{symbol}`"), span)?;
        if float_div && d.is_int() {
            x = self.cast(x, DType::F32, span);
            y = self.cast(y, DType::F32, span);
            d = DType::F32;
        }
        let bin = match op {
            PyOp::Add => BinOp::Add,
            PyOp::Sub => BinOp::Sub,
            PyOp::Mul => BinOp::Mul,
            // Triton's fp32 `/` is `div.full.f32` on the GPU.
            PyOp::TrueDiv if d == DType::F32 && !ieee_div => BinOp::DivFull,
            PyOp::TrueDiv => BinOp::Div,
            PyOp::FloorDiv => {
                if d.is_float() {
                    return Err(self.err(
                        "TypeError",
                        format!(
                            "`//` needs integer operands in a kernel, got {}",
                            d.tl_name()
                        ),
                        span,
                    ));
                }
                BinOp::Div
            }
            PyOp::Mod => BinOp::Rem,
            PyOp::Pow => {
                if d.is_int() {
                    return Err(self.err(
                        "TypeError",
                        "`**` on integer tensors is not supported; use floats or tl.math.pow",
                        span,
                    ));
                }
                BinOp::Pow
            }
            PyOp::And | PyOp::Or | PyOp::Xor | PyOp::LShift | PyOp::RShift => {
                if d.is_float() {
                    return Err(self.err(
                        "TypeError",
                        format!("`{symbol}` needs integer operands, got {}", d.tl_name()),
                        span,
                    ));
                }
                match op {
                    PyOp::And => BinOp::And,
                    PyOp::Or => BinOp::Or,
                    PyOp::Xor => BinOp::Xor,
                    PyOp::LShift => BinOp::Shl,
                    _ => BinOp::Shr,
                }
            }
        };
        let t = self.ty(x);
        Ok(KVal::T(self.emit1(
            OpKind::Binary(bin),
            vec![x, y],
            t,
            span,
        )))
    }

    fn pointer_arith(&mut self, op: PyOp, a: &KVal, b: &KVal, span: &Span) -> LResult<Value> {
        let va = self.value_of(a, span)?;
        let vb = self.value_of(b, span)?;
        let (pa, pb) = (self.ty(va).elem.is_ptr(), self.ty(vb).elem.is_ptr());
        let (ptr, off) = match (op, pa, pb) {
            (PyOp::Add, true, false) => (va, vb),
            (PyOp::Add, false, true) => (vb, va),
            (PyOp::Sub, true, false) => {
                let t = self.ty(vb);
                let neg = self.emit1(OpKind::Unary(UnOp::Neg), vec![vb], t, span);
                (va, neg)
            }
            _ => {
                return Err(self.err(
                    "TypeError",
                    format!(
                        "unsupported pointer arithmetic `{}` between {} and {}; pointers support `+` and `-` with integers",
                        op.symbol(),
                        self.describe_kval(a),
                        self.describe_kval(b)
                    ),
                    span,
                ))
            }
        };
        let od = self.ty(off).dtype();
        if !od.is_some_and(DType::is_int) || od == Some(DType::I1) {
            return Err(self.err(
                "TypeError",
                format!(
                    "a pointer offset must be an integer, got {}",
                    self.describe_kval(&KVal::T(off))
                ),
                span,
            ));
        }
        let (ptr, off) = self.broadcast_pair(ptr, off, span)?;
        let t = self.ty(ptr);
        Ok(self.emit1(OpKind::AddPtr, vec![ptr, off], t, span))
    }

    /// Comparisons `== != < <= > >=`.
    pub fn compare(&mut self, pred: CmpPred, a: &KVal, b: &KVal, span: &Span) -> LResult<KVal> {
        if let (KVal::C(x), KVal::C(y)) = (a, b) {
            return const_compare(pred, x, y)
                .map(|b| KVal::C(ConstVal::Bool(b)))
                .map_err(|m| self.err("TypeError", m, span));
        }
        let is_ptr = |s: &Self, v: &KVal| matches!(v, KVal::T(t) if s.k.ty(*t).elem.is_ptr());
        let (x, y) = if is_ptr(self, a) && is_ptr(self, b) {
            let va = self.value_of(a, span)?;
            let vb = self.value_of(b, span)?;
            self.broadcast_pair(va, vb, span)?
        } else {
            let (x, y, _) = self.promote_pair(a, b, false, "a comparison", span)?;
            (x, y)
        };
        let t = self.ty(x).with_elem(Elem::Scalar(DType::I1));
        Ok(KVal::T(self.emit1(OpKind::Cmp(pred), vec![x, y], t, span)))
    }

    /// A tensor as an `i1` condition (`x != 0` for other dtypes).
    pub fn condition_of(&mut self, v: Value, span: &Span) -> LResult<Value> {
        let t = self.ty(v);
        match t.dtype() {
            Some(DType::I1) => Ok(v),
            Some(d) => {
                let zero = self.constant(Const::Int(0), Type::scalar(d), span);
                let zero = self.broadcast_to(zero, &t.shape, span)?;
                Ok(self.emit1(
                    OpKind::Cmp(CmpPred::Ne),
                    vec![v, zero],
                    t.with_elem(Elem::Scalar(DType::I1)),
                    span,
                ))
            }
            None => Err(self.err("TypeError", "a pointer cannot be used as a condition", span)),
        }
    }

    pub fn unary(&mut self, op: UnOp, v: Value, span: &Span) -> Value {
        let t = self.ty(v);
        self.emit1(OpKind::Unary(op), vec![v], t, span)
    }

    /// A float-only math function; integers are converted to fp32 first, fp16/bf16 computed in fp32.
    pub fn math(&mut self, op: UnOp, v: &KVal, name: &str, span: &Span) -> LResult<KVal> {
        let v = self.value_of(v, span)?;
        let t = self.ty(v);
        let Some(d) = t.dtype() else {
            return Err(self.err(
                "TypeError",
                format!("{name} expects a number, got a pointer"),
                span,
            ));
        };
        let compute = if d.is_float() && d != DType::F16 && d != DType::BF16 && !d.is_fp8() {
            d
        } else {
            DType::F32
        };
        let x = self.cast(v, compute, span);
        let r = self.unary(op, x, span);
        let out = if d.is_float() {
            self.cast(r, d, span)
        } else {
            r
        };
        Ok(KVal::T(out))
    }

    /// `tl.where(c, a, b)`.
    pub fn select(&mut self, c: &KVal, a: &KVal, b: &KVal, span: &Span) -> LResult<KVal> {
        if let KVal::C(cc) = c {
            return Ok(if const_truth(cc) {
                a.clone()
            } else {
                b.clone()
            });
        }
        let c = self.value_of(c, span)?;
        let c = self.condition_of(c, span)?;
        let ptr = |s: &Self, v: &KVal| matches!(v, KVal::T(t) if s.k.ty(*t).elem.is_ptr());
        let (x, y) = if ptr(self, a) || ptr(self, b) {
            let va = self.value_of(a, span)?;
            let vb = self.value_of(b, span)?;
            self.broadcast_pair(va, vb, span)?
        } else {
            let (x, y, _) = self.promote_pair(a, b, false, "tl.where", span)?;
            (x, y)
        };
        let shape = broadcast_shapes(&self.ty(c).shape, &self.ty(x).shape).ok_or_else(|| {
            self.err(
                "ValueError",
                "the condition's shape does not broadcast with the values' shape",
                span,
            )
        })?;
        let c = self.broadcast_to(c, &shape, span)?;
        let x = self.broadcast_to(x, &shape, span)?;
        let y = self.broadcast_to(y, &shape, span)?;
        let t = self.ty(x);
        Ok(KVal::T(self.emit1(OpKind::Select, vec![c, x, y], t, span)))
    }

    /// `min`/`max` elementwise with promotion.
    pub fn minmax(&mut self, max: bool, a: &KVal, b: &KVal, span: &Span) -> LResult<KVal> {
        if let (KVal::C(x), KVal::C(y)) = (a, b) {
            let lt =
                const_compare(CmpPred::Lt, x, y).map_err(|m| self.err("TypeError", m, span))?;
            return Ok(KVal::C(if lt == max { y.clone() } else { x.clone() }));
        }
        let (x, y, _) =
            self.promote_pair(a, b, false, if max { "maximum" } else { "minimum" }, span)?;
        let t = self.ty(x);
        let op = if max { BinOp::Max } else { BinOp::Min };
        Ok(KVal::T(self.emit1(OpKind::Binary(op), vec![x, y], t, span)))
    }
}

/// Python truthiness of a constexpr.
pub(crate) fn const_truth(c: &ConstVal) -> bool {
    match c {
        ConstVal::None => false,
        ConstVal::Bool(b) => *b,
        ConstVal::Int(i) => *i != 0,
        ConstVal::Float(f) => *f != 0.0,
        ConstVal::Str(s) => !s.is_empty(),
        ConstVal::Tuple(t) => !t.is_empty(),
        ConstVal::DType(_) | ConstVal::PtrType(_) | ConstVal::Func(_) => true,
    }
}

fn num(c: &ConstVal) -> Option<(bool, i64, f64)> {
    match c {
        ConstVal::Bool(b) => Some((false, *b as i64, *b as i64 as f64)),
        ConstVal::Int(i) => Some((false, *i, *i as f64)),
        ConstVal::Float(f) => Some((true, *f as i64, *f)),
        _ => None,
    }
}

/// Python semantics of a binary operator on constexprs.
pub(crate) fn const_binary(op: PyOp, a: &ConstVal, b: &ConstVal) -> Result<ConstVal, String> {
    if let (ConstVal::Str(x), ConstVal::Str(y), PyOp::Add) = (a, b, op) {
        return Ok(ConstVal::Str(format!("{x}{y}")));
    }
    if let (ConstVal::Tuple(x), ConstVal::Tuple(y), PyOp::Add) = (a, b, op) {
        return Ok(ConstVal::Tuple(x.iter().chain(y).cloned().collect()));
    }
    let bad = || {
        format!(
            "unsupported operand types for `{}`: {a} and {b}",
            op.symbol()
        )
    };
    let (Some((fa, ia, xa)), Some((fb, ib, xb))) = (num(a), num(b)) else {
        return Err(bad());
    };
    let float = fa || fb;
    let overflow = || "integer overflow in a constant expression".to_string();
    Ok(match op {
        PyOp::TrueDiv => {
            if xb == 0.0 {
                return Err("division by zero in a constant expression".into());
            }
            ConstVal::Float(xa / xb)
        }
        PyOp::Add | PyOp::Sub | PyOp::Mul if float => ConstVal::Float(match op {
            PyOp::Add => xa + xb,
            PyOp::Sub => xa - xb,
            _ => xa * xb,
        }),
        PyOp::Add => ConstVal::Int(ia.checked_add(ib).ok_or_else(overflow)?),
        PyOp::Sub => ConstVal::Int(ia.checked_sub(ib).ok_or_else(overflow)?),
        PyOp::Mul => ConstVal::Int(ia.checked_mul(ib).ok_or_else(overflow)?),
        PyOp::FloorDiv | PyOp::Mod if xb == 0.0 => {
            return Err("division by zero in a constant expression".into())
        }
        PyOp::FloorDiv if float => ConstVal::Float((xa / xb).floor()),
        PyOp::FloorDiv => ConstVal::Int(py_floordiv(ia, ib)),
        PyOp::Mod if float => ConstVal::Float(xa - xb * (xa / xb).floor()),
        PyOp::Mod => ConstVal::Int(ia - ib * py_floordiv(ia, ib)),
        PyOp::Pow if float || ib < 0 => ConstVal::Float(xa.powf(xb)),
        PyOp::Pow => ConstVal::Int(ia.checked_pow(ib as u32).ok_or_else(overflow)?),
        _ if float => return Err(bad()),
        PyOp::And if matches!((a, b), (ConstVal::Bool(_), ConstVal::Bool(_))) => {
            ConstVal::Bool(ia & ib != 0)
        }
        PyOp::Or if matches!((a, b), (ConstVal::Bool(_), ConstVal::Bool(_))) => {
            ConstVal::Bool(ia | ib != 0)
        }
        PyOp::And => ConstVal::Int(ia & ib),
        PyOp::Or => ConstVal::Int(ia | ib),
        PyOp::Xor => ConstVal::Int(ia ^ ib),
        PyOp::LShift => ConstVal::Int(ia.checked_shl(ib as u32).ok_or_else(overflow)?),
        PyOp::RShift => ConstVal::Int(ia >> ib.min(63)),
    })
}

fn py_floordiv(a: i64, b: i64) -> i64 {
    let q = a / b;
    if a % b != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

pub(crate) fn const_compare(pred: CmpPred, a: &ConstVal, b: &ConstVal) -> Result<bool, String> {
    use std::cmp::Ordering;
    let ord: Option<Ordering> = match (a, b) {
        (ConstVal::Str(x), ConstVal::Str(y)) => Some(x.cmp(y)),
        _ => match (num(a), num(b)) {
            (Some((fa, ia, xa)), Some((fb, ib, xb))) => {
                if fa || fb {
                    xa.partial_cmp(&xb)
                } else {
                    Some(ia.cmp(&ib))
                }
            }
            _ => {
                return match pred {
                    CmpPred::Eq => Ok(a == b),
                    CmpPred::Ne => Ok(a != b),
                    _ => Err(format!("cannot order {a} and {b}")),
                }
            }
        },
    };
    let Some(o) = ord else {
        return Ok(pred == CmpPred::Ne);
    };
    Ok(match pred {
        CmpPred::Eq => o == Ordering::Equal,
        CmpPred::Ne => o != Ordering::Equal,
        CmpPred::Lt => o == Ordering::Less,
        CmpPred::Le => o != Ordering::Greater,
        CmpPred::Gt => o == Ordering::Greater,
        CmpPred::Ge => o != Ordering::Less,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triton_promotion_rules() {
        use DType::*;
        assert_eq!(computation_type(F16, false, F32, false, false), Ok(F32));
        assert_eq!(computation_type(F16, false, F16, false, true), Ok(F32));
        assert_eq!(computation_type(F16, false, F32, true, false), Ok(F16));
        assert_eq!(computation_type(I32, true, F16, false, false), Ok(F16));
        assert_eq!(computation_type(F32, true, I32, false, false), Ok(F32));
        assert_eq!(computation_type(I32, false, I64, false, false), Ok(I64));
        assert_eq!(computation_type(U32, false, I32, false, false), Ok(U32));
        assert_eq!(computation_type(I32, true, U8, false, false), Ok(I32));
        assert_eq!(computation_type(I8, false, U8, false, false), Ok(U8));
        assert_eq!(computation_type(BF16, false, F16, false, false), Ok(F16));
        assert!(computation_type(U32, false, I32, false, true).is_err());
    }

    #[test]
    fn python_constant_arithmetic() {
        let i = ConstVal::Int;
        assert_eq!(const_binary(PyOp::FloorDiv, &i(-7), &i(2)), Ok(i(-4)));
        assert_eq!(const_binary(PyOp::Mod, &i(-7), &i(2)), Ok(i(1)));
        assert_eq!(
            const_binary(PyOp::TrueDiv, &i(7), &i(2)),
            Ok(ConstVal::Float(3.5))
        );
        assert!(const_binary(PyOp::FloorDiv, &i(1), &i(0)).is_err());
    }
}
