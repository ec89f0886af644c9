//! Tile IR → Cranelift IR for one program instance.
//!
//! Scalars live in Cranelift variables. Block values live in a per-thread
//! frame: each materialised block gets a slot of `numel` elements in its
//! register type (i1 as a byte; fp16/bf16/fp8 as f32 holding exactly
//! representable values; pointers as i64 addresses). Runs of elementwise ops
//! over one shape (loads, stores, arithmetic, splats, broadcasts) are fused
//! into one loop nest; only values used outside the run are written to their
//! slots. `reshape`/`expand_dims` alias their operand's slot. Reductions,
//! scans, transposes and control flow are emitted as loops of their own;
//! `tl.dot` calls the runtime's microkernel.

use crate::elem::{reg_ty, Provenance};
use crate::runtime::{print_code, Site};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, FuncRef, InstBuilder, MemFlags, Value as CV};
use cranelift_frontend::{FunctionBuilder, Variable};
use cranelift_module::Module;
use std::collections::HashMap;
use tilebook_tir::{BinOp, Combine, Const, DType, Elem, Kernel, Op, OpKind, Region, Type, Value};

pub(crate) struct Gen<'a, 'b> {
    pub k: &'a Kernel,
    pub b: FunctionBuilder<'b>,
    pub module: &'a mut cranelift_jit::JITModule,
    pub funcs: HashMap<&'static str, FuncRef>,
    pub vars: HashMap<Value, Variable>,
    /// Per pointer parameter, for runs of four of its elements: the frame
    /// offset of (base, limit), `p0 - base <= limit` meaning inside, and
    /// the element size they were made for.
    pub run_bounds: HashMap<usize, (u32, i64)>,
    /// The shared out-of-bounds exit block, once a check needs it.
    pub oob_block: Option<cranelift_codegen::ir::Block>,
    /// Scalars defined once, by their Cranelift value (see `set`).
    pub direct: HashMap<Value, CV>,
    pub slots: HashMap<Value, u32>,
    pub frame_size: u32,
    pub frame: CV,
    pub args_ptr: CV,
    pub pids: CV,
    pub ctx: CV,
    /// Lower/upper byte bounds of each pointer parameter, loaded at entry.
    pub bounds: HashMap<usize, (CV, CV)>,
    pub prov: Provenance,
    pub sites: Vec<Site>,
    /// Uses of each value anywhere in the kernel.
    pub uses: HashMap<Value, usize>,
    pub checked: bool,
    /// Report every load and store lane to `tb_trace`.
    pub trace: bool,
    /// Contiguity and constancy along the last dimension (hints not believed).
    pub axis: HashMap<Value, tilebook_tir::axis::AxisInfo>,
}

/// Element values of the current iteration of a fused loop.
pub(crate) struct Iter {
    pub idx: Vec<CV>,
    pub linear: CV,
    pub vals: HashMap<Value, CV>,
}

pub(crate) fn row_major_strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

fn fusible(op: &Op) -> bool {
    matches!(
        op.kind,
        OpKind::Const(_)
            | OpKind::Splat
            | OpKind::Arange(..)
            | OpKind::Broadcast
            | OpKind::Load { .. }
            | OpKind::Store { .. }
    ) || op.kind.is_elementwise()
}

impl Gen<'_, '_> {
    pub fn ty(&self, v: Value) -> &Type {
        self.k.ty(v)
    }

    pub fn call(&mut self, name: &'static str, args: &[CV]) -> Option<CV> {
        let f = self.funcs[name];
        let inst = self.b.ins().call(f, args);
        self.b.inst_results(inst).first().copied()
    }

    pub fn iconst(&mut self, v: i64) -> CV {
        self.b.ins().iconst(types::I64, v)
    }

    // ------------------------------------------------------------ scalars and slots

    pub fn var(&mut self, v: Value) -> Variable {
        if let Some(&x) = self.vars.get(&v) {
            return x;
        }
        let t = reg_ty(self.ty(v).elem);
        let x = self.b.declare_var(t);
        self.vars.insert(v, x);
        x
    }

    pub fn get(&mut self, v: Value) -> CV {
        if let Some(&x) = self.direct.get(&v) {
            return x;
        }
        let x = self.var(v);
        self.b.use_var(x)
    }

