//! Calls and iteration of session values. Host code itself runs on the
//! Python VM (`host`); the library calls back into it through `Val::Py`.

use crate::value::{Exc, Val};
use crate::Engine;

pub use crate::value::R;

impl Engine {
    pub fn iterate(&mut self, v: &Val) -> R<Vec<Val>> {
        crate::value::iterate(v)
    }

    /// Call any callable value.
    pub fn call(&mut self, func: &Val, args: Vec<Val>, kwargs: Vec<(String, Val)>) -> R<Val> {
        match func {
            Val::Py(p) => p.clone().call(self, args, kwargs),
            Val::Builtin(name) => crate::modules::call_builtin(self, name, args, kwargs),
            Val::Method(recv, name) => crate::methods::call_method(self, recv, name, args, kwargs),
            Val::Launcher(k, grid) => tilebook_kernels::launch(self, k, grid, args, kwargs),
            Val::Kernel(k) => Err(Exc::type_error(format!(
                "a @triton.jit function is launched as `{}[grid](...)`; it cannot be called directly from host code",
                k.jit.borrow().name
            ))),
            Val::DType(..) => Err(Exc::type_error("dtypes are not callable in host code; use tensor.to(dtype)")),
            other => Err(Exc::type_error(format!("'{}' object is not callable", other.type_name()))),
        }
    }
}
