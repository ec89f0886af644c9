//! Methods of library values: tensors, kernels, and the objects of the
//! autotuner and of what the session registered (Python's own types have
//! their methods on the VM).

use crate::value::Args;
use crate::value::R;
use crate::value::{Exc, Val};
use crate::Engine;

/// A method of a library value.
pub fn call_method(
    s: &mut Engine,
    recv: &Val,
    name: &str,
    pos: Vec<Val>,
    kw: Vec<(String, Val)>,
) -> R<Val> {
    let a = Args {
        pos,
        kw,
        fname: name.to_string(),
    };
    match recv {
        Val::Tensor(t) => crate::tensor_methods::tensor_method(s, t, name, a),
        Val::Object(o) if s.registry.methods.contains_key(o.type_name.as_str()) => {
            let m = s.registry.methods[o.type_name.as_str()];
            (m.f)(s, o, name, &a)
        }
        Val::Object(o) if name == "__decorate__" => crate::autotune::decorate(o, a.req(0, "fn")?),
        Val::Kernel(k) if name == "warmup" => crate::kernels::warmup(s, k, a),
        other => Err(Exc::new(
            "AttributeError",
            format!("'{}' object has no attribute '{name}'", other.type_name()),
        )),
    }
}
