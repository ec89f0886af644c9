//! Tile IR → LLVM IR for one CTA (program), in the layouts of `layout.rs`.
//!
//! Scalars are single LLVM values (every thread computes them). A block value
//! is the list of registers this thread holds. fp16/bf16 values are kept in
//! f32 registers holding exactly representable values, rounded after each
//! op — the CPU backend's rule, so results agree bit for bit where the math
//! does.

use crate::axis::{analyze, AxisInfo};
use crate::layout::Layout;
use crate::mma::{plan, MmaLayout};
use inkwell::basic_block::BasicBlock;
use inkwell::builder::{Builder, BuilderError};
use inkwell::context::Context;
use inkwell::intrinsics::Intrinsic;
use inkwell::module::{Linkage, Module};
use inkwell::types::{BasicType, BasicTypeEnum};
use inkwell::values::{BasicValue, BasicValueEnum, FunctionValue, IntValue, PointerValue};
use inkwell::{AddressSpace, FloatPredicate, IntPredicate};
use std::collections::HashMap;
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
    /// Values whose registers are in an MMA layout.
    mma: HashMap<Value, MmaLayout>,
    /// The op defining each value (for rematerialisation).
    defs: HashMap<Value, &'a Op>,
    /// MMA values already converted to the blocked layout, with the region
    /// depth of the conversion (valid until that region ends).
    converted: std::cell::RefCell<Vec<(usize, Value, Vec<BasicValueEnum<'ctx>>)>>,
    depth: usize,
    /// fp16/bf16 dot operands kept in half registers.
    half_regs: std::collections::HashSet<Value>,
    /// A runtime byte offset added to shared-memory addresses (the double buffer in use).
    smem_shift: std::cell::Cell<Option<IntValue<'ctx>>>,
}