    /// Define scalar `v`, which the tile IR defines once where it dominates
    /// every use: the Cranelift value itself stands for it (no variable, so
    /// no block parameters threading it through the loops around its uses).
    pub fn set(&mut self, v: Value, val: CV) {
        self.direct.insert(v, val);
    }

    /// Define a region argument or result, assigned on several paths.
    pub fn set_var(&mut self, v: Value, val: CV) {
        let x = self.var(v);
        self.b.def_var(x, val);
    }

    pub fn slot(&mut self, v: Value) -> u32 {
        if let Some(&s) = self.slots.get(&v) {
            return s;
        }
        let t = self.ty(v).clone();
        let bytes = (t.numel() * reg_ty(t.elem).bytes() as usize) as u32;
        let off = (self.frame_size + 63) & !63;
        self.frame_size = off + bytes.max(8);
        self.slots.insert(v, off);
        off
    }

    /// Frame space not tied to a value (temporaries).
    pub(crate) fn alloc_raw(&mut self, bytes: u32) -> u32 {
        let off = (self.frame_size + 63) & !63;
        self.frame_size = off + bytes.max(8);
        off
    }

    /// Address of element `linear` (an i64) of value `v`'s slot.
    pub fn elem_addr(&mut self, v: Value, linear: CV) -> CV {
        let slot = self.slot(v) as i64;
        let size = reg_ty(self.ty(v).elem).bytes() as i64;
        let off = self.b.ins().imul_imm(linear, size);
        let off = self.b.ins().iadd_imm(off, slot);
        self.b.ins().iadd(self.frame, off)
    }

    pub fn slot_addr(&mut self, v: Value) -> CV {
        let slot = self.slot(v) as i64;
        self.b.ins().iadd_imm(self.frame, slot)
    }

    pub fn load_elem(&mut self, v: Value, linear: CV) -> CV {
        let addr = self.elem_addr(v, linear);
        let t = reg_ty(self.ty(v).elem);
        self.b.ins().load(t, MemFlags::trusted(), addr, 0)
    }

    pub fn store_elem(&mut self, v: Value, linear: CV, x: CV) {
        let addr = self.elem_addr(v, linear);
        self.b.ins().store(MemFlags::trusted(), x, addr, 0);
    }

    // ------------------------------------------------------------ loops

    /// `for i in lo..hi` (i64) around `body`.
    pub fn for_range(&mut self, lo: CV, hi: CV, body: &mut dyn FnMut(&mut Self, CV)) {
        self.for_range_step(lo, hi, 1, body)
    }

    /// `for i in (lo..hi).step_by(step)` (i64) around `body`.
    fn for_range_step(&mut self, lo: CV, hi: CV, step: i64, body: &mut dyn FnMut(&mut Self, CV)) {
        let var = self.b.declare_var(types::I64);
        self.b.def_var(var, lo);
        let header = self.b.create_block();
        let body_b = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(header, &[]);
        self.b.switch_to_block(header);
        let i = self.b.use_var(var);
        let c = self.b.ins().icmp(IntCC::SignedLessThan, i, hi);
        self.b.ins().brif(c, body_b, &[], exit, &[]);
        self.b.switch_to_block(body_b);
        body(self, i);
        let next = self.b.ins().iadd_imm(i, step);
        self.b.def_var(var, next);
        self.b.ins().jump(header, &[]);
        self.b.switch_to_block(exit);
    }

    /// A loop nest over `shape` calling `body(idx, linear)` innermost.
    pub fn loop_nest(&mut self, shape: &[usize], body: &mut dyn FnMut(&mut Self, &[CV], CV)) {
        self.loop_nest_step(shape, 1, body)
    }

    /// As `loop_nest`, the last dimension `step` elements at a time.
    pub fn loop_nest_step(
        &mut self,
        shape: &[usize],
        step: i64,
        body: &mut dyn FnMut(&mut Self, &[CV], CV),
    ) {
        let strides = row_major_strides(shape);
        let mut idx = vec![];
        self.nest_level(shape, &strides, 0, step, &mut idx, body);
    }

