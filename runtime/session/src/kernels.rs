//! `@triton.jit` kernels in the session: specialization, the compile cache,
//! and launches (`kernel[grid](args...)`) on the CPU backend.
//!
//! A launch binds arguments to parameters, derives Triton's specialization
//! (constexpr values, dtypes, integers equal to 1 or divisible by 16, 16-byte
//! aligned pointers), looks the specialization up in the kernel's cache, and
//! otherwise lowers, optimises, verifies and compiles it. Launch errors name
//! the kernel line, the program id and the offending offset.

use crate::interp::R;
use crate::value::{Exc, Val};
use crate::Session;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Instant;
use tilebook_cpu::{CpuKernel, CpuOptions, LaunchError};
use tilebook_frontend::kernel::{
    lower_kernel, ArgSpec, CompileOptions, ConstVal, Global, Globals, IntSpec, JitFunction,
};
use tilebook_frontend::{Diagnostic, Span};
use tilebook_tir::DType;

/// One compiled specialization and its inspection texts.
pub struct Compiled {
    pub key: String,
    pub signature: String,
    pub tir: String,
    pub kernel: CpuKernel,
    pub compile_seconds: f64,
}

/// A `@triton.jit` function as the session holds it.
pub struct KernelObj {
    pub jit: RefCell<Rc<JitFunction>>,
    pub defaults: RefCell<HashMap<String, Val>>,
    pub cache: RefCell<HashMap<String, Rc<Compiled>>>,
    /// How many specializations were compiled (for tests and `%cache`).
    pub compiles: Cell<usize>,
    pub autotune: Option<()>,
}

impl KernelObj {
    pub fn new(jit: JitFunction, defaults: HashMap<String, Val>) -> KernelObj {
        KernelObj {
            jit: RefCell::new(Rc::new(jit)),
            defaults: RefCell::new(defaults),
            cache: RefCell::new(HashMap::new()),
            compiles: Cell::new(0),
            autotune: None,
        }
    }

    /// Replace the body (a cell redefined the kernel).
    pub fn redefine(&self, jit: JitFunction, defaults: HashMap<String, Val>) {
        *self.jit.borrow_mut() = Rc::new(jit);
        *self.defaults.borrow_mut() = defaults;
    }
}

/// The session's globals as kernels see them.
struct SessionGlobals<'a> {
    s: &'a Session,
}

impl Globals for SessionGlobals<'_> {
    fn global(&self, name: &str) -> Option<Global> {
        let v = self.s.globals.borrow().get(name).cloned()?;
        Some(match v {
            Val::Module(m) => match &*m {
                "tl" | "tl.math" | "triton" | "math" => Global::Module(m.to_string()),
                other => Global::Other(format!("module '{other}'")),
            },
            other => match const_of(&other) {
                Some(c) => Global::Const(c),
                None => Global::Other(other.type_name()),
            },
        })
    }
}

/// A host value as a kernel constexpr.
pub fn const_of(v: &Val) -> Option<ConstVal> {
    Some(match v {
        Val::None => ConstVal::None,
        Val::Bool(b) => ConstVal::Bool(*b),
        Val::Int(i) => ConstVal::Int(*i),
        Val::Float(f) => ConstVal::Float(*f),
        Val::Str(s) => ConstVal::Str(s.to_string()),
        Val::DType(d, _) => ConstVal::DType(*d),
        Val::Kernel(k) => ConstVal::Func(k.jit.borrow().clone()),
        Val::Tuple(t) => ConstVal::Tuple(t.iter().map(const_of).collect::<Option<_>>()?),
        _ => return None,
    })
}

fn grid_dims(s: &mut Session, grid: &Val, meta: &[(String, Val)]) -> R<[u32; 3]> {
    let g = match grid {
        Val::Func(_) | Val::Builtin(_) => {
            let dict = Val::Dict(Rc::new(RefCell::new(
                meta.iter().map(|(k, v)| (Val::str(k), v.clone())).collect(),
            )));
            s.call(grid, vec![dict], vec![])?
        }
        other => other.clone(),
    };
    let items = match &g {
        Val::Tuple(t) => t.to_vec(),
        Val::List(l) => l.borrow().clone(),
        Val::Int(_) => vec![g.clone()],
        other => {
            return Err(Exc::type_error(format!(
            "a launch grid must be a tuple of 1 to 3 ints (or a function returning one), got {}",
            other.type_name()
        )))
        }
    };
    if items.is_empty() || items.len() > 3 {
        return Err(Exc::value_error(format!(
            "a launch grid has 1 to 3 dimensions, got {}",
            items.len()
        )));
    }
    let mut dims = [1u32; 3];
    for (i, it) in items.iter().enumerate() {
        let n = crate::builtins::to_int(it).map_err(|_| {
            Exc::type_error(format!(
                "grid dimension {i} must be an int, got {}",
                it.type_name()
            ))
        })?;
        if !(0..=i32::MAX as i64).contains(&n) {
            return Err(Exc::value_error(format!(
                "grid dimension {i} is {n}; it must be between 0 and 2^31-1"
            )));
        }
        dims[i] = n as u32;
    }
    Ok(dims)
}

