//! The host bindings: host code runs on an embedded Python VM (RustPython,
//! `vm/`), and the library it calls is native — `torch`, `triton`, `tl` on
//! the host, tensors and their operators, the builtins Python code reaches
//! through the native module `_tb`.
//!
//! An `Engine` holds the VM, the namespace that persists across cells, the
//! outputs of the running cell and the kernels runtime's state (it derefs
//! to `tilebook_kernels::Runtime` and is the runtime's `Host`). The session
//! on top adds cells, magics, completion, benchmark sweeps and pictures;
//! what of those host code calls (`%magic` lines, `perf_report`, methods of
//! its objects) it registers in the engine's `Registry`, so this crate
//! never names the one above it.
//!
//! Modules: `vm` (the VM, conversions, `@triton.jit` from Python),
//! `interp` (calls and iteration of values), `ops` (operators),
//! `builtins`/`torch` (the host library), `methods` (methods of values),
//! `tensor_lib` (creation, reductions), `device_ops` (torch operations on
//! `'cuda'` tensors as stdlib kernels), `docs` (`help()`), `format` (Python
//! format specs), `registry` (the native functions of every module, the
//! session's included), `modules` (module attributes and calls by name).

// Diagnostics and exceptions are large values on the cold path; boxing
// every `Err` would add noise for no measurable gain.
#![allow(clippy::result_large_err)]

pub mod args;
pub mod attention_ops;
pub mod builtins;
pub mod clamp_ops;
pub mod cuda_events;
pub mod device_ops;
mod distributed;
pub mod docs;
pub mod float_class;
pub mod format;
pub mod indexing;
pub mod interp;
pub mod members;
pub mod methods;
pub mod modules;
pub mod norm_ops;
pub mod ops;
pub mod reference;
pub mod registry;
mod shapes;
pub mod spaced;
pub mod tensor_lib;
pub mod tensor_methods;
pub mod torch;
pub mod triton;
pub mod vm;

pub use gpu_fault::quiet_expected_panics;
use tilebook_kernels::gpu_fault::GpuFault;
pub use tilebook_kernels::{
    autotune, bench, disk_cache, gpu_fault, kernels, tensor, trace, value, Backend, Host,
    Interrupt, Runtime,
};

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use tilebook_frontend::SourceFile;
use value::R;
use value::{Exc, Scope, Val};

/// The stack of a thread that runs cells (the Jupyter kernel's worker):
/// deep Python recursion ends in a `RecursionError` long before it.
pub const CELL_STACK_BYTES: usize = 64 << 20;

/// Something a cell produced, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// Text written to `stdout` or `stderr`.
    Stream { name: String, text: String },
    /// A displayed value as a MIME bundle (`text/plain` always).
    Display { data: Vec<(String, String)> },
    /// The value of the cell's final expression (Jupyter's `execute_result`).
    Result { data: Vec<(String, String)> },
    /// Documentation from `x?` for the front end's pager (Jupyter's `page`
    /// payload; terminals print it).
    Page { text: String },
    /// `clear_output(wait=...)`: clear the cell's output area.
    ClearOutput { wait: bool },
    /// `%load`: text the front end should put in the next cell (IPython's
    /// `set_next_input`); a script runner runs it as the next cell.
    NextInput { text: String },
    /// An error: Python's class name, the message, the 1-based line it points
    /// at (in the cell or file the rendered text names), and the rendered traceback.
    Error {
        kind: String,
        message: String,
        line: Option<u32>,
        rendered: String,
    },
}

/// The result of running one cell.
#[derive(Clone, Debug, Default)]
pub struct CellResult {
    pub outputs: Vec<Output>,
    pub ok: bool,
}

impl CellResult {
    /// Everything as plain text, in order (for scripts and tests).
    pub fn text(&self) -> String {
        let mut s = String::new();
        for o in &self.outputs {
            match o {
                Output::Stream { text, .. } => s.push_str(text),
                Output::Display { data } | Output::Result { data } => {
                    if let Some((_, t)) = data.iter().find(|(m, _)| m == "text/plain") {
                        s.push_str(t);
                        s.push('\n');
                    }
                }
                Output::Error { rendered, .. } => s.push_str(rendered),
                Output::Page { text } => s.push_str(text),
                Output::NextInput { .. } | Output::ClearOutput { .. } => {}
            }
        }
        s
    }

