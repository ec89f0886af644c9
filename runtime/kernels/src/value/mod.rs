//! Values of the host language (a Python subset) and Python-style exceptions.

pub mod kernel;

use crate::tensor::{torch_name, Device, Tensor};
use kernel::KernelObj;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use tilebook_frontend::kernel::py_float;
use tilebook_frontend::Span;
use tilebook_tir::DType;

pub type Scope = Rc<RefCell<HashMap<String, Val>>>;

pub type R<T> = Result<T, Exc>;

/// A `triton.Config`.
#[derive(Clone)]
pub struct Config {
    pub kwargs: Vec<(String, Val)>,
    pub num_warps: i64,
    pub num_stages: i64,
    /// Triton's `maxnreg` launch option (registers a thread, at most).
    pub maxnreg: Option<i64>,
    /// Called with every argument by name (and the config's values) before
    /// each launch with this config, as Triton does.
    pub pre_hook: Option<Val>,
}

/// A simple object with attributes (targets, device properties, ...).
pub struct Object {
    pub type_name: String,
    pub attrs: RefCell<Vec<(String, Val)>>,
}

#[derive(Clone)]
pub enum Val {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Rc<str>),
    List(Rc<RefCell<Vec<Val>>>),
    Tuple(Rc<Vec<Val>>),
    Dict(Rc<RefCell<Vec<(Val, Val)>>>),
    Tensor(Rc<Tensor>),
    /// A dtype; `torch` marks torch's spelling (`torch.float32` vs `fp32`).
    DType(DType, bool),
    Device(Device),
    /// A builtin function or module member, by qualified name.
    Builtin(Rc<str>),
    /// A method bound to its receiver.
    Method(Box<Val>, Rc<str>),
    Module(Rc<str>),
    Kernel(Rc<KernelObj>),
    /// `kernel[grid]`, ready to be called.
    Launcher(Rc<KernelObj>, Box<Val>),
    Config(Rc<Config>),
    Object(Rc<Object>),
    Slice(Option<i64>, Option<i64>, Option<i64>),
    Range(i64, i64, i64),
    /// A caught exception (`except E as e`).
    Exception(Rc<Exc>),
    /// An object of the host VM the library does not know (a Python
    /// function, an instance of a user class).
    Py(Rc<dyn HostObject>),
}

/// A host-VM object held by the session: it can be shown and called.
pub trait HostObject {
    fn type_name(&self) -> String;
    fn repr(&self) -> String;
    fn call(
        &self,
        s: &mut dyn crate::Host,
        args: Vec<Val>,
        kwargs: Vec<(String, Val)>,
    ) -> Result<Val, Exc>;
    /// The same object (Python's `is`).
    fn same(&self, other: &dyn HostObject) -> bool;
    fn as_any(&self) -> &dyn std::any::Any;
    /// An attribute of the object (`obj.name`).
    fn getattr(&self, _s: &mut dyn crate::Host, name: &str) -> Result<Val, Exc> {
        Err(Exc::new(
            "AttributeError",
            format!("'{}' object has no attribute '{name}'", self.type_name()),
        ))
    }
}

impl Val {
    pub fn str(s: &str) -> Val {
        Val::Str(Rc::from(s))
    }
    pub fn list(v: Vec<Val>) -> Val {
        Val::List(Rc::new(RefCell::new(v)))
    }
    pub fn tuple(v: Vec<Val>) -> Val {
        Val::Tuple(Rc::new(v))
    }
    pub fn tensor(t: Tensor) -> Val {
        Val::Tensor(Rc::new(t))
    }

    /// Python's type name, for messages.
    pub fn type_name(&self) -> String {
        match self {
            Val::None => "NoneType".into(),
            Val::Bool(_) => "bool".into(),
            Val::Int(_) => "int".into(),
            Val::Float(_) => "float".into(),
            Val::Str(_) => "str".into(),
            Val::List(_) => "list".into(),
            Val::Tuple(_) => "tuple".into(),
            Val::Dict(_) => "dict".into(),
            Val::Tensor(_) => "Tensor".into(),
            Val::DType(..) => "dtype".into(),
            Val::Device(_) => "device".into(),
            Val::Builtin(_) | Val::Method(..) => "builtin_function".into(),
            Val::Module(_) => "module".into(),
            Val::Kernel(_) => "JITFunction".into(),
            Val::Launcher(..) => "kernel launcher".into(),
            Val::Config(_) => "Config".into(),
            Val::Object(o) => o.type_name.clone(),
            Val::Slice(..) => "slice".into(),
            Val::Range(..) => "range".into(),
            Val::Exception(e) => e.kind.clone(),
            Val::Py(p) => p.type_name(),
        }
    }

