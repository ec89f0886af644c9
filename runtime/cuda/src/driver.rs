//! The driver side (the `driver` feature): cudarc's bindings to libcuda,
//! used in the process that owns the GPU (the worker, or the session itself
//! in the in-process design; `facade` wraps both).

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr};
use cudarc::nvrtc::Ptx;

use crate::cublas;
use crate::{Arg, DeviceInfo};
use crate::{BlasType, Operand};
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The device the session uses.
pub struct Gpu {
    pub(crate) ctx: ManuallyDrop<Arc<CudaContext>>,
    pub(crate) stream: ManuallyDrop<Arc<CudaStream>>,
    /// Set when the context was abandoned after a fault (see the module docs).
    lost: Arc<AtomicBool>,
    /// Timing events for reuse by `mark`.
    events: EventPool,
    pub info: DeviceInfo,
    /// cuBLAS on the stream, opened on first use.
    blas: ManuallyDrop<std::sync::OnceLock<Result<cublas::Blas, String>>>,
}

/// Loads PTX modules into a context; `Send`, unlike `Gpu`.
pub struct Loader {
    ctx: Arc<CudaContext>,
    lost: Arc<AtomicBool>,
    max_shared: u32,
    /// What decides how many blocks an SM holds (`occupancy`).
    sm: crate::occupancy::Sm,
    target: String,
}

impl Loader {
    /// Compile `ptx` to a cubin with the driver's JIT (its linker, so the
    /// cubin can be kept), load it and find kernel `name`, raising its
    /// dynamic shared memory limit when it needs more than 48 KB. The
    /// function keeps the cubin (`GpuFunction::cubin`).
    pub fn load(
        &self,
        ptx: &str,
        name: &str,
        shared_bytes: u32,
        threads: u32,
    ) -> Result<GpuFunction, String> {
        // Refused before the driver's JIT spends time on it.
        self.check_shared(name, shared_bytes)?;
        self.ctx.bind_to_thread().map_err(err)?;
        let cubin = crate::link::ptx_to_cubin(ptx)
            .map_err(|e| format!("the driver rejected the PTX of `{name}`: {e}"))?;
        let first = self.load_cubin(cubin.into(), name, shared_bytes, threads)?;
        Ok(self
            .second_block(first, ptx, name)
            .unwrap_or_else(|first| first))
    }

    /// The build of `ptx` that fits more blocks per SM (two where
    /// registers keep `first`, its plain build, at one; more for dot-free
    /// code), if ptxas fitted it within its spill budget (see
    /// `occupancy`); `first` otherwise.
    fn second_block(
        &self,
        first: GpuFunction,
        ptx: &str,
        name: &str,
    ) -> Result<GpuFunction, GpuFunction> {
        use crate::occupancy::{keep_second, second_build};
        let (threads, shared) = (first.threads, first.shared_bytes);
        let Some(build) = second_build(ptx, threads, shared, first.regs, self.sm) else {
            return Err(first);
        };
        let second = crate::link::ptx_to_cubin(&build.ptx)
            .ok()
            .and_then(|c| self.load_cubin(c.into(), name, shared, threads).ok());
        match second {
            Some(f) if keep_second(&build, threads, f.regs, f.local_bytes, self.sm) => Ok(f),
            _ => Err(first),
        }
    }

