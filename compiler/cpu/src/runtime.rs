//! What compiled CPU kernels call at run time, and the parallel launcher.
//!
//! Generated code calls the `tb_*` helpers for what Cranelift has no
//! instruction for (transcendentals, fp16/fp8 conversions), for `tl.dot`
//! (a cache-friendly microkernel compiled by rustc), and to report errors.
//! Program instances run on all cores; each thread owns one frame (the
//! block buffers of one program) and takes program ids from a shared counter.

use half::{bf16, f16};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use tilebook_tir::fp8::{decode_fp8_f32, encode_fp8_f32};
use tilebook_tir::{DType, Loc};

/// Where an error can happen in generated code (a load, store or assert).
#[derive(Clone, Debug)]
pub struct Site {
    pub loc: Loc,
    pub what: &'static str,
    /// The pointer parameter the address derives from, when known.
    pub param: Option<usize>,
    pub elem_size: usize,
    /// The message of a `tl.device_assert`.
    pub message: String,
    /// The block shape of a load or store (empty for a scalar access).
    pub shape: Vec<usize>,
}

/// One lane of a traced load or store: which program, which site, the
/// address, and whether the mask let it through.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Access {
    pub pid: [u32; 3],
    pub site: u32,
    pub addr: u64,
    pub active: bool,
}

/// Lanes a traced launch records at most (about 50 MB); later ones are counted, not kept.
pub const TRACE_LIMIT: usize = 2_000_000;

/// Why a launch stopped.
#[derive(Clone, Debug, PartialEq)]
pub enum LaunchError {
    OutOfBounds {
        site: usize,
        pid: [u32; 3],
        addr: u64,
        /// The bounds of the tensor the pointer derives from (`None` if unknown).
        bounds: Option<(u64, u64)>,
    },
    AssertFailed {
        site: usize,
        pid: [u32; 3],
        index: u64,
    },
    /// The launch's cancel flag was set (Ctrl-C); programs not yet started
    /// did not run.
    Interrupted { pid: [u32; 3] },
}

/// State shared by all threads of one launch; generated code sees it as `*const Ctx`.
#[repr(C)]
pub struct Ctx {
    /// `[lo, hi)` byte bounds per kernel parameter (zero for non-pointers).
    pub bounds: *const [u64; 2],
    pub nbounds: u64,
    pub shared: *const Shared,
}

pub struct Shared {
    pub error: Mutex<Option<LaunchError>>,
    pub stop: AtomicBool,
    pub prints: Mutex<Vec<([u32; 3], u64, String)>>,
    /// Every live allocation `[lo, hi)`, sorted, for pointers of unknown origin.
    pub allocations: Vec<(u64, u64)>,
    pub print_formats: Vec<String>,
    /// Traced launches: every load and store lane, in program order.
    pub trace: Option<Mutex<Vec<Access>>>,
    pub trace_dropped: AtomicU64,
}

fn shared(ctx: *const Ctx) -> &'static Shared {
    // SAFETY: the launcher passes a Ctx that outlives every program instance.
    unsafe { &*(*ctx).shared }
}

fn pids(p: *const u32) -> [u32; 3] {
    // SAFETY: generated code passes its pid array of six u32s.
    unsafe { [*p, *p.add(1), *p.add(2)] }
}

/// # Safety
/// Called by generated code with pointers it owns.
pub unsafe extern "C" fn tb_oob(
    ctx: *const Ctx,
    pid: *const u32,
    site: u64,
    addr: u64,
    param: i64,
    lanes: u64,
    size: u64,
) {
    let s = shared(ctx);
    let bounds = if param >= 0 && (param as u64) < unsafe { (*ctx).nbounds } {
        let b = unsafe { *(*ctx).bounds.add(param as usize) };
        Some((b[0], b[1]))
    } else {
        None
    };
    // A run of `lanes` consecutive elements failed its check as a whole:
    // report its first element outside the tensor, as a lane-by-lane check would.
    let addr = match bounds {
        Some((lo, hi)) => (0..lanes.max(1))
            .map(|k| addr.wrapping_add(k.wrapping_mul(size)))
            .find(|&a| a < lo || a.checked_add(size).is_none_or(|end| end > hi))
            .unwrap_or(addr),
        None => addr,
    };
    let mut e = s.error.lock().unwrap_or_else(|p| p.into_inner());
    if e.is_none() {
        *e = Some(LaunchError::OutOfBounds {
            site: site as usize,
            pid: pids(pid),
            addr,
            bounds,
        });
    }
    s.stop.store(true, Ordering::Relaxed);
}

