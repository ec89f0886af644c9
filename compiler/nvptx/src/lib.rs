//! The GPU backend: tile IR → LLVM IR (NVVM intrinsics) → PTX.
//!
//! First version of the layouts of `docs/layouts.md`: every block value uses
//! the flattened blocked layout of its element count (`layout::Layout`), so
//! values of one size share a layout and elementwise ops, `reshape` and
//! `expand_dims` need no data movement. Broadcasts, transposes, reductions,
//! scans and `tl.dot` read their operands through shared memory (the
//! conversion path of the design). Loads and stores become vector accesses
//! where the axis analysis proves runs of contiguous, aligned addresses under
//! a uniform mask. Tensor-core `mma.sync`, warp-shuffle reductions and
//! `cp.async` pipelining are the next steps (see the GPU issue).
//!
//! Architecture invariant: depends on the tile IR and LLVM only; knows nothing
//! of the CUDA driver (that is `tilebook-cuda`) or the session.

#[cfg(feature = "llvm")]
#[cfg(feature = "llvm")]
mod codegen;
#[cfg(feature = "llvm")]
mod compile;
#[cfg(feature = "llvm")]
mod layout;
#[cfg(feature = "llvm")]
pub mod libdevice;
#[cfg(feature = "llvm")]
mod mma;
#[cfg(feature = "llvm")]
mod mma_plan;
#[cfg(feature = "llvm")]
mod peephole;
pub mod sass;

use tilebook_tir::Kernel;

/// The record a checked kernel (`GpuOptions::check_bounds`) writes its first
/// out-of-bounds access into: 64-bit words at these indices, zeroed before
/// the launch. `FLAG`'s low 32 bits become 1 when a record was written.
/// Accesses whose tensor is unknown are checked against the allocations
/// listed from word `ALLOCATIONS` on: their count, then `[lo, hi)` pairs.
pub mod record {
    pub const FLAG: u64 = 0;
    /// `line << 32 | column` of the op.
    pub const LOC: u64 = 1;
    /// An index into `WHAT`.
    pub const WHAT: u64 = 2;
    /// The pointer parameter the address derives from (`u64::MAX`: unknown).
    pub const PARAM: u64 = 3;
    pub const ADDR: u64 = 5;
    /// The program id: three words.
    pub const PID: u64 = 6;
    /// Bytes of one element of the pointer's type.
    pub const ELEM: u64 = 9;
    pub const ALLOCATIONS: u64 = 16;
    /// What each `WHAT` code names. For a zero divisor, `ADDR` holds the
    /// element's index in its block (`u64::MAX` when not known).
    pub const WHAT_NAMES: [&str; 5] = [
        "load",
        "store",
        "atomic",
        "integer division by zero",
        "integer modulo by zero",
    ];
    pub const LOAD: u64 = 0;
    pub const STORE: u64 = 1;
    pub const ATOMIC: u64 = 2;
    pub const DIVIDE: u64 = 3;
    pub const MODULO: u64 = 4;
    /// Words of a record listing `allocations` ranges.
    pub fn words(allocations: usize) -> usize {
        ALLOCATIONS as usize + 1 + 2 * allocations
    }
}

