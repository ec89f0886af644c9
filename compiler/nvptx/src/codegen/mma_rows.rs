//! Values in an MMA layout besides dot results (see `mma_plan`): the
//! operands of elementwise ops in the full layout, row vectors (reductions
//! along rows by quad shuffles, their elementwise ops, their conversions to
//! and from the blocked layout).

use super::*;

impl<'ctx> Gen<'ctx, '_> {
    /// Registers of a row vector in rows layout `l`: `2 * reps_m`.
    pub(super) fn rows_regs(l: &MmaLayout) -> usize {
        2 * l.reps_m()
    }

    /// The row of each register of a row vector in layout `l`.
    fn rows_index(&self, l: &MmaLayout) -> R<Vec<IntValue<'ctx>>> {
        let c = self.mma_coords(l)?;
        let mut out = vec![];
        for rm in 0..l.reps_m() {
            for h in 0..2 {
                out.push(self.mma_pos(l, &c, rm, 0, 2 * h)?.0);
            }
        }
        Ok(out)
    }

    /// A layout-free operand (`mma_plan`'s `free`) recomputed at `idx`.
    fn free_operand(&mut self, a: Value, idx: &[IntValue<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        match self.vals.get(&a) {
            Some(Reg::S(x)) => return Ok(*x),
            Some(Reg::B(r))
                if matches!(
                    self.defs.get(&a).map(|o| &o.kind),
                    Some(OpKind::Const(_) | OpKind::Splat)
                ) =>
            {
                return Ok(r[0]);
            }
            _ => {}
        }
        self.remat(a, idx)
    }

    /// The operands of an elementwise op whose result is in the full MMA
    /// layout `l` (see `mma_plan`): MMA registers as they are, row vectors
    /// broadcast along the rows, scalars and free values recomputed at each
    /// register's coordinates.
    pub(super) fn mma_operands(
        &mut self,
        op: &Op,
        l: &MmaLayout,
    ) -> R<Vec<Vec<BasicValueEnum<'ctx>>>> {
        let n = l.regs();
        let mut all = vec![];
        for &a in &op.args {
            if self.mma.get(&a) == Some(l) {
                all.push(self.raw(a)?);
                continue;
            }
            let bsrc = self
                .defs
                .get(&a)
                .filter(|d| d.kind == OpKind::Broadcast)
                .map(|d| d.args[0])
                .filter(|s| self.rows.contains_key(s));
            if let Some(src) = bsrc {
                let rows = self.raw(src)?;
                all.push(Self::expand_rows(l, &rows));
                continue;
            }
            if let Some(src) = self.broadcast_of_blocked(a, l) {
                let root = self.vector_root(src);
                if self.ty(src).shape[1] == 1 {
                    let rows = self.cached_vector(root, l, true)?;
                    all.push(Self::expand_rows(l, &rows));
                } else {
                    let cols = self.cached_vector(root, l, false)?;
                    let out = (0..n)
                        .map(|i| cols[2 * ((i / 4) % l.reps_n()) + i % 2])
                        .collect();
                    all.push(out);
                }
                continue;
            }
            if !self.ty(a).is_block() || self.is_splat(a) {
                let x = self.free_operand(a, &[])?;
                all.push(vec![x; n]);
                continue;
            }
            let c = self.mma_coords(l)?;
            let mut out = vec![];
            for i in 0..n {
                let (rep, r) = (i / 4, i % 4);
                let (row, col) = self.mma_pos(l, &c, rep / l.reps_n(), rep % l.reps_n(), r)?;
                out.push(self.free_operand(a, &[row, col])?);
            }
            all.push(out);
        }
        Ok(all)
    }

    /// A row vector's registers repeated over the full layout `l`.
    fn expand_rows(l: &MmaLayout, rows: &[BasicValueEnum<'ctx>]) -> Vec<BasicValueEnum<'ctx>> {
        (0..l.regs())
            .map(|i| rows[2 * ((i / 4) / l.reps_n()) + (i % 4) / 2])
            .collect()
    }

    /// The source of `a` if `a` broadcasts a blocked `[M, 1]` or `[1, N]`
    /// vector to the shape of `l` (`mma_plan`'s `broadcast_blocked`).
    pub(super) fn broadcast_of_blocked(&self, a: Value, l: &MmaLayout) -> Option<Value> {
        let d = self.defs.get(&a).filter(|d| d.kind == OpKind::Broadcast)?;
        let s = d.args[0];
        let shape = &self.ty(s).shape;
        let vector = shape.as_slice() == [l.m, 1] || shape.as_slice() == [1, l.n];
        (vector && !self.mma.contains_key(&s) && !self.rows.contains_key(&s)).then_some(s)
    }

    /// A blocked `[M, 1]` (`rows`) or `[1, N]` vector in the rows or the
    /// columns of layout `l`, through shared memory; converted once per
    /// region. Columns: `2 * reps_n` registers, `(rep_n, j)` holding column
    /// `warp_n * (N / wn) + rep_n * 8 + 2 * (lane % 4) + j`.
    fn cached_vector(
        &mut self,
        v: Value,
        l: &MmaLayout,
        rows: bool,
    ) -> R<Vec<BasicValueEnum<'ctx>>> {
        let hit = self
            .vectors
            .borrow()
            .iter()
            .find(|(_, x, r, _)| *x == v && *r == rows)
            .map(|e| e.3.clone());
        if let Some(regs) = hit {
            return Ok(regs);
        }
        if !rows && self.cols.get(&v).is_some_and(|c| mma_cols::same_cols(c, l)) {
            return self.raw(v);
        }
        let regs = if rows {
            self.blocked_to_rows(v, l)?
        } else if self.is_splat(v) {
            let x = self.free_operand(v, &[])?;
            vec![x; 2 * l.reps_n()]
        } else {
            let cols = self.column_index(l)?;
            self.through_smem(v, &cols)?
        };
        self.vectors
            .borrow_mut()
            .push((self.depth, v, rows, regs.clone()));
        Ok(regs)
    }

    /// The vector a `[M, 1]` or `[1, N]` value reshapes (`lse[:, None]` of a
    /// loaded `lse`), or the value itself: its element order is the same.
    pub(super) fn vector_root(&self, mut v: Value) -> Value {
        while let Some(d) = self.defs.get(&v) {
            let reshape = matches!(d.kind, OpKind::Reshape | OpKind::ExpandDims(_));
            if !reshape || self.ty(d.args[0]).numel() != self.ty(v).numel() {
                break;
            }
            v = d.args[0];
        }
        v
    }

    /// Whether `v` is a constant or a splat (one register value everywhere).
    fn is_splat(&self, v: Value) -> bool {
        matches!(
            self.defs.get(&v).map(|o| &o.kind),
            Some(OpKind::Const(_) | OpKind::Splat)
        ) && matches!(self.vals.get(&v), Some(Reg::B(_)))
    }

    /// The operands of an elementwise op on row vectors in rows layout `l`.
    pub(super) fn rows_operands(
        &mut self,
        op: &Op,
        l: &MmaLayout,
    ) -> R<Vec<Vec<BasicValueEnum<'ctx>>>> {
        let n = Self::rows_regs(l);
        let mut all = vec![];
        for &a in &op.args {
            if self.rows.contains_key(&a) {
                all.push(self.raw(a)?);
                continue;
            }
            if !self.ty(a).is_block() || self.is_splat(a) {
                let x = self.free_operand(a, &[])?;
                all.push(vec![x; n]);
                continue;
            }
            let rank = self.ty(a).shape.len();
            let mut out = vec![];
            for row in self.rows_index(l)? {
                let idx = if rank == 1 {
                    vec![row]
                } else {
                    vec![row, self.i32c(0)]
                };
                out.push(self.free_operand(a, &idx)?);
            }
            all.push(out);
        }
        Ok(all)
    }

    /// A reduction along the rows of a full MMA value into rows layout: a
    /// fold over this thread's registers of each row, then across the four
    /// lanes of the quad that share the row.
    pub(super) fn rows_reduce(&mut self, op: &Op, combine: Combine) -> R<()> {
        let src = op.args[0];
        if self.scaled.contains_key(&src) {
            return self.scaled_rows_reduce(op, combine);
        }
        let l = self.mma[&src];
        let d = self.ty(op.results[0]).dtype();
        let regs = self.raw(src)?;
        let out = self.rows_combine(&l, &regs, None, combine, d)?;
        self.set(op.results[0], Reg::B(out));
        Ok(())
    }

    /// Each row of the MMA registers `regs` (layout `l`) combined: a
    /// thread's own elements, then across the four lanes of its quad. With
    /// `scale`, each element is multiplied by it just before it joins its
    /// row's chain (one product live at a time, not a block of them).
    pub(super) fn rows_combine(
        &mut self,
        l: &MmaLayout,
        regs: &[BasicValueEnum<'ctx>],
        scale: Option<inkwell::values::FloatValue<'ctx>>,
        combine: Combine,
        d: Option<DType>,
    ) -> R<Vec<BasicValueEnum<'ctx>>> {
        let mut out = vec![];
        for rm in 0..l.reps_m() {
            for h in 0..2 {
                let mut acc: Option<BasicValueEnum<'ctx>> = None;
                for rn in 0..l.reps_n() {
                    for j in 0..2 {
                        let mut x = regs[(rm * l.reps_n() + rn) * 4 + 2 * h + j];
                        if let Some(c) = scale {
                            x = self.b.build_float_mul(x.into_float_value(), c, "")?.into();
                        }
                        acc = Some(match acc {
                            None => x,
                            Some(a) => self.combine(combine, a, x, d)?,
                        });
                    }
                }
                let mut acc = acc.ok_or_else(|| GenError("empty row reduction".into()))?;
                for off in [1, 2] {
                    let other = self.shuffle_xor(acc, off)?;
                    acc = self.combine(combine, acc, other, d)?;
                }
                out.push(acc);
            }
        }
        Ok(out)
    }

    /// `shfl.sync.bfly` of an f32 or i32 register with the lane `off` apart.
    pub(super) fn shuffle_xor(&self, x: BasicValueEnum<'ctx>, off: i64) -> R<BasicValueEnum<'ctx>> {
        let name = if x.get_type() == self.ctx.f32_type().into() {
            "llvm.nvvm.shfl.sync.bfly.f32"
        } else {
            "llvm.nvvm.shfl.sync.bfly.i32"
        };
        let full = self.ctx.i32_type().const_all_ones();
        self.intrinsic(
            name,
            &[],
            &[full.into(), x, self.i32c(off).into(), self.i32c(31).into()],
        )
    }

    /// A row vector in the blocked layout of its shape, through shared
    /// memory (the four lanes of a quad store the same value).
    pub(super) fn rows_to_blocked(&self, v: Value, l: &MmaLayout) -> R<Vec<BasicValueEnum<'ctx>>> {
        if let Some((_, _, regs)) = self.converted.borrow().iter().find(|(_, x, _)| *x == v) {
            return Ok(regs.clone());
        }
        let out = self.vector_to_blocked(v, l.m, false, &|g| g.rows_index(l))?;
        self.converted
            .borrow_mut()
            .push((self.depth, v, out.clone()));
        Ok(out)
    }

    /// A vector of `len` elements held one per register at the indices
    /// `index` computes (the rows or columns of an MMA layout) in the
    /// blocked layout of its shape: each register stored at its index, a
    /// barrier, each blocked element loaded at its coordinate along the
    /// first axis (`last`: the last axis, for `[1, N]` columns).
    pub(super) fn vector_to_blocked(
        &self,
        v: Value,
        len: usize,
        last: bool,
        index: &dyn Fn(&Self) -> R<Vec<IntValue<'ctx>>>,
    ) -> R<Vec<BasicValueEnum<'ctx>>> {
        let t = self.ty(v).clone();
        let regs = self.raw(v)?;
        self.barrier()?;
        for (at, x) in index(self)?.into_iter().zip(&regs) {
            self.smem_store(0, at, t.elem, *x)?;
        }
        self.need_smem(len * self.slot_size(t.elem));
        self.barrier()?;
        let bl = self.layout(&t);
        let mut out = vec![];
        for r in 0..bl.regs() {
            let coords = self.elem_coords(&bl, r, &t.shape)?;
            let at = if last { coords.last() } else { coords.first() };
            let at = at.copied().unwrap_or(self.i32c(0));
            out.push(self.smem_load(0, at, t.elem)?);
        }
        self.barrier()?;
        Ok(out)
    }

    /// A blocked vector of `M` (or `M x 1`) values in rows layout `l`.
    pub(super) fn blocked_to_rows(
        &mut self,
        v: Value,
        l: &MmaLayout,
    ) -> R<Vec<BasicValueEnum<'ctx>>> {
        let t = self.ty(v).clone();
        if self.is_splat(v) || !t.is_block() {
            let x = self.free_operand(v, &[])?;
            return Ok(vec![x; Self::rows_regs(l)]);
        }
        let rows = self.rows_index(l)?;
        self.through_smem(v, &rows)
    }

    /// The elements of blocked value `v` at linear indices `at`, through
    /// shared memory.
    pub(super) fn through_smem(
        &mut self,
        v: Value,
        at: &[IntValue<'ctx>],
    ) -> R<Vec<BasicValueEnum<'ctx>>> {
        let e = self.ty(v).elem;
        self.barrier()?;
        self.spill(v, 0)?;
        self.barrier()?;
        let mut out = vec![];
        for &i in at {
            out.push(self.smem_load(0, i, e)?);
        }
        self.barrier()?;
        Ok(out)
    }

    /// The registers of `vals` flattened for a phi whose values become
    /// `dests`: a value whose layout (full MMA, rows, blocked) differs from
    /// its destination's is converted (to the blocked layout, or to the
    /// destination's MMA layout).
    pub(super) fn flat_to(&mut self, vals: &[Value], dests: &[Value]) -> R<Flat<'ctx>> {
        let mut flat = vec![];
        let mut shape = vec![];
        for (&v, &d) in vals.iter().zip(dests) {
            let t = self.ty(v).clone();
            let regs = if !t.is_block() {
                vec![self.scalar(v)?]
            } else if let Some(l) = self.mma.get(&d).copied() {
                if self.mma.get(&v) == Some(&l) {
                    self.raw(v)?
                } else {
                    self.blocked_to_mma(v, &l)?
                }
            } else if let Some(l) = self.rows.get(&d).copied() {
                if self.rows.get(&v).is_some_and(|r| same_rows(r, &l)) {
                    self.raw(v)?
                } else {
                    self.blocked_to_rows(v, &l)?
                }
            } else if let Some(l) = self.cols.get(&d).copied() {
                // `plan_cols` puts a loop's copies of a vector in one layout.
                if !self
                    .cols
                    .get(&v)
                    .is_some_and(|c| mma_cols::same_cols(c, &l))
                {
                    return fail(format!(
                        "internal: %{} enters a loop out of its columns",
                        v.0
                    ));
                }
                self.raw(v)?
            } else {
                self.regs(v, self.layout(&t).regs())?
            };
            shape.push((t.is_block(), regs.len()));
            flat.extend(regs);
        }
        Ok((flat, shape))
    }
}