/// Record one lane of a load or store (traced kernels only).
/// # Safety
/// Called by generated code with the launch's `Ctx` and program ids.
pub unsafe extern "C" fn tb_trace(
    ctx: *const Ctx,
    pid: *const u32,
    site: u64,
    addr: u64,
    active: u64,
) {
    let s = shared(ctx);
    let Some(t) = &s.trace else { return };
    let mut t = t.lock().unwrap_or_else(|p| p.into_inner());
    if t.len() >= TRACE_LIMIT {
        s.trace_dropped.fetch_add(1, Ordering::Relaxed);
        return;
    }
    t.push(Access {
        pid: pids(pid),
        site: site as u32,
        addr,
        active: active != 0,
    });
}

/// Whether `[addr, addr+size)` lies in some live allocation (pointers of unknown origin).
/// # Safety
/// Called by generated code with pointers it owns.
pub unsafe extern "C" fn tb_check_any(ctx: *const Ctx, addr: u64, size: u64) -> u8 {
    let s = shared(ctx);
    // Sorted by start: the candidates are those starting at or below `addr`
    // (ranges may nest, e.g. a view's bounds inside its storage's).
    let end = addr.saturating_add(size);
    let n = s.allocations.partition_point(|&(lo, _)| lo <= addr);
    s.allocations[..n].iter().rev().any(|&(_, hi)| end <= hi) as u8
}

/// # Safety
/// Called by generated code with pointers it owns.
pub unsafe extern "C" fn tb_assert_fail(ctx: *const Ctx, pid: *const u32, site: u64, index: u64) {
    let s = shared(ctx);
    let mut e = s.error.lock().unwrap_or_else(|p| p.into_inner());
    if e.is_none() {
        *e = Some(LaunchError::AssertFailed {
            site: site as usize,
            pid: pids(pid),
            index,
        });
    }
    s.stop.store(true, Ordering::Relaxed);
}

/// Element codes for `tb_print`.
pub fn print_code(d: Option<DType>) -> u64 {
    match d {
        None => 100,
        Some(d) => DType::ALL.iter().position(|&x| x == d).unwrap_or(0) as u64,
    }
}

fn format_elem(ptr: *const u8, code: u64, i: usize) -> String {
    // SAFETY: the generated code passes a buffer of `numel` elements of this code's register type.
    unsafe {
        if code == 100 {
            return format!("{:#x}", *(ptr as *const u64).add(i));
        }
        let d = DType::ALL[code as usize];
        match d {
            DType::I1 => format!("{}", (*ptr.add(i) != 0) as u8),
            DType::I8 => format!("{}", *(ptr as *const i8).add(i)),
            DType::U8 => format!("{}", *ptr.add(i)),
            DType::I16 => format!("{}", *(ptr as *const i16).add(i)),
            DType::U16 => format!("{}", *(ptr as *const u16).add(i)),
            DType::I32 => format!("{}", *(ptr as *const i32).add(i)),
            DType::U32 => format!("{}", *(ptr as *const u32).add(i)),
            DType::I64 => format!("{}", *(ptr as *const i64).add(i)),
            DType::U64 => format!("{}", *(ptr as *const u64).add(i)),
            DType::F64 => format!("{:.6}", *(ptr as *const f64).add(i)),
            _ => format!("{:.6}", *(ptr as *const f32).add(i)),
        }
    }
}

/// `tl.device_print`: one line per element, as Triton prints them.
/// # Safety
/// Called by generated code with pointers it owns.
pub unsafe extern "C" fn tb_print(
    ctx: *const Ctx,
    pid: *const u32,
    site: u64,
    arg: u64,
    data: *const u8,
    numel: u64,
    code: u64,
) {
    let s = shared(ctx);
    let p = pids(pid);
    let prefix = s
        .print_formats
        .get(site as usize)
        .cloned()
        .unwrap_or_default();
    let mut lines = String::new();
    for i in 0..numel as usize {
        let idx = if numel > 1 {
            format!(" idx ({i})")
        } else {
            String::new()
        };
        let op = if arg > 0 {
            format!("(operand {}) ", arg - 1)
        } else {
            String::new()
        };
        lines.push_str(&format!(
            "pid ({}, {}, {}){idx}{prefix}{op}{}\n",
            p[0],
            p[1],
            p[2],
            format_elem(data, code, i)
        ));
    }
    s.prints
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((p, site, lines));
}

