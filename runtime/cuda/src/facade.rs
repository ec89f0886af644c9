//! The types the rest of tilebook uses. Each stands for an object either in
//! this process (`driver`, the in-process design) or in the session's GPU
//! worker process (`remote`), chosen when a device is opened: the worker
//! where the binary serves as one (`serve_from_this_binary`) unless
//! `TILEBOOK_GPU_WORKER=0`, in-process otherwise.

use crate::driver as local;
use crate::remote::{self, RemoteBuffer, RemoteComm, RemoteFunction, RemoteGpu, RemoteMark};
use crate::{Arg, BlasType, Collective, DeviceInfo, NcclType, Operand};
use std::sync::{Arc, OnceLock};

enum GpuImp {
    Local(local::Gpu),
    Remote(RemoteGpu),
}

/// The device the session uses (its facts through `Deref`).
pub struct Gpu {
    imp: GpuImp,
    info: DeviceInfo,
    /// What cubins of this device are valid for (`Loader::target`).
    target: String,
}

impl std::ops::Deref for Gpu {
    type Target = DeviceInfo;
    fn deref(&self) -> &DeviceInfo {
        &self.info
    }
}

enum BufImp {
    Local(local::DeviceBuffer),
    Remote(RemoteBuffer),
}

/// A device allocation.
pub struct DeviceBuffer {
    imp: BufImp,
    pub bytes: usize,
}

enum FnImp {
    Local(local::GpuFunction),
    Remote(RemoteFunction),
}

/// A kernel loaded from PTX.
pub struct GpuFunction {
    imp: FnImp,
    pub shared_bytes: u32,
    pub threads: u32,
    /// Registers per thread, and local memory per thread (spills), as the
    /// driver reports them for the loaded code.
    pub regs: u32,
    pub local_bytes: u32,
    /// The cubin the driver made from PTX (`Loader::load`), for the disk cache.
    pub cubin: Option<Arc<[u8]>>,
}

/// A recorded timing event.
pub struct Mark(MarkImp);

enum MarkImp {
    Local(local::Mark),
    Remote(RemoteMark),
}

enum LoaderImp {
    Local(local::Loader),
    Remote(RemoteGpu),
}

/// Loads PTX modules into a context; `Send` and `Sync`, unlike `Gpu`.
pub struct Loader {
    imp: LoaderImp,
    max_shared: u32,
    target: String,
}

enum CommImp {
    Local(crate::nccl::Communicator),
    Remote(RemoteComm),
}

/// A communicator over a list of devices (rank i is `ordinals[i]`).
pub struct Communicator {
    imp: CommImp,
    pub ordinals: Vec<u32>,
}

const MIXED: &str = "an object of another GPU context";

/// Whether libcuda can be loaded, probed once per process: the probe
/// loads the library and resolves all its symbols, and with the GPU in a
/// worker the session keeps no copy loaded, so each probe would load it
/// from scratch (about 1 ms).
fn culib_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only probes whether libcuda can be loaded.
    *PRESENT.get_or_init(|| unsafe { cudarc::driver::sys::is_culib_present() })
}

/// How many CUDA devices the driver shows this session (0 without a
/// driver or a device). Asked once from the worker (devices do not come
/// and go during a session; a device string names one at every call).
pub fn device_count() -> usize {
    static REMOTE_COUNT: OnceLock<usize> = OnceLock::new();
    if !culib_present() {
        return 0;
    }
    if remote::worker_enabled() {
        *REMOTE_COUNT.get_or_init(remote::device_count)
    } else {
        local::device_count()
    }
}

/// NCCL as the worker sees it, asked once (each probe loads the library).
fn remote_nccl() -> &'static (bool, Result<i32, String>) {
    static NCCL: OnceLock<(bool, Result<i32, String>)> = OnceLock::new();
    NCCL.get_or_init(remote::nccl)
}

/// Whether libnccl can be opened (where the GPU work runs).
pub fn nccl_available() -> bool {
    if remote::worker_enabled() {
        remote_nccl().0
    } else {
        crate::nccl::nccl_available()
    }
}

/// NCCL's version (22803 for 2.28.3), or why there is none.
pub fn nccl_version() -> Result<i32, String> {
    if remote::worker_enabled() {
        remote_nccl().1.clone()
    } else {
        crate::nccl::nccl_version()
    }
}

