//! The kernels runtime: what happens between `kernel[grid](args)` and the
//! result — argument binding and Triton's specialization, the compile cache
//! and the disk cache, launches on the CPU backend or the GPU, the CPU
//! cross-check of GPU launches, traced launches, autotuning and the
//! measurement loop of `do_bench`, the log behind the timing footer, and
//! recovery from GPU faults.
//!
//! It sits on the tensor library and below the host bindings: it knows the
//! library's values (`value::Val`) but not the Python VM. What it needs
//! from the layer above — calling a host function such as a grid lambda,
//! writing to the cell's streams, showing progress — it asks through the
//! `Host` trait, which the session implements; its own state is the
//! `Runtime` a session holds.

// Exceptions are large values on the cold path; boxing every `Err` would
// add noise for no measurable gain.
#![allow(clippy::result_large_err)]

pub mod autotune;
pub mod bench;
pub mod devices;
pub mod disk_cache;
pub mod gpu_fault;
pub mod kernels;
pub mod timing;
pub mod trace;
pub mod value;

pub use tilebook_tensor as tensor;

use std::any::Any;
use std::ops::DerefMut;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use value::{Exc, Scope, Val, R};

/// `kernel[grid](args..., **kwargs)`: through the autotuner when the kernel
/// has one, else straight to its specialization.
pub fn launch(
    s: &mut dyn Host,
    k: &Rc<kernels::KernelObj>,
    grid: &Val,
    args: Vec<Val>,
    kwargs: Vec<(String, Val)>,
) -> R<Val> {
    if let Some(hook) = s.launch_hook.clone() {
        return hooked_launch(s, &hook, k, grid, args, kwargs);
    }
    launch_unhooked(s, k, grid, args, kwargs)
}

/// A launch with a profiler's hook around it: `hook(kernel, grid, args,
/// phase)` with the arguments by name, `phase` "enter" before and "exit"
/// after (also when the launch fails).
fn hooked_launch(
    s: &mut dyn Host,
    hook: &Val,
    k: &Rc<kernels::KernelObj>,
    grid: &Val,
    args: Vec<Val>,
    kwargs: Vec<(String, Val)>,
) -> R<Val> {
    let names: Vec<String> = k
        .jit
        .borrow()
        .params
        .iter()
        .map(|p| p.name.clone())
        .collect();
    let mut named: Vec<(Val, Val)> = names
        .iter()
        .zip(&args)
        .map(|(n, v)| (Val::str(n), v.clone()))
        .collect();
    named.extend(kwargs.iter().map(|(n, v)| (Val::str(n), v.clone())));
    let dict = Val::Dict(Rc::new(std::cell::RefCell::new(named)));
    let call = |s: &mut dyn Host, phase: &str| {
        s.call(
            hook,
            vec![
                Val::Kernel(k.clone()),
                grid.clone(),
                dict.clone(),
                Val::str(phase),
            ],
            vec![],
        )
    };
    call(s, "enter")?;
    let out = launch_unhooked(s, k, grid, args, kwargs);
    call(s, "exit")?;
    out
}

/// A launch the profiler's hook does not see (what `launch` does after the
/// hook, and the whole launch of the stdlib kernels behind torch
/// operations: the user launched none of them).
pub fn launch_unhooked(
    s: &mut dyn Host,
    k: &Rc<kernels::KernelObj>,
    grid: &Val,
    args: Vec<Val>,
    kwargs: Vec<(String, Val)>,
) -> R<Val> {
    if k.autotune.borrow().is_some() {
        return autotune::launch_tuned(s, k, grid, args, kwargs);
    }
    kernels::launch_untuned(s, k, grid, args, kwargs)
}

/// Which backend runs kernels.
#[derive(Clone)]
pub enum Backend {
    Cpu,
    Cuda(Rc<tilebook_cuda::Gpu>),
}

