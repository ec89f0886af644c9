//! Line magics, IPython's spelling: `%time`, `%timeit` (device events and an
//! L2 flush on the GPU, as `do_bench` measures), `%ir`, `%llvm`, `%ptx`,
//! `%sass`, `%clif` (stage texts of a kernel's latest specialization),
//! `%device`, `%who`, `%reset -f`, `%lsmagic`.

use crate::value::R;
use crate::value::{Exc, Val};
use crate::{Backend, Engine};
use std::rc::Rc;
use std::time::Instant;
use tilebook_frontend::SourceFile;
use tilebook_kernels::gpu_fault::GpuFault;

const MAGICS: &[(&str, &str)] = &[
    (
        "time",
        "run a statement once and print its wall time (GPU work included)",
    ),
    (
        "timeit",
        "time a statement as do_bench does: median and spread",
    ),
    ("ir", "the tile IR of a kernel's latest specialization"),
    ("llvm", "its LLVM IR (GPU)"),
    ("ptx", "its PTX (for sm_90 when no GPU is in use)"),
    (
        "sass",
        "its SASS and register figures (GPU; needs ptxas and cuobjdump)",
    ),
    ("clif", "its Cranelift IR (CPU backend)"),
    (
        "device",
        "the device kernels run on; `%device cpu|cuda` switches",
    ),
    (
        "cache",
        "`%cache info|clear`: compiled kernels in memory and on disk",
    ),
    (
        "config",
        "`%config num_warps=8`: launch defaults and session settings",
    ),
    (
        "env",
        "`%env`, `%env NAME`, `%env NAME=value`: environment variables",
    ),
    ("load", "`%load path`: put a file's text in the next cell"),
    (
        "timing",
        "`%timing on|off`: the per-kernel timing footer after cells",
    ),
    ("who", "the names defined in the session"),
    ("reset", "`%reset -f`: clear the namespace"),
    ("lsmagic", "this list"),
    (
        "help",
        "this list; `help(x)`, `x?` and `x??` document a name",
    ),
];

/// The line magics' names (for completion).
pub(crate) fn names() -> impl Iterator<Item = &'static str> {
    MAGICS.iter().map(|(n, _)| *n)
}

/// The cell magic on a cell's first line (`%%time`), with its arguments,
/// and the cell with that line blanked; or the cell unchanged.
pub(crate) fn split_cell_magic(text: &str) -> (String, Option<(String, String)>) {
    let first = text.lines().next().unwrap_or("");
    let Some(rest) = first.trim_start().strip_prefix("%%") else {
        return (text.to_string(), None);
    };
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let body = text.split_once('\n').map_or("", |(_, b)| b);
    (
        format!("\n{body}"),
        Some((name.to_string(), args.trim().to_string())),
    )
}

/// The magics, as methods of the engine they run on (host code reaches
/// them through the registry's `magic` handler).
pub(crate) trait Magics {
    fn cell_magic(&mut self, name: &str, _args: &str, file: &Rc<SourceFile>) -> R<()>;
    fn run_magic(&mut self, text: &str) -> R<Val>;
    fn magic_cache(&mut self, arg: &str) -> R<Val>;
    fn clear_memory_caches(&mut self);
    fn magic_config(&mut self, arg: &str) -> R<Val>;
    fn magic_env(&mut self, arg: &str) -> R<Val>;
    fn sync_device(&mut self) -> R<()>;
    fn magic_time(&mut self, code: &str) -> R<Val>;
    fn magic_timeit(&mut self, code: &str) -> R<Val>;
    fn report_timeit(&mut self, times: &[f64]);
    fn magic_stage(&mut self, stage: &str, arg: &str) -> R<Val>;
    fn stage_without_gpu(
        &mut self,
        stage: &str,
        name: &str,
        c: &crate::kernels::Compiled,
    ) -> R<Val>;
}

