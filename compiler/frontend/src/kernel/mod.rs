//! Lowering of `@triton.jit` functions to tile IR, one specialization at a time.
//!
//! A `JitFunction` is the parsed definition plus where it came from. A launch
//! (or `tilebook compile`) supplies one `ArgSpec` per parameter: pointers and
//! numbers become IR parameters, constexprs and integers equal to 1 become
//! compile-time values. `lower_kernel` runs the body as Triton's code
//! generator does: constexprs are evaluated in Python semantics, tensor
//! operations follow Triton's typing and broadcasting, `@jit` callees are
//! inlined, `range` loops and runtime `if`/`while` become structured ops.

mod atomics;
mod attrs;
mod builtins;
mod control;
mod debug;
mod descriptors;
mod inline_asm;
pub mod libdevice;
pub(crate) mod library;
mod lower;
mod names;
mod semantic;
mod shuffle;
mod signature;
mod tensor_ops;

pub use lower::lower_kernel;
pub use names::{DTYPES as TL_DTYPES, TL_FUNCTIONS};
pub use signature::{literal, parse_signature, parse_signature_options, SignatureArg};

use crate::source::{SourceFile, Span};
use ruff_python_ast::StmtFunctionDef;
use std::fmt;
use std::rc::Rc;
use tilebook_tir::DType;

/// A compile-time value: what `tl.constexpr` parameters, literals and globals hold.
#[derive(Clone, Debug)]
pub enum ConstVal {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    DType(DType),
    /// A pointer type (`ptr.dtype`, `tl.pointer_type(tl.float16)`).
    PtrType(DType),
    Func(Rc<JitFunction>),
    Tuple(Vec<ConstVal>),
}