    fn nest_level(
        &mut self,
        shape: &[usize],
        strides: &[usize],
        d: usize,
        step: i64,
        idx: &mut Vec<CV>,
        body: &mut dyn FnMut(&mut Self, &[CV], CV),
    ) {
        if d == shape.len() {
            let mut lin = self.iconst(0);
            for (i, s) in idx.iter().zip(strides) {
                let t = self.b.ins().imul_imm(*i, *s as i64);
                lin = self.b.ins().iadd(lin, t);
            }
            body(self, idx, lin);
            return;
        }
        let lo = self.iconst(0);
        let hi = self.iconst(shape[d] as i64);
        let here = if d + 1 == shape.len() { step } else { 1 };
        self.for_range_step(lo, hi, here, &mut |g, i| {
            idx.push(i);
            g.nest_level(shape, strides, d + 1, step, idx, body);
            idx.pop();
        });
    }

    // ------------------------------------------------------------ regions

    /// Emit a region's ops; returns the operands of its `yield` (if any).
    pub fn region(&mut self, r: &Region) -> Vec<Value> {
        let mut i = 0;
        while i < r.ops.len() {
            let op = &r.ops[i];
            if op.kind == OpKind::Yield {
                return op.args.clone();
            }
            let shape = self.fused_shape(op);
            if let Some(shape) = shape {
                // Collect the run of fusible ops over this shape.
                let mut j = i;
                let mut stored = false;
                while j < r.ops.len() && self.fused_shape(&r.ops[j]).as_ref() == Some(&shape) {
                    let is_load = matches!(r.ops[j].kind, OpKind::Load { .. });
                    if stored && is_load {
                        break;
                    }
                    stored |= matches!(r.ops[j].kind, OpKind::Store { .. });
                    j += 1;
                }
                self.fused(&r.ops[i..j], &shape);
                i = j;
                continue;
            }
            self.op(op);
            i += 1;
        }
        vec![]
    }

    /// The block shape an op would be fused over, if it is fusible.
    fn fused_shape(&self, op: &Op) -> Option<Vec<usize>> {
        if !fusible(op) {
            return None;
        }
        let t = match op.kind {
            OpKind::Store { .. } => self.ty(op.args[0]),
            _ => self.ty(*op.results.first()?),
        };
        t.is_block().then(|| t.shape.clone())
    }

    /// One loop nest computing a run of elementwise ops.
    fn fused(&mut self, ops: &[Op], shape: &[usize]) {
        let mut inside: HashMap<Value, usize> = HashMap::new();
        for op in ops {
            for a in &op.args {
                *inside.entry(*a).or_default() += 1;
            }
        }
        let materialize: Vec<bool> = ops
            .iter()
            .map(|op| {
                op.results.first().is_some_and(|r| {
                    self.uses.get(r).copied().unwrap_or(0) > inside.get(r).copied().unwrap_or(0)
                })
            })
            .collect();
        for (op, m) in ops.iter().zip(&materialize) {
            if *m {
                self.slot(op.results[0]);
            }
        }
        if self.vectorizable(shape) {
            self.fused_lanes(ops, shape, &materialize);
            return;
        }
        let shape = shape.to_vec();
        self.loop_nest(&shape.clone(), &mut |g, idx, linear| {
            let mut it = Iter {
                idx: idx.to_vec(),
                linear,
                vals: HashMap::new(),
            };
            for (op, m) in ops.iter().zip(&materialize) {
                if let Some(x) = g.fused_elem(op, &mut it) {
                    let r = op.results[0];
                    it.vals.insert(r, x);
                    if *m {
                        g.store_elem(r, linear, x);
                    }
                }
            }
        });
    }

    /// The element of operand `v` at the current iteration.
    pub fn operand(&mut self, v: Value, it: &Iter) -> CV {
        if let Some(&x) = it.vals.get(&v) {
            return x;
        }
        if !self.ty(v).is_block() {
            return self.get(v);
        }
        self.load_elem(v, it.linear)
    }

