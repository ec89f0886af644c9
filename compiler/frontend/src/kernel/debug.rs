//! The debugging builtins: `tl.static_assert`, `tl.static_print`,
//! `tl.device_print` (and `print`), `tl.device_assert`.

use super::builtins::Args;
use super::lower::{KVal, LResult, Lowerer};
use super::semantic::const_truth;
use super::ConstVal;
use crate::source::Span;
use tilebook_tir::OpKind;

impl Lowerer<'_> {
    pub(super) fn debug_builtin(&mut self, n: &str, args: &Args, span: &Span) -> LResult<KVal> {
        match n {
            "static_assert" => {
                let a = self.bind(n, &["cond", "msg"], args, span)?;
                let c = self.required(n, "cond", &a[0], span)?;
                let msg = match &a[1] {
                    Some((KVal::C(ConstVal::Str(s)), _)) => s.clone(),
                    _ => String::new(),
                };
                match &c.0 {
                    KVal::C(cv) if const_truth(cv) => Ok(KVal::C(ConstVal::None)),
                    KVal::C(_) => Err(self.err(
                        "AssertionError",
                        format!(
                            "static_assert failed{}{msg}",
                            if msg.is_empty() { "" } else { ": " }
                        ),
                        span,
                    )),
                    _ => Err(self.err(
                        "TypeError",
                        "tl.static_assert needs a constexpr condition",
                        &c.1,
                    )),
                }
            }
            "static_print" => {
                let mut parts = vec![];
                for (v, _) in &args.pos {
                    parts.push(match v {
                        KVal::C(ConstVal::Str(s)) => s.clone(),
                        KVal::C(c) => c.to_string(),
                        KVal::T(t) => triton_str(&self.ty(*t)),
                        other => other.describe(),
                    });
                }
                self.static_output.push_str(&parts.join(" "));
                self.static_output.push('\n');
                Ok(KVal::C(ConstVal::None))
            }
            "device_print" | "print" => {
                let (prefix, rest) = match args.pos.split_first() {
                    Some(((KVal::C(ConstVal::Str(s)), _), rest)) => (s.clone(), rest.to_vec()),
                    _ => (String::new(), args.pos.clone()),
                };
                let mut vals = vec![];
                for (v, s) in rest {
                    vals.push(self.value_of(&v, &s)?);
                }
                let prefix = print_prefix(prefix, !vals.is_empty());
                self.emit(OpKind::Print(prefix), vals, vec![], span);
                Ok(KVal::C(ConstVal::None))
            }
            _ => {
                let a = self.bind(n, &["cond", "msg", "mask"], args, span)?;
                let c = self.required(n, "cond", &a[0], span)?;
                let msg = match &a[1] {
                    Some((KVal::C(ConstVal::Str(s)), _)) => s.clone(),
                    _ => "device_assert failed".into(),
                };
                if let KVal::C(cv) = &c.0 {
                    if !const_truth(cv) {
                        return Err(self.err("AssertionError", msg, span));
                    }
                    return Ok(KVal::C(ConstVal::None));
                }
                let v = self.value_of(&c.0, &c.1)?;
                let v = self.condition_of(v, span)?;
                self.emit(OpKind::Assert(msg), vec![v], vec![], span);
                Ok(KVal::C(ConstVal::None))
            }
        }
    }
}

/// The prefix as Triton prints it: before values it ends with `": "`, and a
/// prefix longer than that starts with a space (`"x"` → `" x: "`, `""` →
/// `": "`), so lines read `pid (0, 0, 0) idx (3) x: 1.5`.
fn print_prefix(mut p: String, values: bool) -> String {
    if values {
        if !p.ends_with(' ') {
            p.push(' ');
        }
        if !p.ends_with(": ") {
            p.pop();
            p.push_str(": ");
        }
    }
    if p.chars().count() > 2 && !p.starts_with(' ') {
        p.insert(0, ' ');
    }
    p
}

/// How Triton's `str()` shows a tensor at compile time: `fp32[128]`,
/// `pointer<fp16>[64, 64]`, `int32[]` for a scalar.
fn triton_str(t: &tilebook_tir::Type) -> String {
    let elem = match t.elem {
        tilebook_tir::Elem::Scalar(d) => d.to_string(),
        tilebook_tir::Elem::Ptr(d) => format!("pointer<{d}>"),
    };
    let dims: Vec<String> = t.shape.iter().map(|d| d.to_string()).collect();
    format!("{elem}[{}]", dims.join(", "))
}
