//! `@triton.jit` kernels in the session: specialization, the compile cache,
//! and launches (`kernel[grid](args...)`) on the CPU backend.
//!
//! A launch binds arguments to parameters, derives Triton's specialization
//! (constexpr values, dtypes, integers equal to 1 or divisible by 16, 16-byte
//! aligned pointers), looks the specialization up in the kernel's cache, and
//! otherwise lowers, optimises, verifies and compiles it. Launch errors name
//! the kernel line, the program id and the offending offset.

use crate::gpu_fault::GpuFault;
use crate::value::R;
use crate::value::{Exc, Val};
use crate::{Backend, Host};
use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;
use tilebook_cpu::{CpuOptions, LaunchError};
mod checked;
mod on_gpu;
pub(crate) use on_gpu::{finish_pending_check, PendingCheck};
use on_gpu::{launch_gpus, launch_on};
mod object;
mod ptx_files;
use ptx_files::{dump_ptx, override_ptx};
mod specialize;
use object::compiled_value;
pub use object::{warmup, KernelRef};
mod stored;
mod tensor_maps;
pub use specialize::const_of;
use specialize::SessionGlobals;
pub(crate) use specialize::{param_list, prepare, source_key, Prepared};
use tilebook_frontend::kernel::{lower_kernel, JitFunction};
use tilebook_frontend::{Diagnostic, Span};
use tilebook_tir::DType;

pub use crate::value::kernel::{Compiled, KernelObj, Namespace};

/// `kernel[grid](args..., **kwargs)` of a kernel without `@triton.autotune`
/// (`crate::launch` decides).
pub fn launch_untuned(
    s: &mut dyn Host,
    k: &Rc<KernelObj>,
    grid: &Val,
    args: Vec<Val>,
    kwargs: Vec<(String, Val)>,
) -> R<Val> {
    let p = prepare(s, k, grid, args, kwargs)?;
    let c = compiled(s, k, &p)?;
    run(s, k, &p, &c)
}

/// The compiled code of a prepared launch: from the kernel's cache, or
/// compiled now (and cached).
pub(crate) fn compiled(s: &mut dyn Host, k: &Rc<KernelObj>, p: &Prepared) -> R<Rc<Compiled>> {
    // The same key object as the last launch's: its code, without a lookup.
    let memo = k.key_memo.borrow().as_ref().and_then(|m| {
        Rc::ptr_eq(&m.key, &p.key)
            .then(|| m.compiled.clone())
            .flatten()
    });
    if let Some(c) = memo {
        *k.last.borrow_mut() = Some(c.clone());
        return Ok(c);
    }
    let cached = k.cache.borrow().get(&*p.key).cloned();
    let c = match cached {
        Some(c) => c,
        None => {
            let jit = k.jit.borrow().clone();
            let (front, built) = match stored::load(s, p) {
                Some((front, gk)) => {
                    let built = match (&s.backend, gk) {
                        (Backend::Cuda(g), Some((gk, cubin))) => {
                            Some(load_module(&g.loader(), gk, cubin))
                        }
                        _ => None,
                    };
                    (front, built)
                }
                None => (front_end(s, &jit, p)?, None),
            };
            let c = Rc::new(back_end(s, &jit, p, front, built)?);
            remember(s, k, &jit, p, c.clone());
            c
        }
    };
    if let Some(m) = k.key_memo.borrow_mut().as_mut() {
        if Rc::ptr_eq(&m.key, &p.key) {
            m.compiled = Some(c.clone());
        }
    }
    *k.last.borrow_mut() = Some(c.clone());
    Ok(c)
}

