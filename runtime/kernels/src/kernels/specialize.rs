//! Specialization: binding a launch's arguments to the kernel's parameters
//! (defaults, keywords, `@triton.heuristics`), evaluating the grid, and
//! deriving Triton's specialization and the cache key from them.

use super::{KernelArg, KernelObj};
use crate::value::kernel::KeyMemo;
use crate::value::R;
use crate::value::{Exc, Val};
use crate::{Backend, Host};
use std::cell::RefCell;
use std::rc::Rc;
use tilebook_frontend::kernel::{
    ArgSpec, CompileOptions, ConstVal, Global, Globals, IntSpec, JitFunction,
};
use tilebook_tir::DType;

/// The session's globals as kernels see them.
/// A kernel's module namespace, as the front end sees it.
pub(super) struct SessionGlobals<'a> {
    pub(super) ns: &'a crate::value::Scope,
}

impl Globals for SessionGlobals<'_> {
    fn global(&self, name: &str) -> Option<Global> {
        let v = self.ns.borrow().get(name).cloned()?;
        Some(match v {
            Val::Module(m) => match &*m {
                "tl"
                | "tl.math"
                | "triton"
                | "math"
                | "tl.extra"
                | "tl.extra.cuda"
                | "tl.extra.cuda.libdevice" => Global::Module(m.to_string()),
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

fn grid_dims(s: &mut dyn Host, grid: &Val, meta: &[(String, Val)]) -> R<[u32; 3]> {
    let g = match grid {
        Val::Builtin(_) | Val::Py(_) => {
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
        let n = crate::value::to_int(it).map_err(|_| {
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

/// Cache key part for the kernel's source, the @jit functions it calls and
/// the values of the module-level constants any of them names (a kernel
/// reads those as compile-time values, so a changed constant recompiles).
pub(crate) fn source_key(ns: &crate::value::Scope, jit: &JitFunction) -> String {
    let mut key = jit.text.clone();
    let mut seen = vec![jit.name.clone()];
    let mut queue: Vec<Rc<JitFunction>> = vec![];
    let globals = ns.borrow();
    let mut visit = |f: &JitFunction, queue: &mut Vec<Rc<JitFunction>>, key: &mut String| {
        for name in &f.words {
            if seen.contains(name) {
                continue;
            }
            match globals.get(name) {
                Some(Val::Kernel(k)) => {
                    seen.push(name.clone());
                    let callee = k.jit.borrow().clone();
                    key.push_str(&callee.text);
                    queue.push(callee);
                }
                Some(Val::Module(_) | Val::Builtin(_) | Val::Py(_)) | None => {}
                Some(other) => {
                    if let Some(c) = const_of(other) {
                        seen.push(name.clone());
                        key.push_str(&format!("\n{name}={c}"));
                    }
                }
            }
        }
    };
    visit(jit, &mut queue, &mut key);
    while let Some(f) = queue.pop() {
        visit(&f, &mut queue, &mut key);
    }
    key
}

/// A host `TensorDescriptor` argument: its base pointer, shape and strides
/// as kernel arguments; its element type, block shape and padding as the
/// specialization.
fn descriptor_arg(
    s: &mut dyn Host,
    obj: &dyn crate::value::HostObject,
    param: &str,
    args: &mut Vec<KernelArg>,
) -> R<ArgSpec> {
    let bad = |what: String| Exc::type_error(format!("descriptor argument `{param}`: {what}"));
    let base = match obj.getattr(s, "base")? {
        Val::Tensor(t) => t,
        other => {
            return Err(bad(format!(
                "base must be a tensor, got {}",
                other.type_name()
            )))
        }
    };
    let ints = |v: Val, what: &str| -> R<Vec<i64>> {
        crate::value::iterate(&v)?
            .iter()
            .map(crate::value::to_int)
            .collect::<R<Vec<i64>>>()
            .map_err(|_| bad(format!("{what} must hold integers")))
    };
    let shape = ints(obj.getattr(s, "shape")?, "shape")?;
    let strides = ints(obj.getattr(s, "strides")?, "strides")?;
    let block = ints(obj.getattr(s, "block_shape")?, "block_shape")?;
    let padding = obj.getattr(s, "padding")?;
    if shape.len() != strides.len() || shape.len() != block.len() || shape.is_empty() {
        return Err(bad(format!(
            "shape, strides and block_shape have lengths {}, {} and {}",
            shape.len(),
            strides.len(),
            block.len()
        )));
    }
    let block: Vec<usize> = block
        .iter()
        .map(|&b| {
            usize::try_from(b)
                .ok()
                .filter(|b| b.is_power_of_two())
                .ok_or_else(|| bad(format!("block sizes must be powers of two, got {b}")))
        })
        .collect::<R<_>>()?;
    args.push(KernelArg::Tensor(base.clone()));
    for &x in shape.iter().chain(&strides) {
        args.push(KernelArg::Int(x, DType::I64));
    }
    Ok(ArgSpec::Desc {
        dtype: base.dtype,
        block,
        nan_padding: matches!(&padding, Val::Str(p) if &**p == "nan"),
        // As integer arguments are specialized (`:16`).
        shape_div16: shape.iter().map(|&n| n % 16 == 0).collect(),
    })
}

/// A launch with its arguments bound and its specialization derived.
pub(crate) struct Prepared {
    /// The namespace the kernel's global names resolve in.
    pub(crate) ns: crate::value::Scope,
    /// The in-memory cache key; it ends with `#` and the GPU context's
    /// generation (what precedes the `#` is the on-disk key's part).
    pub(crate) key: Rc<str>,
    pub(crate) specs: Vec<ArgSpec>,
    pub(crate) meta: Vec<(String, ConstVal)>,
    pub(crate) options: CompileOptions,
    pub(crate) grid: [u32; 3],
    pub(crate) args: Vec<KernelArg>,
    /// GPU checked mode (`Runtime::check_bounds`) for this launch's code.
    pub(crate) check_bounds: bool,
}

/// Bind the arguments (applying `@triton.heuristics`), evaluate the grid
/// and derive the specialization and its cache key.
pub(crate) fn prepare(
    s: &mut dyn Host,
    k: &Rc<KernelObj>,
    grid: &Val,
    args: Vec<Val>,
    kwargs: Vec<(String, Val)>,
) -> R<Prepared> {
    let jit = k.jit.borrow().clone();
    let ns = k.scope(s);
    let mut options = s.compile_defaults.clone();
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
                "num_warps" => {
                    options.num_warps = CompileOptions::warps(crate::value::to_int(&v)?)
                        .map_err(|e| Exc::new("ValueError", e))?
                }
                "num_stages" => {
                    options.num_stages = CompileOptions::stages(crate::value::to_int(&v)?)
                        .map_err(|e| Exc::new("ValueError", e))?
                }
                "extern_libs" => extern_libs(s, &v, &mut options)?,
                "maxnreg" => options.maxnreg = maxnreg(&v)?,
                "num_ctas"
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
                        param_list(&jit)
                    )))
                }
            },
        }
    }
    // Heuristics may call back into the session, so they are copied out of
    // the kernel object; the defaults are only read, and only where an
    // argument is missing.
    let heuristics = k.heuristics.borrow().clone();
    let defaults = k.defaults.borrow();
    for (i, p) in jit.params.iter().enumerate() {
        if bound[i].is_some() {
            continue;
        }
        // A heuristic may supply a parameter the call leaves out.
        if bound[i].is_none() && heuristics.iter().any(|(n, _)| *n == p.name) {
            bound[i] = Some(defaults.get(&p.name).cloned().unwrap_or(Val::None));
        }
        if bound[i].is_none() {
            bound[i] = Some(defaults.get(&p.name).cloned().ok_or_else(|| {
                Exc::type_error(format!(
                    "{}() missing required argument: '{}'",
                    jit.name, p.name
                ))
            })?);
        }
    }
    drop(defaults);
    let mut bound: Vec<Val> = bound.into_iter().map(|b| b.unwrap_or(Val::None)).collect();
    // Heuristics see every argument by name and set parameters or
    // meta-parameters, in order.
    for (name, f) in &heuristics {
        let named = named_args(&jit, &bound, &meta);
        let dict = Val::Dict(Rc::new(RefCell::new(
            named.into_iter().map(|(n, v)| (Val::str(&n), v)).collect(),
        )));
        let v = s.call(f, vec![dict], vec![])?;
        match jit.param_index(name) {
            Some(i) => bound[i] = v,
            None => match meta.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = v,
                None => meta.push((name.clone(), v)),
            },
        }
    }
    // The grid function sees every argument by name, meta-parameters included.
    let grid = if matches!(grid, Val::Builtin(_) | Val::Py(_)) {
        let named = named_args(&jit, &bound, &meta);
        grid_dims(s, grid, &named)?
    } else {
        grid_dims(s, grid, &[])?
    };

    // Specialize. Alignment comes from the view's offset (storage is 64-byte
    // aligned on both devices), so no host or device copy is touched here.
    let mut specs = vec![];
    let mut args: Vec<KernelArg> = vec![];
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
                    args.push(KernelArg::Tensor(t.clone()));
                    ArgSpec::Ptr {
                        dtype: t.dtype,
                        aligned: (t.offset * t.dtype.size_bytes()) % 16 == 0,
                    }
                }
                Val::Int(i) => {
                    let i = *i;
                    let dtype = if i32::try_from(i).is_ok() {
                        DType::I32
                    } else {
                        DType::I64
                    };
                    args.push(KernelArg::Int(i, dtype));
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
                    args.push(KernelArg::Int(*b as i64, DType::I1));
                    ArgSpec::Int {
                        dtype: DType::I1,
                        spec: IntSpec::None,
                    }
                }
                Val::Float(f) => {
                    let x = *f as f32;
                    args.push(KernelArg::Float(x));
                    ArgSpec::Float {
                        dtype: DType::F32,
                        positive: !dns && float_positive(x),
                    }
                }
                Val::Py(obj) if obj.type_name() == "TensorDescriptor" => {
                    descriptor_arg(s, obj.as_ref(), &p.name, &mut args)?
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
    let gpu = match &s.backend {
        Backend::Cuda(g) => Some(g.clone()),
        Backend::Cpu => None,
    };
    let check_bounds = s.check_bounds && (gpu.is_some() || s.check_ptx);
    let digest = source_digest(k, &ns, &jit);
    let target = gpu.as_ref().map(|g| (g.arch.as_str(), g.generation));
    let memo = k.key_memo.borrow();
    let same = memo.as_ref().filter(|m| {
        m.digest == digest
            && m.check_bounds == check_bounds
            && m.target.as_ref().map(|(a, g)| (a.as_str(), *g)) == target
            && m.options == options
            && m.specs.len() == specs.len()
            && m.specs.iter().zip(&specs).all(|(a, b)| same_spec(a, b))
            && m.meta.len() == meta_consts.len()
            && m.meta
                .iter()
                .zip(&meta_consts)
                .all(|(a, b)| a.0 == b.0 && same_const(&a.1, &b.1))
    });
    let key = match same {
        Some(m) => m.key.clone(),
        None => {
            drop(memo);
            let key: Rc<str> = cache_key(
                &digest,
                &specs,
                &meta_consts,
                &options,
                check_bounds,
                target,
            )
            .into();
            *k.key_memo.borrow_mut() = Some(KeyMemo {
                digest,
                specs: specs.clone(),
                meta: meta_consts.clone(),
                options: options.clone(),
                check_bounds,
                target: target.map(|(a, g)| (a.to_string(), g)),
                key: key.clone(),
                compiled: None,
            });
            key
        }
    };
    Ok(Prepared {
        ns,
        key,
        specs,
        meta: meta_consts,
        options,
        grid,
        args,
        check_bounds,
    })
}

/// The in-memory cache key of a specialization: the source digest, Triton's
/// spelling of each argument's specialization, the meta-parameters, the
/// options and the target.
fn cache_key(
    digest: &str,
    specs: &[ArgSpec],
    meta: &[(String, ConstVal)],
    options: &CompileOptions,
    check_bounds: bool,
    target: Option<(&str, u32)>,
) -> String {
    use std::fmt::Write as _;
    let mut key = String::with_capacity(256);
    key.push_str(digest);
    key.push('|');
    for (i, sp) in specs.iter().enumerate() {
        let _ = write!(key, "{}{sp}", if i == 0 { "" } else { "," });
    }
    key.push('|');
    for (i, (name, v)) in meta.iter().enumerate() {
        let _ = write!(key, "{}{name}={v}", if i == 0 { "" } else { "," });
    }
    let _ = write!(
        key,
        "|warps={}|stages={}|",
        options.num_warps, options.num_stages
    );
    if let Some(p) = &options.libdevice {
        let _ = write!(key, "libdevice={p}|");
    }
    if let Some(n) = options.maxnreg {
        let _ = write!(key, "maxnreg={n}|");
    }
    if check_bounds {
        key.push_str("checked|");
    }
    match target {
        Some((arch, generation)) => {
            let _ = write!(key, "{arch}#{generation}");
        }
        None => key.push_str("cpu#0"),
    }
    key
}

/// Whether a float argument lies in `tilebook_tir::POSITIVE_RANGE` (its
/// specialization `fp32:pos`; every `sm_scale` of attention does).
fn float_positive(x: f32) -> bool {
    let (lo, hi) = tilebook_tir::POSITIVE_RANGE;
    x >= (lo as f32).exp2() && x <= (hi as f32).exp2()
}

/// Whether two specializations spell the same key. Stricter than `==`,
/// which takes `1`, `1.0` and `True` for one constant: they are three
/// specializations.
fn same_spec(a: &ArgSpec, b: &ArgSpec) -> bool {
    match (a, b) {
        (ArgSpec::Const(x), ArgSpec::Const(y)) => same_const(x, y),
        _ => a == b,
    }
}

fn same_const(a: &ConstVal, b: &ConstVal) -> bool {
    match (a, b) {
        (ConstVal::Tuple(x), ConstVal::Tuple(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_const(p, q))
        }
        _ => std::mem::discriminant(a) == std::mem::discriminant(b) && a == b,
    }
}

impl Prepared {
    /// Triton's spelling of the specialization (`x_ptr: *fp32:16, n: i32,
    /// BLOCK=1024`), for messages and `%cache`; made only when compiling.
    pub(crate) fn signature(&self, jit: &JitFunction) -> String {
        self.specs
            .iter()
            .zip(&jit.params)
            .map(|(s, p)| match s {
                ArgSpec::Const(_) => format!("{}={s}", p.name),
                _ => format!("{}: {s}", p.name),
            })
            .chain(self.meta.iter().map(|(k, v)| format!("{k}={v}")))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The parameter names, for messages.
pub(crate) fn param_list(jit: &JitFunction) -> String {
    jit.params
        .iter()
        .map(|p| p.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parameters by name, then meta-parameters.
fn named_args(jit: &JitFunction, bound: &[Val], meta: &[(String, Val)]) -> Vec<(String, Val)> {
    let mut named: Vec<(String, Val)> = jit
        .params
        .iter()
        .map(|p| p.name.clone())
        .zip(bound.iter().cloned())
        .collect();
    named.extend(meta.iter().cloned());
    named
}

/// The source part of a launch's cache key. A Python module's snapshot
/// is rebuilt whenever a name the kernel uses is rebound or a callee is
/// redefined, so an unchanged snapshot and body give the same digest.
pub(crate) fn source_digest(
    k: &KernelObj,
    ns: &crate::value::Scope,
    jit: &Rc<JitFunction>,
) -> Rc<str> {
    // Host kernels get a new snapshot when a global they name changes, and
    // library kernels' namespace is fixed: the same objects mean the same
    // digest. (A session-globals scope changes in place: not memoized.)
    let memo = k.is_host() || k.is_library();
    if memo {
        if let Some((scope, body, digest)) = k.source_memo.borrow().as_ref() {
            if Rc::ptr_eq(scope, ns) && Rc::ptr_eq(body, jit) {
                return digest.clone();
            }
        }
    }
    use sha2::{Digest, Sha256};
    let hash = Sha256::digest(source_key(ns, jit).as_bytes());
    let digest: Rc<str> = hash
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
        .into();
    if memo {
        *k.source_memo.borrow_mut() = Some((ns.clone(), jit.clone(), digest.clone()));
    }
    digest
}

/// `extern_libs={'libdevice': path}` at a launch: link that libdevice file
/// (on the GPU; the CPU backend has its own math). A path that does not
/// exist — Triton's tutorial names one inside Triton's source tree — keeps
/// the default libdevice, and says so.
fn extern_libs(s: &mut dyn Host, v: &Val, options: &mut CompileOptions) -> R<()> {
    let Val::Dict(d) = v else {
        return Err(Exc::type_error(format!(
            "extern_libs must be a dict of library name to path, got {}",
            v.type_name()
        )));
    };
    for (name, path) in d.borrow().iter() {
        let (name, path) = (name.to_str(), path.to_str());
        if name != "libdevice" {
            s.emit_stream(
                "stderr",
                &format!("tilebook: extern_libs['{name}'] is ignored (only libdevice is linked)\n"),
            );
            continue;
        }
        if std::path::Path::new(&path).is_file() {
            options.libdevice = Some(path);
        } else if matches!(s.backend, Backend::Cuda(_)) {
            s.emit_stream(
                "stderr",
                &format!(
                    "tilebook: extern_libs['libdevice'] = {path} does not exist; the default libdevice is linked\n"
                ),
            );
        }
    }
    Ok(())
}

/// `maxnreg=` at a launch (Triton's register cap per thread): `None`
/// leaves the cap to the block's size.
fn maxnreg(v: &Val) -> R<Option<u32>> {
    if matches!(v, Val::None) {
        return Ok(None);
    }
    let n = crate::value::to_int(v)?;
    match u32::try_from(n) {
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(Exc::new(
            "ValueError",
            format!("maxnreg must be a positive number of registers, got {n}"),
        )),
    }
}
