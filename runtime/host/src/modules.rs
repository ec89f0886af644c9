//! The native modules, read from the engine's registry: calls by qualified
//! name, a module's members (`dir()`, completion) and attributes. The few
//! members that are not functions (submodules, dtypes, versions, the driver
//! object) are listed here.

use crate::registry::Entry;
use crate::value::{attr_of, Args, Exc, Val, R};
use crate::Engine;
use std::rc::Rc;
use tilebook_frontend::kernel::{libdevice, TL_DTYPES, TL_FUNCTIONS};
use tilebook_tir::DType;

/// Submodules: (module, member, the module it names).
const SUBMODULES: &[(&str, &str, &str)] = &[
    ("torch", "cuda", "torch.cuda"),
    ("torch", "nn", "torch.nn"),
    ("torch.nn", "functional", "torch.nn.functional"),
    ("triton", "language", "tl"),
    ("triton", "testing", "triton.testing"),
    ("triton", "runtime", "triton.runtime"),
    ("triton.runtime", "driver", "triton.runtime.driver"),
    ("tl", "math", "tl.math"),
    ("tl", "extra", "tl.extra"),
    ("tl.extra", "cuda", "tl.extra.cuda"),
    ("tl.extra", "libdevice", "tl.extra.cuda.libdevice"),
    ("tl.extra.cuda", "libdevice", "tl.extra.cuda.libdevice"),
];

const TORCH_DTYPES: &[(&str, DType)] = &[
    ("float16", DType::F16),
    ("half", DType::F16),
    ("bfloat16", DType::BF16),
    ("float32", DType::F32),
    ("float", DType::F32),
    ("float64", DType::F64),
    ("double", DType::F64),
    ("int8", DType::I8),
    ("int16", DType::I16),
    ("int32", DType::I32),
    ("int", DType::I32),
    ("int64", DType::I64),
    ("long", DType::I64),
    ("uint8", DType::U8),
    ("bool", DType::I1),
    ("float8_e5m2", DType::F8E5),
    ("float8_e4m3fn", DType::F8E4NV),
];

/// A native function by qualified name.
pub fn find(s: &Engine, name: &str) -> Option<Entry> {
    s.registry.natives.get(name).copied()
}

/// The doc of a native function.
pub fn doc(s: &Engine, name: &str) -> Option<&'static str> {
    find(s, name).map(|e| e.doc).filter(|d| !d.is_empty())
}

/// Call a native function by its qualified name.
pub fn call_builtin(s: &mut Engine, name: &str, pos: Vec<Val>, kw: Vec<(String, Val)>) -> R<Val> {
    let a = Args {
        pos,
        kw,
        fname: name.rsplit('.').next().unwrap_or(name).to_string(),
    };
    if let Some(e) = find(s, name) {
        return (e.f)(s, name, a);
    }
    if let Some(n) = name.strip_prefix("tl.") {
        if n == "constexpr" {
            return a.req(0, "value");
        }
        return Err(Exc::new(
            "RuntimeError",
            format!("triton.language.{n}() can only be called inside a @triton.jit function"),
        ));
    }
    Err(Exc::new(
        "NotImplementedError",
        format!("`{name}` is not available in tilebook yet"),
    ))
}

/// The functions of module `m` (the last part of their names).
fn functions(s: &Engine, m: &str) -> Vec<&'static str> {
    let direct = |n: &'static str| {
        n.strip_prefix(m)
            .and_then(|r| r.strip_prefix('.'))
            .filter(|r| !r.contains('.'))
    };
    let mut v: Vec<&'static str> = s
        .registry
        .natives
        .keys()
        .filter_map(|n| direct(n))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// A member of `m` that is not a function.
