//! Asynchronous global → shared copies (`cp.async`) of tensor-core operands.
//!
//! A load whose value is only ever a `tl.dot` operand (directly, or carried
//! through loops, as the pipelining pass arranges) never needs registers: it
//! becomes `cp.async` copies straight into the padded operand tile that the
//! dot reads with `ldmatrix`. Such a value is represented by one register,
//! the byte offset of its tile in shared memory ("tile values"); loops carry
//! that offset as one phi.
//!
//! Tiles live in a ring of stage buffers at the start of shared memory, one
//! ring per MMA layout with `distance + 1` stages, where `distance` is how
//! many iterations ahead the pipelining pass prefetches (`num_stages - 1`).
//! While tiles may be live or in flight, all other scratch (conversions,
//! reductions) is placed after the rings (`Gen::scratch`); after the loop that
//! consumes them (all copies waited for, one barrier) scratch reuses the
//! rings, so the epilogue's accumulator conversion adds nothing.
//!
//! A stage holds one tile per stream of each operand of its layout (a
//! stream: the loads that one loop argument carries, `tile_plan::streams`;
//! attention's backward has two B streams per layout). Each stream (A or B
//! of a given MMA layout, and its index) has its own stage counter; prologue
//! and loop issue every stream once per iteration, so the counters agree. A
//! tile whose rows and columns suit another layout's operand too is read by
//! that layout's dots from where it lies (`tile_plan::shares_tile`). The copies of a load are recorded when the load is
//! generated and issued later: by a dot in the same region right after its
//! wait and barrier (when every warp has finished the previous dot, so the
//! buffer it read, `distance + 1` tiles back, is free), or before any nested
//! region or at the region's end. Each load commits one group; a dot whose
//! operands were prefetched `d` iterations ago waits with
//! `cp.async.wait_group (d - 1) * G`, `G` being the loads per iteration.

use super::tile_plan::{KMajor, TilePlan};
use super::*;
use crate::mma::MmaLayout;

/// Which operand of which tensor-core layout a tile value is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct TileRole {
    pub layout: MmaLayout,
    /// 0 for A, 1 for B (2 names the counter of a layout's transposed B
    /// tiles, see `transpose`).
    pub operand: usize,
    /// Which of the layout's tiles of this operand (`tile_plan::number_streams`):
    /// attention's backward loads two B blocks per iteration for one layout
    /// (`q` and `do`, or `k` and `v`), each with its own tile in a stage.
    pub index: usize,
}

/// The `cp.async` copies of one tile load (or its bulk copy, `tma`),
/// recorded until they are issued.
pub(super) struct PendingCopies<'ctx> {
    value: Value,
    bytes: usize,
    /// (shared address, global pointer, source bytes) per run.
    runs: Vec<(IntValue<'ctx>, PointerValue<'ctx>, IntValue<'ctx>)>,
    tma: Option<super::tma::TmaIssue<'ctx>>,
}

/// What one loop body's waits have established so far. A wait of
/// `(d - 1) * G` pending groups before any copy of this iteration is issued
/// leaves only the later iterations' prefetches in flight, so every tile of
/// this iteration carried from `d` or more iterations back has landed; after
/// its barrier (and proxy fence) a later dot of the body reading only such
/// tiles needs no wait or barrier of its own.
#[derive(Default)]
pub(super) struct Landed {
    /// The loop body's arguments (candidates).
    args: Vec<Value>,
    /// Copies were issued in this iteration already, of these values.
    issued: bool,
    pub(super) issued_values: HashSet<Value>,
    /// Tiles known landed and visible to all threads.
    pub(super) tiles: HashSet<Value>,
    /// The wait that established them fenced the async proxy (`wgmma`).
    fenced: bool,
    /// Every tile the loop carries is a bulk copy, and every tile loaded
    /// before it has landed and is visible (`release::settle_bulk_loop`):
    /// its refills wait for their stages' release, not for a block barrier.
    pub(super) settled: bool,
    /// A general wait of this body (its `cp.async` groups waited down to
    /// younger ones than any loaded before the loop, a proxy fence and a
    /// block barrier) made the tiles loaded before the loop visible to
    /// every thread and to `wgmma`.
    before_loop_seen: bool,
}