impl Gpu {
    /// Open device 0, or say why not (no driver, no device).
    pub fn open() -> Result<Gpu, String> {
        Gpu::open_device(0)
    }

    /// Open device `ordinal` (`cuda:N`): its primary context and stream.
    pub fn open_device(ordinal: u32) -> Result<Gpu, String> {
        Gpu::open_generation(ordinal, 0)
    }

    fn open_generation(ordinal: u32, generation: u32) -> Result<Gpu, String> {
        if !culib_present() {
            return Err("no CUDA driver (libcuda) on this machine".into());
        }
        if !remote::worker_enabled() {
            return local::Gpu::open_device(ordinal).map(|g| Gpu::from_local(g, generation));
        }
        let (r, info, target) = RemoteGpu::open(ordinal)?;
        Ok(Gpu {
            imp: GpuImp::Remote(r),
            info: DeviceInfo { generation, ..info },
            target,
        })
    }

    fn from_local(g: local::Gpu, generation: u32) -> Gpu {
        Gpu {
            info: DeviceInfo {
                generation,
                ..g.info.clone()
            },
            target: g.loader().target().to_string(),
            imp: GpuImp::Local(g),
        }
    }

    /// Whether this device's work runs in the session's worker process.
    pub fn in_worker(&self) -> bool {
        matches!(self.imp, GpuImp::Remote(_))
    }

    /// `C = A x B` through cuBLAS's `GemmEx` on the stream (column-major
    /// terms; see `cublas::Blas::gemm`).
    pub fn gemm(
        &self,
        t: BlasType,
        dims: (i32, i32, i32),
        a: Operand,
        b: Operand,
        c: u64,
        ldc: i32,
    ) -> Result<(), String> {
        match &self.imp {
            GpuImp::Local(g) => g.gemm(t, dims, a, b, c, ldc),
            GpuImp::Remote(g) => g.gemm(t, dims, a, b, c, ldc),
        }
    }

    /// The fault that poisoned this context, if one did (`None` while it is
    /// usable). Waits for the work in flight, which is where faults surface.
    pub fn context_fault(&self) -> Option<String> {
        match &self.imp {
            GpuImp::Local(g) => g.context_fault(),
            GpuImp::Remote(g) => g.context_fault(),
        }
    }

    /// Whether this context was abandoned by `rebuild`.
    pub fn is_lost(&self) -> bool {
        match &self.imp {
            GpuImp::Local(g) => g.is_lost(),
            GpuImp::Remote(g) => g.client.is_lost(),
        }
    }

    /// Abandon this (faulted) context and open a fresh one: in the worker
    /// design a new worker process, in-process a reset of the device's
    /// primary context (which current drivers refuse after an illegal
    /// address). Buffers and modules of this one become unusable.
    pub fn rebuild(&self) -> Result<Gpu, String> {
        match &self.imp {
            GpuImp::Local(g) => g
                .rebuild()
                .map(|fresh| Gpu::from_local(fresh, self.generation + 1)),
            GpuImp::Remote(g) => {
                g.client.abandon();
                Gpu::open_generation(self.ordinal, self.generation + 1)
            }
        }
    }

    pub fn alloc(&self, bytes: usize) -> Result<DeviceBuffer, String> {
        self.alloc_with(bytes, true)
    }

    /// A device allocation whose contents are whatever the memory held
    /// (`torch.empty`): no memset on the stream.
    pub fn alloc_uninit(&self, bytes: usize) -> Result<DeviceBuffer, String> {
        self.alloc_with(bytes, false)
    }

    fn alloc_with(&self, bytes: usize, zero: bool) -> Result<DeviceBuffer, String> {
        let imp = match &self.imp {
            GpuImp::Local(g) if zero => BufImp::Local(g.alloc(bytes)?),
            GpuImp::Local(g) => BufImp::Local(g.alloc_uninit(bytes)?),
            GpuImp::Remote(g) => BufImp::Remote(g.alloc(bytes, zero)?),
        };
        Ok(DeviceBuffer { imp, bytes })
    }