impl PartialEq for ConstVal {
    fn eq(&self, other: &ConstVal) -> bool {
        use ConstVal::*;
        match (self, other) {
            (None, None) => true,
            (Bool(a), Bool(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (Float(a), Float(b)) => a.to_bits() == b.to_bits(),
            (Int(a), Float(b)) | (Float(b), Int(a)) => *a as f64 == *b,
            (Bool(a), Int(b)) | (Int(b), Bool(a)) => *a as i64 == *b,
            (Str(a), Str(b)) => a == b,
            (DType(a), DType(b)) | (PtrType(a), PtrType(b)) => a == b,
            (Func(a), Func(b)) => Rc::ptr_eq(a, b),
            (Tuple(a), Tuple(b)) => a == b,
            _ => false,
        }
    }
}

impl fmt::Display for ConstVal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConstVal::None => f.write_str("None"),
            ConstVal::Bool(b) => f.write_str(if *b { "True" } else { "False" }),
            ConstVal::Int(i) => write!(f, "{i}"),
            ConstVal::Float(x) => write!(f, "{}", py_float(*x)),
            ConstVal::Str(s) => write!(f, "'{s}'"),
            ConstVal::DType(d) => f.write_str(d.name()),
            ConstVal::PtrType(d) => write!(f, "pointer<{}>", d.name()),
            ConstVal::Func(j) => f.write_str(&j.name),
            ConstVal::Tuple(items) => {
                f.write_str("(")?;
                for (i, it) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{it}")?;
                }
                if items.len() == 1 {
                    f.write_str(",")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// Python's `repr` of a float (`1.0`, `0.1`, `inf`, `1e+20`).
pub fn py_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == x.trunc() && x.abs() < 1e16 {
        return format!("{x:.1}");
    }
    let s = format!("{x:?}");
    if let Some((m, e)) = s.split_once('e') {
        let e: i32 = e.parse().unwrap_or(0);
        if (-5..16).contains(&e) {
            return format!("{x}");
        }
        return format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    s
}

/// A parameter of a `@jit` function.
#[derive(Clone, Debug)]
pub struct JitParam {
    pub name: String,
    /// Annotated `tl.constexpr` (or `constexpr`).
    pub constexpr: bool,
    pub span: Span,
}

/// A `@triton.jit` function as the session holds it.
#[derive(Debug)]
pub struct JitFunction {
    pub name: String,
    pub def: StmtFunctionDef,
    pub source: Rc<SourceFile>,
    pub params: Vec<JitParam>,
    /// Name of the legacy `**meta` parameter, if the kernel has one.
    pub meta: Option<String>,
    /// Parameter names listed in `do_not_specialize`.
    pub do_not_specialize: Vec<String>,
    /// Source text of the definition, for cache keys.
    pub text: String,
    /// The names the definition reads that are neither parameters nor
    /// assigned in its body, in order of first use: what it may take from
    /// its module (callees, constants, `tl`), the names a cache key and a
    /// namespace snapshot look up, found once rather than per launch.
    pub words: Vec<String>,
}

impl JitFunction {
    pub fn new(def: StmtFunctionDef, source: &Rc<SourceFile>) -> JitFunction {
        let mut params = vec![];
        let p = &def.parameters;
        for pw in p.posonlyargs.iter().chain(&p.args).chain(&p.kwonlyargs) {
            let constexpr = pw
                .parameter
                .annotation
                .as_deref()
                .is_some_and(is_constexpr_annotation);
            params.push(JitParam {
                name: pw.parameter.name.to_string(),
                constexpr,
                span: Span::new(source, pw.parameter.range),
            });
        }
        let meta = p.kwarg.as_ref().map(|k| k.name.to_string());
        let range = def.range;
        let text = source.text[range.start().to_usize()..range.end().to_usize()].to_string();
        let words = free_names(&def);
        JitFunction {
            name: def.name.to_string(),
            def,
            source: source.clone(),
            params,
            meta,
            do_not_specialize: vec![],
            text,
            words,
        }
    }

    pub fn span(&self) -> Span {
        Span::new(&self.source, self.def.name.range)
    }

    pub fn param_index(&self, name: &str) -> Option<usize> {
        self.params.iter().position(|p| p.name == name)
    }
}

/// Names loaded in `def` (body, parameter annotations and defaults) that are
/// not its parameters and not assigned anywhere in it: Python's rule for
/// which names of a function are global, and Triton's for its dependencies.
fn free_names(def: &StmtFunctionDef) -> Vec<String> {
    use ruff_python_ast::visitor::{walk_expr, Visitor};
    use ruff_python_ast::{Expr, ExprContext};
    #[derive(Default)]
    struct Names {
        loads: Vec<String>,
        stores: std::collections::HashSet<String>,
    }
    impl<'a> Visitor<'a> for Names {
        fn visit_expr(&mut self, e: &'a Expr) {
            if let Expr::Name(n) = e {
                let id = n.id.to_string();
                if n.ctx == ExprContext::Load {
                    if !self.loads.contains(&id) {
                        self.loads.push(id);
                    }
                } else {
                    self.stores.insert(id);
                }
            }
            walk_expr(self, e);
        }
    }
    let mut v = Names::default();
    let p = &def.parameters;
    let all = p
        .posonlyargs
        .iter()
        .chain(&p.args)
        .chain(&p.kwonlyargs)
        .map(|pw| (&pw.parameter, pw.default.as_deref()));
    let star = p.vararg.iter().chain(&p.kwarg).map(|a| (&**a, None));
    for (param, default) in all.chain(star) {
        v.stores.insert(param.name.to_string());
        if let Some(a) = param.annotation.as_deref() {
            v.visit_expr(a);
        }
        if let Some(d) = default {
            v.visit_expr(d);
        }
    }
    for st in &def.body {
        v.visit_stmt(st);
    }
    let Names { loads, stores } = v;
    loads.into_iter().filter(|n| !stores.contains(n)).collect()
}

fn is_constexpr_annotation(e: &ruff_python_ast::Expr) -> bool {
    use ruff_python_ast::Expr;
    match e {
        Expr::Name(n) => n.id.as_str() == "constexpr",
        Expr::Attribute(a) => a.attr.as_str() == "constexpr",
        Expr::StringLiteral(s) => s.value.to_str().ends_with("constexpr"),
        _ => false,
    }
}

/// What Triton specializes an integer argument on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum IntSpec {
    None,
    /// Equal to 1: becomes a compile-time constant.
    One,
    /// Divisible by 16.
    Div16,
}

/// How one argument of a launch is specialized.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgSpec {
    /// A tensor's data pointer; `aligned` when 16-byte aligned.
    Ptr {
        dtype: DType,
        aligned: bool,
    },
    Int {
        dtype: DType,
        spec: IntSpec,
    },
    Float {
        dtype: DType,
        /// In `[2^-60, 2^60]` (`tilebook_tir::POSITIVE_RANGE`), spelled
        /// `fp32:pos`: attention's scale, whose products with moderate
        /// constants are then known positive and finite.
        positive: bool,
    },
    /// A host `TensorDescriptor`: the kernel gets its base pointer, shape
    /// and strides (`1 + 2 * rank` parameters, all 64-bit but the pointer);
    /// the block shape and padding are part of the specialization.
    Desc {
        dtype: DType,
        block: Vec<usize>,
        nan_padding: bool,
        /// Which dimensions of the shape are multiples of 16 (known to the
        /// kernel as its integer arguments' `:16`, so bounds masks keep
        /// vector accesses).
        shape_div16: Vec<bool>,
    },
    Const(ConstVal),
}

impl fmt::Display for ArgSpec {
    /// Triton's AOT spelling: `*fp16:16`, `i32`, `i32:16`, `i32:1`, `fp32`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgSpec::Ptr { dtype, aligned } => {
                write!(f, "*{}{}", dtype.name(), if *aligned { ":16" } else { "" })
            }
            ArgSpec::Int { dtype, spec } => {
                let s = match spec {
                    IntSpec::None => "",
                    IntSpec::One => ":1",
                    IntSpec::Div16 => ":16",
                };
                write!(f, "{}{s}", dtype.name())
            }
            ArgSpec::Float { dtype, positive } => {
                let pos = if *positive { ":pos" } else { "" };
                write!(f, "{}{pos}", dtype.name())
            }
            ArgSpec::Desc {
                dtype,
                block,
                nan_padding,
                shape_div16,
            } => {
                let dims: Vec<String> = block.iter().map(|b| b.to_string()).collect();
                let pad = if *nan_padding { ", nan" } else { "" };
                let div: String = shape_div16
                    .iter()
                    .map(|&d| if d { ":16" } else { ":" })
                    .collect();
                write!(
                    f,
                    "tensordesc<{}[{}]{pad}, shape{div}>",
                    dtype.name(),
                    dims.join(", ")
                )
            }
            ArgSpec::Const(c) => write!(f, "{c}"),
        }
    }
}

