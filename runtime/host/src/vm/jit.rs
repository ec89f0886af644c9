//! `@triton.jit` on the VM: the decorated function's source is found in the
//! cell (or file) it was defined in, by its code object's file name and
//! first line, and handed to the tile-language front end unchanged. The
//! kernel resolves its global names in the function's module namespace.

use super::convert::{to_py, to_val};
use super::{exc_to_py, session};
use crate::kernels::{KernelObj, Namespace};
use crate::value::{Exc, Scope, Val};
use ruff_python_ast::{Stmt, StmtFunctionDef};
use ruff_text_size::Ranged;
use rustpython_vm::builtins::PyDictRef;
use rustpython_vm::{AsObject, PyObjectRef, PyResult, VirtualMachine};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use tilebook_frontend::kernel::JitFunction;
use tilebook_frontend::SourceFile;

/// `triton.jit(fn)`, `triton.jit(**options)(fn)`.
pub fn jit(
    vm: &VirtualMachine,
    this: &PyObjectRef,
    args: Vec<Val>,
    options: Vec<(String, Val)>,
) -> PyResult {
    let s = session();
    let f = match args.first() {
        // `triton.jit(**options)` without a function is answered by the
        // Python wrapper (`profiler.py`, `_jit_with_options`), which calls
        // here with the function and the same options.
        None => return Ok(this.clone()),
        Some(Val::Kernel(_)) => return Ok(to_py(vm, s, args[0].clone())),
        Some(Val::Py(p)) => match p.as_any().downcast_ref::<super::convert::PyVal>() {
            Some(p) => p.0.clone(),
            None => return Err(type_error(vm, "triton.jit expects a function")),
        },
        Some(other) => {
            return Err(type_error(
                vm,
                &format!("triton.jit expects a function, got {}", other.type_name()),
            ))
        }
    };
    let code = f.get_attr("__code__", vm)?;
    let file_name: String = code.get_attr("co_filename", vm)?.try_into_value(vm)?;
    let first_line: usize = code.get_attr("co_firstlineno", vm)?.try_into_value(vm)?;
    let name: String = f.get_attr("__name__", vm)?.try_into_value(vm)?;
    let known = s.host.as_ref().and_then(|h| h.file(&file_name));
    let file = match known.or_else(|| file_source(&file_name)) {
        Some(f) => f,
        None => return Err(type_error(
            vm,
            &format!("@triton.jit: the source of `{name}` is not known (kernels are defined in cells, in files that tilebook runs, or in modules imported from .py files)"),
        )),
    };
    let stmts = tilebook_frontend::parse::parse_cell(&file)
        .map_err(|d| exc_to_py(vm, s, Exc::new(&d.kind, d.message.clone())))?;
    let def = find_def(&file, &stmts, &name, first_line).ok_or_else(|| {
        type_error(
            vm,
            &format!("@triton.jit: cannot find `def {name}` at line {first_line} of {file_name}"),
        )
    })?;
    let mut jf = JitFunction::new(def.clone(), &file);
    jf.do_not_specialize = do_not_specialize(&jf, &options).map_err(|e| exc_to_py(vm, s, e))?;
    let defaults = defaults(vm, &f, def)?;
    let globals: PyDictRef = f.get_attr("__globals__", vm)?.try_into_value(vm)?;
    // Redefining a kernel replaces its body in place; cached code stays keyed by source.
    if let Some(old) = globals.get_item_opt(name.as_str(), vm)? {
        if let Val::Kernel(k) = to_val(vm, &old) {
            if k.autotune.borrow().is_none() && k.heuristics.borrow().is_empty() && k.is_host() {
                k.redefine(jf, defaults);
                return Ok(old);
            }
        }
    }
    let cache: RefCell<Option<Snapshot>> = RefCell::new(None);
    let ns = Namespace::Host(Rc::new(move |jit: &JitFunction| {
        snapshot(&globals, jit, &mut cache.borrow_mut())
    }));
    let k = KernelObj::with_namespace(jf, defaults, ns);
    Ok(to_py(vm, s, Val::Kernel(Rc::new(k))))
}

