//! Several GPUs in one session: which device a launch runs on, the
//! contexts of devices other than the first (opened on first use), and the
//! order between their streams.
//!
//! The rules, as torch and Triton users expect them:
//! - `cuda:N` names device N of the machine; an index past the machine's
//!   devices is torch's "invalid device ordinal" error. On the CPU backend
//!   `device_count()` is 0 and `cuda:0` is host memory.
//! - A kernel runs on the device of its tensor arguments. Tensors on
//!   several devices run on the current device (`torch.cuda.set_device`,
//!   `with torch.cuda.device(n)`), which must reach every other device's
//!   memory by peer access (enabled on demand); without a peer path the
//!   launch is an error that says which devices are involved. torch's own
//!   operations (tilebook's kernels behind them) refuse mixed devices as
//!   torch does.
//!
//! The decisions are plain functions of device indices (`launch_device`,
//! `check_index`) so that they are tested without a GPU.

use crate::value::{Exc, R};
use crate::{Backend, Runtime};
use std::rc::Rc;
use tilebook_cuda::Gpu;

/// Where a launch runs.
#[derive(Debug, PartialEq, Eq)]
pub struct LaunchDevice {
    /// The device that runs the kernel.
    pub run_on: u32,
    /// Other devices whose memory the launch's tensors live in (peer access
    /// from `run_on` is needed), in first-seen order.
    pub peers: Vec<u32>,
}

/// The device a launch runs on, from its tensor arguments' devices (in
/// argument order) and the current device. `torch_op`: the launch stands for
/// a torch operation, which refuses tensors on several devices.
pub fn launch_device(
    arg_devices: &[u32],
    current: u32,
    torch_op: bool,
) -> Result<LaunchDevice, String> {
    let mut distinct: Vec<u32> = vec![];
    for &d in arg_devices {
        if !distinct.contains(&d) {
            distinct.push(d);
        }
    }
    match distinct.as_slice() {
        [] => Ok(LaunchDevice { run_on: current, peers: vec![] }),
        [one] => Ok(LaunchDevice { run_on: *one, peers: vec![] }),
        [a, b, ..] if torch_op => Err(format!(
            "Expected all tensors to be on the same device, but found at least two devices, cuda:{a} and cuda:{b}!"
        )),
        _ => Ok(LaunchDevice {
            run_on: current,
            peers: distinct.into_iter().filter(|&d| d != current).collect(),
        }),
    }
}

/// Check a `cuda:i` index against `count` devices (`count` is 0 on the CPU
/// backend, where `cuda:0` still names host memory).
pub fn check_index(i: i64, count: usize) -> Result<u32, (&'static str, String)> {
    if i < 0 {
        return Err((
            "RuntimeError",
            format!("Device index must not be negative (got {i})"),
        ));
    }
    if i == 0 || (i as u64) < count as u64 {
        return Ok(i as u32);
    }
    Err((
        "RuntimeError",
        format!(
            "CUDA error: invalid device ordinal: cuda:{i} does not exist ({})",
            match count {
                0 =>
                    "the session runs on the CPU backend, whose 'cuda' device is cuda:0".to_string(),
                1 => "this machine has 1 GPU, cuda:0".to_string(),
                n => format!("this machine has {n} GPUs, cuda:0 to cuda:{}", n - 1),
            }
        ),
    ))
}

impl Runtime {
    /// The device a tensor asked for on `cuda:i` goes to: `i`, unless a
    /// spread sweep point runs the sweep's device elsewhere
    /// (`device_remap`).
    pub fn remapped(&self, i: u32) -> u32 {
        match self.device_remap {
            Some((from, to)) if from == i => to,
            _ => i,
        }
    }

    /// The context of GPU `ordinal` (`None` on the CPU backend): the
    /// backend's own for its device, else opened now or before.
    pub fn gpu(&mut self, ordinal: u32) -> R<Option<Rc<Gpu>>> {
        let Backend::Cuda(primary) = &self.backend else {
            return Ok(None);
        };
        if primary.ordinal == ordinal {
            return Ok(Some(primary.clone()));
        }
        if let Some(g) = self.other_gpus.iter().find(|g| g.ordinal == ordinal) {
            return Ok(Some(g.clone()));
        }
        check_index(ordinal as i64, tilebook_cuda::device_count())
            .map_err(|(kind, m)| Exc::new(kind, m))?;
        let g = Rc::new(Gpu::open_device(ordinal).map_err(|e| {
            Exc::new(
                "RuntimeError",
                format!("cuda:{ordinal} could not be opened: {e}"),
            )
        })?);
        self.other_gpus.push(g.clone());
        Ok(Some(g))
    }

    /// The context a tensor on `device` lives in (`None`: host memory).
    pub fn gpu_of(&mut self, device: &crate::tensor::Device) -> R<Option<Rc<Gpu>>> {
        match device {
            crate::tensor::Device::Cpu => Ok(None),
            crate::tensor::Device::Cuda(i) => self.gpu(*i),
        }
    }

