//! The attribute names of library values: what `dir()`, completion and
//! "did you mean" see. Modules list their registry's members; objects their
//! attributes and the methods an extension registered for their type.

use crate::value::Val;
use crate::Engine;

pub const TENSOR_ATTRS: &[&str] = &[
    "shape",
    "dtype",
    "device",
    "T",
    "ndim",
    "is_cuda",
    "abs",
    "all",
    "amax",
    "amin",
    "any",
    "argmax",
    "argmin",
    "bfloat16",
    "bool",
    "ceil",
    "clone",
    "contiguous",
    "copy_",
    "cos",
    "cpu",
    "cuda",
    "cumsum",
    "data_ptr",
    "dim",
    "double",
    "element_size",
    "exp",
    "exp2",
    "expand",
    "fill_",
    "flatten",
    "float",
    "floor",
    "round",
    "tanh",
    "trunc",
    "half",
    "int",
    "is_contiguous",
    "item",
    "log",
    "long",
    "max",
    "mean",
    "std",
    "var",
    "min",
    "nelement",
    "numel",
    "permute",
    "relu",
    "reshape",
    "sigmoid",
    "sin",
    "size",
    "softmax",
    "sqrt",
    "squeeze",
    "stride",
    "sum",
    "t",
    "to",
    "tolist",
    "transpose",
    "type",
    "unsqueeze",
    "view",
    "zero_",
    "normal_",
    "uniform_",
];

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
        Val::Tensor(_) => TENSOR_ATTRS.iter().map(|s| s.to_string()).collect(),
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