/// Options of one GPU compilation.
#[derive(Clone, Debug)]
pub struct GpuOptions {
    pub num_warps: u32,
    /// Triton's `num_stages`: K loops prefetch `num_stages - 1` iterations ahead.
    pub num_stages: u32,
    /// `sm_80`, `sm_90`, ...
    pub arch: String,
    /// Call NVIDIA's libdevice for math functions when the CUDA toolkit is
    /// there (`TILEBOOK_LIBDEVICE=off` turns it off).
    pub libdevice: bool,
    /// The libdevice file to link instead of the toolkit's (a launch's
    /// `extern_libs={'libdevice': path}`).
    pub libdevice_path: Option<std::path::PathBuf>,
    /// Checked mode: every global access is checked against its tensor's
    /// bounds, and every integer divisor against zero, and the first
    /// violation recorded (see `record`); the kernel
    /// takes the record's address and each parameter's `[lo, hi)` after its
    /// own parameters.
    pub check_bounds: bool,
    /// Registers a thread may use at most (Triton's `maxnreg`); without it
    /// the cap is what the block's threads leave each one.
    pub maxnreg: Option<u32>,
    /// Masked global stores as one predicated `st.global` each (Triton's
    /// form) rather than a branch around the store. Off by default: on the
    /// H200 it costs 6 % where the kernel does not spill and gains 15 % where
    /// it does (layer-norm backward, bench/NOTES.md session 37), so the
    /// runtime builds it as a second choice for kernels that spill and
    /// store in a loop (`GpuKernel::branched_stores`). `TILEBOOK_PRED_STORES=1` turns it on.
    pub predicated_stores: bool,
    /// Block loads through plain pointers may be bulk tensor copies
    /// (`tilebook_tir::pointer_tma`); the runtime builds a kernel again
    /// without them for a launch whose arguments a tensor map cannot
    /// describe (a row stride of 0).
    pub pointer_maps: bool,
    /// A dot result's masked block store through plain pointers may be a
    /// bulk tensor store from shared memory (`tilebook_tir::pointer_tma`).
    /// Off by default: on the H200 the tutorial matmul's epilogue takes
    /// as long either way (fp16 128x256x64: 731-738 TFLOPS against
    /// 734-737 per thread; the fp8 tile at K = 512 2-4 % slower;
    /// bench/NOTES.md session 65). `TILEBOOK_POINTER_BULK_STORE=1` turns
    /// it on.
    pub pointer_bulk_stores: bool,
}

impl GpuOptions {
    /// Options for `arch`, with the knobs that the environment sets.
    pub fn new(arch: &str, num_warps: u32, num_stages: u32) -> GpuOptions {
        GpuOptions {
            num_warps,
            num_stages,
            arch: arch.into(),
            libdevice: std::env::var("TILEBOOK_LIBDEVICE").map_or(true, |v| v != "off"),
            libdevice_path: None,
            check_bounds: false,
            pointer_maps: true,
            pointer_bulk_stores: std::env::var("TILEBOOK_POINTER_BULK_STORE")
                .is_ok_and(|v| v == "1"),
            maxnreg: None,
            predicated_stores: std::env::var("TILEBOOK_PRED_STORES").is_ok_and(|v| v == "1"),
        }
    }
}

impl Default for GpuOptions {
    fn default() -> Self {
        GpuOptions::new("sm_90", 4, 3)
    }
}

/// The first line of a kernel's PTX when its tiles leave room for two
/// blocks per SM (a loop of one `wgmma` dot whose stage rings take at most
/// half an SM's shared memory): only then may the loader build tensor-core
/// code again for two blocks (`runtime/cuda/src/occupancy.rs` matches the
/// same text).
pub const TWO_BLOCKS_MARK: &str = "// tilebook: tiles sized for two blocks per SM";

/// The first line of a kernel's PTX when some `wgmma` group is left running
/// past its dot and waited for before the result's first reader
/// (attention's backward): the loader may then also try a build in which
/// every group is waited for as it is committed, which takes fewer
/// registers, where that fits one block more per SM
/// (`runtime/cuda/src/occupancy.rs` matches the same text).
pub const LAZY_WAITS_MARK: &str = "// tilebook: wgmma groups waited for at their first reader";

/// A compiled kernel: its stage texts and what a launch needs.
#[derive(Clone, Debug)]
pub struct GpuKernel {
    pub name: String,
    pub llvm_ir: String,
    pub ptx: String,
    /// Dynamic shared memory per program (bytes).
    pub shared_bytes: u32,
    pub num_warps: u32,
    /// Built in checked mode (`GpuOptions::check_bounds`): takes the check
    /// record and the bounds after its parameters.
    pub check_bounds: bool,
    /// Some masked global store in a loop branched around where a
    /// predicated store was possible: building with
    /// `GpuOptions::predicated_stores` would give different code there.
    pub branched_stores: bool,
    /// Seconds spent in each stage of this compilation, in order.
    pub stage_seconds: Vec<(&'static str, f64)>,
    /// The tensor maps the kernel takes after its parameters, in order
    /// (`TensorMapUse`); read back from the PTX's marks (`tensor_maps_in`).
    pub tensor_maps: Vec<TensorMapUse>,
}

/// One 128-byte tensor-map parameter of a kernel whose tile loads through a
/// host tensor descriptor are bulk tensor copies (Hopper's TMA): the launch
/// encodes it from the descriptor's arguments (base, shape, strides at
/// parameter `desc_param` and after) with this box and swizzle. A map no
/// copy uses (`rows == 0`) is passed as zeros.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorMapUse {
    /// The descriptor's base pointer parameter.
    pub desc_param: u32,
    /// The box: `rows` of the block's first dim by `cols` of its second.
    pub rows: u32,
    pub cols: u32,
    /// The shared tile's swizzle span (bytes).
    pub swizzle: u32,
    /// Out-of-bounds elements read as NaN (the descriptor's padding).
    pub nan_fill: bool,
    /// A tensor read through plain pointers (`load[tma=i, map]`): its rows,
    /// columns and row stride (elements), and `desc_param` is its base
    /// pointer; `None`: a descriptor's, whose shape and strides follow it.
    pub shape: Option<[MapSrc; 3]>,
}