impl<'ctx> Gen<'ctx, '_> {
    /// The A fragments of a register-path `mma.sync` dot of layout `l`,
    /// taken straight from an A operand that is itself in a full MMA layout
    /// with the same rows (the probabilities of attention, computed from the
    /// first dot's accumulator): the accumulator fragments of n-tiles `2j`
    /// and `2j + 1` are, rounded to halves and paired, the A fragment of
    /// k-step `j`. Indexed `[k-step][rep_m]`; `None` where the layouts differ.
    pub(super) fn a_fragments_from_acc(
        &self,
        a: Value,
        l: &MmaLayout,
    ) -> R<Option<AFragments<'ctx>>> {
        let Some(la) = self.mma.get(&a).copied() else {
            return Ok(None);
        };
        let fits = same_rows(&la, l) && l.wgmma == l.a_regs && l.kind.is_half() && la.n == l.k;
        if !fits {
            return Ok(None);
        }
        let h_name = if l.kind == MmaKind::BF16 {
            "bf16"
        } else {
            "f16"
        };
        // `p.to(tl.float16)` of an fp32 value in the same layout: pack the
        // fp32 registers (the packing conversion rounds the same way).
        let unrounded = self
            .defs
            .get(&a)
            .filter(|d| d.kind == OpKind::Cast)
            .map(|d| d.args[0])
            .filter(|s| self.mma.get(s) == Some(&la) && self.ty(*s).dtype() == Some(DType::F32));
        let regs = self.raw(unrounded.unwrap_or(a))?;
        // Two floats to a pair of halves (x in the low half) in one
        // `cvt.rn.f16x2.f32` (LLVM 19 splits a vector `fptrunc` in two).
        let cvt = format!("cvt.rn.{}x2.f32 $0, $2, $1;", h_name);
        let i32t = self.ctx.i32_type().into();
        let pack = |x: BasicValueEnum<'ctx>, y: BasicValueEnum<'ctx>| -> R<BasicValueEnum<'ctx>> {
            self.ptx_value(&cvt, "=r,f,f", i32t, false, &[x, y])
        };
        let mut out = vec![];
        for kk in 0..l.k / 16 {
            let mut per_rm = vec![];
            for rm in 0..l.reps_m() {
                let c0 = (rm * la.reps_n() + 2 * kk) * 4;
                let c1 = c0 + 4;
                per_rm.push(vec![
                    pack(regs[c0], regs[c0 + 1])?,
                    pack(regs[c0 + 2], regs[c0 + 3])?,
                    pack(regs[c1], regs[c1 + 1])?,
                    pack(regs[c1 + 2], regs[c1 + 3])?,
                ]);
            }
            out.push(per_rm);
        }
        Ok(Some(out))
    }

    /// The value whose transpose is `b`, where `b` is a transpose that only
    /// register-path dots read as their B operand (`virtual_ops`): those
    /// dots store it untransposed, `N x K`, and load B's fragments with a
    /// plain `ldmatrix`.
    pub(super) fn transposed_b(&self, b: Value) -> Option<Value> {
        if !self.virtual_ops.contains(&b) {
            return None;
        }
        self.defs
            .get(&b)
            .filter(|d| matches!(d.kind, OpKind::Trans(_)))
            .map(|d| d.args[0])
    }
}