macro_rules! math1 {
    ($($name:ident: $t:ty => $f:expr;)*) => { $(pub extern "C" fn $name(x: $t) -> $t { let f: fn($t) -> $t = $f; f(x) })* };
}
math1! {
    tb_exp_f32: f32 => f32::exp;
    tb_exp2_f32: f32 => f32::exp2;
    tb_log_f32: f32 => crate::nvmath::logf;
    tb_log2_f32: f32 => crate::nvmath::log2f;
    tb_sin_f32: f32 => crate::nvmath::sinf;
    tb_cos_f32: f32 => crate::nvmath::cosf;
    tb_sqrt_approx_f32: f32 => crate::nvmath::sqrt_approx;
    tb_exp_f64: f64 => f64::exp;
    tb_exp2_f64: f64 => f64::exp2;
    tb_log_f64: f64 => f64::ln;
    tb_log2_f64: f64 => f64::log2;
    tb_sin_f64: f64 => f64::sin;
    tb_cos_f64: f64 => f64::cos;
    tb_round_e5: f32 => |x| decode_fp8_f32(encode_fp8_f32(x, DType::F8E5, true), DType::F8E5);
    tb_round_e4: f32 => |x| decode_fp8_f32(encode_fp8_f32(x, DType::F8E4NV, true), DType::F8E4NV);
}

pub extern "C" fn tb_pow_f32(x: f32, y: f32) -> f32 {
    x.powf(y)
}
pub extern "C" fn tb_pow_f64(x: f64, y: f64) -> f64 {
    x.powf(y)
}
pub extern "C" fn tb_fmod_f32(x: f32, y: f32) -> f32 {
    x % y
}
pub extern "C" fn tb_fmod_f64(x: f64, y: f64) -> f64 {
    x % y
}
pub extern "C" fn tb_e5_to_f32(bits: u8) -> f32 {
    decode_fp8_f32(bits, DType::F8E5)
}
pub extern "C" fn tb_e4_to_f32(bits: u8) -> f32 {
    decode_fp8_f32(bits, DType::F8E4NV)
}
pub extern "C" fn tb_f32_to_e5(x: f32) -> u8 {
    encode_fp8_f32(x, DType::F8E5, true)
}
pub extern "C" fn tb_f32_to_e4(x: f32) -> u8 {
    encode_fp8_f32(x, DType::F8E4NV, true)
}

