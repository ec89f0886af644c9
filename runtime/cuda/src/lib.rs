//! The CUDA runtime: each device's context and default stream, device
//! memory, modules loaded from PTX by the driver's JIT, launches, timing
//! events, copies between devices and NCCL collectives across them.
//!
//! libcuda is opened at run time (cudarc's dynamic loading); `Gpu::open`
//! checks for it first, so a machine without a driver gets an error value and
//! the session falls back to the CPU backend.
//!
//! A kernel fault (illegal address, misaligned access, trap) poisons a CUDA
//! context for good: every later call fails with the same error.
//! `Gpu::context_fault` recognises that state and `Gpu::rebuild` resets the
//! device's primary context and opens a fresh one. Everything that belonged
//! to the old context (its buffers, modules, stream) is then leaked rather
//! than freed, since freeing it could release memory of the new context that
//! happens to sit at the same addresses.
//!
//! Device memory comes from the driver's stream-ordered allocator
//! (`cuMemAllocAsync`, through cudarc) on the device's default memory pool.
//! The pool's release threshold is raised to "keep everything", which turns
//! it into a caching allocator: memory freed by one `add(x, y)` call is
//! reused by the next instead of going back to the driver at every
//! synchronisation. When an allocation fails the pool is trimmed and the
//! allocation tried once more, so cached memory never causes an
//! out-of-memory error by itself.
//!
//! Architecture invariant: knows nothing of the tile IR, the compiler or the
//! session; it moves bytes and launches functions.

#[cfg(feature = "driver")]
mod cublas;
#[cfg(feature = "driver")]
mod driver;
#[cfg(feature = "driver")]
mod facade;
#[cfg(feature = "driver")]
mod ipc;
#[cfg(feature = "driver")]
mod link;
#[cfg(feature = "driver")]
mod nccl;
#[cfg(feature = "driver")]
mod occupancy;
#[cfg(feature = "driver")]
mod peer;
#[cfg(feature = "driver")]
mod remote;
#[cfg(feature = "driver")]
mod worker;
#[cfg(feature = "driver")]
pub use facade::*;
/// The compiler's marks the loader reads (the same text as
/// `tilebook_nvptx`'s, which this crate does not depend on; a test in
/// `tests/` holds the two equal).
#[cfg(feature = "driver")]
pub use occupancy::{LAZY_WAITS_MARK, TWO_BLOCKS_MARK};
#[cfg(feature = "driver")]
pub use remote::{probe_worker, serve_from_this_binary, worker_enabled};
#[cfg(feature = "driver")]
pub use worker::run_if_worker;

#[cfg(not(feature = "driver"))]
mod absent;
#[cfg(not(feature = "driver"))]
pub use absent::*;

/// The name of the first NVIDIA GPU as the kernel driver reports it under
/// `/proc`, without loading the CUDA driver library (for a REPL banner that
/// must not wait for CUDA to start). `None` when there is no such GPU.
pub fn probe_name() -> Option<String> {
    probe_names().into_iter().next()
}

/// The names of every NVIDIA GPU under `/proc`, in bus order (`%device`
/// lists them).
pub fn probe_names() -> Vec<String> {
    let mut dirs: Vec<_> = match std::fs::read_dir("/proc/driver/nvidia/gpus") {
        Ok(d) => d.flatten().map(|e| e.path()).collect(),
        Err(_) => return vec![],
    };
    dirs.sort();
    dirs.iter()
        .filter_map(|d| std::fs::read_to_string(d.join("information")).ok())
        .filter_map(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("Model:"))
                .map(|m| m.trim().to_string())
        })
        .collect()
}

/// The NVIDIA kernel driver's version (`580.95.05`), from
/// `/proc/driver/nvidia/version`; `None` without one.
pub fn driver_version() -> Option<String> {
    let text = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    let line = text.lines().next()?;
    let after = line.split("Kernel Module").nth(1).unwrap_or(line);
    after
        .split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
        .map(str::to_string)
}

