//! Fused elementwise loops four lanes at a time.
//!
//! The innermost loop of a fused run steps over four consecutive elements of
//! the last dimension. Each value of an iteration is held in the cheapest
//! form the axis analysis (`tilebook_tir::axis`, hints not believed) allows:
//! one scalar for all four lanes (`Uni`), the first of four consecutive
//! integers or elements' addresses (`Contig`), a SIMD register (`Vec`, fp32
//! and int32 arithmetic), or four scalars (`Lanes`, every other op, computed
//! by the scalar code one lane at a time). A load or store whose addresses
//! are consecutive under one mask value is one bounds check for the four
//! lanes and, for 4-byte elements, one vector access; when the check fails
//! it falls back to the lane-by-lane code, which reports the first bad lane
//! exactly as before.

use crate::codegen::{Gen, Iter};
use crate::elem::reg_ty;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, InstBuilder, MemFlags, Type as CT, Value as CV};
use cranelift_frontend::Variable;
use std::collections::HashMap;
use tilebook_tir::axis::{AxisInfo, UNKNOWN};
use tilebook_tir::{BinOp, DType, Elem, Op, OpKind, UnOp, Value};

/// Lanes per iteration of a vectorised loop.
const LANES: usize = 4;

/// One value of the current four-lane iteration.
#[derive(Clone, Copy)]
pub(crate) enum Rep {
    /// The same value in every lane.
    Uni(CV),
    /// Lane k is this plus k (integers) or plus k elements (pointers).
    Contig(CV),
    /// A SIMD register (`f32x4` or `i32x4`).
    Vec(CV),
    /// One scalar per lane.
    Lanes([CV; LANES]),
}

/// The values of the current iteration (lane 0's indices).
struct VIter {
    idx: Vec<CV>,
    linear: CV,
    reps: HashMap<Value, Rep>,
}

/// The SIMD type of four registers of type `t`, where arithmetic on it is
/// the same as on `t`.
fn vec_ty(t: CT) -> Option<CT> {
    match t {
        types::F32 => Some(types::F32X4),
        types::I32 => Some(types::I32X4),
        _ => None,
    }
}

/// Memory access flags for user and frame memory: no trap, no alignment claim.
fn flags() -> MemFlags {
    MemFlags::new().with_notrap()
}

impl Gen<'_, '_> {
    /// Whether a fused run over `shape` goes four lanes at a time.
    pub(crate) fn vectorizable(&self, shape: &[usize]) -> bool {
        !self.trace
            && shape
                .last()
                .is_some_and(|&n| n >= LANES && n.is_multiple_of(LANES))
    }

    fn axis_of(&self, v: Value) -> AxisInfo {
        self.axis.get(&v).copied().unwrap_or(UNKNOWN)
    }

    /// `fused` for a run whose last dimension is a multiple of four.
    pub(crate) fn fused_lanes(&mut self, ops: &[Op], shape: &[usize], materialize: &[bool]) {
        self.loop_nest_step(shape, LANES as i64, &mut |g, idx, linear| {
            let mut it = VIter {
                idx: idx.to_vec(),
                linear,
                reps: HashMap::new(),
            };
            for (op, m) in ops.iter().zip(materialize) {
                if let Some(rep) = g.lanes_elem(op, &mut it) {
                    let r = op.results[0];
                    if *m {
                        g.store_rep(r, linear, rep);
                    }
                    it.reps.insert(r, rep);
                }
            }
        });
    }

    /// Lane `k` of a value held as `rep`.
    fn lane(&mut self, v: Value, rep: Rep, k: usize) -> CV {
        match rep {
            Rep::Uni(x) => x,
            Rep::Contig(x) if k == 0 => x,
            Rep::Contig(x) => {
                let step = match self.ty(v).elem {
                    Elem::Ptr(d) => d.size_bytes() as i64,
                    Elem::Scalar(_) => 1,
                };
                self.b.ins().iadd_imm(x, step * k as i64)
            }
            Rep::Vec(x) => self.b.ins().extractlane(x, k as u8),
            Rep::Lanes(a) => a[k],
        }
    }