    pub(crate) fn fused_elem(&mut self, op: &Op, it: &mut Iter) -> Option<CV> {
        let rty = op.results.first().map(|&r| self.ty(r).clone());
        match &op.kind {
            OpKind::Const(c) => {
                let t = rty?;
                Some(self.constant(*c, t.elem))
            }
            OpKind::Splat => Some(self.get(op.args[0])),
            OpKind::Arange(start, _) => {
                let i = self.b.ins().iadd_imm(it.idx[0], *start);
                Some(self.b.ins().ireduce(types::I32, i))
            }
            OpKind::Broadcast => {
                let src = op.args[0];
                let sshape = self.ty(src).shape.clone();
                let strides = row_major_strides(&sshape);
                let mut lin = self.iconst(0);
                for d in 0..sshape.len() {
                    if sshape[d] != 1 {
                        let t = self.b.ins().imul_imm(it.idx[d], strides[d] as i64);
                        lin = self.b.ins().iadd(lin, t);
                    }
                }
                Some(self.load_elem(src, lin))
            }
            OpKind::Load { mask, other, .. } => Some(self.load_op(op, *mask, *other, it)),
            OpKind::Store { mask, .. } => {
                self.store_op(op, *mask, it);
                None
            }
            _ => {
                let args: Vec<CV> = op.args.iter().map(|&a| self.operand(a, it)).collect();
                if let Some(&d) = args.get(1) {
                    self.check_divisor(op, d, it.linear);
                }
                Some(self.elementwise(op, &args))
            }
        }
    }

    pub fn constant(&mut self, c: Const, elem: Elem) -> CV {
        let t = reg_ty(elem);
        if t == types::F32 {
            self.b.ins().f32const(c.as_f64() as f32)
        } else if t == types::F64 {
            self.b.ins().f64const(c.as_f64())
        } else {
            self.b.ins().iconst(t, c.as_i64())
        }
    }

    // ------------------------------------------------------------ single ops

    fn op(&mut self, op: &Op) {
        let res = op.results.first().copied();
        match &op.kind {
            OpKind::Const(c) => {
                let r = res.expect("const result");
                let t = self.ty(r).clone();
                let x = self.constant(*c, t.elem);
                if t.is_block() {
                    let n = self.iconst(t.numel() as i64);
                    let lo = self.iconst(0);
                    self.for_range(lo, n, &mut |g, i| g.store_elem(r, i, x));
                } else {
                    self.set(r, x);
                }
            }
            OpKind::ProgramId(a) | OpKind::NumPrograms(a) => {
                let off = if matches!(op.kind, OpKind::ProgramId(_)) {
                    0
                } else {
                    3
                } + *a as i32;
                let x = self
                    .b
                    .ins()
                    .load(types::I32, MemFlags::trusted(), self.pids, off * 4);
                self.set(res.expect("result"), x);
            }
            OpKind::ExpandDims(_) | OpKind::Reshape => {
                let (src, r) = (op.args[0], res.expect("result"));
                if self.ty(src).is_block() {
                    let s = self.slot(src);
                    self.slots.insert(r, s);
                } else {
                    let x = self.get(src);
                    let z = self.iconst(0);
                    self.store_elem(r, z, x);
                }
            }
            OpKind::Splat => {
                // Splat outside a fused run (e.g. to a shape of one element).
                let (src, r) = (op.args[0], res.expect("result"));
                let x = self.get(src);
                let n = self.ty(r).numel() as i64;
                let (lo, hi) = (self.iconst(0), self.iconst(n));
                self.for_range(lo, hi, &mut |g, i| g.store_elem(r, i, x));
            }
            OpKind::Trans(perm) => {
                let (src, r) = (op.args[0], res.expect("result"));
                let sshape = self.ty(src).shape.clone();
                let sstr = row_major_strides(&sshape);
                let rshape = self.ty(r).shape.clone();
                let perm = perm.clone();
                self.loop_nest(&rshape, &mut |g, idx, lin| {
                    let mut s = g.iconst(0);
                    for (d, &p) in perm.iter().enumerate() {
                        let t = g.b.ins().imul_imm(idx[d], sstr[p] as i64);
                        s = g.b.ins().iadd(s, t);
                    }
                    let x = g.load_elem(src, s);
                    g.store_elem(r, lin, x);
                });
            }
            OpKind::Gather(axis) => self.gather(op, *axis),
            OpKind::Reduce { axis, combine } => self.reduce(op, *axis, *combine),
            OpKind::Scan {
                axis,
                combine,
                reverse,
            } => self.scan(op, *axis, *combine, *reverse),
            OpKind::Dot { .. } => self.dot(op),
            OpKind::For => self.for_op(op),
            OpKind::If => self.if_op(op),
            OpKind::While => self.while_op(op),
            OpKind::AtomicRmw { op: kind, mask, .. } => self.atomic_op(op, Some((*kind, *mask))),
            OpKind::AtomicCas { .. } => self.atomic_op(op, None),
            // One program is one thread on the CPU: its accesses are already
            // in program order.
            OpKind::Barrier => {}
            OpKind::Print(prefix) => self.print_op(op, prefix),
            OpKind::Assert(msg) => self.assert_op(op, msg),
            OpKind::Load { mask, other, .. } => {
                // A scalar load.
                let it = Iter {
                    idx: vec![],
                    linear: self.iconst(0),
                    vals: HashMap::new(),
                };
                let x = self.load_op(op, *mask, *other, &it);
                self.set(res.expect("result"), x);
            }
            OpKind::Store { mask, .. } => {
                let it = Iter {
                    idx: vec![],
                    linear: self.iconst(0),
                    vals: HashMap::new(),
                };
                self.store_op(op, *mask, &it);
            }
            OpKind::Yield => {}
            _ => {
                // Scalar elementwise ops (blocks were fused).
                let args: Vec<CV> = op.args.iter().map(|&a| self.get(a)).collect();
                if let Some(&d) = args.get(1) {
                    let z = self.iconst(0);
                    self.check_divisor(op, d, z);
                }
                let x = self.elementwise(op, &args);
                self.set(res.expect("result"), x);
            }
        }
    }

