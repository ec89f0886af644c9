//! The session: the one engine under the REPL, `tilebook run` and the
//! Jupyter kernel.
//!
//! A `Session` is the host bindings' `Engine` (the VM, the namespace that
//! persists across cells, the kernels runtime) plus what makes it a
//! notebook: `run_cell` parses a cell, runs its statements, displays the
//! value of a final expression (as IPython does), and returns everything
//! the cell produced as `Output` values (streams, displays, errors with
//! rendered carets, the timing footer). Nothing panics across this
//! boundary: a panic inside evaluation becomes an error with a bug-report
//! hint and the session lives on.
//!
//! Modules: `magics` (line and cell magics), `complete` (completion),
//! `perf` and `plot` (`Benchmark`, `perf_report`, tables and plots),
//! `pictures` (a trace's visiting order and masks), `timing` (the footer).
//! What host code calls of these it reaches through the engine's
//! `Registry`, registered in `Session::from_engine`.

// Diagnostics and exceptions are large values on the cold path; boxing
// every `Err` would add noise for no measurable gain.
#![allow(clippy::result_large_err)]

pub mod complete;
mod heatmap;
mod magics;
pub mod perf;
mod pictures;
pub mod plot;
mod sweep;
pub mod table;
mod timing;

pub use tilebook_host::{
    builtins, device_ops, docs, format, interp, members, methods, ops, quiet_expected_panics,
    tensor_lib, torch, vm, CellResult, Engine, Output, OutputSink, Progress, ProgressSink,
    CELL_STACK_BYTES,
};
pub use tilebook_kernels::{
    autotune, bench, disk_cache, gpu_fault, kernels, tensor, trace, value, Backend, Host,
    Interrupt, Runtime,
};

use magics::Magics;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use tilebook_frontend::{Diagnostic, SourceFile};
use tilebook_kernels::gpu_fault::GpuFault;
use value::{Exc, Val};

/// A notebook session: an `Engine` with cells, magics, sweeps and pictures.
/// It derefs to the engine (and through it to the kernels runtime).
pub struct Session {
    engine: Engine,
}

impl std::ops::Deref for Session {
    type Target = Engine;
    fn deref(&self) -> &Engine {
        &self.engine
    }
}

impl std::ops::DerefMut for Session {
    fn deref_mut(&mut self) -> &mut Engine {
        &mut self.engine
    }
}

impl Default for Session {
    fn default() -> Self {
        Session::new()
    }
}

impl Session {
    /// A session on the CPU backend.
    pub fn new() -> Session {
        Session::from_engine(Engine::new())
    }

    /// A session on `device`: `cpu`, `cuda` (an error when no GPU can be used),
    /// or `auto` (the GPU when there is one, else the CPU backend).
    pub fn with_device(device: &str) -> Result<Session, String> {
        Engine::with_device(device).map(Session::from_engine)
    }

    /// A session on `device` (as `with_device`) that opens the GPU only when
    /// the first cell runs, so a REPL starts without waiting for CUDA.
    pub fn lazy(device: &str) -> Result<Session, String> {
        Engine::lazy(device).map(Session::from_engine)
    }

    /// Register what host code reaches of this layer: `%magic` lines, the
    /// benchmark sweep, and the methods of its objects.
    pub fn from_engine(mut engine: Engine) -> Session {
        let x = &mut engine.registry;
        x.magic = Some(magics::magic);
        x.native(
            "triton.testing.perf_report",
            |_, _, a| perf::perf_report(&a),
            "triton.testing.perf_report(benchmarks)\nDecorator: turns fn(x, provider, ...) into a benchmark with .run(show_plots, print_data, save_path).\n",
        );
        x.native(
            "triton.testing.Benchmark",
            |_, _, a| perf::benchmark(&a),
            "triton.testing.Benchmark(x_names, x_vals, line_arg, line_vals, line_names, styles, ylabel, plot_name, args, x_log=False, y_log=False)\nDescribes a sweep for perf_report: one line per line_vals entry, one point per x_vals entry.\n",
        );
        x.native(
            "tilebook.heatmap",
            |s, _, a| heatmap::heatmap(s, &a),
            "tilebook.heatmap(tensor, title='', values=False)\nDraw a tensor of one or two dimensions as a grid of cells coloured by value\n(light = smallest, dark = largest; values=True writes them in big cells).\n",
        );
        x.methods("triton.testing.perf_report", perf::report_method, &[]);
        x.methods("Mark", perf::mark_method, &["run"]);
        x.methods("Trace", pictures::method, &["visiting_order", "mask_view"]);
        Session { engine }
    }

