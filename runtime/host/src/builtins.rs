//! Python builtins and the `torch`, `triton`, `math` and `sys` modules as the
//! host language sees them, plus methods of tensors, strings, lists and dicts.

pub use crate::methods::call_method;
use crate::ops::{equal, map_tensor};
use crate::tensor::{Device, Scalar, Tensor};
use crate::tensor_lib::*;
pub use crate::tensor_lib::{
    allclose_call, arange, creation, cumsum, from_data, full, like, randint, reduce_call,
    softmax_call, unary_named,
};
use crate::value::R;
use crate::value::{attr_of, Config, Exc, Val};
use crate::Engine;
use std::cell::RefCell;
use std::rc::Rc;
use tilebook_tir::DType;

const PY_BUILTINS: &[&str] = &[
    "print",
    "len",
    "range",
    "min",
    "max",
    "abs",
    "sum",
    "any",
    "all",
    "sorted",
    "enumerate",
    "zip",
    "str",
    "int",
    "float",
    "bool",
    "isinstance",
    "hasattr",
    "getattr",
    "list",
    "tuple",
    "dict",
    "round",
    "repr",
    "reversed",
    "divmod",
    "pow",
    "format",
    "map",
    "filter",
    "type",
    "hex",
    "ord",
    "chr",
    "help",
    "display",
    "clear_output",
];

const EXCEPTIONS: &[&str] = &[
    "Exception",
    "BaseException",
    "ValueError",
    "TypeError",
    "RuntimeError",
    "AssertionError",
    "KeyError",
    "IndexError",
    "NotImplementedError",
    "ZeroDivisionError",
    "KeyboardInterrupt",
    "AttributeError",
    "NameError",
    "ArithmeticError",
    "LookupError",
    "OverflowError",
    "ImportError",
    "StopIteration",
];

pub const TORCH_FUNCTIONS: &[&str] = &[
    "empty",
    "zeros",
    "ones",
    "full",
    "rand",
    "randn",
    "randint",
    "arange",
    "empty_like",
    "zeros_like",
    "ones_like",
    "rand_like",
    "randn_like",
    "full_like",
    "tensor",
    "manual_seed",
    "where",
    "abs",
    "exp",
    "log",
    "sqrt",
    "max",
    "min",
    "sum",
    "mean",
    "var",
    "std",
    "argmax",
    "argmin",
    "allclose",
    "isclose",
    "matmul",
    "softmax",
    "result_type",
    "device",
    "Tensor",
    "equal",
    "maximum",
    "minimum",
    "sigmoid",
    "relu",
    "sin",
    "cos",
    "exp2",
    "log2",
    "rsqrt",
    "floor",
    "ceil",
    "round",
    "trunc",
    "tanh",
    "cumsum",
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

use tilebook_frontend::kernel::TL_DTYPES;

/// A builtin visible by bare name.
pub fn builtin_name(name: &str) -> Option<Val> {
    if PY_BUILTINS.contains(&name) || EXCEPTIONS.contains(&name) {
        return Some(Val::Builtin(Rc::from(name)));
    }
    None
}

/// Every builtin visible by bare name (for completion).
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    PY_BUILTINS.iter().chain(EXCEPTIONS).copied()
}

/// The members of a module as completion offers them; each resolves as an
/// attribute of the module (`tests/complete.rs` checks).
pub fn module_members(m: &str) -> Vec<String> {
    let list: Vec<&str> = match m {
        "torch" => TORCH_FUNCTIONS
            .iter()
            .copied()
            .chain(TORCH_DTYPES.iter().map(|(n, _)| *n))
            .chain(["cuda", "nn", "__version__"])
            .collect(),
        "torch.nn" => vec!["functional"],
        "torch.nn.functional" => vec!["relu", "leaky_relu", "softmax", "sigmoid"],
        "torch.cuda" => vec![
            "synchronize",
            "get_device_name",
            "is_available",
            "current_device",
            "device_count",
            "mem_get_info",
            "Stream",
            "set_stream",
            "empty_cache",
        ],
        "triton" => vec![
            "jit",
            "cdiv",
            "next_power_of_2",
            "Config",
            "autotune",
            "heuristics",
            "language",
            "testing",
            "runtime",
            "__version__",
        ],
        "triton.testing" => vec!["do_bench", "perf_report", "Benchmark"],
        "triton.runtime" => vec!["driver"],
        "triton.runtime.driver" => vec!["active"],
        "tl" | "tl.math" => tilebook_frontend::kernel::TL_FUNCTIONS
            .iter()
            .copied()
            .chain(TL_DTYPES.iter().map(|(n, _)| *n))
            .chain(["constexpr", "math"])
            .collect(),
        "math" => vec![
            "pi", "e", "inf", "nan", "sqrt", "log2", "log", "exp", "ceil", "floor", "isclose",
            "log10", "prod",
        ],
        "time" => vec!["perf_counter", "time"],
        "sys" => vec!["stderr", "stdout", "version"],
        "os" => vec!["environ"],
        "tilebook" => vec!["trace"],
        _ => vec![],
    };
    list.into_iter().map(str::to_string).collect()
}

