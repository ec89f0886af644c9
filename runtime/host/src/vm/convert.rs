//! Values across the boundary: Python objects to `Val`s and back.

use super::natives::_tb::Handle;
use crate::value::R;
use crate::value::{HostObject, Val};
use crate::Engine;
use rustpython_vm::builtins::{
    PyDict, PyFloat, PyInt, PyList, PyModule, PyRange, PySlice, PyStr, PyTuple, PyType,
};
use rustpython_vm::{AsObject, PyObjectRef, PyRef, VirtualMachine};
use std::cell::RefCell;
use std::rc::Rc;

/// A Python object the session holds without knowing it (a function, an
/// instance of a user class).
pub struct PyVal(pub PyObjectRef);

impl HostObject for PyVal {
    fn type_name(&self) -> String {
        self.0.class().name().to_string()
    }

    fn repr(&self) -> String {
        if !super::inside() {
            return format!("<{} object>", self.type_name());
        }
        rustpython_vm::vm::thread::with_current_vm(|vm| match self.0.repr(vm) {
            Ok(s) => s.to_string_lossy().into_owned(),
            Err(_) => format!("<{} object>", self.type_name()),
        })
    }

    fn call(&self, s: &mut dyn crate::Host, args: Vec<Val>, kwargs: Vec<(String, Val)>) -> R<Val> {
        crate::engine_of(s)?.call_py(&self.0, args, kwargs)
    }

