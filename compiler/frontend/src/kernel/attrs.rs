//! Attributes of values inside kernels: `x.dtype`, `x.shape`, `x.T`,
//! bound tensor methods, dtype predicates, descriptors' attributes.

use super::lower::{KVal, LResult, Lowerer};
use super::ConstVal;
use crate::source::Span;
use tilebook_tir::{Elem, OpKind};

impl Lowerer<'_> {
    /// Attribute access on modules, tensors and dtypes.
    pub(super) fn attribute(&mut self, base: KVal, attr: &str, span: &Span) -> LResult<KVal> {
        match &base {
            KVal::Desc(d) => self.desc_attr(&d.clone(), attr, span),
            KVal::Module(m) => super::names::module_attr(m, attr).ok_or_else(|| {
                self.err(
                    "AttributeError",
                    super::names::missing_member(m, attr),
                    span,
                )
            }),
            KVal::T(v) => {
                let t = self.ty(*v);
                match attr {
                    "dtype" => match t.elem {
                        Elem::Scalar(d) => Ok(KVal::C(ConstVal::DType(d))),
                        Elem::Ptr(d) => Ok(KVal::C(ConstVal::PtrType(d))),
                    },
                    "shape" => Ok(KVal::C(ConstVal::Tuple(
                        t.shape.iter().map(|&d| ConstVal::Int(d as i64)).collect(),
                    ))),
                    "numel" => Ok(KVal::C(ConstVal::Int(t.numel() as i64))),
                    "T" => {
                        let n = t.shape.len();
                        if n != 2 {
                            return Err(self.err(
                                "ValueError",
                                format!(".T needs a 2-D block, got rank {n}"),
                                span,
                            ));
                        }
                        Ok(KVal::T(self.emit1(
                            OpKind::Trans(vec![1, 0]),
                            vec![*v],
                            t.with_shape(vec![t.shape[1], t.shape[0]]),
                            span,
                        )))
                    }
                    "to" | "reshape" | "view" | "trans" | "permute" | "sum" | "max" | "min"
                    | "argmax" | "argmin" | "cumsum" | "cumprod" | "expand_dims"
                    | "broadcast_to" | "reduce" | "abs" | "exp" | "log" | "sqrt" | "split"
                    | "flip" | "sort" | "gather" | "histogram" | "associative_scan" | "xor_sum"
                    | "sigmoid" | "softmax" | "exp2" | "log2" | "sin" | "cos" | "rsqrt" => {
                        Ok(KVal::Method(Box::new(base.clone()), attr.to_string()))
                    }
                    _ => Err(self.err(
                        "AttributeError",
                        format!("a tensor has no attribute `{attr}` in kernels"),
                        span,
                    )),
                }
            }
            KVal::C(ConstVal::DType(d)) => match attr {
                "primitive_bitwidth" => Ok(KVal::C(ConstVal::Int(d.bits() as i64))),
                "is_floating" | "is_int" | "is_fp16" | "is_bf16" | "is_fp32" | "is_int_signed" => {
                    Ok(KVal::Method(Box::new(base.clone()), attr.to_string()))
                }
                _ => Err(self.err(
                    "AttributeError",
                    format!("dtype has no attribute `{attr}`"),
                    span,
                )),
            },
            KVal::C(ConstVal::PtrType(d)) => match attr {
                "element_ty" => Ok(KVal::C(ConstVal::DType(*d))),
                "primitive_bitwidth" => Ok(KVal::C(ConstVal::Int(64))),
                _ => Err(self.err(
                    "AttributeError",
                    format!("a pointer type has no attribute `{attr}` in tilebook"),
                    span,
                )),
            },
            KVal::C(ConstVal::Func(f)) => Err(self.err(
                "AttributeError",
                format!(
                    "@jit function `{}` has no attribute `{attr}` in kernels",
                    f.name
                ),
                span,
            )),
            other => Err(self.err(
                "AttributeError",
                format!("{} has no attribute `{attr}`", other.describe()),
                span,
            )),
        }
    }
}