    /// (free, total) bytes of device memory.
    pub fn mem_info(&self) -> (usize, usize) {
        match &self.imp {
            GpuImp::Local(g) => g.mem_info(),
            GpuImp::Remote(g) => g.mem_info().unwrap_or((0, self.total_memory)),
        }
    }

    /// The raw device address of a buffer (for kernel arguments).
    pub fn address(&self, b: &DeviceBuffer) -> u64 {
        match (&self.imp, &b.imp) {
            (GpuImp::Local(g), BufImp::Local(b)) => g.address(b),
            (_, BufImp::Remote(b)) => b.addr,
            // A buffer of the in-process design on a worker's device: never
            // made (a session uses one design), and 0 faults rather than
            // touching memory.
            (GpuImp::Remote(_), BufImp::Local(_)) => 0,
        }
    }

    pub fn upload(&self, host: &[u8], b: &mut DeviceBuffer) -> Result<(), String> {
        if host.len() > b.bytes {
            return Err(format!(
                "copying {} bytes into a GPU buffer of {}",
                host.len(),
                b.bytes
            ));
        }
        match (&self.imp, &mut b.imp) {
            (GpuImp::Local(g), BufImp::Local(b)) => g.upload(host, b),
            (GpuImp::Remote(g), BufImp::Remote(b)) => g.upload(host, b),
            _ => Err(MIXED.into()),
        }
    }

    pub fn download(&self, b: &DeviceBuffer, host: &mut [u8]) -> Result<(), String> {
        match (&self.imp, &b.imp) {
            (GpuImp::Local(g), BufImp::Local(b)) => g.download(b, host),
            (GpuImp::Remote(g), BufImp::Remote(rb)) => {
                let n = host.len().min(b.bytes);
                g.download(rb, &mut host[..n])
            }
            _ => Err(MIXED.into()),
        }
    }

    pub fn synchronize(&self) -> Result<(), String> {
        match &self.imp {
            GpuImp::Local(g) => g.synchronize(),
            GpuImp::Remote(g) => g.synchronize(),
        }
    }

    /// Give freed buffers kept for reuse back (`torch.cuda.empty_cache`);
    /// the in-process design keeps none of its own.
    pub fn release_kept(&self) {
        if let GpuImp::Remote(g) = &self.imp {
            g.release_kept();
        }
    }

    /// A handle that loads modules into this context from any thread (the
    /// driver's JIT runs in parallel for configs compiled together).
    pub fn loader(&self) -> Loader {
        let imp = match &self.imp {
            GpuImp::Local(g) => LoaderImp::Local(g.loader()),
            GpuImp::Remote(g) => LoaderImp::Remote(g.clone()),
        };
        Loader {
            imp,
            max_shared: self.max_shared,
            target: self.target.clone(),
        }
    }

    /// Launch asynchronously on the stream. In the worker design a failure
    /// to launch is reported by the next GPU call.
    pub fn launch(&self, f: &GpuFunction, grid: [u32; 3], args: &[Arg]) -> Result<(), String> {
        match (&self.imp, &f.imp) {
            (GpuImp::Local(g), FnImp::Local(f)) => g.launch(f, grid, args),
            (GpuImp::Remote(g), FnImp::Remote(f)) => g.launch(f, grid, args),
            _ => Err(MIXED.into()),
        }
    }

    /// Overwrite `buf` with zeros on the stream (used to flush the L2 cache).
    pub fn zero(&self, buf: &mut DeviceBuffer) -> Result<(), String> {
        match (&self.imp, &mut buf.imp) {
            (GpuImp::Local(g), BufImp::Local(b)) => g.zero(b),
            (GpuImp::Remote(g), BufImp::Remote(b)) => g.zero(b),
            _ => Err(MIXED.into()),
        }
    }

    /// Fill `buf` with a repeated element of 1, 2 or 4 bytes (`torch.full`
    /// on the GPU), on the stream. Returns false for other element sizes.
    pub fn fill(&self, buf: &mut DeviceBuffer, elem: &[u8]) -> Result<bool, String> {
        match (&self.imp, &mut buf.imp) {
            (GpuImp::Local(g), BufImp::Local(b)) => g.fill(b, elem),
            (GpuImp::Remote(g), BufImp::Remote(b)) => g.fill(b, elem),
            _ => Err(MIXED.into()),
        }
    }