    /// The error of a failed cell: (class, message, line).
    pub fn error(&self) -> Option<(&str, &str, Option<u32>)> {
        self.outputs.iter().find_map(|o| match o {
            Output::Error {
                kind,
                message,
                line,
                ..
            } => Some((kind.as_str(), message.as_str(), *line)),
            _ => None,
        })
    }
}

/// Progress of a long operation (autotuning, a benchmark sweep), reported
/// once it has run for a second: `done` of `total` steps.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    pub label: String,
    pub done: usize,
    pub total: usize,
}

impl Progress {
    pub fn finished(&self) -> bool {
        self.done >= self.total
    }
}

/// A front end's live output channel (`Engine::on_output`).
pub type OutputSink = Box<dyn FnMut(&Output)>;

/// A front end's progress display (a terminal bar, Jupyter's updating
/// display).
pub type ProgressSink = Box<dyn FnMut(&Progress)>;

pub struct Engine {
    /// What the session layer registered (magics, benchmark sweeps, pictures).
    pub registry: registry::Registry,
    /// The kernels runtime's state (backend, caches, launch log); the
    /// session derefs to it.
    pub rt: Runtime,
    pub globals: Scope,
    pub outputs: Vec<Output>,
    pub cell_count: usize,
    pub announced: bool,
    pub rng: u64,
    /// Print the "runs on the CPU backend" note once (off in tests that compare output).
    pub announce: bool,
    /// When the session started (for `time.perf_counter`).
    pub started: std::time::Instant,
    /// Where progress of long operations (autotuning, benchmark sweeps)
    /// goes: the front end's progress bar or updating display.
    pub on_progress: Option<ProgressSink>,
    /// Where streams, displays and clears go as they happen (Jupyter); when
    /// set, those outputs are not kept in the cell's result.
    pub on_output: Option<OutputSink>,
    /// A device to open before the next cell runs (`Engine::lazy`).
    pub pending_device: Option<String>,
    /// Render errors with ANSI colours (terminals, Jupyter).
    pub color: bool,
    /// The GPU while `%device cpu` is in effect (kept for `%device cuda`).
    pub parked_gpu: Option<Rc<tilebook_cuda::Gpu>>,
    /// Run torch operations on `'cuda'` tensors as stdlib kernels even on
    /// the CPU backend (tests of those kernels; a GPU session always does).
    pub ops_as_kernels: bool,
    /// The stdlib kernels behind torch operations, parsed on first use.
    pub stdlib: Option<device_ops::Stdlib>,
    /// The Python VM that runs host code, started with the first cell.
    pub host: Option<Rc<vm::Host>>,
    /// `sys.argv` of the VM (`tilebook run FILE args...`).
    pub argv: Vec<String>,
    /// Text written by Python that does not end a line yet.
    pub pending_stream: Option<(String, String)>,
    /// `torch.cuda.Event`s recorded so far (`cuda_events`).
    pub events: cuda_events::Events,
}

impl std::ops::Deref for Engine {
    type Target = Runtime;
    fn deref(&self) -> &Runtime {
        &self.rt
    }
}

impl std::ops::DerefMut for Engine {
    fn deref_mut(&mut self) -> &mut Runtime {
        &mut self.rt
    }
}