/// A module member by lookup only (no session state): submodules as
/// modules, everything else as the builtin of that name.
pub fn module_member(m: &str, name: &str) -> Option<Val> {
    if !module_members(m).iter().any(|n| n == name) {
        return None;
    }
    let full = format!("{m}.{name}");
    let sub = match full.as_str() {
        "triton.language" => Some("tl"),
        "tl.math"
        | "torch.cuda"
        | "torch.nn"
        | "torch.nn.functional"
        | "triton.testing"
        | "triton.runtime"
        | "triton.runtime.driver" => Some(full.as_str()),
        _ => None,
    };
    Some(match sub {
        Some(s) => Val::Module(Rc::from(s)),
        None => Val::Builtin(Rc::from(full.as_str())),
    })
}

/// `import name`.
pub fn import(name: &str) -> Option<Val> {
    let m = match name {
        "torch"
        | "triton"
        | "math"
        | "sys"
        | "torch.cuda"
        | "torch.nn"
        | "torch.nn.functional"
        | "triton.testing"
        | "triton.runtime" => name,
        "triton.language" | "tl" => "tl",
        "triton.language.math" => "tl.math",
        "triton.runtime.driver" => "triton.runtime.driver",
        "os" => "os",
        "time" => "time",
        "tilebook" => "tilebook",
        _ => return None,
    };
    Some(Val::Module(Rc::from(m)))
}

