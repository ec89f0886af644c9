//! Which loads become `cp.async` tiles (see `async_copy`): the dot operands
//! whose every producer, through loop arguments, inits and yields, is a load
//! that can be copied straight into its operand tile (rows as loaded, or
//! K-major runs down the columns), with the rings' stage counts, the
//! K-major and staged B tiles, and the layouts whose single A tile is
//! loaded once before its loops (`fixed_a`).

use super::async_copy::TileRole;
use super::*;
use crate::mma::MmaLayout;

/// A loop's (region argument, initial value, yielded value) triples.
type LoopLinks = dyn Fn(&Op) -> Vec<(Value, Value, Value)>;

/// A K-major copy (see `Gen::k_major_copy`).
#[derive(Copy, Clone, Debug)]
pub(super) struct KMajor {
    pub root: Value,
    /// Bytes (elements) per run.
    pub run: usize,
}

/// What the dots need to know about the loops that carry tiles.
#[derive(Default)]
pub(super) struct TilePlan {
    pub roles: HashMap<Value, TileRole>,
    /// Loop argument -> the value the body yields for it.
    pub carried_from: HashMap<Value, Value>,
    /// Loop argument -> tile loads at the top level of that loop's body.
    pub loads_per_iteration: HashMap<Value, usize>,
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
    /// Dots (by result) whose wait also waits for an in-flight dot of the
    /// previous iteration, and the loop-carried value it produced
    /// (`wgmma::plan_chain`).
    pub tied: HashMap<Value, Value>,
    /// The in-flight dots of `tied`'s loops: committed, not waited for.
    pub chained: HashSet<Value>,
    /// Dots (by result) of rotated loops (`tilebook_tir::rotate`) whose
    /// result only the yield reads: committed, and waited for at the yield
    /// with this many later groups left in flight.
    pub deferred: HashMap<Value, usize>,
    /// `b.T` operands of K-major-B layouts (`MmaLayout::kt_b`) -> `b`: the
    /// tile is `b`'s, copied as loaded, and the transpose is virtual.
    pub b_source: HashMap<Value, Value>,
    /// Layouts whose A tiles are all loaded once, before the loops whose
    /// dots read them (attention's `q`; `k` and `v` in its backward): their
    /// ring holds those A tiles and then `stages` stages of B tiles, and the
    /// rings are kept until the last loop that reads them retires
    /// (`fixed_a_last`).
    pub fixed_a: HashSet<MmaLayout>,
    /// The top-level loop (by its first region argument) after which no
    /// dot reads a `fixed_a` tile: once it retires, scratch may overlap the
    /// rings again (attention's epilogue). `None` where the last reader is
    /// not such a loop.
    pub fixed_a_last: Option<Value>,
    /// Tiles per stage of each layout's operand (`TileRole::index` counts
    /// up to it); 0 where the layout has none of its own.
    pub counts: HashMap<(MmaLayout, usize), usize>,
    /// A one-dot loop's rings fit two blocks per SM (`wgmma::plan_inflight`).
    pub two_blocks: bool,
    /// Dots (by result) of loops with three or more dots whose group runs
    /// until the first op that reads the result (`wgmma::plan_lazy`).
    pub lazy: HashSet<Value>,
    /// `wgmma` groups committed so far in the generated code, and the lazy
    /// dots still running with their group's number.
    pub groups: usize,
    pub running: Vec<(Value, usize)>,
    /// Some lazy dot was waited for with later groups still running.
    pub overlapped: bool,
}

impl TilePlan {
    /// The value whose tile a dot reads for its operand `v`.
    pub(super) fn tile_of(&self, v: Value) -> Value {
        *self.b_source.get(&v).unwrap_or(&v)
    }