/// Transposes `[1, 0]` of 2-D values read only as the B operand of
/// register-path, half-kind `mma.sync` dots (`plan` gives each dot's layout;
/// `tiled` says whether a dot's operands come by `cp.async`).
pub(super) fn dot_transposes(
    k: &Kernel,
    mma: &HashMap<Value, MmaLayout>,
    tiled: &dyn Fn(&Op) -> bool,
) -> HashSet<Value> {
    let mut uses: HashMap<Value, Vec<(&Op, usize)>> = HashMap::new();
    let mut trans = vec![];
    tilebook_tir::walk_ops(&k.body, &mut |op| {
        for (i, a) in op.args.iter().enumerate() {
            uses.entry(*a).or_default().push((op, i));
        }
        if matches!(&op.kind, OpKind::Trans(p) if p.as_slice() == [1, 0]) {
            trans.push(op.results[0]);
        }
    });
    trans
        .into_iter()
        .filter(|t| {
            uses.get(t).is_some_and(|us| {
                us.iter().all(|(op, i)| {
                    *i == 1
                        && matches!(op.kind, OpKind::Dot { .. })
                        && mma
                            .get(&op.results[0])
                            .is_some_and(|l| l.kind.is_half() && !l.wgmma)
                        && !tiled(op)
                })
            })
        })
        .collect()
}