    /// A timing event recorded now on the stream (pairs of them time the
    /// work between; see `elapsed_ms`).
    pub fn mark(&self) -> Result<Mark, String> {
        match &self.imp {
            GpuImp::Local(g) => g.mark().map(|m| Mark(MarkImp::Local(m))),
            GpuImp::Remote(g) => g.mark().map(|m| Mark(MarkImp::Remote(m))),
        }
    }

    /// Milliseconds between two marks (waits for the second).
    pub fn elapsed_ms(&self, start: &Mark, end: &Mark) -> Result<f32, String> {
        match (&self.imp, &start.0, &end.0) {
            (GpuImp::Local(g), MarkImp::Local(a), MarkImp::Local(b)) => g.elapsed_ms(a, b),
            (GpuImp::Remote(g), MarkImp::Remote(a), MarkImp::Remote(b)) => g.elapsed_ms(a, b),
            _ => Err(MIXED.into()),
        }
    }

    /// Milliseconds a closure's GPU work takes, measured with events on the stream.
    pub fn time<T>(&self, f: impl FnOnce() -> Result<T, String>) -> Result<(T, f32), String> {
        let start = self.mark()?;
        let r = f()?;
        let end = self.mark()?;
        Ok((r, self.elapsed_ms(&start, &end)?))
    }

    /// Whether kernels on this device can read and write `other`'s memory
    /// directly (NVLink or PCIe peer-to-peer), as the driver says.
    pub fn can_access_peer(&self, other: &Gpu) -> bool {
        match (&self.imp, &other.imp) {
            (GpuImp::Local(a), GpuImp::Local(b)) => a.can_access_peer(b),
            (GpuImp::Remote(a), GpuImp::Remote(b)) => a.can_access_peer(b),
            _ => false,
        }
    }

    /// Let kernels on this device use `owner`'s memory (see `peer`).
    pub fn enable_peer_access(&self, owner: &Gpu) -> Result<(), String> {
        match (&self.imp, &owner.imp) {
            (GpuImp::Local(a), GpuImp::Local(b)) => a.enable_peer_access(b),
            (GpuImp::Remote(a), GpuImp::Remote(b)) => a.enable_peer_access(b),
            _ => Err(MIXED.into()),
        }
    }

    /// Order this device's later work after what `other` queued so far.
    pub fn wait_for(&self, other: &Gpu) -> Result<(), String> {
        match (&self.imp, &other.imp) {
            (GpuImp::Local(a), GpuImp::Local(b)) => a.wait_for(b),
            (GpuImp::Remote(a), GpuImp::Remote(b)) => a.wait_for(b),
            _ => Err(MIXED.into()),
        }
    }

    /// Copy `bytes` bytes of `src` (on `src_gpu`) into `dst` (on this device).
    pub fn copy_from_peer(
        &self,
        dst: &mut DeviceBuffer,
        src_gpu: &Gpu,
        src: &DeviceBuffer,
        bytes: usize,
    ) -> Result<(), String> {
        match (&self.imp, &mut dst.imp, &src_gpu.imp, &src.imp) {
            (GpuImp::Local(a), BufImp::Local(d), GpuImp::Local(b), BufImp::Local(s)) => {
                a.copy_from_peer(d, b, s, bytes)
            }
            (GpuImp::Remote(a), BufImp::Remote(d), GpuImp::Remote(b), BufImp::Remote(s)) => {
                if bytes > dst.bytes.min(src.bytes) {
                    return Err(format!(
                        "copying {bytes} bytes between buffers of {} and {}",
                        src.bytes, dst.bytes
                    ));
                }
                a.copy_from_peer(d, b, s, bytes)
            }
            _ => Err(MIXED.into()),
        }
    }
}

impl Loader {
    /// Compile `ptx` to a cubin with the driver's JIT (its linker, so the
    /// cubin can be kept), load it and find kernel `name`. The function
    /// keeps the cubin (`GpuFunction::cubin`).
    pub fn load(
        &self,
        ptx: &str,
        name: &str,
        shared_bytes: u32,
        threads: u32,
    ) -> Result<GpuFunction, String> {
        match &self.imp {
            LoaderImp::Local(l) => l.load(ptx, name, shared_bytes, threads).map(from_local_fn),
            LoaderImp::Remote(g) => {
                self.check_shared(name, shared_bytes)?;
                g.load(ptx.as_bytes(), false, name, shared_bytes, threads)
                    .map(from_remote_fn)
            }
        }
    }