    /// Write `x` as the value of `v` (slot element or variable).
    fn write_result(&mut self, v: Value, linear: Option<CV>, x: CV) {
        match linear {
            Some(l) if self.ty(v).is_block() => self.store_elem(v, l, x),
            _ => self.set(v, x),
        }
    }

    fn reduce(&mut self, op: &Op, axis: usize, combine: Combine) {
        let srcs = op.args.clone();
        let sshape = self.ty(srcs[0]).shape.clone();
        let sstr = row_major_strides(&sshape);
        let mut rshape = sshape.clone();
        rshape.remove(axis);
        let n = sshape[axis] as i64;
        let results = op.results.clone();
        let region = op.regions.first().cloned();
        let elems: Vec<Elem> = srcs.iter().map(|&s| self.ty(s).elem).collect();
        let dtype = self.ty(srcs[0]).dtype();
        self.loop_nest(&rshape.clone(), &mut |g, idx, lin| {
            // Source offset of this output element with the axis index at 0.
            let mut base = g.iconst(0);
            let mut d_out = 0;
            for (d, &stride) in sstr.iter().enumerate() {
                if d == axis {
                    continue;
                }
                let t = g.b.ins().imul_imm(idx[d_out], stride as i64);
                base = g.b.ins().iadd(base, t);
                d_out += 1;
            }
            let accs: Vec<Variable> = elems.iter().map(|&e| g.b.declare_var(reg_ty(e))).collect();
            let idx_var = g.b.declare_var(types::I32);
            for (s, a) in srcs.iter().zip(&accs) {
                let x = g.load_elem(*s, base);
                g.b.def_var(*a, x);
            }
            let zero = g.b.ins().iconst(types::I32, 0);
            g.b.def_var(idx_var, zero);
            let lo = g.iconst(1);
            let hi = g.iconst(n);
            g.for_range(lo, hi, &mut |g, j| {
                let off = g.b.ins().imul_imm(j, sstr[axis] as i64);
                let at = g.b.ins().iadd(base, off);
                let xs: Vec<CV> = srcs.iter().map(|&s| g.load_elem(s, at)).collect();
                let cur: Vec<CV> = accs.iter().map(|&a| g.b.use_var(a)).collect();
                match combine {
                    Combine::Region => {
                        let r = region.as_ref().expect("combine region");
                        for (i, &arg) in r.args.iter().enumerate() {
                            let v = if i < cur.len() {
                                cur[i]
                            } else {
                                xs[i - cur.len()]
                            };
                            g.set(arg, v);
                        }
                        let ys = g.region(r);
                        let vals: Vec<CV> = ys.iter().map(|&y| g.get(y)).collect();
                        for (a, v) in accs.iter().zip(vals) {
                            g.b.def_var(*a, v);
                        }
                    }
                    Combine::ArgMax | Combine::ArgMin => {
                        let better =
                            g.strictly_better(combine == Combine::ArgMax, xs[0], cur[0], dtype);
                        let nv = g.b.ins().select(better, xs[0], cur[0]);
                        g.b.def_var(accs[0], nv);
                        let ji = g.b.ins().ireduce(types::I32, j);
                        let ci = g.b.use_var(idx_var);
                        let ni = g.b.ins().select(better, ji, ci);
                        g.b.def_var(idx_var, ni);
                    }
                    _ => {
                        let v = g.combine(combine, cur[0], xs[0], dtype);
                        g.b.def_var(accs[0], v);
                    }
                }
            });
            for (i, &r) in results.iter().enumerate() {
                let v = if matches!(combine, Combine::ArgMax | Combine::ArgMin) {
                    g.b.use_var(idx_var)
                } else {
                    g.b.use_var(accs[i])
                };
                g.write_result(r, Some(lin), v);
            }
        });
    }