fn module_attr(s: &mut Engine, m: &str, name: &str) -> R<Val> {
    let b = |q: &str| Ok(Val::Builtin(Rc::from(q)));
    match (m, name) {
        ("torch", n) if TORCH_FUNCTIONS.contains(&n) => b(&format!("torch.{n}")),
        ("torch", n) if TORCH_DTYPES.iter().any(|(k, _)| *k == n) => Ok(Val::DType(
            TORCH_DTYPES
                .iter()
                .find(|(k, _)| *k == n)
                .map(|(_, d)| *d)
                .unwrap_or(DType::F32),
            true,
        )),
        ("torch", "cuda") => Ok(Val::Module(Rc::from("torch.cuda"))),
        ("torch", "nn") => Ok(Val::Module(Rc::from("torch.nn"))),
        ("torch", "__version__") => Ok(Val::str("2.11 (tilebook)")),
        ("torch.nn", "functional") => Ok(Val::Module(Rc::from("torch.nn.functional"))),
        ("torch.nn.functional", "relu" | "leaky_relu" | "softmax" | "sigmoid") => {
            b(&format!("torch.nn.functional.{name}"))
        }
        (
            "torch.cuda",
            "synchronize" | "get_device_name" | "is_available" | "current_device" | "device_count"
            | "mem_get_info" | "Stream" | "set_stream" | "empty_cache",
        ) => b(&format!("torch.cuda.{name}")),
        ("tilebook", "trace") => b("tilebook.trace"),
        ("triton", "jit") => b("triton.jit"),
        ("triton", "cdiv" | "next_power_of_2" | "Config" | "autotune" | "heuristics") => {
            b(&format!("triton.{name}"))
        }
        ("triton", "language") => Ok(Val::Module(Rc::from("tl"))),
        ("triton", "testing") => Ok(Val::Module(Rc::from("triton.testing"))),
        ("triton", "runtime") => Ok(Val::Module(Rc::from("triton.runtime"))),
        ("triton", "__version__") => Ok(Val::str(concat!(
            "3.6 (tilebook ",
            env!("CARGO_PKG_VERSION"),
            ")"
        ))),
        ("triton.testing", "do_bench") => b("triton.testing.do_bench"),
        ("triton.testing", "perf_report" | "Benchmark") => b(&format!("triton.testing.{name}")),
        ("time", "perf_counter" | "time") => b(&format!("time.{name}")),
        ("triton.runtime", "driver") => Ok(Val::Module(Rc::from("triton.runtime.driver"))),
        ("triton.runtime.driver", "active") => Ok(s.active_driver()),
        ("tl" | "tl.math", n) if TL_DTYPES.iter().any(|(k, _)| *k == n) => Ok(Val::DType(
            TL_DTYPES
                .iter()
                .find(|(k, _)| *k == n)
                .map(|(_, d)| *d)
                .unwrap_or(DType::F32),
            false,
        )),
        ("tl", "constexpr") => b("tl.constexpr"),
        ("tl", "math") => Ok(Val::Module(Rc::from("tl.math"))),
        ("tl" | "tl.math", n) if tilebook_frontend::kernel::TL_FUNCTIONS.contains(&n) => {
            b(&format!("tl.{n}"))
        }
        ("math", "pi") => Ok(Val::Float(std::f64::consts::PI)),
        ("math", "e") => Ok(Val::Float(std::f64::consts::E)),
        ("math", "inf") => Ok(Val::Float(f64::INFINITY)),
        ("math", "nan") => Ok(Val::Float(f64::NAN)),
        (
            "math",
            "sqrt" | "log2" | "log" | "exp" | "ceil" | "floor" | "isclose" | "log10" | "prod",
        ) => b(&format!("math.{name}")),
        ("sys", "stderr" | "stdout") => Ok(Val::str(&format!("<sys.{name}>"))),
        ("sys", "version") => Ok(Val::str("3.12 (tilebook host subset)")),
        ("os", "environ") => {
            let items = std::env::vars()
                .map(|(k, v)| (Val::str(&k), Val::str(&v)))
                .collect();
            Ok(Val::Dict(Rc::new(RefCell::new(items))))
        }
        _ => Err(Exc::new(
            "AttributeError",
            format!(
                "module '{}' has no attribute '{name}' in tilebook{}",
                if m == "tl" { "triton.language" } else { m },
                if m == "torch" {
                    tilebook_frontend::diag::did_you_mean(
                        name,
                        TORCH_FUNCTIONS.iter().copied(),
                        "torch.",
                    )
                } else {
                    String::new()
                }
            ),
        )),
    }
}

impl Engine {
    /// `triton.runtime.driver.active`.
    pub fn active_driver(&mut self) -> Val {
        Val::object(
            "Driver",
            vec![
                (
                    "get_current_target",
                    Val::Builtin(Rc::from("driver.get_current_target")),
                ),
                (
                    "get_active_torch_device",
                    Val::Builtin(Rc::from("driver.get_active_torch_device")),
                ),
                (
                    "utils",
                    Val::object(
                        "DriverUtils",
                        vec![(
                            "get_device_properties",
                            Val::Builtin(Rc::from("driver.get_device_properties")),
                        )],
                    ),
                ),
            ],
        )
    }

    /// `driver.active.utils.get_device_properties(index)`, the keys Triton's
    /// CUDA driver gives. On the CPU backend: one "multiprocessor" per
    /// hardware thread and GPU-like limits, so occupancy arithmetic in host
    /// code still yields a sensible program count.
    pub fn device_properties(&self) -> Val {
        let (sms, regs, smem) = match &self.backend {
            crate::Backend::Cuda(g) => (g.sm_count as i64, g.max_regs as i64, g.max_shared as i64),
            crate::Backend::Cpu => (
                std::thread::available_parallelism().map_or(1, |n| n.get()) as i64,
                65536,
                232448,
            ),
        };
        let items = [
            ("multiprocessor_count", sms),
            ("max_num_regs", regs),
            ("max_shared_mem", smem),
            ("warpSize", 32),
        ];
        Val::Dict(Rc::new(RefCell::new(
            items
                .iter()
                .map(|(k, v)| (Val::str(k), Val::Int(*v)))
                .collect(),
        )))
    }