fn constant(s: &Engine, m: &str, name: &str) -> Option<Val> {
    if let Some((_, _, sub)) = SUBMODULES.iter().find(|(p, n, _)| *p == m && *n == name) {
        return Some(Val::Module(Rc::from(*sub)));
    }
    Some(match (m, name) {
        ("torch", n) => match TORCH_DTYPES.iter().find(|(k, _)| *k == n) {
            Some((_, d)) => Val::DType(*d, true),
            None if n == "__version__" => Val::str("2.11 (tilebook)"),
            None => return None,
        },
        ("triton", "__version__") => {
            Val::str(concat!("3.6 (tilebook ", env!("CARGO_PKG_VERSION"), ")"))
        }
        ("triton.runtime.driver", "active") => s.active_driver(),
        ("tl" | "tl.math", n) => Val::DType(TL_DTYPES.iter().find(|(k, _)| *k == n)?.1, false),
        _ => return None,
    })
}

/// The names of the non-function members of `m`.
fn constant_names(m: &str) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = SUBMODULES
        .iter()
        .filter(|(p, _, _)| *p == m)
        .map(|(_, n, _)| *n)
        .collect();
    match m {
        "torch" => v.extend(TORCH_DTYPES.iter().map(|(n, _)| *n).chain(["__version__"])),
        "triton" => v.push("__version__"),
        "triton.runtime.driver" => v.push("active"),
        "tl" | "tl.math" => v.extend(TL_DTYPES.iter().map(|(n, _)| *n).chain(["constexpr"])),
        _ => {}
    }
    v
}

/// The members of a module as `dir()` and completion list them; each
/// resolves as an attribute of the module.
pub fn module_members(s: &Engine, m: &str) -> Vec<String> {
    let mut v = constant_names(m);
    match m {
        "tl" | "tl.math" => v.extend(TL_FUNCTIONS.iter().copied()),
        "tl.extra.cuda.libdevice" => v.extend(libdevice::names()),
        _ => v.extend(functions(s, m)),
    }
    v.sort_unstable();
    v.dedup();
    v.into_iter().map(str::to_string).collect()
}

/// `m.name`.
pub fn module_attr(s: &mut Engine, m: &str, name: &str) -> R<Val> {
    if let Some(v) = constant(s, m, name) {
        return Ok(v);
    }
    let full = format!("{m}.{name}");
    let function = match m {
        "tl" | "tl.math" => TL_FUNCTIONS.contains(&name) || name == "constexpr",
        "tl.extra.cuda.libdevice" => libdevice::names().any(|n| n == name),
        _ => find(s, &full).is_some(),
    };
    if function {
        let q = if m == "tl.math" {
            format!("tl.{name}")
        } else {
            full
        };
        return Ok(Val::Builtin(Rc::from(q.as_str())));
    }
    let members = module_members(s, m);
    Err(Exc::new(
        "AttributeError",
        format!(
            "module '{}' has no attribute '{name}' in tilebook{}",
            if m == "tl" { "triton.language" } else { m },
            tilebook_frontend::diag::did_you_mean(
                name,
                members.iter().map(String::as_str),
                &format!("{m}."),
            )
        ),
    ))
}

/// A module member by lookup only, for completion.
pub fn module_member(s: &mut Engine, m: &str, name: &str) -> Option<Val> {
    module_attr(s, m, name).ok()
}

impl Engine {
    pub fn get_attr(&mut self, base: &Val, name: &str) -> R<Val> {
        match base {
            Val::Module(m) => module_attr(self, m, name),
            Val::Tensor(t) => crate::tensor_methods::tensor_attr(base, t, name),
            Val::Object(o) => {
                if let Some(m) = self.registry.methods.get(o.type_name.as_str()) {
                    if m.names.contains(&name) {
                        return Ok(Val::Method(Box::new(base.clone()), Rc::from(name)));
                    }
                }
                attr_of(o, name).ok_or_else(|| {
                    Exc::new(
                        "AttributeError",
                        format!("'{}' object has no attribute '{name}'", o.type_name),
                    )
                })
            }
            Val::Kernel(k) => crate::kernels::kernel_attr(self, k, name),
            other => crate::builtins::value_attr(other, name),
        }
    }
}
