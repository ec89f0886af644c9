//! The CPU backend: tile IR → Cranelift → native code, run across all cores.
//!
//! `compile` turns one specialization into a `CpuKernel` (keeping the
//! Cranelift IR text for inspection); `CpuKernel::launch` runs a grid with
//! pointer arguments checked against their tensors' bounds (checked mode),
//! reporting the source line, program id and offset of a bad access.
//! This backend is the reference every GPU result is compared with.
//!
//! Architecture invariant: depends on the tile IR only, never on the front
//! end, the session or any GPU crate.

mod atomic;
mod carried;
mod codegen;
mod dot;
mod elem;
mod gather;
mod lanes;
mod libm_calls;
mod narrow;
pub mod nvmath;
mod offsets;
pub mod runtime;

use codegen::Gen;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, AbiParam, InstBuilder, MemFlags, UserFuncName};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};
use std::collections::HashMap;
use tilebook_tir::{walk_ops, DType, Elem, Kernel, OpKind};

pub use runtime::{Access, LaunchError, LaunchOutput, Site};

/// Options of the CPU backend.
#[derive(Clone, Debug)]
pub struct CpuOptions {
    /// Bounds-check every load and store (on by default).
    pub checked: bool,
    /// Record every load and store lane (`tilebook.trace`): slower code,
    /// run one program at a time.
    pub trace: bool,
}

impl Default for CpuOptions {
    fn default() -> Self {
        CpuOptions {
            checked: true,
            trace: false,
        }
    }
}

/// A compiled specialization, ready to launch.
pub struct CpuKernel {
    func: runtime::KernelFn,
    frame_size: usize,
    /// Load/store/assert/print sites, indexed by the ids generated code reports.
    pub sites: Vec<Site>,
    /// The Cranelift IR, for `%ir`-style inspection.
    pub clif: String,
    pub num_params: usize,
    /// Compiled with `CpuOptions::trace`: launches record every access.
    pub traced: bool,
    /// One program's time at the last launch that measured it (ns; 0:
    /// never), so a repeated launch knows at once whether to use the pool.
    program_ns: std::sync::atomic::AtomicU64,
    // Owns the machine code `func` points into.
    _module: JITModule,
}

// SAFETY: the compiled code is immutable and reentrant; the module is only kept alive.
unsafe impl Send for CpuKernel {}
unsafe impl Sync for CpuKernel {}

const HELPERS: &[(&str, &[types::Type], Option<types::Type>)] = &[
    ("tb_oob", &[types::I64; 7], None),
    (
        "tb_trace",
        &[types::I64, types::I64, types::I64, types::I64, types::I64],
        None,
    ),
    (
        "tb_check_any",
        &[types::I64, types::I64, types::I64],
        Some(types::I8),
    ),
    (
        "tb_assert_fail",
        &[types::I64, types::I64, types::I64, types::I64],
        None,
    ),
    (
        "tb_print",
        &[
            types::I64,
            types::I64,
            types::I64,
            types::I64,
            types::I64,
            types::I64,
            types::I64,
        ],
        None,
    ),
    ("tb_exp_f32", &[types::F32], Some(types::F32)),
    ("tb_exp2_f32", &[types::F32], Some(types::F32)),
    ("tb_log_f32", &[types::F32], Some(types::F32)),
    ("tb_log2_f32", &[types::F32], Some(types::F32)),
    ("tb_sin_f32", &[types::F32], Some(types::F32)),
    ("tb_cos_f32", &[types::F32], Some(types::F32)),
    ("tb_sqrt_approx_f32", &[types::F32], Some(types::F32)),
    ("tb_exp_f64", &[types::F64], Some(types::F64)),
    ("tb_exp2_f64", &[types::F64], Some(types::F64)),
    ("tb_log_f64", &[types::F64], Some(types::F64)),
    ("tb_log2_f64", &[types::F64], Some(types::F64)),
    ("tb_sin_f64", &[types::F64], Some(types::F64)),
    ("tb_cos_f64", &[types::F64], Some(types::F64)),
    ("tb_round_e5", &[types::F32], Some(types::F32)),
    ("tb_round_e4", &[types::F32], Some(types::F32)),
    ("tb_lib1_f32", &[types::I32, types::F32], Some(types::F32)),
    ("tb_lib1_f64", &[types::I32, types::F64], Some(types::F64)),
    (
        "tb_lib2_f32",
        &[types::I32, types::F32, types::F32],
        Some(types::F32),
    ),
    (
        "tb_lib2_f64",
        &[types::I32, types::F64, types::F64],
        Some(types::F64),
    ),
    ("tb_pow_f32", &[types::F32, types::F32], Some(types::F32)),
    ("tb_pow_f64", &[types::F64, types::F64], Some(types::F64)),
    ("tb_fmod_f32", &[types::F32, types::F32], Some(types::F32)),
    ("tb_fmod_f64", &[types::F64, types::F64], Some(types::F64)),
    ("tb_e5_to_f32", &[types::I8], Some(types::F32)),
    ("tb_e4_to_f32", &[types::I8], Some(types::F32)),
    ("tb_f32_to_e5", &[types::F32], Some(types::I8)),
    ("tb_f32_to_e4", &[types::F32], Some(types::I8)),
    ("tb_dot_f32", &[types::I64; 8], None),
    ("tb_copy", &[types::I64; 3], None),
    ("tb_dot_f64", &[types::I64; 7], None),
    ("tb_dot_i8", &[types::I64; 7], None),
];