thread_local! {
    static TF32_SCRATCH: std::cell::RefCell<(Vec<f32>, Vec<f32>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Copy `bytes` bytes between frame slots (they may overlap).
/// # Safety
/// Called by generated code with slots of at least `bytes` bytes.
pub unsafe extern "C" fn tb_copy(dst: *mut u8, src: *const u8, bytes: u64) {
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy(src, dst, bytes as usize) }
}

/// `out = a @ b + acc` on row-major fp32 blocks (`a: m×k`, `b: k×n`).
/// `round` 1 rounds the result to fp16, 2 to bf16 (fp16/bf16 accumulators).
/// # Safety
/// Called by generated code with pointers it owns.
pub unsafe extern "C" fn tb_dot_f32(
    a: *const f32,
    b: *const f32,
    acc: *const f32,
    out: *mut f32,
    m: u64,
    n: u64,
    k: u64,
    round: u64,
) {
    let (m, n, k) = (m as usize, n as usize, k as usize);
    // SAFETY: generated code passes frame buffers of exactly these sizes; `out` may alias `acc`.
    unsafe {
        let a = std::slice::from_raw_parts(a, m * k);
        let b = std::slice::from_raw_parts(b, k * n);
        if !std::ptr::eq(out, acc) {
            std::ptr::copy_nonoverlapping(acc, out, m * n);
        }
        let out = std::slice::from_raw_parts_mut(out, m * n);
        if round & 4 != 0 {
            // The rounded operands go to this thread's scratch buffers
            // (reused: a K loop calls this once per step).
            TF32_SCRATCH.with(|cell| {
                let mut scratch = cell.borrow_mut();
                let (ra, rb) = &mut *scratch;
                ra.clear();
                ra.extend(a.iter().map(|&x| round_tf32(x)));
                rb.clear();
                rb.extend(b.iter().map(|&x| round_tf32(x)));
                dot_kernel(ra, rb, out, m, n, k);
            });
        } else {
            dot_kernel(a, b, out, m, n, k);
        }
        match round & 3 {
            1 => out.iter_mut().for_each(|x| *x = f16::from_f32(*x).to_f32()),
            2 => out
                .iter_mut()
                .for_each(|x| *x = bf16::from_f32(*x).to_f32()),
            _ => {}
        }
    }
}

/// fp32 rounded to tf32's 10 mantissa bits, to nearest with ties away from
/// zero (what the GPU backend does before its tensor cores); NaN unchanged.
pub fn round_tf32(x: f32) -> f32 {
    // Branch-free, so the loops over whole operands vectorise.
    let b = x.to_bits();
    let rounded = b.wrapping_add(0x1000) & 0xFFFF_E000;
    let nan = (b & 0x7FFF_FFFF) > 0x7F80_0000;
    f32::from_bits(if nan { b } else { rounded })
}

pub use crate::dot::{dot_kernel, matmul_parallel};

/// `out = acc + a @ b` over row-major `m x k` and `k x n` operands, in i-k-j
/// order, with `mac(out, a, b)` the multiply-add of one element.
///
/// # Safety
/// `a`, `b` hold `m*k` and `k*n` elements; `acc` and `out` hold `m*n` and are
/// equal or do not overlap.
unsafe fn dot_generic<A: Copy, C: Copy>(
    a: *const A,
    b: *const A,
    acc: *const C,
    out: *mut C,
    (m, n, k): (u64, u64, u64),
    mac: impl Fn(C, A, A) -> C,
) {
    let (m, n, k) = (m as usize, n as usize, k as usize);
    // SAFETY: the caller's contract.
    unsafe {
        if !std::ptr::eq(out, acc) {
            std::ptr::copy_nonoverlapping(acc, out, m * n);
        }
        for i in 0..m {
            for p in 0..k {
                let av = *a.add(i * k + p);
                for j in 0..n {
                    let o = out.add(i * n + j);
                    *o = mac(*o, av, *b.add(p * n + j));
                }
            }
        }
    }
}

/// # Safety
/// Called by generated code with pointers it owns.
pub unsafe extern "C" fn tb_dot_f64(
    a: *const f64,
    b: *const f64,
    acc: *const f64,
    out: *mut f64,
    m: u64,
    n: u64,
    k: u64,
) {
    // SAFETY: as in `tb_dot_f32`.
    unsafe { dot_generic(a, b, acc, out, (m, n, k), |o, x, y| o + x * y) }
}

/// # Safety
/// Called by generated code with pointers it owns.
pub unsafe extern "C" fn tb_dot_i8(
    a: *const i8,
    b: *const i8,
    acc: *const i32,
    out: *mut i32,
    m: u64,
    n: u64,
    k: u64,
) {
    // SAFETY: as in `tb_dot_f32`.
    unsafe {
        dot_generic(a, b, acc, out, (m, n, k), |o, x, y| {
            o.wrapping_add(x as i32 * y as i32)
        })
    }
}

/// Every helper by symbol name, for the JIT's symbol table.
pub fn helper_symbols() -> Vec<(&'static str, *const u8)> {
    vec![
        ("tb_oob", tb_oob as *const u8),
        ("tb_check_any", tb_check_any as *const u8),
        ("tb_trace", tb_trace as *const u8),
        ("tb_assert_fail", tb_assert_fail as *const u8),
        ("tb_print", tb_print as *const u8),
        ("tb_exp_f32", tb_exp_f32 as *const u8),
        ("tb_exp2_f32", tb_exp2_f32 as *const u8),
        ("tb_log_f32", tb_log_f32 as *const u8),
        ("tb_log2_f32", tb_log2_f32 as *const u8),
        ("tb_sin_f32", tb_sin_f32 as *const u8),
        ("tb_cos_f32", tb_cos_f32 as *const u8),
        ("tb_sqrt_approx_f32", tb_sqrt_approx_f32 as *const u8),
        ("tb_exp_f64", tb_exp_f64 as *const u8),
        ("tb_exp2_f64", tb_exp2_f64 as *const u8),
        ("tb_log_f64", tb_log_f64 as *const u8),
        ("tb_log2_f64", tb_log2_f64 as *const u8),
        ("tb_sin_f64", tb_sin_f64 as *const u8),
        ("tb_cos_f64", tb_cos_f64 as *const u8),
        ("tb_round_e5", tb_round_e5 as *const u8),
        ("tb_round_e4", tb_round_e4 as *const u8),
        ("tb_lib1_f32", crate::libm_calls::tb_lib1_f32 as *const u8),
        ("tb_lib1_f64", crate::libm_calls::tb_lib1_f64 as *const u8),
        ("tb_lib2_f32", crate::libm_calls::tb_lib2_f32 as *const u8),
        ("tb_lib2_f64", crate::libm_calls::tb_lib2_f64 as *const u8),
        ("tb_pow_f32", tb_pow_f32 as *const u8),
        ("tb_pow_f64", tb_pow_f64 as *const u8),
        ("tb_fmod_f32", tb_fmod_f32 as *const u8),
        ("tb_fmod_f64", tb_fmod_f64 as *const u8),
        ("tb_e5_to_f32", tb_e5_to_f32 as *const u8),
        ("tb_e4_to_f32", tb_e4_to_f32 as *const u8),
        ("tb_f32_to_e5", tb_f32_to_e5 as *const u8),
        ("tb_f32_to_e4", tb_f32_to_e4 as *const u8),
        ("tb_dot_f32", tb_dot_f32 as *const u8),
        ("tb_copy", tb_copy as *const u8),
        ("tb_dot_f64", tb_dot_f64 as *const u8),
        ("tb_dot_i8", tb_dot_i8 as *const u8),
    ]
}

/// The entry point of a compiled kernel: one program instance.
pub type KernelFn = unsafe extern "C" fn(
    args: *const u64,
    pids: *const u32,
    frame: *mut u8,
    ctx: *const Ctx,
) -> u32;

/// Output of a launch that completed.
#[derive(Debug, Default)]
pub struct LaunchOutput {
    /// `tl.device_print` lines, ordered by program id.
    pub printed: String,
    /// Load and store lanes of a traced launch, and how many did not fit.
    pub trace: Vec<Access>,
    pub trace_dropped: u64,
}

/// One launch's parameters for `run_grid`.
pub struct Grid<'a> {
    pub f: KernelFn,
    pub frame_size: usize,
    pub grid: [u32; 3],
    pub args: &'a [u64],
    pub bounds: &'a [[u64; 2]],
    pub allocations: Vec<(u64, u64)>,
    pub print_formats: Vec<String>,
    pub threads: usize,
    /// Record every load and store lane (the kernel must be compiled traced).
    pub trace: bool,
    /// Checked between programs: when set, the launch stops.
    pub cancel: Option<&'a AtomicBool>,
    /// The kernel's last measured time of one program (ns, 0: unknown).
    pub program_ns: &'a AtomicU64,
}