/// A dot operand at a wait (`Gen::operand_state`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Operand {
    Bulk,
    Ready,
    Other,
}

/// What a `Landed` knows at a point (`Landed::known`).
pub(super) struct Known {
    tiles: HashSet<Value>,
    fenced: bool,
    before_loop_seen: bool,
}

impl Operand {
    /// The operands among `vals` (classed as `state`) to wait for.
    pub(super) fn bulk_of(vals: [Value; 2], state: [Operand; 2]) -> Vec<Value> {
        vals.into_iter()
            .zip(state)
            .filter(|(_, s)| *s == Operand::Bulk)
            .map(|(v, _)| v)
            .collect()
    }
}

impl Landed {
    pub(super) fn for_body(args: &[Value], settled: bool) -> Landed {
        Landed {
            args: args.to_vec(),
            settled,
            ..Landed::default()
        }
    }

    /// What is known landed now.
    pub(super) fn known(&self) -> Known {
        Known {
            tiles: self.tiles.clone(),
            fenced: self.fenced,
            before_loop_seen: self.before_loop_seen,
        }
    }

    /// Forget what was learned landed since `k` (after a branch's arm).
    /// Copies issued since stay recorded: that only makes later waits
    /// more careful.
    pub(super) fn forget_since(&mut self, k: &Known) {
        self.tiles.clone_from(&k.tiles);
        self.fenced = k.fenced;
        self.before_loop_seen = k.before_loop_seen;
    }
}