    pub fn truth(&self) -> Result<bool, Exc> {
        Ok(match self {
            Val::None => false,
            Val::Bool(b) => *b,
            Val::Int(i) => *i != 0,
            Val::Float(f) => *f != 0.0,
            Val::Str(s) => !s.is_empty(),
            Val::List(l) => !l.borrow().is_empty(),
            Val::Tuple(t) => !t.is_empty(),
            Val::Dict(d) => !d.borrow().is_empty(),
            Val::Range(a, b, s) => (*s > 0 && a < b) || (*s < 0 && a > b),
            Val::Tensor(t) => {
                if t.numel() != 1 {
                    return Err(Exc::new(
                        "RuntimeError",
                        format!(
                            "Boolean value of Tensor with {} values is ambiguous",
                            t.numel()
                        ),
                    ));
                }
                t.get_at(t.offset).truth()
            }
            _ => true,
        })
    }

    /// Python's `repr`.
    pub fn repr(&self) -> String {
        match self {
            Val::Str(s) => py_str_repr(s),
            Val::Tensor(t) => t.repr(),
            _ => self.to_str(),
        }
    }

    /// Python's `str`.
    pub fn to_str(&self) -> String {
        match self {
            Val::None => "None".into(),
            Val::Bool(b) => (if *b { "True" } else { "False" }).into(),
            Val::Int(i) => i.to_string(),
            Val::Float(f) => py_float(*f),
            Val::Str(s) => s.to_string(),
            Val::List(l) => format!(
                "[{}]",
                l.borrow()
                    .iter()
                    .map(Val::repr)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Val::Tuple(t) => {
                let items: Vec<String> = t.iter().map(Val::repr).collect();
                if items.len() == 1 {
                    format!("({},)", items[0])
                } else {
                    format!("({})", items.join(", "))
                }
            }
            Val::Dict(d) => format!(
                "{{{}}}",
                d.borrow()
                    .iter()
                    .map(|(k, v)| format!("{}: {}", k.repr(), v.repr()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Val::Tensor(t) => t.repr(),
            Val::DType(d, true) => torch_name(*d).into(),
            Val::DType(d, false) => d.name().into(),
            Val::Device(d) => match d {
                Device::Cpu => "cpu".into(),
                Device::Cuda(i) => format!("cuda:{i}"),
            },
            Val::Builtin(b) => format!("<built-in function {b}>"),
            Val::Method(_, m) => format!("<bound method {m}>"),
            Val::Module(m) => format!("<module '{m}'>"),
            Val::Kernel(k) => format!("JITFunction({})", k.jit.borrow().name),
            Val::Launcher(k, _) => format!("<launcher of {}>", k.jit.borrow().name),
            Val::Config(c) => {
                let mut parts: Vec<String> = c
                    .kwargs
                    .iter()
                    .map(|(k, v)| format!("{k}: {}", v.repr()))
                    .collect();
                parts.push(format!("num_warps: {}", c.num_warps));
                parts.push(format!("num_stages: {}", c.num_stages));
                if let Some(n) = c.maxnreg {
                    parts.push(format!("maxnreg: {n}"));
                }
                parts.join(", ")
            }
            // An object that says how it prints (`CompiledKernel`).
            Val::Object(o) if matches!(attr_of(o, "__repr__"), Some(Val::Str(_))) => {
                attr_of(o, "__repr__")
                    .map(|r| r.to_str())
                    .unwrap_or_default()
            }
            Val::Object(o) => {
                let attrs: Vec<String> = o
                    .attrs
                    .borrow()
                    .iter()
                    .map(|(k, v)| format!("{k}={}", v.repr()))
                    .collect();
                // torch prints its named tuples one field per line.
                if o.type_name.starts_with(RETURN_TYPES) {
                    format!("{}(\n{})", o.type_name, attrs.join(",\n"))
                } else {
                    format!("{}({})", o.type_name, attrs.join(", "))
                }
            }
            Val::Slice(a, b, c) => {
                let f = |x: &Option<i64>| x.map(|v| v.to_string()).unwrap_or("None".into());
                format!("slice({}, {}, {})", f(a), f(b), f(c))
            }
            Val::Range(a, b, s) => {
                if *s == 1 {
                    format!("range({a}, {b})")
                } else {
                    format!("range({a}, {b}, {s})")
                }
            }
            Val::Exception(e) => e.message.clone(),
            Val::Py(p) => p.repr(),
        }
    }

    /// torch's `(values, indices)` result of `max`/`min` along a dimension:
    /// a named tuple (`.values`, `.indices`, unpacking, `[0]`).
    pub fn return_pair(kind: &str, values: Val, indices: Val) -> Val {
        Val::object(
            &format!("{RETURN_TYPES}{kind}"),
            vec![("values", values), ("indices", indices)],
        )
    }

    /// The items of a named tuple made by `return_pair`.
    pub fn named_tuple_items(&self) -> Option<Vec<Val>> {
        match self {
            Val::Object(o) if o.type_name.starts_with(RETURN_TYPES) => {
                Some(o.attrs.borrow().iter().map(|(_, v)| v.clone()).collect())
            }
            _ => None,
        }
    }

    pub fn object(type_name: &str, attrs: Vec<(&str, Val)>) -> Val {
        Val::Object(Rc::new(Object {
            type_name: type_name.into(),
            attrs: RefCell::new(attrs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()),
        }))
    }
}

/// The prefix of torch's named-tuple result types.
pub const RETURN_TYPES: &str = "torch.return_types.";

pub fn py_str_repr(s: &str) -> String {
    let q = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::new();
    out.push(q);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            c if c == q => {
                out.push('\\');
                out.push(c)
            }
            c => out.push(c),
        }
    }
    out.push(q);
    out
}

/// A Python exception in flight: its class name, message and where it was raised.
#[derive(Clone, Debug)]
pub struct Exc {
    pub kind: String,
    pub message: String,
    pub span: Option<Span>,
    /// A fully rendered diagnostic (kernel compile errors), shown instead of a caret line.
    pub rendered: Option<String>,
}

impl Exc {
    pub fn new(kind: &str, message: impl Into<String>) -> Exc {
        Exc {
            kind: kind.into(),
            message: message.into(),
            span: None,
            rendered: None,
        }
    }
    pub fn at(mut self, span: &Span) -> Exc {
        if self.span.is_none() {
            self.span = Some(span.clone());
        }
        self
    }
    pub fn type_error(m: impl Into<String>) -> Exc {
        Exc::new("TypeError", m)
    }
    pub fn value_error(m: impl Into<String>) -> Exc {
        Exc::new("ValueError", m)
    }
}

/// A map from strings for small attribute lookups.
pub fn attr_of(o: &Object, name: &str) -> Option<Val> {
    o.attrs
        .borrow()
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
}

/// Keyword and positional argument access for builtins.
pub struct Args {
    pub pos: Vec<Val>,
    pub kw: Vec<(String, Val)>,
    pub fname: String,
}

impl Args {
    pub fn get(&self, i: usize, name: &str) -> Option<Val> {
        self.kw
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .or_else(|| self.pos.get(i).cloned())
    }
    pub fn req(&self, i: usize, name: &str) -> R<Val> {
        self.get(i, name).ok_or_else(|| {
            Exc::type_error(format!(
                "{}() missing required argument '{name}'",
                self.fname
            ))
        })
    }
    pub fn kw(&self, name: &str) -> Option<Val> {
        self.kw
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }
}

pub fn to_int(v: &Val) -> R<i64> {
    match v {
        Val::Int(i) => Ok(*i),
        Val::Bool(b) => Ok(*b as i64),
        Val::Tensor(t) if t.numel() == 1 && (t.dtype.is_int()) => Ok(t.get_at(t.offset).i()),
        // A Python int outside i64 travels as an opaque object.
        other if other.type_name() == "int" => Err(Exc::new(
            "OverflowError",
            format!("{} does not fit in a 64-bit integer", other.repr()),
        )),
        other => Err(Exc::type_error(format!(
            "expected an integer, got {}",
            other.type_name()
        ))),
    }
}

pub fn to_f64(v: &Val) -> R<f64> {
    match v {
        Val::Int(i) => Ok(*i as f64),
        Val::Bool(b) => Ok(*b as i64 as f64),
        Val::Float(f) => Ok(*f),
        Val::Tensor(t) if t.numel() == 1 => Ok(t.get_at(t.offset).f()),
        other => Err(Exc::type_error(format!(
            "expected a number, got {}",
            other.type_name()
        ))),
    }
}

/// The items of an iterable library value (lists, tuples, ranges, strings,
/// dict keys, the rows of a tensor).
pub fn iterate(v: &Val) -> R<Vec<Val>> {
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