    fn scan(&mut self, op: &Op, axis: usize, combine: Combine, reverse: bool) {
        let (src, r) = (op.args[0], op.results[0]);
        let sshape = self.ty(src).shape.clone();
        let sstr = row_major_strides(&sshape);
        let mut oshape = sshape.clone();
        oshape[axis] = 1;
        let n = sshape[axis] as i64;
        let dtype = self.ty(src).dtype();
        let elem = self.ty(src).elem;
        self.loop_nest(&oshape.clone(), &mut |g, idx, _| {
            let mut base = g.iconst(0);
            for d in 0..sshape.len() {
                if d != axis {
                    let t = g.b.ins().imul_imm(idx[d], sstr[d] as i64);
                    base = g.b.ins().iadd(base, t);
                }
            }
            let acc = g.b.declare_var(reg_ty(elem));
            let first = g.b.declare_var(types::I8);
            let z = g.constant(Const::Int(0), elem);
            g.b.def_var(acc, z);
            let one = g.b.ins().iconst(types::I8, 1);
            g.b.def_var(first, one);
            let (lo, hi) = (g.iconst(0), g.iconst(n));
            g.for_range(lo, hi, &mut |g, j| {
                let jj = if reverse {
                    let t = g.iconst(n - 1);
                    g.b.ins().isub(t, j)
                } else {
                    j
                };
                let off = g.b.ins().imul_imm(jj, sstr[axis] as i64);
                let at = g.b.ins().iadd(base, off);
                let x = g.load_elem(src, at);
                let cur = g.b.use_var(acc);
                let comb = g.combine(combine, cur, x, dtype);
                let f = g.b.use_var(first);
                let v = g.b.ins().select(f, x, comb);
                g.b.def_var(acc, v);
                let zero = g.b.ins().iconst(types::I8, 0);
                g.b.def_var(first, zero);
                g.store_elem(r, at, v);
            });
        });
    }

    fn dot(&mut self, op: &Op) {
        let (a, b, acc, r) = (op.args[0], op.args[1], op.args[2], op.results[0]);
        let (m, k) = (self.ty(a).shape[0] as i64, self.ty(a).shape[1] as i64);
        let n = self.ty(b).shape[1] as i64;
        let da = self.ty(a).dtype();
        let dr = self.ty(r).dtype();
        let pa = self.slot_addr(a);
        let pb = self.slot_addr(b);
        let pc = self.slot_addr(acc);
        let po = self.slot_addr(r);
        let (mm, nn, kk) = (self.iconst(m), self.iconst(n), self.iconst(k));
        match da {
            Some(DType::I8) => {
                self.call("tb_dot_i8", &[pa, pb, pc, po, mm, nn, kk]);
            }
            Some(DType::F64) => {
                self.call("tb_dot_f64", &[pa, pb, pc, po, mm, nn, kk]);
            }
            _ => {
                let round = match dr {
                    Some(DType::F16) => 1,
                    Some(DType::BF16) => 2,
                    _ => 0,
                };
                // fp32 inputs under `input_precision="tf32"`: round them as
                // the GPU's tensor cores see them.
                let tf32 = da == Some(DType::F32) && matches!(op.kind, OpKind::Dot { tf32: true });
                let round = round | if tf32 { 4 } else { 0 };
                let rr = self.iconst(round);
                self.call("tb_dot_f32", &[pa, pb, pc, po, mm, nn, kk, rr]);
            }
        }
    }