/// The engine's `%magic` handler.
pub(crate) fn magic(e: &mut Engine, text: &str) -> R<Val> {
    e.run_magic(text)
}

impl Magics for Engine {
    /// `%%time` and `%%timeit` over a whole cell.
    fn cell_magic(&mut self, name: &str, _args: &str, file: &Rc<SourceFile>) -> R<()> {
        match name {
            "time" => {
                let t = Instant::now();
                self.run_parsed(file)?;
                self.sync_device()?;
                let text = format!("Wall time: {}\n", fmt_ms(t.elapsed().as_secs_f64() * 1e3));
                self.emit_stream("stdout", &text);
                Ok(())
            }
            "timeit" => {
                let mark = self.outputs_len();
                let times = crate::bench::measure(self, 25.0, 100.0, &mut |s| tilebook_host::engine_of(s)?.run_parsed(file))?;
                // What the repetitions printed or displayed is not the cell's output.
                self.truncate_outputs(mark);
                self.report_timeit(&times);
                Ok(())
            }
            _ => Err(Exc::new(
                "UsageError",
                format!("cell magic `%%{name}` is not available in tilebook; available: %%time, %%timeit"),
            )),
        }
    }

    fn run_magic(&mut self, text: &str) -> R<Val> {
        if let Some(cell) = text.strip_prefix("%%") {
            let name = cell.split_whitespace().next().unwrap_or("");
            return Err(Exc::new(
                "UsageError",
                format!("the cell magic `%%{name}` must be the first line of its cell"),
            ));
        }
        if text.starts_with('!') {
            return Err(Exc::new(
                "UsageError",
                "shell escapes (`!command`) are not available in tilebook",
            ));
        }
        // `x?` and `?x` arrive as `?x`; `x??` as `??x`.
        if let Some(expr) = text.strip_prefix('?') {
            let (expr, source) = match expr.strip_prefix('?') {
                Some(e) => (e, true),
                None => (expr, false),
            };
            let text = crate::docs::help(self, expr.trim(), source)?;
            self.outputs.push(crate::Output::Page { text });
            return Ok(Val::None);
        }
        let body = text.trim_start_matches('%');
        let (name, rest) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
        let rest = rest.trim();
        match name {
            "time" => self.magic_time(rest),
            "timeit" => self.magic_timeit(rest),
            "ir" | "llvm" | "ptx" | "sass" | "clif" => self.magic_stage(name, rest),
            "device" => {
                if !rest.is_empty() {
                    self.switch_device(rest)?;
                }
                let driver = match (&self.backend, tilebook_cuda::driver_version()) {
                    (Backend::Cuda(_), Some(v)) => format!(", driver {v}"),
                    _ => String::new(),
                };
                let mut text = match &self.backend {
                    Backend::Cuda(_) => format!(
                        "{} (cuda{driver}), tilebook {}\n",
                        self.device_name(),
                        env!("CARGO_PKG_VERSION")
                    ),
                    Backend::Cpu => format!(
                        "CPU backend (cpu, no GPU in use), tilebook {}\n",
                        env!("CARGO_PKG_VERSION")
                    ),
                };
                // Every GPU of the machine, when there is more than the one in use.
                let gpus = tilebook_cuda::probe_names();
                let in_use = matches!(self.backend, Backend::Cuda(_));
                if gpus.len() > 1 || (!in_use && !gpus.is_empty()) {
                    for (i, g) in gpus.iter().enumerate() {
                        let note = if in_use && i as u32 == self.current_device {
                            " (current)"
                        } else {
                            ""
                        };
                        text.push_str(&format!("  cuda:{i}: {g}{note}\n"));
                    }
                }
                self.emit_stream("stdout", &text);
                Ok(Val::None)
            }
            "cache" => self.magic_cache(rest),
            "config" => self.magic_config(rest),
            "env" => self.magic_env(rest),
            "load" => {
                if rest.is_empty() {
                    return Err(Exc::new("UsageError", "%load needs a file path"));
                }
                let text = load_source(rest)?;
                self.emit_stream(
                    "stdout",
                    &format!(
                        "%load: {} lines from {rest} go into the next cell\n",
                        text.lines().count()
                    ),
                );
                self.outputs.push(crate::Output::NextInput {
                    text: format!("# %load {rest}\n{text}"),
                });
                Ok(Val::None)
            }
            "timing" => match rest {
                "on" | "off" => {
                    self.timing = rest == "on";
                    Ok(Val::None)
                }
                _ => Err(Exc::new("UsageError", "%timing on, or %timing off")),
            },
            "who" => {
                let mut names = self.user_names()?;
                names.sort();
                let text = if names.is_empty() {
                    "Interactive namespace is empty.\n".to_string()
                } else {
                    names.join("\t") + "\n"
                };
                self.emit_stream("stdout", &text);
                Ok(Val::None)
            }
            "reset" if rest.split_whitespace().any(|a| a == "-f") => {
                self.globals.borrow_mut().clear();
                self.reset_host()?;
                Ok(Val::None)
            }
            "reset" => Err(Exc::new(
                "UsageError",
                "%reset asks no questions in a notebook: write `%reset -f`",
            )),
            "lsmagic" | "help" => {
                let mut text = String::from("Line magics:\n");
                for (n, what) in MAGICS {
                    text.push_str(&format!("  %{n:<8} {what}\n"));
                }
                text.push_str("Cell magics:\n  %%time    time the whole cell\n  %%timeit  time the whole cell as do_bench does\n");
                self.emit_stream("stdout", &text);
                Ok(Val::None)
            }
            _ => Err(Exc::new(
                "UsageError",
                format!(
                    "magic `%{name}` is not available in tilebook{} (`%lsmagic` lists them)",
                    tilebook_frontend::diag::did_you_mean(
                        name,
                        MAGICS.iter().map(|(n, _)| *n),
                        "%"
                    )
                ),
            )),
        }
    }