    /// Every GPU context opened in this session, the backend's first.
    pub fn open_gpus(&self) -> Vec<Rc<Gpu>> {
        match &self.backend {
            Backend::Cuda(g) => std::iter::once(g.clone())
                .chain(self.other_gpus.iter().cloned())
                .collect(),
            Backend::Cpu => vec![],
        }
    }

    /// Wait for the work queued on every open GPU.
    /// Give every open GPU's kept freed buffers back (`torch.cuda.empty_cache`).
    pub fn release_kept(&self) {
        for g in self.open_gpus() {
            g.release_kept();
        }
    }

    pub fn synchronize_all(&self) -> Result<(), String> {
        for g in self.open_gpus() {
            g.synchronize()?;
        }
        Ok(())
    }

    /// The GPUs measurements spread over (`bench_devices`): the current
    /// device first, then the others of the same model, opened now. Fewer
    /// than two means no spreading.
    pub fn bench_gpus(&mut self) -> R<Vec<Rc<Gpu>>> {
        if !matches!(self.backend, Backend::Cuda(_)) || self.bench_devices == 1 {
            return Ok(vec![]);
        }
        let count = tilebook_cuda::device_count() as u32;
        let want = match self.bench_devices {
            0 => count,
            n => n.min(count),
        };
        if want < 2 {
            return Ok(vec![]);
        }
        let Some(first) = self.gpu(self.current_device)? else {
            return Ok(vec![]);
        };
        let mut out = vec![first.clone()];
        for o in 0..count {
            if out.len() as u32 >= want {
                break;
            }
            if o == first.ordinal {
                continue;
            }
            if let Some(g) = self.gpu(o)? {
                if g.name == first.name && g.arch == first.arch {
                    out.push(g);
                }
            }
        }
        Ok(out)
    }

    /// Peer access both ways between two GPUs when the machine has a path,
    /// before copying between them: without it the driver stages copies
    /// through host memory (37 GB/s instead of 380 between two H200s).
    pub fn prepare_copy(&mut self, a: &Rc<Gpu>, b: &Rc<Gpu>) {
        if a.ordinal != b.ordinal && a.can_access_peer(b) {
            let _ = self.ensure_peer_access(a, b);
            let _ = self.ensure_peer_access(b, a);
        }
    }

    /// Let `on` reach `owner`'s memory (peer access), once per pair.
    pub fn ensure_peer_access(&mut self, on: &Rc<Gpu>, owner: &Rc<Gpu>) -> R<()> {
        let pair = (on.ordinal, owner.ordinal);
        if pair.0 == pair.1 || self.peer_enabled.contains(&pair) {
            return Ok(());
        }
        on.enable_peer_access(owner)
            .map_err(|e| Exc::new("RuntimeError", e))?;
        self.peer_enabled.push(pair);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_runs_where_its_tensors_are() {
        let one = |run_on| LaunchDevice {
            run_on,
            peers: vec![],
        };
        assert_eq!(launch_device(&[1, 1, 1], 0, false), Ok(one(1)));
        assert_eq!(launch_device(&[0, 0], 1, true), Ok(one(0)));
        // No tensors: the current device.
        assert_eq!(launch_device(&[], 1, false), Ok(one(1)));
    }

    #[test]
    fn mixed_devices_run_on_the_current_one_with_peers() {
        assert_eq!(
            launch_device(&[0, 1, 0], 0, false),
            Ok(LaunchDevice {
                run_on: 0,
                peers: vec![1]
            })
        );
        assert_eq!(
            launch_device(&[0, 1], 1, false),
            Ok(LaunchDevice {
                run_on: 1,
                peers: vec![0]
            })
        );
        // The current device need not hold any of them.
        assert_eq!(
            launch_device(&[1, 2], 0, false),
            Ok(LaunchDevice {
                run_on: 0,
                peers: vec![1, 2]
            })
        );
    }

    #[test]
    fn torch_operations_refuse_mixed_devices() {
        let e = launch_device(&[0, 1], 0, true).unwrap_err();
        assert!(e.contains("cuda:0 and cuda:1"), "{e}");
    }

    #[test]
    fn device_indices_are_checked_against_the_machine() {
        assert_eq!(check_index(0, 0), Ok(0));
        assert_eq!(check_index(1, 2), Ok(1));
        let (kind, m) = check_index(2, 2).unwrap_err();
        assert_eq!(kind, "RuntimeError");
        assert!(
            m.contains("invalid device ordinal") && m.contains("cuda:0 to cuda:1"),
            "{m}"
        );
        let (_, m) = check_index(1, 0).unwrap_err();
        assert!(m.contains("CPU backend"), "{m}");
        let (_, m) = check_index(-1, 4).unwrap_err();
        assert!(m.contains("negative"), "{m}");
    }
}