    /// Load a cubin this loader's `target` made; the function keeps it
    /// (`GpuFunction::cubin`).
    pub fn load_cubin(
        &self,
        cubin: Arc<[u8]>,
        name: &str,
        shared_bytes: u32,
        threads: u32,
    ) -> Result<GpuFunction, String> {
        self.check_shared(name, shared_bytes)?;
        let module = self
            .ctx
            .load_module(Ptx::from_binary(cubin.to_vec()))
            .map_err(|e| format!("the driver rejected the code of `{name}`: {e:?}"))?;
        let mut f = self.function(&module, name, shared_bytes, threads)?;
        f.cubin = Some(cubin);
        Ok(f)
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

    fn function(
        &self,
        module: &Arc<cudarc::driver::CudaModule>,
        name: &str,
        shared_bytes: u32,
        threads: u32,
    ) -> Result<GpuFunction, String> {
        let func = module.load_function(name).map_err(err)?;
        if shared_bytes > 48 * 1024 {
            func.set_attribute(
                cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                shared_bytes as i32,
            )
            .map_err(|e| format!("`{name}` needs {shared_bytes} bytes of shared memory, more than this GPU allows ({e:?})"))?;
        }
        let regs = func.num_regs().unwrap_or(0) as u32;
        let local_bytes = func.local_size_bytes().unwrap_or(0) as u32;
        Ok(GpuFunction {
            func: ManuallyDrop::new(func),
            lost: self.lost.clone(),
            shared_bytes,
            threads,
            regs,
            local_bytes,
            cubin: None,
        })
    }
}

/// A recorded timing event (leaked, like every object of the context, if
/// the context is lost before it drops).
pub struct Mark {
    ev: ManuallyDrop<cudarc::driver::CudaEvent>,
    lost: Arc<AtomicBool>,
    /// Where the event goes back for the next mark (creating and destroying
    /// an event costs more host time than recording one).
    pool: EventPool,
}

type EventPool = std::rc::Rc<std::cell::RefCell<Vec<cudarc::driver::CudaEvent>>>;

/// Events kept for reuse at most (two per timed launch are in use at once).
const POOLED_EVENTS: usize = 1024;

/// Events created with the context: two for each launch a cell's timing
/// footer times (`TIMED_PER_CELL` of the kernels runtime), with room to spare.
const PREPARED_EVENTS: usize = 64;

impl Drop for Mark {
    fn drop(&mut self) {
        if self.lost.load(Ordering::Relaxed) {
            return;
        }
        // SAFETY: taken once, here; `ev` is not used afterwards.
        let ev = unsafe { ManuallyDrop::take(&mut self.ev) };
        let mut pool = self.pool.borrow_mut();
        if pool.len() < POOLED_EVENTS {
            pool.push(ev);
        }
    }
}

/// A device allocation.
pub struct DeviceBuffer {
    pub(crate) slice: ManuallyDrop<CudaSlice<u8>>,
    lost: Arc<AtomicBool>,
    pub bytes: usize,
}

/// A kernel loaded from PTX.
pub struct GpuFunction {
    func: ManuallyDrop<CudaFunction>,
    lost: Arc<AtomicBool>,
    pub shared_bytes: u32,
    pub threads: u32,
    /// Registers per thread, and local memory per thread (spills), as the
    /// driver reports them for the loaded code.
    pub regs: u32,
    pub local_bytes: u32,
    /// The cubin the driver made from PTX (`Loader::load`), for the disk cache.
    pub cubin: Option<Arc<[u8]>>,
}

/// Drop `x` unless its context was abandoned (then leak it).
fn release<T>(x: &mut ManuallyDrop<T>, lost: &AtomicBool) {
    if !lost.load(Ordering::Relaxed) {
        // SAFETY: called once, from the owner's `drop`.
        unsafe { ManuallyDrop::drop(x) }
    }
}

impl std::ops::Deref for Gpu {
    type Target = DeviceInfo;
    fn deref(&self) -> &DeviceInfo {
        &self.info
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        let pooled = std::mem::take(&mut *self.events.borrow_mut());
        if self.lost.load(Ordering::Relaxed) {
            // Objects of an abandoned context are leaked, not destroyed.
            pooled.into_iter().for_each(std::mem::forget);
        }
        release(&mut self.blas, &self.lost);
        release(&mut self.stream, &self.lost);
        release(&mut self.ctx, &self.lost);
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        release(&mut self.slice, &self.lost);
    }
}

impl Drop for GpuFunction {
    fn drop(&mut self) {
        release(&mut self.func, &self.lost);
    }
}

/// Driver errors after which the context cannot be used again.
fn is_sticky(code: cudarc::driver::sys::CUresult) -> bool {
    use cudarc::driver::sys::CUresult::*;
    matches!(
        code,
        CUDA_ERROR_ILLEGAL_ADDRESS
            | CUDA_ERROR_MISALIGNED_ADDRESS
            | CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUDA_ERROR_INVALID_PC
            | CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUDA_ERROR_LAUNCH_FAILED
            | CUDA_ERROR_ASSERT
            | CUDA_ERROR_ECC_UNCORRECTABLE
            | CUDA_ERROR_CONTEXT_IS_DESTROYED
    )
}

/// The device's default memory pool (the one `cuMemAllocAsync` draws from).
pub(crate) fn default_pool(ctx: &CudaContext) -> Option<cudarc::driver::sys::CUmemoryPool> {
    use cudarc::driver::sys;
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    let _ = ctx.bind_to_thread();
    // SAFETY: `pool` is a valid out-pointer; the device handle is the context's.
    let r = unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device()) };
    (r == sys::CUresult::CUDA_SUCCESS && !pool.is_null()).then_some(pool)
}