    /// `%cache info` (the default) and `%cache clear`.
    fn magic_cache(&mut self, arg: &str) -> R<Val> {
        let kernels: Vec<(String, usize)> = {
            let g = self.global_values();
            let mut v: Vec<(String, usize)> = g
                .iter()
                .filter_map(|(n, v)| match v {
                    Val::Kernel(k) => Some((n.clone(), k.cache.borrow().len())),
                    _ => None,
                })
                .collect();
            v.sort();
            v
        };
        match arg {
            "" | "info" => {
                let mut text = String::from("In memory:\n");
                if kernels.is_empty() {
                    text.push_str("  no kernels defined\n");
                }
                for (n, c) in &kernels {
                    text.push_str(&format!("  {n}: {c} specialization(s)\n"));
                }
                match &self.disk {
                    Some(d) => {
                        let u = d.usage();
                        text.push_str(&format!(
                            "On disk: {} ({} kernels, {} tuning results, {:.1} MB; this session: {} loaded, {} written)\n",
                            d.dir.display(),
                            u.kernels,
                            u.tunings,
                            u.bytes as f64 / 1e6,
                            d.hits.get(),
                            d.writes.get()
                        ));
                    }
                    None => text.push_str("On disk: off (TILEBOOK_CACHE=off)\n"),
                }
                text.push_str(&format!("Compiler: {}\n", crate::disk_cache::COMPILER_ID));
                self.emit_stream("stdout", &text);
            }
            "clear" => {
                self.clear_memory_caches();
                if let Some(d) = &self.disk {
                    d.clear().map_err(|e| {
                        Exc::new("OSError", format!("%cache clear: {}: {e}", d.dir.display()))
                    })?;
                }
                self.emit_stream("stdout", "Cleared the kernel cache (memory and disk).\n");
            }
            "clear tuning" => {
                // Compiled kernels stay: the next launch of an autotuned
                // kernel times its configs again without compiling them.
                for (_, v) in self.global_values() {
                    if let Val::Kernel(k) = v {
                        if let Some(t) = k.autotune.borrow().as_ref() {
                            t.cache.borrow_mut().clear();
                        }
                    }
                }
                if let Some(d) = &self.disk {
                    d.clear_tunings().map_err(|e| {
                        Exc::new("OSError", format!("%cache clear tuning: {}: {e}", d.dir.display()))
                    })?;
                }
                self.emit_stream("stdout", "Cleared the autotuning results (memory and disk).\n");
            }
            other => {
                return Err(Exc::new(
                    "UsageError",
                    format!("%cache {other}: expected `%cache info`, `%cache clear` or `%cache clear tuning`"),
                ))
            }
        }
        Ok(Val::None)
    }