/// What the runtime asks of the layer above it (the session, which runs
/// host code on the VM and owns the cell's outputs). The runtime's own
/// state is reached through `Deref`.
pub trait Host: DerefMut<Target = Runtime> + Any {
    /// Call a host value (a grid function, a benchmarked lambda, a method).
    fn call(&mut self, f: &Val, args: Vec<Val>, kwargs: Vec<(String, Val)>) -> R<Val>;
    /// A method of a value (`t.zero_()` of autotuning's `reset_to_zero`).
    fn call_method(&mut self, recv: &Val, name: &str, args: Vec<Val>) -> R<Val>;
    /// Text for the cell's `stdout` or `stderr`.
    fn emit_stream(&mut self, name: &str, text: &str);
    /// Show a MIME bundle.
    fn display(&mut self, data: Vec<(String, String)>);
    /// Progress of a long operation (`done` of `total`).
    fn progress(&mut self, label: &str, done: usize, total: usize);
    /// Say once that kernels run on the CPU backend.
    fn announce_backend(&mut self);
    /// The namespace kernels without one of their own read globals from.
    fn globals(&self) -> Scope;
    /// The user's variables (to name tensors lost with a GPU context).
    fn global_values(&mut self) -> Vec<(String, Val)>;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// The kernels runtime's state in a session.
pub struct Runtime {
    /// The backend; on a GPU, the context of the device the session opened
    /// (cuda:0).
    pub backend: Backend,
    /// Contexts of the other GPUs (`cuda:1`, ...), opened on first use
    /// (`devices.rs`).
    pub other_gpus: Vec<Rc<tilebook_cuda::Gpu>>,
    /// `torch.cuda.current_device()`.
    pub current_device: u32,
    /// How many GPUs autotuning and `Benchmark.run` spread their
    /// measurements over (`TILEBOOK_BENCH_DEVICES`, `%config
    /// bench_devices`): 0 means every GPU of the backend's model, 1 only
    /// the current device.
    pub bench_devices: u32,
    /// How `do_bench` answers inside a `Benchmark.run` spread over GPUs
    /// (`bench::SweepBench`); `None` outside one.
    pub sweep: Option<bench::SweepBench>,
    /// While a spread sweep point runs on another GPU: tensors asked for on
    /// the sweep's own device (`.0`) go to the point's (`.1`), so code
    /// written for `cuda:0` runs there unchanged.
    pub device_remap: Option<(u32, u32)>,
    /// Run `Benchmark.run`'s points in the spread way even with one device
    /// (`TILEBOOK_SWEEP_TWO_PASS=1`): how that path is tested without GPUs.
    pub sweep_two_pass: bool,
    /// (device, owner) pairs with peer access enabled.
    pub peer_enabled: Vec<(u32, u32)>,
    /// NCCL communicators made so far, by the devices they span.
    pub communicators: Vec<tilebook_cuda::Communicator>,
    pub interrupt: Arc<Interrupt>,
    pub total_compiles: usize,
    /// Run every GPU launch on the CPU backend too and compare (`TILEBOOK_CHECK_GPU=1`).
    pub check_gpu: bool,
    /// GPU checked mode (`TILEBOOK_CHECK_BOUNDS=1`, `%config check_bounds`):
    /// GPU kernels check every access against its tensor and the first
    /// violation stops the launch with the kernel line (`kernels/checked.rs`).
    pub check_bounds: bool,
    /// The record checked GPU launches write into, with the generation and
    /// device of the context it belongs to (allocated on first use).
    pub check_record: Option<(u32, u32, tilebook_cuda::DeviceBuffer)>,
    /// Sixteen zero bytes on a device (with its context's generation and
    /// device): the tensor a bulk-copy map reads where the launch's tensor
    /// has no rows or columns (`kernels/tensor_maps.rs`).
    pub zero_block: Option<(u32, u32, tilebook_cuda::DeviceBuffer)>,
    /// A checked launch inside a measurement whose record is read when the
    /// measurement ends (reading it per launch would be timed too).
    pub(crate) check_pending: Option<kernels::PendingCheck>,
    /// Without a GPU, also compile every kernel to PTX (`TILEBOOK_CHECK_PTX=1`).
    pub check_ptx: bool,
    /// A 256 MB device buffer per GPU (by ordinal) overwritten between
    /// timed runs to flush the L2.
    pub l2_flush: Vec<(u32, tilebook_cuda::DeviceBuffer)>,
    /// GPU kernels launched since the last synchronisation (the suspects
    /// when a fault surfaces; see `gpu_fault`).
    pub launched_since_sync: Vec<String>,
    /// Log launches for the per-kernel timing footer (`%timing on|off`).
    pub timing: bool,
    /// Nesting depth of measurement loops (their launches are not logged).
    pub measuring: usize,
    /// The current cell's launches per kernel, for the footer.
    pub launch_log: Vec<timing::KernelLaunches>,
    /// How many of them carry a time (capped per cell).
    pub timed_launches: usize,
    /// A profiler's hook called around every `kernel[grid](...)` launch
    /// (`triton.profiler.start(hook="triton")`); `None` costs nothing.
    pub launch_hook: Option<Val>,
    /// Launches traced with `tilebook.trace` (their objects refer to them by index).
    pub traces: Vec<Rc<trace::TraceData>>,
    /// Launch options a launch does not give (`%config num_warps=8`).
    pub compile_defaults: tilebook_frontend::kernel::CompileOptions,
    /// Compiled kernels and tuning results kept across sessions (`None`:
    /// off, as `TILEBOOK_CACHE=off` asks).
    pub disk: Option<disk_cache::DiskCache>,
}

impl Default for Runtime {
    fn default() -> Self {
        Runtime::new()
    }
}

impl Runtime {
    pub fn new() -> Runtime {
        Runtime {
            backend: Backend::Cpu,
            other_gpus: vec![],
            current_device: 0,
            peer_enabled: vec![],
            bench_devices: std::env::var("TILEBOOK_BENCH_DEVICES")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0),
            sweep: None,
            device_remap: None,
            sweep_two_pass: std::env::var("TILEBOOK_SWEEP_TWO_PASS").is_ok_and(|v| v == "1"),
            communicators: vec![],
            interrupt: Arc::new(Interrupt::default()),
            total_compiles: 0,
            check_gpu: std::env::var("TILEBOOK_CHECK_GPU").is_ok_and(|v| v == "1"),
            check_bounds: std::env::var("TILEBOOK_CHECK_BOUNDS").is_ok_and(|v| v == "1"),
            check_record: None,
            zero_block: None,
            check_pending: None,
            check_ptx: std::env::var("TILEBOOK_CHECK_PTX").is_ok_and(|v| v == "1"),
            l2_flush: vec![],
            launched_since_sync: vec![],
            timing: true,
            measuring: 0,
            launch_log: vec![],
            timed_launches: 0,
            launch_hook: None,
            traces: vec![],
            compile_defaults: Default::default(),
            disk: disk_cache::DiskCache::from_env(),
        }
    }