/// The source of a kernel defined in a `.py` file that tilebook did not run
/// itself (a module it imported, or `exec(compile(text, path, "exec"))` of a
/// file's text), read once and remembered, as Triton reads it through
/// `inspect`/`linecache`. As there, the file is what is read: `find_def`
/// checks that `def NAME` stands at the code object's first line, so a file
/// that no longer holds it there is an error.
fn file_source(file_name: &str) -> Option<Rc<SourceFile>> {
    if !file_name.ends_with(".py") {
        return None;
    }
    // A regular file only: a FIFO or device named like a module would hang
    // or never end.
    if !std::fs::metadata(file_name).ok()?.is_file() {
        return None;
    }
    let text = std::fs::read_to_string(file_name).ok()?;
    let file = SourceFile::new(file_name, text);
    if let Some(h) = session().host.as_ref() {
        h.add_file(file_name, file.clone());
    }
    Some(file)
}

fn type_error(vm: &VirtualMachine, msg: &str) -> rustpython_vm::builtins::PyBaseExceptionRef {
    vm.new_type_error(msg.to_string())
}

/// The `def` named `name` whose decorators or `def` line is `line`.
pub fn find_def<'a>(
    file: &SourceFile,
    stmts: &'a [Stmt],
    name: &str,
    line: usize,
) -> Option<&'a StmtFunctionDef> {
    for st in stmts {
        match st {
            Stmt::FunctionDef(d) if d.name.as_str() == name => {
                // RustPython's `co_firstlineno` may name any line of the
                // decorators or the signature.
                let first = file.line_col(d.range.start().to_usize()).0 as usize;
                let body = d.body.first().map_or(d.range.end(), |b| b.range().start());
                let last = file.line_col(body.to_usize()).0 as usize;
                if (first..=last).contains(&line) {
                    return Some(d);
                }
            }
            Stmt::If(i) => {
                if let Some(d) = find_def(file, &i.body, name, line) {
                    return Some(d);
                }
                for c in &i.elif_else_clauses {
                    if let Some(d) = find_def(file, &c.body, name, line) {
                        return Some(d);
                    }
                }
            }
            Stmt::With(w) => {
                if let Some(d) = find_def(file, &w.body, name, line) {
                    return Some(d);
                }
            }
            Stmt::Try(t) => {
                if let Some(d) = find_def(file, &t.body, name, line) {
                    return Some(d);
                }
            }
            Stmt::FunctionDef(d) => {
                if let Some(d) = find_def(file, &d.body, name, line) {
                    return Some(d);
                }
            }
            Stmt::ClassDef(c) => {
                if let Some(d) = find_def(file, &c.body, name, line) {
                    return Some(d);
                }
            }
            _ => {}
        }
    }
    None
}

/// Parameter defaults as Python evaluated them (`__defaults__` belongs to
/// the last positional parameters, `__kwdefaults__` to keyword-only ones).
fn defaults(
    vm: &VirtualMachine,
    f: &PyObjectRef,
    def: &StmtFunctionDef,
) -> PyResult<HashMap<String, Val>> {
    let mut out = HashMap::new();
    let p = &def.parameters;
    let positional: Vec<String> = p
        .posonlyargs
        .iter()
        .chain(&p.args)
        .map(|a| a.parameter.name.to_string())
        .collect();
    let d = f.get_attr("__defaults__", vm)?;
    if !vm.is_none(&d) {
        let items: Vec<PyObjectRef> = d.try_to_value(vm)?;
        let skip = positional.len().saturating_sub(items.len());
        for (n, v) in positional.iter().skip(skip).zip(items) {
            out.insert(n.clone(), to_val(vm, &v));
        }
    }
    let kd = f.get_attr("__kwdefaults__", vm)?;
    if let Ok(kd) = kd.downcast::<rustpython_vm::builtins::PyDict>() {
        for (k, v) in &kd {
            if let Ok(k) = k.str(vm) {
                out.insert(k.to_string_lossy().into_owned(), to_val(vm, &v));
            }
        }
    }
    let _ = f.as_object();
    Ok(out)
}

