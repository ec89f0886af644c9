//! Tile IR → LLVM IR for one CTA (program), in the layouts of `layout.rs`.
//!
//! Scalars are single LLVM values (every thread computes them). A block value
//! is the list of registers this thread holds. fp16/bf16 values are kept in
//! f32 registers holding exactly representable values, rounded after each
//! op — the CPU backend's rule, so results agree bit for bit where the math
//! does.

mod asm;
mod async_copy;
mod atomic;
mod bounds;
mod checked;
mod control;
mod gather;
mod math;
mod memory;
mod mma_cols;
mod mma_narrow;
mod mma_rows;
mod prefix;
mod reduce;
mod release;
mod scaled;
mod tensor_core;
mod tile_plan;
mod tma;
mod transpose;
pub(crate) mod wgmma;

use crate::layout::Layout;
pub use crate::mma::Features;
use crate::mma::{MmaKind, MmaLayout};
use crate::mma_plan::{plan, same_rows};
use inkwell::basic_block::BasicBlock;
use inkwell::builder::{Builder, BuilderError};
use inkwell::context::Context;
use inkwell::intrinsics::Intrinsic;
use inkwell::module::{Linkage, Module};
use inkwell::types::{BasicType, BasicTypeEnum};
use inkwell::values::{BasicValue, BasicValueEnum, FunctionValue, IntValue, PointerValue};
use inkwell::{AddressSpace, FloatPredicate, IntPredicate};
use std::collections::{HashMap, HashSet};
use tilebook_tir::axis::{analyze, analyze_dim0, AxisInfo};
use tilebook_tir::{
    BinOp, CmpPred, Combine, Const, DType, Elem, Kernel, Op, OpKind, Region, Type, UnOp, Value,
};

pub struct GenError(pub String);

impl From<BuilderError> for GenError {
    fn from(e: BuilderError) -> Self {
        GenError(format!("LLVM builder: {e}"))
    }
}

type R<T> = Result<T, GenError>;

fn fail<T>(msg: impl Into<String>) -> R<T> {
    Err(GenError(msg.into()))
}