    pub fn get_attr(&mut self, base: &Val, name: &str) -> R<Val> {
        match base {
            Val::Module(m) => module_attr(self, m, name),
            Val::Tensor(t) => match name {
                "shape" => Ok(shape_val(&t.shape)),
                "dtype" => Ok(Val::DType(t.dtype, true)),
                "device" => Ok(Val::Device(t.device.clone())),
                "T" => Ok(Val::tensor(reverse_dims(t))),
                "ndim" => Ok(Val::Int(t.shape.len() as i64)),
                "is_cuda" => Ok(Val::Bool(matches!(t.device, Device::Cuda(_)))),
                _ => Ok(Val::Method(Box::new(base.clone()), Rc::from(name))),
            },
            Val::Object(o) if o.type_name == "Mark" && name == "run" => {
                Ok(Val::Method(Box::new(base.clone()), Rc::from(name)))
            }
            Val::Object(o)
                if o.type_name == "Trace" && matches!(name, "visiting_order" | "mask_view") =>
            {
                Ok(Val::Method(Box::new(base.clone()), Rc::from(name)))
            }
            Val::Object(o) => attr_of(o, name).ok_or_else(|| {
                Exc::new(
                    "AttributeError",
                    format!("'{}' object has no attribute '{name}'", o.type_name),
                )
            }),
            Val::Config(c) => match name {
                "kwargs" => Ok(Val::Dict(Rc::new(RefCell::new(
                    c.kwargs
                        .iter()
                        .map(|(k, v)| (Val::str(k), v.clone()))
                        .collect(),
                )))),
                "num_warps" => Ok(Val::Int(c.num_warps)),
                "num_stages" => Ok(Val::Int(c.num_stages)),
                _ => Err(Exc::new(
                    "AttributeError",
                    format!("'Config' object has no attribute '{name}'"),
                )),
            },
            Val::Device(d) => match name {
                "type" => Ok(Val::str(if matches!(d, Device::Cpu) {
                    "cpu"
                } else {
                    "cuda"
                })),
                "index" => Ok(match d {
                    Device::Cuda(i) => Val::Int(*i as i64),
                    Device::Cpu => Val::None,
                }),
                _ => Err(Exc::new(
                    "AttributeError",
                    format!("'device' object has no attribute '{name}'"),
                )),
            },
            Val::DType(d, _) => match name {
                "itemsize" => Ok(Val::Int(d.size_bytes() as i64)),
                "is_floating_point" => Ok(Val::Bool(d.is_float())),
                _ => Err(Exc::new(
                    "AttributeError",
                    format!("'dtype' object has no attribute '{name}'"),
                )),
            },
            Val::Kernel(k) => crate::kernels::kernel_attr(self, k, name),
            Val::Exception(e) => match name {
                "args" => Ok(Val::tuple(vec![Val::str(&e.message)])),
                _ => Err(Exc::new(
                    "AttributeError",
                    format!("exception has no attribute '{name}'"),
                )),
            },
            Val::Str(_) | Val::List(_) | Val::Dict(_) | Val::Tuple(_) => {
                Ok(Val::Method(Box::new(base.clone()), Rc::from(name)))
            }
            other => Err(Exc::new(
                "AttributeError",
                format!("'{}' object has no attribute '{name}'", other.type_name()),
            )),
        }
    }

    pub fn stdout(&mut self, text: &str) {
        self.emit_stream("stdout", text);
    }
}

pub fn shape_val(shape: &[usize]) -> Val {
    Val::tuple(shape.iter().map(|&d| Val::Int(d as i64)).collect())
}

fn reverse_dims(t: &Tensor) -> Tensor {
    let mut r = t.clone();
    r.shape.reverse();
    r.strides.reverse();
    r
}

pub use crate::value::{to_f64, to_int, Args};

pub fn to_tensor(v: &Val) -> R<Rc<Tensor>> {
    match v {
        Val::Tensor(t) => Ok(t.clone()),
        other => Err(Exc::type_error(format!(
            "expected a tensor, got {}",
            other.type_name()
        ))),
    }
}

