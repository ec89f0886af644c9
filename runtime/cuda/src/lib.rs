//! The CUDA runtime: one device, its default stream, device memory, modules
//! loaded from PTX by the driver's JIT, launches and timing events.
//!
//! libcuda is opened at run time (cudarc's dynamic loading); `Gpu::open`
//! checks for it first, so a machine without a driver gets an error value and
//! the session falls back to the CPU backend.
//!
//! Architecture invariant: knows nothing of the tile IR, the compiler or the
//! session; it moves bytes and launches functions.

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::Ptx;
use std::sync::Arc;

/// The device the session uses.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    pub name: String,
    /// `sm_90` style architecture name.
    pub arch: String,
    pub total_memory: usize,
}

/// A device allocation.
pub struct DeviceBuffer {
    slice: CudaSlice<u8>,
    pub bytes: usize,
}

/// A kernel loaded from PTX.
pub struct GpuFunction {
    func: CudaFunction,
    pub shared_bytes: u32,
    pub threads: u32,
}

/// One kernel argument, by value.
#[derive(Copy, Clone, Debug)]
pub enum Arg {
    Ptr(u64),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
}

fn err(e: impl std::fmt::Debug) -> String {
    format!("{e:?}")
}

impl Gpu {
    /// Open device 0, or say why not (no driver, no device).
    pub fn open() -> Result<Gpu, String> {
        // SAFETY: only probes whether libcuda can be loaded.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err("no CUDA driver (libcuda) on this machine".into());
        }
        let ctx = std::panic::catch_unwind(|| CudaContext::new(0))
            .map_err(|_| "the CUDA driver could not be initialised".to_string())?
            .map_err(|e| format!("no usable CUDA device: {e:?}"))?;
        let stream = ctx.default_stream();
        let name = ctx.name().map_err(err)?;
        let (major, minor) = ctx.compute_capability().map_err(err)?;
        let total_memory = ctx.total_mem().map_err(err)?;
        Ok(Gpu {
            ctx,
            stream,
            name,
            arch: format!("sm_{major}{minor}"),
            total_memory,
        })
    }

    pub fn alloc(&self, bytes: usize) -> Result<DeviceBuffer, String> {
        let slice = self.stream.alloc_zeros::<u8>(bytes.max(1)).map_err(|e| {
            let free = self.ctx.mem_get_info().map(|(f, _)| f).unwrap_or(0);
            format!("out of GPU memory: asked for {bytes} bytes, {free} bytes free ({e:?})")
        })?;
        Ok(DeviceBuffer { slice, bytes })
    }

    /// The raw device address of a buffer (for kernel arguments).
    pub fn address(&self, b: &DeviceBuffer) -> u64 {
        let (p, _sync) = b.slice.device_ptr(&self.stream);
        p
    }

    pub fn upload(&self, host: &[u8], b: &mut DeviceBuffer) -> Result<(), String> {
        self.stream.memcpy_htod(host, &mut b.slice).map_err(err)
    }

    pub fn download(&self, b: &DeviceBuffer, host: &mut [u8]) -> Result<(), String> {
        self.stream.memcpy_dtoh(&b.slice, host).map_err(err)?;
        self.synchronize()
    }

    pub fn synchronize(&self) -> Result<(), String> {
        self.stream
            .synchronize()
            .map_err(|e| format!("the GPU reported an error: {e:?}"))
    }

    /// Load PTX (JIT-compiled by the driver) and find its kernel.
    pub fn load(
        &self,
        ptx: &str,
        name: &str,
        shared_bytes: u32,
        threads: u32,
    ) -> Result<GpuFunction, String> {
        let module = self
            .ctx
            .load_module(Ptx::from_src(ptx))
            .map_err(|e| format!("the driver rejected the PTX of `{name}`: {e:?}"))?;
        let func = module.load_function(name).map_err(err)?;
        if shared_bytes > 48 * 1024 {
            func.set_attribute(
                cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                shared_bytes as i32,
            )
            .map_err(|e| format!("`{name}` needs {shared_bytes} bytes of shared memory, more than this GPU allows ({e:?})"))?;
        }
        Ok(GpuFunction {
            func,
            shared_bytes,
            threads,
        })
    }

    /// Launch asynchronously on the stream.
    pub fn launch(&self, f: &GpuFunction, grid: [u32; 3], args: &[Arg]) -> Result<(), String> {
        let cfg = LaunchConfig {
            grid_dim: (grid[0], grid[1], grid[2]),
            block_dim: (f.threads, 1, 1),
            shared_mem_bytes: f.shared_bytes,
        };
        let mut b = self.stream.launch_builder(&f.func);
        for a in args {
            match a {
                Arg::Ptr(p) => b.arg(p),
                Arg::I32(v) => b.arg(v),
                Arg::I64(v) => b.arg(v),
                Arg::F32(v) => b.arg(v),
                Arg::F64(v) => b.arg(v),
            };
        }
        // SAFETY: the arguments match the kernel's parameters, which the compiler derived from the same signature.
        unsafe { b.launch(cfg) }
            .map(|_| ())
            .map_err(|e| format!("launch failed: {e:?}"))
    }

    /// Overwrite `buf` with zeros on the stream (used to flush the L2 cache).
    pub fn zero(&self, buf: &mut DeviceBuffer) -> Result<(), String> {
        self.stream.memset_zeros(&mut buf.slice).map_err(err)
    }

    /// Milliseconds a closure's GPU work takes, measured with events on the stream.
    pub fn time<T>(&self, f: impl FnOnce() -> Result<T, String>) -> Result<(T, f32), String> {
        // cudarc's default events cannot be timed; ask for timing explicitly.
        let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = self.ctx.new_event(timing).map_err(err)?;
        let end = self.ctx.new_event(timing).map_err(err)?;
        start.record(&self.stream).map_err(err)?;
        let r = f()?;
        end.record(&self.stream).map_err(err)?;
        end.synchronize().map_err(err)?;
        Ok((r, start.elapsed_ms(&end).map_err(err)?))
    }
}