    /// Open the device a lazy session was made for.
    fn open_pending_device(&mut self) {
        let Some(d) = self.pending_device.take() else {
            return;
        };
        match tilebook_cuda::Gpu::open() {
            Ok(g) => self.backend = Backend::Cuda(Rc::new(g)),
            Err(e) if d == "cuda" => {
                self.emit_stream(
                    "stderr",
                    &format!("tilebook: --device cuda: {e}; kernels run on the CPU backend\n"),
                );
            }
            Err(_) => {}
        }
    }

    /// Run one cell; `name` labels it in messages (`cell [3]`, a path).
    pub fn run_cell_named(&mut self, text: &str, name: &str) -> CellResult {
        // A cell magic's line is blanked so that the body keeps its line numbers.
        let (body, cell_magic) = magics::split_cell_magic(text);
        let file = SourceFile::new(name, body);
        self.run_guarded(|s| match &cell_magic {
            Some((magic, args)) => s.cell_magic(magic, args, &file),
            None => s.run_parsed(&file),
        })
    }

    /// Call `f` (a `kernel[grid]` launcher, any callable) with session
    /// values as a cell that did so would: the same outputs, timing footer
    /// and errors (the Rust API's `Kernel::launch`).
    pub fn call_as_cell(
        &mut self,
        f: &Val,
        args: Vec<Val>,
        kwargs: Vec<(String, Val)>,
    ) -> CellResult {
        self.run_guarded(|s| s.in_vm(|e| e.call(f, args, kwargs)).map(|_| ()))
    }

    /// Run `body` as a cell runs: outputs cleared first, a panic caught and
    /// reported, a GPU fault handled, the timing footer after.
    fn run_guarded(&mut self, body: impl FnOnce(&mut Session) -> Result<(), Exc>) -> CellResult {
        self.outputs.clear();
        // An interrupt that arrived between cells is not for this one.
        self.interrupt.store(false, Ordering::Relaxed);
        self.open_pending_device();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(self)));
        self.flush_host_stream();
        if let Some(notes) = self.disk.as_ref().map(|d| d.take_notes()) {
            for n in notes {
                self.emit_stream("stderr", &format!("{n}\n"));
            }
        }
        let ok = match result {
            Ok(Ok(())) => true,
            Ok(Err(e)) => {
                // A fault that surfaced in a call without its own check.
                let e = self.gpu_failure(e);
                self.push_error(&e);
                false
            }
            Err(panic) => {
                let msg = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "unknown panic".into());
                let e = if msg == tensor::LOST || msg.starts_with(tensor::READ_BACK_FAILED) {
                    // Reading a tensor whose GPU copy is gone, or a fault
                    // surfacing while reading one back.
                    let e = Exc::new("RuntimeError", msg);
                    self.gpu_failure(e)
                } else {
                    Exc::new(
                        "InternalError",
                        format!("tilebook hit an internal error ({msg}); the session is still usable. Please report this with the cell that caused it."),
                    )
                };
                self.push_error(&e);
                false
            }
        };
        self.measuring = 0;
        // After an error the device may be unusable: the log is dropped
        // unread (its events are leaked if their context was lost).
        let footer = if ok {
            timing::footer(&mut self.rt)
        } else {
            self.launch_log.clear();
            self.timed_launches = 0;
            None
        };
        if let Some(text) = footer {
            self.outputs.push(Output::Display {
                data: vec![("text/plain".into(), text)],
            });
        }
        CellResult {
            outputs: std::mem::take(&mut self.outputs),
            ok,
        }
    }

    pub fn run_cell(&mut self, text: &str) -> CellResult {
        self.cell_count += 1;
        let name = format!("cell [{}]", self.cell_count);
        self.run_cell_named(text, &name)
    }

    fn push_error(&mut self, e: &Exc) {
        let rendered = match (&e.rendered, &e.span) {
            (Some(r), _) => r.clone(),
            (None, Some(span)) => {
                Diagnostic::new(&e.kind, e.message.clone(), Some(span.clone())).render(self.color)
            }
            (None, None) => format!(
                "{}\n",
                tilebook_frontend::diag::headline(&e.kind, &e.message)
            ),
        };
        let line = e.span.as_ref().map(|s| s.line());
        self.outputs.push(Output::Error {
            kind: e.kind.clone(),
            message: e.message.clone(),
            line,
            rendered,
        });
    }
}