impl<'ctx> Gen<'ctx, '_> {
    /// Byte offset of element `(row, col)` in an operand tile of `role`: rows
    /// padded by 8 halves for `mma.sync`, the swizzled layout for `wgmma`.
    /// Runs of up to 8 halves starting at a multiple of their length stay
    /// contiguous in both.
    pub(super) fn operand_offset(
        &self,
        role: TileRole,
        row: IntValue<'ctx>,
        col: IntValue<'ctx>,
    ) -> R<IntValue<'ctx>> {
        let l = role.layout;
        let b = &self.b;
        if !l.wgmma {
            let row_len = if role.operand == 0 {
                l.row_k()
            } else {
                l.row_n()
            };
            let idx = b.build_int_mul(row, self.i32c(row_len as i64), "")?;
            let idx = b.build_int_add(idx, col, "")?;
            return Ok(b.build_int_mul(idx, self.i32c(2), "")?);
        }
        self.swizzled_offset(&l.swizzled(role.operand), row, col)
    }

    /// Byte offset of element `(row, col)` in the swizzled tile `s`.
    pub(super) fn swizzled_offset(
        &self,
        s: &crate::mma::Swizzled,
        row: IntValue<'ctx>,
        col: IntValue<'ctx>,
    ) -> R<IntValue<'ctx>> {
        let b = &self.b;
        let shift = |x: IntValue<'ctx>, n: usize| b.build_left_shift(x, self.i32c(n as i64), "");
        let log2 = |n: usize| n.trailing_zeros() as usize;
        let block = b.build_right_shift(col, self.i32c(log2(s.block_cols()) as i64), false, "")?;
        let inner = b.build_and(col, self.i32c(s.block_cols() as i64 - 1), "")?;
        let off = b.build_int_mul(block, self.i32c(s.block_bytes() as i64), "")?;
        let off = b.build_int_add(off, shift(row, log2(s.swizzle))?, "")?;
        let inner = b.build_int_mul(inner, self.i32c(s.elem as i64), "")?;
        let off = b.build_int_add(off, inner, "")?;
        let bits = b.build_right_shift(off, self.i32c(7), false, "")?;
        let bits = b.build_and(bits, self.i32c(s.xor_mask() as i64), "")?;
        Ok(b.build_xor(off, shift(bits, 4)?, "")?)
    }

    /// Byte offset of the tile `role` in stage `stage` (a runtime value).
    /// A stage holds the layout's A tiles, then its B tiles, in index order;
    /// a `fixed_a` ring holds its A tiles once, then the stages of B tiles.
    fn tile_offset(&self, role: TileRole, stage: IntValue<'ctx>) -> R<IntValue<'ctx>> {
        let l = role.layout;
        let plan = &self.tile_plan;
        let base = self.ring_base[&l].0;
        let na = plan.count(&l, 0);
        let (first, size) = if plan.fixed_a.contains(&l) {
            if role.operand == 0 {
                return Ok(self.i32c((base + role.index * fixed_a_bytes(&l)) as i64));
            }
            let first = base + na * fixed_a_bytes(&l) + role.index * b_tile_bytes(&l);
            (first, plan.count(&l, 1) * b_tile_bytes(&l))
        } else {
            let within = match role.operand {
                0 => role.index * l.b_base(),
                _ => na * l.b_base() + role.index * b_tile_bytes(&l),
            };
            (base + within, stage_bytes(&l, plan))
        };
        let off = self.b.build_int_mul(stage, self.i32c(size as i64), "")?;
        Ok(self.b.build_int_add(off, self.i32c(first as i64), "")?)
    }

    /// The stage counter of a role: a stack slot in the entry block holding the
    /// next stage to fill (LLVM promotes it to a register).
    pub(super) fn stage_counter(&self, role: TileRole) -> R<PointerValue<'ctx>> {
        if let Some(p) = self.stage_counters.borrow().get(&role) {
            return Ok(*p);
        }
        let slot = self.counter_slot()?;
        self.stage_counters.borrow_mut().insert(role, slot);
        Ok(slot)
    }

    /// `cp.async` every run of the load `op` into the next stage's tile.
    pub(super) fn async_load(&mut self, op: &Op, role: TileRole, mask: bool) -> R<()> {
        let r = op.results[0];
        let t = self.ty(r).clone();
        let l = self.layout(&t);
        let n = l.regs();
        // From here until the loop that consumes the tiles ends, other
        // scratch must stay clear of the rings; readers of scratch that
        // overlapped them (a previous epilogue, in an outer loop) finish first.
        if self.scratch != self.ring_bytes {
            if !self.tma.roles.is_empty() {
                // What threads wrote there is ordered before the copy
                // engine's writes (`tma`).
                self.ptx_statement("fence.proxy.async.shared::cta;")?;
            }
            self.barrier()?;
            self.scratch = self.ring_bytes;
        }
        if self.tma.roles.contains_key(&role) {
            return self.tma_load(op, role);
        }
        if let Some(km) = self.tile_plan.k_major.get(&r).copied() {
            return self.async_load_k_major(op, role, mask, km);
        }
        let ptrs = self.regs(op.args[0], n)?;
        let masks = if mask {
            Some(self.regs(op.args[1], n)?)
        } else {
            None
        };
        let e = role.layout.kind.elem_bytes();
        let (w, cuts) = self.copy_runs(op.args[0], mask.then(|| op.args[1]), &l, e);
        let tile = self.next_tile(role)?;
        let bytes = e * w;
        let tile_addr = self.smem_u32(tile)?;
        let mut runs = vec![];
        let staged = role.operand == 1 && self.tile_plan.transposed.contains(&role.layout);
        // A thread's copies whose tile offsets differ by a constant (rows
        // 8 apart under the swizzle) share one computed offset: ptxas then
        // addresses them as one register plus immediates.
        let swizzle = (role.layout.wgmma && !staged).then(|| role.layout.swizzled(role.operand));
        let mut computed: Vec<([i64; 2], IntValue<'ctx>)> = vec![];
        for g0 in (0..n).step_by(w) {
            let rc = self.elem_coords(&l, g0, &t.shape)?;
            let k = swizzle.and(coord_consts(&l, g0, &t.shape));
            let near = k.and_then(|k| {
                computed.iter().find_map(|(k0, o)| {
                    let s = swizzle.as_ref()?;
                    s.shift(k[0] - k0[0], k[1] - k0[1]).map(|d| (*o, d))
                })
            });
            let off = if staged {
                self.staging_offset(&role.layout, rc[0], rc[1])?
            } else if let Some((o, d)) = near {
                self.b.build_int_add(o, self.i32c(d), "")?
            } else {
                let o = self.operand_offset(role, rc[0], rc[1])?;
                if let Some(k) = k {
                    computed.push((k, o));
                }
                o
            };
            let dst = self.b.build_int_add(tile_addr, off, "")?;
            let p = ptrs[g0].into_pointer_value();
            let m = masks.as_ref().map(|m| m[g0].into_int_value());
            let size = match (&cuts, m) {
                // A run the mask may cut short: its first elements.
                (Some(cuts), Some(first)) => {
                    let n = self.prefix_bytes(cuts, &rc, first, w, e)?;
                    let m = self.check_access_sized(op, p, n, Some(first))?;
                    self.b
                        .build_select(m.unwrap_or(first), n, self.i32c(0), "")?
                        .into_int_value()
                }
                _ => {
                    let m = self.check_access(op, p, bytes, m)?;
                    self.copy_size(m, bytes)?
                }
            };
            runs.push((dst, p, size));
        }
        self.record_copies(op, r, bytes, runs, tile)
    }

    /// The K-major copy of a `[K, N]` block (see `k_major_copy`): copy `c`
    /// of the `K / run * N` runs goes to thread `c % threads`; consecutive
    /// copies walk down a column, so neighbouring threads read neighbouring
    /// bytes. Each run's address is recomputed from the plan's root, plus
    /// the uniform offset the loops have added since (this thread's first
    /// register minus the root there).
    fn async_load_k_major(&mut self, op: &Op, role: TileRole, mask: bool, km: KMajor) -> R<()> {
        let r = op.results[0];
        let t = self.ty(r).clone();
        let (rows, cols) = (t.shape[0], t.shape[1]);
        let w = km.run;
        let bytes = w * role.layout.kind.elem_bytes();
        let per_col = rows / w;
        let copies = per_col * cols / self.threads;
        let i64t = self.ctx.i64_type();
        let delta = if km.root != op.args[0] {
            let l = self.layout(&t);
            let p0 = self.regs(op.args[0], l.regs())?[0].into_pointer_value();
            let c0 = self.elem_coords(&l, 0, &t.shape)?;
            let r0 = self.remat(km.root, &c0)?.into_pointer_value();
            let a = self.b.build_ptr_to_int(p0, i64t, "")?;
            let z = self.b.build_ptr_to_int(r0, i64t, "")?;
            Some(self.b.build_int_sub(a, z, "")?)
        } else {
            None
        };
        let tile = self.next_tile(role)?;
        let tile_addr = self.smem_u32(tile)?;
        let shift = per_col.trailing_zeros() as i64;
        let mut runs = vec![];
        for i in 0..copies {
            let c = self
                .b
                .build_int_add(self.tid, self.i32c((i * self.threads) as i64), "")?;
            let j = self.b.build_and(c, self.i32c(per_col as i64 - 1), "")?;
            let col = self.b.build_right_shift(c, self.i32c(shift), false, "")?;
            let row = self.b.build_int_mul(j, self.i32c(w as i64), "")?;
            let idx = [row, col];
            let mut p = self.remat(km.root, &idx)?.into_pointer_value();
            if let Some(d) = delta {
                // SAFETY: an offset the program itself added to this pointer.
                p = unsafe { self.b.build_gep(self.ctx.i8_type(), p, &[d], "")? };
            }
            let m = if mask {
                Some(self.remat(op.args[1], &idx)?.into_int_value())
            } else {
                None
            };
            let m = self.check_access(op, p, bytes, m)?;
            // The tile is `N x K`: row `col`, element `row`.
            let off = self.operand_offset(role, col, row)?;
            let dst = self.b.build_int_add(tile_addr, off, "")?;
            runs.push((dst, p, self.copy_size(m, bytes)?));
        }
        self.record_copies(op, r, bytes, runs, tile)
    }

    /// The source bytes of one copy: all of them, or none where masked off.
    fn copy_size(&self, m: Option<IntValue<'ctx>>, bytes: usize) -> R<IntValue<'ctx>> {
        Ok(match m {
            Some(m) => self
                .b
                .build_select(m, self.i32c(bytes as i64), self.i32c(0), "")?
                .into_int_value(),
            None => self.i32c(bytes as i64),
        })
    }

    /// Record a load's copies until they are issued; its value is the tile.
    fn record_copies(
        &mut self,
        op: &Op,
        r: Value,
        bytes: usize,
        runs: Vec<(IntValue<'ctx>, PointerValue<'ctx>, IntValue<'ctx>)>,
        tile: IntValue<'ctx>,
    ) -> R<()> {
        self.report_checks(op, crate::record::LOAD)?;
        self.pending_copies.borrow_mut().push(PendingCopies {
            value: r,
            bytes,
            runs,
            tma: None,
        });
        self.async_used.set(true);
        self.set(r, Reg::B(vec![tile.into()]));
        Ok(())
    }

    /// Record a bulk copy of tile value `r` until it is issued.
    pub(super) fn record_tma(&self, r: Value, t: super::tma::TmaIssue<'ctx>) {
        self.pending_copies.borrow_mut().push(PendingCopies {
            value: r,
            bytes: 0,
            runs: vec![],
            tma: Some(t),
        });
    }

    /// The barriers of the recorded copies, where there are some and all
    /// are bulk copies (`release::release_and_issue`).
    pub(super) fn pending_bulk_bars(&self) -> Option<Vec<IntValue<'ctx>>> {
        let p = self.pending_copies.borrow();
        if p.is_empty() {
            return None;
        }
        p.iter().map(|c| c.tma.as_ref().map(|t| t.bar())).collect()
    }

    /// Advance `role`'s stage counter; the byte offset of the stage it was at.
    fn next_tile(&mut self, role: TileRole) -> R<IntValue<'ctx>> {
        Ok(self.next_stage(role)?.1)
    }

    /// Advance `role`'s stage counter; the stage it was at and its tile's
    /// byte offset.
    pub(super) fn next_stage(&mut self, role: TileRole) -> R<(IntValue<'ctx>, IntValue<'ctx>)> {
        let slot = self.stage_counter(role)?;
        let i32t = self.ctx.i32_type();
        let stage = self.b.build_load(i32t, slot, "")?.into_int_value();
        let next = self.b.build_int_add(stage, self.i32c(1), "")?;
        let stages = self.ring_base[&role.layout].1;
        let wrap =
            self.b
                .build_int_compare(IntPredicate::EQ, next, self.i32c(stages as i64), "")?;
        let next = self
            .b
            .build_select(wrap, self.i32c(0), next, "")?
            .into_int_value();
        self.b.build_store(slot, next)?;
        Ok((stage, self.tile_offset(role, stage)?))
    }

    /// Issue copies still recorded where no dot issued them (before control
    /// flow, at a region's end). A barrier first: with `num_stages` buffers the
    /// target may be the tile another warp's previous dot is still reading.
    pub(super) fn flush_copies_guarded(&self) -> R<()> {
        if self.pending_copies.borrow().is_empty() {
            return Ok(());
        }
        self.barrier()?;
        self.flush_copies()
    }

    /// Issue the recorded copies, one commit group per load.
    pub(super) fn flush_copies(&self) -> R<()> {
        let pending = std::mem::take(&mut *self.pending_copies.borrow_mut());
        if !pending.is_empty() {
            let mut landed = self.landed.borrow_mut();
            landed.issued = true;
            landed.issued_values.extend(pending.iter().map(|p| p.value));
        }
        let global = self.ctx.ptr_type(AddressSpace::from(1u16));
        for p in pending {
            if let Some(t) = &p.tma {
                self.issue_tma(t)?;
                continue;
            }
            let cache = if p.bytes == 16 { "cg" } else { "ca" };
            let text = format!(
                "cp.async.{cache}.shared.global [$0], [$1], {}, $2;",
                p.bytes
            );
            for (dst, src, size) in p.runs {
                let src = self.b.build_address_space_cast(src, global, "")?;
                self.ptx_asm(&text, "r,l,r", &[dst.into(), src.into(), size.into()])?;
            }
            self.ptx_statement("cp.async.commit_group;")?;
        }
        Ok(())
    }

    /// Wait until the tiles `a` and `b` have landed and are visible to every
    /// thread (and, for `wgmma`, to the async proxy that reads them), then
    /// issue the copies recorded since (the next tiles). Issuing them after
    /// an in-flight `wgmma` group instead was slower on the H100, and on the
    /// H200 also where it saves the in-flight stage (bench/NOTES.md).
    /// A staged B (`transpose`) is transposed first; the offset of its
    /// K-major tile is returned for the dot to read instead of `b`'s.
    pub(super) fn wait_tiles(
        &self,
        l: &MmaLayout,
        a: Value,
        b: Value,
        async_proxy: bool,
    ) -> R<Option<IntValue<'ctx>>> {
        let own = self
            .pending_copies
            .borrow()
            .iter()
            .any(|p| p.value == a || p.value == b);
        let transposed = self.tile_plan.transposed.contains(l);
        {
            // Both tiles shown landed by an earlier wait of this body (A
            // may be fixed or in registers), and nothing to issue: the
            // earlier barrier serves.
            let landed = self.landed.borrow();
            // Not carried, and not copied in this body: registers, or a
            // tile copied before the loop (older than every group waited for).
            let fixed = |v: &Value| {
                !self.tile_plan.carried_from.contains_key(v) && !landed.issued_values.contains(v)
            };
            let ready = |v: &Value| landed.tiles.contains(v);
            if !own
                && !transposed
                && self.pending_copies.borrow().is_empty()
                && (!async_proxy || landed.fenced)
                && ready(&b)
                && (ready(&a) || fixed(&a))
            {
                return Ok(None);
            }
        }
        if !own && !transposed && (self.wait_bulk_only(a, b)? || self.release_and_issue(a, b)?) {
            return Ok(None);
        }
        if own {
            // Loaded in this region (no pipelining): issue, then wait for all.
            self.flush_copies()?;
        }
        let plan = &self.tile_plan;
        // An A that is not carried by the loop (attention's `q`, loaded once
        // before it, or register fragments) waits for nothing: B's distance
        // decides.
        let a_fixed = !plan.carried_from.contains_key(&a) && plan.carried_from.contains_key(&b);
        let d = if a_fixed {
            plan.distance(b)
        } else {
            plan.distance(a).min(plan.distance(b))
        };
        let per_iteration = plan
            .loads_per_iteration
            .get(if a_fixed { &b } else { &a })
            .copied()
            .unwrap_or(0);
        let pending = if own || d == 0 {
            0
        } else {
            (d - 1) * per_iteration
        };
        // Bulk-copied tiles wait on their barriers; `cp.async` groups only
        // where some stream still uses them.
        if self.tma.roles.is_empty() || self.tma.mixed {
            self.ptx_statement(&format!("cp.async.wait_group {pending};"))?;
        }
        let bulk: Vec<Value> = [a, b]
            .into_iter()
            .filter(|v| self.is_tma_tile(*v) && !self.landed.borrow().tiles.contains(v))
            .collect();
        for &v in &bulk {
            self.wait_tma(v)?;
        }
        // Generic-proxy writes (`cp.async`, stores) reach `wgmma`'s async
        // proxy through a fence; tiles the copy engine wrote are in that
        // proxy already, and their barrier's wait made them visible.
        let fence = async_proxy && !(self.is_tma_tile(a) && self.is_tma_tile(b));
        if fence {
            self.ptx_statement("fence.proxy.async.shared::cta;")?;
        }
        self.barrier()?;
        {
            let mut landed = self.landed.borrow_mut();
            if !own && d > 0 && !landed.issued {
                let done: Vec<Value> = landed
                    .args
                    .iter()
                    .copied()
                    .filter(|v| {
                        self.tiles().contains_key(v)
                            && plan.distance(*v) >= d
                            && !self.is_tma_tile(*v)
                    })
                    .collect();
                landed.tiles.extend(done);
                landed.tiles.extend(&bulk);
                landed.fenced |= fence;
                landed.before_loop_seen |= fence;
            }
        }
        let b_tile = if self.tile_plan.transposed.contains(l) {
            let staging = self.raw(b)?[0].into_int_value();
            Some(self.transpose_b(l, staging)?)
        } else {
            None
        };
        self.flush_copies()?;
        Ok(b_tile)
    }

    /// The wait of a dot whose shared operands are all bulk-copied (or
    /// landed before), with no copy to issue: each thread waiting on a
    /// tile's barrier sees the copy engine's writes, which `wgmma` reads in
    /// the same (async) proxy, so there is no group to wait for, no proxy
    /// fence and no block barrier (attention's `p @ v`, whose `v` the loop's
    /// first wait left in flight). Also a dot with nothing to wait for:
    /// its tiles bulk copies waited for earlier in the body, or loaded
    /// before the loop and seen landed (`operand_state`; the backward's
    /// `dq` kernel through descriptors: `do @ v.T` and `ds @ k` after
    /// `q @ k.T` waited for `k`). False where the general wait is needed.
    fn wait_bulk_only(&self, a: Value, b: Value) -> R<bool> {
        if !self.pending_copies.borrow().is_empty() {
            return Ok(false);
        }
        let waits: Vec<Value> = {
            let landed = self.landed.borrow();
            let state = [a, b].map(|v| self.operand_state(&landed, v));
            let bulk = state.contains(&Operand::Bulk);
            let done = |v: &Value| landed.tiles.contains(v) || !self.tiles().contains_key(v);
            let ok = if bulk {
                state
                    .iter()
                    .zip([a, b])
                    .all(|(s, v)| *s != Operand::Other || done(&v))
            } else {
                state.iter().all(|s| *s == Operand::Ready)
            };
            if !ok {
                return Ok(false);
            }
            Operand::bulk_of([a, b], state)
        };
        for &v in &waits {
            self.wait_tma(v)?;
        }
        self.landed.borrow_mut().tiles.extend(waits);
        Ok(true)
    }

    /// Where dot operand `v` stands at a wait: a bulk copy not waited for
    /// yet; ready with no wait (registers, a bulk copy waited for earlier,
    /// or a tile loaded before the loop once `settle_bulk_loop` or a
    /// general wait of this body let those land, visible to every thread
    /// and to the async proxy); or neither (the general wait).
    pub(super) fn operand_state(&self, landed: &Landed, v: Value) -> Operand {
        if !self.tiles().contains_key(&v) {
            return Operand::Ready;
        }
        let tma = self.is_tma_tile(v);
        let seen = landed.tiles.contains(&v);
        let before_loop =
            !self.tile_plan.carried_from.contains_key(&v) && !landed.issued_values.contains(&v);
        match (tma, seen) {
            (true, false) => Operand::Bulk,
            (true, true) => Operand::Ready,
            (false, _) if (landed.settled || landed.before_loop_seen) && before_loop => {
                Operand::Ready
            }
            _ => Operand::Other,
        }
    }

    /// After a loop that carried tiles: let the last (masked-off) copies land,
    /// then give the rings back to ordinary scratch.
    pub(super) fn retire_tiles(&mut self, op: &Op) -> R<()> {
        if !op.regions[0]
            .args
            .iter()
            .any(|a| self.tiles().contains_key(a))
        {
            return Ok(());
        }
        // The stream's last fills (prefetches no iteration used) land
        // before their stages become scratch.
        for (a, &r) in op.regions[0].args.iter().skip(1).zip(&op.results) {
            if self.is_tma_tile(*a) {
                self.wait_tma(r)?;
            }
        }
        // A fixed A tile may still be read by a later loop.
        let last = op.regions[0].args.first().copied();
        let release = self.tile_plan.fixed_a.is_empty()
            || (last.is_some() && last == self.tile_plan.fixed_a_last);
        if release {
            // A bulk-copied A tile loaded before the loop (never carried,
            // its stage never refilled) has landed too, even if the loop
            // ran no iteration and so never waited for it.
            let mut inside: HashSet<Value> = op.regions[0].args.iter().copied().collect();
            let mut operands = vec![];
            tilebook_tir::walk_ops(&op.regions[0], &mut |o| {
                inside.extend(&o.results);
                for r in &o.regions {
                    inside.extend(&r.args);
                }
                if let (OpKind::Dot { .. }, Some(&a)) = (&o.kind, o.args.first()) {
                    operands.push(a);
                }
            });
            let mut fixed: Vec<Value> = vec![];
            for a in operands {
                if self.is_tma_tile(a) && !inside.contains(&a) && !fixed.contains(&a) {
                    fixed.push(a);
                }
            }
            for a in fixed {
                self.wait_tma(a)?;
            }
        }
        self.ptx_statement("cp.async.wait_all;")?;
        self.barrier()?;
        if release {
            self.scratch = 0;
        }
        Ok(())
    }

    pub(super) fn tiles(&self) -> &HashMap<Value, TileRole> {
        &self.tile_plan.roles
    }

    /// Lay out the stage rings at the start of shared memory, one per MMA
    /// layout with tiles; returns the bytes they take (scratch starts there).
    pub(super) fn place_rings(&mut self) -> usize {
        let mut at = 0;
        for (l, stages) in ring_order(&self.tile_plan.stages) {
            self.ring_base.insert(l, (at, stages));
            at += ring_bytes(&l, stages, &self.tile_plan);
        }
        at
    }
}