/// A shape from `(2, 3)`, `[2, 3]` or positional `2, 3`.
pub fn shape_args(vals: &[Val]) -> R<Vec<usize>> {
    if vals.len() == 1 {
        if let Val::Tuple(_) | Val::List(_) = &vals[0] {
            let items: Vec<Val> = match &vals[0] {
                Val::Tuple(t) => t.to_vec(),
                Val::List(l) => l.borrow().clone(),
                _ => vec![],
            };
            return shape_args(&items);
        }
    }
    let shape = vals
        .iter()
        .map(|v| {
            let i = to_int(v)?;
            if i < 0 {
                return Err(Exc::new("RuntimeError", format!("negative dimension {i}")));
            }
            usize::try_from(i)
                .map_err(|_| Exc::new("RuntimeError", format!("dimension {i} is too large")))
        })
        .collect::<R<Vec<usize>>>()?;
    crate::tensor::checked_numel(&shape).map_err(|m| Exc::new("RuntimeError", m))?;
    Ok(shape)
}

pub fn dtype_arg(v: Option<Val>, default: DType) -> R<DType> {
    match v {
        None | Some(Val::None) => Ok(default),
        Some(Val::DType(d, _)) => Ok(d),
        Some(other) => Err(Exc::type_error(format!(
            "dtype must be a torch dtype, got {}",
            other.type_name()
        ))),
    }
}

impl Engine {
    pub fn device_arg(&mut self, v: Option<Val>) -> R<Device> {
        let d = match v {
            None | Some(Val::None) => Device::Cpu,
            Some(Val::Device(d)) => d,
            Some(Val::Str(s)) => parse_device(&s)?,
            Some(other) => {
                return Err(Exc::type_error(format!(
                    "device must be a string or torch.device, got {}",
                    other.type_name()
                )))
            }
        };
        if matches!(d, Device::Cuda(_)) {
            self.announce_backend();
        }
        Ok(d)
    }

