//! Asynchronous global → shared copies (`cp.async`) of tensor-core operands.
//!
//! A load whose value is only ever a `tl.dot` operand (directly, or carried
//! through loops, as the pipelining pass arranges) never needs registers: it
//! becomes `cp.async` copies straight into the padded operand tile that the
//! dot reads with `ldmatrix`. Such a value is represented by one register,
//! the byte offset of its tile in shared memory ("tile values"); loops carry
//! that offset as one phi.
//!
//! Tiles live in a ring of [`STAGES`] stage buffers at the start of shared
//! memory; all other scratch (conversions, reductions) is placed after the
//! rings (`Gen::scratch`), so conversions in the loop cannot clobber them. Each operand role (A or B of a given MMA layout) has its own
//! stage counter; prologue and loop issue A and B in the same order, so the
//! two counters agree. With the pipelining pass's prefetch distance of one,
//! three buffers let a fast warp fill tile `i + 2` while a slow one still reads
//! tile `i` (the dot's barrier keeps warps within one iteration).
//!
//! Each load commits one `cp.async` group. A dot waits with
//! `cp.async.wait_group N`, where `N` counts the groups this loop body issued
//! before the dot (all issued after its carried operands), then a barrier.

use super::*;
use crate::mma::MmaLayout;

/// Stage buffers of the operand ring (prefetch distance one, plus one).
pub(super) const STAGES: usize = 3;

/// Which operand of which tensor-core layout a tile value is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct TileRole {
    pub layout: MmaLayout,
    /// 0 for A, 1 for B.
    pub operand: usize,
}