    fn same(&self, other: &dyn HostObject) -> bool {
        other
            .as_any()
            .downcast_ref::<PyVal>()
            .is_some_and(|o| o.0.is(&self.0))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn getattr(&self, s: &mut dyn crate::Host, name: &str) -> R<Val> {
        let obj = self.0.clone();
        let name = name.to_string();
        crate::engine_of(s)?.run_host(move |vm, _| {
            let key = vm.ctx.new_str(name);
            let v = obj.get_attr(&key, vm)?;
            Ok(to_val(vm, &v))
        })
    }
}

/// A session value as a Python object.
pub fn to_py(vm: &VirtualMachine, s: &mut Engine, v: Val) -> PyObjectRef {
    match v {
        Val::None => vm.ctx.none(),
        Val::Bool(b) => vm.ctx.new_bool(b).into(),
        Val::Int(i) => vm.ctx.new_int(i).into(),
        Val::Float(f) => vm.ctx.new_float(f).into(),
        Val::Str(x) => vm.ctx.new_str(&*x).into(),
        Val::List(l) => {
            let items = l.borrow().iter().map(|x| to_py(vm, s, x.clone())).collect();
            vm.ctx.new_list(items).into()
        }
        Val::Tuple(t) => {
            let items = t.iter().map(|x| to_py(vm, s, x.clone())).collect();
            vm.ctx.new_tuple(items).into()
        }
        Val::Dict(d) => {
            let dict = vm.ctx.new_dict();
            for (k, v) in d.borrow().iter() {
                let k = to_py(vm, s, k.clone());
                let v = to_py(vm, s, v.clone());
                let _ = dict.set_item(&*k, v, vm);
            }
            dict.into()
        }
        Val::Py(p) => match p.as_any().downcast_ref::<PyVal>() {
            Some(o) => o.0.clone(),
            None => vm.ctx.new_str(p.repr()).into(),
        },
        Val::Range(a, b, c) => call_builtin(vm, "range", vec![a, b, c]),
        Val::Slice(a, b, c) => {
            let o = |x: Option<i64>| x.map_or(vm.ctx.none(), |i| vm.ctx.new_int(i).into());
            vm.builtins
                .get_attr("slice", vm)
                .and_then(|f| f.call((o(a), o(b), o(c)), vm))
                .unwrap_or_else(|_| vm.ctx.none())
        }
        Val::Tensor(_) => handle(vm, s, "Tensor", v),
        Val::Module(_) => handle(vm, s, "Module", v),
        Val::Object(o) => {
            let host = s.host.clone();
            if let Some(p) = host.as_ref().and_then(|h| h.converted(&o)) {
                return p;
            }
            let p = handle(vm, s, "Obj", Val::Object(o.clone()));
            if let (Some(h), false) = (host, vm.is_none(&p)) {
                h.remember_converted(o, p.clone());
            }
            p
        }
        other => handle(vm, s, "Obj", other),
    }
}

fn call_builtin(vm: &VirtualMachine, name: &str, args: Vec<i64>) -> PyObjectRef {
    let args: Vec<PyObjectRef> = args.into_iter().map(|i| vm.ctx.new_int(i).into()).collect();
    let name = vm.ctx.new_str(name);
    vm.builtins
        .get_attr(&*name, vm)
        .and_then(|f| f.call(args, vm))
        .unwrap_or_else(|_| vm.ctx.none())
}

/// A native value in the prelude's class `class`.
fn handle(vm: &VirtualMachine, s: &mut Engine, class: &str, v: Val) -> PyObjectRef {
    let cls = s
        .host
        .as_ref()
        .and_then(|h| h.class(class))
        .and_then(|c| c.downcast::<PyType>().ok());
    match cls {
        // Tensors carry Python attributes (autograd's `requires_grad`,
        // `grad`, `grad_fn`, and whatever a user sets), so they get a dict;
        // modules keep the members they were asked for in theirs; plain
        // objects (a `CompiledKernel`, metadata) take attributes as
        // Triton's do.
        Some(cls) if class == "Tensor" || class == "Module" || matches!(v, Val::Object(_)) => {
            PyRef::new_ref(Handle { v }, cls, Some(vm.ctx.new_dict())).into()
        }
        Some(cls) => PyRef::new_ref(Handle { v }, cls, None).into(),
        // Only before the prelude has registered its classes.
        None => vm.ctx.none(),
    }
}

/// A Python object as a session value.
pub fn to_val(vm: &VirtualMachine, o: &PyObjectRef) -> Val {
    if let Some(h) = o.downcast_ref::<Handle>() {
        return h.v.clone();
    }
    if vm.is_none(o) {
        return Val::None;
    }
    if o.class().is(vm.ctx.types.bool_type) {
        return Val::Bool(o.clone().try_to_bool(vm).unwrap_or(false));
    }
    if let Some(i) = o.downcast_ref::<PyInt>() {
        return match i.try_to_primitive::<i64>(vm) {
            Ok(i) => Val::Int(i),
            Err(_) => Val::Py(Rc::new(PyVal(o.clone()))),
        };
    }
    if let Some(f) = o.downcast_ref::<PyFloat>() {
        return Val::Float(f.to_f64());
    }
    if let Some(x) = o.downcast_ref::<PyStr>() {
        return Val::str(&x.to_string_lossy());
    }
    if let Some(t) = o.downcast_ref::<PyTuple>() {
        return Val::tuple(t.iter().map(|x| to_val(vm, x)).collect());
    }
    if let Some(l) = o.downcast_ref::<PyList>() {
        let items: Vec<PyObjectRef> = l.borrow_vec().to_vec();
        return Val::list(items.iter().map(|x| to_val(vm, x)).collect());
    }
    if let Some(d) = o.downcast_ref::<PyDict>() {
        let items = d
            .into_iter()
            .map(|(k, v)| (to_val(vm, &k), to_val(vm, &v)))
            .collect();
        return Val::Dict(Rc::new(RefCell::new(items)));
    }
    if let Some(r) = o.downcast_ref::<PyRange>() {
        let (a, b, c) = (
            r.start.try_to_primitive::<i64>(vm),
            r.stop.try_to_primitive::<i64>(vm),
            r.step.try_to_primitive::<i64>(vm),
        );
        if let (Ok(a), Ok(b), Ok(c)) = (a, b, c) {
            return Val::Range(a, b, c);
        }
    }
    if let Some(sl) = o.downcast_ref::<PySlice>() {
        // A bound is None or anything with `__index__` (an int, a one-element
        // integer tensor); a huge int clamps as Python's slices do. Any other
        // bound keeps the slice a Python object, which indexing refuses
        // (it used to read as an absent bound: `x[:2.5]` was `x[:]`).
        let g = |x: Option<&PyObjectRef>| -> Result<Option<i64>, ()> {
            let Some(x) = x.filter(|x| !vm.is_none(x)) else {
                return Ok(None);
            };
            let i = x.try_index(vm).map_err(|_| ())?;
            Ok(Some(i.try_to_primitive::<i64>(vm).unwrap_or(
                if *i.as_bigint() < Default::default() {
                    i64::MIN
                } else {
                    i64::MAX
                },
            )))
        };
        if let (Ok(a), Ok(b), Ok(c)) =
            (g(sl.start.as_ref()), g(Some(&sl.stop)), g(sl.step.as_ref()))
        {
            return Val::Slice(a, b, c);
        }
    }
    if let Some(m) = o.downcast_ref::<PyModule>() {
        // Kernels may name `math` (its functions are tile-language builtins).
        if let Ok(name) = m.as_object().get_attr("__name__", vm) {
            if name.str(vm).is_ok_and(|n| n.to_string_lossy() == "math") {
                return Val::Module(Rc::from("math"));
            }
        }
    }
    Val::Py(Rc::new(PyVal(o.clone())))
}
