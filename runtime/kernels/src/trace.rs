//! Traced launches (`tilebook.trace(kernel[grid], args...)`): the launch runs
//! on the CPU backend with every load and store lane recorded; the session
//! draws pictures from the data (`pictures.rs` there).

use crate::kernels::{front_end, run_cpu, Compiled, KernelArg, KernelObj, Prepared};
use crate::tensor::Tensor;
use crate::value::{Exc, Val, R};
use crate::{Backend, Host};
use std::cell::Cell;
use std::collections::HashSet;
use std::rc::Rc;
use tilebook_cpu::{Access, CpuOptions, Site};

/// One traced launch.
pub struct TraceData {
    pub kernel: String,
    pub grid: [u32; 3],
    pub sites: Vec<Site>,
    pub accesses: Vec<Access>,
    /// Lanes not recorded (over the limit).
    pub dropped: u64,
    /// Tensor arguments: (argument index, parameter name, tensor).
    pub tensors: Vec<(usize, String, Rc<Tensor>)>,
}

impl TraceData {
    pub fn linear(&self, pid: [u32; 3]) -> u64 {
        let g = self.grid;
        pid[0] as u64 + g[0] as u64 * (pid[1] as u64 + g[1] as u64 * pid[2] as u64)
    }

    /// The tensor argument an address falls in, by storage bounds.
    pub fn tensor_of(&self, addr: u64) -> Option<&(usize, String, Rc<Tensor>)> {
        self.tensors.iter().find(|(_, _, t)| {
            let [lo, hi] = t.storage_bounds();
            addr >= lo && addr < hi
        })
    }
}

/// `tilebook.trace(kernel[grid], *args, **kwargs)`.
pub fn trace(
    s: &mut dyn Host,
    launcher: &Val,
    args: Vec<Val>,
    kwargs: Vec<(String, Val)>,
) -> R<Val> {
    let Val::Launcher(k, grid) = launcher else {
        return Err(Exc::type_error(format!(
            "tilebook.trace takes a launch as kernel[grid], then its arguments; got a {}",
            launcher.type_name()
        )));
    };
    let mut kwargs = kwargs;
    if let Some(t) = k.autotune.borrow().as_ref() {
        // An autotuned kernel is traced with the config it chose.
        let best = t.best.borrow().clone().ok_or_else(|| {
            Exc::new(
                "RuntimeError",
                "tilebook.trace: launch the autotuned kernel once first, so that it has a best_config",
            )
        })?;
        for (n, v) in &best.kwargs {
            kwargs.push((n.clone(), v.clone()));
        }
        kwargs.push(("num_warps".into(), Val::Int(best.num_warps)));
    }
    let p = crate::kernels::prepare(s, k, grid, args, kwargs)?;
    let data = run_traced(s, k, &p)?;
    let id = s.traces.len();
    let programs = data
        .accesses
        .iter()
        .map(|a| a.pid)
        .collect::<HashSet<_>>()
        .len();
    let lanes = data.accesses.len() as i64 + data.dropped as i64;
    s.traces.push(Rc::new(data));
    Ok(Val::object(
        "Trace",
        vec![
            ("programs", Val::Int(programs as i64)),
            ("lanes", Val::Int(lanes)),
            ("_id", Val::Int(id as i64)),
        ],
    ))
}

/// A launch on the CPU backend with every load and store lane recorded
/// (`tilebook.trace`), compiled for the occasion and not cached. The launch
/// is real: it writes its outputs as a launch would.
pub(crate) fn run_traced(s: &mut dyn Host, k: &Rc<KernelObj>, p: &Prepared) -> R<TraceData> {
    let jit = k.jit.borrow().clone();
    let front = front_end(s, &jit, p)?;
    let opts = CpuOptions {
        trace: true,
        ..CpuOptions::default()
    };
    let cpu = tilebook_cpu::compile(&front.kernel, &opts)
        .map_err(|e| Exc::new("CompilationError", format!("CPU backend: {e}")))?;
    let sites = cpu.sites.clone();
    let c = Compiled {
        key: p.key.to_string(),
        signature: p.signature(&jit),
        tir: front.tir,
        kernel: Some(cpu),
        gpu: None,
        compile_seconds: 0.0,
        fresh: Cell::new(false),
        stages: vec![],
        from_disk: false,
        num_warps: p.options.num_warps,
        on_other_gpus: Default::default(),
        object: Default::default(),
        gpu_options: None,
        plain: Default::default(),
    };
    // Make sure the host copies are current before the CPU reads them.
    if let Backend::Cuda(g) = &s.backend {
        g.synchronize().map_err(|e| Exc::new("RuntimeError", e))?;
    }
    let out = run_cpu(&jit, &c, p.grid, &p.args, None)?;
    if !out.printed.is_empty() {
        s.emit_stream("stdout", &out.printed);
    }
    let names: Vec<&str> = jit
        .params
        .iter()
        .filter(|q| !q.constexpr)
        .map(|q| q.name.as_str())
        .collect();
    let tensors = p
        .args
        .iter()
        .enumerate()
        .filter_map(|(i, a)| match a {
            KernelArg::Tensor(t) => Some((i, names.get(i).unwrap_or(&"?").to_string(), t.clone())),
            _ => None,
        })
        .collect();
    Ok(TraceData {
        kernel: jit.name.clone(),
        grid: p.grid,
        sites,
        accesses: out.trace,
        dropped: out.trace_dropped,
        tensors,
    })
}