/// The last namespace a kernel saw: the objects its names were bound to
/// (as Python keys, so lookups hash nothing new), the bodies of the `@jit`
/// functions among them, and the values made from them. A launch whose names
/// are bound to the same objects reuses the values.
struct Snapshot {
    source: Rc<str>,
    bound: Vec<(rustpython_vm::builtins::PyStrRef, Option<PyObjectRef>)>,
    callees: Vec<(Rc<KernelObj>, *const JitFunction)>,
    scope: Scope,
}

/// The globals a kernel (and the `@jit` functions it calls) names, as
/// session values, read from its module namespace at launch time.
fn snapshot(globals: &PyDictRef, jit: &JitFunction, cache: &mut Option<Snapshot>) -> Scope {
    if !super::inside() {
        return Rc::new(RefCell::new(HashMap::new()));
    }
    rustpython_vm::vm::thread::with_current_vm(|vm| {
        if let Some(c) = cache.as_ref() {
            let same_source = *c.source == *jit.text;
            let same_bindings = same_source
                && c.bound.iter().all(|(k, old)| {
                    let now = globals.get_item_opt(&**k, vm).ok().flatten();
                    match (old, &now) {
                        (None, None) => true,
                        (Some(a), Some(b)) => a.is(b),
                        _ => false,
                    }
                });
            let same_callees = same_bindings
                && c.callees
                    .iter()
                    .all(|(k, body)| std::ptr::eq(Rc::as_ptr(&k.jit.borrow()), *body));
            if same_callees {
                return c.scope.clone();
            }
        }
        let map: Scope = Rc::new(RefCell::new(HashMap::new()));
        let mut bound = vec![];
        let mut callees = vec![];
        let mut queue: Vec<Rc<JitFunction>> = vec![];
        let mut seen: Vec<String> = vec![];
        let mut visit = |f: &JitFunction, queue: &mut Vec<Rc<JitFunction>>| {
            for w in &f.words {
                if seen.contains(w) {
                    continue;
                }
                seen.push(w.clone());
                let key = vm.ctx.new_str(w.as_str());
                let obj = globals.get_item_opt(&*key, vm).ok().flatten();
                if let Some(o) = &obj {
                    let v = to_val(vm, o);
                    if let Val::Kernel(k) = &v {
                        let body = k.jit.borrow().clone();
                        callees.push((k.clone(), Rc::as_ptr(&body)));
                        queue.push(body);
                    }
                    map.borrow_mut().insert(w.clone(), v);
                }
                bound.push((key, obj));
            }
        };
        visit(jit, &mut queue);
        while let Some(f) = queue.pop() {
            visit(&f, &mut queue);
        }
        *cache = Some(Snapshot {
            source: Rc::from(jit.text.as_str()),
            bound,
            callees,
            scope: map.clone(),
        });
        map
    })
}

/// `do_not_specialize=[...]`: parameter names or positions, as Triton takes them.
fn do_not_specialize(jf: &JitFunction, options: &[(String, Val)]) -> Result<Vec<String>, Exc> {
    let Some((_, v)) = options.iter().find(|(k, _)| k == "do_not_specialize") else {
        return Ok(vec![]);
    };
    let items = match v {
        Val::List(l) => l.borrow().clone(),
        Val::Tuple(t) => t.to_vec(),
        Val::None => vec![],
        other => vec![other.clone()],
    };
    items
        .iter()
        .map(|it| match it {
            Val::Str(n) if jf.params.iter().any(|p| *p.name == **n) => Ok(n.to_string()),
            Val::Int(i) => usize::try_from(*i)
                .ok()
                .and_then(|i| jf.params.get(i))
                .map(|p| p.name.to_string())
                .ok_or_else(|| {
                    Exc::type_error(format!(
                        "do_not_specialize: `{}` has no parameter {i}",
                        jf.name
                    ))
                }),
            other => Err(Exc::type_error(format!(
                "do_not_specialize: `{}` has no parameter {}",
                jf.name,
                other.repr()
            ))),
        })
        .collect()
}