/// Where the launch finds one number of a tensor map: a parameter's value
/// or a constant the kernel was built with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MapSrc {
    Param(u32),
    Const(i64),
}

impl MapSrc {
    fn mark(self) -> String {
        match self {
            MapSrc::Param(p) => format!("p{p}"),
            MapSrc::Const(c) => format!("c{c}"),
        }
    }

    fn parse(s: &str) -> Option<MapSrc> {
        match s.split_at_checked(1)? {
            ("p", p) => Some(MapSrc::Param(p.parse().ok()?)),
            ("c", c) => Some(MapSrc::Const(c.parse().ok()?)),
            _ => None,
        }
    }
}

/// How the PTX records each tensor-map parameter (one line per map, in
/// parameter order), so that a kernel read back from a cache knows them.
pub const TENSOR_MAP_MARK: &str = "// tilebook tensor map:";

impl TensorMapUse {
    pub fn mark(&self) -> String {
        let shape = match self.shape {
            Some(s) => format!(" shape {} {} {}", s[0].mark(), s[1].mark(), s[2].mark()),
            None => String::new(),
        };
        format!(
            "{TENSOR_MAP_MARK} param {} box {} {} swizzle {} nan {}{shape}",
            self.desc_param, self.rows, self.cols, self.swizzle, self.nan_fill as u8
        )
    }
}

/// The tensor maps a kernel's PTX records (`TensorMapUse::mark`).
pub fn tensor_maps_in(ptx: &str) -> Vec<TensorMapUse> {
    ptx.lines()
        .filter_map(|l| {
            let w: Vec<&str> = l
                .strip_prefix(TENSOR_MAP_MARK)?
                .split_whitespace()
                .collect();
            let n = |i: usize| w.get(i).and_then(|x| x.parse::<u32>().ok());
            let src = |i: usize| w.get(i).and_then(|x| MapSrc::parse(x));
            let shape = match w.get(9) {
                Some(&"shape") => Some([src(10)?, src(11)?, src(12)?]),
                _ => None,
            };
            Some(TensorMapUse {
                shape,
                desc_param: n(1)?,
                rows: n(3)?,
                cols: n(4)?,
                swizzle: n(6)?,
                nan_fill: n(8)? != 0,
            })
        })
        .collect()
}

impl GpuKernel {
    /// Whether some `tl.dot` runs as fp8 `wgmma`, whose accumulator keeps
    /// fewer bits than fp32 while it adds the products of one group (the
    /// Hopper hardware's behaviour, which Triton's default fp8 dot has too):
    /// its results differ from an exact fp32 sum by a small fraction of the
    /// partial sums' size.
    pub fn fp8_accumulation(&self) -> bool {
        self.ptx
            .lines()
            .any(|l| l.contains("wgmma.mma_async") && (l.contains(".e5m2") || l.contains(".e4m3")))
    }
}

/// The LLVM pass pipeline run on the generated IR, or `TILEBOOK_LLVM_PASSES`
/// when set. The generated IR is straight-line code per register with a few
/// stack slots for counters, so promotion, local CSE, combining, CFG cleanup
/// and hoisting of loop invariants are what it needs. On the H100 this gives
/// the same matmul throughput as `default<O1>` (and O1 the same as O3), with
/// a third of O1's pass time and a first compile of the tutorial matmul of
/// 0.23-0.26 s instead of 0.35 s (bench/NOTES.md). `instcombine` runs once
/// without its fixpoint check: a standalone `instcombine` aborts the process
/// (an LLVM fatal error) when one round leaves work for another.
pub const DEFAULT_PASSES: &str =
    "function(sroa,early-cse,instcombine<no-verify-fixpoint>,simplifycfg,loop-mssa(licm))";

