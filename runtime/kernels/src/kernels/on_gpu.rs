//! Launches on the GPU: which device runs a launch and the order between
//! the devices involved (`launch_gpus`), the launch itself with each
//! tensor's address on the GPU that owns it, checked mode's record, and
//! the CPU cross-check (`TILEBOOK_CHECK_GPU=1`).

use super::*;
use std::collections::HashMap;

/// The GPUs of a launch: the one that runs it, the owner of each tensor
/// argument (by position), and whether it is the backend's own device.
pub(crate) struct LaunchGpus {
    pub(crate) run_on: Rc<tilebook_cuda::Gpu>,
    pub(crate) owners: Vec<Option<Rc<tilebook_cuda::Gpu>>>,
    pub(crate) is_primary: bool,
}

/// Decide where a launch runs (`devices::launch_device`) and make the
/// devices involved ready: peer access from the running device to each
/// other one, and its stream ordered after theirs. `None` on the CPU backend.
pub(super) fn launch_gpus(
    s: &mut dyn Host,
    k: &KernelObj,
    args: &[KernelArg],
) -> R<Option<LaunchGpus>> {
    let Backend::Cuda(primary) = s.backend.clone() else {
        return Ok(None);
    };
    let devices: Vec<Option<u32>> = args
        .iter()
        .map(|a| match a {
            KernelArg::Tensor(t) => match t.device {
                crate::tensor::Device::Cuda(i) => Some(i),
                crate::tensor::Device::Cpu => Some(primary.ordinal),
            },
            _ => None,
        })
        .collect();
    // The common case, everything on the backend's device, costs nothing more.
    let mut listed = devices.iter().flatten().copied().peekable();
    let any = listed.peek().is_some();
    if listed.all(|d| d == primary.ordinal) && (any || s.current_device == primary.ordinal) {
        return Ok(Some(LaunchGpus {
            owners: devices.iter().map(|d| d.map(|_| primary.clone())).collect(),
            run_on: primary,
            is_primary: true,
        }));
    }
    let listed: Vec<u32> = devices.iter().flatten().copied().collect();
    let name = k.jit.borrow().name.clone();
    let placed = crate::devices::launch_device(&listed, s.current_device, k.is_library())
        .map_err(|m| Exc::new("RuntimeError", m))?;
    let run_on = s
        .gpu(placed.run_on)?
        .ok_or_else(|| Exc::new("RuntimeError", "no GPU"))?;
    for &p in &placed.peers {
        let owner = s
            .gpu(p)?
            .ok_or_else(|| Exc::new("RuntimeError", "no GPU"))?;
        s.ensure_peer_access(&run_on, &owner).map_err(|e| {
            Exc::new(
                "RuntimeError",
                format!("kernel `{name}` runs on cuda:{} with tensors on cuda:{p}: {}; copy them to one device with .to()", placed.run_on, e.message),
            )
        })?;
        run_on
            .wait_for(&owner)
            .map_err(|e| Exc::new("RuntimeError", e))?;
    }
    let mut owners = vec![];
    for d in &devices {
        owners.push(match d {
            Some(d) => s.gpu(*d)?,
            None => None,
        });
    }
    Ok(Some(LaunchGpus {
        is_primary: run_on.ordinal == primary.ordinal,
        run_on,
        owners,
    }))
}

