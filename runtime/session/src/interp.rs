//! Calls and iteration of session values. Host code itself runs on the
//! Python VM (`host`); the library calls back into it through `Val::Py`.

use crate::value::{Exc, Val};
use crate::Session;

pub type R<T> = Result<T, Exc>;

impl Session {
    pub fn iterate(&mut self, v: &Val) -> R<Vec<Val>> {
        Ok(match v {
            Val::List(l) => l.borrow().clone(),
            Val::Tuple(t) => t.to_vec(),
            Val::Object(_) if v.named_tuple_items().is_some() => {
                v.named_tuple_items().unwrap_or_default()
            }
            Val::Range(a, b, s) => {
                let (a, b, s) = (*a, *b, *s);
                let n = if s > 0 {
                    (b - a + s - 1).max(0) / s
                } else {
                    (a - b - s - 1).max(0) / (-s)
                };
                if n > 100_000_000 {
                    return Err(Exc::new("MemoryError", "range too large to iterate"));
                }
                (0..n).map(|i| Val::Int(a + i * s)).collect()
            }
            Val::Str(s) => s.chars().map(|c| Val::str(&c.to_string())).collect(),
            Val::Dict(d) => d.borrow().iter().map(|(k, _)| k.clone()).collect(),
            Val::Tensor(t) => {
                if t.shape.is_empty() {
                    return Err(Exc::type_error("iteration over a 0-d tensor"));
                }
                (0..t.shape[0])
                    .map(|i| Val::tensor(t.select(0, i)))
                    .collect()
            }
            other => {
                return Err(Exc::type_error(format!(
                    "'{}' object is not iterable",
                    other.type_name()
                )))
            }
        })
    }

    /// Call any callable value.
    pub fn call(&mut self, func: &Val, args: Vec<Val>, kwargs: Vec<(String, Val)>) -> R<Val> {
        match func {
            Val::Py(p) => p.clone().call(self, args, kwargs),
            Val::Builtin(name) => crate::builtins::call_builtin(self, name, args, kwargs),
            Val::Method(recv, name) => crate::builtins::call_method(self, recv, name, args, kwargs),
            Val::Launcher(k, grid) => crate::kernels::launch(self, k, grid, args, kwargs),
            Val::Kernel(k) => Err(Exc::type_error(format!(
                "a @triton.jit function is launched as `{}[grid](...)`; it cannot be called directly from host code",
                k.jit.borrow().name
            ))),
            Val::DType(..) => Err(Exc::type_error("dtypes are not callable in host code; use tensor.to(dtype)")),
            other => Err(Exc::type_error(format!("'{}' object is not callable", other.type_name()))),
        }
    }
}