/// Remaining work (by the first program's time) that runs on the calling
/// thread alone, rather than waking the pool.
const SMALL_LAUNCH_S: f64 = 25e-6;

/// One thread's block storage, 64-byte aligned.
struct Frame {
    buf: Vec<u64>,
    offset: usize,
}

impl Frame {
    fn new(frame_size: usize) -> Frame {
        let mut buf = vec![0u64; frame_size.div_ceil(8) + 8];
        let base = buf.as_mut_ptr() as usize;
        let offset = ((base + 63) & !63) - base;
        Frame { buf, offset }
    }

    fn ptr(&mut self) -> *mut u8 {
        // SAFETY: `offset` < 64 and the buffer has 64 spare bytes.
        unsafe { (self.buf.as_mut_ptr() as *mut u8).add(self.offset) }
    }
}

/// Run every program of the grid across the machine's cores.
pub fn run_grid(g: Grid<'_>) -> Result<LaunchOutput, LaunchError> {
    let Grid {
        f,
        frame_size,
        grid,
        args,
        bounds,
        allocations,
        print_formats,
        threads,
        trace,
        cancel,
        program_ns,
    } = g;
    let total = grid[0] as u64 * grid[1] as u64 * grid[2] as u64;
    let shared = Shared {
        error: Mutex::new(None),
        stop: AtomicBool::new(false),
        prints: Mutex::new(vec![]),
        allocations,
        print_formats,
        trace: trace.then(|| Mutex::new(vec![])),
        trace_dropped: AtomicU64::new(0),
    };
    let ctx = Ctx {
        bounds: bounds.as_ptr(),
        nbounds: bounds.len() as u64,
        shared: &shared,
    };
    let next = AtomicU64::new(0);
    // A traced launch runs its programs in order, one at a time.
    let threads = if trace {
        1
    } else {
        threads.max(1).min(total.max(1) as usize)
    };
    // Hand out programs in chunks so the counter is not contended.
    let chunk = (total / (threads as u64 * 16)).clamp(1, 64);
    let ctx_addr = &ctx as *const Ctx as usize;
    // Programs taken from the shared counter until none are left (or
    // `limit` have been taken), run in one thread's frame.
    let run = |frame: &mut Frame, limit: Option<u64>| {
        let ctx = ctx_addr as *const Ctx;
        let mut taken = 0;
        loop {
            let want = limit.map_or(chunk, |l| chunk.min(l - taken));
            if want == 0 {
                return;
            }
            let start = next.fetch_add(want, Ordering::Relaxed);
            if start >= total {
                return;
            }
            taken += want;
            for lin in start..(start + want).min(total) {
                // SAFETY: ctx points to the launcher's Ctx, alive until the scope ends.
                if unsafe { (*(*ctx).shared).stop.load(Ordering::Relaxed) } {
                    return;
                }
                let x = (lin % grid[0] as u64) as u32;
                let y = ((lin / grid[0] as u64) % grid[1] as u64) as u32;
                let z = (lin / (grid[0] as u64 * grid[1] as u64)) as u32;
                if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                    // SAFETY: as above.
                    let sh = unsafe { &*(*ctx).shared };
                    let mut e = sh.error.lock().unwrap_or_else(|p| p.into_inner());
                    e.get_or_insert(LaunchError::Interrupted { pid: [x, y, z] });
                    sh.stop.store(true, Ordering::Relaxed);
                    return;
                }
                let pid = [x, y, z, grid[0], grid[1], grid[2]];
                // SAFETY: `f` was compiled for this argument layout; the frame has `frame_size` bytes.
                let status = unsafe { f(args.as_ptr(), pid.as_ptr(), frame.ptr(), ctx) };
                if status != 0 {
                    return;
                }
            }
        }
    };
    let mut frame = Frame::new(frame_size);
    // A grid whose programs would all take less than waking the pool does
    // (tens of microseconds) runs here. The time of one program comes from
    // the kernel's last launch, or from running the first program here.
    // Every launch updates the estimate (its time per program, per thread).
    // A one-program grid runs here with no clock read: there is nothing to
    // share out, and the estimate is for grids that may be.
    if total == 1 {
        run(&mut frame, None);
    } else {
        run_timed(&run, &mut frame, frame_size, total, threads, program_ns);
    }
    finish(shared)
}

