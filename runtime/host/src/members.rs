//! The attribute names of library values: what `dir()`, completion and
//! "did you mean" see. Modules list their registry's members; objects their
//! attributes and the methods an extension registered for their type.

use crate::value::Val;
use crate::Engine;

pub const KERNEL_ATTRS: &[&str] = &["warmup", "best_config", "compile_count", "__name__"];
pub const STR_METHODS: &[&str] = &[
    "format",
    "join",
    "split",
    "strip",
    "startswith",
    "endswith",
    "replace",
    "upper",
    "lower",
    "ljust",
    "rjust",
];
pub const LIST_METHODS: &[&str] = &[
    "append", "extend", "pop", "insert", "index", "count", "sort",
];
pub const DICT_METHODS: &[&str] = &["keys", "values", "items", "get", "update", "pop"];

pub fn attributes(s: &Engine, v: &Val) -> Vec<String> {
    let names: Vec<String> = match v {
        Val::Module(m) => crate::modules::module_members(s, m),
        Val::Tensor(_) => crate::tensor_methods::attribute_names()
            .map(str::to_string)
            .collect(),
        Val::Kernel(_) => KERNEL_ATTRS.iter().map(|s| s.to_string()).collect(),
        Val::Str(_) => STR_METHODS.iter().map(|s| s.to_string()).collect(),
        Val::List(_) => LIST_METHODS.iter().map(|s| s.to_string()).collect(),
        Val::Dict(_) => DICT_METHODS.iter().map(|s| s.to_string()).collect(),
        Val::Object(o) => {
            let mut a: Vec<String> = o
                .attrs
                .borrow()
                .iter()
                .map(|(n, _)| n.clone())
                .filter(|n| !n.starts_with('_'))
                .collect();
            if let Some(m) = s.registry.methods.get(o.type_name.as_str()) {
                a.extend(m.names.iter().map(|n| n.to_string()));
            }
            a
        }
        _ => vec![],
    };
    names
}