/// Compile one specialization to native code.
/// Block storage one program may need on the CPU backend, at most.
const FRAME_LIMIT: u64 = 1 << 30;

/// An upper bound of the frame a kernel needs (every block value its own
/// slot), or why it is too large: checked arithmetic, so a huge block is an
/// error here and never a wrapped size.
fn frame_bound(k: &Kernel) -> Result<u64, String> {
    let mut total: u64 = 0;
    let mut add = |t: &tilebook_tir::Type| {
        let bytes = (t.numel() as u64)
            .checked_mul(elem::reg_ty(t.elem).bytes() as u64)
            .and_then(|b| b.checked_add(64));
        total = bytes.and_then(|b| total.checked_add(b)).unwrap_or(u64::MAX);
    };
    walk_ops(&k.body, &mut |op| {
        for r in &op.results {
            add(k.ty(*r));
        }
        for region in &op.regions {
            for a in &region.args {
                add(k.ty(*a));
            }
        }
    });
    if total > FRAME_LIMIT {
        return Err(format!(
            "kernel `{}` needs more than {} MB of block storage per program (about {} MB): use smaller blocks",
            k.name,
            FRAME_LIMIT >> 20,
            total.min(u64::MAX >> 1) >> 20
        ));
    }
    Ok(total)
}

/// Inline PTX has no meaning on the CPU: refuse it with its line.
fn gpu_only(k: &Kernel) -> Result<(), String> {
    let mut line = None;
    walk_ops(&k.body, &mut |op| {
        if matches!(op.kind, OpKind::InlineAsm { .. }) && line.is_none() {
            line = Some(op.loc.line);
        }
    });
    match line {
        Some(l) => Err(format!(
            "kernel `{}` line {l}: inline PTX (tl.inline_asm_elementwise, tl.extra.cuda.globaltimer/smid) runs only on the GPU; the CPU backend cannot run it",
            k.name
        )),
        None => Ok(()),
    }
}