/// Run a grid of several programs here or on the pool (see `run_grid`),
/// updating the kernel's estimate of one program's time.
fn run_timed<F: Fn(&mut Frame, Option<u64>) + Sync>(
    run: &F,
    frame: &mut Frame,
    frame_size: usize,
    total: u64,
    threads: usize,
    program_ns: &AtomicU64,
) {
    let known = program_ns.load(Ordering::Relaxed);
    let start = std::time::Instant::now();
    let per = if known > 0 && threads > 1 {
        known as f64 * 1e-9
    } else {
        run(frame, Some(1));
        start.elapsed().as_secs_f64()
    };
    let rest = per * total.saturating_sub(1) as f64;
    let alone = threads == 1 || rest < SMALL_LAUNCH_S;
    if alone {
        run(frame, None);
    } else {
        // Rayon's pool keeps its threads between launches (starting
        // threads on every launch cost tens of microseconds). This thread
        // works beside `threads - 1` of them, one thread per core.
        rayon::in_place_scope(|s| {
            for _ in 1..threads {
                s.spawn(move |_| run(&mut Frame::new(frame_size), None));
            }
            run(frame, None);
        });
    }
    let busy = start.elapsed().as_secs_f64() * if alone { 1.0 } else { threads as f64 };
    let ns = busy / total.max(1) as f64 * 1e9;
    program_ns.store(ns.max(1.0) as u64, Ordering::Relaxed);
}

/// A finished launch's first error, or what its programs printed and traced.
fn finish(shared: Shared) -> Result<LaunchOutput, LaunchError> {
    if let Some(e) = shared
        .error
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
    {
        return Err(e);
    }
    let mut prints = shared
        .prints
        .into_inner()
        .unwrap_or_else(|p| p.into_inner());
    prints.sort_by_key(|(p, site, _)| (p[2], p[1], p[0], *site));
    let trace_dropped = shared.trace_dropped.load(Ordering::Relaxed);
    let trace = shared
        .trace
        .map(|t| t.into_inner().unwrap_or_else(|p| p.into_inner()))
        .unwrap_or_default();
    Ok(LaunchOutput {
        printed: prints.into_iter().map(|(_, _, s)| s).collect(),
        trace,
        trace_dropped,
    })
}
