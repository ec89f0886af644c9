//! The host language: cells run on an embedded Python VM (RustPython).
//!
//! The session's native library (tensors, `torch`, `triton`, kernels) is
//! reached from Python through one native module, `_tb` (`natives.rs`), and
//! the Python classes of `prelude.py`, whose protocol methods forward to it.
//! Values cross the boundary as `Val`s (`convert.rs`): Python scalars,
//! strings and containers become their `Val` counterparts, native handles
//! give back the `Val` they hold, and anything else travels as an opaque
//! `Val::Py`, which the session can call (a grid function, a benchmark).
//!
//! Rust code inside a cell reaches the session through a pointer kept for
//! the duration of the outermost entry (`enter`); every entry from Rust into
//! Python re-derives it from the `&mut Engine` it was given, so the
//! session is only ever used through the most recent borrow.

/// Put `guarded` in a type slot (an atomic cell of an optional function
/// pointer) in place of RustPython's function, which `keep` (a `OnceLock`)
/// holds for the wrapper to call. A slot already guarded stays as it is,
/// and so does one holding a function other than the one kept (a type
/// another thread's VM set up differently keeps RustPython's own).
/// Evaluates to the function replaced, if any.
macro_rules! wrap_slot {
    ($cell:expr, $keep:expr, $guarded:expr) => {{
        let cell = &$cell;
        let guarded = $guarded;
        match cell.load() {
            Some(orig)
                if !std::ptr::fn_addr_eq(orig, guarded)
                    && std::ptr::fn_addr_eq(*$keep.get_or_init(|| orig), orig) =>
            {
                cell.store(Some(guarded));
                Some(orig)
            }
            _ => None,
        }
    }};
}

mod convert;
mod growth_guard;
mod jit;
mod memory_guard;
mod natives;
mod size_guard;

pub use convert::{to_py, to_val};

use crate::value::R;
use crate::value::{Exc, Val};
use crate::Engine;
use ruff_python_ast::Stmt;
use rustpython_vm::builtins::{PyBaseExceptionRef, PyDictRef};
use rustpython_vm::compiler::Mode;
use rustpython_vm::scope::Scope as PyScope;
use rustpython_vm::{AsObject, Interpreter, PyObjectRef, Settings, VirtualMachine};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use tilebook_frontend::{SourceFile, Span};

const PRELUDE: &str = concat!(
    include_str!("prelude.py"),
    include_str!("profiler.py"),
    include_str!("autograd.py"),
    include_str!("attention.py"),
    include_str!("pieces.py"),
    include_str!("distributed.py")
);

/// Stand-ins for pure-Python packages that programs import only for a
/// little of their surface (tutorials import `tabulate` to print a table
/// and `pytest` for its decorators). They are used only when nothing on
/// `sys.path` provides the name; see `fallbacks/`.
const FALLBACKS: [(&str, &str); 2] = [
    ("pytest", include_str!("fallbacks/pytest.py")),
    ("tabulate", include_str!("fallbacks/tabulate.py")),
];

fn fallback_source(name: &str) -> Option<&'static str> {
    FALLBACKS.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

thread_local! {
    static SESSION: Cell<*mut Engine> = const { Cell::new(std::ptr::null_mut()) };
}

/// The VM, the user's namespace and the sources of everything run so far
/// (kernels find their source there; tracebacks are mapped to cell lines).
pub struct Host {
    interp: Rc<Interpreter>,
    pub globals: PyDictRef,
    files: RefCell<HashMap<String, Rc<SourceFile>>>,
    classes: RefCell<HashMap<String, PyObjectRef>>,
    /// The Python side of the session object converted last, so that the
    /// same object converts to the same Python object without allocating
    /// (a launch in a loop returns its `CompiledKernel` each time).
    last_object: RefCell<Option<(Rc<crate::value::Object>, PyObjectRef)>>,
    /// The Python side of every `CompiledKernel` converted, by the address
    /// of its session object (held here, so the address is not reused):
    /// `kernel[grid](...)` returns the same Python object each time, with
    /// whatever attributes the user set on it, as Triton's does.
    compiled: RefCell<HashMap<usize, (Rc<crate::value::Object>, PyObjectRef)>>,
    interrupts: rustpython_vm::signal::UserSignalSender,
}