/// The environment variables that change generated code, with their values
/// (part of every on-disk cache key, so a changed knob never loads code
/// built under another setting).
pub fn env_settings() -> String {
    [
        "TILEBOOK_WGMMA",
        "TILEBOOK_WGMMA_INFLIGHT",
        "TILEBOOK_INFLIGHT_CHAIN",
        "TILEBOOK_ROTATE_DOTS",
        "TILEBOOK_PLAIN_PIPELINE",
        "TILEBOOK_MAXNREG",
        "TILEBOOK_BULK_RELEASE",
        "TILEBOOK_PRED_STORES",
        "TILEBOOK_COLUMN_LOADS",
        "TILEBOOK_EARLY_DOTS",
        "TILEBOOK_EARLY_ACCUMULATE",
        "TILEBOOK_LLVM_PASSES",
        "TILEBOOK_LLVM_ARGS",
        "TILEBOOK_CODEGEN_OPT",
        "TILEBOOK_FP_FUSION",
        "TILEBOOK_LIBDEVICE_FTZ",
        "TILEBOOK_LIBDEVICE",
    ]
    .iter()
    .map(|n| format!("{n}={}", std::env::var(n).unwrap_or_default()))
    .collect::<Vec<_>>()
    .join(",")
}

/// The highest PTX ISA LLVM 19 emits.
pub const PTX_FEATURES: &str = "+ptx85";

/// Compile one specialization to PTX. Should libdevice fail to link (an
/// unexpected toolkit), the kernel is compiled again without it.
#[cfg(feature = "llvm")]
pub fn compile(k: &Kernel, options: &GpuOptions) -> Result<GpuKernel, String> {
    // Every caller checks its own spelling first; this keeps the layouts'
    // arithmetic (threads per warp group, warps per dimension) away from a
    // warp count they cannot divide by.
    let w = options.num_warps;
    if !w.is_power_of_two() || w > 32 {
        return Err(format!(
            "num_warps must be a power of two from 1 to 32, got {w}"
        ));
    }
    match compile::compile_with(k, options) {
        Err(e) if options.libdevice && e.contains("libdevice") => {
            let without = GpuOptions {
                libdevice: false,
                ..options.clone()
            };
            compile::compile_with(k, &without)
        }
        other => other,
    }
}

/// Without LLVM (a build without the `gpu` feature) there is no GPU
/// backend: compiling for the GPU is an error that says so.
#[cfg(not(feature = "llvm"))]
pub fn compile(k: &Kernel, _options: &GpuOptions) -> Result<GpuKernel, String> {
    Err(format!(
        "cannot compile `{}` for the GPU: this build of tilebook has no GPU backend (built without the `gpu` feature)",
        k.name
    ))
}

/// The GPU a `--target` names, as LLVM's processor name: `sm_90`, `90`,
/// `sm_90a`, or an architecture's name (`volta`, `turing`, `ampere`, `ada`,
/// `hopper`). The backend needs `sm_70` or newer.
pub fn parse_target(name: &str) -> Result<String, String> {
    const KNOWN: [&str; 10] = [
        "sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a", "sm_100",
    ];
    let lower = name.trim().to_ascii_lowercase();
    let sm = match lower.as_str() {
        "volta" => "sm_70".to_string(),
        "turing" => "sm_75".to_string(),
        "ampere" => "sm_80".to_string(),
        "ada" | "lovelace" => "sm_89".to_string(),
        "hopper" => "sm_90".to_string(),
        s if s.starts_with("sm_") => s.to_string(),
        s if s.starts_with(|c: char| c.is_ascii_digit()) => format!("sm_{s}"),
        _ => String::new(),
    };
    if KNOWN.contains(&sm.as_str()) {
        return Ok(sm);
    }
    Err(format!(
        "unknown GPU target '{name}': use one of {} (or volta, turing, ampere, ada, hopper); the default is sm_90",
        KNOWN.join(", ")
    ))
}