    /// A value of the run's shape, read from its slot or the iteration.
    fn rep(&mut self, v: Value, it: &VIter) -> Rep {
        if let Some(&r) = it.reps.get(&v) {
            return r;
        }
        if !self.ty(v).is_block() {
            return Rep::Uni(self.get(v));
        }
        let info = self.axis_of(v);
        let t = reg_ty(self.ty(v).elem);
        if info.constancy.is_multiple_of(LANES as u64) {
            return Rep::Uni(self.load_elem(v, it.linear));
        }
        if info.contiguity.is_multiple_of(LANES as u64) && t.is_int() {
            return Rep::Contig(self.load_elem(v, it.linear));
        }
        if let Some(vt) = vec_ty(t) {
            let addr = self.elem_addr(v, it.linear);
            return Rep::Vec(self.b.ins().load(vt, flags(), addr, 0));
        }
        Rep::Lanes(std::array::from_fn(|k| {
            let lin = self.b.ins().iadd_imm(it.linear, k as i64);
            self.load_elem(v, lin)
        }))
    }

    /// `v` (of register type `t`) as a SIMD register.
    fn as_simd(&mut self, v: Value, rep: Rep, vt: CT) -> CV {
        match rep {
            Rep::Vec(x) => x,
            Rep::Uni(x) => self.b.ins().splat(vt, x),
            _ => {
                let first = self.lane(v, rep, 0);
                let mut x = self.b.ins().splat(vt, first);
                for k in 1..LANES {
                    let l = self.lane(v, rep, k);
                    x = self.b.ins().insertlane(x, l, k as u8);
                }
                x
            }
        }
    }

    /// Write the four lanes of `r` to its slot.
    fn store_rep(&mut self, r: Value, linear: CV, rep: Rep) {
        let t = reg_ty(self.ty(r).elem);
        if let Some(vt) = vec_ty(t) {
            let x = self.as_simd(r, rep, vt);
            let addr = self.elem_addr(r, linear);
            self.b.ins().store(flags(), x, addr, 0);
            return;
        }
        if let (Rep::Contig(x), types::I64) = (rep, t) {
            // Four consecutive 64-bit values (pointers): two `i64x2` stores.
            let step = match self.ty(r).elem {
                Elem::Ptr(d) => d.size_bytes() as i64,
                Elem::Scalar(_) => 1,
            };
            let addr = self.elem_addr(r, linear);
            let base = self.b.ins().splat(types::I64X2, x);
            for half in 0..2i64 {
                let mut bytes = (2 * half * step).to_le_bytes().to_vec();
                bytes.extend(((2 * half + 1) * step).to_le_bytes());
                let c = self.b.func.dfg.constants.insert(bytes.into());
                let d = self.b.ins().vconst(types::I64X2, c);
                let v = self.b.ins().iadd(base, d);
                self.b.ins().store(flags(), v, addr, (16 * half) as i32);
            }
            return;
        }
        for k in 0..LANES {
            let x = self.lane(r, rep, k);
            let lin = self.b.ins().iadd_imm(linear, k as i64);
            self.store_elem(r, lin, x);
        }
    }

    /// Lane `k` of `op` by the scalar code.
    fn at_lane(&mut self, op: &Op, it: &VIter, k: usize) -> Option<CV> {
        let mut idx = it.idx.clone();
        let linear = if k == 0 {
            it.linear
        } else {
            let last = idx.len() - 1;
            idx[last] = self.b.ins().iadd_imm(idx[last], k as i64);
            self.b.ins().iadd_imm(it.linear, k as i64)
        };
        let mut vals = HashMap::new();
        for &a in &op.args {
            if let Some(&r) = it.reps.get(&a) {
                let x = self.lane(a, r, k);
                vals.insert(a, x);
            }
        }
        let mut sit = Iter { idx, linear, vals };
        self.fused_elem(op, &mut sit)
    }

    fn all_lanes(&mut self, op: &Op, it: &VIter) -> Option<Rep> {
        let mut out = vec![];
        for k in 0..LANES {
            out.push(self.at_lane(op, it, k)?);
        }
        Some(Rep::Lanes([out[0], out[1], out[2], out[3]]))
    }