/// Let the default pool keep freed memory for reuse (see the module docs).
fn keep_pool_memory(ctx: &CudaContext) {
    use cudarc::driver::sys;
    if let Some(pool) = default_pool(ctx) {
        let mut keep = u64::MAX;
        // SAFETY: the release threshold attribute takes a pointer to a u64.
        unsafe {
            sys::cuMemPoolSetAttribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                &mut keep as *mut u64 as *mut std::ffi::c_void,
            );
        }
    }
}

/// Release the default pool's unused memory to the driver.
fn trim_pool(ctx: &CudaContext) {
    if let Some(pool) = default_pool(ctx) {
        // SAFETY: trimming a valid pool to zero unused bytes.
        unsafe { cudarc::driver::sys::cuMemPoolTrimTo(pool, 0) };
    }
}

fn err(e: impl std::fmt::Debug) -> String {
    format!("{e:?}")
}

/// How many CUDA devices the driver shows this process (0 without a
/// driver or a device).
pub fn device_count() -> usize {
    // SAFETY: only probes whether libcuda can be loaded.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return 0;
    }
    std::panic::catch_unwind(CudaContext::device_count)
        .ok()
        .and_then(Result::ok)
        .map_or(0, |n| n.max(0) as usize)
}

impl Gpu {
    /// Open device `ordinal` (`cuda:N`): its primary context and stream.
    pub fn open_device(ordinal: u32) -> Result<Gpu, String> {
        Gpu::open_generation(ordinal, 0)
    }