pub fn compile(k: &Kernel, options: &CpuOptions) -> Result<CpuKernel, String> {
    gpu_only(k)?;
    frame_bound(k)?;
    let rewritten = offsets::carried_offsets(k);
    let k = &rewritten;
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").map_err(|e| e.to_string())?;
    flags.set("is_pic", "false").map_err(|e| e.to_string())?;
    let isa_builder = cranelift_native::builder().map_err(|e| e.to_string())?;
    let isa = isa_builder
        .finish(settings::Flags::new(flags))
        .map_err(|e| e.to_string())?;
    let mut jb = JITBuilder::with_isa(isa, default_libcall_names());
    for (name, ptr) in runtime::helper_symbols() {
        jb.symbol(name, ptr);
    }
    let mut module = JITModule::new(jb);
    let mut ctx = module.make_context();
    let ptr_t = types::I64;
    for _ in 0..4 {
        ctx.func.signature.params.push(AbiParam::new(ptr_t));
    }
    ctx.func.signature.returns.push(AbiParam::new(types::I32));
    ctx.func.name = UserFuncName::user(0, 0);
    let mut fctx = FunctionBuilderContext::new();
    let (frame_size, sites) = {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let params = b.block_params(entry).to_vec();
        let mut uses: HashMap<tilebook_tir::Value, usize> = HashMap::new();
        walk_ops(&k.body, &mut |op| {
            for a in &op.args {
                *uses.entry(*a).or_default() += 1;
            }
        });
        let mut g = Gen {
            k,
            b,
            module: &mut module,
            funcs: HashMap::new(),
            vars: HashMap::new(),
            direct: HashMap::new(),
            oob_block: None,
            run_bounds: HashMap::new(),
            slots: HashMap::new(),
            frame_size: 0,
            args_ptr: params[0],
            pids: params[1],
            frame: params[2],
            ctx: params[3],
            bounds: HashMap::new(),
            prov: elem::provenance(k),
            sites: vec![],
            uses,
            checked: options.checked,
            trace: options.trace,
            axis: tilebook_tir::axis::analyze_proven(k),
        };
        for (name, ps, ret) in HELPERS {
            g.declare_helper(name, ps, *ret);
        }
        // Parameters: one u64 slot each.
        let bounds_ptr = g.b.ins().load(ptr_t, MemFlags::trusted(), g.ctx, 0);
        for (i, p) in k.params.iter().enumerate() {
            let raw =
                g.b.ins()
                    .load(types::I64, MemFlags::trusted(), g.args_ptr, (i * 8) as i32);
            let t = elem::reg_ty(k.ty(p.value).elem);
            let v = if t == types::I64 {
                raw
            } else if t == types::F64 {
                g.b.ins().bitcast(types::F64, MemFlags::new(), raw)
            } else if t == types::F32 {
                let lo = g.b.ins().ireduce(types::I32, raw);
                g.b.ins().bitcast(types::F32, MemFlags::new(), lo)
            } else {
                g.b.ins().ireduce(t, raw)
            };
            g.set(p.value, v);
            if matches!(k.ty(p.value).elem, Elem::Ptr(_)) {
                let lo =
                    g.b.ins()
                        .load(ptr_t, MemFlags::trusted(), bounds_ptr, (i * 16) as i32);
                let hi =
                    g.b.ins()
                        .load(ptr_t, MemFlags::trusted(), bounds_ptr, (i * 16 + 8) as i32);
                g.bounds.insert(i, (lo, hi));
                // For runs of four elements: `p0 - base <= limit` (unsigned)
                // says all four lie inside; a tensor smaller than a run gets
                // a base no address reaches.
                let size = k.ty(p.value).elem.pointee().map_or(1, DType::size_bytes) as i64;
                let bytes = 4 * size;
                let extent = g.b.ins().isub(hi, lo);
                let small = g.b.ins().icmp_imm(IntCC::UnsignedLessThan, extent, bytes);
                let limit = g.b.ins().iadd_imm(extent, -bytes);
                let zero = g.b.ins().iconst(types::I64, 0);
                let limit = g.b.ins().select(small, zero, limit);
                let never = g.b.ins().iconst(types::I64, -1);
                let base = g.b.ins().select(small, never, lo);
                // Kept in the frame and read where used: Cranelift would
                // otherwise recompute them inside every loop.
                let slot = g.alloc_raw(16);
                g.b.ins()
                    .store(MemFlags::trusted(), base, g.frame, slot as i32);
                g.b.ins()
                    .store(MemFlags::trusted(), limit, g.frame, slot as i32 + 8);
                g.run_bounds.insert(i, (slot, size));
            }
        }
        g.region(&k.body);
        let zero = g.b.ins().iconst(types::I32, 0);
        g.b.ins().return_(&[zero]);
        g.finish_exits();
        g.b.seal_all_blocks();
        let frame_size = g.frame_size as usize;
        let sites = std::mem::take(&mut g.sites);
        g.b.finalize();
        (frame_size, sites)
    };
    let clif = ctx.func.display().to_string();
    let id = module
        .declare_function(
            &format!("tile_{}", k.name),
            Linkage::Export,
            &ctx.func.signature,
        )
        .map_err(|e| e.to_string())?;
    module
        .define_function(id, &mut ctx)
        .map_err(|e| format!("Cranelift rejected the kernel: {e:?}"))?;
    module.clear_context(&mut ctx);
    module.finalize_definitions().map_err(|e| e.to_string())?;
    let code = module.get_finalized_function(id);
    // SAFETY: the function was compiled with exactly this signature.
    let func: runtime::KernelFn = unsafe { std::mem::transmute(code) };
    Ok(CpuKernel {
        func,
        frame_size,
        sites,
        clif,
        num_params: k.params.len(),
        traced: options.trace,
        program_ns: std::sync::atomic::AtomicU64::new(0),
        _module: module,
    })
}

impl CpuKernel {
    /// Bytes of working memory (block values) one program uses.
    pub fn frame_bytes(&self) -> usize {
        self.frame_size
    }

    /// Run the grid. `args` has one u64 per parameter (integers sign-extended,
    /// floats as their bits, pointers as addresses); `bounds` the byte range of
    /// each pointer argument's tensor; `allocations` every live tensor.
    pub fn launch(
        &self,
        grid: [u32; 3],
        args: &[u64],
        bounds: &[[u64; 2]],
        allocations: Vec<(u64, u64)>,
    ) -> Result<LaunchOutput, LaunchError> {
        self.launch_cancellable(grid, args, bounds, allocations, None)
    }

    /// `launch`, stopping between programs once `cancel` is set
    /// (`LaunchError::Interrupted`).
    pub fn launch_cancellable(
        &self,
        grid: [u32; 3],
        args: &[u64],
        bounds: &[[u64; 2]],
        allocations: Vec<(u64, u64)>,
        cancel: Option<&std::sync::atomic::AtomicBool>,
    ) -> Result<LaunchOutput, LaunchError> {
        let mut allocations = allocations;
        allocations.sort_unstable();
        // Asked once: the answer reads cgroup files, tens of microseconds.
        static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        let threads = *THREADS.get_or_init(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        });
        let formats = self.sites.iter().map(|s| s.message.clone()).collect();
        runtime::run_grid(runtime::Grid {
            f: self.func,
            frame_size: self.frame_size,
            grid,
            args,
            bounds,
            allocations,
            print_formats: formats,
            threads,
            trace: self.traced,
            cancel,
            program_ns: &self.program_ns,
        })
    }

    /// Bytes of block storage one program instance uses.
    pub fn frame_size(&self) -> usize {
        self.frame_size
    }
}