/// The constant parts of register `r`'s coordinates in a 2-D block of
/// layout `l` (what `Gen::elem_coords` adds to the thread's own part), where
/// the coordinates have that form.
fn coord_consts(l: &Layout, r: usize, shape: &[usize]) -> Option<[i64; 2]> {
    let pow2 = !l.replicated() && l.is_pow2() && shape.iter().all(|d| d.is_power_of_two());
    if !pow2 || shape.len() != 2 {
        return None;
    }
    let c = l.base(r);
    let cols = shape[1];
    let row = (c >> cols.trailing_zeros()) & (shape[0] - 1);
    Some([row as i64, (c & (cols - 1)) as i64])
}

/// The rings in the order they are placed.
fn ring_order<S: std::hash::BuildHasher>(
    stages: &HashMap<MmaLayout, usize, S>,
) -> Vec<(MmaLayout, usize)> {
    let mut layouts: Vec<(MmaLayout, usize)> = stages.iter().map(|(l, s)| (*l, *s)).collect();
    // Every field: two rings of equal shape (attention's `q @ k.T` and
    // `p @ v` at D = BLOCK_N) must not be placed in hash-map order.
    layouts.sort_by_key(|(l, _)| {
        (
            l.m, l.n, l.k, l.wm, l.wn, l.kind, l.wgmma, l.kt_b, l.kcol_b, l.a_regs,
        )
    });
    layouts
}