/// Emit the kernel into `module`; returns the dynamic shared memory it needs.
pub fn emit<'ctx>(
    ctx: &'ctx Context,
    module: &Module<'ctx>,
    k: &Kernel,
    num_warps: u32,
) -> Result<u32, String> {
    let threads = 32 * num_warps as usize;
    let mut params = vec![];
    for p in &k.params {
        params.push(param_type(ctx, k.ty(p.value)).into());
    }
    let fn_ty = ctx.void_type().fn_type(&params, false);
    let func = module.add_function(&k.name, fn_ty, None);
    // PTX_Kernel calling convention: an entry point.
    func.set_call_conventions(71);
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
        mma: plan(k, threads / 32),
        defs: HashMap::new(),
        converted: std::cell::RefCell::new(vec![]),
        depth: 0,
        half_regs: Default::default(),
        smem_shift: std::cell::Cell::new(None),
    };
    g.half_regs = crate::mma::dot_only_operands(k, &g.mma);
    tilebook_tir::walk_ops(&k.body, &mut |op| {
        for &r in &op.results {
            g.defs.insert(r, op);
        }
    });
    let run = |g: &mut Gen<'ctx, '_>| -> R<()> {
        g.tid = g.sreg("llvm.nvvm.read.ptx.sreg.tid.x")?;
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
        g.region(&k.body)?;
        g.b.build_return(None)?;
        Ok(())
    };
    run(&mut g).map_err(|e| e.0)?;
    Ok(g.smem_bytes.get() as u32)
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
        Layout::new(t.numel(), self.threads)
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
        self.b.build_call(f, &[], "")?;
        Ok(())
    }

    fn scalar(&self, v: Value) -> R<BasicValueEnum<'ctx>> {
        match self.vals.get(&v) {
            Some(Reg::S(x)) => Ok(*x),
            _ => fail(format!("internal: value %{} is not a scalar here", v.0)),
        }
    }

    fn need_smem(&self, bytes: usize) {
        self.smem_bytes.set(self.smem_bytes.get().max(bytes));
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
        match self.vals.get(&v) {
            Some(Reg::B(r)) => Ok(r.clone()),
            Some(Reg::S(x)) => Ok(vec![*x; n]),
            None => fail(format!("internal: value %{} is not defined", v.0)),
        }
    }

    /// This thread's element index for register `r` of a block of layout `l`.
    fn elem_index(&self, l: &Layout, r: usize) -> R<IntValue<'ctx>> {
        if l.replicated() {
            return Ok(self.b.build_and(self.tid, self.i32c(l.n as i64 - 1), "")?);
        }
        let t = self
            .b
            .build_int_mul(self.tid, self.i32c(l.vec as i64), "")?;
        Ok(self.b.build_int_add(t, self.i32c(l.base(r) as i64), "")?)
    }

    fn region(&mut self, r: &Region) -> R<Vec<Value>> {
        self.depth += 1;
        let result = (|| {
            for op in &r.ops {
                if op.kind == OpKind::Yield {
                    return Ok(op.args.clone());
                }
                self.op(op)?;
            }
            Ok(vec![])
        })();
        // Conversions made inside this region do not dominate what follows it.
        let d = self.depth;
        self.converted
            .borrow_mut()
            .retain(|(depth, _, _)| *depth < d);
        self.depth -= 1;
        result
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
                    out.push(self.b.build_int_add(e, self.i32c(*start), "")?.into());
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
                let regs = self.regs(op.args[0], self.layout(&t).regs())?;
                let out = if t.is_block() {
                    Reg::B(regs)
                } else {
                    Reg::S(regs[0])
                };
                self.set(res.expect("result"), out);
            }
            OpKind::Broadcast | OpKind::Trans(_) => self.permute_through_smem(op)?,
            OpKind::Load { mask, other } => self.load(op, *mask, *other)?,
            OpKind::Store { mask } => self.store(op, *mask)?,
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
            OpKind::Print(prefix) => self.print_op(op, prefix)?,
            OpKind::Assert(msg) => self.assert_op(op, msg)?,
            OpKind::Yield => {}
            _ => {
                // Elementwise.
                let t = rty.expect("result");
                if !t.is_block() {
                    let args: Vec<_> = op.args.iter().map(|&a| self.scalar(a)).collect::<R<_>>()?;
                    let x = self.elementwise(op, &args)?;
                    self.set(res.expect("result"), Reg::S(x));
                } else {
                    let n = self.layout(&t).regs();
                    let all: Vec<Vec<_>> =
                        op.args.iter().map(|&a| self.regs(a, n)).collect::<R<_>>()?;
                    let mut out = vec![];
                    for r in 0..n {
                        let args: Vec<_> = all.iter().map(|v| v[r]).collect();
                        out.push(self.elementwise(op, &args)?);
                    }
                    self.set(res.expect("result"), Reg::B(out));
                }
            }
        }
        Ok(())
    }

    fn constant(&self, c: Const, e: Elem) -> R<BasicValueEnum<'ctx>> {
        let t = self.reg_type(e);
        Ok(match t {
            BasicTypeEnum::FloatType(f) => f.const_float(c.as_f64()).into(),
            BasicTypeEnum::IntType(i) => i.const_int(c.as_i64() as u64, true).into(),
            _ => return fail("a constant of pointer type"),
        })
    }

    /// Round an f32 register to fp16/bf16 precision (fp8 is not supported yet).
    fn round_to(&self, x: BasicValueEnum<'ctx>, d: DType) -> R<BasicValueEnum<'ctx>> {
        let narrow = match d {
            DType::F16 => self.ctx.f16_type(),
            DType::BF16 => self.ctx.bf16_type(),
            DType::F8E5 | DType::F8E4NV => {
                let byte = self.encode_fp8(x, d)?;
                return self.decode_fp8(byte, d);
            }
            _ => return Ok(x),
        };
        let t = self.b.build_float_trunc(x.into_float_value(), narrow, "")?;
        Ok(self.b.build_float_ext(t, self.ctx.f32_type(), "")?.into())
    }

    fn float_intrinsic(&self, name32: &str, x: BasicValueEnum<'ctx>) -> R<BasicValueEnum<'ctx>> {
        if x.get_type() == self.ctx.f64_type().into() {
            return fail(format!(
                "{name32}: fp64 transcendental functions are not supported by the GPU backend yet"
            ));
        }
        self.intrinsic(name32, &[], &[x])
    }

    fn elementwise(&mut self, op: &Op, a: &[BasicValueEnum<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        let rt = self.ty(op.results[0]).clone();
        let d = rt.dtype();
        let in_d = self.ty(op.args[0]).dtype();
        let float = d.is_some_and(DType::is_float);
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
                    UnOp::Floor => self.intrinsic("llvm.floor", &[ft], &[v])?,
                    UnOp::Ceil => self.intrinsic("llvm.ceil", &[ft], &[v])?,
                    UnOp::Rsqrt => {
                        let s = self.intrinsic("llvm.sqrt", &[ft], &[v])?;
                        let one = ft.into_float_type().const_float(1.0);
                        b.build_float_div(one, s.into_float_value(), "")?.into()
                    }
                    UnOp::Exp | UnOp::Exp2 => {
                        let arg = if *u == UnOp::Exp {
                            let k = self.ctx.f32_type().const_float(std::f64::consts::LOG2_E);
                            if ft != self.ctx.f32_type().into() {
                                return fail("exp: fp64 is not supported by the GPU backend yet");
                            }
                            b.build_float_mul(v.into_float_value(), k, "")?.into()
                        } else {
                            v
                        };
                        self.float_intrinsic("llvm.nvvm.ex2.approx.f", arg)?
                    }
                    UnOp::Log | UnOp::Log2 => {
                        let l2 = self.float_intrinsic("llvm.nvvm.lg2.approx.f", v)?;
                        if *u == UnOp::Log {
                            let k = self.ctx.f32_type().const_float(std::f64::consts::LN_2);
                            b.build_float_mul(l2.into_float_value(), k, "")?.into()
                        } else {
                            l2
                        }
                    }
                    UnOp::Sin => self.float_intrinsic("llvm.nvvm.sin.approx.f", v)?,
                    UnOp::Cos => self.float_intrinsic("llvm.nvvm.cos.approx.f", v)?,
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
            OpKind::Bitcast => return self.bitcast(a[0], in_d, d),
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

    fn binary(
        &self,
        op: BinOp,
        x: BasicValueEnum<'ctx>,
        y: BasicValueEnum<'ctx>,
        d: Option<DType>,
    ) -> R<BasicValueEnum<'ctx>> {
        let b = &self.b;
        if d.is_some_and(DType::is_float) {
            let (p, q) = (x.into_float_value(), y.into_float_value());
            return Ok(match op {
                BinOp::Add => b.build_float_add(p, q, "")?.into(),
                BinOp::Sub => b.build_float_sub(p, q, "")?.into(),
                BinOp::Mul => b.build_float_mul(p, q, "")?.into(),
                BinOp::Div => b.build_float_div(p, q, "")?.into(),
                BinOp::Rem => b.build_float_rem(p, q, "")?.into(),
                BinOp::Min => self.intrinsic("llvm.minnum", &[x.get_type()], &[x, y])?,
                BinOp::Max => self.intrinsic("llvm.maxnum", &[x.get_type()], &[x, y])?,
                BinOp::Pow => {
                    // x ** y = 2^(y * log2 x), as Triton's fast path does.
                    let l = self.float_intrinsic("llvm.nvvm.lg2.approx.f", x)?;
                    let m = b.build_float_mul(l.into_float_value(), q, "")?;
                    self.float_intrinsic("llvm.nvvm.ex2.approx.f", m.into())?
                }
                other => return fail(format!("{other:?} on floats")),
            });
        }
        let u = unsigned(d);
        let (p, q) = (x.into_int_value(), y.into_int_value());
        Ok(match op {
            BinOp::Add => b.build_int_add(p, q, "")?.into(),
            BinOp::Sub => b.build_int_sub(p, q, "")?.into(),
            BinOp::Mul => b.build_int_mul(p, q, "")?.into(),
            BinOp::Div | BinOp::Rem => {
                // Defined results where LLVM has none: x/0 = 0, x%0 = x, MIN/-1 wraps.
                let t = p.get_type();
                let zero = t.const_zero();
                let one = t.const_int(1, false);
                let is_zero = b.build_int_compare(IntPredicate::EQ, q, zero, "")?;
                let m1 = t.const_all_ones();
                let is_m1 = b.build_int_compare(IntPredicate::EQ, q, m1, "")?;
                let bad = if u {
                    is_zero
                } else {
                    b.build_or(is_zero, is_m1, "")?
                };
                let safe = b.build_select(bad, one, q, "")?.into_int_value();
                let r = match (op, u) {
                    (BinOp::Div, true) => b.build_int_unsigned_div(p, safe, "")?,
                    (BinOp::Div, false) => b.build_int_signed_div(p, safe, "")?,
                    (_, true) => b.build_int_unsigned_rem(p, safe, "")?,
                    (_, false) => b.build_int_signed_rem(p, safe, "")?,
                };
                let r = if u {
                    r
                } else {
                    let m1v = if op == BinOp::Div {
                        b.build_int_neg(p, "")?
                    } else {
                        zero
                    };
                    b.build_select(is_m1, m1v, r, "")?.into_int_value()
                };
                let z = if op == BinOp::Div { zero } else { p };
                b.build_select(is_zero, z, r, "")?
            }
            BinOp::And => b.build_and(p, q, "")?.into(),
            BinOp::Or => b.build_or(p, q, "")?.into(),
            BinOp::Xor => b.build_xor(p, q, "")?.into(),
            BinOp::Shl => b.build_left_shift(p, q, "")?.into(),
            BinOp::Shr => b.build_right_shift(p, q, !u, "")?.into(),
            BinOp::Min | BinOp::Max => {
                let pred = match (op, u) {
                    (BinOp::Min, true) => IntPredicate::ULT,
                    (BinOp::Min, false) => IntPredicate::SLT,
                    (_, true) => IntPredicate::UGT,
                    (_, false) => IntPredicate::SGT,
                };
                let c = b.build_int_compare(pred, p, q, "")?;
                b.build_select(c, p, q, "")?
            }
            BinOp::UMulHi => {
                let bits = p.get_type().get_bit_width();
                let name = if bits == 64 {
                    "llvm.nvvm.mulhi.ull"
                } else {
                    "llvm.nvvm.mulhi.ui"
                };
                self.intrinsic(name, &[], &[x, y])?
            }
            BinOp::Pow => return fail("** on integers"),
        })
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
        let bits: BasicValueEnum = match narrow(fd) {
            Some(nt) => {
                let h = b.build_float_trunc(x.into_float_value(), nt, "")?;
                b.build_bit_cast(h, self.ctx.i16_type(), "")?
            }
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
            None if td.is_float() => b.build_bit_cast(bits, scalar_type(self.ctx, td), "")?,
            None => bits,
        })
    }

    // ------------------------------------------------------------ memory

    /// The in-memory type of an element (i1 as a byte, fp16 as half, ...).
    fn mem_type(&self, d: DType) -> BasicTypeEnum<'ctx> {
        match d {
            DType::I1 | DType::I8 | DType::U8 | DType::F8E5 | DType::F8E4NV => {
                self.ctx.i8_type().into()
            }
            DType::F16 => self.ctx.f16_type().into(),
            DType::BF16 => self.ctx.bf16_type().into(),
            _ => scalar_type(self.ctx, d),
        }
    }

    fn decode_mem(&self, v: BasicValueEnum<'ctx>, d: DType) -> R<BasicValueEnum<'ctx>> {
        Ok(match d {
            DType::I1 => self
                .b
                .build_int_compare(
                    IntPredicate::NE,
                    v.into_int_value(),
                    self.ctx.i8_type().const_zero(),
                    "",
                )?
                .into(),
            DType::F16 | DType::BF16 => self
                .b
                .build_float_ext(v.into_float_value(), self.ctx.f32_type(), "")?
                .into(),
            DType::F8E5 | DType::F8E4NV => self.decode_fp8(v.into_int_value(), d)?,
            _ => v,
        })
    }

    fn encode_mem(&self, v: BasicValueEnum<'ctx>, d: DType) -> R<BasicValueEnum<'ctx>> {
        Ok(match d {
            DType::I1 => self
                .b
                .build_int_z_extend(v.into_int_value(), self.ctx.i8_type(), "")?
                .into(),
            DType::F16 => self
                .b
                .build_float_trunc(v.into_float_value(), self.ctx.f16_type(), "")?
                .into(),
            DType::BF16 => self
                .b
                .build_float_trunc(v.into_float_value(), self.ctx.bf16_type(), "")?
                .into(),
            DType::F8E5 | DType::F8E4NV => self.encode_fp8(v, d)?.into(),
            _ => v,
        })
    }

    /// An fp8 byte to f32, exactly.
    fn decode_fp8(&self, b: IntValue<'ctx>, d: DType) -> R<BasicValueEnum<'ctx>> {
        let bd = &self.b;
        let i32t = self.ctx.i32_type();
        let f32t = self.ctx.f32_type();
        let w = bd.build_int_z_extend(b, i32t, "")?;
        if d == DType::F8E5 {
            // e5m2 is the top byte of an fp16.
            let h = bd.build_left_shift(w, i32t.const_int(8, false), "")?;
            let h = bd.build_int_truncate(h, self.ctx.i16_type(), "")?;
            let h = bd
                .build_bit_cast(h, self.ctx.f16_type(), "")?
                .into_float_value();
            return Ok(bd.build_float_ext(h, f32t, "")?.into());
        }
        // e4m3fn: sign, 4 exponent bits (bias 7), 3 mantissa bits; 0x7f/0xff are NaN.
        let c = |v: u64| i32t.const_int(v, false);
        let sign = bd.build_and(w, c(0x80), "")?;
        let sign = bd.build_left_shift(sign, c(24), "")?;
        let exp = bd.build_and(bd.build_right_shift(w, c(3), false, "")?, c(0xF), "")?;
        let man = bd.build_and(w, c(7), "")?;
        let e32 = bd.build_int_add(exp, c(120), "")?;
        let normal = bd.build_or(
            bd.build_left_shift(e32, c(23), "")?,
            bd.build_left_shift(man, c(20), "")?,
            "",
        )?;
        let normal = bd.build_or(normal, sign, "")?;
        let normal = bd.build_bit_cast(normal, f32t, "")?.into_float_value();
        let sub = bd.build_unsigned_int_to_float(man, f32t, "")?;
        let sub = bd.build_float_mul(sub, f32t.const_float(2f64.powi(-9)), "")?;
        let neg = bd.build_float_neg(sub, "")?;
        let is_neg = bd.build_int_compare(IntPredicate::NE, sign, c(0), "")?;
        let sub = bd.build_select(is_neg, neg, sub, "")?.into_float_value();
        let is_sub = bd.build_int_compare(IntPredicate::EQ, exp, c(0), "")?;
        let v = bd.build_select(is_sub, sub, normal, "")?.into_float_value();
        let low7 = bd.build_and(w, c(0x7F), "")?;
        let is_nan = bd.build_int_compare(IntPredicate::EQ, low7, c(0x7F), "")?;
        Ok(bd.build_select(is_nan, f32t.const_float(f64::NAN), v, "")?)
    }

    /// f32 to an fp8 byte: round to nearest even, saturate to the largest
    /// finite value (Triton's `satfinite`), NaN stays NaN.
    fn encode_fp8(&self, x: BasicValueEnum<'ctx>, d: DType) -> R<IntValue<'ctx>> {
        let bd = &self.b;
        let i32t = self.ctx.i32_type();
        let f32t = self.ctx.f32_type();
        let c = |v: u64| i32t.const_int(v, false);
        let (mbits, bias, max_code, min_normal_exp) = if d == DType::F8E5 {
            (2u64, 15u64, 0x7Bu64, -14i32)
        } else {
            (3, 7, 0x7E, -6)
        };
        let shift = 23 - mbits;
        let xf = x.into_float_value();
        let bits = bd.build_bit_cast(xf, i32t, "")?.into_int_value();
        let sign = bd.build_and(bd.build_right_shift(bits, c(24), false, "")?, c(0x80), "")?;
        let abs = bd.build_and(bits, c(0x7FFF_FFFF), "")?;
        // Normal numbers: round the exponent|mantissa bits, then rebias.
        let lsb = bd.build_and(bd.build_right_shift(abs, c(shift), false, "")?, c(1), "")?;
        let rounded = bd.build_int_add(abs, c((1 << (shift - 1)) - 1), "")?;
        let rounded = bd.build_int_add(rounded, lsb, "")?;
        let code = bd.build_right_shift(rounded, c(shift), false, "")?;
        let code = bd.build_int_sub(code, c((127 - bias) << mbits), "")?;
        // Subnormals: multiples of 2^(min_normal_exp - mbits), rounded to even.
        let absf = bd.build_bit_cast(abs, f32t, "")?.into_float_value();
        let scaled = bd.build_float_mul(
            absf,
            f32t.const_float(2f64.powi(mbits as i32 - min_normal_exp)),
            "",
        )?;
        let re = self
            .intrinsic("llvm.roundeven", &[f32t.into()], &[scaled.into()])?
            .into_float_value();
        let sub = bd.build_float_to_unsigned_int(re, i32t, "")?;
        let min_normal = f32t.const_float(2f64.powi(min_normal_exp));
        let is_sub = bd.build_float_compare(FloatPredicate::OLT, absf, min_normal, "")?;
        let code = bd.build_select(is_sub, sub, code, "")?.into_int_value();
        // Saturate (also infinities), keep NaN.
        let big = bd.build_int_compare(IntPredicate::UGT, code, c(max_code), "")?;
        let is_big = bd.build_or(
            big,
            bd.build_int_compare(IntPredicate::UGE, abs, c(0x7F80_0000), "")?,
            "",
        )?;
        let code = bd
            .build_select(is_big, c(max_code), code, "")?
            .into_int_value();
        let is_nan = bd.build_int_compare(IntPredicate::UGT, abs, c(0x7F80_0000), "")?;
        let code = bd.build_select(is_nan, c(0x7F), code, "")?.into_int_value();
        let code = bd.build_or(code, sign, "")?;
        Ok(bd.build_int_truncate(code, self.ctx.i8_type(), "")?)
    }

    /// How many registers of a load/store through `ptr` can be one vector access.
    fn vector_width(&self, ptr: Value, mask: Option<Value>, l: &Layout, esize: usize) -> usize {
        if l.replicated() || l.vec < 2 {
            return 1;
        }
        let p = self.axis.get(&ptr).copied();
        let m = mask.and_then(|m| self.axis.get(&m).copied());
        let mut w = l.vec;
        while w > 1 {
            let contiguous =
                p.is_some_and(|p| p.contiguity >= w as u64 && p.divisibility >= (w * esize) as u64);
            let uniform_mask = mask.is_none() || m.is_some_and(|m| m.constancy >= w as u64);
            if contiguous && uniform_mask && w * esize <= 16 {
                return w;
            }
            w /= 2;
        }
        1
    }

    /// Run `body` only where `cond` holds; returns the values it produced (or
    /// `fallback`) through phis.
    fn guarded(
        &mut self,
        cond: Option<IntValue<'ctx>>,
        fallback: Vec<BasicValueEnum<'ctx>>,
        body: &mut dyn FnMut(&mut Self) -> R<Vec<BasicValueEnum<'ctx>>>,
    ) -> R<Vec<BasicValueEnum<'ctx>>> {
        let Some(c) = cond else { return body(self) };
        let start = self.current_block()?;
        let then_b = self.ctx.append_basic_block(self.func, "then");
        let merge = self.ctx.append_basic_block(self.func, "merge");
        self.b.build_conditional_branch(c, then_b, merge)?;
        self.b.position_at_end(then_b);
        let vals = body(self)?;
        let end = self.current_block()?;
        self.b.build_unconditional_branch(merge)?;
        self.b.position_at_end(merge);
        let mut out = vec![];
        for (v, f) in vals.iter().zip(&fallback) {
            let phi = self.b.build_phi(v.get_type(), "")?;
            phi.add_incoming(&[(v, end), (f, start)]);
            out.push(phi.as_basic_value());
        }
        Ok(out)
    }

    fn current_block(&self) -> R<BasicBlock<'ctx>> {
        self.b
            .get_insert_block()
            .ok_or_else(|| GenError("no insertion block".into()))
    }

    fn load(&mut self, op: &Op, mask: bool, other: bool) -> R<()> {
        let r = op.results[0];
        let t = self.ty(r).clone();
        let d = t.dtype().unwrap_or(DType::F32);
        let mem = self.mem_type(d);
        let esize = d.size_bytes();
        let l = self.layout(&t);
        let n = l.regs();
        let ptrs = self.regs(op.args[0], n)?;
        let masks = if mask {
            Some(self.regs(op.args[1], n)?)
        } else {
            None
        };
        let rt = scalar_type(self.ctx, d);
        let zero = match rt {
            BasicTypeEnum::FloatType(f) => f.const_zero().as_basic_value_enum(),
            BasicTypeEnum::IntType(i) => i.const_zero().as_basic_value_enum(),
            _ => return fail("load of pointers"),
        };
        let others = if other {
            self.regs(op.args[op.args.len() - 1], n)?
        } else {
            vec![zero; n]
        };
        if !t.is_block() {
            let p = ptrs[0].into_pointer_value();
            let c = masks.as_ref().map(|m| m[0].into_int_value());
            let v = self.guarded(c, vec![others[0]], &mut |g| {
                let x = g.b.build_load(mem, p, "")?;
                Ok(vec![g.decode_mem(x, d)?])
            })?;
            self.set(r, Reg::S(v[0]));
            return Ok(());
        }
        let w = self.vector_width(
            op.args[0],
            if mask { Some(op.args[1]) } else { None },
            &l,
            esize,
        );
        // Dot-only operands stay in their memory type (half) from here on.
        let keep_half = self.half_regs.contains(&r);
        let others: Vec<BasicValueEnum> = if keep_half {
            let h = mem.into_float_type();
            let mut o = vec![];
            for x in &others {
                o.push(
                    self.b
                        .build_float_trunc(x.into_float_value(), h, "")?
                        .into(),
                );
            }
            o
        } else {
            others
        };
        let mut out = vec![];
        for g0 in (0..n).step_by(w) {
            let c = masks.as_ref().map(|m| m[g0].into_int_value());
            let p = ptrs[g0].into_pointer_value();
            let fallback: Vec<_> = (g0..g0 + w).map(|i| others[i]).collect();
            let vals = if w == 1 {
                self.guarded(c, fallback, &mut |g| {
                    let x = g.b.build_load(mem, p, "")?;
                    Ok(vec![if keep_half { x } else { g.decode_mem(x, d)? }])
                })?
            } else {
                let vt = mem_vec_type(mem, w as u32);
                self.guarded(c, fallback, &mut |g| {
                    let x = g.b.build_load(vt, p, "")?;
                    if let Some(inst) = x.as_instruction_value() {
                        let _ = inst.set_alignment((w * esize) as u32);
                    }
                    let mut v = vec![];
                    for j in 0..w {
                        let e =
                            g.b.build_extract_element(x.into_vector_value(), g.i32c(j as i64), "")?;
                        v.push(if keep_half { e } else { g.decode_mem(e, d)? });
                    }
                    Ok(v)
                })?
            };
            out.extend(vals);
        }
        self.set(r, Reg::B(out));
        Ok(())
    }

    fn store(&mut self, op: &Op, mask: bool) -> R<()> {
        let pt = self.ty(op.args[0]).clone();
        let d = pt.elem.pointee().unwrap_or(DType::F32);
        let mem = self.mem_type(d);
        let esize = d.size_bytes();
        let l = self.layout(&pt);
        let n = l.regs();
        let ptrs = self.regs(op.args[0], n)?;
        let vals = self.regs(op.args[1], n)?;
        let masks = if mask {
            Some(self.regs(op.args[2], n)?)
        } else {
            None
        };
        // Replicated elements: only the first holder writes.
        let owner = if l.replicated() {
            Some(self.b.build_int_compare(
                IntPredicate::ULT,
                self.tid,
                self.i32c(l.n as i64),
                "",
            )?)
        } else {
            None
        };
        let w = if pt.is_block() {
            self.vector_width(
                op.args[0],
                if mask { Some(op.args[2]) } else { None },
                &l,
                esize,
            )
        } else {
            1
        };
        for g0 in (0..n).step_by(w) {
            let mut c = masks.as_ref().map(|m| m[g0].into_int_value());
            if let Some(o) = owner {
                c = Some(match c {
                    Some(m) => self.b.build_and(m, o, "")?,
                    None => o,
                });
            }
            let p = ptrs[g0].into_pointer_value();
            let group: Vec<_> = vals[g0..g0 + w].to_vec();
            self.guarded(c, vec![], &mut |g| {
                if w == 1 {
                    let x = g.encode_mem(group[0], d)?;
                    g.b.build_store(p, x)?;
                } else {
                    let vt = mem_vec_type(mem, w as u32);
                    let mut vec_v = vt.const_zero();
                    for (j, v) in group.iter().enumerate() {
                        let m = g.encode_mem(*v, d)?;
                        vec_v = g.b.build_insert_element(vec_v, m, g.i32c(j as i64), "")?;
                    }
                    let s = g.b.build_store(p, vec_v)?;
                    let _ = s.set_alignment((w * esize) as u32);
                }
                Ok(vec![])
            })?;
        }
        Ok(())
    }

    // ------------------------------------------------------------ shared memory

    /// Bytes a slot of one element takes in shared memory.
    fn slot_size(&self, e: Elem) -> usize {
        match e {
            Elem::Ptr(_) => 8,
            Elem::Scalar(d) if d.bits() == 64 => 8,
            _ => 4,
        }
    }

    fn smem_addr(&self, base: usize, idx: IntValue<'ctx>, size: usize) -> R<PointerValue<'ctx>> {
        let off = self.b.build_int_mul(idx, self.i32c(size as i64), "")?;
        let off = self.b.build_int_add(off, self.i32c(base as i64), "")?;
        let off = match self.smem_shift.get() {
            Some(shift) => self.b.build_int_add(off, shift, "")?,
            None => off,
        };
        // SAFETY: offsets stay inside the dynamic shared memory sized by `smem_bytes`.
        Ok(unsafe {
            self.b
                .build_gep(self.ctx.i8_type(), self.smem, &[off], "")?
        })
    }

    fn slot_type(&self, e: Elem) -> BasicTypeEnum<'ctx> {
        match e {
            Elem::Ptr(_) => self.ctx.i64_type().into(),
            Elem::Scalar(d) if d.is_float() => scalar_type(self.ctx, d),
            Elem::Scalar(d) if d.bits() == 64 => self.ctx.i64_type().into(),
            Elem::Scalar(_) => self.ctx.i32_type().into(),
        }
    }

    fn smem_store(
        &self,
        base: usize,
        idx: IntValue<'ctx>,
        e: Elem,
        v: BasicValueEnum<'ctx>,
    ) -> R<()> {
        let size = self.slot_size(e);
        let p = self.smem_addr(base, idx, size)?;
        let st = self.slot_type(e);
        let x: BasicValueEnum = match e {
            Elem::Ptr(_) => self
                .b
                .build_ptr_to_int(v.into_pointer_value(), self.ctx.i64_type(), "")?
                .into(),
            Elem::Scalar(d)
                if d.is_int()
                    && st.into_int_type().get_bit_width()
                        != v.into_int_value().get_type().get_bit_width() =>
            {
                self.b
                    .build_int_cast_sign_flag(
                        v.into_int_value(),
                        st.into_int_type(),
                        !unsigned(Some(d)),
                        "",
                    )?
                    .into()
            }
            _ => v,
        };
        self.b.build_store(p, x)?;
        Ok(())
    }

    fn smem_load(&self, base: usize, idx: IntValue<'ctx>, e: Elem) -> R<BasicValueEnum<'ctx>> {
        let size = self.slot_size(e);
        let p = self.smem_addr(base, idx, size)?;
        let st = self.slot_type(e);
        let x = self.b.build_load(st, p, "")?;
        Ok(match e {
            Elem::Ptr(_) => self
                .b
                .build_int_to_ptr(
                    x.into_int_value(),
                    self.ctx.ptr_type(AddressSpace::from(1u16)),
                    "",
                )?
                .into(),
            Elem::Scalar(d) if d.is_int() => {
                let rt = scalar_type(self.ctx, d).into_int_type();
                if rt.get_bit_width() != st.into_int_type().get_bit_width() {
                    self.b
                        .build_int_truncate(x.into_int_value(), rt, "")?
                        .into()
                } else {
                    x
                }
            }
            _ => x,
        })
    }

    /// Write a block (or scalar) into shared memory at `base`; returns bytes used.
    fn spill(&mut self, v: Value, base: usize) -> R<usize> {
        let t = self.ty(v).clone();
        let l = self.layout(&t);
        let size = self.slot_size(t.elem);
        let regs = self.regs(v, l.regs())?;
        for (r, x) in regs.iter().enumerate() {
            let idx = if t.is_block() {
                self.elem_index(&l, r)?
            } else {
                self.i32c(0)
            };
            self.smem_store(base, idx, t.elem, *x)?;
        }
        let bytes = t.numel().max(1) * size;
        self.need_smem(base + bytes);
        Ok(bytes)
    }

    /// Row-major strides of a shape.
    fn strides(shape: &[usize]) -> Vec<usize> {
        let mut s = vec![1; shape.len()];
        for i in (0..shape.len().saturating_sub(1)).rev() {
            s[i] = s[i + 1] * shape[i + 1];
        }
        s
    }

    /// The multi-index of linear element `e` in `shape`.
    fn unravel(&self, e: IntValue<'ctx>, shape: &[usize]) -> R<Vec<IntValue<'ctx>>> {
        let st = Self::strides(shape);
        let mut out = vec![];
        for (d, &s) in st.iter().enumerate() {
            let q = self.b.build_int_unsigned_div(e, self.i32c(s as i64), "")?;
            out.push(
                self.b
                    .build_int_unsigned_rem(q, self.i32c(shape[d] as i64), "")?,
            );
        }
        Ok(out)
    }

    /// Whether `v` can be recomputed at any index from aranges, splats,
    /// constants, shape ops and elementwise ops, within `budget` nodes.
    fn can_remat(&self, v: Value, budget: &mut usize) -> bool {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        if !self.ty(v).is_block() {
            return matches!(self.vals.get(&v), Some(Reg::S(_)));
        }
        if self.mma.contains_key(&v) {
            return false;
        }
        let Some(op) = self.defs.get(&v).copied() else {
            return false;
        };
        match &op.kind {
            OpKind::Const(_) | OpKind::Arange(..) | OpKind::Splat => true,
            OpKind::ExpandDims(_) | OpKind::Reshape | OpKind::Broadcast | OpKind::Trans(_) => {
                self.can_remat(op.args[0], budget)
            }
            k if k.is_elementwise() => op.args.iter().all(|&a| self.can_remat(a, budget)),
            _ => false,
        }
    }

    /// The element of `v` at multi-index `idx` (of `v`'s shape), recomputed.
    fn remat(&mut self, v: Value, idx: &[IntValue<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        let t = self.ty(v).clone();
        if !t.is_block() {
            return self.scalar(v);
        }
        let op = self
            .defs
            .get(&v)
            .copied()
            .ok_or_else(|| GenError("remat of an undefined value".into()))?;
        match &op.kind {
            OpKind::Const(c) => self.constant(*c, t.elem),
            OpKind::Arange(start, _) => {
                Ok(self.b.build_int_add(idx[0], self.i32c(*start), "")?.into())
            }
            OpKind::Splat => self.scalar(op.args[0]),
            OpKind::ExpandDims(axis) => {
                let mut i = idx.to_vec();
                i.remove(*axis);
                self.remat(op.args[0], &i)
            }
            OpKind::Reshape => {
                let strides = Self::strides(&t.shape);
                let mut lin = self.i32c(0);
                for (d, s) in strides.iter().enumerate() {
                    let x = self.b.build_int_mul(idx[d], self.i32c(*s as i64), "")?;
                    lin = self.b.build_int_add(lin, x, "")?;
                }
                let src_shape = self.ty(op.args[0]).shape.clone();
                let i = self.unravel(lin, &src_shape)?;
                self.remat(op.args[0], &i)
            }
            OpKind::Broadcast => {
                let src_shape = self.ty(op.args[0]).shape.clone();
                let i: Vec<_> = idx
                    .iter()
                    .zip(&src_shape)
                    .map(|(x, &n)| if n == 1 { self.i32c(0) } else { *x })
                    .collect();
                self.remat(op.args[0], &i)
            }
            OpKind::Trans(perm) => {
                let mut i = idx.to_vec();
                for (d, &p) in perm.iter().enumerate() {
                    i[p] = idx[d];
                }
                self.remat(op.args[0], &i)
            }
            _ => {
                let mut args = vec![];
                for &a in &op.args {
                    args.push(self.remat(a, idx)?);
                }
                self.elementwise(op, &args)
            }
        }
    }

    fn permute_through_smem(&mut self, op: &Op) -> R<()> {
        let (src, r) = (op.args[0], op.results[0]);
        let st = self.ty(src).clone();
        let rt = self.ty(r).clone();
        if matches!(op.kind, OpKind::Broadcast) && self.can_remat(src, &mut 64) {
            // Recompute each element in place: no shared memory, no barrier.
            let l = self.layout(&rt);
            let mut out = vec![];
            for reg in 0..l.regs() {
                let e = self.elem_index(&l, reg)?;
                let idx = self.unravel(e, &rt.shape)?;
                let src_idx: Vec<_> = idx
                    .iter()
                    .zip(&st.shape)
                    .map(|(x, &n)| if n == 1 { self.i32c(0) } else { *x })
                    .collect();
                out.push(self.remat(src, &src_idx)?);
            }
            self.set(r, Reg::B(out));
            return Ok(());
        }
        self.barrier()?;
        self.spill(src, 0)?;
        self.barrier()?;
        let sstr = Self::strides(&st.shape);
        let l = self.layout(&rt);
        let mut out = vec![];
        for reg in 0..l.regs() {
            let e = self.elem_index(&l, reg)?;
            let idx = self.unravel(e, &rt.shape)?;
            let mut s = self.i32c(0);
            for (d, i) in idx.iter().enumerate() {
                let (sd, stride) = match &op.kind {
                    OpKind::Trans(perm) => (perm[d], sstr[perm[d]]),
                    _ => (d, sstr[d]),
                };
                if st.shape[sd] == 1 {
                    continue;
                }
                let t = self.b.build_int_mul(*i, self.i32c(stride as i64), "")?;
                s = self.b.build_int_add(s, t, "")?;
            }
            out.push(self.smem_load(0, s, st.elem)?);
        }
        self.barrier()?;
        self.set(r, Reg::B(out));
        Ok(())
    }

    fn combine(
        &mut self,
        c: Combine,
        acc: BasicValueEnum<'ctx>,
        x: BasicValueEnum<'ctx>,
        d: Option<DType>,
    ) -> R<BasicValueEnum<'ctx>> {
        let op = match c {
            Combine::Add => BinOp::Add,
            Combine::Mul => BinOp::Mul,
            Combine::Max => BinOp::Max,
            Combine::Min => BinOp::Min,
            Combine::And => BinOp::And,
            Combine::Or => BinOp::Or,
            _ => BinOp::Xor,
        };
        let r = self.binary(op, acc, x, d)?;
        match d {
            Some(dt) if matches!(c, Combine::Add | Combine::Mul) => self.round_to(r, dt),
            _ => Ok(r),
        }
    }

    /// A loop `for j in lo..hi` (i32) carrying `init` values through phis.
    #[allow(clippy::type_complexity)]
    fn counted_loop(
        &mut self,
        lo: i64,
        hi: IntValue<'ctx>,
        init: Vec<BasicValueEnum<'ctx>>,
        body: &mut dyn FnMut(
            &mut Self,
            IntValue<'ctx>,
            Vec<BasicValueEnum<'ctx>>,
        ) -> R<Vec<BasicValueEnum<'ctx>>>,
    ) -> R<Vec<BasicValueEnum<'ctx>>> {
        let pre = self.current_block()?;
        let header = self.ctx.append_basic_block(self.func, "loop");
        let body_b = self.ctx.append_basic_block(self.func, "body");
        let exit = self.ctx.append_basic_block(self.func, "exit");
        self.b.build_unconditional_branch(header)?;
        self.b.position_at_end(header);
        let iv = self.b.build_phi(self.ctx.i32_type(), "j")?;
        iv.add_incoming(&[(&self.i32c(lo), pre)]);
        let mut phis = vec![];
        for v in &init {
            let p = self.b.build_phi(v.get_type(), "")?;
            p.add_incoming(&[(v, pre)]);
            phis.push(p);
        }
        let j = iv.as_basic_value().into_int_value();
        let c = self.b.build_int_compare(IntPredicate::SLT, j, hi, "")?;
        self.b.build_conditional_branch(c, body_b, exit)?;
        self.b.position_at_end(body_b);
        let cur: Vec<_> = phis.iter().map(|p| p.as_basic_value()).collect();
        let next = body(self, j, cur.clone())?;
        let latch = self.current_block()?;
        let j2 = self.b.build_int_add(j, self.i32c(1), "")?;
        iv.add_incoming(&[(&j2, latch)]);
        for (p, v) in phis.iter().zip(&next) {
            p.add_incoming(&[(v, latch)]);
        }
        self.b.build_unconditional_branch(header)?;
        self.b.position_at_end(exit);
        Ok(cur)
    }

    fn reduce(&mut self, op: &Op, axis: usize, combine: Combine) -> R<()> {
        let srcs = op.args.clone();
        let st = self.ty(srcs[0]).clone();
        let rt = self.ty(op.results[0]).clone();
        let dtype = st.dtype();
        let l_in = self.layout(&st);
        let simple = matches!(
            combine,
            Combine::Add
                | Combine::Max
                | Combine::Min
                | Combine::Mul
                | Combine::And
                | Combine::Or
                | Combine::Xor
        );
        let shuffleable = simple
            && !rt.is_block()
            && !l_in.replicated()
            && matches!(scalar_type(self.ctx, dtype.unwrap_or(DType::F32)), t if t == self.ctx.f32_type().into() || t == self.ctx.i32_type().into());
        if shuffleable {
            return self.reduce_to_scalar(op, combine);
        }
        // General path: every output element reads its row from shared memory.
        let mut base_bytes = 0;
        self.barrier()?;
        let mut bases = vec![];
        for &s in &srcs {
            bases.push(base_bytes);
            base_bytes += self.spill(s, base_bytes)?;
        }
        self.barrier()?;
        let n = st.shape[axis];
        let inner: usize = st.shape[axis + 1..].iter().product();
        let l_out = self.layout(&rt);
        let region = op.regions.first().cloned();
        let elems: Vec<Elem> = srcs.iter().map(|&s| self.ty(s).elem).collect();
        let mut outs: Vec<Vec<BasicValueEnum>> = vec![vec![]; op.results.len()];
        for reg in 0..l_out.regs() {
            let e = if rt.is_block() {
                self.elem_index(&l_out, reg)?
            } else {
                self.i32c(0)
            };
            let outer = self
                .b
                .build_int_unsigned_div(e, self.i32c(inner as i64), "")?;
            let in_idx = self
                .b
                .build_int_unsigned_rem(e, self.i32c(inner as i64), "")?;
            let base = self
                .b
                .build_int_mul(outer, self.i32c((n * inner) as i64), "")?;
            let base = self.b.build_int_add(base, in_idx, "")?;
            let mut init = vec![];
            for (i, b0) in bases.iter().enumerate() {
                init.push(self.smem_load(*b0, base, elems[i])?);
            }
            let with_index = matches!(combine, Combine::ArgMax | Combine::ArgMin);
            if with_index {
                init.push(self.i32c(0).into());
            }
            let hi = self.i32c(n as i64);
            let bases2 = bases.clone();
            let elems2 = elems.clone();
            let region2 = region.clone();
            let result = self.counted_loop(1, hi, init, &mut |g, j, cur| {
                let off = g.b.build_int_mul(j, g.i32c(inner as i64), "")?;
                let at = g.b.build_int_add(base, off, "")?;
                let xs: Vec<_> = bases2
                    .iter()
                    .zip(&elems2)
                    .map(|(b0, e)| g.smem_load(*b0, at, *e))
                    .collect::<R<_>>()?;
                match combine {
                    Combine::Region => {
                        let r = region2
                            .as_ref()
                            .ok_or_else(|| GenError("combine region".into()))?;
                        let k = xs.len();
                        for (i, &arg) in r.args.iter().enumerate() {
                            let v = if i < k { cur[i] } else { xs[i - k] };
                            g.set(arg, Reg::S(v));
                        }
                        let ys = g.region(r)?;
                        ys.iter().map(|&y| g.scalar(y)).collect()
                    }
                    Combine::ArgMax | Combine::ArgMin => {
                        let better = if dtype.is_some_and(DType::is_float) {
                            let p = if combine == Combine::ArgMax {
                                FloatPredicate::OGT
                            } else {
                                FloatPredicate::OLT
                            };
                            g.b.build_float_compare(
                                p,
                                xs[0].into_float_value(),
                                cur[0].into_float_value(),
                                "",
                            )?
                        } else {
                            let u = unsigned(dtype);
                            let p = match (combine == Combine::ArgMax, u) {
                                (true, false) => IntPredicate::SGT,
                                (true, true) => IntPredicate::UGT,
                                (false, false) => IntPredicate::SLT,
                                (false, true) => IntPredicate::ULT,
                            };
                            g.b.build_int_compare(
                                p,
                                xs[0].into_int_value(),
                                cur[0].into_int_value(),
                                "",
                            )?
                        };
                        let v = g.b.build_select(better, xs[0], cur[0], "")?;
                        let i = g.b.build_select(better, j, cur[1].into_int_value(), "")?;
                        Ok(vec![v, i])
                    }
                    _ => Ok(vec![g.combine(combine, cur[0], xs[0], dtype)?]),
                }
            })?;
            if with_index {
                outs[0].push(result[1]);
            } else {
                for (i, v) in result.iter().enumerate().take(op.results.len()) {
                    outs[i].push(*v);
                }
            }
        }
        self.barrier()?;
        for (i, &r) in op.results.iter().enumerate() {
            let regs = std::mem::take(&mut outs[i]);
            self.set(
                r,
                if rt.is_block() {
                    Reg::B(regs)
                } else {
                    Reg::S(regs[0])
                },
            );
        }
        Ok(())
    }

    /// A whole 1-D block to a scalar: registers, then a butterfly across the
    /// warp's lanes, then the warps' partials through shared memory.
    fn reduce_to_scalar(&mut self, op: &Op, combine: Combine) -> R<()> {
        let src = op.args[0];
        let st = self.ty(src).clone();
        let d = st.dtype();
        let l = self.layout(&st);
        let regs = self.regs(src, l.regs())?;
        let mut acc = regs[0];
        for &x in &regs[1..] {
            acc = self.combine(combine, acc, x, d)?;
        }
        let is_f = acc.get_type() == self.ctx.f32_type().into();
        let name = if is_f {
            "llvm.nvvm.shfl.sync.bfly.f32"
        } else {
            "llvm.nvvm.shfl.sync.bfly.i32"
        };
        let full = self.ctx.i32_type().const_all_ones();
        for off in [16, 8, 4, 2, 1] {
            let other = self.intrinsic(
                name,
                &[],
                &[
                    full.into(),
                    acc,
                    self.i32c(off).into(),
                    self.i32c(31).into(),
                ],
            )?;
            acc = self.combine(combine, acc, other, d)?;
        }
        let warps = self.threads / 32;
        if warps > 1 {
            let warp = self.b.build_int_unsigned_div(self.tid, self.i32c(32), "")?;
            let lane = self.b.build_int_unsigned_rem(self.tid, self.i32c(32), "")?;
            let first = self
                .b
                .build_int_compare(IntPredicate::EQ, lane, self.i32c(0), "")?;
            self.barrier()?;
            let a2 = acc;
            self.guarded(Some(first), vec![], &mut |g| {
                g.smem_store(0, warp, st.elem, a2)?;
                Ok(vec![])
            })?;
            self.need_smem(warps * 4);
            self.barrier()?;
            acc = self.smem_load(0, self.i32c(0), st.elem)?;
            for w in 1..warps {
                let x = self.smem_load(0, self.i32c(w as i64), st.elem)?;
                acc = self.combine(combine, acc, x, d)?;
            }
            self.barrier()?;
        }
        self.set(op.results[0], Reg::S(acc));
        Ok(())
    }

    fn scan(&mut self, op: &Op, axis: usize, combine: Combine, reverse: bool) -> R<()> {
        let (src, r) = (op.args[0], op.results[0]);
        let st = self.ty(src).clone();
        let d = st.dtype();
        self.barrier()?;
        self.spill(src, 0)?;
        self.barrier()?;
        let n = st.shape[axis];
        let inner: usize = st.shape[axis + 1..].iter().product();
        let l = self.layout(&st);
        let mut out = vec![];
        for reg in 0..l.regs() {
            let e = self.elem_index(&l, reg)?;
            let pos = self
                .b
                .build_int_unsigned_div(e, self.i32c(inner as i64), "")?;
            let pos = self
                .b
                .build_int_unsigned_rem(pos, self.i32c(n as i64), "")?;
            let off = self.b.build_int_mul(pos, self.i32c(inner as i64), "")?;
            let base = self.b.build_int_sub(e, off, "")?;
            // Inclusive prefix over positions 0..=pos (or pos..n reversed).
            let own = self.smem_load(0, e, st.elem)?;
            let (lo_count, hi) = if reverse {
                let cnt = self.b.build_int_sub(self.i32c(n as i64 - 1), pos, "")?;
                (Some(pos), cnt)
            } else {
                (None, pos)
            };
            let v = self.counted_loop(0, hi, vec![own], &mut |g, j, cur| {
                let k = match lo_count {
                    Some(p) => {
                        let t = g.b.build_int_add(p, j, "")?;
                        g.b.build_int_add(t, g.i32c(1), "")?
                    }
                    None => j,
                };
                let o = g.b.build_int_mul(k, g.i32c(inner as i64), "")?;
                let at = g.b.build_int_add(base, o, "")?;
                let x = g.smem_load(0, at, st.elem)?;
                Ok(vec![g.combine(combine, cur[0], x, d)?])
            })?;
            out.push(v[0]);
        }
        self.barrier()?;
        self.set(r, Reg::B(out));
        Ok(())
    }

    fn dot(&mut self, op: &Op) -> R<()> {
        if let Some(l) = self.mma.get(&op.results[0]).copied() {
            return self.dot_mma(op, &l);
        }
        let (a, bm, acc, r) = (op.args[0], op.args[1], op.args[2], op.results[0]);
        let at = self.ty(a).clone();
        let bt = self.ty(bm).clone();
        let rt = self.ty(r).clone();
        let (kdim, n) = (at.shape[1], bt.shape[1]);
        let da = at.dtype().unwrap_or(DType::F32);
        let dr = rt.dtype().unwrap_or(DType::F32);
        self.barrier()?;
        let a_bytes = self.spill(a, 0)?;
        self.spill(bm, a_bytes)?;
        self.barrier()?;
        let l = self.layout(&rt);
        let accs = self.regs(acc, l.regs())?;
        let mut out = vec![];
        for (reg, init) in accs.iter().enumerate() {
            let e = self.elem_index(&l, reg)?;
            let row = self.b.build_int_unsigned_div(e, self.i32c(n as i64), "")?;
            let col = self.b.build_int_unsigned_rem(e, self.i32c(n as i64), "")?;
            let arow = self.b.build_int_mul(row, self.i32c(kdim as i64), "")?;
            let kk = self.i32c(kdim as i64);
            let (ae, be) = (at.elem, bt.elem);
            let v = self.counted_loop(0, kk, vec![*init], &mut |g, j, cur| {
                let ai = g.b.build_int_add(arow, j, "")?;
                let bi = g.b.build_int_mul(j, g.i32c(n as i64), "")?;
                let bi = g.b.build_int_add(bi, col, "")?;
                let x = g.smem_load(0, ai, ae)?;
                let y = g.smem_load(a_bytes, bi, be)?;
                let s = if da == DType::I8 {
                    let i32t = g.ctx.i32_type();
                    let xi =
                        g.b.build_int_cast_sign_flag(x.into_int_value(), i32t, true, "")?;
                    let yi =
                        g.b.build_int_cast_sign_flag(y.into_int_value(), i32t, true, "")?;
                    let p = g.b.build_int_mul(xi, yi, "")?;
                    g.b.build_int_add(cur[0].into_int_value(), p, "")?.into()
                } else {
                    let (xf, yf) = (x, y);
                    g.intrinsic("llvm.fma", &[xf.get_type()], &[xf, yf, cur[0]])?
                };
                Ok(vec![s])
            })?;
            let res = if matches!(dr, DType::F16 | DType::BF16) {
                self.round_to(v[0], dr)?
            } else {
                v[0]
            };
            out.push(res);
        }
        self.barrier()?;
        self.set(r, Reg::B(out));
        Ok(())
    }

    // ------------------------------------------------------------ tensor cores

    /// (warp_m, warp_n, g = lane / 4, t = lane % 4) of this thread.
    fn mma_coords(&self, l: &MmaLayout) -> R<[IntValue<'ctx>; 4]> {
        let warp = self.b.build_int_unsigned_div(self.tid, self.i32c(32), "")?;
        let lane = self.b.build_int_unsigned_rem(self.tid, self.i32c(32), "")?;
        let wm = self
            .b
            .build_int_unsigned_rem(warp, self.i32c(l.wm as i64), "")?;
        let wn = self
            .b
            .build_int_unsigned_div(warp, self.i32c(l.wm as i64), "")?;
        let g = self.b.build_int_unsigned_div(lane, self.i32c(4), "")?;
        let t = self.b.build_int_unsigned_rem(lane, self.i32c(4), "")?;
        Ok([wm, wn, g, t])
    }

    /// Row and column of MMA register `(rep_m, rep_n, r)`.
    fn mma_pos(
        &self,
        l: &MmaLayout,
        c: &[IntValue<'ctx>; 4],
        rm: usize,
        rn: usize,
        r: usize,
    ) -> R<(IntValue<'ctx>, IntValue<'ctx>)> {
        let [wm, wn, g, t] = *c;
        let row = self
            .b
            .build_int_mul(wm, self.i32c((l.m / l.wm) as i64), "")?;
        let row = self.b.build_int_add(row, g, "")?;
        let row = self
            .b
            .build_int_add(row, self.i32c((rm * 16 + 8 * (r / 2)) as i64), "")?;
        let col = self
            .b
            .build_int_mul(wn, self.i32c((l.n / l.wn) as i64), "")?;
        let col = self
            .b
            .build_int_add(col, self.b.build_int_mul(t, self.i32c(2), "")?, "")?;
        let col = self
            .b
            .build_int_add(col, self.i32c((rn * 8 + r % 2) as i64), "")?;
        Ok((row, col))
    }

    fn mma_linear(&self, l: &MmaLayout, c: &[IntValue<'ctx>; 4], idx: usize) -> R<IntValue<'ctx>> {
        let (rep, r) = (idx / 4, idx % 4);
        let (rm, rn) = (rep / l.reps_n(), rep % l.reps_n());
        let (row, col) = self.mma_pos(l, c, rm, rn, r)?;
        let lin = self.b.build_int_mul(row, self.i32c(l.n as i64), "")?;
        Ok(self.b.build_int_add(lin, col, "")?)
    }

    fn mma_to_blocked(&self, v: Value, l: &MmaLayout) -> R<Vec<BasicValueEnum<'ctx>>> {
        if let Some((_, _, regs)) = self.converted.borrow().iter().find(|(_, x, _)| *x == v) {
            return Ok(regs.clone());
        }
        let regs = self.raw(v)?;
        let t = self.ty(v).clone();
        let c = self.mma_coords(l)?;
        self.barrier()?;
        for (i, x) in regs.iter().enumerate() {
            let lin = self.mma_linear(l, &c, i)?;
            self.smem_store(0, lin, t.elem, *x)?;
        }
        self.need_smem(l.m * l.n * 4);
        self.barrier()?;
        let bl = self.layout(&t);
        let mut out = vec![];
        for r in 0..bl.regs() {
            let e = self.elem_index(&bl, r)?;
            out.push(self.smem_load(0, e, t.elem)?);
        }
        self.barrier()?;
        self.converted
            .borrow_mut()
            .push((self.depth, v, out.clone()));
        Ok(out)
    }

    fn blocked_to_mma(&mut self, v: Value, l: &MmaLayout) -> R<Vec<BasicValueEnum<'ctx>>> {
        let t = self.ty(v).clone();
        // A constant (the usual zero accumulator) is the same in every layout.
        if let Some(OpKind::Const(c)) = self.defs.get(&v).map(|op| &op.kind) {
            let x = self.constant(*c, t.elem)?;
            return Ok(vec![x; l.regs()]);
        }
        self.barrier()?;
        self.spill(v, 0)?;
        self.barrier()?;
        let c = self.mma_coords(l)?;
        let mut out = vec![];
        for i in 0..l.regs() {
            let lin = self.mma_linear(l, &c, i)?;
            out.push(self.smem_load(0, lin, t.elem)?);
        }
        self.barrier()?;
        Ok(out)
    }

    /// Write a blocked operand tile as halves into a padded row-major tile,
    /// one 8-byte vector per run of four elements.
    fn store_tile(
        &self,
        base: usize,
        lay: &Layout,
        regs: &[BasicValueEnum<'ctx>],
        cols: usize,
        row_len: usize,
        bf16: bool,
    ) -> R<()> {
        let h = if bf16 {
            self.ctx.bf16_type()
        } else {
            self.ctx.f16_type()
        };
        let w = if lay.vec >= 4 && cols.is_multiple_of(4) && !lay.replicated() {
            4
        } else {
            1
        };
        for g0 in (0..regs.len()).step_by(w) {
            let e = self.elem_index(lay, g0)?;
            let row = self
                .b
                .build_int_unsigned_div(e, self.i32c(cols as i64), "")?;
            let col = self
                .b
                .build_int_unsigned_rem(e, self.i32c(cols as i64), "")?;
            if w == 1 {
                self.store_half(base, row, col, row_len, regs[g0], bf16)?;
                continue;
            }
            let idx = self.b.build_int_mul(row, self.i32c(row_len as i64), "")?;
            let idx = self.b.build_int_add(idx, col, "")?;
            let p = self.smem_addr(base, idx, 2)?;
            let vt = h.vec_type(4);
            let mut v = vt.get_undef();
            for j in 0..4 {
                let x = self
                    .b
                    .build_float_trunc(regs[g0 + j].into_float_value(), h, "")?;
                v = self.b.build_insert_element(v, x, self.i32c(j as i64), "")?;
            }
            let st = self.b.build_store(p, v)?;
            let _ = st.set_alignment(8);
        }
        Ok(())
    }

    /// `ldmatrix.x2.trans` of two 8x8 half matrices at rows `krow` (this lane's
    /// row, lanes 0..15) and column `n0`: the B fragment of `mma.m16n8k16`.
    fn ldmatrix_x2_trans(
        &self,
        base: usize,
        krow: IntValue<'ctx>,
        n0: IntValue<'ctx>,
        row_len: usize,
    ) -> R<[BasicValueEnum<'ctx>; 2]> {
        let idx = self.b.build_int_mul(krow, self.i32c(row_len as i64), "")?;
        let idx = self.b.build_int_add(idx, n0, "")?;
        let p = self.smem_addr(base, idx, 2)?;
        let addr = self.b.build_ptr_to_int(p, self.ctx.i32_type(), "")?;
        let i32t = self.ctx.i32_type();
        let ret = self.ctx.struct_type(&[i32t.into(), i32t.into()], false);
        let fn_ty = ret.fn_type(&[i32t.into()], false);
        let asm = self.ctx.create_inline_asm(
            fn_ty,
            "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {$0, $1}, [$2];".into(),
            "=r,=r,r".into(),
            true,
            false,
            None,
            false,
        );
        let call = self
            .b
            .build_indirect_call(fn_ty, asm, &[addr.into()], "ldm")?;
        let s = call
            .try_as_basic_value()
            .basic()
            .ok_or_else(|| GenError("ldmatrix result".into()))?
            .into_struct_value();
        Ok([
            self.b.build_extract_value(s, 0, "")?,
            self.b.build_extract_value(s, 1, "")?,
        ])
    }

    /// Store one operand element as a half at `(row, col)` of a padded tile.
    fn store_half(
        &self,
        base: usize,
        row: IntValue<'ctx>,
        col: IntValue<'ctx>,
        row_len: usize,
        x: BasicValueEnum<'ctx>,
        bf16: bool,
    ) -> R<()> {
        let idx = self.b.build_int_mul(row, self.i32c(row_len as i64), "")?;
        let idx = self.b.build_int_add(idx, col, "")?;
        let p = self.smem_addr(base, idx, 2)?;
        let h = if bf16 {
            self.ctx.bf16_type()
        } else {
            self.ctx.f16_type()
        };
        let v = self.b.build_float_trunc(x.into_float_value(), h, "")?;
        self.b.build_store(p, v)?;
        Ok(())
    }

    /// Two consecutive halves at `(row, col)` as one 32-bit register.
    fn load_pair(
        &self,
        base: usize,
        row: IntValue<'ctx>,
        col: IntValue<'ctx>,
        row_len: usize,
    ) -> R<BasicValueEnum<'ctx>> {
        let idx = self.b.build_int_mul(row, self.i32c(row_len as i64), "")?;
        let idx = self.b.build_int_add(idx, col, "")?;
        let p = self.smem_addr(base, idx, 2)?;
        let x = self.b.build_load(self.ctx.i32_type(), p, "")?;
        if let Some(i) = x.as_instruction_value() {
            let _ = i.set_alignment(4);
        }
        Ok(x)
    }

    fn dot_mma(&mut self, op: &Op, l: &MmaLayout) -> R<()> {
        let (a, bm, acc, r) = (op.args[0], op.args[1], op.args[2], op.results[0]);
        // The accumulator in MMA registers (converting first, before smem holds the operands).
        let mut accs = if self.mma.contains_key(&acc) {
            self.raw(acc)?
        } else {
            self.blocked_to_mma(acc, l)?
        };
        let (at, bt) = (self.ty(a).clone(), self.ty(bm).clone());
        let (la, lb) = (self.layout(&at), self.layout(&bt));
        let a_regs = self.regs(a, la.regs())?;
        let b_regs = self.regs(bm, lb.regs())?;
        let rk = l.row_k();
        let rn = l.row_n();
        let b_base = l.b_base();
        // Double buffering: successive dots alternate between two copies of
        // the operand tiles, so writing tile i+1 cannot disturb readers of
        // tile i; one barrier per dot remains (between writing and reading).
        let slot = self.dot_counter()?;
        let count = self
            .b
            .build_load(i32_type(self.ctx), slot, "")?
            .into_int_value();
        let parity = self.b.build_and(count, self.i32c(1), "")?;
        let shift = self
            .b
            .build_int_mul(parity, self.i32c(l.smem_bytes() as i64), "")?;
        let next = self.b.build_int_add(count, self.i32c(1), "")?;
        self.b.build_store(slot, next)?;
        self.need_smem(2 * l.smem_bytes());
        self.smem_shift.set(Some(shift));
        self.store_tile(0, &la, &a_regs, l.k, rk, l.bf16)?;
        self.store_tile(b_base, &lb, &b_regs, l.n, rn, l.bf16)?;
        self.barrier()?;
        let [wm, wn, g, t] = self.mma_coords(l)?;
        let f32t = self.ctx.f32_type();
        let i32t = self.ctx.i32_type();
        let ret = self.ctx.struct_type(&[f32t.into(); 4], false);
        let fn_ty = ret.fn_type(
            &[
                i32t.into(),
                i32t.into(),
                i32t.into(),
                i32t.into(),
                i32t.into(),
                i32t.into(),
                f32t.into(),
                f32t.into(),
                f32t.into(),
                f32t.into(),
            ],
            false,
        );
        let ty = if l.bf16 { "bf16" } else { "f16" };
        let asm = self.ctx.create_inline_asm(
            fn_ty,
            format!("mma.sync.aligned.m16n8k16.row.col.f32.{ty}.{ty}.f32 {{$0,$1,$2,$3}}, {{$4,$5,$6,$7}}, {{$8,$9}}, {{$10,$11,$12,$13}};"),
            "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3".into(),
            false,
            false,
            None,
            false,
        );
        let t2 = self.b.build_int_mul(t, self.i32c(2), "")?;
        let row0 = self
            .b
            .build_int_mul(wm, self.i32c((l.m / l.wm) as i64), "")?;
        let row0 = self.b.build_int_add(row0, g, "")?;
        // ldmatrix: lanes 0..15 address the 16 rows (k) of the two 8x8 matrices.
        let ncol0 = self
            .b
            .build_int_mul(wn, self.i32c((l.n / l.wn) as i64), "")?;
        let lane = self.b.build_int_unsigned_rem(self.tid, self.i32c(32), "")?;
        let lane16 = self.b.build_int_unsigned_rem(lane, self.i32c(16), "")?;
        for k0 in (0..l.k).step_by(16) {
            let ka = self.b.build_int_add(t2, self.i32c(k0 as i64), "")?;
            let kb = self.b.build_int_add(ka, self.i32c(8), "")?;
            let mut afrag = vec![];
            for rm in 0..l.reps_m() {
                let r0 = self
                    .b
                    .build_int_add(row0, self.i32c((rm * 16) as i64), "")?;
                let r8 = self.b.build_int_add(r0, self.i32c(8), "")?;
                afrag.push([
                    self.load_pair(0, r0, ka, rk)?,
                    self.load_pair(0, r8, ka, rk)?,
                    self.load_pair(0, r0, kb, rk)?,
                    self.load_pair(0, r8, kb, rk)?,
                ]);
            }
            for rep_n in 0..l.reps_n() {
                let rn_i = rep_n;
                let n0 = self
                    .b
                    .build_int_add(ncol0, self.i32c((rn_i * 8) as i64), "")?;
                let krow = self.b.build_int_add(lane16, self.i32c(k0 as i64), "")?;
                let [b0, b1] = self.ldmatrix_x2_trans(b_base, krow, n0, rn)?;
                for (rm, af) in afrag.iter().enumerate() {
                    let base = (rm * l.reps_n() + rn_i) * 4;
                    let args: Vec<_> = af
                        .iter()
                        .chain([&b0, &b1])
                        .chain(accs[base..base + 4].iter())
                        .map(|v| (*v).into())
                        .collect();
                    let call = self.b.build_indirect_call(fn_ty, asm, &args, "mma")?;
                    let res = call
                        .try_as_basic_value()
                        .basic()
                        .ok_or_else(|| GenError("mma result".into()))?
                        .into_struct_value();
                    for j in 0..4 {
                        accs[base + j] = self.b.build_extract_value(res, j as u32, "")?;
                    }
                }
            }
        }
        self.smem_shift.set(None);
        self.set(r, Reg::B(accs));
        Ok(())
    }

    /// A per-thread counter of tensor-core dots (for the double buffer), kept
    /// in a stack slot that LLVM promotes to registers.
    fn dot_counter(&self) -> R<PointerValue<'ctx>> {
        let entry = self
            .func
            .get_first_basic_block()
            .ok_or_else(|| GenError("no entry block".into()))?;
        let tb = self.ctx.create_builder();
        match entry.get_first_instruction() {
            Some(i) => tb.position_before(&i),
            None => tb.position_at_end(entry),
        }
        let slot = tb.build_alloca(i32_type(self.ctx), "dot_count")?;
        tb.build_store(slot, self.i32c(0))?;
        Ok(slot)
    }

    // ------------------------------------------------------------ debugging

    fn declare(
        &self,
        name: &str,
        ret: Option<BasicTypeEnum<'ctx>>,
        params: &[BasicTypeEnum<'ctx>],
    ) -> FunctionValue<'ctx> {
        if let Some(f) = self.module.get_function(name) {
            return f;
        }
        let ps: Vec<_> = params.iter().map(|p| (*p).into()).collect();
        let ty = match ret {
            Some(r) => r.fn_type(&ps, false),
            None => self.ctx.void_type().fn_type(&ps, false),
        };
        self.module.add_function(name, ty, None)
    }

    fn cstring(&self, s: &str) -> R<PointerValue<'ctx>> {
        Ok(self.b.build_global_string_ptr(s, "")?.as_pointer_value())
    }

    /// `tl.device_print`: one `vprintf` per element, in Triton's line format.
    fn print_op(&mut self, op: &Op, prefix: &str) -> R<()> {
        let generic = self.ctx.ptr_type(AddressSpace::default());
        let vprintf = self.declare(
            "vprintf",
            Some(self.ctx.i32_type().into()),
            &[generic.into(), generic.into()],
        );
        let pids = [
            self.sreg("llvm.nvvm.read.ptx.sreg.ctaid.x")?,
            self.sreg("llvm.nvvm.read.ptx.sreg.ctaid.y")?,
            self.sreg("llvm.nvvm.read.ptx.sreg.ctaid.z")?,
        ];
        let prefix = prefix.replace('%', "%%");
        for (arg_i, &a) in op.args.iter().enumerate() {
            let t = self.ty(a).clone();
            let l = self.layout(&t);
            let regs = self.regs(a, l.regs())?;
            let (conv, value_ty): (&str, BasicTypeEnum) = match t.elem {
                Elem::Ptr(_) => ("%llx", self.ctx.i64_type().into()),
                Elem::Scalar(d) if d.is_float() => ("%f", self.ctx.f64_type().into()),
                Elem::Scalar(d) if d.bits() == 64 => ("%lld", self.ctx.i64_type().into()),
                Elem::Scalar(_) => ("%d", self.ctx.i32_type().into()),
            };
            let operand = if op.args.len() > 1 {
                format!(" (operand {arg_i})")
            } else {
                String::new()
            };
            let idx_part = if t.is_block() { " idx (%d)" } else { "" };
            let fmt = self.cstring(&format!(
                "pid (%d, %d, %d){idx_part}{operand} {prefix}{conv}\n"
            ))?;
            let i32t = self.ctx.i32_type();
            let mut fields: Vec<BasicTypeEnum> = vec![i32t.into(), i32t.into(), i32t.into()];
            if t.is_block() {
                fields.push(i32t.into());
            }
            fields.push(value_ty);
            let st = self.ctx.struct_type(&fields, false);
            let owner = if l.replicated() {
                Some(self.b.build_int_compare(
                    IntPredicate::ULT,
                    self.tid,
                    self.i32c(l.n as i64),
                    "",
                )?)
            } else {
                None
            };
            for (r, x) in regs.iter().enumerate() {
                let idx = if t.is_block() {
                    Some(self.elem_index(&l, r)?)
                } else {
                    None
                };
                let x = *x;
                self.guarded(owner, vec![], &mut |g| {
                    let buf = g.b.build_alloca(st, "printf_args")?;
                    let mut vals: Vec<BasicValueEnum> = pids.iter().map(|p| (*p).into()).collect();
                    if let Some(i) = idx {
                        vals.push(i.into());
                    }
                    let v: BasicValueEnum = match t.elem {
                        Elem::Ptr(_) => {
                            g.b.build_ptr_to_int(x.into_pointer_value(), g.ctx.i64_type(), "")?
                                .into()
                        }
                        Elem::Scalar(d) if d.is_float() => {
                            if x.get_type() == g.ctx.f64_type().into() {
                                x
                            } else {
                                g.b.build_float_ext(x.into_float_value(), g.ctx.f64_type(), "")?
                                    .into()
                            }
                        }
                        Elem::Scalar(d) if d.bits() == 64 => x,
                        Elem::Scalar(d) => {
                            g.b.build_int_cast_sign_flag(
                                x.into_int_value(),
                                g.ctx.i32_type(),
                                !unsigned(Some(d)),
                                "",
                            )?
                            .into()
                        }
                    };
                    vals.push(v);
                    for (fi, v) in vals.iter().enumerate() {
                        let p = g.b.build_struct_gep(st, buf, fi as u32, "")?;
                        g.b.build_store(p, *v)?;
                    }
                    g.b.build_call(vprintf, &[fmt.into(), buf.into()], "")?;
                    Ok(vec![])
                })?;
            }
        }
        Ok(())
    }

    /// `tl.device_assert`: a failing element calls CUDA's `__assertfail`, which
    /// reports the message and stops the kernel.
    fn assert_op(&mut self, op: &Op, msg: &str) -> R<()> {
        let generic = self.ctx.ptr_type(AddressSpace::default());
        let i32t = self.ctx.i32_type();
        let f = self.declare(
            "__assertfail",
            None,
            &[
                generic.into(),
                generic.into(),
                i32t.into(),
                generic.into(),
                self.ctx.i64_type().into(),
            ],
        );
        let m = self.cstring(msg)?;
        let file = self.cstring("<kernel>")?;
        let func = self.cstring(&self.k.name.clone())?;
        let t = self.ty(op.args[0]).clone();
        let l = self.layout(&t);
        let regs = self.regs(op.args[0], l.regs())?;
        let line = op.loc.line as i64;
        for x in regs {
            let failed = self.b.build_not(x.into_int_value(), "")?;
            self.guarded(Some(failed), vec![], &mut |g| {
                let args = [
                    m.into(),
                    file.into(),
                    g.i32c(line).into(),
                    func.into(),
                    g.ctx.i64_type().const_int(1, false).into(),
                ];
                g.b.build_call(f, &args, "")?;
                Ok(vec![])
            })?;
        }
        Ok(())
    }

    // ------------------------------------------------------------ control flow

    fn bind(&mut self, args: &[Value], vals: Vec<Reg<'ctx>>) {
        for (&a, v) in args.iter().zip(vals) {
            self.set(a, v);
        }
    }

    /// Flatten registers of values into one list (with their shape per value).
    fn flat(&self, vals: &[Value]) -> R<Flat<'ctx>> {
        let mut flat = vec![];
        let mut shape = vec![];
        for &v in vals {
            let t = self.ty(v).clone();
            let regs = if t.is_block() {
                self.raw(v)?
            } else {
                vec![self.scalar(v)?]
            };
            shape.push((t.is_block(), regs.len()));
            flat.extend(regs);
        }
        Ok((flat, shape))
    }

    fn unflat(flat: &[BasicValueEnum<'ctx>], shape: &[(bool, usize)]) -> Vec<Reg<'ctx>> {
        let mut out = vec![];
        let mut i = 0;
        for &(block, n) in shape {
            out.push(if block {
                Reg::B(flat[i..i + n].to_vec())
            } else {
                Reg::S(flat[i])
            });
            i += n;
        }
        out
    }

    fn for_op(&mut self, op: &Op) -> R<()> {
        let region = &op.regions[0];
        let lb = self.scalar(op.args[0])?.into_int_value();
        let ub = self.scalar(op.args[1])?.into_int_value();
        let step = self.scalar(op.args[2])?.into_int_value();
        // Accumulators carried in an MMA layout enter the loop in it.
        let mut init = vec![];
        let mut shape = vec![];
        for (i, &v) in op.args[3..].iter().enumerate() {
            let carried = region.args[i + 1];
            match (self.mma.get(&carried).copied(), self.mma.contains_key(&v)) {
                (Some(l), false) => {
                    let regs = self.blocked_to_mma(v, &l)?;
                    shape.push((true, regs.len()));
                    init.extend(regs);
                }
                _ => {
                    let (f, s) = self.flat(&[v])?;
                    init.extend(f);
                    shape.extend(s);
                }
            }
        }
        let pre = self.current_block()?;
        let header = self.ctx.append_basic_block(self.func, "for");
        let body = self.ctx.append_basic_block(self.func, "for_body");
        let exit = self.ctx.append_basic_block(self.func, "for_exit");
        self.b.build_unconditional_branch(header)?;
        self.b.position_at_end(header);
        let iv = self.b.build_phi(lb.get_type(), "iv")?;
        iv.add_incoming(&[(&lb, pre)]);
        let mut phis = vec![];
        for v in &init {
            let p = self.b.build_phi(v.get_type(), "")?;
            p.add_incoming(&[(v, pre)]);
            phis.push(p);
        }
        let i = iv.as_basic_value().into_int_value();
        let up = self.b.build_int_compare(IntPredicate::SLT, i, ub, "")?;
        let down = self.b.build_int_compare(IntPredicate::SGT, i, ub, "")?;
        let pos =
            self.b
                .build_int_compare(IntPredicate::SGT, step, step.get_type().const_zero(), "")?;
        let c = self.b.build_select(pos, up, down, "")?.into_int_value();
        self.b.build_conditional_branch(c, body, exit)?;
        self.b.position_at_end(body);
        let cur: Vec<_> = phis.iter().map(|p| p.as_basic_value()).collect();
        let mut bound = vec![Reg::S(i.into())];
        bound.extend(Self::unflat(&cur, &shape));
        self.bind(&region.args, bound);
        let ys = self.region(region)?;
        let (next, _) = self.flat(&ys)?;
        let latch = self.current_block()?;
        let i2 = self.b.build_int_add(i, step, "")?;
        iv.add_incoming(&[(&i2, latch)]);
        for (p, v) in phis.iter().zip(&next) {
            p.add_incoming(&[(v, latch)]);
        }
        self.b.build_unconditional_branch(header)?;
        self.b.position_at_end(exit);
        let results = Self::unflat(&cur, &shape);
        self.bind(&op.results, results);
        Ok(())
    }

    fn if_op(&mut self, op: &Op) -> R<()> {
        let c = self.scalar(op.args[0])?.into_int_value();
        let then_b = self.ctx.append_basic_block(self.func, "then");
        let else_b = self.ctx.append_basic_block(self.func, "else");
        let merge = self.ctx.append_basic_block(self.func, "endif");
        self.b.build_conditional_branch(c, then_b, else_b)?;
        let mut arms = vec![];
        let mut shape = vec![];
        for (blk, region) in [(then_b, &op.regions[0]), (else_b, &op.regions[1])] {
            self.b.position_at_end(blk);
            let ys = self.region(region)?;
            let (flat, s) = self.flat(&ys)?;
            shape = s;
            arms.push((flat, self.current_block()?));
            self.b.build_unconditional_branch(merge)?;
        }
        self.b.position_at_end(merge);
        let mut merged = vec![];
        for i in 0..arms[0].0.len() {
            let p = self.b.build_phi(arms[0].0[i].get_type(), "")?;
            p.add_incoming(&[(&arms[0].0[i], arms[0].1), (&arms[1].0[i], arms[1].1)]);
            merged.push(p.as_basic_value());
        }
        let results = Self::unflat(&merged, &shape);
        self.bind(&op.results, results);
        Ok(())
    }

    fn while_op(&mut self, op: &Op) -> R<()> {
        let (cond_r, body_r) = (&op.regions[0], &op.regions[1]);
        let (init, shape) = self.flat(&op.args)?;
        let pre = self.current_block()?;
        let header = self.ctx.append_basic_block(self.func, "while");
        let body = self.ctx.append_basic_block(self.func, "while_body");
        let exit = self.ctx.append_basic_block(self.func, "while_exit");
        self.b.build_unconditional_branch(header)?;
        self.b.position_at_end(header);
        let mut phis = vec![];
        for v in &init {
            let p = self.b.build_phi(v.get_type(), "")?;
            p.add_incoming(&[(v, pre)]);
            phis.push(p);
        }
        let cur: Vec<_> = phis.iter().map(|p| p.as_basic_value()).collect();
        self.bind(&cond_r.args, Self::unflat(&cur, &shape));
        let ys = self.region(cond_r)?;
        let c = self.scalar(ys[0])?.into_int_value();
        self.b.build_conditional_branch(c, body, exit)?;
        self.b.position_at_end(body);
        self.bind(&body_r.args, Self::unflat(&cur, &shape));
        let ys = self.region(body_r)?;
        let (next, _) = self.flat(&ys)?;
        let latch = self.current_block()?;
        for (p, v) in phis.iter().zip(&next) {
            p.add_incoming(&[(v, latch)]);
        }
        self.b.build_unconditional_branch(header)?;
        self.b.position_at_end(exit);
        self.bind(&op.results, Self::unflat(&cur, &shape));
        Ok(())
    }
}

/// Registers of several values in one list, with (is_block, count) per value.
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