impl<'ctx> Gen<'ctx, '_> {
    /// Before a loop: blocked vectors its MMA ops broadcast, and the A
    /// fragments of the register-path dots of its body
    /// whose A is defined outside the loop (attention's `q`, the backward's
    /// `k` and `v`), stored and loaded once instead of every iteration.
    pub(super) fn hoist_a_fragments(&mut self, region: &Region) -> R<()> {
        let mut inside: HashSet<Value> = region.args.iter().copied().collect();
        tilebook_tir::walk_ops(region, &mut |op| inside.extend(op.results.iter().copied()));
        // Row and column vectors the loop's MMA ops broadcast, defined
        // before it (`lse`, `Delta` of the backward): moved once.
        for op in &region.ops {
            let Some(l) = op.results.first().and_then(|r| self.mma.get(r)).copied() else {
                continue;
            };
            if !op.kind.is_elementwise() {
                continue;
            }
            for &a in &op.args {
                if let Some(src) = self.broadcast_of_blocked(a, &l) {
                    let root = self.vector_root(src);
                    if !inside.contains(&root) && self.ty(root).is_block() {
                        self.cached_vector(root, &l, self.ty(src).shape[1] == 1)?;
                    }
                }
            }
        }
        for op in &region.ops {
            if !matches!(op.kind, OpKind::Dot { .. }) || self.hoisted.contains_key(&op.results[0]) {
                continue;
            }
            let Some(l) = self.mma.get(&op.results[0]).copied() else {
                continue;
            };
            let a = op.args[0];
            let tiled = self.tiles().contains_key(&op.args[0])
                && self
                    .tiles()
                    .contains_key(&self.tile_plan.tile_of(op.args[1]));
            let blocked = !self.mma.contains_key(&a) && !self.rows.contains_key(&a);
            if l.wgmma || !l.kind.is_half() || tiled || inside.contains(&a) || !blocked {
                continue;
            }
            let at = self.ty(a).clone();
            let la = self.layout(&at);
            let regs = self.regs(a, la.regs())?;
            self.barrier()?;
            self.store_tile(0, &la, &regs, l.k, l.row_k(), l.kind == MmaKind::BF16)?;
            self.need_smem(l.m * l.row_k() * 2);
            self.barrier()?;
            let a_lane = self.a_lane(&l, self.i32c(self.scratch as i64))?;
            let mut frags = vec![];
            for k0 in (0..l.k).step_by(16) {
                frags.push(self.a_fragment(&l, a_lane, k0)?);
            }
            // The tiles' first copy is written next without a barrier.
            self.barrier()?;
            self.hoisted.insert(op.results[0], frags);
        }
        Ok(())
    }

    /// Mark the transposes `dot_transposes` finds as virtual.
    pub(super) fn plan_transposes(&mut self) {
        let plan = &self.tile_plan;
        let tiled = |op: &Op| {
            plan.roles.contains_key(&op.args[0])
                && plan.roles.contains_key(&plan.tile_of(op.args[1]))
        };
        let t = dot_transposes(self.k, &self.mma, &tiled);
        self.virtual_ops.extend(t);
        // `b.T` read as a K-major tile: nothing to compute.
        let kt: Vec<Value> = self.tile_plan.b_source.keys().copied().collect();
        self.virtual_ops.extend(kt);
    }
}