/// Shared bytes one ring takes (rings start at 1024-byte boundaries), with
/// the two K-major tiles after it where its B is transposed.
fn ring_bytes(l: &MmaLayout, stages: usize, plan: &TilePlan) -> usize {
    let extra = if plan.transposed.contains(l) {
        super::transpose::transposed_bytes(l)
    } else {
        0
    };
    if plan.fixed_a.contains(l) {
        let b = plan.count(l, 1) * b_tile_bytes(l);
        return plan.count(l, 0) * fixed_a_bytes(l) + (stages * b).next_multiple_of(1024) + extra;
    }
    (stages * stage_bytes(l, plan)).next_multiple_of(1024) + extra
}

/// Bytes of one stage of a ring that is not `fixed_a`: its A tiles, then its
/// B tiles (under `wgmma` each a multiple of 1024 bytes).
pub(super) fn stage_bytes(l: &MmaLayout, plan: &TilePlan) -> usize {
    plan.count(l, 0) * l.b_base() + plan.count(l, 1) * b_tile_bytes(l)
}

/// Bytes of one A tile of a `fixed_a` ring (1024-aligned, as B's follow).
fn fixed_a_bytes(l: &MmaLayout) -> usize {
    l.b_base().next_multiple_of(1024)
}

/// Bytes of one stage's B tile.
fn b_tile_bytes(l: &MmaLayout) -> usize {
    l.smem_bytes() - l.b_base()
}