/// Cache key part for the kernel's source and the @jit functions it calls.
fn source_key(s: &Session, jit: &JitFunction) -> String {
    let mut key = jit.text.clone();
    let mut seen = vec![jit.name.clone()];
    let mut queue = vec![jit.text.clone()];
    while let Some(text) = queue.pop() {
        for (name, v) in s.globals.borrow().iter() {
            if let Val::Kernel(k) = v {
                if seen.contains(name) || !contains_word(&text, name) {
                    continue;
                }
                seen.push(name.clone());
                let t = k.jit.borrow().text.clone();
                key.push_str(&t);
                queue.push(t);
            }
        }
    }
    key
}

fn contains_word(text: &str, w: &str) -> bool {
    text.match_indices(w).any(|(i, _)| {
        let before = text[..i]
            .chars()
            .last()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        let after = text[i + w.len()..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        before && after
    })
}

/// Launch `k[grid](args, kwargs)`.
pub fn launch(
    s: &mut Session,
    k: &Rc<KernelObj>,
    grid: &Val,
    args: Vec<Val>,
    kwargs: Vec<(String, Val)>,
) -> R<Val> {
    let jit = k.jit.borrow().clone();
    let mut options = CompileOptions::default();
    let mut bound: Vec<Option<Val>> = vec![None; jit.params.len()];
    if args.len() > jit.params.len() {
        return Err(Exc::type_error(format!(
            "{}() takes {} arguments but {} were given",
            jit.name,
            jit.params.len(),
            args.len()
        )));
    }
    for (i, a) in args.into_iter().enumerate() {
        bound[i] = Some(a);
    }
    let mut meta = vec![];
    for (name, v) in kwargs {
        match jit.param_index(&name) {
            Some(i) => {
                if bound[i].is_some() {
                    return Err(Exc::type_error(format!(
                        "{}() got multiple values for argument '{name}'",
                        jit.name
                    )));
                }
                bound[i] = Some(v);
            }
            None => match name.as_str() {
                "num_warps" => options.num_warps = crate::builtins::to_int(&v)? as u32,
                "num_stages" => options.num_stages = crate::builtins::to_int(&v)? as u32,
                "num_ctas"
                | "maxnreg"
                | "waves_per_eu"
                | "matrix_instr_nonkdim"
                | "enable_fp_fusion"
                | "kpack"
                | "stream" => {}
                _ if jit.meta.is_some() => meta.push((name, v)),
                _ => {
                    return Err(Exc::type_error(format!(
                        "{}() got an unexpected keyword argument '{name}' (parameters: {})",
                        jit.name,
                        jit.params
                            .iter()
                            .map(|p| p.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )))
                }
            },
        }
    }
    let defaults = k.defaults.borrow().clone();
    for (i, p) in jit.params.iter().enumerate() {
        if bound[i].is_none() {
            bound[i] = Some(defaults.get(&p.name).cloned().ok_or_else(|| {
                Exc::type_error(format!(
                    "{}() missing required argument: '{}'",
                    jit.name, p.name
                ))
            })?);
        }
    }
    let bound: Vec<Val> = bound.into_iter().map(|b| b.unwrap_or(Val::None)).collect();
    // The grid function sees every argument by name, meta-parameters included.
    let mut named: Vec<(String, Val)> = jit
        .params
        .iter()
        .map(|p| p.name.clone())
        .zip(bound.iter().cloned())
        .collect();
    named.extend(meta.iter().cloned());
    let grid = grid_dims(s, grid, &named)?;

    // Specialize.
    let mut specs = vec![];
    let mut raw_args = vec![];
    let mut bounds = vec![];
    let mut tensors = vec![];
    for (p, v) in jit.params.iter().zip(&bound) {
        let dns = jit.do_not_specialize.contains(&p.name);
        let spec = if p.constexpr {
            ArgSpec::Const(const_of(v).ok_or_else(|| {
                Exc::type_error(format!(
                    "constexpr parameter `{}` got a {}, which is not a compile-time value",
                    p.name,
                    v.type_name()
                ))
            })?)
        } else {
            match v {
                Val::Tensor(t) => {
                    raw_args.push(t.data_ptr());
                    bounds.push(t.storage_bounds());
                    tensors.push(Some(t.clone()));
                    ArgSpec::Ptr {
                        dtype: t.dtype,
                        aligned: t.data_ptr() % 16 == 0,
                    }
                }
                Val::Int(i) => {
                    let i = *i;
                    raw_args.push(i as u64);
                    bounds.push([0, 0]);
                    tensors.push(None);
                    let dtype = if i32::try_from(i).is_ok() {
                        DType::I32
                    } else {
                        DType::I64
                    };
                    let spec = if dns {
                        IntSpec::None
                    } else if i == 1 {
                        IntSpec::One
                    } else if i % 16 == 0 {
                        IntSpec::Div16
                    } else {
                        IntSpec::None
                    };
                    ArgSpec::Int { dtype, spec }
                }
                Val::Bool(b) => {
                    raw_args.push(*b as u64);
                    bounds.push([0, 0]);
                    tensors.push(None);
                    ArgSpec::Int {
                        dtype: DType::I1,
                        spec: IntSpec::None,
                    }
                }
                Val::Float(f) => {
                    raw_args.push((*f as f32).to_bits() as u64);
                    bounds.push([0, 0]);
                    tensors.push(None);
                    ArgSpec::Float { dtype: DType::F32 }
                }
                other => ArgSpec::Const(const_of(other).ok_or_else(|| {
                    Exc::type_error(format!(
                        "argument `{}` of {} is a {}, which cannot be passed to a kernel",
                        p.name,
                        jit.name,
                        other.type_name()
                    ))
                })?),
            }
        };
        specs.push(spec);
    }
    let meta_consts: Vec<(String, ConstVal)> = meta
        .iter()
        .map(|(k, v)| {
            const_of(v).map(|c| (k.clone(), c)).ok_or_else(|| {
                Exc::type_error(format!("meta parameter `{k}` must be a compile-time value"))
            })
        })
        .collect::<R<_>>()?;
    let signature = specs
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let key = format!(
        "{}|{signature}|{}|warps={}|stages={}|cpu",
        source_key(s, &jit),
        meta_consts
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(","),
        options.num_warps,
        options.num_stages
    );
    let cached = k.cache.borrow().get(&key).cloned();
    let compiled = match cached {
        Some(c) => c,
        None => {
            let start = Instant::now();
            let globals = SessionGlobals { s };
            let (mut kernel, static_out) =
                lower_kernel(&jit, &specs, &meta_consts, &globals, &options).map_err(diag_exc)?;
            if !static_out.is_empty() {
                s.emit_stream("stdout", &static_out);
            }
            tilebook_tir::passes::optimize(&mut kernel);
            if let Err(e) = tilebook_tir::verify::verify(&kernel) {
                return Err(Exc::new(
                    "CompilationError",
                    format!(
                        "internal error: the tile IR of `{}` failed verification: {e}",
                        jit.name
                    ),
                ));
            }
            let tir = tilebook_tir::print::print_kernel(&kernel);
            let cpu = tilebook_cpu::compile(&kernel, &CpuOptions::default())
                .map_err(|e| Exc::new("CompilationError", format!("CPU backend: {e}")))?;
            let c = Rc::new(Compiled {
                key: key.clone(),
                signature: signature.clone(),
                tir,
                kernel: cpu,
                compile_seconds: start.elapsed().as_secs_f64(),
            });
            k.cache.borrow_mut().insert(key, c.clone());
            k.compiles.set(k.compiles.get() + 1);
            s.total_compiles += 1;
            c
        }
    };
    s.announce_backend();
    let total = grid.iter().map(|&g| g as u64).product::<u64>();
    if total == 0 {
        return Ok(Val::None);
    }
    let allocations: Vec<(u64, u64)> = bounds
        .iter()
        .filter(|b| b[1] > 0)
        .map(|b| (b[0], b[1]))
        .collect();
    match compiled
        .kernel
        .launch(grid, &raw_args, &bounds, allocations)
    {
        Ok(out) => {
            if !out.printed.is_empty() {
                s.emit_stream("stdout", &out.printed);
            }
            Ok(Val::None)
        }
        Err(e) => Err(launch_exc(&jit, &compiled, e, &tensors)),
    }
}

fn diag_exc(d: Diagnostic) -> Exc {
    Exc {
        kind: d.kind.clone(),
        message: d.message.clone(),
        span: d.span.clone(),
        rendered: Some(d.render(false)),
        notes: vec![],
    }
}

/// Turn a launch failure into an exception pointing at the kernel line.
fn launch_exc(
    jit: &JitFunction,
    c: &Compiled,
    e: LaunchError,
    tensors: &[Option<Rc<crate::tensor::Tensor>>],
) -> Exc {
    let (site, pid) = match &e {
        LaunchError::OutOfBounds { site, pid, .. }
        | LaunchError::AssertFailed { site, pid, .. } => (*site, *pid),
    };
    let info = &c.kernel.sites[site];
    let (line, col) = (info.loc.line, info.loc.col);
    let message = match &e {
        LaunchError::OutOfBounds { addr, .. } => {
            let param = info.param.and_then(|p| {
                jit.params
                    .iter()
                    .filter(|q| !q.constexpr)
                    .nth(p)
                    .map(|q| (p, q.name.clone()))
            });
            match param.and_then(|(p, n)| tensors.get(p).cloned().flatten().map(|t| (n, t))) {
                Some((name, t)) => {
                    let off = (*addr as i64 - t.data_ptr() as i64) / info.elem_size.max(1) as i64;
                    format!(
                        "out-of-bounds {} in kernel `{}` at line {line}: program ({}, {}, {}) accessed element {off} of `{name}`, which has {} elements (offsets 0..{})",
                        info.what, jit.name, pid[0], pid[1], pid[2], t.numel(), t.numel()
                    )
                }
                None => format!(
                    "out-of-bounds {} in kernel `{}` at line {line}: program ({}, {}, {}) accessed address {addr:#x}, outside every tensor passed to the launch",
                    info.what, jit.name, pid[0], pid[1], pid[2]
                ),
            }
        }
        LaunchError::AssertFailed { index, .. } => {
            format!("device assertion failed in kernel `{}` at line {line}: program ({}, {}, {}), element {index}: {}", jit.name, pid[0], pid[1], pid[2], info.message)
        }
    };
    let kind = if matches!(e, LaunchError::OutOfBounds { .. }) {
        "IndexError"
    } else {
        "AssertionError"
    };
    let span = span_at(&jit.source, line, col);
    let mut d = Diagnostic::new(kind, message.clone(), span.clone());
    if matches!(e, LaunchError::OutOfBounds { .. }) {
        d = d.with_note(
            "mask the access (tl.load(ptrs, mask=offsets < n)) or check the grid and the offsets",
        );
    }
    Exc {
        kind: kind.into(),
        message,
        span,
        rendered: Some(d.render(false)),
        notes: vec![],
    }
}

/// A span covering the token at a 1-based line and column.
fn span_at(file: &Rc<tilebook_frontend::SourceFile>, line: u32, col: u32) -> Option<Span> {
    if line == 0 {
        return None;
    }
    let mut offset = 0;
    for (i, l) in file.text.split_inclusive('\n').enumerate() {
        if i + 1 == line as usize {
            let c = l
                .char_indices()
                .nth(col.saturating_sub(1) as usize)
                .map(|(b, _)| b)
                .unwrap_or(0);
            let start = offset + c;
            let rest = &file.text[start..];
            let len = rest.find(['(', '\n']).unwrap_or(rest.len()).max(1);
            return Some(Span {
                file: file.clone(),
                start,
                end: start + len,
            });
        }
        offset += l.len();
    }
    None
}

/// Attributes of a kernel object (`kernel.fn`, `kernel.cache`, ...).
pub fn kernel_attr(_s: &mut Session, k: &Rc<KernelObj>, name: &str) -> R<Val> {
    match name {
        "__name__" => Ok(Val::str(&k.jit.borrow().name)),
        "compile_count" => Ok(Val::Int(k.compiles.get() as i64)),
        _ => Err(Exc::new(
            "AttributeError",
            format!("JITFunction has no attribute '{name}' in tilebook"),
        )),
    }
}

/// The tile IR of the most recent specializations of a kernel (for `tilebook compile` and `%ir`).
pub fn cached_ir(k: &KernelObj) -> Vec<(String, String)> {
    k.cache
        .borrow()
        .values()
        .map(|c| (c.signature.clone(), c.tir.clone()))
        .collect()
}
