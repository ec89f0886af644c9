//! Traced launches (`tilebook.trace(kernel[grid], args...)`): the launch runs
//! on the CPU backend with every load and store lane recorded; the session
//! draws pictures from the data (`pictures.rs` there).

use crate::tensor::Tensor;
use crate::value::R;
use crate::value::{Exc, Val};
use crate::Host;
use std::collections::HashSet;
use std::rc::Rc;
use tilebook_cpu::{Access, Site};

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
    let data = crate::kernels::run_traced(s, k, &p)?;
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