#[derive(Clone)]
enum Reg<'ctx> {
    S(BasicValueEnum<'ctx>),
    B(Vec<BasicValueEnum<'ctx>>),
}

struct Gen<'ctx, 'a> {
    ctx: &'ctx Context,
    module: &'a Module<'ctx>,
    b: Builder<'ctx>,
    func: FunctionValue<'ctx>,
    k: &'a Kernel,
    threads: usize,
    vals: HashMap<Value, Reg<'ctx>>,
    tid: IntValue<'ctx>,
    smem: PointerValue<'ctx>,
    smem_bytes: std::cell::Cell<usize>,
    axis: HashMap<Value, AxisInfo>,
    /// The same facts down the columns of 2-D values (`axis::analyze_dim0`).
    axis0: HashMap<Value, AxisInfo>,
    /// Values whose registers are in an MMA layout.
    mma: HashMap<Value, MmaLayout>,
    /// Row vectors of MMA values (`mma_plan`), by the layout they came from.
    rows: HashMap<Value, MmaLayout>,
    /// Column vectors loaded in place (`mma_cols`), by the layout they feed.
    cols: HashMap<Value, MmaLayout>,
    /// Ops that emit nothing: their users read their operands (`mma_plan`).
    virtual_ops: HashSet<Value>,
    /// Scaled blocks built only where read (`scaled`): `x * splat(c)` as `(x, c)`.
    scaled: HashMap<Value, (Value, Value)>,
    /// Blocked vectors moved into MMA rows (`true`) or columns, like `converted`.
    vectors: std::cell::RefCell<Vec<MovedVector<'ctx>>>,
    /// A fragments of loop dots with a loop-invariant A, by dot result (`hoist_a_fragments`).
    hoisted: HashMap<Value, AFragments<'ctx>>,
    /// The op defining each value (for rematerialisation).
    defs: HashMap<Value, &'a Op>,
    /// MMA values converted to the blocked layout, with the region depth (valid until it ends).
    converted: std::cell::RefCell<Vec<(usize, Value, Vec<BasicValueEnum<'ctx>>)>>,
    depth: usize,
    /// How many loops enclose the op being emitted.
    loops: usize,
    /// fp16/bf16 dot operands kept in half registers.
    half_regs: std::collections::HashSet<Value>,
    /// fp8 values used only as dot operands (tile candidates under `wgmma`).
    fp8_operands: std::collections::HashSet<Value>,
    /// A runtime byte offset added to shared-memory addresses (the double buffer in use).
    /// Math functions may call libdevice (`libdevice.rs`).
    libdevice: bool,
    smem_shift: std::cell::Cell<Option<IntValue<'ctx>>>,
    /// The one counter of register-path dots (see `dot_buffer_shift`).
    dot_counter: std::cell::Cell<Option<PointerValue<'ctx>>>,
    /// Bytes between the two copies of register-path dot operand tiles:
    /// the largest dot's (`MmaLayout::register_tiles_bytes`).
    dot_stride: usize,
    /// Inserts into the entry block, before its branch to the body: values
    /// that depend only on the thread index are computed there once.
    pre: Builder<'ctx>,
    /// `(tid * vec >> shift) & mask`, by `(vec, shift, mask)`, in the entry block.
    tid_fields: std::cell::RefCell<HashMap<(usize, u32, usize), IntValue<'ctx>>>,
    /// The warp index as `shfl.sync` broadcasts it (`wgmma::uniform_warp_coords`).
    uniform_warp: std::cell::Cell<Option<IntValue<'ctx>>>,
    /// Dot operands copied by `cp.async` straight into shared tiles.
    tile_plan: tile_plan::TilePlan,
    pending_copies: std::cell::RefCell<Vec<async_copy::PendingCopies<'ctx>>>,
    /// Within one loop body: the carried tiles a wait has shown landed and
    /// visible (`async_copy::Landed`).
    landed: std::cell::RefCell<async_copy::Landed>,
    /// Where each MMA layout's ring of operand stages starts in shared
    /// memory, and its number of stages.
    ring_base: HashMap<MmaLayout, (usize, usize)>,
    /// Where the other shared-memory scratch starts: after the rings while
    /// tiles may be live or in flight, else 0 (see `async_copy`).
    scratch: usize,
    /// Bytes the rings take.
    ring_bytes: usize,
    stage_counters: std::cell::RefCell<HashMap<async_copy::TileRole, PointerValue<'ctx>>>,
    async_used: std::cell::Cell<bool>,
    /// Widest run per thread, by element count (see `layout::run_limits`).
    max_vec: HashMap<usize, usize>,
    /// Checked mode's state (`checked.rs`).
    check: Option<checked::Check<'ctx>>,
    /// `Features::predicated_stores`.
    predicated_stores: bool,
    /// `Emitted::branched_stores`, as the stores are emitted.
    branched_stores: std::cell::Cell<bool>,
    /// Tile streams copied by the copy engine (`tma`).
    tma: tma::TmaPlan<'ctx>,
}

/// What `emit` produced besides the function.
pub struct Emitted {
    /// Dynamic shared memory per program (bytes).
    pub shared_bytes: u32,
    /// Whether the kernel uses `wgmma` (so it needs `sm_90a`).
    pub wgmma: bool,
    /// A chained `wgmma` dot took the register path for lack of shared memory
    /// (`plan_mma`): fewer stages would keep it on `wgmma`.
    pub over_budget: bool,
    /// Whether a register-path dot reads operands prefetched into registers.
    pub register_prefetch: bool,
    /// A one-dot loop's tiles leave room for two blocks per SM.
    pub two_blocks: bool,
    /// Some `wgmma` group is waited for at its result's first reader with
    /// later groups running.
    pub lazy_waits: bool,
    /// A masked global store in a loop branched where it could be predicated.
    pub branched_stores: bool,
    /// The tensor-map parameters after the kernel's own (`tma`).
    pub tensor_maps: Vec<crate::TensorMapUse>,
}

/// Emit the kernel into `module`, using the tensor-core instructions `features` allows.
pub fn emit<'ctx>(
    ctx: &'ctx Context,
    module: &Module<'ctx>,
    k: &Kernel,
    num_warps: u32,
    features: Features,
    check_bounds: bool,
    maxnreg: Option<u32>,
) -> Result<Emitted, String> {
    let threads = 32 * num_warps as usize;
    let mut params = vec![];
    for p in &k.params {
        params.push(param_type(ctx, k.ty(p.value)).into());
    }
    if check_bounds {
        for t in checked::extra_params(ctx, k) {
            params.push(t.into());
        }
    }
    let (map_params, first_map) = tma::append_params(ctx, k, check_bounds, &mut params);
    let fn_ty = ctx.void_type().fn_type(&params, false);
    let func = module.add_function(&k.name, fn_ty, None);
    // PTX_Kernel calling convention: an entry point.
    func.set_call_conventions(71);
    tma::declare_params(ctx, module, func, first_map, map_params.len())?;
    bounds::annotate(ctx, module, func, threads, maxnreg)?;
    let entry = ctx.append_basic_block(func, "entry");
    let b = ctx.create_builder();
    b.position_at_end(entry);
    let smem_global = module.add_global(
        ctx.i8_type().array_type(0),
        Some(AddressSpace::from(3u16)),
        "tb_smem",
    );
    smem_global.set_linkage(Linkage::External);
    smem_global.set_alignment(16);
    let operand_sizes = crate::layout::dot_operand_sizes(k);
    let mut g = Gen {
        ctx,
        module,
        b,
        func,
        k,
        threads,
        vals: HashMap::new(),
        tid: ctx.i32_type().const_zero(),
        smem: smem_global.as_pointer_value(),
        smem_bytes: std::cell::Cell::new(0),
        axis: analyze(k),
        axis0: HashMap::new(),
        mma: HashMap::new(),
        rows: HashMap::new(),
        cols: HashMap::new(),
        virtual_ops: HashSet::new(),
        scaled: HashMap::new(),
        hoisted: HashMap::new(),
        vectors: Default::default(),
        defs: HashMap::new(),
        converted: std::cell::RefCell::new(vec![]),
        depth: 0,
        loops: 0,
        half_regs: Default::default(),
        fp8_operands: Default::default(),
        smem_shift: std::cell::Cell::new(None),
        dot_counter: std::cell::Cell::new(None),
        dot_stride: 0,
        libdevice: features.libdevice,
        pre: ctx.create_builder(),
        tid_fields: Default::default(),
        uniform_warp: Default::default(),
        tile_plan: Default::default(),
        pending_copies: Default::default(),
        landed: Default::default(),
        ring_base: HashMap::new(),
        scratch: 0,
        ring_bytes: 0,
        stage_counters: Default::default(),
        async_used: std::cell::Cell::new(false),
        max_vec: crate::layout::run_limits(k, &operand_sizes),
        check: None,
        predicated_stores: features.predicated_stores,
        branched_stores: Default::default(),
        tma: Default::default(),
    };
    tilebook_tir::walk_ops(&k.body, &mut |op| {
        for &r in &op.results {
            g.defs.insert(r, op);
        }
    });
    g.scalar_only_sizes(&operand_sizes);
    g.axis0 = analyze_dim0(k, &g.axis);
    let (over_budget, register_prefetch) = g.plan_mma(features);
    g.plan_scaled();
    let uses_wgmma = g.mma.values().any(|l| l.wgmma);
    if uses_wgmma {
        // Swizzle patterns are anchored at 1024-byte boundaries.
        smem_global.set_alignment(1024);
    }
    g.plan_tma(&map_params, first_map).map_err(|e| e.0)?;
    g.relax_bulk_operands(&operand_sizes);
    g.scratch = 0;
    g.ring_bytes = g.place_rings();
    g.smem_bytes.set(g.ring_bytes);
    let run = |g: &mut Gen<'ctx, '_>| -> R<()> {
        g.tid = g.sreg("llvm.nvvm.read.ptx.sreg.tid.x")?;
        let body = g.ctx.append_basic_block(g.func, "body");
        let br = g.b.build_unconditional_branch(body)?;
        g.pre.position_before(&br);
        g.b.position_at_end(body);
        for (i, p) in k.params.iter().enumerate() {
            let raw = g
                .func
                .get_nth_param(i as u32)
                .ok_or_else(|| GenError("missing parameter".into()))?;
            let v = if k.ty(p.value).dtype() == Some(DType::I1) {
                g.b.build_int_truncate(raw.into_int_value(), g.ctx.bool_type(), "")?
                    .into()
            } else {
                raw
            };
            g.vals.insert(p.value, Reg::S(v));
        }
        if check_bounds {
            g.start_checks()?;
        }
        g.tma_init()?;
        g.region(&k.body)?;
        if g.async_used.get() {
            g.ptx_statement("cp.async.wait_all;")?;
        }
        g.b.build_return(None)?;
        Ok(())
    };
    run(&mut g).map_err(|e| e.0)?;
    g.place_bars();
    Ok(Emitted {
        shared_bytes: g.smem_bytes.get() as u32,
        wgmma: uses_wgmma,
        over_budget,
        register_prefetch,
        two_blocks: g.tile_plan.two_blocks,
        lazy_waits: g.tile_plan.overlapped,
        branched_stores: g.branched_stores.get(),
        tensor_maps: g.tensor_maps(),
    })
}

fn param_type<'ctx>(ctx: &'ctx Context, t: &Type) -> BasicTypeEnum<'ctx> {
    match t.elem {
        Elem::Ptr(_) => ctx.ptr_type(AddressSpace::from(1u16)).into(),
        Elem::Scalar(DType::I1) => ctx.i32_type().into(),
        Elem::Scalar(d) => scalar_type(ctx, d),
    }
}