impl Host for Engine {
    fn call(&mut self, f: &Val, args: Vec<Val>, kwargs: Vec<(String, Val)>) -> R<Val> {
        Engine::call(self, f, args, kwargs)
    }
    fn call_method(&mut self, recv: &Val, name: &str, args: Vec<Val>) -> R<Val> {
        methods::call_method(self, recv, name, args, vec![])
    }
    fn emit_stream(&mut self, name: &str, text: &str) {
        Engine::emit_stream(self, name, text)
    }
    fn display(&mut self, data: Vec<(String, String)>) {
        Engine::display(self, data)
    }
    fn progress(&mut self, label: &str, done: usize, total: usize) {
        Engine::progress(self, label, done, total)
    }
    fn announce_backend(&mut self) {
        Engine::announce_backend(self)
    }
    fn globals(&self) -> Scope {
        self.globals.clone()
    }
    fn global_values(&mut self) -> Vec<(String, Val)> {
        Engine::global_values(self)
    }
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

/// The engine behind a runtime callback (the runtime knows its host only as
/// `dyn Host`; that host is always an `Engine`).
pub fn engine_of(h: &mut dyn Host) -> R<&mut Engine> {
    h.as_any_mut().downcast_mut::<Engine>().ok_or_else(|| {
        Exc::new(
            "InternalError",
            "the kernels runtime called back into a host that is not an engine",
        )
    })
}

impl Default for Engine {
    fn default() -> Self {
        Engine::new()
    }
}

impl Engine {
    pub fn new() -> Engine {
        Engine {
            registry: registry::Registry::with_tables(&[
                builtins::TABLE,
                distributed::TABLE,
                torch::TABLE,
                cuda_events::TABLE,
                reference::TABLE,
                float_class::TABLE,
                clamp_ops::TABLE,
                spaced::TABLE,
                triton::TABLE,
                docs::TABLE,
            ]),
            rt: Runtime::new(),
            globals: Rc::new(RefCell::new(HashMap::new())),
            outputs: vec![],
            cell_count: 0,
            announced: false,
            rng: 0x5DEECE66D,
            announce: true,
            started: std::time::Instant::now(),
            on_progress: None,
            on_output: None,
            parked_gpu: None,
            pending_device: None,
            color: false,
            ops_as_kernels: false,
            stdlib: None,
            host: None,
            argv: vec![],
            pending_stream: None,
            events: Default::default(),
        }
    }

    /// A session on `device`: `cpu`, `cuda` (an error when no GPU can be used),
    /// or `auto` (the GPU when there is one, else the CPU backend).
    pub fn with_device(device: &str) -> Result<Engine, String> {
        let mut s = Engine::new();
        match device {
            "cpu" => {}
            "cuda" => s.backend = Backend::Cuda(Rc::new(tilebook_cuda::Gpu::open()?)),
            "auto" => {
                if let Ok(g) = tilebook_cuda::Gpu::open() {
                    s.backend = Backend::Cuda(Rc::new(g));
                }
            }
            other => {
                return Err(format!(
                    "unknown device `{other}` (expected cpu, cuda or auto)"
                ))
            }
        }
        Ok(s)
    }

    /// A session on `device` (as `with_device`) that opens the GPU only when
    /// the first cell runs, so a REPL starts without waiting for CUDA.
    pub fn lazy(device: &str) -> Result<Engine, String> {
        let mut s = Engine::new();
        match device {
            "cpu" => {}
            "cuda" | "auto" => s.pending_device = Some(device.to_string()),
            other => {
                return Err(format!(
                    "unknown device `{other}` (expected cpu, cuda or auto)"
                ))
            }
        }
        Ok(s)
    }

    /// `%device cpu|cuda[:0]`: run the following launches on that backend.
    /// Tensors keep their data: whichever side is stale is brought up to
    /// date when a launch or the host next touches it.
    pub fn switch_device(&mut self, device: &str) -> R<()> {
        match device {
            "cpu" => {
                if let Backend::Cuda(g) = std::mem::replace(&mut self.backend, Backend::Cpu) {
                    g.synchronize().map_err(|e| Exc::new("RuntimeError", e))?;
                    self.parked_gpu = Some(g);
                }
                self.announced = false;
            }
            "cuda" | "cuda:0" | "gpu" => {
                if matches!(self.backend, Backend::Cpu) {
                    let g = match self.parked_gpu.take() {
                        Some(g) => g,
                        None => Rc::new(tilebook_cuda::Gpu::open().map_err(|e| {
                            Exc::new(
                                "RuntimeError",
                                format!("%device cuda: no GPU can be used: {e}"),
                            )
                        })?),
                    };
                    self.backend = Backend::Cuda(g);
                }
            }
            other => {
                return Err(Exc::new(
                    "UsageError",
                    format!("%device {other}: expected cpu or cuda"),
                ))
            }
        }
        Ok(())
    }