/// Compile every prepared launch not in the cache: front ends in turn, GPU
/// code generation in parallel on all cores, module loads in turn. Returns
/// each launch's code or why it failed (a config that does not fit is
/// skipped by the autotuner, not fatal).
pub(crate) fn compile_all(
    s: &mut dyn Host,
    k: &Rc<KernelObj>,
    preps: &[Prepared],
) -> Vec<R<Rc<Compiled>>> {
    let jit = k.jit.borrow().clone();
    let mut out: Vec<Option<R<Rc<Compiled>>>> = preps
        .iter()
        .map(|p| {
            let hit = k.cache.borrow().get(&*p.key).cloned().map(Ok);
            hit.or_else(|| k.failed.borrow().get(&*p.key).cloned().map(Err))
        })
        .collect();
    // Fronts with, for disk hits on a GPU, the stored code to load.
    let mut fronts = vec![];
    for (i, p) in preps.iter().enumerate() {
        if out[i].is_none() {
            if let Some((f, gk)) = stored::load(s, p) {
                fronts.push((i, f, gk));
                continue;
            }
            match front_end(s, &jit, p) {
                Ok(f) => fronts.push((i, f, None)),
                Err(e) => out[i] = Some(Err(e)),
            }
        }
    }
    let gpu = match &s.backend {
        Backend::Cuda(g) => Some((g.arch.clone(), g.loader())),
        Backend::Cpu => None,
    };
    let ptx: Vec<Option<GpuBuilt>> = match &gpu {
        Some((arch, loader)) => std::thread::scope(|scope| {
            let handles: Vec<_> = fronts
                .iter_mut()
                .map(|(i, f, stored)| {
                    let o = gpu_options(arch, &preps[*i]);
                    let kernel = &f.kernel;
                    let stored = stored.take();
                    scope.spawn(move || match stored {
                        Some((gk, cubin)) => load_module(loader, gk, cubin),
                        None => build(loader, kernel, &o),
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    Some(
                        h.join()
                            .unwrap_or_else(|_| Err("the code generator panicked".into())),
                    )
                })
                .collect()
        }),
        None => fronts.iter().map(|_| None).collect(),
    };
    for ((i, f, _), gk) in fronts.into_iter().zip(ptx) {
        let r = back_end(s, &jit, &preps[i], f, gk).map(Rc::new);
        if let Ok(c) = &r {
            remember(s, k, &jit, &preps[i], c.clone());
        }
        out[i] = Some(r);
    }
    for (p, r) in preps.iter().zip(&out) {
        if let Some(Err(e)) = r {
            if e.kind != "KeyboardInterrupt" {
                k.failed.borrow_mut().insert(p.key.to_string(), e.clone());
            }
        }
    }
    out.into_iter()
        .map(|r| r.unwrap_or_else(|| Err(Exc::new("InternalError", "not compiled"))))
        .collect()
}

fn remember(s: &mut dyn Host, k: &Rc<KernelObj>, jit: &JitFunction, p: &Prepared, c: Rc<Compiled>) {
    if std::env::var("TILEBOOK_TIME_STAGES").is_ok_and(|v| v == "1") {
        let laps: Vec<String> = c
            .stages
            .iter()
            .map(|(n, t)| format!("{n} {:.1} ms", t * 1e3))
            .collect();
        eprintln!(
            "[tilebook] compiled {} in {:.1} ms: {}",
            jit.name,
            c.compile_seconds * 1e3,
            laps.join(", ")
        );
    }
    k.cache.borrow_mut().insert(p.key.to_string(), c);
    k.compiles.set(k.compiles.get() + 1);
    s.total_compiles += 1;
}

/// Launch prepared arguments with compiled code.
pub(crate) fn run(
    s: &mut dyn Host,
    k: &Rc<KernelObj>,
    p: &Prepared,
    compiled: &Compiled,
) -> R<Val> {
    run_with(s, k, p, compiled, &p.args)
}

/// `run` with other arguments of the same specialization (copies of the
/// tensors on another GPU, for autotuning spread over devices).
pub(crate) fn run_with(
    s: &mut dyn Host,
    k: &Rc<KernelObj>,
    p: &Prepared,
    compiled: &Compiled,
    args: &[KernelArg],
) -> R<Val> {
    let jit = k.jit.borrow().clone();
    let grid = p.grid;
    let gpu = launch_gpus(s, k, args)?;
    s.announce_backend();
    let total = grid.iter().map(|&g| g as u64).product::<u64>();
    if total == 0 {
        return Ok(compiled_value(k, compiled));
    }
    // Launches inside measurements (autotuning's included) leave the compile
    // time for the cell's own first launch to report.
    let compile_s = if s.logging_launches() && compiled.fresh.replace(false) {
        compiled.compile_seconds
    } else {
        0.0
    };
    // The CPU backend's launches are timed by the wall clock.
    let started = gpu.is_none().then(std::time::Instant::now);
    // The footer's timing events are the backend device's.
    let on_primary = gpu.as_ref().is_none_or(|g| g.is_primary);
    let mark = if on_primary { s.launch_mark() } else { None };
    let r = launch_on(s, &jit, compiled, &gpu, grid, args);
    if r.is_ok() {
        let time = match (mark, &gpu) {
            (Some(a), Some(g)) => g.run_on.mark().ok().map(|b| crate::timing::Time::Gpu(a, b)),
            (_, None) => {
                started.map(|t| crate::timing::Time::Wall(t.elapsed().as_secs_f64() * 1e3))
            }
            _ => None,
        };
        s.log_launch(&jit.name, grid, compile_s, compiled.from_disk, time);
    }
    // As Triton's, a launch returns the compiled kernel.
    r.map(|_| compiled_value(k, compiled))
}

/// Whether a CPU kernel accesses memory through pointers of unknown origin
/// (made from integers, e.g. addresses loaded from a tensor).
fn follows_loaded_addresses(cpu: &tilebook_cpu::CpuKernel) -> bool {
    cpu.sites
        .iter()
        .any(|s| s.param.is_none() && matches!(s.what, "load" | "store" | "atomic"))
}

/// A launch argument as the host holds it.
#[derive(Clone)]
pub(crate) enum KernelArg {
    Tensor(Rc<crate::tensor::Tensor>),
    Int(i64, DType),
    Float(f32),
}

/// GPU code generated and loaded on a worker thread: the kernel, its loaded
/// function (or why the driver refused it), and the seconds the load took.
type GpuBuilt = Result<
    (
        tilebook_nvptx::GpuKernel,
        Result<tilebook_cuda::GpuFunction, String>,
        f64,
    ),
    String,
>;

/// The GPU backend's options for a launch's compile options.
fn gpu_options(arch: &str, p: &Prepared) -> tilebook_nvptx::GpuOptions {
    let o = &p.options;
    tilebook_nvptx::GpuOptions {
        libdevice_path: o.libdevice.as_ref().map(Into::into),
        check_bounds: p.check_bounds,
        maxnreg: o.maxnreg,
        ..tilebook_nvptx::GpuOptions::new(arch, o.num_warps, o.num_stages)
    }
}

/// Generate a specialization's GPU code and load it. A kernel that spills
/// (local memory per thread, as the driver reports it) and branches around
/// masked global stores in a loop is built again with predicated stores
/// (where the stores are outside loops, as in `torch.randn`'s kernel, the
/// second build cost 150-300 ms and 2 % of its speed), which the
/// driver's register allocator handles better under pressure (the
/// 16384-column layer-norm backward on the H200: 1526 -> 1756 GB/s, 170 ->
/// 142 spilled words; a kernel that does not spill loses about 6 % with
/// them, bench/NOTES.md sessions 37-38). The second build is kept when it
/// spills no more than the first (at 4096 columns and 16 warps it spilled
/// 10 words against 6, and ran at 1727 GB/s against 2153).
/// `TILEBOOK_PRED_STORES` set to 0 or 1 fixes the form.
pub(super) fn build(
    loader: &tilebook_cuda::Loader,
    kernel: &tilebook_tir::Kernel,
    o: &tilebook_nvptx::GpuOptions,
) -> GpuBuilt {
    let first = load_module(loader, tilebook_nvptx::compile(kernel, o)?, None)?;
    let spilled = first.1.as_ref().map_or(0, |f| f.local_bytes);
    if spilled == 0
        || !first.0.branched_stores
        || std::env::var_os("TILEBOOK_PRED_STORES").is_some()
    {
        return Ok(first);
    }
    let o = tilebook_nvptx::GpuOptions {
        predicated_stores: true,
        ..o.clone()
    };
    match tilebook_nvptx::compile(kernel, &o).and_then(|gk| load_module(loader, gk, None)) {
        Ok((mut gk, Ok(f), second_s)) if f.local_bytes <= spilled => {
            let rebuild: f64 = gk.stage_seconds.iter().map(|(_, t)| t).sum();
            gk.stage_seconds = first.0.stage_seconds;
            gk.stage_seconds
                .push(("rebuild with predicated stores", rebuild + second_s));
            Ok((gk, Ok(f), first.2))
        }
        _ => Ok(first),
    }
}

/// Load generated code into the GPU context (the driver's JIT runs here).
/// With `cubin` (from the disk cache, made by this GPU's driver), load it and
/// skip the JIT; if the driver refuses it, compile the PTX as usual.
fn load_module(
    loader: &tilebook_cuda::Loader,
    gk: tilebook_nvptx::GpuKernel,
    cubin: Option<Vec<u8>>,
) -> GpuBuilt {
    let t = Instant::now();
    let mut gk = gk;
    let mut threads = 32 * gk.num_warps;
    let cubin = match override_ptx(&gk) {
        Some((ptx, n)) => {
            gk.ptx = ptx;
            threads = n.unwrap_or(threads);
            None
        }
        None => cubin,
    };
    let from_cubin = cubin.and_then(|c| {
        loader
            .load_cubin(c.into(), &gk.name, gk.shared_bytes, threads)
            .ok()
    });
    let func = from_cubin
        .map_or_else(
            || loader.load(&gk.ptx, &gk.name, gk.shared_bytes, threads),
            Ok,
        )
        .map_err(|e| match gk.ptx.find(".extern .func") {
            // Math library calls left external: no libdevice was linked.
            Some(_) if gk.ptx.contains("__nv_") => format!(
                "{e}\nThe kernel calls NVIDIA's libdevice (libdevice.* or tl.erf), which \
                 was not found: install the CUDA toolkit (nvvm/libdevice/libdevice.10.bc) \
                 or set TILEBOOK_LIBDEVICE to the file"
            ),
            _ => e,
        });
    Ok((gk, func, t.elapsed().as_secs_f64()))
}

/// A specialization through the front end: verified, optimised tile IR.
pub(crate) struct Front {
    pub(crate) kernel: tilebook_tir::Kernel,
    pub(crate) tir: String,
    pub(crate) start: Instant,
    pub(crate) clock: tilebook_tir::StageClock,
    /// What `tl.static_print` said (kept for the disk cache).
    pub(crate) static_out: String,
    /// Read from the disk cache rather than lowered now.
    pub(crate) from_disk: bool,
}

/// Lower, optimise and verify one specialization.
pub(crate) fn front_end(s: &mut dyn Host, jit: &JitFunction, p: &Prepared) -> R<Front> {
    let start = Instant::now();
    let mut clock = tilebook_tir::StageClock::new();
    let globals = SessionGlobals { ns: &p.ns };
    let (mut kernel, static_out) =
        lower_kernel(jit, &p.specs, &p.meta, &globals, &p.options).map_err(diag_exc)?;
    clock.lap("front end");
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
    clock.lap("tile ir passes");
    Ok(Front {
        kernel,
        tir,
        start,
        clock,
        static_out,
        from_disk: false,
    })
}

/// Compile for the CPU (always when no GPU is in use: it is the reference)
/// and for the GPU when one is in use, then load the module. `ptx`: the GPU
/// code when it was generated already (in parallel, by `compile_all`).
fn back_end(
    s: &mut dyn Host,
    jit: &JitFunction,
    p: &Prepared,
    front: Front,
    ptx: Option<GpuBuilt>,
) -> R<Compiled> {
    let Front {
        kernel,
        tir,
        start,
        mut clock,
        static_out,
        from_disk,
    } = front;
    let gpu = match &s.backend {
        Backend::Cuda(g) => Some(g.clone()),
        Backend::Cpu => None,
    };
    let cpu = if gpu.is_none() {
        Some(
            tilebook_cpu::compile(&kernel, &CpuOptions::default())
                .map_err(|e| Exc::new("CompilationError", format!("CPU backend: {e}")))?,
        )
    } else if s.check_gpu {
        // The reference for the GPU cross-check; a kernel of inline PTX has
        // none (the CPU backend refuses it), so it runs unchecked.
        match tilebook_cpu::compile(&kernel, &CpuOptions::default()) {
            Ok(k) => Some(k),
            Err(e) if e.contains("inline PTX") => None,
            Err(e) => return Err(Exc::new("CompilationError", format!("CPU backend: {e}"))),
        }
    } else {
        None
    };
    if cpu.is_some() {
        clock.lap("cpu codegen");
    }
    if gpu.is_none() && s.check_ptx {
        let opts = gpu_options("sm_90", p);
        let gk = tilebook_nvptx::compile(&kernel, &opts).map_err(|e| {
            Exc::new(
                "CompilationError",
                format!("GPU backend (PTX check), kernel `{}`: {e}", jit.name),
            )
        })?;
        dump_ptx(&gk);
    }
    let gpu_opts = gpu.as_ref().map(|g| gpu_options(&g.arch, p));
    let gpu = match gpu {
        None => None,
        Some(g) => {
            let codegen_error = |e: String| {
                Exc::new(
                    "CompilationError",
                    format!("GPU backend, kernel `{}`: {e}", jit.name),
                )
            };
            // Generated (and loaded) already by `compile_all` or read from
            // the disk cache, or generated and loaded now.
            let built = match ptx {
                Some(built) => built,
                None => build(&g.loader(), &kernel, &gpu_options(&g.arch, p)),
            };
            let (gk, f, load_s) = built.map_err(codegen_error)?;
            clock.laps.extend(gk.stage_seconds.iter().cloned());
            clock.laps.push(("driver jit + load", load_s));
            let f = f.map_err(|e| Exc::new("CompilationError", e))?;
            Some((gk, f))
        }
    };
    let c = Compiled {
        key: p.key.to_string(),
        signature: p.signature(jit),
        tir,
        kernel: cpu,
        gpu,
        compile_seconds: start.elapsed().as_secs_f64(),
        fresh: Cell::new(true),
        stages: clock.laps,
        from_disk,
        num_warps: p.options.num_warps,
        on_other_gpus: Default::default(),
        object: Default::default(),
        gpu_options: gpu_opts,
        plain: Default::default(),
    };
    if !from_disk {
        stored::store(s, p, &jit.name, &c, &static_out);
    }
    Ok(c)
}

pub(crate) fn run_cpu(
    jit: &JitFunction,
    c: &Compiled,
    grid: [u32; 3],
    args: &[KernelArg],
    cancel: Option<&std::sync::atomic::AtomicBool>,
) -> R<tilebook_cpu::LaunchOutput> {
    for a in args {
        if matches!(a, KernelArg::Tensor(t) if t.storage.lost_on_gpu()) {
            return Err(Exc::new("RuntimeError", crate::tensor::LOST));
        }
    }
    let mut raw = vec![];
    let mut bounds = vec![];
    let mut tensors = vec![];
    for a in args {
        match a {
            KernelArg::Tensor(t) => {
                raw.push(t.data_ptr());
                bounds.push(t.storage_bounds());
                tensors.push(Some(t.clone()));
            }
            KernelArg::Int(i, _) => {
                raw.push(*i as u64);
                bounds.push([0, 0]);
                tensors.push(None);
            }
            KernelArg::Float(f) => {
                raw.push(f.to_bits() as u64);
                bounds.push([0, 0]);
                tensors.push(None);
            }
        }
    }
    let mut allocations: Vec<(u64, u64)> = bounds
        .iter()
        .filter(|b| b[1] > 0)
        .map(|b| (b[0], b[1]))
        .collect();
    let Some(cpu) = &c.kernel else {
        return Err(Exc::new(
            "InternalError",
            format!("no CPU code was compiled for `{}`", jit.name),
        ));
    };
    // Accesses through pointers of unknown origin (made from integers) are
    // checked against every live tensor, not only the launch's.
    if follows_loaded_addresses(cpu) {
        allocations.extend(crate::tensor::live::allocations());
    }

    match cpu.launch_cancellable(grid, &raw, &bounds, allocations, cancel) {
        Ok(out) => Ok(out),
        Err(e) => Err(launch_exc(jit, c, e, &tensors)),
    }
}

fn diag_exc(d: Diagnostic) -> Exc {
    Exc {
        kind: d.kind.clone(),
        message: d.message.clone(),
        span: d.span.clone(),
        rendered: Some(d.render(false)),
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
        LaunchError::Interrupted { pid } => {
            return Exc::new(
                "KeyboardInterrupt",
                format!(
                    "`{}` stopped before program ({}, {}, {})",
                    jit.name, pid[0], pid[1], pid[2]
                ),
            )
        }
    };
    let Some(cpu) = &c.kernel else {
        return Exc::new(
            "InternalError",
            format!("launch error without CPU code in `{}`", jit.name),
        );
    };
    let info = &cpu.sites[site];
    let (line, col) = (info.loc.line, info.loc.col);
    let message = match &e {
        LaunchError::OutOfBounds { addr, .. } => {
            let base = |t: &crate::tensor::Tensor| Some(t.data_ptr());
            let access = Access {
                what: info.what,
                line,
                pid,
                param: info.param,
                elem_size: info.elem_size,
                addr: *addr,
            };
            oob_message(jit, &access, tensors, &base)
        }
        LaunchError::Interrupted { .. } => String::new(),
        LaunchError::AssertFailed { index, .. } if info.what == "assert" => {
            format!("device assertion failed in kernel `{}` at line {line}: program ({}, {}, {}), element {index}: {}", jit.name, pid[0], pid[1], pid[2], info.message)
        }
        LaunchError::AssertFailed { index, .. } => {
            format!(
                "{} in kernel `{}` at line {line}: program ({}, {}, {}), element {index}",
                info.message, jit.name, pid[0], pid[1], pid[2]
            )
        }
    };
    let kind = match (&e, info.what) {
        (LaunchError::OutOfBounds { .. }, _) | (_, "gather") => "IndexError",
        (_, "divide") => "ZeroDivisionError",
        (_, "step") => "ValueError",
        _ => "AssertionError",
    };
    kernel_line_exc(jit, kind, message, line, col, info.what)
}

/// One out-of-bounds access as a backend reported it.
pub(crate) struct Access {
    pub(crate) what: &'static str,
    pub(crate) line: u32,
    pub(crate) pid: [u32; 3],
    /// The pointer parameter the address derives from, when known.
    pub(crate) param: Option<usize>,
    pub(crate) elem_size: usize,
    pub(crate) addr: u64,
}

/// What an out-of-bounds access did, in the tensor's elements where its
/// tensor is known (`base` gives a tensor's address on the launch's device).
pub(crate) fn oob_message(
    jit: &JitFunction,
    a: &Access,
    tensors: &[Option<Rc<crate::tensor::Tensor>>],
    base: &dyn Fn(&crate::tensor::Tensor) -> Option<u64>,
) -> String {
    let (line, pid, addr) = (a.line, a.pid, a.addr);
    let param = a.param.and_then(|p| {
        jit.params
            .iter()
            .filter(|q| !q.constexpr)
            .nth(p)
            .map(|q| (p, q.name.clone()))
    });
    let known = param.and_then(|(p, n)| {
        let t = tensors.get(p).cloned().flatten()?;
        Some((n, base(&t)?, t))
    });
    match known {
        Some((name, b, t)) => {
            let off = (addr as i64).wrapping_sub(b as i64) / a.elem_size.max(1) as i64;
            format!(
                "out-of-bounds {} in kernel `{}` at line {line}: program ({}, {}, {}) accessed element {off} of `{name}`, which has {} elements (offsets 0..{})",
                a.what, jit.name, pid[0], pid[1], pid[2], t.numel(), t.numel()
            )
        }
        None => format!(
            "out-of-bounds {} in kernel `{}` at line {line}: program ({}, {}, {}) accessed address {addr:#x}, outside every tensor it may address",
            a.what, jit.name, pid[0], pid[1], pid[2]
        ),
    }
}

/// An exception of `kind` pointing at a kernel line, with the note its cause calls for.
pub(crate) fn kernel_line_exc(
    jit: &JitFunction,
    kind: &str,
    message: String,
    line: u32,
    col: u32,
    what: &str,
) -> Exc {
    let span = span_at(&jit.source, line, col);
    let mut d = Diagnostic::new(kind, message.clone(), span.clone());
    if kind == "IndexError" && what != "gather" {
        d = d.with_note(
            "mask the access (tl.load(ptrs, mask=offsets < n)) or check the grid and the offsets",
        );
    } else if what == "divide" {
        d = d.with_note(
            "checked mode (always on the CPU backend, `%config check_bounds=True` on the GPU) checks every integer divisor; where lanes may divide by zero, guard the divisor (x // tl.where(y == 0, 1, y))",
        );
    }
    Exc {
        kind: kind.into(),
        message,
        span,
        rendered: Some(d.render(false)),
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
pub fn kernel_attr(_s: &mut dyn Host, k: &Rc<KernelObj>, name: &str) -> R<Val> {
    match name {
        "__name__" | "name" => Ok(Val::str(&k.jit.borrow().name)),
        "arg_names" => Ok(Val::list(
            k.jit
                .borrow()
                .params
                .iter()
                .map(|p| Val::str(&p.name))
                .collect(),
        )),
        "launch_metadata" => Ok(k.launch_metadata.borrow().clone().unwrap_or(Val::None)),
        "compile_count" => Ok(Val::Int(k.compiles.get() as i64)),
        "warmup" => Ok(Val::Method(
            Box::new(Val::Kernel(k.clone())),
            Rc::from("warmup"),
        )),
        "best_config" => match k
            .autotune
            .borrow()
            .as_ref()
            .map(|t| t.best.borrow().clone())
        {
            Some(Some(c)) => Ok(Val::Config(c)),
            Some(None) => Ok(Val::None),
            None => Err(Exc::new(
                "AttributeError",
                format!(
                    "'{}' is not autotuned, so it has no best_config",
                    k.jit.borrow().name
                ),
            )),
        },
        _ => Err(Exc::new(
            "AttributeError",
            format!("JITFunction has no attribute '{name}' in tilebook"),
        )),
    }
}