pub(super) fn launch_on(
    s: &mut dyn Host,
    jit: &Rc<JitFunction>,
    compiled: &Compiled,
    gpu: &Option<LaunchGpus>,
    grid: [u32; 3],
    args: &[KernelArg],
) -> R<Val> {
    let jit_rc = jit;
    let jit = &**jit;
    match (gpu, &compiled.gpu) {
        (Some(lg), Some(gk)) => {
            let g = &lg.run_on;
            // With the check on, run the CPU backend on copies first and compare after.
            // Addresses loaded from memory are the GPU's: the CPU backend
            // cannot follow them, so such kernels are not cross-checked.
            let reference = if s.check_gpu
                && compiled
                    .kernel
                    .as_ref()
                    .is_some_and(|k| !follows_loaded_addresses(k))
            {
                Some(run_cpu_on_copies(jit, compiled, grid, args)?)
            } else {
                None
            };
            s.note_gpu_launch(&jit.name);
            // The driver's arguments: each tensor's address on the device
            // that owns it (uploading host data there first), the scalars.
            let mut raw = Vec::with_capacity(args.len() + 8);
            for (a, owner) in args.iter().zip(&lg.owners) {
                use tilebook_cuda::Arg;
                raw.push(match (a, owner) {
                    (KernelArg::Tensor(t), Some(o)) => Arg::Ptr(
                        t.storage
                            .device_address(o)
                            .map_err(|e| s.gpu_failure(Exc::new("RuntimeError", e)))?
                            + (t.offset * t.dtype.size_bytes()) as u64,
                    ),
                    (KernelArg::Tensor(_), None) => Arg::Ptr(0),
                    (KernelArg::Int(i, DType::I64), _) => Arg::I64(*i),
                    (KernelArg::Int(i, _), _) => Arg::I32(*i as i32),
                    (KernelArg::Float(f), _) => Arg::F32(*f),
                });
            }
            let func = if lg.is_primary {
                None
            } else {
                Some(compiled.function_on(g).map_err(|e| {
                    Exc::new(
                        "RuntimeError",
                        format!("kernel `{}` on cuda:{}: {e}", jit.name, g.ordinal),
                    )
                })?)
            };
            let mut func = func.as_deref().unwrap_or(&gk.1);
            if gk.0.check_bounds {
                raw.extend(checked::extra_args(s, g, &gk.0, args)?);
            }
            let plain;
            if !gk.0.tensor_maps.is_empty() {
                match super::tensor_maps::arguments(s, g, &gk.0.tensor_maps, args, &raw) {
                    Ok(maps) => raw.extend(maps),
                    // A pointer load's tensor map cannot describe these
                    // arguments: the build without such maps runs instead.
                    Err(_) if gk.0.tensor_maps.iter().any(|m| m.shape.is_some()) => {
                        plain = super::tensor_maps::plain_build(jit, compiled, g)?;
                        let maps = &plain.0.tensor_maps;
                        if !maps.is_empty() {
                            raw.extend(super::tensor_maps::arguments(s, g, maps, args, &raw)?);
                        }
                        func = &plain.1;
                    }
                    Err(e) => return Err(e),
                }
            }
            if let Err(e) = launch_gpu(g, jit, func, grid, args, &raw) {
                return Err(s.gpu_failure(e));
            }
            // Work queued later on the owners' streams (a read-back, the next
            // kernel there) comes after this launch.
            for o in lg.owners.iter().flatten() {
                if o.ordinal != g.ordinal {
                    o.wait_for(g).map_err(|e| Exc::new("RuntimeError", e))?;
                }
            }
            if gk.0.check_bounds {
                if s.measuring > 0 {
                    // Read once the measurement ends; the first violation
                    // stays recorded. The record does not say which launch
                    // wrote it, so another kernel or other arguments first
                    // have the pending one read.
                    if s.check_pending
                        .as_ref()
                        .is_some_and(|p| !p.is(jit_rc, args))
                    {
                        finish_pending_check(s)?;
                    }
                    if s.check_pending.is_none() {
                        s.check_pending = Some(PendingCheck {
                            gpu: g.clone(),
                            jit: jit_rc.clone(),
                            args: args.to_vec(),
                        });
                    }
                } else {
                    checked::read_record(s, g, jit, args)?;
                }
            }
            if let Some(copies) = reference {
                compare_with_cpu(jit, args, &copies, gk.0.fp8_accumulation())?;
            }
            Ok(Val::None)
        }
        _ => {
            let flag = s.interrupt.clone();
            let out = run_cpu(jit, compiled, grid, args, Some(flag.flag()));
            if out.is_err() {
                // A Ctrl-C that stopped the launch is answered by its error.
                flag.swap(false, std::sync::atomic::Ordering::Relaxed);
            }
            let out = out?.printed;
            if !out.is_empty() {
                s.emit_stream("stdout", &out);
            }
            Ok(Val::None)
        }
    }
}

/// A checked launch whose record is still to be read (see `Runtime::check_pending`).
pub(crate) struct PendingCheck {
    gpu: Rc<tilebook_cuda::Gpu>,
    jit: Rc<JitFunction>,
    args: Vec<KernelArg>,
}

impl PendingCheck {
    /// Whether a launch is the same kernel on the same arguments.
    fn is(&self, jit: &Rc<JitFunction>, args: &[KernelArg]) -> bool {
        Rc::ptr_eq(&self.jit, jit)
            && self.args.len() == args.len()
            && self.args.iter().zip(args).all(|(a, b)| match (a, b) {
                (KernelArg::Tensor(x), KernelArg::Tensor(y)) => Rc::ptr_eq(x, y),
                (KernelArg::Int(x, _), KernelArg::Int(y, _)) => x == y,
                (KernelArg::Float(x), KernelArg::Float(y)) => x.to_bits() == y.to_bits(),
                _ => false,
            })
    }
}

/// Read the record of a checked launch made inside a measurement.
pub(crate) fn finish_pending_check(s: &mut dyn Host) -> R<()> {
    let Some(p) = s.check_pending.take() else {
        return Ok(());
    };
    checked::read_record(s, &p.gpu, &p.jit, &p.args)
}