fn scalar_type<'ctx>(ctx: &'ctx Context, d: DType) -> BasicTypeEnum<'ctx> {
    match d {
        DType::I1 => ctx.bool_type().into(),
        DType::I8 | DType::U8 => ctx.i8_type().into(),
        DType::I16 | DType::U16 => ctx.i16_type().into(),
        DType::I32 | DType::U32 => ctx.i32_type().into(),
        DType::I64 | DType::U64 => ctx.i64_type().into(),
        DType::F64 => ctx.f64_type().into(),
        _ => ctx.f32_type().into(),
    }
}

fn unsigned(d: Option<DType>) -> bool {
    d.is_some_and(|d| d.is_unsigned_int() || d == DType::I1)
}

impl<'ctx> Gen<'ctx, '_> {
    fn ty(&self, v: Value) -> &Type {
        self.k.ty(v)
    }

    fn reg_type(&self, e: Elem) -> BasicTypeEnum<'ctx> {
        match e {
            Elem::Ptr(_) => self.ctx.ptr_type(AddressSpace::from(1u16)).into(),
            Elem::Scalar(d) => scalar_type(self.ctx, d),
        }
    }

    fn layout(&self, t: &Type) -> Layout {
        let n = t.numel();
        Layout::with_max_vec(n, self.threads, self.max_vec.get(&n).copied().unwrap_or(4))
    }

    fn i32c(&self, v: i64) -> IntValue<'ctx> {
        self.ctx.i32_type().const_int(v as u64, true)
    }

    fn sreg(&self, name: &str) -> R<IntValue<'ctx>> {
        Ok(self.intrinsic(name, &[], &[])?.into_int_value())
    }

    fn intrinsic(
        &self,
        name: &str,
        tys: &[BasicTypeEnum<'ctx>],
        args: &[BasicValueEnum<'ctx>],
    ) -> R<BasicValueEnum<'ctx>> {
        let i = Intrinsic::find(name)
            .ok_or_else(|| GenError(format!("LLVM has no intrinsic {name}")))?;
        let f = i
            .get_declaration(self.module, tys)
            .ok_or_else(|| GenError(format!("cannot declare {name}")))?;
        let args: Vec<_> = args.iter().map(|a| (*a).into()).collect();
        let call = self.b.build_call(f, &args, "")?;
        Ok(call
            .try_as_basic_value()
            .basic()
            .unwrap_or_else(|| self.ctx.i32_type().const_zero().into()))
    }

    fn barrier(&self) -> R<()> {
        let i = Intrinsic::find("llvm.nvvm.barrier0")
            .ok_or_else(|| GenError("no barrier intrinsic".into()))?;
        let f = i
            .get_declaration(self.module, &[])
            .ok_or_else(|| GenError("cannot declare barrier".into()))?;
        // Two conversions in a row: the first's closing barrier is the second's opening one.
        let last = self
            .b
            .get_insert_block()
            .and_then(|b| b.get_last_instruction());
        let callee = last
            .filter(|i| i.get_opcode() == inkwell::values::InstructionOpcode::Call)
            .and_then(|i| i.get_operand(i.get_num_operands().checked_sub(1)?))
            .and_then(|o| o.value());
        if callee == Some(f.as_global_value().as_pointer_value().into()) {
            return Ok(());
        }
        self.b.build_call(f, &[], "")?;
        Ok(())
    }

    fn scalar(&self, v: Value) -> R<BasicValueEnum<'ctx>> {
        match self.vals.get(&v) {
            Some(Reg::S(x)) => Ok(*x),
            _ => fail(format!("internal: value %{} is not a scalar here", v.0)),
        }
    }

    /// Scratch bytes (from the start of scratch) an operation needs.
    fn need_smem(&self, bytes: usize) {
        self.smem_bytes
            .set(self.smem_bytes.get().max(self.scratch + bytes));
    }

    /// The registers of a value as stored (MMA layout for MMA values).
    fn raw(&self, v: Value) -> R<Vec<BasicValueEnum<'ctx>>> {
        match self.vals.get(&v) {
            Some(Reg::B(r)) => Ok(r.clone()),
            Some(Reg::S(x)) => Ok(vec![*x]),
            None => fail(format!("internal: value %{} is not defined", v.0)),
        }
    }

    /// The registers of a block value in the blocked layout (a scalar
    /// broadcasts to every register; MMA values are converted).
    fn regs(&self, v: Value, n: usize) -> R<Vec<BasicValueEnum<'ctx>>> {
        if let Some(l) = self.mma.get(&v).copied() {
            return self.mma_to_blocked(v, &l);
        }
        if let Some(l) = self.rows.get(&v).copied() {
            return self.rows_to_blocked(v, &l);
        }
        if let Some(l) = self.cols.get(&v).copied() {
            return self.cols_to_blocked(v, &l);
        }
        match self.vals.get(&v) {
            Some(Reg::B(r)) => Ok(r.clone()),
            Some(Reg::S(x)) => Ok(vec![*x; n]),
            None => fail(format!("internal: value %{} is not defined", v.0)),
        }
    }

    /// For a replicated layout, the predicate "this thread is an element's
    /// first holder" (the one that stores or prints it); `None` otherwise.
    fn first_holder(&self, l: &Layout) -> R<Option<IntValue<'ctx>>> {
        if !l.replicated() {
            return Ok(None);
        }
        Ok(Some(self.b.build_int_compare(
            IntPredicate::ULT,
            self.tid,
            self.i32c(l.n as i64),
            "",
        )?))
    }

    /// This thread's element index for register `r` of a block of layout `l`.
    fn elem_index(&self, l: &Layout, r: usize) -> R<IntValue<'ctx>> {
        if l.replicated() {
            return Ok(self.b.build_and(self.tid, self.i32c(l.n as i64 - 1), "")?);
        }
        let t = self.tid_field(l.vec, 0, usize::MAX)?;
        no_wrap_add(&self.b, t, self.i32c(l.base(r) as i64))
    }

    /// `((tid * vec) >> shift) & mask`, computed once in the entry block.
    fn tid_field(&self, vec: usize, shift: u32, mask: usize) -> R<IntValue<'ctx>> {
        if let Some(v) = self.tid_fields.borrow().get(&(vec, shift, mask)) {
            return Ok(*v);
        }
        let p = &self.pre;
        // A thread index times a run length: far below 2^31.
        let mut x = p.build_int_nuw_mul(self.tid, self.i32c(vec as i64), "")?;
        if let Some(i) = x.as_instruction() {
            let _ = i.set_no_signed_wrap_flag(true);
        }
        if shift > 0 {
            x = p.build_right_shift(x, self.i32c(shift as i64), false, "")?;
        }
        if mask != usize::MAX {
            x = p.build_and(x, self.i32c(mask as i64), "")?;
        }
        self.tid_fields.borrow_mut().insert((vec, shift, mask), x);
        Ok(x)
    }

    /// The multi-index (in `shape`) of this thread's register `r` of a block
    /// of layout `l`. With power-of-two sizes each coordinate is a thread
    /// field (computed once) ORed with a constant; otherwise it is divided
    /// out of the linear index.
    fn elem_coords(&self, l: &Layout, r: usize, shape: &[usize]) -> R<Vec<IntValue<'ctx>>> {
        if l.replicated() || !l.is_pow2() || !shape.iter().all(|d| d.is_power_of_two()) {
            let e = self.elem_index(l, r)?;
            return self.unravel(e, shape);
        }
        let strides = Self::strides(shape);
        let c = l.base(r);
        let mut out = vec![];
        for (&n, &s) in shape.iter().zip(&strides) {
            let shift = s.trailing_zeros();
            let t = self.tid_field(l.vec, shift, n - 1)?;
            let k = (c >> shift) & (n - 1);
            out.push(if k == 0 {
                t
            } else {
                no_wrap_add(&self.b, t, self.i32c(k as i64))?
            });
        }
        Ok(out)
    }

    fn set(&mut self, v: Value, r: Reg<'ctx>) {
        self.vals.insert(v, r);
    }

    // ------------------------------------------------------------ ops

    fn op(&mut self, op: &Op) -> R<()> {
        let res = op.results.first().copied();
        let rty = res.map(|r| self.ty(r).clone());
        match &op.kind {
            OpKind::Const(c) => {
                let t = rty.expect("result");
                let x = self.constant(*c, t.elem)?;
                let n = self.layout(&t).regs();
                self.set(
                    res.expect("result"),
                    if t.is_block() {
                        Reg::B(vec![x; n])
                    } else {
                        Reg::S(x)
                    },
                );
            }
            OpKind::ProgramId(a) | OpKind::NumPrograms(a) => {
                let axis = ["x", "y", "z"][*a as usize];
                let name = if matches!(op.kind, OpKind::ProgramId(_)) {
                    "ctaid"
                } else {
                    "nctaid"
                };
                let x = self.sreg(&format!("llvm.nvvm.read.ptx.sreg.{name}.{axis}"))?;
                self.set(res.expect("result"), Reg::S(x.into()));
            }
            OpKind::Arange(start, _) => {
                let t = rty.expect("result");
                let l = self.layout(&t);
                let mut out = vec![];
                for r in 0..l.regs() {
                    let e = self.elem_index(&l, r)?;
                    let x = if *start >= 0 {
                        no_wrap_add(&self.b, e, self.i32c(*start))?
                    } else {
                        self.b.build_int_nsw_add(e, self.i32c(*start), "")?
                    };
                    out.push(x.into());
                }
                self.set(res.expect("result"), Reg::B(out));
            }
            OpKind::Splat
            | OpKind::ExpandDims(_)
            | OpKind::Reshape
            | OpKind::MultipleOf(_)
            | OpKind::MaxContiguous(_) => {
                // Equal element counts share a layout: registers carry over.
                let t = rty.expect("result");
                if self.rows.contains_key(&op.results[0]) || self.cols.contains_key(&op.results[0])
                {
                    let regs = self.raw(op.args[0])?;
                    self.set(op.results[0], Reg::B(regs));
                    return Ok(());
                }
                let regs = self.regs(op.args[0], self.layout(&t).regs())?;
                let out = if t.is_block() {
                    Reg::B(regs)
                } else {
                    Reg::S(regs[0])
                };
                self.set(res.expect("result"), out);
            }
            OpKind::Broadcast | OpKind::Trans(_) if self.virtual_ops.contains(&op.results[0]) => {}
            OpKind::Broadcast | OpKind::Trans(_) => self.permute_through_smem(op)?,
            OpKind::Gather(axis) => self.gather(op, *axis)?,
            OpKind::Load { mask, .. } if self.tiles().contains_key(&op.results[0]) => {
                let role = self.tiles()[&op.results[0]];
                self.async_load(op, role, *mask)?
            }
            OpKind::Load { mask, other, .. } if self.cols.contains_key(&op.results[0]) => {
                self.column_load(op, *mask, *other)?
            }
            OpKind::Load { mask, other, .. } => self.load(op, *mask, *other)?,
            OpKind::Store { mask, .. } => self.store(op, *mask)?,
            OpKind::AtomicRmw {
                op: kind,
                sem,
                scope,
                mask,
            } => self.atomic(op, Some(*kind), *sem, *scope, *mask)?,
            OpKind::AtomicCas { sem, scope } => self.atomic(op, None, *sem, *scope, false)?,
            OpKind::Reduce { combine, .. } if self.rows.contains_key(&op.results[0]) => {
                self.rows_reduce(op, *combine)?
            }
            OpKind::Reduce { axis, combine } => self.reduce(op, *axis, *combine)?,
            OpKind::Scan {
                axis,
                combine,
                reverse,
            } => self.scan(op, *axis, *combine, *reverse)?,
            OpKind::Dot { .. } => self.dot(op)?,
            OpKind::For => self.for_op(op)?,
            OpKind::If => self.if_op(op)?,
            OpKind::While => self.while_op(op)?,
            OpKind::Barrier => self.barrier()?,
            OpKind::Print(prefix) => self.print_op(op, prefix)?,
            OpKind::Assert(msg) => self.assert_op(op, msg)?,
            OpKind::Yield => {}
            OpKind::Binary(BinOp::Mul) if self.scaled.contains_key(&op.results[0]) => {}
            OpKind::Binary(_) if self.scaled_operand(op).is_some() => {
                let pos = self.scaled_operand(op).unwrap_or_default();
                self.scaled_add(op, pos)?
            }
            _ => {
                // Elementwise.
                let t = rty.expect("result");
                // Checked mode: integer `//` and `%` report a zero divisor.
                let divide = match op.kind {
                    OpKind::Binary(BinOp::Div) => Some(crate::record::DIVIDE),
                    OpKind::Binary(BinOp::Rem) => Some(crate::record::MODULO),
                    _ => None,
                }
                .filter(|_| self.check.is_some() && t.dtype().is_some_and(DType::is_int));
                if !t.is_block() {
                    let args: Vec<_> = op.args.iter().map(|&a| self.scalar(a)).collect::<R<_>>()?;
                    let x = self.elementwise(op, &args)?;
                    if let Some(what) = divide {
                        self.check_divisor(args[1].into_int_value(), None)?;
                        self.report_checks(op, what)?;
                    }
                    self.set(res.expect("result"), Reg::S(x));
                } else {
                    let r0 = op.results[0];
                    let (n, all) = match (self.mma.get(&r0).copied(), self.rows.get(&r0).copied()) {
                        (Some(l), _) => (l.regs(), self.mma_operands(op, &l)?),
                        (None, Some(l)) => (Self::rows_regs(&l), self.rows_operands(op, &l)?),
                        (None, None) => {
                            let n = self.layout(&t).regs();
                            let all: Vec<Vec<_>> =
                                op.args.iter().map(|&a| self.regs(a, n)).collect::<R<_>>()?;
                            (n, all)
                        }
                    };
                    let mut out: Vec<BasicValueEnum<'ctx>> = vec![];
                    let blocked = !self.mma.contains_key(&r0) && !self.rows.contains_key(&r0);
                    let run = if blocked && divide.is_none() {
                        self.equal_run(r0, &t)
                    } else {
                        1
                    };
                    for r in 0..n {
                        if r % run != 0 {
                            // Equal to the run's first register (axis analysis).
                            out.push(out[r - r % run]);
                            continue;
                        }
                        let args: Vec<_> = all.iter().map(|v| v[r]).collect();
                        out.push(self.elementwise(op, &args)?);
                        if divide.is_some() {
                            let index = if blocked {
                                Some(self.elem_index(&self.layout(&t), r)?)
                            } else {
                                None
                            };
                            self.check_divisor(args[1].into_int_value(), index)?;
                        }
                    }
                    if let Some(what) = divide {
                        self.report_checks(op, what)?;
                    }
                    self.set(res.expect("result"), Reg::B(out));
                }
            }
        }
        Ok(())
    }

    fn elementwise(&mut self, op: &Op, a: &[BasicValueEnum<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        let rt = self.ty(op.results[0]).clone();
        let d = rt.dtype();
        let in_d = op.args.first().and_then(|&a| self.ty(a).dtype());
        let float = d.is_some_and(DType::is_float);
        if let OpKind::InlineAsm {
            asm,
            constraints,
            pure,
        } = &op.kind
        {
            return self.inline_ptx(asm, constraints, *pure, rt.elem, a);
        }
        let b = &self.b;
        let x = match &op.kind {
            OpKind::Unary(u) => {
                let v = a[0];
                let ft = v.get_type();
                match u {
                    UnOp::Neg if float => b.build_float_neg(v.into_float_value(), "")?.into(),
                    UnOp::Neg => b.build_int_neg(v.into_int_value(), "")?.into(),
                    UnOp::Not => b.build_not(v.into_int_value(), "")?.into(),
                    UnOp::Abs if float => self.intrinsic("llvm.fabs", &[ft], &[v])?,
                    UnOp::Abs => self.intrinsic(
                        "llvm.abs",
                        &[ft],
                        &[v, self.ctx.bool_type().const_zero().into()],
                    )?,
                    UnOp::Sqrt => self.intrinsic("llvm.sqrt", &[ft], &[v])?,
                    // Triton's `tl.sqrt` in fp32: `sqrt.approx.ftz.f32`.
                    UnOp::SqrtApprox if ft == self.ctx.f32_type().into() => {
                        self.float_intrinsic("llvm.nvvm.sqrt.approx.ftz.f", v)?
                    }
                    UnOp::SqrtApprox => self.intrinsic("llvm.sqrt", &[ft], &[v])?,
                    UnOp::Floor => self.intrinsic("llvm.floor", &[ft], &[v])?,
                    UnOp::Ceil => self.intrinsic("llvm.ceil", &[ft], &[v])?,
                    UnOp::Rsqrt => {
                        let s = self.intrinsic("llvm.sqrt", &[ft], &[v])?;
                        let one = ft.into_float_type().const_float(1.0);
                        b.build_float_div(one, s.into_float_value(), "")?.into()
                    }
                    UnOp::Exp | UnOp::Exp2 | UnOp::Log | UnOp::Log2 | UnOp::Sin | UnOp::Cos
                        if self.libdevice_math(*u, ft) =>
                    {
                        self.libdevice_unary(*u, v)?
                    }
                    UnOp::Exp | UnOp::Exp2 | UnOp::Log | UnOp::Log2 => {
                        self.approx_exp_log(*u, v, ft)?
                    }
                    UnOp::Sin => self.float_intrinsic("llvm.nvvm.sin.approx.f", v)?,
                    UnOp::Cos => self.float_intrinsic("llvm.nvvm.cos.approx.f", v)?,
                    UnOp::Lib(f) => self.libdevice_call(f.base(), &[v])?,
                }
            }
            OpKind::Binary(op_) => self.binary(*op_, a[0], a[1], d)?,
            OpKind::Cmp(p) => {
                if in_d.is_some_and(DType::is_float) {
                    let pred = match p {
                        CmpPred::Eq => FloatPredicate::OEQ,
                        CmpPred::Ne => FloatPredicate::UNE,
                        CmpPred::Lt => FloatPredicate::OLT,
                        CmpPred::Le => FloatPredicate::OLE,
                        CmpPred::Gt => FloatPredicate::OGT,
                        CmpPred::Ge => FloatPredicate::OGE,
                    };
                    b.build_float_compare(
                        pred,
                        a[0].into_float_value(),
                        a[1].into_float_value(),
                        "",
                    )?
                    .into()
                } else {
                    let u = unsigned(in_d) || in_d.is_none();
                    let pred = match (p, u) {
                        (CmpPred::Eq, _) => IntPredicate::EQ,
                        (CmpPred::Ne, _) => IntPredicate::NE,
                        (CmpPred::Lt, false) => IntPredicate::SLT,
                        (CmpPred::Le, false) => IntPredicate::SLE,
                        (CmpPred::Gt, false) => IntPredicate::SGT,
                        (CmpPred::Ge, false) => IntPredicate::SGE,
                        (CmpPred::Lt, true) => IntPredicate::ULT,
                        (CmpPred::Le, true) => IntPredicate::ULE,
                        (CmpPred::Gt, true) => IntPredicate::UGT,
                        (CmpPred::Ge, true) => IntPredicate::UGE,
                    };
                    let (x, y) = if in_d.is_none() {
                        let i64t = self.ctx.i64_type();
                        (
                            b.build_ptr_to_int(a[0].into_pointer_value(), i64t, "")?,
                            b.build_ptr_to_int(a[1].into_pointer_value(), i64t, "")?,
                        )
                    } else {
                        (a[0].into_int_value(), a[1].into_int_value())
                    };
                    b.build_int_compare(pred, x, y, "")?.into()
                }
            }
            OpKind::Select => b.build_select(a[0].into_int_value(), a[1], a[2], "")?,
            OpKind::Fma => self.intrinsic("llvm.fma", &[a[0].get_type()], &[a[0], a[1], a[2]])?,
            OpKind::Cast => return self.cast(a[0], in_d, d),
            OpKind::Bitcast if in_d.is_none() && d.is_some() => b
                .build_ptr_to_int(a[0].into_pointer_value(), self.ctx.i64_type(), "")?
                .into(),
            OpKind::Bitcast if in_d.is_some() && d.is_none() => b
                .build_int_to_ptr(
                    a[0].into_int_value(),
                    self.ctx.ptr_type(AddressSpace::from(1u16)),
                    "",
                )?
                .into(),
            OpKind::Bitcast => return self.bitcast(a[0], in_d, d),
            // Hints: the value itself (reached when an address is recomputed
            // element by element, e.g. for a `tl.dot` operand's loads).
            OpKind::MultipleOf(_) | OpKind::MaxContiguous(_) => return Ok(a[0]),
            OpKind::AddPtr => {
                let pointee = rt.elem.pointee().unwrap_or(DType::I8);
                let mem = self.mem_type(pointee);
                let off = a[1].into_int_value();
                let off = if off.get_type().get_bit_width() < 64 {
                    let od = self.ty(op.args[1]).dtype();
                    b.build_int_cast_sign_flag(off, self.ctx.i64_type(), !unsigned(od), "")?
                } else {
                    off
                };
                // SAFETY: pointer arithmetic as the kernel wrote it; bounds are the kernel's contract.
                unsafe { b.build_gep(mem, a[0].into_pointer_value(), &[off], "")? }.into()
            }
            other => return fail(format!("internal: {other:?} is not elementwise")),
        };
        match d {
            Some(dt) if matches!(op.kind, OpKind::Unary(_) | OpKind::Binary(_) | OpKind::Fma) => {
                self.round_to(x, dt)
            }
            _ => Ok(x),
        }
    }

    fn cast(
        &self,
        x: BasicValueEnum<'ctx>,
        from: Option<DType>,
        to: Option<DType>,
    ) -> R<BasicValueEnum<'ctx>> {
        let (Some(fd), Some(td)) = (from, to) else {
            return Ok(x);
        };
        let b = &self.b;
        let tt = scalar_type(self.ctx, td);
        Ok(match (fd.is_float(), td.is_float()) {
            (false, false) => b
                .build_int_cast_sign_flag(
                    x.into_int_value(),
                    tt.into_int_type(),
                    !unsigned(Some(fd)),
                    "",
                )?
                .into(),
            (false, true) => {
                let f = if unsigned(Some(fd)) {
                    b.build_unsigned_int_to_float(x.into_int_value(), tt.into_float_type(), "")?
                } else {
                    b.build_signed_int_to_float(x.into_int_value(), tt.into_float_type(), "")?
                };
                self.round_to(f.into(), td)?
            }
            (true, false) => {
                if td == DType::I1 {
                    let z = x.get_type().into_float_type().const_zero();
                    return Ok(b
                        .build_float_compare(FloatPredicate::UNE, x.into_float_value(), z, "")?
                        .into());
                }
                let name = if unsigned(Some(td)) {
                    "llvm.fptoui.sat"
                } else {
                    "llvm.fptosi.sat"
                };
                self.intrinsic(name, &[tt, x.get_type()], &[x])?
            }
            (true, true) => {
                let y = if x.get_type() == tt {
                    x
                } else if tt == self.ctx.f64_type().into() {
                    b.build_float_ext(x.into_float_value(), self.ctx.f64_type(), "")?
                        .into()
                } else {
                    b.build_float_trunc(x.into_float_value(), self.ctx.f32_type(), "")?
                        .into()
                };
                if fd == td {
                    y
                } else {
                    self.round_to(y, td)?
                }
            }
        })
    }

    fn bitcast(
        &self,
        x: BasicValueEnum<'ctx>,
        from: Option<DType>,
        to: Option<DType>,
    ) -> R<BasicValueEnum<'ctx>> {
        let (Some(fd), Some(td)) = (from, to) else {
            return Ok(x);
        };
        let b = &self.b;
        let narrow = |d: DType| match d {
            DType::F16 => Some(self.ctx.f16_type()),
            DType::BF16 => Some(self.ctx.bf16_type()),
            _ => None,
        };
        // fp8 values live as f32 registers holding the fp8 value: their
        // bits are the encoded byte.
        let fp8 = |d: DType| matches!(d, DType::F8E5 | DType::F8E4NV);
        let bits: BasicValueEnum = match narrow(fd) {
            Some(nt) => {
                let h = b.build_float_trunc(x.into_float_value(), nt, "")?;
                b.build_bit_cast(h, self.ctx.i16_type(), "")?
            }
            None if fp8(fd) => self.encode_fp8(x, fd)?.into(),
            None if fd.is_float() => b.build_bit_cast(
                x,
                scalar_type(self.ctx, DType::int_of_bits(fd.bits(), true)),
                "",
            )?,
            None => x,
        };
        Ok(match narrow(td) {
            Some(nt) => {
                let h = b.build_bit_cast(bits, nt, "")?.into_float_value();
                b.build_float_ext(h, self.ctx.f32_type(), "")?.into()
            }
            None if fp8(td) => {
                let byte = b.build_int_truncate_or_bit_cast(
                    bits.into_int_value(),
                    self.ctx.i8_type(),
                    "",
                )?;
                self.decode_fp8(byte, td)?
            }
            None if td.is_float() => b.build_bit_cast(bits, scalar_type(self.ctx, td), "")?,
            None => bits,
        })
    }
}