/// What a name outside the kernel refers to, as the session resolves it.
#[derive(Clone, Debug)]
pub enum Global {
    Const(ConstVal),
    /// A module: `tl`, `triton`, `triton.language`, `tl.math`, `math`.
    Module(String),
    /// A name that exists in the session but cannot be used in a kernel (its type, for messages).
    Other(String),
}

/// The session's namespace, as kernels see it.
pub trait Globals {
    fn global(&self, name: &str) -> Option<Global>;
}

/// No globals beyond the built-in modules (for `tilebook compile` and tests).
pub struct NoGlobals;

impl Globals for NoGlobals {
    fn global(&self, name: &str) -> Option<Global> {
        match name {
            "tl" | "triton" => Some(Global::Module(if name == "tl" {
                "tl".into()
            } else {
                "triton".into()
            })),
            _ => None,
        }
    }
}

/// Options of one compilation (launch options that affect code).
#[derive(Clone, Debug, PartialEq)]
pub struct CompileOptions {
    pub num_warps: u32,
    pub num_stages: u32,
    /// The libdevice file a launch named (`extern_libs={'libdevice': path}`).
    pub libdevice: Option<String>,
    /// Triton's `maxnreg`: at most this many registers a thread (GPU only).
    pub maxnreg: Option<u32>,
}

impl CompileOptions {
    /// Triton's rule for `num_warps`: a power of two, and a block of at most
    /// 1024 threads (32 warps).
    pub fn warps(n: i64) -> Result<u32, String> {
        match u32::try_from(n) {
            Ok(w) if w.is_power_of_two() && w <= 32 => Ok(w),
            _ => Err(format!(
                "num_warps must be a power of two from 1 to 32, got {n}"
            )),
        }
    }

    /// `num_stages`: 0 and 1 both mean no software pipelining; more stages
    /// than a loop can use are not an error (shared memory decides), but a
    /// count past any kernel's reach is.
    pub fn stages(n: i64) -> Result<u32, String> {
        match u32::try_from(n) {
            Ok(s) if s <= MAX_STAGES => Ok(s),
            _ => Err(format!(
                "num_stages must be from 0 to {MAX_STAGES}, got {n}"
            )),
        }
    }
}

/// More pipeline stages than any tile fits in shared memory (a stage holds
/// at least one 16-byte row per operand).
pub const MAX_STAGES: u32 = 64;

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            num_warps: 4,
            num_stages: 3,
            libdevice: None,
            maxnreg: None,
        }
    }
}