impl Host {
    pub fn new(argv: Vec<String>) -> Result<Host, String> {
        let mut settings = Settings::default();
        settings.install_signal_handlers = false;
        settings.argv = if argv.is_empty() {
            vec![String::new()]
        } else {
            argv
        };
        settings.path_list = search_path(&settings.argv[0]);
        settings.import_site = false;
        // Text files default to UTF-8 whatever the locale (Python's UTF-8
        // mode, which CPython enters under the C locale and PEP 686 makes
        // the default); PYTHONUTF8=0 asks for the locale's encoding.
        settings.utf8_mode = if std::env::var("PYTHONUTF8").is_ok_and(|v| v == "0") {
            0
        } else {
            1
        };
        // `python3 FILE` gives the script `__file__` (the path as given);
        // a REPL or notebook session has none.
        let script = Some(settings.argv[0].clone()).filter(|f| !f.is_empty());
        let builder = Interpreter::builder(settings);
        let defs = rustpython_stdlib::stdlib_module_defs(&builder.ctx);
        let tb = natives::_tb::module_def(&builder.ctx);
        let (tx, rx) = rustpython_vm::signal::user_signal_channel();
        let interp = builder
            .add_native_modules(&defs)
            .add_native_module(tb)
            .add_frozen_modules(rustpython_pylib::FROZEN_STDLIB)
            .init_hook(move |vm| vm.set_user_signal_channel(rx))
            .build();
        let globals = interp.enter(|vm| {
            install_guards(vm);
            // Python's default (RustPython's debug builds use 256); deeper
            // recursion is a RecursionError, and RustPython also guards the
            // native stack itself.
            vm.recursion_limit.set(1000);
            let scope = vm.new_scope_with_builtins();
            let g = scope.globals.clone();
            let _ = g.set_item("__name__", vm.ctx.new_str("__main__").into(), vm);
            if let Some(f) = &script {
                let _ = g.set_item("__file__", vm.ctx.new_str(f.as_str()).into(), vm);
            }
            g
        });
        growth_guard::watch();
        Ok(Host {
            interp: Rc::new(interp),
            globals,
            files: RefCell::new(HashMap::new()),
            classes: RefCell::new(HashMap::new()),
            last_object: RefCell::new(None),
            compiled: RefCell::new(HashMap::new()),
            interrupts: tx,
        })
    }

    /// Run the prelude (needs the session pointer: it registers classes).
    pub fn start(s: &mut Engine) -> R<()> {
        s.run_host(|vm, _| {
            let scope = PyScope::with_builtins(None, vm.ctx.new_dict(), vm);
            let code = vm
                .compile(PRELUDE, Mode::Exec, "<tilebook prelude>".to_owned())
                .map_err(|e| vm.new_syntax_error(&e, Some(PRELUDE)))?;
            vm.run_code_obj(code, scope).map(|_| ())
        })
    }

    pub fn class(&self, name: &str) -> Option<PyObjectRef> {
        self.classes.borrow().get(name).cloned()
    }

    /// The Python object `o` was converted to last time, if it was the
    /// last object converted.
    pub fn converted(&self, o: &Rc<crate::value::Object>) -> Option<PyObjectRef> {
        if let Some((k, p)) = self.last_object.borrow().as_ref() {
            if Rc::ptr_eq(k, o) {
                return Some(p.clone());
            }
        }
        let key = Rc::as_ptr(o) as usize;
        self.compiled.borrow().get(&key).map(|(_, p)| p.clone())
    }

    pub fn remember_converted(&self, o: Rc<crate::value::Object>, p: PyObjectRef) {
        if o.type_name == "CompiledKernel" {
            let mut kept = self.compiled.borrow_mut();
            // An entry whose object only this map and its own Python side
            // still hold belongs to a specialization its kernel dropped.
            kept.retain(|_, (k, _)| Rc::strong_count(k) > 2);
            kept.insert(Rc::as_ptr(&o) as usize, (o.clone(), p.clone()));
        }
        *self.last_object.borrow_mut() = Some((o, p));
    }

    pub fn register_class(&self, name: &str, cls: PyObjectRef) {
        self.classes.borrow_mut().insert(name.to_string(), cls);
    }

    pub fn file(&self, name: &str) -> Option<Rc<SourceFile>> {
        self.files.borrow().get(name).cloned()
    }

    /// Remember a source under `name` (a module imported from disk, whose
    /// kernels then find their source like a cell's).
    pub fn add_file(&self, name: &str, file: Rc<SourceFile>) {
        self.files.borrow_mut().insert(name.to_string(), file);
    }