    fn open_generation(ordinal: u32, generation: u32) -> Result<Gpu, String> {
        // SAFETY: only probes whether libcuda can be loaded.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err("no CUDA driver (libcuda) on this machine".into());
        }
        let ctx = std::panic::catch_unwind(|| CudaContext::new(ordinal as usize))
            .map_err(|_| "the CUDA driver could not be initialised".to_string())?
            .map_err(|e| format!("no usable CUDA device: {e:?}"))?;
        // One stream per context (the default one) orders all of this
        // context's work, so cudarc's cross-stream event tracking has
        // nothing to track; left on, it creates and destroys two CUDA
        // events per allocation (a third of `torch.empty`'s host time).
        // SAFETY: no other stream is ever created on this context.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        let name = ctx.name().map_err(err)?;
        let (major, minor) = ctx.compute_capability().map_err(err)?;
        let total_memory = ctx.total_mem().map_err(err)?;
        let max_shared = ctx
            .attribute(
                cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )
            .map_err(err)? as u32;
        use cudarc::driver::sys::CUdevice_attribute as A;
        let sm_count = ctx
            .attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(err)? as u32;
        let max_regs = ctx
            .attribute(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)
            .map_err(err)? as u32;
        if ctx.has_async_alloc() {
            keep_pool_memory(&ctx);
        }
        // Timing events made now rather than during a cell's first timed
        // launches, where creating them held the launches up (bench/NOTES.md,
        // session 29).
        let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let events: Vec<_> = (0..PREPARED_EVENTS)
            .map_while(|_| ctx.new_event(timing).ok())
            .collect();
        Ok(Gpu {
            ctx: ManuallyDrop::new(ctx),
            stream: ManuallyDrop::new(stream),
            lost: Arc::new(AtomicBool::new(false)),
            events: std::rc::Rc::new(std::cell::RefCell::new(events)),
            info: DeviceInfo {
                name,
                ordinal,
                arch: format!("sm_{major}{minor}"),
                driver_version: crate::link::driver_version(),
                total_memory,
                generation,
                max_shared,
                sm_count,
                max_regs,
            },
            blas: ManuallyDrop::new(std::sync::OnceLock::new()),
        })
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
        let blas = self
            .blas
            // SAFETY: the stream lives as long as `self`, which drops the
            // handle first.
            .get_or_init(|| unsafe { cublas::Blas::open(self.stream.cu_stream().cast()) });
        blas.as_ref()
            .map_err(|e| e.clone())?
            .gemm(t, dims, a, b, c, ldc)
    }

    /// The fault that poisoned this context, if one did (`None` while it is
    /// usable). Waits for the work in flight, which is where faults surface.
    pub fn context_fault(&self) -> Option<String> {
        if self.is_lost() {
            return Some("the context was abandoned".into());
        }
        match self.stream.synchronize() {
            Err(e) if is_sticky(e.0) => Some(format!("{e:?}")),
            _ => None,
        }
    }

    /// Whether this context was abandoned by `rebuild`.
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::Relaxed)
    }

    /// Abandon this (faulted) context, reset the device's primary context and
    /// open a fresh one. Buffers and modules of this one become unusable.
    pub fn rebuild(&self) -> Result<Gpu, String> {
        use cudarc::driver::sys;
        self.lost.store(true, Ordering::Relaxed);
        let dev = self.ctx.cu_device();
        // SAFETY: the abandoned context's objects are leaked, never used or
        // freed again. Unbind it from this thread and give back the one
        // retain its `CudaContext` holds (its drop never runs now), so that
        // the reset destroys the context rather than leaving it poisoned.
        unsafe {
            let _ = sys::cuCtxSetCurrent(std::ptr::null_mut());
            let _ = sys::cuDevicePrimaryCtxRelease_v2(dev);
            sys::cuDevicePrimaryCtxReset_v2(dev)
        }
        .result()
        .map_err(|e| format!("resetting the GPU failed: {e:?}"))?;
        Gpu::open_generation(self.ordinal, self.generation + 1)
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
        let slice = if zero {
            self.stream.alloc_zeros::<u8>(bytes.max(1))
        } else {
            // SAFETY: bytes need no initialisation to be valid `u8`s; readers
            // see unspecified values, as `torch.empty` promises.
            unsafe { self.stream.alloc::<u8>(bytes.max(1)) }
        };
        let slice = match slice {
            Err(_) if self.ctx.has_async_alloc() => {
                // Give the pool's cached memory back and try once more.
                let _ = self.synchronize();
                trim_pool(&self.ctx);
                if zero {
                    self.stream.alloc_zeros::<u8>(bytes.max(1))
                } else {
                    // SAFETY: as above.
                    unsafe { self.stream.alloc::<u8>(bytes.max(1)) }
                }
            }
            r => r,
        };
        let slice = slice.map_err(|e| {
            let free = self.ctx.mem_get_info().map(|(f, _)| f).unwrap_or(0);
            format!("out of GPU memory: asked for {bytes} bytes, {free} bytes free ({e:?})")
        })?;
        Ok(DeviceBuffer {
            slice: ManuallyDrop::new(slice),
            lost: self.lost.clone(),
            bytes,
        })
    }

    /// (free, total) bytes of device memory.
    pub fn mem_info(&self) -> (usize, usize) {
        self.ctx.mem_get_info().unwrap_or((0, self.total_memory))
    }

    /// The raw device address of a buffer (for kernel arguments).
    pub fn address(&self, b: &DeviceBuffer) -> u64 {
        let (p, _sync) = b.slice.device_ptr(&self.stream);
        p
    }

    pub fn upload(&self, host: &[u8], b: &mut DeviceBuffer) -> Result<(), String> {
        self.stream.memcpy_htod(host, &mut *b.slice).map_err(err)
    }

    pub fn download(&self, b: &DeviceBuffer, host: &mut [u8]) -> Result<(), String> {
        self.stream.memcpy_dtoh(&*b.slice, host).map_err(err)?;
        self.synchronize()
    }

    /// Copy `host` to device address `addr` on the stream (the worker's
    /// uploads, from its staging area; the driver has copied the bytes out
    /// of pageable memory when this returns).
    pub fn upload_at(&self, addr: u64, host: &[u8]) -> Result<(), String> {
        self.ctx.bind_to_thread().map_err(err)?;
        // SAFETY: the caller checked that `addr..addr + host.len()` lies in
        // one live allocation of this context.
        unsafe { cudarc::driver::result::memcpy_htod_async(addr, host, self.stream.cu_stream()) }
            .map_err(err)
    }

    /// Copy from device address `addr` into `host` and wait for it.
    pub fn download_at(&self, addr: u64, host: &mut [u8]) -> Result<(), String> {
        self.ctx.bind_to_thread().map_err(err)?;
        // SAFETY: as for `upload_at`; `host` outlives the copy, which is
        // waited for before returning.
        unsafe { cudarc::driver::result::memcpy_dtoh_async(host, addr, self.stream.cu_stream()) }
            .map_err(err)?;
        self.synchronize()
    }

    pub fn synchronize(&self) -> Result<(), String> {
        self.stream
            .synchronize()
            .map_err(|e| format!("the GPU reported an error: {e:?}"))
    }

    /// What decides how many blocks of a kernel an SM holds.
    fn sm(&self) -> crate::occupancy::Sm {
        use cudarc::driver::sys::CUdevice_attribute as A;
        let get = |a: A| {
            self.ctx
                .attribute(a)
                .ok()
                .and_then(|v| u32::try_from(v).ok())
        };
        crate::occupancy::Sm {
            regs: get(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)
                .unwrap_or(self.info.max_regs),
            shared: get(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR).unwrap_or(0),
            reserved_shared: get(A::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)
                .unwrap_or(1024),
            threads: get(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR).unwrap_or(0),
            blocks: get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR).unwrap_or(32),
        }
    }

    /// A handle that loads modules into this context from any thread (the
    /// driver's JIT runs in parallel for configs compiled together).
    pub fn loader(&self) -> Loader {
        Loader {
            ctx: (*self.ctx).clone(),
            lost: self.lost.clone(),
            max_shared: self.max_shared,
            sm: self.sm(),
            target: format!("{} driver {}", self.arch, self.driver_version),
        }
    }

    /// Launch asynchronously on the stream. The driver reads each argument
    /// through a pointer: every value sits in an 8-byte slot (an `i32` or
    /// `f32` in its low bytes, which is where it starts on a little-endian
    /// host), on the stack for up to `STACK_ARGS` arguments, so a launch
    /// allocates nothing (cudarc's builder grows three vectors per call).
    pub fn launch(&self, f: &GpuFunction, grid: [u32; 3], args: &[Arg]) -> Result<(), String> {
        const STACK_ARGS: usize = 32;
        let bits = |a: &Arg| match *a {
            Arg::Ptr(p) => p,
            Arg::I32(v) => v as u32 as u64,
            Arg::I64(v) => v as u64,
            Arg::F32(v) => v.to_bits() as u64,
            Arg::F64(v) => v.to_bits(),
            Arg::TensorMap(_) => 0,
        };
        // Tensor maps are 128-byte parameters: encoded into a vector made
        // at its final size (their addresses must not move), only when the
        // kernel takes any.
        let maps: Vec<sys::CUtensorMap> = args
            .iter()
            .filter_map(|a| match a {
                Arg::TensorMap(m) => Some(encode_tensor_map(m)),
                _ => None,
            })
            .collect::<Result<_, String>>()?;
        let mut stack_vals = [0u64; STACK_ARGS];
        let mut heap_vals = vec![];
        let vals: &mut [u64] = if args.len() <= STACK_ARGS {
            &mut stack_vals[..args.len()]
        } else {
            heap_vals.resize(args.len(), 0);
            &mut heap_vals
        };
        for (v, a) in vals.iter_mut().zip(args) {
            *v = bits(a);
        }
        let mut stack_ptrs = [std::ptr::null_mut::<std::ffi::c_void>(); STACK_ARGS];
        let mut heap_ptrs = vec![];
        let ptrs: &mut [*mut std::ffi::c_void] = if args.len() <= STACK_ARGS {
            &mut stack_ptrs[..args.len()]
        } else {
            heap_ptrs.resize(args.len(), std::ptr::null_mut());
            &mut heap_ptrs
        };
        let mut next_map = maps.iter();
        for ((p, v), a) in ptrs.iter_mut().zip(vals.iter_mut()).zip(args) {
            *p = match (a, &mut next_map) {
                (Arg::TensorMap(_), it) => match it.next() {
                    Some(m) => m as *const sys::CUtensorMap as *mut std::ffi::c_void,
                    None => return Err("internal: a tensor map was not encoded".into()),
                },
                _ => v as *mut u64 as *mut std::ffi::c_void,
            };
        }
        self.ctx.bind_to_thread().map_err(err)?;
        // SAFETY: the function and stream belong to this context (bound
        // above); `ptrs` holds one pointer per kernel parameter, in order,
        // each to a value at least as wide as the parameter (the compiler
        // derived the parameters from the same signature), all alive until
        // the call returns (the driver copies them).
        unsafe {
            cudarc::driver::result::launch_kernel(
                f.func.cu_function(),
                (grid[0], grid[1], grid[2]),
                (f.threads, 1, 1),
                f.shared_bytes,
                self.stream.cu_stream(),
                ptrs,
            )
        }
        .map_err(|e| format!("launch failed: {e:?}"))
    }

    /// Overwrite `buf` with zeros on the stream (used to flush the L2 cache).
    pub fn zero(&self, buf: &mut DeviceBuffer) -> Result<(), String> {
        self.stream.memset_zeros(&mut *buf.slice).map_err(err)
    }

    /// A timing event recorded now on the stream (pairs of them time the
    /// work between; see `elapsed_ms`).
    pub fn mark(&self) -> Result<Mark, String> {
        let reused = self.events.borrow_mut().pop();
        let e = match reused {
            Some(e) => e,
            None => {
                let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
                self.ctx.new_event(timing).map_err(err)?
            }
        };
        e.record(&self.stream).map_err(err)?;
        Ok(Mark {
            ev: ManuallyDrop::new(e),
            lost: self.lost.clone(),
            pool: self.events.clone(),
        })
    }

    /// Milliseconds between two marks (waits for the second).
    pub fn elapsed_ms(&self, start: &Mark, end: &Mark) -> Result<f32, String> {
        end.ev.synchronize().map_err(err)?;
        start.ev.elapsed_ms(&end.ev).map_err(err)
    }
}

