//! The names of the kernel language: `tl.` dtypes and functions (also what
//! completion and messages list), and how `module.attr` resolves for the
//! built-in modules a kernel can name.

use super::lower::KVal;
use super::ConstVal;
use tilebook_tir::DType;

/// `tl.` dtype names (with torch-style aliases Triton accepts).
pub const DTYPES: [(&str, DType); 19] = [
    ("int1", DType::I1),
    ("int8", DType::I8),
    ("int16", DType::I16),
    ("int32", DType::I32),
    ("int64", DType::I64),
    ("uint8", DType::U8),
    ("uint16", DType::U16),
    ("uint32", DType::U32),
    ("uint64", DType::U64),
    ("float16", DType::F16),
    ("bfloat16", DType::BF16),
    ("float32", DType::F32),
    ("float64", DType::F64),
    ("float8e5", DType::F8E5),
    ("float8e4nv", DType::F8E4NV),
    ("float8_e5m2", DType::F8E5),
    ("float8_e4m3fn", DType::F8E4NV),
    ("bool", DType::I1),
    ("half", DType::F16),
];

/// `tl.` classes a kernel can name as the second argument of `isinstance`
/// (`tl.constexpr` and `tl.pointer_type` are also functions).
pub const TL_TYPES: &[&str] = &[
    "tensor",
    "tensor_descriptor",
    "tensor_descriptor_base",
    "dtype",
    "tuple",
    "block_type",
];

/// Whether a kernel value is an instance of the class `cls` (a
/// `KVal::Builtin` name), decided at compile time as in Triton; `None` when
/// `cls` is not a class.
pub(crate) fn instance_of(v: &KVal, cls: &str) -> Option<bool> {
    Some(match cls {
        "type:tensor" => matches!(v, KVal::T(_)) || matches!(v, KVal::Desc(d) if !d.tensor),
        "type:tensor_descriptor" | "type:tensor_descriptor_base" => {
            matches!(v, KVal::Desc(d) if d.tensor)
        }
        "type:dtype" => matches!(v, KVal::C(ConstVal::DType(_) | ConstVal::PtrType(_))),
        "tl.pointer_type" => matches!(v, KVal::C(ConstVal::PtrType(_))),
        "type:tuple" => matches!(v, KVal::Tuple(_) | KVal::C(ConstVal::Tuple(_))),
        "type:block_type" => false,
        "tl.constexpr" => matches!(v, KVal::C(c) if !matches!(c, ConstVal::Func(_))),
        "int" => matches!(v, KVal::C(ConstVal::Int(_) | ConstVal::Bool(_))),
        "float" => matches!(v, KVal::C(ConstVal::Float(_))),
        "bool" => matches!(v, KVal::C(ConstVal::Bool(_))),
        _ => return None,
    })
}

/// Every `tl.` function tilebook provides (also used for completion and messages).
pub const TL_FUNCTIONS: &[&str] = &[
    "program_id",
    "num_programs",
    "arange",
    "zeros",
    "full",
    "zeros_like",
    "full_like",
    "load",
    "store",
    "dot",
    "where",
    "maximum",
    "minimum",
    "clamp",
    "fma",
    "cdiv",
    "abs",
    "exp",
    "exp2",
    "log",
    "log2",
    "sqrt",
    "sqrt_rn",
    "rsqrt",
    "sin",
    "cos",
    "sigmoid",
    "softmax",
    "fdiv",
    "div_rn",
    "umulhi",
    "floor",
    "ceil",
    "max",
    "min",
    "sum",
    "argmax",
    "argmin",
    "reduce",
    "cumsum",
    "cumprod",
    "xor_sum",
    "expand_dims",
    "broadcast_to",
    "broadcast",
    "reshape",
    "view",
    "trans",
    "permute",
    "static_assert",
    "static_print",
    "device_print",
    "device_assert",
    "inline_asm_elementwise",
    "multiple_of",
    "max_contiguous",
    "cast",
    "constexpr",
    "static_range",
    "range",
    "debug_barrier",
    "assume",
    "pow",
    "to_tensor",
    "atomic_add",
    "atomic_max",
    "atomic_min",
    "atomic_and",
    "atomic_or",
    "atomic_xor",
    "atomic_xchg",
    "atomic_cas",
    "erf",
    "max_constancy",
    "gather",
    "flip",
    "sort",
    "join",
    "split",
    "interleave",
    "cat",
    "histogram",
    "associative_scan",
    "make_block_ptr",
    "make_tensor_descriptor",
    "advance",
    "pointer_type",
];

/// Resolve `module.attr` for the built-in modules.
pub(crate) fn module_attr(module: &str, attr: &str) -> Option<KVal> {
    match module {
        "tl.extra.cuda.libdevice" => {
            super::libdevice::is_member(attr).then(|| KVal::Builtin(format!("libdevice.{attr}")))
        }
        "tl.extra" | "tl.extra.cuda" if attr == "libdevice" => {
            Some(KVal::Module("tl.extra.cuda.libdevice".into()))
        }
        "tl.extra" if attr == "cuda" => Some(KVal::Module("tl.extra.cuda".into())),
        "tl.extra.cuda" if attr == "globaltimer" || attr == "smid" => {
            Some(KVal::Builtin(format!("tl.cuda.{attr}")))
        }
        "tl" | "tl.math" => {
            if let Some((_, d)) = DTYPES.iter().find(|(n, _)| *n == attr) {
                return Some(KVal::C(ConstVal::DType(*d)));
            }
            if module == "tl" && attr == "math" {
                return Some(KVal::Module("tl.math".into()));
            }
            if module == "tl" && attr == "extra" {
                return Some(KVal::Module("tl.extra".into()));
            }
            if module == "tl" {
                if let Some(f) = super::library::member(attr) {
                    return Some(f);
                }
            }
            if TL_FUNCTIONS.contains(&attr) {
                return Some(KVal::Builtin(format!("tl.{attr}")));
            }
            if module == "tl" && TL_TYPES.contains(&attr) {
                return Some(KVal::Builtin(format!("type:{attr}")));
            }
            None
        }
        "triton" => match attr {
            "language" => Some(KVal::Module("tl".into())),
            "cdiv" => Some(KVal::Builtin("tl.cdiv".into())),
            "next_power_of_2" => Some(KVal::Builtin("triton.next_power_of_2".into())),
            _ => None,
        },
        "math" => match attr {
            "pi" => Some(KVal::C(ConstVal::Float(std::f64::consts::PI))),
            "e" => Some(KVal::C(ConstVal::Float(std::f64::consts::E))),
            "inf" => Some(KVal::C(ConstVal::Float(f64::INFINITY))),
            "log2" | "sqrt" | "ceil" | "floor" | "exp" | "log" => {
                Some(KVal::Builtin(format!("math.{attr}")))
            }
            _ => None,
        },
        _ => None,
    }
}

/// The message for a missing module member, listing what exists.
pub(crate) fn missing_member(module: &str, attr: &str) -> String {
    if module == "tl.extra.cuda.libdevice" {
        let hint = crate::diag::did_you_mean(attr, super::libdevice::names(), "libdevice.");
        return format!("libdevice has no function `{attr}` in tilebook{hint}");
    }
    if module.starts_with("tl") {
        let hint = crate::diag::did_you_mean(
            attr,
            TL_FUNCTIONS.iter().chain(super::library::NAMES).copied(),
            "tl.",
        );
        format!("`{module}.{attr}` is not available in tilebook{hint} (`dir(tl)` lists what is)")
    } else {
        format!("module `{module}` has no attribute `{attr}` usable in kernels")
    }
}