    /// Ask the running VM to raise `KeyboardInterrupt` if `flag` is still
    /// set when it next checks (between bytecode instructions).
    pub fn interrupt_sender(&self) -> rustpython_vm::signal::UserSignalSender {
        self.interrupts.clone()
    }
}

/// Wrap the VM's types against sizes that would abort the process
/// (`memory_guard`, `size_guard`, `growth_guard`). RustPython's built-in
/// types are per thread and shared by that thread's interpreters, so this
/// runs at a thread's first session only.
fn install_guards(vm: &VirtualMachine) {
    thread_local! {
        static DONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    if DONE.with(|d| d.replace(true)) {
        return;
    }
    memory_guard::install(vm);
    size_guard::install(vm);
    growth_guard::install(vm);
}

/// `sys.path`: the script's folder (or the current one), `TILEBOOK_PATH`,
/// `PYTHONPATH`, and the site-packages of a virtualenv, the user and the system.
fn search_path(script: &str) -> Vec<String> {
    let folder = std::path::Path::new(script)
        .parent()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut path = vec![folder];
    if !path[0].is_empty() {
        path.push(String::new());
    }
    if let Ok(p) = std::env::var("TILEBOOK_PATH") {
        path.extend(p.split(':').filter(|s| !s.is_empty()).map(String::from));
    }
    if let Ok(p) = std::env::var("PYTHONPATH") {
        path.extend(p.split(':').filter(|s| !s.is_empty()).map(String::from));
    }
    // Where pip puts pure-Python packages: an active virtualenv, the user's
    // site, then the system's (Debian's dist-packages included).
    let home = std::env::var("HOME").unwrap_or_default();
    let roots = [
        std::env::var("VIRTUAL_ENV")
            .map(|v| format!("{v}/lib"))
            .unwrap_or_default(),
        format!("{home}/.local/lib"),
        "/usr/local/lib".to_string(),
        "/usr/lib".to_string(),
    ];
    for root in roots
        .iter()
        .filter(|r| !r.is_empty() && r.as_str() != "/.local/lib")
    {
        let Ok(entries) = std::fs::read_dir(root) else {
            continue;
        };
        let mut found: Vec<String> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
            .flat_map(|e| {
                [
                    e.path().join("site-packages"),
                    e.path().join("dist-packages"),
                ]
            })
            .filter(|sp| sp.is_dir())
            .map(|sp| sp.to_string_lossy().into_owned())
            .collect();
        found.sort();
        path.extend(found);
    }
    path.dedup();
    path
}

/// Whether a cell is running (natives and the VM can be reached).
pub fn inside() -> bool {
    SESSION.with(|c| !c.get().is_null())
}

/// The session of the cell that is running (natives reach it this way).
///
/// # Safety
/// Only called from natives while `Engine::run_host` is on the stack; the
/// pointer then comes from the `&mut Engine` of the innermost entry, which
/// is not used by its owner until the VM returns to it.
pub fn session<'a>() -> &'a mut Engine {
    let p = SESSION.with(|c| c.get());
    assert!(!p.is_null(), "a tilebook native was called outside a cell");
    unsafe { &mut *p }
}

impl Engine {
    /// Enter the VM with this session reachable from natives.
    pub fn run_host<T>(
        &mut self,
        f: impl FnOnce(&VirtualMachine, &mut Engine) -> Result<T, PyBaseExceptionRef>,
    ) -> R<T> {
        if self.host.is_none() {
            let argv = self.argv.clone();
            let host = Rc::new(Host::new(argv).map_err(|e| Exc::new("RuntimeError", e))?);
            let tx = host.interrupt_sender();
            self.interrupt.attach(Box::new(move |flag| {
                let flag = flag.clone();
                let _ = tx.send(Box::new(move |vm| {
                    if flag.swap(false, std::sync::atomic::Ordering::Relaxed) {
                        Err(vm.new_exception_empty(vm.ctx.exceptions.keyboard_interrupt.to_owned()))
                    } else {
                        Ok(())
                    }
                }));
            }));
            self.host = Some(host);
            Host::start(self)?;
        }
        let host = self.host.clone().expect("host started");
        let me: *mut Engine = self;
        let prev = SESSION.with(|c| c.replace(me));
        let result = host.interp.enter(|vm| {
            // SAFETY: `me` is this call's exclusive borrow; see `session()`.
            let s = unsafe { &mut *me };
            match f(vm, s) {
                Ok(v) => Ok(v),
                Err(e) => Err(exception_to_exc(vm, s, &e)),
            }
        });
        SESSION.with(|c| c.set(prev));
        result
    }

    /// Run `f` with the VM entered and this session reachable from natives,
    /// as host code runs (a launch from the Rust API reads the kernel's
    /// module globals through the VM). Errors pass through unchanged.
    pub fn in_vm<T>(&mut self, f: impl FnOnce(&mut Engine) -> R<T>) -> R<T> {
        if self.host.is_none() {
            self.run_host(|_, _| Ok(()))?;
        }
        let host = self.host.clone().expect("host started");
        let me: *mut Engine = self;
        let prev = SESSION.with(|c| c.replace(me));
        // SAFETY: `me` is this call's exclusive borrow; see `session()`.
        let result = host.interp.enter(|_| f(unsafe { &mut *me }));
        SESSION.with(|c| c.set(prev));
        result
    }

    /// Call a Python callable with session values.
    pub fn call_py(
        &mut self,
        f: &PyObjectRef,
        args: Vec<Val>,
        kwargs: Vec<(String, Val)>,
    ) -> R<Val> {
        self.run_host(|vm, s| {
            let args: Vec<PyObjectRef> = args.into_iter().map(|a| to_py(vm, s, a)).collect();
            let mut fa = rustpython_vm::function::FuncArgs::from(args);
            for (k, v) in kwargs {
                fa.kwargs.insert(k, to_py(vm, s, v));
            }
            let out = f.call_with_args(fa, vm)?;
            Ok(to_val(vm, &out))
        })
    }

    /// Run a cell's Python: its statements, then the value of a final
    /// expression (`Val::None` when there is none).
    pub fn run_python(&mut self, file: &Rc<SourceFile>, stmts: &[Stmt]) -> R<Val> {
        if self.host.is_none() {
            self.run_host(|_, _| Ok(()))?;
        }
        let host = self.host.clone().expect("host started");
        host.files
            .borrow_mut()
            .insert(file.name.clone(), file.clone());
        let text = &file.text;
        let edits = escapes(stmts);
        // A final expression (or magic) is evaluated on its own, on its
        // own line, so that its value can be shown.
        let split = match stmts.last() {
            Some(Stmt::Expr(e)) => Some((e.range.start().to_usize(), e.range.end().to_usize())),
            Some(Stmt::IpyEscapeCommand(c)) => {
                Some((c.range.start().to_usize(), c.range.end().to_usize()))
            }
            _ => None,
        };
        let (body, tail) = match split {
            Some((a, b)) => {
                let lines = text[..a].matches('\n').count();
                let expr = apply(text, a, b, &edits);
                (
                    apply(text, 0, a, &edits),
                    Some(format!("{}({})", "\n".repeat(lines), expr.trim())),
                )
            }
            None => (apply(text, 0, text.len(), &edits), None),
        };
        let globals = host.globals.clone();
        let name = file.name.clone();
        self.run_host(move |vm, _| {
            let scope = PyScope::with_builtins(None, globals.clone(), vm);
            let code = vm
                .compile(&body, Mode::Exec, name.clone())
                .map_err(|e| vm.new_syntax_error(&e, Some(&body)))?;
            vm.run_code_obj(code, scope.clone())?;
            let Some(expr) = tail else {
                return Ok(Val::None);
            };
            let code = vm
                .compile(&expr, Mode::Eval, name)
                .map_err(|e| vm.new_syntax_error(&e, Some(&expr)))?;
            let v = vm.run_code_obj(code, scope)?;
            if vm.is_none(&v) {
                return Ok(Val::None);
            }
            let _ = globals.set_item("_", v.clone(), vm);
            // A cell that ends in a launch shows nothing (Jupyter with Triton
            // shows the compiled kernel's address); `k = kernel[grid](...)`
            // keeps the kernel.
            match to_val(vm, &v) {
                Val::Object(o) if o.type_name == "CompiledKernel" => Ok(Val::None),
                v => Ok(v),
            }
        })
    }
}

/// `text[a..b]` with the escapes inside it replaced.
fn apply(text: &str, a: usize, b: usize, edits: &[(usize, usize, String)]) -> String {
    let mut out = String::new();
    let mut at = a;
    for (s, e, rep) in edits {
        if *s >= a && *e <= b {
            out.push_str(&text[at..*s]);
            out.push_str(rep);
            at = *e;
        }
    }
    out.push_str(&text[at..b]);
    out
}

/// IPython escapes (`%magic args`, `x = %time f()`, `x?`) and the calls
/// that replace them on the same line, so the VM sees plain Python; in
/// order of position.
fn escapes(stmts: &[Stmt]) -> Vec<(usize, usize, String)> {
    let mut edits: Vec<(usize, usize, String)> = vec![];
    let call = |kind: &str, value: &str| {
        format!(
            "__import__('_tb').magic({})",
            crate::value::py_str_repr(&format!("{kind}{value}"))
        )
    };
    for st in stmts {
        match st {
            Stmt::IpyEscapeCommand(c) => edits.push((
                c.range.start().to_usize(),
                c.range.end().to_usize(),
                call(c.kind.as_str(), &c.value),
            )),
            Stmt::Assign(a) => {
                if let ruff_python_ast::Expr::IpyEscapeCommand(c) = &*a.value {
                    edits.push((
                        c.range.start().to_usize(),
                        c.range.end().to_usize(),
                        call(c.kind.as_str(), &c.value),
                    ));
                }
            }
            // Escapes inside blocks are rewritten too, as IPython does.
            Stmt::For(f) => {
                edits.extend(escapes(&f.body));
                edits.extend(escapes(&f.orelse));
            }
            Stmt::While(w) => {
                edits.extend(escapes(&w.body));
                edits.extend(escapes(&w.orelse));
            }
            Stmt::If(i) => {
                edits.extend(escapes(&i.body));
                for c in &i.elif_else_clauses {
                    edits.extend(escapes(&c.body));
                }
            }
            Stmt::With(w) => edits.extend(escapes(&w.body)),
            Stmt::Try(t) => {
                edits.extend(escapes(&t.body));
                for h in &t.handlers {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                    edits.extend(escapes(&h.body));
                }
                edits.extend(escapes(&t.orelse));
                edits.extend(escapes(&t.finalbody));
            }
            Stmt::FunctionDef(f) => edits.extend(escapes(&f.body)),
            _ => {}
        }
    }
    edits.sort_by_key(|e| e.0);
    edits
}

/// A Python exception as the session's `Exc`: class name, message, and the
/// innermost line of a cell or file run in this session.
fn exception_to_exc(vm: &VirtualMachine, s: &mut Engine, e: &PyBaseExceptionRef) -> Exc {
    let obj: PyObjectRef = e.clone().into();
    // An error raised by the session's own library keeps its rendering.
    if let Ok(h) = obj.get_attr("_tb_exc", vm) {
        if let Val::Exception(x) = to_val(vm, &h) {
            let mut x = (*x).clone();
            if x.span.is_none() {
                x.span = innermost_span(vm, s, &obj);
            }
            return x;
        }
    }
    let kind = obj.class().name().to_string();
    let message = match obj.str(vm) {
        Ok(m) => m.to_string_lossy().into_owned(),
        Err(_) => String::new(),
    };
    let mut exc = Exc::new(&kind, message);
    if kind == "SyntaxError" || kind == "IndentationError" {
        let line = obj
            .get_attr("lineno", vm)
            .ok()
            .and_then(|l| l.try_into_value::<i64>(vm).ok());
        let file = obj
            .get_attr("filename", vm)
            .ok()
            .and_then(|f| f.str(vm).ok())
            .map(|f| f.to_string_lossy().into_owned());
        if let (Some(line), Some(file)) = (line, file) {
            exc.span = line_span(s, &file, line as u32);
        }
        let msg = obj
            .get_attr("msg", vm)
            .ok()
            .and_then(|m| m.str(vm).ok())
            .map(|m| m.to_string_lossy().into_owned());
        if let Some(m) = msg {
            exc.message = m;
        }
    }
    if exc.span.is_none() {
        exc.span = innermost_span(vm, s, &obj);
    }
    if kind == "SystemExit" {
        exc.message = obj
            .get_attr("code", vm)
            .ok()
            .map(|c| {
                if vm.is_none(&c) {
                    "0".to_string()
                } else {
                    c.str(vm)
                        .map(|x| x.to_string_lossy().into_owned())
                        .unwrap_or_default()
                }
            })
            .unwrap_or_default();
    }
    exc
}

fn innermost_span(vm: &VirtualMachine, s: &mut Engine, exc: &PyObjectRef) -> Option<Span> {
    let host = s.host.clone()?;
    let frames = host.class("frames")?;
    let list = frames.call((exc.clone(),), vm).ok()?;
    let items: Vec<PyObjectRef> = list.try_to_value(vm).ok()?;
    for it in items.iter().rev() {
        let pair: Vec<PyObjectRef> = it.clone().try_into_value(vm).ok()?;
        let file = pair.first()?.str(vm).ok()?.to_string_lossy().into_owned();
        let line: i64 = pair.get(1)?.clone().try_into_value(vm).ok()?;
        if let Some(span) = line_span(s, &file, line as u32) {
            return Some(span);
        }
    }
    None
}

/// A span over the text of `line` (1-based) of a registered file.
fn line_span(s: &Engine, file: &str, line: u32) -> Option<Span> {
    let f = s.host.as_ref()?.file(file)?;
    let mut start = 0usize;
    for _ in 1..line {
        start += f.text[start..].find('\n')? + 1;
    }
    let end = f.text[start..]
        .find('\n')
        .map_or(f.text.len(), |p| start + p);
    let text = &f.text[start..end];
    let lead = text.len() - text.trim_start().len();
    let trail = text.trim_end().len();
    if trail <= lead {
        return None;
    }
    Some(Span {
        file: f.clone(),
        start: start + lead,
        end: start + trail,
    })
}

/// The Python exception for a session error raised inside a native; it
/// carries the `Exc` (its span and rendering) back out.
pub fn exc_to_py(vm: &VirtualMachine, s: &mut Engine, e: Exc) -> PyBaseExceptionRef {
    let kind = e.kind.clone();
    let name = vm.ctx.new_str(kind.as_str());
    let builtin = vm
        .builtins
        .get_attr(&*name, vm)
        .ok()
        .and_then(|c| c.downcast::<rustpython_vm::builtins::PyType>().ok())
        .filter(|t| t.fast_issubclass(vm.ctx.exceptions.base_exception_type));
    let typ = match (builtin, kind.as_str()) {
        (Some(t), _) => t,
        (None, "KeyboardInterrupt") => vm.ctx.exceptions.keyboard_interrupt.to_owned(),
        (None, "UnsupportedError" | "UsageError") => vm.ctx.exceptions.value_error.to_owned(),
        (None, _) => vm.ctx.exceptions.runtime_error.to_owned(),
    };
    let exc = vm.new_exception_msg(typ, e.message.clone().into());
    let holder = to_py(vm, s, Val::Exception(Rc::new(e)));
    let _ = exc.as_object().set_attr("_tb_exc", holder, vm);
    exc
}

impl Engine {
    /// The user's names in the namespace (`%who`): no modules, nothing
    /// private.
    pub fn user_names(&mut self) -> R<Vec<String>> {
        let Some(host) = self.host.clone() else {
            return Ok(vec![]);
        };
        self.run_host(|vm, _| {
            let mut names = vec![];
            for (k, v) in &host.globals {
                let Ok(k) = k.str(vm) else { continue };
                let k = k.to_string_lossy().into_owned();
                let module = v
                    .downcast_ref::<rustpython_vm::builtins::PyModule>()
                    .is_some()
                    || matches!(to_val(vm, &v), Val::Module(_));
                if !k.starts_with('_') && !module {
                    names.push(k);
                }
            }
            Ok(names)
        })
    }

    /// `%reset -f`: an empty namespace.
    pub fn reset_host(&mut self) -> R<()> {
        let Some(host) = self.host.clone() else {
            return Ok(());
        };
        self.run_host(|vm, _| {
            host.globals.clear();
            host.globals
                .set_item("__name__", vm.ctx.new_str("__main__").into(), vm)?;
            let builtins: PyObjectRef = vm.builtins.clone().into();
            host.globals.set_item("__builtins__", builtins, vm)
        })
    }

    /// A global's value in the VM's namespace.
    pub fn host_global(&mut self, name: &str) -> Option<Val> {
        let host = self.host.clone()?;
        self.run_host(|vm, _| Ok(host.globals.get_item_opt(name, vm)?.map(|v| to_val(vm, &v))))
            .ok()
            .flatten()
    }

    /// Bind `name` in the VM's namespace (starting the VM if needed), or
    /// remove it when `value` is `None` (the Rust API's `Session::set`).
    pub fn set_host_global(&mut self, name: &str, value: Option<Val>) -> R<()> {
        self.run_host(|vm, s| {
            let host = s.host.clone().expect("run_host started the VM");
            match value {
                Some(v) => host.globals.set_item(name, to_py(vm, s, v), vm),
                None => {
                    if host.globals.get_item_opt(name, vm)?.is_some() {
                        host.globals.del_item(name, vm)?;
                    }
                    Ok(())
                }
            }
        })
    }
}

impl Engine {
    /// Every global of the namespace as a session value (`%cache`, lost
    /// tensors after a GPU fault, completion).
    pub fn global_values(&mut self) -> Vec<(String, Val)> {
        let Some(host) = self.host.clone() else {
            return vec![];
        };
        self.run_host(|vm, _| {
            let mut out = vec![];
            for (k, v) in &host.globals {
                if let Ok(k) = k.str(vm) {
                    let k = k.to_string_lossy().into_owned();
                    if !k.starts_with("__") {
                        out.push((k, to_val(vm, &v)));
                    }
                }
            }
            Ok(out)
        })
        .unwrap_or_default()
    }
}

impl Engine {
    /// The names of Python's builtins (completion).
    pub fn host_builtin_names(&mut self) -> Vec<String> {
        self.run_host(|vm, _| {
            let d = vm.builtins.dict();
            Ok(d.into_iter()
                .filter_map(|(k, _)| k.str(vm).ok())
                .map(|k| k.to_string_lossy().into_owned())
                .filter(|k| !k.starts_with('_'))
                .collect())
        })
        .unwrap_or_default()
    }

    /// `getattr(v, name)` for a Python object, without raising.
    pub fn host_attr(&mut self, v: &Val, name: &str) -> Option<Val> {
        let Val::Py(p) = v else { return None };
        let p = p.as_any().downcast_ref::<convert::PyVal>()?.0.clone();
        self.run_host(|vm, _| {
            let n = vm.ctx.new_str(name);
            Ok(p.get_attr(&*n, vm).ok().map(|a| to_val(vm, &a)))
        })
        .ok()
        .flatten()
    }

    /// Attribute names for completion: the library's table for its own
    /// values, `dir()` for Python objects (user classes and modules too).
    pub fn attributes_of(&mut self, v: &Val) -> Vec<String> {
        let p = match v {
            Val::Py(p) => match p.as_any().downcast_ref::<convert::PyVal>() {
                Some(p) => p.0.clone(),
                None => return vec![],
            },
            // A Python module kernels see as a library module (`math`):
            // the VM's module has the names.
            Val::Module(m) if m.as_ref() == "math" => {
                match self.run_host(|vm, _| vm.import("math", 0)) {
                    Ok(p) => p,
                    Err(_) => return vec![],
                }
            }
            _ => return crate::members::attributes(self, v),
        };
        self.run_host(|vm, _| {
            let names: Vec<PyObjectRef> = vm.dir(Some(p))?.borrow_vec().to_vec();
            Ok(names
                .iter()
                .filter_map(|n| n.str(vm).ok())
                .map(|n| n.to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('_'))
                .collect())
        })
        .unwrap_or_default()
    }
}

impl Engine {
    /// A Python function's `def` (for `f?` and `f??`), when its source is a
    /// cell or file of this session.
    pub fn py_function_def(
        &mut self,
        v: &Val,
    ) -> Option<(Rc<SourceFile>, ruff_python_ast::StmtFunctionDef)> {
        let Val::Py(p) = v else { return None };
        let f = p.as_any().downcast_ref::<convert::PyVal>()?.0.clone();
        let (file, line, name) = self
            .run_host(|vm, _| {
                let code = f.get_attr("__code__", vm)?;
                let file: String = code.get_attr("co_filename", vm)?.try_into_value(vm)?;
                let line: usize = code.get_attr("co_firstlineno", vm)?.try_into_value(vm)?;
                let name: String = f.get_attr("__name__", vm)?.try_into_value(vm)?;
                Ok((file, line, name))
            })
            .ok()?;
        let file = self.host.as_ref()?.file(&file)?;
        let stmts = tilebook_frontend::parse::parse_cell(&file).ok()?;
        let def = jit::find_def(&file, &stmts, &name, line)?.clone();
        Some((file, def))
    }
}