    fn for_op(&mut self, op: &Op) {
        let r = &op.regions[0];
        let (lb, ub, step) = (op.args[0], op.args[1], op.args[2]);
        let inits = op.args[3..].to_vec();
        let carried = r.args[1..].to_vec();
        self.bind_args(&carried, &inits);
        self.coalesce_yields(r);
        let iv = r.args[0];
        let ivt = reg_ty(self.ty(iv).elem);
        let lbv = self.get(lb);
        let ubv = self.get(ub);
        let stepv = self.get(step);
        if self.checked {
            let site = self.check_site(op, "step", "range() step must not be zero");
            let nonzero = self.b.ins().icmp_imm(IntCC::NotEqual, stepv, 0);
            let z = self.iconst(0);
            self.fail_unless(nonzero, site, z);
        }
        let ivar = self.b.declare_var(ivt);
        self.b.def_var(ivar, lbv);
        let header = self.b.create_block();
        let body = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(header, &[]);
        self.b.switch_to_block(header);
        let i = self.b.use_var(ivar);
        let up = self.b.ins().icmp(IntCC::SignedLessThan, i, ubv);
        let down = self.b.ins().icmp(IntCC::SignedGreaterThan, i, ubv);
        let pos = self.b.ins().icmp_imm(IntCC::SignedGreaterThan, stepv, 0);
        let c = self.b.ins().select(pos, up, down);
        self.b.ins().brif(c, body, &[], exit, &[]);
        self.b.switch_to_block(body);
        self.set(iv, i);
        let ys = self.region(r);
        self.bind_args(&carried, &ys);
        let i2 = self.b.use_var(ivar);
        let next = self.b.ins().iadd(i2, stepv);
        self.b.def_var(ivar, next);
        self.b.ins().jump(header, &[]);
        self.b.switch_to_block(exit);
        for (&res, &c) in op.results.iter().zip(&carried) {
            self.alias(res, c);
        }
    }

    fn if_op(&mut self, op: &Op) {
        let c = self.get(op.args[0]);
        let then_b = self.b.create_block();
        let else_b = self.b.create_block();
        let merge = self.b.create_block();
        self.b.ins().brif(c, then_b, &[], else_b, &[]);
        let results = op.results.clone();
        for (block, region) in [(then_b, &op.regions[0]), (else_b, &op.regions[1])] {
            self.b.switch_to_block(block);
            let ys = self.region(region);
            self.bind_args(&results, &ys);
            self.b.ins().jump(merge, &[]);
        }
        self.b.switch_to_block(merge);
    }

    fn while_op(&mut self, op: &Op) {
        let (cond_r, body_r) = (&op.regions[0], &op.regions[1]);
        let carried = cond_r.args.clone();
        self.bind_args(&carried, &op.args);
        // The body's arguments share the carried storage.
        for (&b, &c) in body_r.args.iter().zip(&carried) {
            self.alias(b, c);
        }
        let header = self.b.create_block();
        let body = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(header, &[]);
        self.b.switch_to_block(header);
        let ys = self.region(cond_r);
        let c = self.get(ys[0]);
        self.b.ins().brif(c, body, &[], exit, &[]);
        self.b.switch_to_block(body);
        let ys = self.region(body_r);
        self.bind_args(&carried, &ys);
        self.b.ins().jump(header, &[]);
        self.b.switch_to_block(exit);
        for (&res, &c) in op.results.iter().zip(&carried) {
            self.alias(res, c);
        }
    }