fn launch_gpu(
    g: &Rc<tilebook_cuda::Gpu>,
    jit: &JitFunction,
    func: &tilebook_cuda::GpuFunction,
    grid: [u32; 3],
    args: &[KernelArg],
    raw: &[tilebook_cuda::Arg],
) -> R<()> {
    // Asynchronous, like CUDA: reading a result or synchronising waits for it.
    static SYNC: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let sync = *SYNC.get_or_init(|| std::env::var("TILEBOOK_SYNC_LAUNCH").is_ok_and(|v| v == "1"));
    let result = if sync {
        g.launch(func, grid, raw).and_then(|_| g.synchronize())
    } else {
        g.launch(func, grid, raw)
    };
    for a in args {
        if let KernelArg::Tensor(t) = a {
            t.storage.mark_device_written();
        }
    }
    crate::tensor::live::mark_escaped_written();
    result.map_err(|e| {
        Exc::new(
            "RuntimeError",
            format!("CUDA error in kernel `{}`: {e}", jit.name),
        )
    })
}

/// Run the CPU backend on copies of the tensor arguments (the reference).
/// Arguments that share a storage (tutorial 06 passes its `lse` tensor
/// again for an unused `Visits`) share one copy, so the CPU backend's
/// writes through one are seen through the other, as on the GPU.
fn run_cpu_on_copies(
    jit: &JitFunction,
    c: &Compiled,
    grid: [u32; 3],
    args: &[KernelArg],
) -> R<Vec<KernelArg>> {
    let mut shared: HashMap<*const crate::tensor::Storage, Rc<crate::tensor::Storage>> =
        HashMap::new();
    let copies: Vec<KernelArg> = args
        .iter()
        .map(|a| match a {
            KernelArg::Tensor(t) => {
                let storage = shared
                    .entry(Rc::as_ptr(&t.storage))
                    .or_insert_with(|| {
                        let storage = crate::tensor::Storage::new(t.storage.bytes());
                        // SAFETY: both storages hold `bytes` bytes.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                t.storage.ptr(),
                                storage.ptr(),
                                t.storage.bytes(),
                            )
                        };
                        storage
                    })
                    .clone();
                let mut copy = (**t).clone();
                copy.storage = storage;
                KernelArg::Tensor(Rc::new(copy))
            }
            other => other.clone(),
        })
        .collect();
    run_cpu(jit, c, grid, &copies, None)?;
    Ok(copies)
}

/// Compare every tensor argument after a GPU launch with the CPU backend's result.
/// With `fp8_acc` (see `GpuKernel::fp8_accumulation`), each element may also
/// differ by 2^-9 of the tensor's largest magnitude: what the hardware's
/// narrower fp8 accumulator loses, not what a wrong tile or mask would.
fn compare_with_cpu(
    jit: &JitFunction,
    args: &[KernelArg],
    copies: &[KernelArg],
    fp8_acc: bool,
) -> R<()> {
    let names: Vec<&str> = jit
        .params
        .iter()
        .filter(|p| !p.constexpr)
        .map(|p| p.name.as_str())
        .collect();
    for (i, (a, c)) in args.iter().zip(copies).enumerate() {
        let (KernelArg::Tensor(g), KernelArg::Tensor(cpu)) = (a, c) else {
            continue;
        };
        let (tol_abs, tol_rel) = match g.dtype {
            DType::F64 => (1e-9, 1e-9),
            DType::F32 => (1e-5, 2e-4),
            DType::F16 => (1e-3, 2e-3),
            DType::BF16 => (1e-2, 1e-2),
            d if d.is_float() => (1e-1, 1e-1),
            _ => (0.0, 0.0),
        };
        let gv = g.values();
        let cv = cpu.values();
        let tol_abs = if fp8_acc && g.dtype.is_float() {
            let largest = cv
                .iter()
                .map(|v| v.f().abs())
                .filter(|v| v.is_finite())
                .fold(0.0, f64::max);
            tol_abs + largest / 512.0
        } else {
            tol_abs
        };
        for (j, (x, y)) in gv.iter().zip(&cv).enumerate() {
            let (x, y) = (x.f(), y.f());
            let same = x == y
                || (x.is_nan() && y.is_nan())
                || (x - y).abs() <= tol_abs + tol_rel * y.abs();
            if !same {
                return Err(Exc::new(
                    "AssertionError",
                    format!(
                        "GPU and CPU backends disagree in kernel `{}` on `{}` element {j}: GPU {x}, CPU {y}",
                        jit.name,
                        names.get(i).copied().unwrap_or("?")
                    ),
                ));
            }
        }
    }
    Ok(())
}