/// Shared bytes all rings take, with `stages` in place of the plan's.
pub(super) fn rings_total(stages: &HashMap<MmaLayout, usize>, plan: &TilePlan) -> usize {
    stages.iter().map(|(l, s)| ring_bytes(l, *s, plan)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mma::MmaKind;

    /// Two rings of one shape (attention's `q @ k.T` and `p @ v` when
    /// `BLOCK_N = D`) are placed in the same order whatever the map's
    /// iteration order (it once followed it, so the PTX changed between
    /// compiles).
    #[test]
    fn rings_of_equal_shape_are_placed_in_a_fixed_order() {
        let first = MmaLayout {
            m: 128,
            n: 64,
            k: 64,
            wm: 4,
            wn: 1,
            kind: MmaKind::F16,
            wgmma: true,
            kt_b: true,
            kcol_b: false,
            a_regs: false,
        };
        let second = MmaLayout {
            kt_b: false,
            a_regs: true,
            ..first
        };
        let orders: HashSet<Vec<bool>> = (0..32)
            .map(|_| {
                let mut m = HashMap::with_hasher(std::hash::RandomState::new());
                m.insert(first, 3);
                m.insert(second, 3);
                ring_order(&m).iter().map(|(l, _)| l.a_regs).collect()
            })
            .collect();
        assert_eq!(orders.len(), 1, "{orders:?}");
    }
}