    pub fn next_u64(&mut self) -> u64 {
        // splitmix64: small, fast, and the same on every machine for a seed.
        self.rng = self.rng.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    }

    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn normal(&mut self) -> f64 {
        let u1 = self.uniform().max(1e-300);
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

/// Call a builtin by its qualified name.
pub fn call_builtin(s: &mut Engine, name: &str, pos: Vec<Val>, kw: Vec<(String, Val)>) -> R<Val> {
    let a = Args {
        pos,
        kw,
        fname: name.rsplit('.').next().unwrap_or(name).to_string(),
    };
    if EXCEPTIONS.contains(&name) {
        let msg = a.pos.first().map(|v| v.to_str()).unwrap_or_default();
        return Ok(Val::Exception(Rc::new(Exc::new(name, msg))));
    }
    if let Some(n) = s.extensions.natives.get(name).copied() {
        return (n.f)(s, a);
    }
    match name {
        "tilebook.trace" => {
            let mut pos = a.pos;
            if pos.is_empty() {
                return Err(Exc::type_error(
                    "tilebook.trace(kernel[grid], *args, **kwargs)",
                ));
            }
            let launcher = pos.remove(0);
            crate::trace::trace(s, &launcher, pos, a.kw)
        }
        "display" => {
            for v in &a.pos {
                let text = v.repr();
                s.display(vec![("text/plain".into(), text)]);
            }
            Ok(Val::None)
        }
        "clear_output" => {
            let wait = a
                .kw("wait")
                .map(|v| v.truth())
                .transpose()?
                .unwrap_or(false);
            s.clear_output(wait);
            Ok(Val::None)
        }
        "help" => {
            let text = match a.pos.first() {
                Some(v) => crate::docs::describe(&v.repr(), v, false),
                None => crate::docs::builtin_doc("help").unwrap_or_default(),
            };
            s.emit_stream("stdout", &text);
            Ok(Val::None)
        }
        "len" => {
            let v = a.req(0, "obj")?;
            Ok(Val::Int(match &v {
                Val::Str(x) => x.chars().count(),
                Val::List(l) => l.borrow().len(),
                Val::Tuple(t) => t.len(),
                Val::Object(_) if v.named_tuple_items().is_some() => 2,
                Val::Dict(d) => d.borrow().len(),
                Val::Range(..) => s.iterate(&v)?.len(),
                Val::Tensor(t) => *t
                    .shape
                    .first()
                    .ok_or_else(|| Exc::type_error("len() of a 0-d tensor"))?,
                other => {
                    return Err(Exc::type_error(format!(
                        "object of type '{}' has no len()",
                        other.type_name()
                    )))
                }
            } as i64))
        }
        "abs" => match a.req(0, "x")? {
            Val::Int(i) => Ok(Val::Int(i.abs())),
            Val::Float(f) => Ok(Val::Float(f.abs())),
            Val::Bool(b) => Ok(Val::Int(b as i64)),
            Val::Tensor(t) => match crate::device_ops::unary(s, &t, "abs")? {
                Some(v) => Ok(v),
                None => Ok(Val::tensor(map_tensor(&t, t.dtype, |x| match x {
                    Scalar::F(f) => Scalar::F(f.abs()),
                    o => Scalar::I(o.i().abs()),
                }))),
            },
            other => Err(Exc::type_error(format!(
                "bad operand type for abs(): '{}'",
                other.type_name()
            ))),
        },
        "sorted" => {
            let mut items = s.iterate(&a.req(0, "iterable")?)?;
            let key = a.kw("key");
            let mut keyed = vec![];
            for it in items.drain(..) {
                let k = match &key {
                    Some(f) => s.call(f, vec![it.clone()], vec![])?,
                    None => it.clone(),
                };
                keyed.push((k, it));
            }
            let mut err = None;
            keyed.sort_by(|x, y| {
                let lt = crate::ops::compare(s, ruff_python_ast::CmpOp::Lt, &x.0, &y.0);
                match lt {
                    Ok(v) if v.truth().unwrap_or(false) => std::cmp::Ordering::Less,
                    Ok(_) => {
                        if equal(&x.0, &y.0) {
                            std::cmp::Ordering::Equal
                        } else {
                            std::cmp::Ordering::Greater
                        }
                    }
                    Err(e) => {
                        err = Some(e);
                        std::cmp::Ordering::Equal
                    }
                }
            });
            if let Some(e) = err {
                return Err(e);
            }
            if a.kw("reverse")
                .map(|v| v.truth())
                .transpose()?
                .unwrap_or(false)
            {
                keyed.reverse();
            }
            Ok(Val::list(keyed.into_iter().map(|(_, v)| v).collect()))
        }
        n if n.starts_with("torch.")
            || n.starts_with("math.")
            || n.starts_with("triton.")
            || n.starts_with("driver.")
            || n.starts_with("compiled.")
            || n.starts_with("time.") =>
        {
            crate::torch::call(s, n, a)
        }
        n if n.starts_with("tl.") => {
            if n == "tl.constexpr" {
                return a.req(0, "value");
            }
            Err(Exc::new(
                "RuntimeError",
                format!(
                    "{}() can only be called inside a @triton.jit function",
                    n.replacen("tl.", "triton.language.", 1)
                ),
            ))
        }
        other => Err(Exc::new(
            "NotImplementedError",
            format!("builtin `{other}` is not available in tilebook"),
        )),
    }
}

/// `triton.Config(kwargs, num_warps=4, num_stages=3, ...)`.
pub fn make_config(a: &Args) -> R<Val> {
    let kwargs = match a.get(0, "kwargs") {
        Some(Val::Dict(d)) => d
            .borrow()
            .iter()
            .map(|(k, v)| (k.to_str(), v.clone()))
            .collect(),
        Some(other) => {
            return Err(Exc::type_error(format!(
                "triton.Config expects a dict of meta-parameters, got {}",
                other.type_name()
            )))
        }
        None => vec![],
    };
    let num_warps = a
        .kw("num_warps")
        .map(|v| to_int(&v))
        .transpose()?
        .unwrap_or(4);
    let num_stages = a
        .kw("num_stages")
        .map(|v| to_int(&v))
        .transpose()?
        .unwrap_or(3);
    Ok(Val::Config(Rc::new(Config {
        kwargs,
        num_warps,
        num_stages,
    })))
}