    /// One op of the run for all four lanes.
    fn lanes_elem(&mut self, op: &Op, it: &mut VIter) -> Option<Rep> {
        match &op.kind {
            OpKind::Load { mask, other, .. } => return self.lanes_load(op, *mask, *other, it),
            OpKind::Store { mask, .. } => {
                self.lanes_store(op, *mask, it);
                return None;
            }
            _ => {}
        }
        let r = *op.results.first()?;
        let info = self.axis_of(r);
        if info.constancy.is_multiple_of(LANES as u64) {
            return self.at_lane(op, it, 0).map(Rep::Uni);
        }
        if info.contiguity.is_multiple_of(LANES as u64) && reg_ty(self.ty(r).elem).is_int() {
            return self.at_lane(op, it, 0).map(Rep::Contig);
        }
        if let Some(x) = self.simd(op, it) {
            return Some(Rep::Vec(x));
        }
        self.all_lanes(op, it)
    }

    /// fp32 and int32 arithmetic whose SIMD form computes exactly what the
    /// scalar code does.
    fn simd(&mut self, op: &Op, it: &VIter) -> Option<CV> {
        let r = op.results[0];
        let d = self.ty(r).dtype()?;
        // fp32 rounded to fp16 or bf16 (held in f32 lanes).
        if op.kind == OpKind::Cast
            && self.ty(op.args[0]).dtype() == Some(DType::F32)
            && matches!(d, DType::F16 | DType::BF16)
        {
            let rep = self.rep(op.args[0], it);
            let x = self.as_simd(op.args[0], rep, types::F32X4);
            return Some(if d == DType::F16 {
                self.round_f16_inline(x)
            } else {
                self.round_bf16_inline(x)
            });
        }
        let float = d == DType::F32;
        if !(float || d == DType::I32) || op.args.iter().any(|a| self.ty(*a).dtype() != Some(d)) {
            return None;
        }
        let supported = match &op.kind {
            OpKind::Binary(b) => match b {
                BinOp::Add | BinOp::Sub | BinOp::Mul => true,
                // Float min/max ignore a NaN operand (`elem::min_max_num`).
                BinOp::Min | BinOp::Max => !float,
                BinOp::Div | BinOp::DivFull => float,
                BinOp::And | BinOp::Or | BinOp::Xor => !float,
                _ => false,
            },
            OpKind::Unary(UnOp::Neg) => true,
            OpKind::Unary(UnOp::Abs | UnOp::Sqrt) => float,
            _ => false,
        };
        if !supported {
            return None;
        }
        let vt = vec_ty(reg_ty(Elem::Scalar(d)))?;
        let mut args = vec![];
        for &a in &op.args {
            let rep = self.rep(a, it);
            args.push(self.as_simd(a, rep, vt));
        }
        let ins = self.b.ins();
        Some(match (&op.kind, float) {
            (OpKind::Binary(BinOp::Add), true) => ins.fadd(args[0], args[1]),
            (OpKind::Binary(BinOp::Add), false) => ins.iadd(args[0], args[1]),
            (OpKind::Binary(BinOp::Sub), true) => ins.fsub(args[0], args[1]),
            (OpKind::Binary(BinOp::Sub), false) => ins.isub(args[0], args[1]),
            (OpKind::Binary(BinOp::Mul), true) => ins.fmul(args[0], args[1]),
            (OpKind::Binary(BinOp::Mul), false) => ins.imul(args[0], args[1]),
            (OpKind::Binary(BinOp::Min), false) => ins.smin(args[0], args[1]),
            (OpKind::Binary(BinOp::Max), false) => ins.smax(args[0], args[1]),
            (OpKind::Binary(BinOp::Div | BinOp::DivFull), _) => ins.fdiv(args[0], args[1]),
            (OpKind::Binary(BinOp::And), _) => ins.band(args[0], args[1]),
            (OpKind::Binary(BinOp::Or), _) => ins.bor(args[0], args[1]),
            (OpKind::Binary(BinOp::Xor), _) => ins.bxor(args[0], args[1]),
            (OpKind::Unary(UnOp::Neg), true) => ins.fneg(args[0]),
            (OpKind::Unary(UnOp::Neg), false) => ins.ineg(args[0]),
            (OpKind::Unary(UnOp::Abs), _) => ins.fabs(args[0]),
            (OpKind::Unary(UnOp::Sqrt), _) => ins.sqrt(args[0]),
            _ => return None,
        })
    }