    /// Forget every compiled specialization and tuning result in memory.
    fn clear_memory_caches(&mut self) {
        for (_, v) in self.global_values() {
            if let Val::Kernel(k) = v {
                k.clear_compiled();
                if let Some(t) = k.autotune.borrow().as_ref() {
                    t.cache.borrow_mut().clear();
                }
            }
        }
    }

    /// `%config` lists the settings; `%config name=value` sets one.
    fn magic_config(&mut self, arg: &str) -> R<Val> {
        if arg.is_empty() {
            let text = format!(
                "num_warps = {}    (launch default)\nnum_stages = {}   (launch default)\ntiming = {}       (per-kernel footer)\ncheck_gpu = {}    (run GPU launches on the CPU backend too and compare)\ncheck_bounds = {} (GPU kernels check every access against its tensor)\nbench_devices = {} (GPUs autotuning spreads its timings over; 0 = every GPU of the same model)\n",
                self.compile_defaults.num_warps,
                self.compile_defaults.num_stages,
                self.timing,
                self.check_gpu,
                self.check_bounds,
                self.bench_devices
            );
            self.emit_stream("stdout", &text);
            return Ok(Val::None);
        }
        let (name, value) = arg
            .split_once('=')
            .map(|(n, v)| (n.trim(), v.trim()))
            .ok_or_else(|| Exc::new("UsageError", "%config name=value (or %config to list)"))?;
        let flag = |v: &str| match v {
            "True" | "true" | "on" | "1" => Ok(true),
            "False" | "false" | "off" | "0" => Ok(false),
            _ => Err(Exc::new(
                "UsageError",
                format!("%config {name}: expected True or False"),
            )),
        };
        let count = |v: &str| match v.parse::<u32>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(Exc::new(
                "UsageError",
                format!("%config {name}: expected a positive integer"),
            )),
        };
        match name {
            "num_warps" => {
                let n = count(value)?;
                if !n.is_power_of_two() || n > 32 {
                    return Err(Exc::new(
                        "UsageError",
                        "num_warps must be a power of two up to 32",
                    ));
                }
                self.compile_defaults.num_warps = n;
            }
            "num_stages" => self.compile_defaults.num_stages = count(value)?,
            "timing" => self.timing = flag(value)?,
            "check_gpu" => self.check_gpu = flag(value)?,
            "check_bounds" => self.check_bounds = flag(value)?,
            "bench_devices" => {
                self.bench_devices = value.parse::<u32>().map_err(|_| {
                    Exc::new(
                        "UsageError",
                        "%config bench_devices: expected a number of GPUs (0: all of the same model)",
                    )
                })?
            }
            other => {
                return Err(Exc::new(
                    "UsageError",
                    format!(
                        "%config: no setting `{other}` (num_warps, num_stages, timing, check_gpu, check_bounds, bench_devices)"
                    ),
                ))
            }
        }
        Ok(Val::None)
    }

    /// `%env`: list, show or set environment variables. Setting one that
    /// changes generated code (`TILEBOOK_*`) drops the in-memory kernels.
    fn magic_env(&mut self, arg: &str) -> R<Val> {
        if arg.is_empty() {
            let mut vars: Vec<(String, String)> = std::env::vars().collect();
            vars.sort();
            let text: String = vars.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
            self.emit_stream("stdout", &text);
            return Ok(Val::None);
        }
        let set = arg
            .split_once('=')
            .or_else(|| arg.split_once(char::is_whitespace));
        match set {
            Some((name, value)) => {
                let (name, value) = (name.trim(), value.trim());
                std::env::set_var(name, value);
                if name.starts_with("TILEBOOK_") {
                    self.clear_memory_caches();
                }
                self.emit_stream("stdout", &format!("env: {name}={value}\n"));
            }
            None => {
                let v = std::env::var(arg).map_err(|_| {
                    Exc::new(
                        "UsageError",
                        format!("environment does not have key: {arg}"),
                    )
                })?;
                self.emit_stream("stdout", &format!("{v}\n"));
            }
        }
        Ok(Val::None)
    }

    /// Run `code` as statements in the global scope; returns the value of a
    /// final expression.
    fn sync_device(&mut self) -> R<()> {
        self.synchronize_all()
            .map_err(|e| self.gpu_failure(Exc::new("RuntimeError", e)))
    }

    fn magic_time(&mut self, code: &str) -> R<Val> {
        if code.is_empty() {
            return Err(Exc::new("UsageError", "%time needs a statement"));
        }
        let t = Instant::now();
        let v = self.run_code(code)?;
        self.sync_device()?;
        let text = format!("Wall time: {}\n", fmt_ms(t.elapsed().as_secs_f64() * 1e3));
        self.emit_stream("stdout", &text);
        Ok(v)
    }

    fn magic_timeit(&mut self, code: &str) -> R<Val> {
        if code.is_empty() {
            return Err(Exc::new("UsageError", "%timeit needs a statement"));
        }
        let times = crate::bench::measure(self, 25.0, 100.0, &mut |s| {
            tilebook_host::engine_of(s)?.run_code(code).map(|_| ())
        })?;
        self.report_timeit(&times);
        Ok(Val::None)
    }

    fn report_timeit(&mut self, times: &[f64]) {
        let q = |p| crate::bench::quantile(times, p);
        let how = match self.backend {
            Backend::Cuda(_) => "device events, L2 flushed",
            Backend::Cpu => "wall clock",
        };
        let text = format!(
            "{} per loop (median of {} runs, {} to {} for the middle half; {how})\n",
            fmt_ms(q(0.5)),
            times.len(),
            fmt_ms(q(0.25)),
            fmt_ms(q(0.75)),
        );
        self.emit_stream("stdout", &text);
    }

    fn magic_stage(&mut self, stage: &str, arg: &str) -> R<Val> {
        let name = arg.split_whitespace().next().unwrap_or("");
        let k = match self.get_global(name) {
            Some(Val::Kernel(k)) => k,
            _ => {
                return Err(Exc::new(
                    "UsageError",
                    format!("%{stage} needs the name of a @triton.jit kernel, got '{name}'"),
                ))
            }
        };
        let Some(c) = k.last.borrow().clone() else {
            return Err(Exc::new(
                "UsageError",
                format!("`{name}` has not been compiled yet: launch it (or call {name}.warmup(...)) first"),
            ));
        };
        let gpu = c.gpu.as_ref().map(|(gk, f)| (gk, f.regs, f.local_bytes));
        if gpu.is_none() && matches!(stage, "llvm" | "ptx" | "sass") {
            return self.stage_without_gpu(stage, name, &c);
        }
        let text = match (stage, gpu) {
            ("ir", _) => c.tir.clone(),
            ("llvm", Some((gk, ..))) => gk.llvm_ir.clone(),
            ("ptx", Some((gk, ..))) => gk.ptx.clone(),
            ("sass", Some((gk, regs, local))) => {
                let sass =
                    tilebook_nvptx::sass::sass(&gk.ptx).map_err(|e| Exc::new("RuntimeError", e))?;
                format!(
                    "// {regs} registers, {local} bytes of local memory (spills) per thread, {} bytes of shared memory\n{}",
                    gk.shared_bytes, sass.text
                )
            }
            ("clif", _) => match &c.kernel {
                Some(cpu) => cpu.clif.clone(),
                None => {
                    return Err(Exc::new(
                        "UsageError",
                        "%clif: the kernel was compiled for the GPU only",
                    ))
                }
            },
            _ => return Err(Exc::new("UsageError", format!("%{stage}: no such stage"))),
        };
        let text = format!("// {} [{}]\n{text}", name, c.signature);
        self.emit_stream("stdout", &(text.trim_end().to_string() + "\n"));
        Ok(Val::None)
    }

    /// `%llvm`/`%ptx`/`%sass` in a session on the CPU backend: the GPU
    /// backend compiles the same tile IR for an H100 (sm_90), as
    /// `tilebook compile` does without a GPU.
    fn stage_without_gpu(
        &mut self,
        stage: &str,
        name: &str,
        c: &crate::kernels::Compiled,
    ) -> R<Val> {
        let k = tilebook_tir::parse::parse_kernel(&c.tir).map_err(|e| {
            Exc::new(
                "InternalError",
                format!("%{stage}: the tile IR does not parse back: {e}"),
            )
        })?;
        let options = tilebook_nvptx::GpuOptions::new("sm_90", c.num_warps, 3);
        let g =
            tilebook_nvptx::compile(&k, &options).map_err(|e| Exc::new("CompilationError", e))?;
        let text = match stage {
            "llvm" => g.llvm_ir,
            "ptx" => g.ptx,
            _ => {
                let s =
                    tilebook_nvptx::sass::sass(&g.ptx).map_err(|e| Exc::new("RuntimeError", e))?;
                format!(
                    "// ptxas -v: {}\n{}",
                    s.resources.replace('\n', " "),
                    s.text
                )
            }
        };
        let text = format!(
            "// {name} [{}], compiled for sm_90 (no GPU in this session: its launches run on the CPU backend)\n{text}",
            c.signature
        );
        self.emit_stream("stdout", &(text.trim_end().to_string() + "\n"));
        Ok(Val::None)
    }
}