    fn print_op(&mut self, op: &Op, prefix: &str) {
        let site = self.sites.len() as i64;
        self.sites.push(Site {
            loc: op.loc,
            what: "print",
            param: None,
            elem_size: 0,
            message: prefix.to_string(),
            shape: vec![],
        });
        for (i, &a) in op.args.iter().enumerate() {
            let t = self.ty(a).clone();
            let data = if t.is_block() {
                self.slot_addr(a)
            } else {
                // Spill the scalar to a one-element slot.
                let off = self.alloc_raw(8);
                let x = self.get(a);
                let addr = self.b.ins().iadd_imm(self.frame, off as i64);
                self.b.ins().store(MemFlags::trusted(), x, addr, 0);
                addr
            };
            let code = print_code(t.dtype());
            let args = [
                self.ctx,
                self.pids,
                self.iconst(site),
                // 0 for a single operand, else its index + 1.
                self.iconst(if op.args.len() > 1 { i as i64 + 1 } else { 0 }),
                data,
                self.iconst(t.numel().max(1) as i64),
                self.iconst(code as i64),
            ];
            self.call("tb_print", &args);
        }
    }

    /// A site for a run-time check of `op` (`what` picks how the session
    /// reports it: "assert", "divide", "step").
    pub(crate) fn check_site(&mut self, op: &Op, what: &'static str, msg: &str) -> i64 {
        self.sites.push(Site {
            loc: op.loc,
            what,
            param: None,
            elem_size: 0,
            message: msg.to_string(),
            shape: vec![],
        });
        self.sites.len() as i64 - 1
    }

    /// Stop the launch at `site` for element `lin` unless `ok`.
    pub(crate) fn fail_unless(&mut self, ok: CV, site: i64, lin: CV) {
        let fail = self.b.create_block();
        let cont = self.b.create_block();
        self.b.set_cold_block(fail);
        self.b.ins().brif(ok, cont, &[], fail, &[]);
        self.b.switch_to_block(fail);
        let args = [self.ctx, self.pids, self.iconst(site), lin];
        self.call("tb_assert_fail", &args);
        let one = self.b.ins().iconst(types::I32, 1);
        self.b.ins().return_(&[one]);
        self.b.switch_to_block(cont);
    }

    /// In checked mode, integer division and modulo stop the launch on a
    /// zero divisor (the GPU's answer would be meaningless).
    pub(crate) fn check_divisor(&mut self, op: &Op, divisor: CV, lin: CV) {
        let int_divide = matches!(op.kind, OpKind::Binary(BinOp::Div | BinOp::Rem))
            && self.ty(op.results[0]).dtype().is_some_and(DType::is_int);
        if !self.checked || !int_divide {
            return;
        }
        let what = if op.kind == OpKind::Binary(BinOp::Div) {
            "integer division by zero"
        } else {
            "integer modulo by zero"
        };
        let site = self.check_site(op, "divide", what);
        let nonzero = self.b.ins().icmp_imm(IntCC::NotEqual, divisor, 0);
        self.fail_unless(nonzero, site, lin);
    }

    fn assert_op(&mut self, op: &Op, msg: &str) {
        let site = self.check_site(op, "assert", msg);
        let c = op.args[0];
        let t = self.ty(c).clone();
        if t.is_block() {
            let (lo, hi) = (self.iconst(0), self.iconst(t.numel() as i64));
            self.for_range(lo, hi, &mut |g, i| {
                let x = g.load_elem(c, i);
                g.fail_unless(x, site, i);
            });
        } else {
            let x = self.get(c);
            let z = self.iconst(0);
            self.fail_unless(x, site, z);
        }
    }

    pub fn declare_helper(
        &mut self,
        name: &'static str,
        params: &[types::Type],
        ret: Option<types::Type>,
    ) {
        let mut sig = self.module.make_signature();
        for &p in params {
            sig.params.push(cranelift_codegen::ir::AbiParam::new(p));
        }
        if let Some(r) = ret {
            sig.returns.push(cranelift_codegen::ir::AbiParam::new(r));
        }
        let id = self
            .module
            .declare_function(name, cranelift_module::Linkage::Import, &sig)
            .expect("helper declaration");
        let fref = self.module.declare_func_in_func(id, self.b.func);
        self.funcs.insert(name, fref);
    }
}