    /// `KeyboardInterrupt` when the interrupt flag is set (clearing it).
    pub fn check_interrupt(&self) -> R<()> {
        if self.interrupt.swap(false, Ordering::Relaxed) {
            return Err(Exc::new("KeyboardInterrupt", ""));
        }
        Ok(())
    }

    pub fn backend_name(&self) -> &'static str {
        match self.backend {
            Backend::Cpu => "cpu",
            Backend::Cuda(_) => "cuda",
        }
    }
}

/// A way to wake a running VM so that it notices the interrupt flag (the
/// host bindings attach one that injects `KeyboardInterrupt`).
pub type Waker = Box<dyn Fn(&Arc<AtomicBool>) + Send>;

/// The interrupt flag front ends set (Ctrl-C, Jupyter's
/// `interrupt_request`). Setting it also wakes the attached VM, which raises
/// `KeyboardInterrupt` at its next instruction; native loops (benchmarks,
/// launches) poll the flag themselves.
#[derive(Default)]
pub struct Interrupt {
    flag: Arc<AtomicBool>,
    waker: Mutex<Option<Waker>>,
}

impl Interrupt {
    pub fn store(&self, value: bool, order: Ordering) {
        self.flag.store(value, order);
        if !value {
            return;
        }
        if let Ok(w) = self.waker.lock() {
            if let Some(w) = w.as_ref() {
                w(&self.flag);
            }
        }
    }

    pub fn swap(&self, value: bool, order: Ordering) -> bool {
        self.flag.swap(value, order)
    }

    pub fn load(&self, order: Ordering) -> bool {
        self.flag.load(order)
    }

    /// The flag itself (the CPU backend polls it between programs).
    pub fn flag(&self) -> &AtomicBool {
        &self.flag
    }

    pub fn attach(&self, waker: Waker) {
        if let Ok(mut g) = self.waker.lock() {
            *g = Some(waker);
        }
    }
}
