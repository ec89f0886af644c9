//! `tl.atomic_add/max/min/and/or/xor/xchg/cas`: typing, broadcasting and
//! masks as Triton's semantic layer does them, lowered to the tile IR's
//! `atomic` and `atomic_cas` ops.

use super::builtins::Args;
use super::lower::{KVal, LResult, Lowerer};
use super::semantic::shape_str;
use super::ConstVal;
use crate::source::Span;
use tilebook_tir::types::broadcast_shapes;
use tilebook_tir::{AtomicOp, DType, Elem, MemScope, MemSem, OpKind, Value};

/// The atomic builtins by their `tl.` name.
pub const ATOMICS: &[(&str, Option<AtomicOp>)] = &[
    ("atomic_add", Some(AtomicOp::Add)),
    ("atomic_max", Some(AtomicOp::Max)),
    ("atomic_min", Some(AtomicOp::Min)),
    ("atomic_and", Some(AtomicOp::And)),
    ("atomic_or", Some(AtomicOp::Or)),
    ("atomic_xor", Some(AtomicOp::Xor)),
    ("atomic_xchg", Some(AtomicOp::Xchg)),
    ("atomic_cas", None),
];

/// The element types an atomic takes (Triton's checks, less what neither
/// backend has: 16-bit max/min and exchange).
fn supported(op: Option<AtomicOp>, d: DType) -> bool {
    use DType::*;
    let int32_64 = matches!(d, I32 | U32 | I64 | U64);
    match op {
        Some(AtomicOp::Add) => int32_64 || matches!(d, F16 | BF16 | F32 | F64),
        Some(AtomicOp::Max | AtomicOp::Min | AtomicOp::Xchg) | None => {
            int32_64 || matches!(d, F32 | F64)
        }
        Some(AtomicOp::And | AtomicOp::Or | AtomicOp::Xor) => int32_64,
    }
}