/// The commands of the GPU worker's protocol (`ipc`, `worker`, `remote`).
#[cfg(feature = "driver")]
pub(crate) mod op {
    pub const EXIT: u8 = 0;
    pub const COUNT: u8 = 1;
    pub const OPEN: u8 = 2;
    pub const ALLOC: u8 = 3;
    pub const FREE: u8 = 4;
    pub const MEMINFO: u8 = 5;
    pub const UPLOAD: u8 = 6;
    pub const DOWNLOAD: u8 = 7;
    pub const SYNC: u8 = 8;
    pub const FAULT: u8 = 9;
    pub const LOAD: u8 = 10;
    pub const LOAD_STATUS: u8 = 11;
    pub const UNLOAD: u8 = 12;
    pub const LAUNCH: u8 = 13;
    pub const ZERO: u8 = 14;
    pub const FILL: u8 = 15;
    pub const MARK: u8 = 16;
    pub const ELAPSED: u8 = 17;
    pub const UNMARK: u8 = 18;
    pub const GEMM: u8 = 19;
    pub const CAN_PEER: u8 = 20;
    pub const ENABLE_PEER: u8 = 21;
    pub const WAIT_FOR: u8 = 22;
    pub const COPY_PEER: u8 = 23;
    pub const COMM_NEW: u8 = 24;
    pub const COMM_RUN: u8 = 25;
    pub const COMM_DROP: u8 = 26;
    pub const NCCL: u8 = 27;
    pub const TAKE_FAILURE: u8 = 28;
}

/// What the driver says about an open device (every `Gpu` derefs to one).
#[derive(Clone, Debug, Default)]
pub struct DeviceInfo {
    pub name: String,
    /// The device's index as the driver counts them (`cuda:N`).
    pub ordinal: u32,
    /// `sm_90` style architecture name.
    pub arch: String,
    /// `cuDriverGetVersion` (13000 for CUDA 13.0).
    pub driver_version: i32,
    pub total_memory: usize,
    /// 0 for the first context of the session, +1 per rebuild (compiled
    /// modules belong to one generation).
    pub generation: u32,
    /// Dynamic shared memory a block may opt in to (bytes).
    pub max_shared: u32,
    /// Streaming multiprocessors, and 32-bit registers a block may use.
    pub sm_count: u32,
    pub max_regs: u32,
}

/// One kernel argument, by value.
#[derive(Copy, Clone, Debug)]
pub enum Arg {
    Ptr(u64),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
    /// A tensor as bulk tensor copies (Hopper's TMA) see it, passed as the
    /// 128-byte parameter the copies read.
    TensorMap(TensorMap),
}

/// What a bulk tensor copy needs to know of a tensor: the arguments of
/// `cuTensorMapEncodeTiled`, encoded where the driver runs (the GPU worker)
/// into the kernel's 128-byte tensor-map parameter.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TensorMap {
    /// The tensor's first element (16-byte aligned).
    pub addr: u64,
    /// `CUtensorMapDataType`'s value (6 = fp16, 7 = fp32, 9 = bf16, 0 = bytes).
    pub dtype: u32,
    /// Dimensions used, 1 to 5.
    pub rank: u32,
    /// Sizes, innermost dimension first.
    pub dims: [u64; 5],
    /// Byte strides of dimensions 1.. (the innermost is contiguous).
    pub strides: [u64; 4],
    /// The box one copy moves, innermost first.
    pub boxes: [u32; 5],
    /// The shared tile's swizzle span in bytes: 0 (none), 32, 64 or 128.
    pub swizzle: u32,
    /// Elements outside the tensor read as NaN rather than zero.
    pub nan_fill: bool,
}

/// `cudaDataType` values.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BlasType {
    F32 = 0,
    F16 = 2,
    BF16 = 14,
}

/// One operand in cuBLAS's column-major terms: its device address, whether
/// it is transposed, and its leading dimension.
#[derive(Copy, Clone, Debug)]
pub struct Operand {
    pub ptr: u64,
    pub trans: bool,
    pub ld: i32,
}

/// The element types NCCL reduces.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum NcclType {
    I8,
    U8,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
}

/// Reductions.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum NcclOp {
    Sum,
    Prod,
    Max,
    Min,
    Avg,
}

/// One collective; buffers are device addresses on each rank's device.
#[derive(Copy, Clone, Debug)]
pub enum Collective {
    /// `count` elements in, `count` out.
    AllReduce(NcclOp),
    /// `count` elements from the root's send buffer into every receive buffer.
    Broadcast { root: usize },
    /// `count` elements in from each rank, `count * ranks` out.
    AllGather,
    /// `count * ranks` in, `count` out (rank i's chunk of the reduction).
    ReduceScatter(NcclOp),
}
