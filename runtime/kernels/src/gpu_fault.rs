//! Recovery from GPU faults. A kernel that faults (illegal address,
//! misaligned access, trap) poisons its CUDA context; the error surfaces at
//! its launch when launches are synchronous, else at the next synchronising
//! call. Whenever a GPU call fails, the session checks whether the context is
//! poisoned; if so it names the kernels that may have faulted (those launched
//! since the last synchronisation), reports the tensors of the namespace
//! whose data lived only on the GPU (they are lost; using them later is an
//! error saying so) and rebuilds the context (`Gpu::rebuild`). The GPU work
//! of the `tilebook` binary runs in a worker process of the session
//! (`tilebook_cuda`'s `remote`), so a rebuild is a fresh worker and the
//! session stays on the GPU. In-process (`TILEBOOK_GPU_WORKER=0`, or a
//! program embedding the session without serving as worker) current drivers
//! refuse the rebuild: such a fault leaves CUDA unusable for the rest of the
//! process (measured on the H100: the primary context reset succeeds,
//! opening the device again still returns the fault). The session then goes
//! on with the CPU backend, host tensors intact, and says that restarting the
//! session brings the GPU back. After a rebuild, kernels are recompiled for
//! the new context (the module cache is keyed by its generation) and host
//! tensors upload again on their next launch.

use crate::value::{Exc, Val};
use crate::{Backend, Host, Runtime};
use std::rc::Rc;

/// How many kernel names the fault message lists at most.
const NAMED: usize = 4;

impl Runtime {
    /// Remember a GPU launch until the next synchronisation.
    pub fn note_gpu_launch(&mut self, name: &str) {
        // The common case, the same kernel again, costs no allocation.
        if self.launched_since_sync.last().is_some_and(|n| n == name) {
            return;
        }
        self.launched_since_sync.retain(|n| n != name);
        self.launched_since_sync.push(name.to_string());
        if self.launched_since_sync.len() > NAMED {
            self.launched_since_sync.remove(0);
        }
    }
}

/// Recovery after a failed GPU call, for any host of the runtime.
pub trait GpuFault {
    /// Turn a failed GPU call into the error to raise, rebuilding the context
    /// first when a fault poisoned it.
    fn gpu_failure(&mut self, e: Exc) -> Exc;
    /// If the GPU context is poisoned, rebuild it and say what happened.
    fn recover_gpu(&mut self) -> Option<String>;
}

impl<H: Host + ?Sized> GpuFault for H {
    fn gpu_failure(&mut self, mut e: Exc) -> Exc {
        if let Some(note) = self.recover_gpu() {
            e.message = format!("{}\n{note}", e.message);
        }
        e
    }

    fn recover_gpu(&mut self) -> Option<String> {
        let Backend::Cuda(g) = self.backend.clone() else {
            return None;
        };
        let fault = g.context_fault()?;
        let suspects = std::mem::take(&mut self.launched_since_sync);
        let mut note = format!("The GPU reported a fault ({fault})");
        if !suspects.is_empty() {
            let names: Vec<String> = suspects.iter().map(|n| format!("`{n}`")).collect();
            note += &format!(
                " in {}kernel launched since the last synchronisation: {}",
                if names.len() > 1 { "a " } else { "the " },
                names.join(", ")
            );
        }
        note += ".";
        // The L2 flush buffer and the footer's timing events belong to the
        // old context (`rebuild` marks it lost, so dropping them leaks them).
        self.l2_flush.clear();
        let rebuilt = g.rebuild();
        for r in &mut self.launch_log {
            r.times
                .retain(|t| !matches!(t, crate::timing::Time::Gpu(..)));
        }
        match rebuilt {
            Ok(fresh) => {
                let in_worker = fresh.in_worker();
                self.backend = Backend::Cuda(Rc::new(fresh));
                note += if in_worker {
                    " The session's GPU worker process was replaced by a fresh one; \
                     host variables are kept and the next cell runs on the GPU."
                } else {
                    " The GPU context was rebuilt and the session goes on."
                };
            }
            Err(e) => {
                // The usual case: the driver keeps a context that saw an
                // illegal address, misaligned access or trap unusable for the
                // rest of the process.
                self.backend = Backend::Cpu;
                note += &format!(
                    " The driver does not let this process use the GPU again ({e}); \
                     the session goes on with the CPU backend, and a restart of the \
                     session brings the GPU back."
                );
            }
        }
        let mut lost: Vec<String> = self
            .global_values()
            .iter()
            .filter(|(_, v)| matches!(v, Val::Tensor(t) if t.storage.lost_on_gpu()))
            .map(|(k, _)| k.clone())
            .collect();
        lost.sort();
        if !lost.is_empty() {
            note += &format!(
                " Tensors whose data were only on the GPU are lost: {}.",
                lost.join(", ")
            );
        }
        Some(note)
    }
}

/// Keep the panics the session turns into errors about lost GPU data, and
/// those of ruff's parser that the front end turns into syntax errors, out
/// of stderr (the error shown for the cell says it); other panics print as
/// usual.
pub fn quiet_expected_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .unwrap_or("");
        if msg == crate::tensor::LOST || msg.starts_with(crate::tensor::READ_BACK_FAILED) {
            return;
        }
        // ruff's parser panics on some malformed cells; the front end
        // reports those as syntax errors.
        if info
            .location()
            .is_some_and(|l| l.file().contains("ruff_python_parser"))
        {
            return;
        }
        default(info);
    }));
}
