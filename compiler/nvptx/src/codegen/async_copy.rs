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
//! Each operand role (A or B of a given MMA layout) has its own stage
//! counter; prologue and loop issue A and B in the same order, so the two
//! counters agree. The copies of a load are recorded when the load is
//! generated and issued later: by a dot in the same region right after its
//! wait and barrier (when every warp has finished the previous dot, so the
//! buffer it read, `distance + 1` tiles back, is free), or before any nested
//! region or at the region's end. Each load commits one group; a dot whose
//! operands were prefetched `d` iterations ago waits with
//! `cp.async.wait_group (d - 1) * G`, `G` being the loads per iteration.

use super::*;
use crate::mma::MmaLayout;

/// Which operand of which tensor-core layout a tile value is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct TileRole {
    pub layout: MmaLayout,
    /// 0 for A, 1 for B (2 names the counter of a layout's transposed B
    /// tiles, see `transpose`).
    pub operand: usize,
}

/// The `cp.async` copies of one tile load, recorded until they are issued.
pub(super) struct PendingCopies<'ctx> {
    value: Value,
    bytes: usize,
    /// (shared address, global pointer, source bytes) per run.
    runs: Vec<(IntValue<'ctx>, PointerValue<'ctx>, IntValue<'ctx>)>,
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
    issued_values: HashSet<Value>,
    /// Tiles known landed and visible to all threads.
    tiles: HashSet<Value>,
    /// The wait that established them fenced the async proxy (`wgmma`).
    fenced: bool,
}

impl Landed {
    pub(super) fn for_body(args: &[Value]) -> Landed {
        Landed {
            args: args.to_vec(),
            ..Landed::default()
        }
    }
}

/// A K-major copy (see `Gen::k_major_copy`).
#[derive(Copy, Clone, Debug)]
pub(super) struct KMajor {
    root: Value,
    /// Bytes (elements) per run.
    run: usize,
}

/// What the dots need to know about the loops that carry tiles.
#[derive(Default)]
pub(super) struct TilePlan {
    pub roles: HashMap<Value, TileRole>,
    /// Loop argument -> the value the body yields for it.
    carried_from: HashMap<Value, Value>,
    /// Loop argument -> tile loads at the top level of that loop's body.
    loads_per_iteration: HashMap<Value, usize>,
    /// Stages of each layout's ring.
    pub stages: HashMap<MmaLayout, usize>,
    /// Loads (by result) copied as K-major runs down the columns of their
    /// `[K, N]` block (fp8's B under `wgmma`; see `async_load_k_major`).
    pub k_major: HashMap<Value, KMajor>,
    /// Layouts whose fp8 B tiles are staged as loaded and transposed by
    /// each dot (b not pre-transposed; see `transpose`).
    pub transposed: HashSet<MmaLayout>,
    /// `wgmma` dots (by result) whose group stays in flight into the next
    /// iteration, and the loop results that must wait for it (see `wgmma`).
    pub inflight: HashSet<Value>,
    pub inflight_results: HashSet<Value>,
    /// `b.T` operands of K-major-B layouts (`MmaLayout::kt_b`) -> `b`: the
    /// tile is `b`'s, copied as loaded, and the transpose is virtual.
    pub b_source: HashMap<Value, Value>,
    /// Layouts whose only A tile is loaded once, before the loops whose dots
    /// read it (attention's `q`): their ring holds that one A tile and then
    /// `stages` B tiles, and the rings are kept to the end of the kernel.
    pub fixed_a: HashSet<MmaLayout>,
}

impl TilePlan {
    /// The value whose tile a dot reads for its operand `v`.
    pub(super) fn tile_of(&self, v: Value) -> Value {
        *self.b_source.get(&v).unwrap_or(&v)
    }