    /// Seconds since the session started.
    pub fn clock(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    pub fn device_name(&self) -> String {
        match &self.backend {
            Backend::Cpu => "CPU backend (no GPU)".into(),
            Backend::Cuda(g) => g.name.clone(),
        }
    }

    /// `triton.runtime.driver.active.get_current_target()`.
    pub fn current_target(&self) -> Val {
        Val::object(
            "GPUTarget",
            vec![
                // The CPU backend stands in for the CUDA device ('cuda'
                // tensors, kernel[grid] launches), so programs that pick
                // their code path by backend take the CUDA one. It
                // emulates an sm_90 target: everything the compiler takes
                // for Hopper (descriptors, fp8) runs on it, so programs that
                // check the capability take those paths here too.
                ("backend", Val::str("cuda")),
                (
                    "arch",
                    match &self.backend {
                        // Triton's CUDA targets give the capability as a number (90).
                        Backend::Cuda(g) => {
                            Val::Int(g.arch.trim_start_matches("sm_").parse().unwrap_or(0))
                        }
                        Backend::Cpu => Val::Int(90),
                    },
                ),
                ("warp_size", Val::Int(32)),
            ],
        )
    }

    pub fn announce_backend(&mut self) {
        if self.announced || !self.announce || matches!(self.backend, Backend::Cuda(_)) {
            return;
        }
        self.announced = true;
        self.emit_stream(
            "stderr",
            "tilebook: no GPU in use; kernels run on the CPU backend and 'cuda' tensors live in host memory\n",
        );
    }

    /// A new tensor, zeroed (`zero`) or with unspecified contents
    /// (`torch.empty`; the host backend zeroes anyway): on the GPU first when
    /// it is a `'cuda'` tensor of a session that runs on one (no host copy is
    /// made or uploaded).
    pub fn new_tensor(
        &mut self,
        shape: &[usize],
        dtype: tilebook_tir::DType,
        device: tensor::Device,
        zero: bool,
    ) -> R<tensor::Tensor> {
        match self.gpu_of(&device)? {
            Some(g) => {
                tensor::checked_bytes(shape, dtype)
                    .map_err(|m| value::Exc::new("RuntimeError", m))?;
                tensor::Tensor::on_gpu(shape, dtype, device, &g, zero).map_err(|e| {
                    if e.contains("OUT_OF_MEMORY") {
                        value::Exc::new("MemoryError", format!("CUDA out of memory: {e}"))
                    } else {
                        self.gpu_failure(value::Exc::new("RuntimeError", e))
                    }
                })
            }
            None => tensor::Tensor::try_empty(shape, dtype, device)
                .map_err(|(kind, m)| value::Exc::new(kind, m)),
        }
    }

    pub fn outputs_len(&self) -> usize {
        self.outputs.len()
    }

    pub fn truncate_outputs(&mut self, len: usize) {
        self.outputs.truncate(len);
    }

    /// Hand an output to the live sink when one listens and no measurement
    /// is running (what a measured function prints stays with the cell's
    /// result, where `%%timeit` can drop it); otherwise keep it.
    fn push_live(&mut self, o: Output) {
        self.flush_host_stream();
        if self.measuring == 0 {
            if let Some(sink) = self.on_output.as_mut() {
                sink(&o);
                return;
            }
        }
        self.outputs.push(o);
    }

    /// Outputs held back earlier (a quiet stretch's), handed on now as if
    /// they had just been made.
    pub fn replay_outputs(&mut self, outs: Vec<Output>) {
        for o in outs {
            self.push_live(o);
        }
    }

    pub fn clear_output(&mut self, wait: bool) {
        self.push_live(Output::ClearOutput { wait });
    }

    /// Show a MIME bundle (`text/plain` should be among the entries).
    pub fn display(&mut self, data: Vec<(String, String)>) {
        self.push_live(Output::Display { data });
    }

    /// Report progress of a long operation to the front end, if it listens.
    pub fn progress(&mut self, label: &str, done: usize, total: usize) {
        if let Some(f) = self.on_progress.as_mut() {
            f(&Progress {
                label: label.to_string(),
                done,
                total,
            });
        }
    }

    /// Text Python wrote to `sys.stdout`/`sys.stderr`: passed on a line at
    /// a time (as `print` writes its text and its end separately), the
    /// rest when something else is output or the cell ends.
    pub fn host_write(&mut self, name: &str, text: &str) {
        if self.pending_stream.as_ref().is_some_and(|(n, _)| n != name) {
            self.flush_host_stream();
        }
        let (_, buf) = self
            .pending_stream
            .get_or_insert_with(|| (name.to_string(), String::new()));
        buf.push_str(text);
        if let Some(i) = buf.rfind('\n') {
            let rest = buf.split_off(i + 1);
            let line = std::mem::take(buf);
            // Out of the way while the line goes out (a live sink flushes
            // what is pending first).
            self.pending_stream = None;
            self.emit_stream_now(name, &line);
            if !rest.is_empty() {
                self.pending_stream = Some((name.to_string(), rest));
            }
        }
    }

    pub fn flush_host_stream(&mut self) {
        if let Some((name, text)) = self.pending_stream.take() {
            if !text.is_empty() {
                self.emit_stream_now(&name, &text);
            }
        }
    }

    pub fn emit_stream(&mut self, name: &str, text: &str) {
        self.flush_host_stream();
        self.emit_stream_now(name, text);
    }

    fn emit_stream_now(&mut self, name: &str, text: &str) {
        if self.measuring == 0 && self.on_output.is_some() {
            self.push_live(Output::Stream {
                name: name.into(),
                text: text.into(),
            });
            return;
        }
        if let Some(Output::Stream { name: n, text: t }) = self.outputs.last_mut() {
            if n == name {
                t.push_str(text);
                return;
            }
        }
        self.outputs.push(Output::Stream {
            name: name.into(),
            text: text.into(),
        });
    }

    pub fn run_parsed(&mut self, file: &Rc<SourceFile>) -> R<()> {
        let stmts = tilebook_frontend::parse::parse_cell(file).map_err(|d| Exc {
            kind: d.kind.clone(),
            message: d.message.clone(),
            span: d.span.clone(),
            rendered: Some(d.render(self.color)),
        })?;
        let v = self.run_python(file, &stmts)?;
        if !matches!(v, Val::None) {
            self.outputs.push(Output::Result {
                data: vec![("text/plain".into(), v.repr())],
            });
        }
        Ok(())
    }

    /// Run a code string (a magic's argument, `help`'s expression) and give
    /// the value of its final expression.
    pub fn run_code(&mut self, code: &str) -> R<Val> {
        let file = SourceFile::new("<magic>", code);
        let stmts = tilebook_frontend::parse::parse_cell(&file)
            .map_err(|d| Exc::new(&d.kind, d.message.clone()))?;
        self.run_python(&file, &stmts)
    }

    /// A global's value (for tests and front ends).
    pub fn get_global(&mut self, name: &str) -> Option<Val> {
        self.host_global(name)
    }
}

#[cfg(test)]
mod registry_docs {
    use crate::registry::Entry;

    fn undocumented<F>(table: &[Entry<F>]) -> Vec<&'static str> {
        table
            .iter()
            .filter(|e| e.doc.trim().is_empty())
            .map(|e| e.name)
            .collect()
    }

    /// `help()` and completion read `doc`: every entry of every table has one.
    #[test]
    fn every_entry_has_a_doc() {
        let mut missing = vec![];
        for t in [
            crate::builtins::TABLE,
            crate::distributed::TABLE,
            crate::torch::TABLE,
            crate::cuda_events::TABLE,
            crate::reference::TABLE,
            crate::float_class::TABLE,
            crate::triton::TABLE,
            crate::docs::TABLE,
        ] {
            missing.extend(undocumented(t));
        }
        missing.extend(undocumented(crate::tensor_methods::METHODS));
        missing.extend(undocumented(crate::float_class::METHODS));
        missing.extend(undocumented(crate::clamp_ops::METHODS));
        assert!(missing.is_empty(), "entries without a doc: {missing:?}");
    }
}