    /// Tiles of `layout`'s operand in each stage of its ring.
    pub(super) fn count(&self, layout: &MmaLayout, operand: usize) -> usize {
        self.counts.get(&(*layout, operand)).copied().unwrap_or(0)
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
                            .filter(|s| uses.get(s) == Some(&1) || self.half_regs.contains(s));
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
                            let r = TileRole {
                                layout,
                                operand,
                                index: 0,
                            };
                            match role.get(&v) {
                                // One tile read by two dots (attention's
                                // backward reads `q` as `q.T` and as `q`):
                                // the first role places it.
                                Some(old) if shares_tile(old, &r) => {}
                                Some(old) if *old != r => {
                                    conflicting.insert(v);
                                    role.insert(v, r);
                                }
                                _ => {
                                    role.insert(v, r);
                                }
                            }
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
                    // A rotated loop's first tile (`tilebook_tir::rotate`):
                    // the dot before the loop reads the init, the loop's
                    // dot the yielded tile; the argument between them only
                    // ties them into one stream (one tile per stage).
                    if let (None, Some(&r), Some(&y)) =
                        (role.get(&arg), role.get(&init), role.get(&yielded))
                    {
                        if r == y {
                            role.insert(arg, r);
                        }
                    }
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
        // Each tile stream (`streams`) has a tile of its own in every stage
        // and its own stage counter, so it may be loaded once per loop
        // iteration: a stream loaded twice in one body stays off the tile
        // path. (Before streams were numbered, two loads for one operand of
        // one layout shared a counter and gave wrong sums on the H100,
        // session 17.) A nested loop's prologue (the pipelining pass's loads
        // of its first `distance` tiles, which only start that loop's
        // carries) is not counted: a persistent kernel's K loop inside its
        // tile loop needs it.
        let stream_of = streams(&all_roles, &loops, &links);
        let mut unfit: HashSet<Value> = conflicting;
        for l in &loops {
            let body = &l.regions[0].ops;
            let starts: HashSet<Value> = body
                .iter()
                .filter(|op| op.kind == OpKind::For)
                .flat_map(|op| op.args.iter().skip(3).copied())
                .collect();
            let mut per_stream: HashMap<Value, Vec<Value>> = HashMap::new();
            for op in body {
                if !matches!(op.kind, OpKind::Load { .. })
                    || op
                        .results
                        .first()
                        .is_some_and(|v| starts.contains(v) && only_starts_loops(body, *v))
                {
                    continue;
                }
                if let Some((v, s)) = op
                    .results
                    .first()
                    .and_then(|v| Some((*v, stream_of.get(v)?)))
                {
                    per_stream.entry(*s).or_default().push(v);
                }
            }
            for vs in per_stream.into_values().filter(|vs| vs.len() > 1) {
                unfit.extend(vs);
            }
        }
        let (mut role, mut plan) = loop {
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
        // Each ring a dot reads (a borrowed tile's is its first reader's)
        // holds enough stages for the dot's prefetch distance.
        for &(a, b) in &dots {
            let ra = a.map(|a| role.get(&a).copied());
            let (Some(rb), false) = (role.get(&b).copied(), ra == Some(None)) else {
                continue;
            };
            let da = a.map_or(0, |a| plan.distance(a));
            let d = da.max(plan.distance(b)).max(1);
            for r in [ra.flatten(), Some(rb)].into_iter().flatten() {
                let s = plan.stages.entry(r.layout).or_insert(2);
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
            .filter(|(l, (_, outside))| *outside && plan.stages.contains_key(l))
            .map(|(l, _)| l)
            .collect();
        plan.fixed_a_last = self.last_fixed_a_loop(&plan.fixed_a);
        plan.counts = number_streams(&mut role, &loops, &links);
        plan.roles = role;
        plan
    }

    /// The last top-level op whose dots read a `fixed_a` tile, if it is a
    /// loop: its first region argument.
    fn last_fixed_a_loop(&self, fixed: &HashSet<MmaLayout>) -> Option<Value> {
        if fixed.is_empty() {
            return None;
        }
        let reads = |op: &Op| {
            let mut found = false;
            let mut visit = |o: &Op| {
                if matches!(o.kind, OpKind::Dot { .. })
                    && self
                        .mma
                        .get(&o.results[0])
                        .is_some_and(|l| fixed.contains(l))
                {
                    found = true;
                }
            };
            visit(op);
            for r in &op.regions {
                tilebook_tir::walk_ops(r, &mut visit);
            }
            found
        };
        let last = self.k.body.ops.iter().rev().find(|op| reads(op))?;
        match last.kind {
            OpKind::For => last.regions.first()?.args.first().copied(),
            _ => None,
        }
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
                tilebook_tir::load_other(op).and_then(|o| self.defs.get(&o)).map(|o| &o.kind),
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
        let (w, _) = self.copy_runs(op.args[0], m, &l, e);
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
    pub(super) fn remat_shape_ok(&self, v: Value, budget: &mut usize) -> bool {
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

/// The tile streams among `role`'s values: a loop argument, its initial
/// value and the value its body yields for it hold one stream of tiles
/// (where their roles name the same operand of the same layout). Returns
/// each value's stream, named by its smallest member.
fn streams(
    role: &HashMap<Value, TileRole>,
    loops: &[&Op],
    links: &LoopLinks,
) -> HashMap<Value, Value> {
    let mut parent: HashMap<Value, Value> = role.keys().map(|v| (*v, *v)).collect();
    fn root(parent: &HashMap<Value, Value>, mut v: Value) -> Value {
        while let Some(&p) = parent.get(&v).filter(|p| **p != v) {
            v = p;
        }
        v
    }
    let key = |v: &Value| role.get(v).map(|r| (r.layout, r.operand));
    for l in loops {
        for (arg, init, yielded) in links(l) {
            for other in [init, yielded] {
                if key(&arg).is_some() && key(&arg) == key(&other) {
                    let (x, y) = (root(&parent, arg), root(&parent, other));
                    parent.insert(x.max(y), x.min(y));
                }
            }
        }
    }
    role.keys().map(|v| (*v, root(&parent, *v))).collect()
}

/// Number the tile streams of each layout's operand (`TileRole::index`):
/// streams outside every loop first (fixed A tiles), then each loop's own
/// after them. Loops that do not nest run one after the other (the first
/// has waited for its tiles before the second starts), so their streams
/// reuse the same numbers; a nested loop's follow its outer loop's.
/// Returns how many tiles each layout's operand needs per stage.
fn number_streams(
    role: &mut HashMap<Value, TileRole>,
    loops: &[&Op],
    links: &LoopLinks,
) -> HashMap<(MmaLayout, usize), usize> {
    let stream_of = streams(role, loops, links);
    // The loop (index into `loops`, pre-order) that carries each stream.
    let mut scope: HashMap<Value, Option<usize>> = HashMap::new();
    for (v, s) in &stream_of {
        let carried = loops
            .iter()
            .position(|l| l.regions[0].args[1..].contains(v));
        let e = scope.entry(*s).or_insert(None);
        *e = match (*e, carried) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    // Loops inside each loop.
    let nested: Vec<HashSet<*const Op>> = loops
        .iter()
        .map(|l| {
            let mut inside = HashSet::new();
            tilebook_tir::walk_ops(&l.regions[0], &mut |op| {
                if op.kind == OpKind::For {
                    inside.insert(op as *const Op);
                }
            });
            inside
        })
        .collect();
    // (the loop carrying it, the stream) per layout and operand.
    type Scoped = Vec<(Option<usize>, Value)>;
    let mut by_key: HashMap<(MmaLayout, usize), Scoped> = HashMap::new();
    for (s, sc) in &scope {
        let r = role[s];
        by_key
            .entry((r.layout, r.operand))
            .or_default()
            .push((*sc, *s));
    }
    let mut index: HashMap<Value, usize> = HashMap::new();
    let mut counts = HashMap::new();
    for (key, mut ss) in by_key {
        ss.sort();
        let outside = ss.iter().filter(|(sc, _)| sc.is_none()).count();
        let mut end: HashMap<usize, usize> = HashMap::new();
        let mut total = outside;
        for (i, (sc, s)) in ss.iter().enumerate() {
            let n = match sc {
                None => i,
                Some(l) => {
                    let base = (0..*l)
                        .filter(|a| nested[*a].contains(&(loops[*l] as *const Op)))
                        .filter_map(|a| end.get(&a).copied())
                        .fold(outside, usize::max);
                    let e = end.entry(*l).or_insert(base);
                    *e += 1;
                    *e - 1
                }
            };
            index.insert(*s, n);
            total = total.max(n + 1);
        }
        counts.insert(key, total);
    }
    for (v, r) in role.iter_mut() {
        r.index = index[&stream_of[v]];
    }
    counts
}

/// Whether one shared tile, filled as loaded, serves both roles: two
/// `wgmma` operands of one half type whose swizzled tiles are the same rows
/// and columns (`q`'s block read as `q.T`, a K-major B, and as `q`, an
/// N-major B, is `BLOCK_M x D` either way). Each dot builds its own
/// descriptors for it.
fn shares_tile(x: &TileRole, y: &TileRole) -> bool {
    let (lx, ly) = (x.layout, y.layout);
    lx.wgmma
        && ly.wgmma
        && lx.kind == ly.kind
        && lx.kind.is_half()
        && !lx.k_major_b(x.operand)
        && !ly.k_major_b(y.operand)
        && lx.swizzled(x.operand) == ly.swizzled(y.operand)
}