/// `cuTensorMapEncodeTiled` for one tensor map argument: the tensor's
/// sizes and byte strides, a box of `boxes` elements per copy, written to
/// shared memory in the swizzled layout the kernel's tiles use.
fn encode_tensor_map(m: &crate::TensorMap) -> Result<sys::CUtensorMap, String> {
    use sys::CUtensorMapDataType_enum as T;
    let rank = m.rank as usize;
    if rank == 0 {
        // A map the kernel declares but no copy reads.
        return Ok(sys::CUtensorMap { opaque: [0; 16] });
    }
    if !(1..=5).contains(&rank) {
        return Err(format!("a tensor map of rank {rank}"));
    }
    let dtype = match m.dtype {
        0 => T::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        1 => T::CU_TENSOR_MAP_DATA_TYPE_UINT16,
        2 => T::CU_TENSOR_MAP_DATA_TYPE_UINT32,
        6 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        7 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        9 => T::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        d => return Err(format!("a tensor map of element type {d}")),
    };
    let swizzle = match m.swizzle {
        0 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
        32 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
        64 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
        128 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
        s => return Err(format!("a tensor map swizzle of {s} bytes")),
    };
    let fill = if m.nan_fill {
        sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
    } else {
        sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
    };
    let ones = [1u32; 5];
    let mut out = sys::CUtensorMap { opaque: [0; 16] };
    // SAFETY: the arrays hold at least `rank` (strides: `rank - 1`)
    // entries and outlive the call; `out` is a writable tensor map.
    let r = unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut out,
            dtype,
            m.rank,
            m.addr as *mut std::ffi::c_void,
            m.dims.as_ptr(),
            m.strides.as_ptr(),
            m.boxes.as_ptr(),
            ones.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            fill,
        )
    };
    match r {
        sys::CUresult::CUDA_SUCCESS => Ok(out),
        e => Err(format!(
            "the driver refused a tensor descriptor for a bulk copy ({e:?}): sizes {:?}, byte strides {:?}, box {:?}",
            &m.dims[..rank],
            &m.strides[..rank - 1],
            &m.boxes[..rank]
        )),
    }
}
