//! Kernels through the on-disk cache (`crate::disk_cache`): a specialization
//! found there skips the front end and the GPU code generator; one compiled
//! here is written there.

use super::{Compiled, Front, Prepared};
use crate::disk_cache::{DiskCache, GpuEntry, KernelEntry};
use crate::{Backend, Host};
use base64::Engine;
use std::time::Instant;
use tilebook_nvptx::GpuKernel;

/// The on-disk key of a prepared launch: its in-memory key without the GPU
/// context's generation.
fn disk_key(p: &Prepared) -> String {
    let base = p.key.rsplit_once('#').map_or(&*p.key, |(a, _)| a);
    DiskCache::kernel_key(base)
}

/// Generated GPU code from disk, still to be loaded, with its cubin when
/// one was stored for this GPU and driver.
pub(super) type StoredGpu = (GpuKernel, Option<Vec<u8>>);

/// A specialization from disk: its tile IR (parsed back) and, on a GPU, its
/// generated code. `None` when there is no usable entry.
pub(super) fn load(s: &mut dyn Host, p: &Prepared) -> Option<(Front, Option<StoredGpu>)> {
    let start = Instant::now();
    let mut clock = tilebook_tir::StageClock::new();
    let disk = s.disk.as_ref()?;
    let e = disk.load_kernel(&disk_key(p))?;
    let kernel = tilebook_tir::parse::parse_kernel(&e.tir).ok()?;
    let gpu = match (&s.backend, e.gpu) {
        (Backend::Cuda(gpu), Some(g)) => {
            let cubin = (!g.cubin.is_empty() && g.cubin_target == gpu.loader().target())
                .then(|| {
                    base64::engine::general_purpose::STANDARD
                        .decode(&g.cubin)
                        .ok()
                })
                .flatten();
            let gk = GpuKernel {
                tensor_maps: tilebook_nvptx::tensor_maps_in(&g.ptx),
                name: g.name,
                llvm_ir: g.llvm_ir,
                ptx: g.ptx,
                shared_bytes: g.shared_bytes,
                num_warps: g.num_warps,
                check_bounds: p.check_bounds,
                // The stored code is the form the first build chose.
                branched_stores: false,
                stage_seconds: vec![],
            };
            Some((gk, cubin))
        }
        (Backend::Cuda(_), None) => return None,
        (Backend::Cpu, _) => None,
    };
    // A hit looks like a compile: what `tl.static_print` said is said again.
    if !e.static_out.is_empty() {
        s.emit_stream("stdout", &e.static_out);
    }
    clock.lap("disk cache");
    Some((
        Front {
            kernel,
            tir: e.tir,
            start,
            clock,
            static_out: e.static_out,
            from_disk: true,
        },
        gpu,
    ))
}

/// Write a specialization compiled in this session.
pub(super) fn store(s: &dyn Host, p: &Prepared, name: &str, c: &Compiled, static_out: &str) {
    let Some(disk) = &s.disk else { return };
    // A hand-edited kernel (`TILEBOOK_PTX_OVERRIDE`) is not what the key
    // names.
    if std::env::var_os("TILEBOOK_PTX_OVERRIDE").is_some() {
        return;
    }
    let target = match &s.backend {
        Backend::Cuda(g) => g.loader().target().to_string(),
        Backend::Cpu => String::new(),
    };
    let gpu = c.gpu.as_ref().map(|(gk, f)| GpuEntry {
        name: gk.name.clone(),
        llvm_ir: gk.llvm_ir.clone(),
        ptx: gk.ptx.clone(),
        shared_bytes: gk.shared_bytes,
        num_warps: gk.num_warps,
        cubin: f
            .cubin
            .as_ref()
            .map(|b| base64::engine::general_purpose::STANDARD.encode(b))
            .unwrap_or_default(),
        cubin_target: if f.cubin.is_some() {
            target.clone()
        } else {
            String::new()
        },
    });
    disk.store_kernel(&KernelEntry {
        key: disk_key(p),
        name: name.to_string(),
        tir: c.tir.clone(),
        static_out: static_out.to_string(),
        gpu,
    });
}