/// Registers of several values in one list, with (is_block, count) per value.
/// A vector moved into MMA rows or columns: (region depth, value, rows, registers).
type MovedVector<'ctx> = (usize, Value, bool, Vec<BasicValueEnum<'ctx>>);
/// `mma.sync` A fragments, `[k-step][rep_m]`, four registers each.
type AFragments<'ctx> = Vec<Vec<Vec<BasicValueEnum<'ctx>>>>;
type Flat<'ctx> = (Vec<BasicValueEnum<'ctx>>, Vec<(bool, usize)>);

fn i32_type(ctx: &Context) -> inkwell::types::IntType<'_> {
    ctx.i32_type()
}

fn mem_vec_type(t: BasicTypeEnum<'_>, n: u32) -> inkwell::types::VectorType<'_> {
    match t {
        BasicTypeEnum::FloatType(f) => f.vec_type(n),
        BasicTypeEnum::IntType(i) => i.vec_type(n),
        other => other.into_int_type().vec_type(n),
    }
}

/// `a + b` of two non-negative element indices, flagged `nuw nsw`: a
/// block's element index is below its element count (under 2^31), so
/// neither wraps. The flags let LLVM move a run's constant offset out of
/// the sign extension of an address (`[base + 4096]` addressing), so the
/// runs of one access share a 64-bit register instead of keeping one each.
fn no_wrap_add<'ctx>(b: &Builder<'ctx>, a: IntValue<'ctx>, c: IntValue<'ctx>) -> R<IntValue<'ctx>> {
    let x = b.build_int_nuw_add(a, c, "")?;
    if let Some(i) = x.as_instruction() {
        let _ = i.set_no_signed_wrap_flag(true);
    }
    Ok(x)
}
