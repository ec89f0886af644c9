//! `_tb`: the native module behind the prelude's classes. Each function
//! takes Python values, turns them into `Val`s, asks the session's library,
//! and gives the result back as a Python value; a session error becomes a
//! Python exception that keeps its rendering.

use super::convert::{to_py, to_val};
use super::{exc_to_py, session};
use crate::value::{Exc, Val};
use rustpython_vm::builtins::PyBaseExceptionRef;
use rustpython_vm::{PyObjectRef, PyResult, VirtualMachine};
use tilebook_kernels::gpu_fault::GpuFault;
use tilebook_kernels::tensor::{LOST, READ_BACK_FAILED};

type Res = Result<Val, Exc>;

/// Run `f` on the session and turn its result into a Python value.
fn with(vm: &VirtualMachine, f: impl FnOnce(&mut crate::Engine) -> Res) -> PyResult {
    match guarded(vm, f)? {
        Ok(v) => Ok(to_py(vm, session(), v)),
        Err(e) => Err(raise(vm, e)),
    }
}

/// Run `f` on the session. Reading a tensor whose GPU copy was lost to a
/// fault, or a fault surfacing while one is read back, unwinds from deep in
/// the tensor library; here it becomes the `RuntimeError` a `try` around the
/// line catches (and the GPU is recovered). Other panics go on unwinding to
/// the cell, which reports them as internal errors.
fn guarded<T>(vm: &VirtualMachine, f: impl FnOnce(&mut crate::Engine) -> T) -> PyResult<T> {
    let s = session();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut *s))) {
        Ok(v) => Ok(v),
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|m| m.to_string()));
            match msg {
                Some(m) if m == LOST || m.starts_with(READ_BACK_FAILED) => {
                    let e = GpuFault::gpu_failure(s, Exc::new("RuntimeError", m));
                    Err(raise(vm, e))
                }
                _ => std::panic::resume_unwind(p),
            }
        }
    }
}

fn raise(vm: &VirtualMachine, e: Exc) -> PyBaseExceptionRef {
    exc_to_py(vm, session(), e)
}

fn binary_op(op: &str) -> Option<ruff_python_ast::Operator> {
    use ruff_python_ast::Operator::*;
    Some(match op {
        "+" => Add,
        "-" => Sub,
        "*" => Mult,
        "/" => Div,
        "//" => FloorDiv,
        "%" => Mod,
        "**" => Pow,
        "@" => MatMult,
        "&" => BitAnd,
        "|" => BitOr,
        "^" => BitXor,
        "<<" => LShift,
        ">>" => RShift,
        _ => return None,
    })
}

fn compare_op(op: &str) -> Option<ruff_python_ast::CmpOp> {
    use ruff_python_ast::CmpOp::*;
    Some(match op {
        "==" => Eq,
        "!=" => NotEq,
        "<" => Lt,
        "<=" => LtE,
        ">" => Gt,
        ">=" => GtE,
        _ => return None,
    })
}

#[rustpython_vm::pymodule]
pub mod _tb {
    use super::*;
    use rustpython_vm::builtins::PyStrRef;
    use rustpython_vm::function::FuncArgs;
    use rustpython_vm::protocol::{PyMapping, PyMappingMethods};
    use rustpython_vm::types::{AsMapping, Callable};
    use rustpython_vm::{pyclass, AsObject, Py, PyObject, PyPayload};

    /// A value of the session's library, held by a Python object.
    #[pyattr]
    #[pyclass(name = "Handle", module = "_tb")]
    #[derive(PyPayload)]
    pub struct Handle {
        pub v: Val,
    }

