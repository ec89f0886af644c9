//! A build without the `driver` feature (tilebook's light build, the CPU
//! backend alone): the same types as the driver side, but `Gpu::open` says
//! there is no GPU support, so no `Gpu`, buffer or function is ever made and
//! their methods cannot be reached.

use crate::{Arg, BlasType, Collective, NcclType, Operand};

/// No value of this type exists.
#[derive(Clone, Copy, Debug)]
enum Never {}

/// What `Gpu::open` says in this build.
pub const NO_DRIVER: &str =
    "this build of tilebook has no GPU support (built without the `gpu` feature)";

pub struct Gpu {
    never: Never,
}

impl std::ops::Deref for Gpu {
    type Target = crate::DeviceInfo;
    fn deref(&self) -> &crate::DeviceInfo {
        match self.never {}
    }
}

pub struct Loader {
    never: Never,
}

pub struct Mark {
    never: Never,
}

pub struct DeviceBuffer {
    never: Never,
    pub bytes: usize,
}

pub struct GpuFunction {
    never: Never,
    pub shared_bytes: u32,
    pub threads: u32,
    pub regs: u32,
    pub local_bytes: u32,
    pub cubin: Option<std::sync::Arc<[u8]>>,
}

/// No GPU worker in this build (`run_if_worker` of the driver build).
pub fn run_if_worker() -> Option<i32> {
    None
}

/// Nothing to serve without the driver.
pub fn serve_from_this_binary() {}

pub fn worker_enabled() -> bool {
    false
}

pub fn probe_worker(_: &std::path::Path) -> Result<(usize, u32), String> {
    Err(NO_DRIVER.into())
}

/// No driver in this build: no devices.
pub fn device_count() -> usize {
    0
}

impl Loader {
    pub fn load(&self, _: &str, _: &str, _: u32, _: u32) -> Result<GpuFunction, String> {
        match self.never {}
    }
    pub fn load_cubin(
        &self,
        _: std::sync::Arc<[u8]>,
        _: &str,
        _: u32,
        _: u32,
    ) -> Result<GpuFunction, String> {
        match self.never {}
    }
    pub fn target(&self) -> &str {
        match self.never {}
    }
}

/// No NCCL without the driver.
pub fn nccl_available() -> bool {
    false
}

pub fn nccl_version() -> Result<i32, String> {
    Err(NO_DRIVER.into())
}

pub struct Communicator {
    never: Never,
    pub ordinals: Vec<u32>,
}

impl Communicator {
    pub fn new(_: &[&Gpu]) -> Result<Communicator, String> {
        Err(NO_DRIVER.into())
    }

    pub fn run(
        &self,
        _: &[&Gpu],
        _: Collective,
        _: &[(u64, u64)],
        _: usize,
        _: NcclType,
    ) -> Result<(), String> {
        match self.never {}
    }
}

impl Gpu {
    pub fn open() -> Result<Gpu, String> {
        Err(NO_DRIVER.into())
    }

    pub fn open_device(_: u32) -> Result<Gpu, String> {
        Err(NO_DRIVER.into())
    }

    pub fn in_worker(&self) -> bool {
        match self.never {}
    }

    pub fn can_access_peer(&self, _: &Gpu) -> bool {
        match self.never {}
    }

    pub fn enable_peer_access(&self, _: &Gpu) -> Result<(), String> {
        match self.never {}
    }

    pub fn wait_for(&self, _: &Gpu) -> Result<(), String> {
        match self.never {}
    }

    pub fn fill(&self, _: &mut DeviceBuffer, _: &[u8]) -> Result<bool, String> {
        match self.never {}
    }

    pub fn copy_from_peer(
        &self,
        _: &mut DeviceBuffer,
        _: &Gpu,
        _: &DeviceBuffer,
        _: usize,
    ) -> Result<(), String> {
        match self.never {}
    }

    pub fn gemm(
        &self,
        _: BlasType,
        _: (i32, i32, i32),
        _: Operand,
        _: Operand,
        _: u64,
        _: i32,
    ) -> Result<(), String> {
        match self.never {}
    }

    pub fn context_fault(&self) -> Option<String> {
        match self.never {}
    }

    pub fn is_lost(&self) -> bool {
        match self.never {}
    }

    pub fn rebuild(&self) -> Result<Gpu, String> {
        match self.never {}
    }

    pub fn alloc(&self, _: usize) -> Result<DeviceBuffer, String> {
        match self.never {}
    }

    pub fn alloc_uninit(&self, _: usize) -> Result<DeviceBuffer, String> {
        match self.never {}
    }

    pub fn mem_info(&self) -> (usize, usize) {
        match self.never {}
    }

    pub fn address(&self, _: &DeviceBuffer) -> u64 {
        match self.never {}
    }

    pub fn upload(&self, _: &[u8], _: &mut DeviceBuffer) -> Result<(), String> {
        match self.never {}
    }

    pub fn download(&self, _: &DeviceBuffer, _: &mut [u8]) -> Result<(), String> {
        match self.never {}
    }

    pub fn synchronize(&self) -> Result<(), String> {
        match self.never {}
    }

    pub fn release_kept(&self) {
        match self.never {}
    }

    pub fn loader(&self) -> Loader {
        match self.never {}
    }

    pub fn launch(&self, _: &GpuFunction, _: [u32; 3], _: &[Arg]) -> Result<(), String> {
        match self.never {}
    }

    pub fn zero(&self, _: &mut DeviceBuffer) -> Result<(), String> {
        match self.never {}
    }

    pub fn mark(&self) -> Result<Mark, String> {
        match self.never {}
    }

    pub fn elapsed_ms(&self, _: &Mark, _: &Mark) -> Result<f32, String> {
        match self.never {}
    }

    pub fn time<T>(&self, _: impl FnOnce() -> Result<T, String>) -> Result<(T, f32), String> {
        match self.never {}
    }
}

impl Mark {
    /// Keeps the field read (the type has no value to read it from).
    #[allow(dead_code)]
    fn never(&self) -> ! {
        match self.never {}
    }
}

impl DeviceBuffer {
    #[allow(dead_code)]
    fn never(&self) -> ! {
        match self.never {}
    }
}

impl GpuFunction {
    #[allow(dead_code)]
    fn never(&self) -> ! {
        match self.never {}
    }
}