    /// How many iterations ago the tile `v` was loaded (0: in this body).
    pub(super) fn distance(&self, v: Value) -> usize {
        let mut d = 0;
        let mut v = v;
        while let Some(&y) = self.carried_from.get(&v) {
            d += 1;
            v = y;
            if d > 16 {
                break;
            }
        }
        d
    }
}

impl<'ctx> Gen<'ctx, '_> {
    /// Decide which values become tile values: dot operands whose every
    /// producer (through loop arguments, inits and yields) is an eligible load.
    pub(super) fn plan_tiles(&self) -> TilePlan {
        let mut role: HashMap<Value, TileRole> = HashMap::new();
        let mut loops: Vec<&Op> = vec![];
        // (A, B) of each dot; A is `None` where it comes from registers
        // (`MmaLayout::a_regs`).
        let mut dots: Vec<(Option<Value>, Value)> = vec![];
        let mut b_source: HashMap<Value, Value> = HashMap::new();
        let mut uses: HashMap<Value, usize> = HashMap::new();
        tilebook_tir::walk_ops(&self.k.body, &mut |op| {
            for &a in &op.args {
                *uses.entry(a).or_default() += 1;
            }
        });
        // Values two dots would read as operands of different layouts (an A
        // shared by a dot with a `kcol_b` B and one without): one tile
        // cannot serve both rings, so they stay in registers.
        let mut conflicting: HashSet<Value> = HashSet::new();
        tilebook_tir::walk_ops(&self.k.body, &mut |op| match op.kind {
            OpKind::Dot { .. } => {
                if let Some(&layout) = self.mma.get(&op.results[0]) {
                    // A K-major B layout reads the tile of the block that
                    // `b.T` transposes, when that block is only transposed.
                    let mut b = op.args[1];
                    if layout.kt_b {
                        let src = self
                            .defs
                            .get(&b)
                            .filter(
                                |d| matches!(&d.kind, OpKind::Trans(p) if p.as_slice() == [1, 0]),
                            )
                            .map(|d| d.args[0])
                            .filter(|s| uses.get(s) == Some(&1));
                        if let Some(src) = src {
                            if self.half_regs.contains(&b) {
                                b_source.insert(b, src);
                                b = src;
                            }
                        }
                    }
                    let a = (!layout.a_regs).then_some(op.args[0]);
                    dots.push((a, b));
                    for (operand, v) in [(0, op.args[0]), (1, b)] {
                        if operand == 0 && layout.a_regs {
                            continue;
                        }
                        let fp8 = layout.wgmma && layout.kind.is_fp8();
                        let kt = operand == 1 && b_source.contains_key(&op.args[1]);
                        if kt
                            || self.half_regs.contains(&v)
                            || (fp8 && self.fp8_operands.contains(&v))
                        {
                            let r = TileRole { layout, operand };
                            if role.get(&v).is_some_and(|old| *old != r) {
                                conflicting.insert(v);
                            }
                            role.insert(v, r);
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
        // Remove values with an ineligible producer, and everything linked
        // to them. A layout whose B tiles are staged for transposing copies
        // every B load of it by rows, also loads that were eligible only as
        // K-major copies; those that cannot be copied by rows are removed
        // too, and the plan is made again.
        let all_roles = role;
        // Pipelined tiles hold one A and one B load per layout and loop
        // iteration: where a loop loads two tiles for the same operand of
        // one layout (two dots sharing A, say), the dots gave wrong sums on
        // the GPU (H100, session 17), so those loads stay off the tile path
        // and their dots run from registers.
        // A nested loop's prologue (the pipelining pass's loads of its first
        // `distance` tiles, which only start that loop's carries) is not
        // such a case: at the top level it is never counted, and a
        // persistent kernel's K loop inside its tile loop needs it.
        let mut unfit: HashSet<Value> = conflicting;
        for l in &loops {
            let body = &l.regions[0].ops;
            let starts: HashSet<Value> = body
                .iter()
                .filter(|op| op.kind == OpKind::For)
                .flat_map(|op| op.args.iter().skip(3).copied())
                .collect();
            let mut per_role: HashMap<TileRole, Vec<Value>> = HashMap::new();
            for op in body {
                if !matches!(op.kind, OpKind::Load { .. })
                    || op
                        .results
                        .first()
                        .is_some_and(|v| starts.contains(v) && only_starts_loops(body, *v))
                {
                    continue;
                }
                if let Some((v, r)) = op
                    .results
                    .first()
                    .and_then(|v| Some((*v, all_roles.get(v)?)))
                {
                    per_role.entry(*r).or_default().push(v);
                }
            }
            for vs in per_role.into_values().filter(|vs| vs.len() > 1) {
                unfit.extend(vs);
            }
        }
        let (role, mut plan) = loop {
            let mut role = all_roles.clone();
            let (role_now, plan) = self.plan_once(&mut role, &loops, &dots, &links, &unfit);
            let staged_unfit: Vec<Value> = role_now
                .iter()
                .filter(|(v, r)| {
                    r.operand == 1
                        && plan.transposed.contains(&r.layout)
                        && self
                            .defs
                            .get(v)
                            .is_some_and(|op| !self.row_copy_ok(op, **r))
                })
                .map(|(v, _)| *v)
                .collect();
            if staged_unfit.is_empty() {
                break (role_now, plan);
            }
            unfit.extend(staged_unfit);
        };
        for l in &loops {
            let body = &l.regions[0];
            let loads = body
                .ops
                .iter()
                .filter(|op| {
                    matches!(op.kind, OpKind::Load { .. }) && role.contains_key(&op.results[0])
                })
                .count();
            for (arg, _, yielded) in links(l) {
                if role.contains_key(&arg) {
                    plan.carried_from.insert(arg, yielded);
                    plan.loads_per_iteration.insert(arg, loads);
                }
            }
        }
        for &(a, b) in &dots {
            let ra = match a {
                Some(a) => role.get(&a).copied(),
                None => role.get(&b).copied(),
            };
            if let (Some(ra), true) = (ra, role.contains_key(&b)) {
                let da = a.map_or(0, |a| plan.distance(a));
                let d = da.max(plan.distance(b)).max(1);
                let s = plan.stages.entry(ra.layout).or_insert(2);
                *s = (*s).max(d + 1);
            }
        }
        plan.b_source = b_source
            .into_iter()
            .filter(|(_, src)| role.contains_key(src))
            .collect();
        // Layouts with a single A tile, a load outside every loop (the
        // loops' dots read it in every iteration).
        let in_loops: HashSet<Value> = loops
            .iter()
            .flat_map(|l| {
                let mut inside = vec![];
                tilebook_tir::walk_ops(&l.regions[0], &mut |op| {
                    inside.extend(op.results.iter().copied())
                });
                inside
            })
            .collect();
        let mut a_loads: HashMap<MmaLayout, (usize, bool)> = HashMap::new();
        for (v, r) in &role {
            if r.operand == 0 {
                let e = a_loads.entry(r.layout).or_insert((0, true));
                e.0 += 1;
                e.1 &= self.defs.contains_key(v) && !in_loops.contains(v);
            }
        }
        plan.fixed_a = a_loads
            .into_iter()
            .filter(|(l, (n, outside))| *n == 1 && *outside && plan.stages.contains_key(l))
            .map(|(l, _)| l)
            .collect();
        plan.roles = role;
        plan
    }

    /// One pass of `plan_tiles`: drop roles whose producer is ineligible
    /// (or in `unfit`) with everything linked to them, then decide which B
    /// tiles are copied K-major and which layouts are staged.
    #[allow(clippy::type_complexity)]
    fn plan_once(
        &self,
        role: &mut HashMap<Value, TileRole>,
        loops: &[&Op],
        dots: &[(Option<Value>, Value)],
        links: &dyn Fn(&Op) -> Vec<(Value, Value, Value)>,
        unfit: &HashSet<Value>,
    ) -> (HashMap<Value, TileRole>, TilePlan) {
        let mut bad: HashSet<Value> = role
            .keys()
            .copied()
            .filter(|v| {
                unfit.contains(v)
                    || match self.defs.get(v) {
                        Some(op) => !self.async_eligible(op, role[v]),
                        None => !loops.iter().any(|l| l.regions[0].args[1..].contains(v)),
                    }
            })
            .collect();
        loop {
            let before = bad.len();
            // A dot takes both operands from tiles or neither.
            for &(a, b) in dots {
                let a_bad = a.is_some_and(|a| bad.contains(&a) || !role.contains_key(&a));
                if a_bad || bad.contains(&b) || !role.contains_key(&b) {
                    bad.extend(a);
                    bad.insert(b);
                }
            }
            for l in loops {
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
        let mut plan = TilePlan::default();
        for (v, r) in role.iter() {
            if let Some(op) = self.defs.get(v) {
                match self.k_major_copy(op, *r) {
                    Some(km) => {
                        plan.k_major.insert(*v, km);
                    }
                    None if r.layout.k_major_b(r.operand) && r.layout.kind.is_fp8() => {
                        plan.transposed.insert(r.layout);
                    }
                    None => {}
                }
            }
        }
        // One ring holds one kind of B tile: where some B load of a layout
        // must be staged, all of them are.
        plan.k_major
            .retain(|v, _| !plan.transposed.contains(&role[v].layout));
        (std::mem::take(role), plan)
    }

    /// Whether `op` is a load that `cp.async` can perform for a tile of `role`:
    /// runs of at least two halves, contiguous and aligned, under a mask that
    /// is uniform over each run, with zero (or nothing) where masked off.
    fn async_eligible(&self, op: &Op, role: TileRole) -> bool {
        let OpKind::Load { other, .. } = op.kind else {
            return false;
        };
        let t = self.ty(op.results[0]);
        if t.shape.len() != 2 {
            return false;
        }
        let cols = if role.operand == 0 || (role.layout.kt_b && !role.layout.kcol_b) {
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
        if role.layout.k_major_b(role.operand) && self.k_major_copy(op, role).is_some() {
            return true;
        }
        self.row_copy_ok(op, role)
    }

    /// Whether `op`'s tile can be copied as loaded, row by row (B of a
    /// K-major layout then transposed by the dot): runs of 4, 8 or 16
    /// bytes, contiguous and aligned, under a mask uniform over each run.
    fn row_copy_ok(&self, op: &Op, role: TileRole) -> bool {
        let OpKind::Load { mask, .. } = op.kind else {
            return false;
        };
        // A K-major B tile is copied by rows only where the dot transposes
        // the staged rows (fp8); `kcol_b` tiles have no such path.
        if role.layout.k_major_b(role.operand)
            && (role.layout.kcol_b || !self.transpose_ok(&role.layout))
        {
            return false;
        }
        let t = self.ty(op.results[0]);
        let cols = if role.operand == 0 || (role.layout.kt_b && !role.layout.kcol_b) {
            role.layout.k
        } else {
            role.layout.n
        };
        let l = self.layout(t);
        let m = if mask { Some(op.args[1]) } else { None };
        let e = role.layout.kind.elem_bytes();
        let w = self.vector_width(op.args[0], m, &l, e);
        // `cp.async` moves 4, 8 or 16 bytes.
        w * e >= 4 && l.is_pow2() && !l.replicated() && cols % w == 0
    }

    /// How a K-major tile (`[K, N]` block, K contiguous in memory) is copied:
    /// runs of `run` bytes down each column, whose addresses are recomputed
    /// from `root` (see `k_major_root`) at any element, under a mask that is
    /// uniform over each run and can be recomputed too.
    fn k_major_copy(&self, op: &Op, role: TileRole) -> Option<KMajor> {
        let OpKind::Load { mask, .. } = op.kind else {
            return None;
        };
        let l = role.layout;
        if !l.k_major_b(role.operand) || self.ty(op.results[0]).shape != [l.k, l.n] {
            return None;
        }
        let root = self.k_major_root(op.args[0], 0)?;
        if mask && !self.remat_shape_ok(op.args[1], &mut 64) {
            return None;
        }
        let p = self.axis0.get(&op.args[0]).copied()?;
        let m = mask.then(|| self.axis0.get(&op.args[1]).copied());
        // Runs of 16, 8 or 4 bytes (`cp.async`'s sizes), in elements.
        let e = l.kind.elem_bytes();
        [16usize / e, 8 / e, 4 / e]
            .into_iter()
            .find(|&w| {
                p.contiguity >= w as u64
                    && p.divisibility >= (w * e) as u64
                    && m.is_none_or(|m| m.is_some_and(|m| m.constancy >= w as u64))
                    && l.k.is_multiple_of(w)
                    && (l.k / w * l.n).is_multiple_of(self.threads)
                    && (l.k / w).is_power_of_two()
            })
            .map(|run| KMajor { root, run })
    }

    /// Dots (by result) whose B is an fp16/bf16 `[K, N]` block with
    /// contiguous columns and scattered rows (`b` column-major, as
    /// `matmul(a, w.T)` passes it): each load producing it, through loop
    /// arguments, has pointers contiguous down dimension 0 only. Their
    /// layouts take `kcol_b` tiles (see `MmaLayout::kcol_b`).
    pub(super) fn column_b_dots(&self) -> HashSet<Value> {
        let mut out = HashSet::new();
        tilebook_tir::walk_ops(&self.k.body, &mut |op| {
            if matches!(op.kind, OpKind::Dot { .. }) && self.column_block(op.args[1], 0) {
                out.insert(op.results[0]);
            }
        });
        out
    }

    fn column_block(&self, v: Value, depth: usize) -> bool {
        if depth > 4 {
            return false;
        }
        if let Some(op) = self.defs.get(&v) {
            let t = self.ty(v);
            let down = self.axis0.get(&op.args[0]).map(|a| a.contiguity);
            let across = self.axis.get(&op.args[0]).map(|a| a.contiguity);
            return matches!(op.kind, OpKind::Load { .. })
                && t.shape.len() == 2
                && matches!(t.dtype(), Some(DType::F16 | DType::BF16))
                && down.is_some_and(|c| c >= 2)
                && across == Some(1);
        }
        // A loop argument: its initial and yielded values.
        let mut links = vec![];
        tilebook_tir::walk_ops(&self.k.body, &mut |op| {
            if op.kind != OpKind::For {
                return;
            }
            let region = &op.regions[0];
            if let Some(i) = region.args.iter().skip(1).position(|a| *a == v) {
                let y = region.ops.last().and_then(|y| y.args.get(i).copied());
                links.push((op.args.get(3 + i).copied(), y));
            }
        });
        !links.is_empty()
            && links.iter().all(|&(init, y)| {
                [init, y]
                    .into_iter()
                    .all(|x| x.is_some_and(|x| self.column_block(x, depth + 1)))
            })
    }

    /// A value from which the pointer block `v` can be recomputed at any
    /// element: `v` itself when `remat` can, or, for a pointer that loops
    /// advance by uniform offsets, the recomputable block they started from
    /// (the offset so far is then read off one register, `async_load_k_major`).
    fn k_major_root(&self, v: Value, depth: usize) -> Option<Value> {
        if depth > 8 {
            return None;
        }
        if self.remat_shape_ok(v, &mut 64) {
            return Some(v);
        }
        let uniform = |x: Value| {
            !self.ty(x).is_block()
                || matches!(
                    self.defs.get(&x).map(|o| &o.kind),
                    Some(OpKind::Splat | OpKind::Const(_))
                )
        };
        if let Some(op) = self.defs.get(&v) {
            return (op.kind == OpKind::AddPtr && uniform(op.args[1]))
                .then(|| self.k_major_root(op.args[0], depth + 1))
                .flatten();
        }
        let mut found = None;
        tilebook_tir::walk_ops(&self.k.body, &mut |op| {
            if op.kind != OpKind::For || found.is_some() {
                return;
            }
            let region = &op.regions[0];
            let Some(i) = region.args.iter().skip(1).position(|a| *a == v) else {
                return;
            };
            let (Some(&init), Some(y)) = (op.args.get(3 + i), region.ops.last()) else {
                return;
            };
            let Some(mut x) = y.args.get(i).copied() else {
                return;
            };
            // Every iteration adds uniform offsets to the argument itself.
            for _ in 0..8 {
                if x == v {
                    found = Some(init);
                    return;
                }
                match self.defs.get(&x) {
                    Some(d) if d.kind == OpKind::AddPtr && uniform(d.args[1]) => x = d.args[0],
                    _ => return,
                }
            }
        });
        self.k_major_root(found?, depth + 1)
    }

    /// Whether `remat` can recompute `v` at any element once the scalars it
    /// uses exist (the planning-time form of `can_remat`).
    fn remat_shape_ok(&self, v: Value, budget: &mut usize) -> bool {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        if !self.ty(v).is_block() {
            return true;
        }
        let Some(op) = self.defs.get(&v).copied() else {
            return false;
        };
        match &op.kind {
            OpKind::Const(_) | OpKind::Arange(..) | OpKind::Splat => true,
            OpKind::ExpandDims(_) | OpKind::Reshape | OpKind::Broadcast | OpKind::Trans(_) => {
                self.remat_shape_ok(op.args[0], budget)
            }
            k if k.is_elementwise() => op.args.iter().all(|&a| self.remat_shape_ok(a, budget)),
            _ => false,
        }
    }

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
        let s = l.swizzled(role.operand);
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
    fn tile_offset(&self, role: TileRole, stage: IntValue<'ctx>) -> R<IntValue<'ctx>> {
        let l = role.layout;
        if self.tile_plan.fixed_a.contains(&l) {
            let base = self.ring_base[&l].0;
            if role.operand == 0 {
                return Ok(self.i32c(base as i64));
            }
            let size = self.i32c(b_tile_bytes(&l) as i64);
            let off = self.b.build_int_mul(stage, size, "")?;
            let first = base + fixed_a_bytes(&l);
            return Ok(self.b.build_int_add(off, self.i32c(first as i64), "")?);
        }
        let size = self.i32c(l.smem_bytes() as i64);
        let off = self.b.build_int_mul(stage, size, "")?;
        let base = self.ring_base[&l].0 + if role.operand == 1 { l.b_base() } else { 0 };
        Ok(self.b.build_int_add(off, self.i32c(base as i64), "")?)
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
            self.barrier()?;
            self.scratch = self.ring_bytes;
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
        let w = self.vector_width(op.args[0], mask.then(|| op.args[1]), &l, e);
        let tile = self.next_tile(role)?;
        let bytes = e * w;
        let tile_addr = self.smem_u32(tile)?;
        let mut runs = vec![];
        let staged = role.operand == 1 && self.tile_plan.transposed.contains(&role.layout);
        for g0 in (0..n).step_by(w) {
            let rc = self.elem_coords(&l, g0, &t.shape)?;
            let off = if staged {
                self.staging_offset(&role.layout, rc[0], rc[1])?
            } else {
                self.operand_offset(role, rc[0], rc[1])?
            };
            let dst = self.b.build_int_add(tile_addr, off, "")?;
            let p = ptrs[g0].into_pointer_value();
            let m = masks.as_ref().map(|m| m[g0].into_int_value());
            let m = self.check_access(op, p, bytes, m)?;
            runs.push((dst, p, self.copy_size(m, bytes)?));
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
        });
        self.async_used.set(true);
        self.set(r, Reg::B(vec![tile.into()]));
        Ok(())
    }

    /// Advance `role`'s stage counter; the byte offset of the stage it was at.
    fn next_tile(&mut self, role: TileRole) -> R<IntValue<'ctx>> {
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
        self.tile_offset(role, stage)
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
        let i32t = self.ctx.i32_type();
        let global = self.ctx.ptr_type(AddressSpace::from(1u16));
        let fn_ty = self
            .ctx
            .void_type()
            .fn_type(&[i32t.into(), global.into(), i32t.into()], false);
        for p in pending {
            let cache = if p.bytes == 16 { "cg" } else { "ca" };
            let asm = self.ctx.create_inline_asm(
                fn_ty,
                format!(
                    "cp.async.{cache}.shared.global [$0], [$1], {}, $2;",
                    p.bytes
                ),
                "r,l,r,~{memory}".into(),
                true,
                false,
                None,
                false,
            );
            for (dst, src, size) in p.runs {
                let src = self.b.build_address_space_cast(src, global, "")?;
                self.b.build_indirect_call(
                    fn_ty,
                    asm,
                    &[dst.into(), src.into(), size.into()],
                    "",
                )?;
            }
            self.ptx_statement("cp.async.commit_group;")?;
        }
        Ok(())
    }

    /// Wait until the tiles `a` and `b` have landed and are visible to every
    /// thread (and, for `wgmma`, to the async proxy that reads them), then
    /// issue the copies recorded since (the next tiles). Issuing them after
    /// an in-flight `wgmma` group instead was slower on the H100 (bench/NOTES.md).
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
        self.ptx_statement(&format!("cp.async.wait_group {pending};"))?;
        if async_proxy {
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
                    .filter(|v| self.tiles().contains_key(v) && plan.distance(*v) >= d)
                    .collect();
                landed.tiles.extend(done);
                landed.fenced |= async_proxy;
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
        self.ptx_statement("cp.async.wait_all;")?;
        self.barrier()?;
        // A fixed A tile may still be read by a later loop.
        if self.tile_plan.fixed_a.is_empty() {
            self.scratch = 0;
        }
        Ok(())
    }

    pub(super) fn tiles(&self) -> &HashMap<Value, TileRole> {
        &self.tile_plan.roles
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
        let mut at = 0;
        for (l, stages) in ring_order(&self.tile_plan.stages) {
            self.ring_base.insert(l, (at, stages));
            at += ring_bytes(&l, stages, &self.tile_plan);
        }
        at
    }
}

/// The rings in the order they are placed.
fn ring_order(stages: &HashMap<MmaLayout, usize>) -> Vec<(MmaLayout, usize)> {
    let mut layouts: Vec<(MmaLayout, usize)> = stages.iter().map(|(l, s)| (*l, *s)).collect();
    layouts.sort_by_key(|(l, _)| (l.m, l.n, l.k, l.wm, l.kind));
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
        return fixed_a_bytes(l) + (stages * b_tile_bytes(l)).next_multiple_of(1024) + extra;
    }
    (stages * l.smem_bytes()).next_multiple_of(1024) + extra
}

/// Bytes of the one A tile of a `fixed_a` ring (1024-aligned, as B's follow).
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

/// Whether `v`'s only uses in `body` are as the initial value of a nested
/// loop's carried argument (a pipelining prologue's load).
fn only_starts_loops(body: &[Op], v: Value) -> bool {
    let mut starts = false;
    for op in body {
        for (i, a) in op.args.iter().enumerate() {
            if *a == v {
                if op.kind == OpKind::For && i >= 3 {
                    starts = true;
                } else {
                    return false;
                }
            }
        }
        let mut inside = false;
        for r in &op.regions {
            tilebook_tir::walk_ops(r, &mut |o| inside |= o.args.contains(&v));
        }
        if inside {
            return false;
        }
    }
    starts
}