impl Gen<'_, '_> {
    /// Whether the planned rings leave less shared memory than the largest
    /// tensor-core result needs for its conversion to the blocked layout
    /// (as halves with padded rows, as an fp16 epilogue converts it).
    fn rings_over_budget(&self) -> bool {
        let rings = super::async_copy::rings_total(&self.tile_plan.stages, &self.tile_plan);
        let epilogue = self
            .mma
            .values()
            .map(|l| l.m * (l.n + 8) * 2)
            .max()
            .unwrap_or(0);
        rings + epilogue > super::wgmma::MAX_SHARED
    }

    /// Whether the dot `op` reads its operands from tiles: B always, A too
    /// unless its layout takes A from registers (`MmaLayout::a_regs`).
    pub(super) fn dot_tiled(&self, op: &Op) -> bool {
        let plan = &self.tile_plan;
        let a_regs = self.mma.get(&op.results[0]).is_some_and(|l| l.a_regs);
        (a_regs || plan.roles.contains_key(&op.args[0]))
            && plan.roles.contains_key(&plan.tile_of(op.args[1]))
    }

    /// Decide the tensor-core layouts (`mma_plan`), the operand tiles, and
    /// the shared memory of register-path dots. Returns whether a chained
    /// `wgmma` dot fell back to the register path because the rings left no
    /// room for its epilogue (fewer stages would have kept it on `wgmma`),
    /// and whether a register-path dot reads a tile that the pipelining
    /// pass carries across iterations (prefetched into registers).
    pub(super) fn plan_mma(&mut self, features: crate::mma::Features) -> (bool, bool) {
        let mut over_budget = false;
        // `wgmma` reads both operands from shared tiles, so a dot whose operands
        // cannot be copied there by `cp.async` falls back to `mma.sync`.
        let mut no_wgmma = HashSet::new();
        let kcol_b = self.column_b_dots();
        loop {
            let options = crate::mma_plan::PlanOptions {
                warps: self.threads / 32,
                features,
                no_wgmma: &no_wgmma,
                kcol_b: &kcol_b,
            };
            let planned = plan(self.k, &options);
            self.mma = planned.full;
            self.rows = planned.rows;
            self.virtual_ops = planned.virtual_broadcasts;
            self.plan_cols();
            self.half_regs = crate::mma::dot_only_operands(self.k, &self.mma, false);
            self.fp8_operands = crate::mma::dot_only_operands(self.k, &self.mma, true);
            self.tile_plan = self.plan_tiles();
            let before = no_wgmma.len();
            // Layouts of `wgmma` dots whose result feeds, as A, a dot that
            // cannot use `wgmma`: the two would not share rows, so the
            // first falls back too (and keeps the probabilities in registers).
            let mut feeds_mma_sync: Vec<MmaLayout> = vec![];
            // Chained `wgmma` dots (register A, a fixed A tile) whose rings
            // leave no room for the epilogue's conversion fall back to the
            // register path, which needs little shared memory (attention at
            // D = 128 with 128-key blocks and 3+ stages would not launch).
            let over = self.rings_over_budget();
            tilebook_tir::walk_ops(&self.k.body, &mut |op| {
                if !matches!(op.kind, OpKind::Dot { .. }) {
                    return;
                }
                if let Some(l) = self.mma.get(&op.results[0]) {
                    let chained = l.a_regs || self.tile_plan.fixed_a.contains(l);
                    if l.wgmma && (!self.dot_tiled(op) || (over && chained)) {
                        // A tiled dot falls back only for the budget.
                        over_budget |= self.dot_tiled(op);
                        no_wgmma.insert(op.results[0]);
                        if let Some(la) = self.mma.get(&op.args[0]) {
                            feeds_mma_sync.push(*la);
                        }
                    } else if !l.wgmma {
                        if let Some(la) = self.mma.get(&op.args[0]).filter(|la| la.wgmma) {
                            feeds_mma_sync.push(*la);
                        }
                    }
                }
            });
            tilebook_tir::walk_ops(&self.k.body, &mut |op| {
                if matches!(op.kind, OpKind::Dot { .. })
                    && self
                        .mma
                        .get(&op.results[0])
                        .is_some_and(|l| l.wgmma && feeds_mma_sync.contains(l))
                {
                    no_wgmma.insert(op.results[0]);
                }
            });
            if no_wgmma.len() == before {
                break;
            }
        }
        self.plan_inflight(features.wgmma_inflight, features.inflight_chain);
        self.plan_transposes();
        // Dots whose operands are not both copied into tiles run from registers.
        let mut stride = 0;
        let mut carried = HashSet::new();
        tilebook_tir::walk_ops(&self.k.body, &mut |op| {
            if op.kind == OpKind::For {
                carried.extend(op.regions[0].args.iter().copied());
            }
        });
        let mut register_prefetch = false;
        tilebook_tir::walk_ops(&self.k.body, &mut |op| {
            if !matches!(op.kind, OpKind::Dot { .. }) {
                return;
            }
            if let Some(l) = op.results.first().and_then(|r| self.mma.get(r)) {
                if !self.dot_tiled(op) {
                    let untransposed = self.virtual_ops.contains(&op.args[1]);
                    stride = stride.max(l.register_tiles_bytes(untransposed));
                    register_prefetch |= op.args[..2].iter().any(|&a| {
                        let a = match self.defs.get(&a) {
                            Some(d) if matches!(d.kind, OpKind::Trans(_)) => d.args[0],
                            _ => a,
                        };
                        carried.contains(&a)
                    });
                }
            }
        });
        self.dot_stride = stride;
        (over_budget, register_prefetch)
    }
}