impl<'ctx> Gen<'ctx, '_> {
    /// Decide which values become tile values: dot operands whose every
    /// producer (through loop arguments, inits and yields) is an eligible load.
    pub(super) fn plan_tiles(&self) -> HashMap<Value, TileRole> {
        let mut role: HashMap<Value, TileRole> = HashMap::new();
        let mut loops: Vec<&Op> = vec![];
        let mut dots: Vec<(Value, Value)> = vec![];
        tilebook_tir::walk_ops(&self.k.body, &mut |op| match op.kind {
            OpKind::Dot { .. } => {
                if let Some(&layout) = self.mma.get(&op.results[0]) {
                    dots.push((op.args[0], op.args[1]));
                    for operand in 0..2 {
                        let v = op.args[operand];
                        if self.half_regs.contains(&v) {
                            role.insert(v, TileRole { layout, operand });
                        }
                    }
                }
            }
            OpKind::For => loops.push(op),
            _ => {}
        });
        // Spread roles backwards through loops: region argument -> init and yield.
        let links = |op: &Op| -> Vec<(Value, Value, Value)> {
            let region = &op.regions[0];
            let y = region.ops.last().filter(|y| y.kind == OpKind::Yield);
            (0..op.args.len().saturating_sub(3))
                .filter_map(|i| {
                    let arg = region.args[i + 1];
                    Some((arg, op.args[3 + i], *y?.args.get(i)?))
                })
                .collect()
        };
        for _ in 0..4 {
            for l in &loops {
                for (arg, init, yielded) in links(l) {
                    if let Some(&r) = role.get(&arg) {
                        role.entry(init).or_insert(r);
                        role.entry(yielded).or_insert(r);
                    }
                }
            }
        }
        // Remove values with an ineligible producer, and everything linked to them.
        let mut bad: HashSet<Value> = role
            .keys()
            .copied()
            .filter(|v| match self.defs.get(v) {
                Some(op) => !self.async_eligible(op, role[v]),
                None => !loops.iter().any(|l| l.regions[0].args[1..].contains(v)),
            })
            .collect();
        loop {
            let before = bad.len();
            // A dot takes both operands from tiles or neither.
            for &(a, b) in &dots {
                if bad.contains(&a)
                    || bad.contains(&b)
                    || !role.contains_key(&a)
                    || !role.contains_key(&b)
                {
                    bad.extend([a, b]);
                }
            }
            for l in &loops {
                for (arg, init, yielded) in links(l) {
                    if [arg, init, yielded].iter().any(|v| bad.contains(v)) {
                        bad.extend([arg, init, yielded]);
                    }
                }
            }
            if bad.len() == before {
                break;
            }
        }
        role.retain(|v, _| !bad.contains(v));
        role
    }

    /// Whether `op` is a load that `cp.async` can perform for a tile of `role`:
    /// runs of at least two halves, contiguous and aligned, under a mask that
    /// is uniform over each run, with zero (or nothing) where masked off.
    fn async_eligible(&self, op: &Op, role: TileRole) -> bool {
        let OpKind::Load { mask, other } = op.kind else {
            return false;
        };
        let t = self.ty(op.results[0]);
        if t.shape.len() != 2 {
            return false;
        }
        let cols = if role.operand == 0 {
            role.layout.k
        } else {
            role.layout.n
        };
        if t.shape[1] != cols {
            return false;
        }
        if other {
            let zero = matches!(
                self.defs.get(&op.args[op.args.len() - 1]).map(|o| &o.kind),
                Some(OpKind::Const(c)) if c.as_f64() == 0.0
            );
            if !zero {
                return false;
            }
        }
        let l = self.layout(t);
        let m = if mask { Some(op.args[1]) } else { None };
        let w = self.vector_width(op.args[0], m, &l, 2);
        w >= 2 && l.is_pow2() && !l.replicated() && cols % w == 0
    }

    /// Byte offset of the tile `role` in stage `stage` (a runtime value).
    fn tile_offset(&self, role: TileRole, stage: IntValue<'ctx>) -> R<IntValue<'ctx>> {
        let l = role.layout;
        let size = self.i32c(l.smem_bytes() as i64);
        let off = self.b.build_int_mul(stage, size, "")?;
        let base = self.ring_base[&l] + if role.operand == 1 { l.b_base() } else { 0 };
        Ok(self.b.build_int_add(off, self.i32c(base as i64), "")?)
    }

    /// The stage counter of a role: a stack slot in the entry block holding the
    /// next stage to fill (LLVM promotes it to a register).
    fn stage_counter(&self, role: TileRole) -> R<PointerValue<'ctx>> {
        if let Some(p) = self.stage_counters.borrow().get(&role) {
            return Ok(*p);
        }
        let slot = self.dot_counter()?;
        self.stage_counters.borrow_mut().insert(role, slot);
        Ok(slot)
    }

    /// `cp.async` every run of the load `op` into the next stage's tile.
    pub(super) fn async_load(&mut self, op: &Op, role: TileRole, mask: bool) -> R<()> {
        let r = op.results[0];
        let t = self.ty(r).clone();
        let l = self.layout(&t);
        let n = l.regs();
        let ptrs = self.regs(op.args[0], n)?;
        let masks = if mask {
            Some(self.regs(op.args[1], n)?)
        } else {
            None
        };
        let w = self.vector_width(op.args[0], mask.then(|| op.args[1]), &l, 2);
        let slot = self.stage_counter(role)?;
        let i32t = self.ctx.i32_type();
        let stage = self.b.build_load(i32t, slot, "")?.into_int_value();
        let next = self.b.build_int_add(stage, self.i32c(1), "")?;
        let wrap =
            self.b
                .build_int_compare(IntPredicate::EQ, next, self.i32c(STAGES as i64), "")?;
        let next = self
            .b
            .build_select(wrap, self.i32c(0), next, "")?
            .into_int_value();
        self.b.build_store(slot, next)?;
        let tile = self.tile_offset(role, stage)?;
        let row_len = if role.operand == 0 {
            role.layout.row_k()
        } else {
            role.layout.row_n()
        };
        let bytes = 2 * w;
        let fn_ty = self.ctx.void_type().fn_type(
            &[
                i32t.into(),
                self.ctx.ptr_type(AddressSpace::from(1u16)).into(),
                i32t.into(),
            ],
            false,
        );
        let cache = if bytes == 16 { "cg" } else { "ca" };
        let asm = self.ctx.create_inline_asm(
            fn_ty,
            format!("cp.async.{cache}.shared.global [$0], [$1], {bytes}, $2;"),
            "r,l,r,~{memory}".into(),
            true,
            false,
            None,
            false,
        );
        let smem_base = self.b.build_ptr_to_int(self.smem, i32t, "")?;
        let tile_addr = self.b.build_int_add(smem_base, tile, "")?;
        for g0 in (0..n).step_by(w) {
            let rc = self.elem_coords(&l, g0, &t.shape)?;
            let idx = self.b.build_int_mul(rc[0], self.i32c(row_len as i64), "")?;
            let idx = self.b.build_int_add(idx, rc[1], "")?;
            let off = self.b.build_int_mul(idx, self.i32c(2), "")?;
            let dst = self.b.build_int_add(tile_addr, off, "")?;
            let src = self.b.build_address_space_cast(
                ptrs[g0].into_pointer_value(),
                self.ctx.ptr_type(AddressSpace::from(1u16)),
                "",
            )?;
            let size = match &masks {
                Some(m) => self
                    .b
                    .build_select(
                        m[g0].into_int_value(),
                        self.i32c(bytes as i64),
                        self.i32c(0),
                        "",
                    )?
                    .into_int_value(),
                None => self.i32c(bytes as i64),
            };
            self.b
                .build_indirect_call(fn_ty, asm, &[dst.into(), src.into(), size.into()], "")?;
        }
        self.ptx_statement("cp.async.commit_group;")?;
        if let Some(Some(c)) = self.async_groups.borrow_mut().last_mut() {
            *c += 1;
        }
        self.async_used.set(true);
        self.set(r, Reg::B(vec![tile.into()]));
        Ok(())
    }

    /// Wait until the tiles `a` and `b` have landed and are visible to every
    /// thread: groups issued after them in this loop body may stay in flight.
    pub(super) fn wait_tiles(&self, a: Value, b: Value) -> R<()> {
        let carried = !self.defs.contains_key(&a) && !self.defs.contains_key(&b);
        let pending = match self.async_groups.borrow().last() {
            Some(Some(n)) if carried => *n,
            _ => 0,
        };
        self.ptx_statement(&format!("cp.async.wait_group {pending};"))?;
        self.barrier()
    }

    /// One PTX statement with no operands, as volatile inline assembly.
    pub(super) fn ptx_statement(&self, text: &str) -> R<()> {
        let fn_ty = self.ctx.void_type().fn_type(&[], false);
        let asm = self.ctx.create_inline_asm(
            fn_ty,
            text.into(),
            "~{memory}".into(),
            true,
            false,
            None,
            false,
        );
        self.b.build_indirect_call(fn_ty, asm, &[], "")?;
        Ok(())
    }

    /// Lay out the stage rings at the start of shared memory, one per MMA
    /// layout with tiles; returns the bytes they take (scratch starts there).
    pub(super) fn place_rings(&mut self) -> usize {
        let mut layouts: Vec<MmaLayout> = self.tiles.values().map(|r| r.layout).collect();
        layouts.sort_by_key(|l| (l.m, l.n, l.k, l.wm, l.bf16));
        layouts.dedup();
        let mut at = 0;
        for l in layouts {
            self.ring_base.insert(l, at);
            at += (STAGES * l.smem_bytes()).next_multiple_of(128);
        }
        at
    }
}