    /// Load a cubin this loader's `target` made; the function keeps it.
    pub fn load_cubin(
        &self,
        cubin: Arc<[u8]>,
        name: &str,
        shared_bytes: u32,
        threads: u32,
    ) -> Result<GpuFunction, String> {
        match &self.imp {
            LoaderImp::Local(l) => l
                .load_cubin(cubin, name, shared_bytes, threads)
                .map(from_local_fn),
            LoaderImp::Remote(g) => {
                self.check_shared(name, shared_bytes)?;
                g.load(&cubin, true, name, shared_bytes, threads)
                    .map(from_remote_fn)
            }
        }
    }

    /// What a cubin from this loader runs on: the architecture and the
    /// driver that compiled it (a cubin is reused only under the same).
    pub fn target(&self) -> &str {
        &self.target
    }

    fn check_shared(&self, name: &str, shared_bytes: u32) -> Result<(), String> {
        if shared_bytes > self.max_shared {
            return Err(format!(
                "`{name}` needs {shared_bytes} bytes of shared memory, more than this GPU's {} per block",
                self.max_shared
            ));
        }
        Ok(())
    }
}

fn from_local_fn(f: local::GpuFunction) -> GpuFunction {
    GpuFunction {
        shared_bytes: f.shared_bytes,
        threads: f.threads,
        regs: f.regs,
        local_bytes: f.local_bytes,
        cubin: f.cubin.clone(),
        imp: FnImp::Local(f),
    }
}

fn from_remote_fn(l: remote::Loaded) -> GpuFunction {
    GpuFunction {
        shared_bytes: l.shared_bytes,
        threads: l.threads,
        regs: l.regs,
        local_bytes: l.local_bytes,
        cubin: (!l.cubin.is_empty()).then(|| l.cubin.into()),
        imp: FnImp::Remote(l.f),
    }
}

/// The in-process contexts of `gpus`, if all are in-process.
fn locals<'a>(gpus: &[&'a Gpu]) -> Option<Vec<&'a local::Gpu>> {
    gpus.iter()
        .map(|g| match &g.imp {
            GpuImp::Local(l) => Some(l),
            GpuImp::Remote(_) => None,
        })
        .collect()
}

/// The worker's devices of `gpus`, if all are in the worker.
fn remotes<'a>(gpus: &[&'a Gpu]) -> Option<Vec<&'a RemoteGpu>> {
    gpus.iter()
        .map(|g| match &g.imp {
            GpuImp::Remote(r) => Some(r),
            GpuImp::Local(_) => None,
        })
        .collect()
}

impl Communicator {
    /// One communicator per device of `gpus`, in that order.
    pub fn new(gpus: &[&Gpu]) -> Result<Communicator, String> {
        let imp = match (locals(gpus), remotes(gpus)) {
            (Some(l), _) => CommImp::Local(crate::nccl::Communicator::new(&l)?),
            (_, Some(r)) => CommImp::Remote(RemoteComm::new(&r)?),
            _ => return Err(MIXED.into()),
        };
        let ordinals = gpus.iter().map(|g| g.ordinal).collect();
        Ok(Communicator { imp, ordinals })
    }

    /// Run one collective: `bufs[i]` is rank i's (send, receive) device
    /// addresses on `gpus[i]`, each holding what `Collective` says for
    /// `count` elements of `ty` (the caller checks the sizes).
    pub fn run(
        &self,
        gpus: &[&Gpu],
        what: Collective,
        bufs: &[(u64, u64)],
        count: usize,
        ty: NcclType,
    ) -> Result<(), String> {
        match &self.imp {
            CommImp::Local(c) => c.run(&locals(gpus).ok_or(MIXED)?, what, bufs, count, ty),
            CommImp::Remote(c) => c.run(&remotes(gpus).ok_or(MIXED)?, what, bufs, count, ty),
        }
    }
}