/// A duration in the unit IPython would pick.
fn fmt_ms(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.2} s", ms / 1e3)
    } else if ms >= 1.0 {
        format!("{ms:.2} ms")
    } else {
        format!("{:.1} µs", ms * 1e3)
    }
}

/// The largest file `%load` reads.
const LOAD_LIMIT: u64 = 1 << 20;

/// `%load PATH`: the text of a Python source file (`.py`, `.ipy`), a regular
/// file of at most 1 MiB in UTF-8. Anything else (special files, binaries,
/// other files that are not code) is refused without being read or quoted.
fn load_source(path: &str) -> R<String> {
    let refuse = |why: &str| Exc::new("UsageError", format!("%load {path}: {why}"));
    if !(path.ends_with(".py") || path.ends_with(".ipy")) {
        return Err(refuse("only Python source files (.py, .ipy) are loaded"));
    }
    let meta = std::fs::metadata(path).map_err(|e| refuse(&format!("cannot read it ({e})")))?;
    if !meta.is_file() {
        return Err(refuse("not a regular file"));
    }
    if meta.len() > LOAD_LIMIT {
        return Err(refuse(&format!(
            "{} bytes; %load reads files of at most {LOAD_LIMIT} bytes",
            meta.len()
        )));
    }
    let bytes = std::fs::read(path).map_err(|e| refuse(&format!("cannot read it ({e})")))?;
    match String::from_utf8(bytes) {
        Ok(t) if !t.contains('\0') => Ok(t),
        _ => Err(refuse("not a UTF-8 text file")),
    }
}