impl Lowerer<'_> {
    fn sem_arg(&self, v: &Option<(KVal, Span)>) -> LResult<MemSem> {
        match v {
            None | Some((KVal::C(ConstVal::None), _)) => Ok(MemSem::AcqRel),
            Some((KVal::C(ConstVal::Str(s)), span)) => match s.as_str() {
                "relaxed" => Ok(MemSem::Relaxed),
                "acquire" => Ok(MemSem::Acquire),
                "release" => Ok(MemSem::Release),
                "acq_rel" => Ok(MemSem::AcqRel),
                other => Err(self.err(
                    "ValueError",
                    format!("sem must be \"relaxed\", \"acquire\", \"release\" or \"acq_rel\", got \"{other}\""),
                    span,
                )),
            },
            Some((other, span)) => Err(self.err(
                "TypeError",
                format!("sem must be a string, got {}", other.describe()),
                span,
            )),
        }
    }

    fn scope_arg(&self, v: &Option<(KVal, Span)>) -> LResult<MemScope> {
        match v {
            None | Some((KVal::C(ConstVal::None), _)) => Ok(MemScope::Gpu),
            Some((KVal::C(ConstVal::Str(s)), span)) => match s.as_str() {
                "cta" => Ok(MemScope::Cta),
                "gpu" => Ok(MemScope::Gpu),
                "sys" => Ok(MemScope::Sys),
                other => Err(self.err(
                    "ValueError",
                    format!("scope must be \"cta\", \"gpu\" or \"sys\", got \"{other}\""),
                    span,
                )),
            },
            Some((other, span)) => Err(self.err(
                "TypeError",
                format!("scope must be a string, got {}", other.describe()),
                span,
            )),
        }
    }

    /// An operand converted to the pointee type and broadcast to `shape`.
    fn atomic_operand(
        &mut self,
        v: &(KVal, Span),
        d: DType,
        shape: &[usize],
        span: &Span,
    ) -> LResult<Value> {
        let x = match &v.0 {
            KVal::C(c) => self.const_as(c, d, &v.1),
            other => {
                let x = self.value_of(other, &v.1)?;
                if self.ty(x).elem.is_ptr() {
                    return Err(self.err(
                        "TypeError",
                        "atomics on pointer values are not supported",
                        &v.1,
                    ));
                }
                self.cast(x, d, &v.1)
            }
        };
        self.broadcast_to(x, shape, span)
    }

    /// `tl.atomic_<op>(pointer, val, mask=None, sem=None, scope=None)` and
    /// `tl.atomic_cas(pointer, cmp, val, sem=None, scope=None)`.
    pub(super) fn atomic(&mut self, name: &str, args: &Args, span: &Span) -> LResult<KVal> {
        let Some(&(_, op)) = ATOMICS.iter().find(|(n, _)| *n == name) else {
            return Err(self.err("AttributeError", format!("no atomic `{name}`"), span));
        };
        let params: &[&str] = match op {
            Some(_) => &["pointer", "val", "mask", "sem", "scope"],
            None => &["pointer", "cmp", "val", "sem", "scope"],
        };
        let a = self.bind(name, params, args, span)?;
        let p = self.required(name, "pointer", &a[0], span)?;
        let ptr = self.value_of(&p.0, &p.1)?;
        let pt = self.ty(ptr);
        let Elem::Ptr(d) = pt.elem else {
            return Err(self.err(
                "TypeError",
                format!("tl.{name} needs pointers, got {}", self.describe_kval(&p.0)),
                &p.1,
            ));
        };
        if !supported(op, d) {
            return Err(self.err(
                "TypeError",
                format!("tl.{name} does not support {} elements", d.tl_name()),
                &p.1,
            ));
        }
        let (sem_i, scope_i) = (3, 4);
        let sem = self.sem_arg(&a[sem_i])?;
        let scope = self.scope_arg(&a[scope_i])?;
        // The pointers broadcast against the value operands (a scalar pointer
        // with a block of values is a block of equal pointers).
        let operands: Vec<(KVal, Span)> = match op {
            Some(_) => vec![self.required(name, "val", &a[1], span)?],
            None => vec![
                self.required(name, "cmp", &a[1], span)?,
                self.required(name, "val", &a[2], span)?,
            ],
        };
        let mut shape = pt.shape.clone();
        for (v, s) in &operands {
            let vs = match v {
                KVal::T(x) => self.ty(*x).shape,
                _ => vec![],
            };
            shape = broadcast_shapes(&shape, &vs).ok_or_else(|| {
                self.err(
                    "ValueError",
                    format!(
                        "the value's shape {} does not broadcast with the pointers' shape {}",
                        shape_str(&vs),
                        shape_str(&shape)
                    ),
                    s,
                )
            })?;
        }
        let ptr = self.broadcast_to(ptr, &shape, span)?;
        let mut values = vec![ptr];
        for v in &operands {
            values.push(self.atomic_operand(v, d, &shape, span)?);
        }
        let result_ty = self.ty(ptr).with_elem(Elem::Scalar(d));
        let Some(op) = op else {
            return Ok(KVal::T(self.emit1(
                OpKind::AtomicCas { sem, scope },
                values,
                result_ty,
                span,
            )));
        };
        let mask = self.mask_arg(&a[2])?;
        if let Some(m) = mask {
            let ms = self.ty(m).shape;
            if broadcast_shapes(&ms, &shape).as_deref() != Some(&shape[..]) {
                return Err(self.err(
                    "ValueError",
                    format!(
                        "the mask's shape {} does not match the pointers' shape {}",
                        shape_str(&ms),
                        shape_str(&shape)
                    ),
                    span,
                ));
            }
            values.push(self.broadcast_to(m, &shape, span)?);
        }
        Ok(KVal::T(self.emit1(
            OpKind::AtomicRmw {
                op,
                sem,
                scope,
                mask: mask.is_some(),
            },
            values,
            result_ty,
            span,
        )))
    }
}
