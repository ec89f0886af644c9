//! Inline PTX: `tl.inline_asm_elementwise(asm, constraints, args, dtype,
//! is_pure, pack)` and the `tl.extra.cuda` helpers built on it
//! (`globaltimer()`, `smid()`). One `inline_asm` op per call; the GPU
//! backend emits the PTX once per element, the CPU backend refuses it.

use super::builtins::Args;
use super::lower::{KVal, LResult, Lowerer};
use super::ConstVal;
use crate::source::Span;
use tilebook_tir::{DType, OpKind, Type};

impl Lowerer<'_> {
    pub(super) fn inline_asm_builtin(
        &mut self,
        n: &str,
        args: &Args,
        span: &Span,
    ) -> LResult<KVal> {
        match n {
            "globaltimer" | "smid" => {
                self.bind(n, &[], args, span)?;
                let (asm, constraint, d) = if n == "globaltimer" {
                    ("mov.u64 $0, %globaltimer;", "=l", DType::I64)
                } else {
                    ("mov.u32 $0, %smid;", "=r", DType::I32)
                };
                let kind = OpKind::InlineAsm {
                    asm: asm.into(),
                    constraints: constraint.into(),
                    pure: false,
                };
                Ok(KVal::T(self.emit1(kind, vec![], Type::scalar(d), span)))
            }
            _ => self.inline_asm_elementwise(n, args, span),
        }
    }

    fn inline_asm_elementwise(&mut self, n: &str, args: &Args, span: &Span) -> LResult<KVal> {
        let a = self.bind(
            n,
            &["asm", "constraints", "args", "dtype", "is_pure", "pack"],
            args,
            span,
        )?;
        let text = |this: &Self, v: &Option<(KVal, Span)>, what: &str| match v {
            Some((KVal::C(ConstVal::Str(s)), _)) => Ok(s.clone()),
            _ => Err(this.err(
                "TypeError",
                format!("tl.inline_asm_elementwise: `{what}` must be a constant string"),
                span,
            )),
        };
        let asm = text(self, &a[0], "asm")?;
        let constraints = text(self, &a[1], "constraints")?;
        let operands = self.required(n, "args", &a[2], span)?;
        let dtype = self.required(n, "dtype", &a[3], span)?;
        if matches!(dtype.0, KVal::C(ConstVal::Tuple(_)) | KVal::Tuple(_)) {
            return Err(self.err(
                "UnsupportedError",
                "tl.inline_asm_elementwise with several result dtypes is not supported in tilebook yet; use one dtype",
                span,
            ));
        }
        let d = self.dtype_arg(&dtype, "tl.inline_asm_elementwise dtype")?;
        let pure = match &a[4] {
            Some((KVal::C(ConstVal::Bool(b)), _)) => *b,
            None => true,
            Some(_) => {
                return Err(self.err(
                    "TypeError",
                    "tl.inline_asm_elementwise: `is_pure` must be a constant bool",
                    span,
                ))
            }
        };
        let pack = match &a[5] {
            None => 1,
            Some(p) => self.const_int(p, "pack")?,
        };
        if pack != 1 {
            return Err(self.err(
                "UnsupportedError",
                format!("tl.inline_asm_elementwise with pack={pack} is not supported in tilebook yet (pack=1 only)"),
                span,
            ));
        }
        let items: Vec<KVal> = match &operands.0 {
            KVal::Tuple(items) => items.clone(),
            KVal::C(ConstVal::Tuple(items)) => items.iter().cloned().map(KVal::C).collect(),
            other => vec![other.clone()],
        };
        let mut values = vec![];
        for item in &items {
            values.push(self.value_of(item, span)?);
        }
        // All operands broadcast to one shape, as Triton does.
        let mut shape: Vec<usize> = vec![];
        for v in &values {
            let s = self.ty(*v).shape.clone();
            if s.len() > shape.len()
                || (s.len() == shape.len() && s.iter().product::<usize>() > shape.iter().product())
            {
                shape = s;
            }
        }
        let mut ops = vec![];
        for v in values {
            ops.push(self.broadcast_to(v, &shape, span)?);
        }
        let kind = OpKind::InlineAsm {
            asm,
            constraints,
            pure,
        };
        let t = Type {
            shape,
            ..Type::scalar(d)
        };
        Ok(KVal::T(self.emit1(kind, ops, t, span)))
    }
}