    impl std::fmt::Debug for Handle {
        fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "Handle({})", self.v.type_name())
        }
    }

    #[pyclass(flags(BASETYPE), with(Callable, AsMapping))]
    impl Handle {
        /// A native function's or method's qualified name (`Tensor.view`,
        /// `empty`), as CPython's builtins have one; other values have none.
        /// Found by plain attribute lookup, so that `f(*args, **kwargs)`,
        /// whose call path asks every callable for it, neither raises
        /// inside `__getattr__` nor formats the callable's repr (10 us a
        /// call before).
        #[pygetset]
        fn __qualname__(&self, vm: &VirtualMachine) -> PyResult<String> {
            match &self.v {
                Val::Builtin(b) => Ok(b.rsplit('.').next().unwrap_or(b).to_owned()),
                Val::Method(recv, name) => Ok(format!("{}.{name}", recv.type_name())),
                _ => Err(vm.new_attribute_error("__qualname__")),
            }
        }
    }

    /// `handle[index]` and `handle[index] = value` as native slots.
    impl AsMapping for Handle {
        fn as_mapping() -> &'static PyMappingMethods {
            static METHODS: PyMappingMethods = PyMappingMethods {
                length: None,
                subscript: Some(subscript),
                ass_subscript: Some(assign_subscript),
            };
            &METHODS
        }
    }

    fn subscript(m: PyMapping<'_>, index: &PyObject, vm: &VirtualMachine) -> PyResult {
        let base = Handle::mapping_downcast(m).v.clone();
        let is_kernel = matches!(base, Val::Kernel(_));
        if is_kernel {
            let hit = LAST_LAUNCHER.with(|c| {
                c.borrow()
                    .as_ref()
                    .filter(|(k, g, _)| k.is(m.obj) && g.is(index))
                    .map(|(_, _, l)| l.clone())
            });
            if let Some(l) = hit {
                return Ok(l);
            }
        }
        let out = getitem_val(vm, base, val(vm, &index.to_owned()))?;
        if is_kernel && immutable_grid(index) {
            LAST_LAUNCHER.with(|c| {
                *c.borrow_mut() = Some((m.obj.to_owned(), index.to_owned(), out.clone()));
            });
        }
        Ok(out)
    }

    thread_local! {
        /// The last `kernel[grid]`: the kernel's object, the grid object and
        /// the launcher made. A loop launching with the same grid object
        /// (a tuple constant, a grid function) gets the same launcher back
        /// instead of a new one per iteration.
        static LAST_LAUNCHER: std::cell::RefCell<Option<(PyObjectRef, PyObjectRef, PyObjectRef)>> =
            const { std::cell::RefCell::new(None) };
    }

    /// Whether a grid object can never hold other values: a tuple of
    /// integers, or a function (called at each launch, not here).
    fn immutable_grid(index: &PyObject) -> bool {
        use rustpython_vm::builtins::{PyFunction, PyInt, PyTuple};
        if let Some(t) = index.downcast_ref::<PyTuple>() {
            return t.iter().all(|e| e.downcast_ref::<PyInt>().is_some());
        }
        index.downcast_ref::<PyFunction>().is_some()
    }

    fn assign_subscript(
        m: PyMapping<'_>,
        index: &PyObject,
        value: Option<PyObjectRef>,
        vm: &VirtualMachine,
    ) -> PyResult<()> {
        let base = Handle::mapping_downcast(m).v.clone();
        let idx = val(vm, &index.to_owned());
        let Some(value) = value else {
            return Err(vm.new_type_error("tilebook values do not support item deletion"));
        };
        let v = val(vm, &value);
        with(vm, |s| {
            crate::indexing::set_item(s, &base, &idx, v).map(|_| Val::None)
        })
        .map(|_| ())
    }

    fn getitem_val(vm: &VirtualMachine, base: Val, idx: Val) -> PyResult {
        with(vm, |s| {
            // `kernel[grid]`, and `compiled[grid]` of a `kernel.warmup(...)` result.
            if let Val::Kernel(k) = &base {
                return Ok(Val::Launcher(k.clone(), Box::new(idx)));
            }
            if let Val::Object(o) = &base {
                let kernel = crate::value::attr_of(o, "__kernel__");
                if let Some(k) = kernel
                    .as_ref()
                    .and_then(tilebook_kernels::kernels::KernelRef::kernel)
                {
                    return Ok(Val::Launcher(k?, Box::new(idx)));
                }
            }
            crate::indexing::get_item(s, &base, &idx)
        })
    }

    /// `handle(*args, **kwargs)` as a native slot: launches
    /// (`kernel[grid](...)`) skip a Python-level `__call__`.
    impl Callable for Handle {
        type Args = FuncArgs;
        fn call(zelf: &Py<Self>, args: FuncArgs, vm: &VirtualMachine) -> PyResult {
            let this: PyObjectRef = zelf.to_owned().into();
            let pos: Vec<Val> = args.args.iter().map(|a| val(vm, a)).collect();
            let kw: Vec<(String, Val)> = args
                .kwargs
                .iter()
                .map(|(k, v)| (k.clone(), val(vm, v)))
                .collect();
            call_val(vm, &this, zelf.v.clone(), pos, kw)
        }
    }

    fn call_val(
        vm: &VirtualMachine,
        this: &PyObjectRef,
        f: Val,
        args: Vec<Val>,
        mut kw: Vec<(String, Val)>,
    ) -> PyResult {
        if let Val::Builtin(b) = &f {
            if &**b == "triton.jit" {
                return super::super::jit::jit(vm, this, args, kw);
            }
            // The creation functions take autograd's `requires_grad` here,
            // without a Python wrapper around every call.
            if CREATION.contains(&&**b) {
                if let Some(i) = kw.iter().position(|(k, _)| k == "requires_grad") {
                    let (_, flag) = kw.remove(i);
                    let out = with(vm, |s| s.call(&f, args, kw))?;
                    if flag.truth().map_err(|e| raise(vm, e))? {
                        out.set_attr("requires_grad", vm.ctx.new_bool(true), vm)?;
                    }
                    return Ok(out);
                }
            }
        }
        with(vm, |s| s.call(&f, args, kw))
    }

    /// Tensor creation functions (`requires_grad=` accepted).
    const CREATION: &[&str] = &[
        "torch.empty",
        "torch.zeros",
        "torch.ones",
        "torch.full",
        "torch.rand",
        "torch.randn",
        "torch.randint",
        "torch.arange",
        "torch.tensor",
        "torch.empty_like",
        "torch.zeros_like",
        "torch.ones_like",
        "torch.full_like",
        "torch.rand_like",
        "torch.randn_like",
    ];

    fn val(vm: &VirtualMachine, o: &PyObjectRef) -> Val {
        to_val(vm, o)
    }

    /// `base[index]` on a native value (autograd's in-place assignment
    /// and its rules call it past `Tensor.__setitem__`).
    #[pyfunction]
    fn getitem(base: PyObjectRef, index: PyObjectRef, vm: &VirtualMachine) -> PyResult {
        getitem_val(vm, val(vm, &base), val(vm, &index))
    }

    /// `base[index] = value` on a native value.
    #[pyfunction]
    fn setitem(
        base: PyObjectRef,
        index: PyObjectRef,
        value: PyObjectRef,
        vm: &VirtualMachine,
    ) -> PyResult {
        let (b, i, v) = (val(vm, &base), val(vm, &index), val(vm, &value));
        with(vm, |s| {
            crate::indexing::set_item(s, &b, &i, v).map(|_| Val::None)
        })
    }

    /// `_tb.set_launch_hook(fn | None)`: the profiler's launch hook.
    #[pyfunction]
    fn set_launch_hook(hook: PyObjectRef, vm: &VirtualMachine) {
        let h = val(vm, &hook);
        session().launch_hook = match h {
            Val::None => None,
            other => Some(other),
        };
    }

    /// `_tb.set_launch_metadata(kernel, fn)` for `@triton.jit(launch_metadata=fn)`.
    #[pyfunction]
    fn set_launch_metadata(
        kernel: PyObjectRef,
        f: PyObjectRef,
        vm: &VirtualMachine,
    ) -> PyResult<()> {
        match val(vm, &kernel) {
            Val::Kernel(k) => {
                *k.launch_metadata.borrow_mut() = Some(val(vm, &f));
                Ok(())
            }
            other => Err(vm.new_type_error(format!(
                "launch_metadata applies to @triton.jit kernels, not {}",
                other.type_name()
            ))),
        }
    }

    /// The source of a stand-in module (`pytest`, `tabulate`) for names
    /// that nothing on `sys.path` provides; `None` for other names.
    #[pyfunction]
    fn fallback_source(name: PyStrRef, vm: &VirtualMachine) -> PyObjectRef {
        match super::super::fallback_source(&name.to_string_lossy()) {
            Some(src) => vm.ctx.new_str(src).into(),
            None => vm.ctx.none(),
        }
    }

    /// `eval`, `exec` and `compile` as the builtins (saved by the prelude
    /// as `_tb.original_*`), refusing source text nested too deeply for the
    /// VM's compiler, which recurses once per level and would overflow the
    /// stack (`tilebook_frontend::nesting`; cells are checked as parsed).
    #[pyfunction]
    fn eval(args: FuncArgs, vm: &VirtualMachine) -> PyResult {
        checked_source("eval", "original_eval", args, vm)
    }

    #[pyfunction]
    fn exec(args: FuncArgs, vm: &VirtualMachine) -> PyResult {
        checked_source("exec", "original_exec", args, vm)
    }

    #[pyfunction]
    fn compile(args: FuncArgs, vm: &VirtualMachine) -> PyResult {
        checked_source("compile", "original_compile", args, vm)
    }

    fn checked_source(
        name: &str,
        original: &'static str,
        args: FuncArgs,
        vm: &VirtualMachine,
    ) -> PyResult {
        let source = args.args.first().or_else(|| args.kwargs.get("source"));
        let text = source.and_then(|o| {
            if let Some(s) = o.downcast_ref::<rustpython_vm::builtins::PyStr>() {
                Some(s.to_string_lossy().into_owned())
            } else {
                o.downcast_ref::<rustpython_vm::builtins::PyBytes>()
                    .map(|b| String::from_utf8_lossy(b.as_bytes()).into_owned())
            }
        });
        if let Some((at, depth)) = text.as_deref().and_then(tilebook_frontend::parse::too_deep) {
            let line = text
                .as_deref()
                .and_then(|t| t.get(..at))
                .map_or(1, |t| t.matches('\n').count() + 1);
            return Err(vm.new_exception_msg(
                vm.ctx.exceptions.recursion_error.to_owned(),
                format!(
                    "{name}(): the source nests about {depth} levels deep at its line {line}; the limit is {} (the compiler recurses once per level)",
                    tilebook_frontend::parse::MAX_NESTING
                )
                .into(),
            ));
        }
        vm.import("_tb", 0)?.get_attr(original, vm)?.call(args, vm)
    }

    #[pyfunction]
    fn register_class(name: PyStrRef, cls: PyObjectRef) {
        if let Some(h) = session().host.clone() {
            h.register_class(&name.to_string_lossy(), cls);
        }
    }

    #[pyfunction]
    fn getattr(h: PyObjectRef, name: PyStrRef, vm: &VirtualMachine) -> PyResult {
        let v = val(vm, &h);
        let name = name.to_string_lossy();
        with(vm, |s| s.get_attr(&v, &name))
    }

    /// `_tb.call_method(x, name, args, kwargs)`: `x.name(*args, **kwargs)`
    /// on a native value, without making the bound method first.
    #[pyfunction]
    fn call_method(
        h: PyObjectRef,
        name: PyStrRef,
        args: rustpython_vm::builtins::PyTupleRef,
        kwargs: rustpython_vm::builtins::PyDictRef,
        vm: &VirtualMachine,
    ) -> PyResult {
        let this = val(vm, &h);
        let f = Val::Method(Box::new(this), std::rc::Rc::from(&*name.to_string_lossy()));
        let pos: Vec<Val> = args.iter().map(|a| val(vm, a)).collect();
        let mut kw = Vec::new();
        for (k, v) in &kwargs {
            let k = k
                .downcast_ref::<rustpython_vm::builtins::PyStr>()
                .map(|k| k.to_string_lossy().into_owned())
                .ok_or_else(|| vm.new_type_error("keywords must be strings"))?;
            kw.push((k, val(vm, &v)));
        }
        with(vm, |s| s.call(&f, pos, kw))
    }

    /// `x.shape`: a `torch.Size` made here (a tuple of the prelude's class
    /// `Size`), not by calling the class on a tuple.
    #[pyfunction]
    fn shape(h: PyObjectRef, vm: &VirtualMachine) -> PyResult {
        let Some(Val::Tensor(t)) = h.downcast_ref::<Handle>().map(|h| &h.v) else {
            return Err(vm.new_type_error("shape of a value that is not a tensor"));
        };
        let items: Vec<PyObjectRef> = t.shape.iter().map(|&d| vm.ctx.new_int(d).into()).collect();
        let tuple = rustpython_vm::builtins::PyTuple::new_unchecked(items.into_boxed_slice());
        let cls = session()
            .host
            .as_ref()
            .and_then(|h| h.class("Size"))
            .and_then(|c| c.downcast::<rustpython_vm::builtins::PyType>().ok());
        Ok(match cls {
            Some(cls) => rustpython_vm::PyRef::new_ref(tuple, cls, None).into(),
            None => tuple.into_ref(&vm.ctx).into(),
        })
    }

    /// The names of a tensor's value attributes and of its native methods.
    #[pyfunction]
    fn tensor_members(vm: &VirtualMachine) -> PyObjectRef {
        let names = |it: &mut dyn Iterator<Item = &'static str>| -> PyObjectRef {
            vm.ctx
                .new_list(it.map(|n| vm.ctx.new_str(n).into()).collect())
                .into()
        };
        let fields = names(&mut crate::tensor_methods::field_names());
        let methods = names(&mut crate::tensor_methods::method_names());
        vm.ctx.new_tuple(vec![fields, methods]).into()
    }

    #[pyfunction]
    fn binop(op: PyStrRef, a: PyObjectRef, b: PyObjectRef, vm: &VirtualMachine) -> PyResult {
        let op = binary_op(&op.to_string_lossy())
            .ok_or_else(|| vm.new_value_error("unknown operator"))?;
        let (a, b) = (val(vm, &a), val(vm, &b));
        if matches!(a, Val::Py(_)) || matches!(b, Val::Py(_)) {
            return Ok(vm.ctx.not_implemented());
        }
        with(vm, |s| crate::ops::binary(s, op, &a, &b))
    }

    #[pyfunction]
    fn cmp(op: PyStrRef, a: PyObjectRef, b: PyObjectRef, vm: &VirtualMachine) -> PyResult {
        let op = compare_op(&op.to_string_lossy())
            .ok_or_else(|| vm.new_value_error("unknown comparison"))?;
        let (a, b) = (val(vm, &a), val(vm, &b));
        if matches!(a, Val::Py(_)) || matches!(b, Val::Py(_)) {
            return Ok(vm.ctx.not_implemented());
        }
        with(vm, |s| crate::ops::compare(s, op, &a, &b))
    }

    #[pyfunction]
    fn unop(op: PyStrRef, a: PyObjectRef, vm: &VirtualMachine) -> PyResult {
        use ruff_python_ast::UnaryOp;
        let op = match &*op.to_string_lossy() {
            "-" => UnaryOp::USub,
            "~" => UnaryOp::Invert,
            "not" => UnaryOp::Not,
            _ => UnaryOp::UAdd,
        };
        let a = val(vm, &a);
        with(vm, |_| crate::ops::unary(op, &a))
    }

    #[pyfunction]
    fn repr(h: PyObjectRef, vm: &VirtualMachine) -> PyResult<String> {
        let v = val(vm, &h);
        guarded(vm, |_| v.repr())
    }

    #[pyfunction]
    fn str(h: PyObjectRef, vm: &VirtualMachine) -> PyResult<String> {
        let v = val(vm, &h);
        guarded(vm, |_| v.to_str())
    }

    #[pyfunction]
    fn format(h: PyObjectRef, spec: PyStrRef, vm: &VirtualMachine) -> PyResult {
        let v = val(vm, &h);
        let spec = spec.to_string_lossy();
        with(vm, |_| {
            crate::format::format_value(&v, &spec).map(|t| Val::str(&t))
        })
    }

    #[pyfunction]
    fn members(h: PyObjectRef, vm: &VirtualMachine) -> PyObjectRef {
        let names = crate::members::attributes(session(), &val(vm, &h));
        vm.ctx
            .new_list(
                names
                    .into_iter()
                    .map(|n| vm.ctx.new_str(n).into())
                    .collect(),
            )
            .into()
    }

    #[pyfunction]
    fn len(h: PyObjectRef, vm: &VirtualMachine) -> PyResult {
        let v = val(vm, &h);
        with(vm, |s| {
            crate::builtins::len(
                s,
                "len",
                crate::value::Args {
                    pos: vec![v],
                    kw: vec![],
                    fname: "len".into(),
                },
            )
        })
    }

    #[pyfunction]
    fn iter(h: PyObjectRef, vm: &VirtualMachine) -> PyResult {
        let v = val(vm, &h);
        with(vm, |s| s.iterate(&v).map(Val::list))
    }

    #[pyfunction]
    fn truth(h: PyObjectRef, vm: &VirtualMachine) -> PyResult<bool> {
        let v = val(vm, &h);
        guarded(vm, |_| v.truth())?.map_err(|e| raise(vm, e))
    }

    #[pyfunction]
    fn module(name: PyStrRef, vm: &VirtualMachine) -> PyResult {
        let name = name.to_string_lossy();
        with(vm, |_| Ok(Val::Module(std::rc::Rc::from(&*name))))
    }

    /// A builtin of the session's library by its qualified name
    /// (`display`, `help`, ...).
    #[pyfunction]
    fn builtin(name: PyStrRef, vm: &VirtualMachine) -> PyResult {
        let name = name.to_string_lossy();
        with(vm, |_| Ok(Val::Builtin(std::rc::Rc::from(&*name))))
    }

    #[pyfunction]
    fn module_name(h: PyObjectRef, vm: &VirtualMachine) -> String {
        match val(vm, &h) {
            Val::Module(m) => match &*m {
                "tl" => "triton.language".to_string(),
                "tl.math" => "triton.language.math".to_string(),
                other => other.to_string(),
            },
            other => other.type_name(),
        }
    }

    #[pyfunction]
    fn write(stream: PyStrRef, text: PyStrRef) {
        session().host_write(&stream.to_string_lossy(), &text.to_string_lossy());
    }

    #[pyfunction]
    fn magic(text: PyStrRef, vm: &VirtualMachine) -> PyResult {
        let text = text.to_string_lossy().into_owned();
        with(vm, |s| s.magic(&text))
    }
}