    /// The addresses of an access as one run of four elements under one
    /// mask value, if they are (and, in checked kernels, the tensor they
    /// point into is known): (first address, the mask value if masked).
    fn access_run(
        &mut self,
        ptr: Value,
        mask: Option<Value>,
        it: &VIter,
    ) -> Option<(CV, Option<CV>)> {
        let Rep::Contig(p0) = self.rep(ptr, it) else {
            return None;
        };
        let param = self.prov.get(&ptr).copied().flatten();
        if self.checked && !param.is_some_and(|p| self.bounds.contains_key(&p)) {
            return None;
        }
        let m = match mask.map(|m| self.rep(m, it)) {
            None => None,
            Some(Rep::Uni(m)) => Some(m),
            Some(_) => return None,
        };
        Some((p0, m))
    }

    /// Check that the four elements from `p0` lie inside `ptr`'s tensor
    /// (unchecked kernels: nothing). One comparison in the loop; when it
    /// fails, the kernel leaves through its shared exit, whose helper
    /// reports the first bad element exactly as a lane-by-lane check would.
    fn enter_run(&mut self, op: &Op, what: &'static str, ptr: Value, p0: CV) {
        let param = self.prov.get(&ptr).copied().flatten();
        let Some((lo, hi)) = param.and_then(|p| self.bounds.get(&p).copied()) else {
            return;
        };
        if !self.checked {
            return;
        }
        let size = self.ty(ptr).elem.pointee().map_or(1, DType::size_bytes);
        let inside = match param.and_then(|p| self.run_bounds.get(&p).copied()) {
            // Precomputed at entry for the parameter's own element size.
            Some((slot, psize)) if psize == size as i64 => {
                let f = MemFlags::trusted();
                let base = self.b.ins().load(types::I64, f, self.frame, slot as i32);
                let limit = self
                    .b
                    .ins()
                    .load(types::I64, f, self.frame, slot as i32 + 8);
                let off = self.b.ins().isub(p0, base);
                self.b
                    .ins()
                    .icmp(IntCC::UnsignedLessThanOrEqual, off, limit)
            }
            _ => {
                // `lo <= p0 <= hi - bytes` as one unsigned comparison of
                // `p0 - lo` (a tensor smaller than the run: never inside).
                let span = self.b.ins().isub(hi, lo);
                let span = self.b.ins().iadd_imm(span, -((size * LANES) as i64));
                let off = self.b.ins().isub(p0, lo);
                let fits = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, off, span);
                let nonneg = self
                    .b
                    .ins()
                    .icmp_imm(IntCC::SignedGreaterThanOrEqual, span, 0);
                self.b.ins().band(fits, nonneg)
            }
        };
        let (site, param, _) = self.new_site(op, what, ptr);
        self.check_or_exit(inside, site, param, p0, LANES as i64, size);
    }

    fn lanes_load(&mut self, op: &Op, mask: bool, other: bool, it: &VIter) -> Option<Rep> {
        let ptr = op.args[0];
        let mask_v = mask.then(|| op.args[1]);
        // Every lane reads one address under one mask value: one load.
        if let Rep::Uni(_) = self.rep(ptr, it) {
            if mask_v.is_none_or(|m| matches!(self.rep(m, it), Rep::Uni(_))) {
                return self.at_lane(op, it, 0).map(Rep::Uni);
            }
        }
        let Some((p0, m)) = self.access_run(ptr, mask_v, it) else {
            return self.all_lanes(op, it);
        };
        let d = self.ty(ptr).elem.pointee().unwrap_or(DType::I8);
        let size = d.size_bytes() as i64;
        let rt = reg_ty(Elem::Scalar(d));
        // A SIMD load where memory holds exactly the register type.
        let vt = match d {
            DType::F32 | DType::I32 | DType::U32 => vec_ty(rt),
            _ => None,
        };
        let r = op.results[0];
        let vars: Vec<_> = match vt {
            Some(vt) => vec![self.b.declare_var(vt)],
            None => (0..LANES).map(|_| self.b.declare_var(rt)).collect(),
        };
        let done = self.b.create_block();
        if let Some(m) = m {
            // Masked off: `other`, or zero.
            let fallback = if other {
                self.rep(op.args[2], it)
            } else {
                let z = match rt {
                    types::F32 => self.b.ins().f32const(0.0),
                    types::F64 => self.b.ins().f64const(0.0),
                    _ => self.b.ins().iconst(rt, 0),
                };
                Rep::Uni(z)
            };
            let fallback_src = if other { op.args[2] } else { r };
            self.def_lanes(&vars, vt, fallback_src, fallback);
            let on = self.b.create_block();
            self.b.ins().brif(m, on, &[], done, &[]);
            self.b.switch_to_block(on);
        }
        self.enter_run(op, "load", ptr, p0);
        match vt {
            Some(vt) => {
                let x = self.b.ins().load(vt, flags(), p0, 0);
                self.b.def_var(vars[0], x);
            }
            None => {
                for (k, var) in vars.iter().enumerate() {
                    let addr = self.b.ins().iadd_imm(p0, size * k as i64);
                    let x = self.mem_load(addr, d);
                    self.b.def_var(*var, x);
                }
            }
        }
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
        Some(match vt {
            Some(_) => Rep::Vec(self.b.use_var(vars[0])),
            None => {
                let x: Vec<CV> = vars.iter().map(|v| self.b.use_var(*v)).collect();
                Rep::Lanes([x[0], x[1], x[2], x[3]])
            }
        })
    }

    /// Define a load's result variables (one SIMD or four scalar) as `rep`.
    fn def_lanes(&mut self, vars: &[Variable], vt: Option<CT>, v: Value, rep: Rep) {
        match vt {
            Some(vt) => {
                let x = self.as_simd(v, rep, vt);
                self.b.def_var(vars[0], x);
            }
            None => {
                for (k, var) in vars.iter().enumerate() {
                    let x = self.lane(v, rep, k);
                    self.b.def_var(*var, x);
                }
            }
        }
    }

    fn lanes_store(&mut self, op: &Op, mask: bool, it: &VIter) {
        let ptr = op.args[0];
        let Some((p0, m)) = self.access_run(ptr, mask.then(|| op.args[2]), it) else {
            for k in 0..LANES {
                self.at_lane(op, it, k);
            }
            return;
        };
        let d = self.ty(ptr).elem.pointee().unwrap_or(DType::I8);
        let size = d.size_bytes() as i64;
        let value = op.args[1];
        let vrep = self.rep(value, it);
        let done = self.b.create_block();
        if let Some(m) = m {
            let on = self.b.create_block();
            self.b.ins().brif(m, on, &[], done, &[]);
            self.b.switch_to_block(on);
        }
        self.enter_run(op, "store", ptr, p0);
        let rt = reg_ty(Elem::Scalar(d));
        match (d, vec_ty(rt)) {
            (DType::F32 | DType::I32 | DType::U32, Some(vt))
                if reg_ty(self.ty(value).elem) == rt =>
            {
                let x = self.as_simd(value, vrep, vt);
                self.b.ins().store(flags(), x, p0, 0);
            }
            // Four fp16 values from f32 lanes: one 8-byte store.
            (DType::F16, _) if matches!(vrep, Rep::Vec(_)) => {
                let x = self.as_simd(value, vrep, types::F32X4);
                let bits = self.f16x4_bits_inline(x);
                self.b.ins().store(flags(), bits, p0, 0);
            }
            _ => {
                for k in 0..LANES {
                    let x = self.lane(value, vrep, k);
                    let addr = self.b.ins().iadd_imm(p0, size * k as i64);
                    self.mem_store(addr, x, d);
                }
            }
        }
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
    }
}
