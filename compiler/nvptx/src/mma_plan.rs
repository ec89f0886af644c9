//! Which values keep their registers in an MMA layout (`mma::MmaLayout`):
//! tensor-core dot results and what is computed from them without leaving
//! the layout, so that an attention-style loop (a dot, a row softmax, a
//! second dot) runs without trips through shared memory.
//!
//! Two register arrangements are planned:
//! - **full**: `M x N` values in the accumulator layout itself;
//! - **rows**: `[M]` or `[M, 1]` vectors of an accumulator whose warps all
//!   span the full width (`wn == 1`): a thread holds the rows its fragments
//!   touch, two per `rep_m` (`l / 4` and `l / 4 + 8`), and the four lanes of
//!   a quad hold the same values. A row reduction of a full value is a fold
//!   over the thread's registers and two quad shuffles; a broadcast of a row
//!   vector back to `M x N` is a register copy.
//!
//! Operands that can be recomputed anywhere (constants, splats, aranges and
//! elementwise ops and shape ops on them: `tl.where`'s causal mask) are
//! layout-free: codegen recomputes them at each register's coordinates.

use crate::mma::{layout_for, Features, MmaLayout};
use std::collections::{HashMap, HashSet};
use tilebook_tir::{Combine, DType, Kernel, Op, OpKind, Region, Value};

/// What decides the tensor-core layouts of one kernel.
pub struct PlanOptions<'a> {
    pub warps: usize,
    pub features: Features,
    /// Dots (by result) that must not use `wgmma`: their operands cannot be
    /// copied straight into shared tiles.
    pub no_wgmma: &'a HashSet<Value>,
    /// Dots (by result) whose B is a `[K, N]` block with contiguous columns
    /// (`MmaLayout::kcol_b`).
    pub kcol_b: &'a HashSet<Value>,
}

/// The values in an MMA layout.
#[derive(Default)]
pub struct Planned {
    /// `M x N` values in the accumulator layout.
    pub full: HashMap<Value, MmaLayout>,
    /// Row vectors, keyed by the layout of the value they were reduced from
    /// (any layout with the same rows, `same_rows`, reads them).
    pub rows: HashMap<Value, MmaLayout>,
    /// Broadcasts used only by full-layout ops: they expand in those ops'
    /// operands (`elementwise_full`) and emit nothing themselves.
    pub virtual_broadcasts: HashSet<Value>,
}

/// Whether two layouts place rows on threads alike (so a row vector of one
/// is a row vector of the other).
pub fn same_rows(a: &MmaLayout, b: &MmaLayout) -> bool {
    a.wn == 1 && b.wn == 1 && a.m == b.m && a.wm == b.wm && a.wgmma == b.wgmma
}

/// The layouts of one kernel: tensor-core dot results, the loop-carried
/// accumulators they flow into, elementwise ops on them (the epilogue's cast
/// to fp16, an activation, a softmax), and their row reductions, so that the
/// conversion to the blocked layout happens once, on the final and often
/// narrower values.
pub fn plan(k: &Kernel, o: &PlanOptions) -> Planned {
    let mut defs: HashMap<Value, &Op> = HashMap::new();
    let mut uses: HashMap<Value, Vec<&Op>> = HashMap::new();
    tilebook_tir::walk_ops(&k.body, &mut |op| {
        for &r in &op.results {
            defs.insert(r, op);
        }
        for &a in &op.args {
            uses.entry(a).or_default().push(op);
        }
    });
    // Loop-carried values and what their loop yields for them.
    let mut carried: HashMap<Value, Value> = HashMap::new();
    tilebook_tir::walk_ops(&k.body, &mut |op| {
        if op.kind == OpKind::For {
            let region = &op.regions[0];
            if let Some(y) = region.ops.last() {
                for (i, &v) in y.args.iter().enumerate() {
                    if let Some(&a) = region.args.get(i + 1) {
                        carried.insert(a, v);
                    }
                }
            }
        }
    });
    let rows_first = attention_like(&defs, &carried);
    let mut cx = Cx {
        k,
        defs,
        o,
        carried,
        pessimistic: HashSet::new(),
        rows_first,
    };
    // A row vector carried by a loop (the running max and sum of an online
    // softmax) is assumed to stay in rows layout before its yield is known;
    // where the yield turns out otherwise, the plan is made again without
    // that assumption.
    let mut p = loop {
        let mut p = Planned::default();
        // Repeat until loops nested in loops have settled.
        for _ in 0..8 {
            let before = (p.full.len(), p.rows.len());
            cx.visit(&k.body, &mut p);
            if (p.full.len(), p.rows.len()) == before {
                break;
            }
        }
        let wrong: Vec<Value> = cx
            .carried
            .iter()
            .filter(|(a, y)| {
                p.rows
                    .get(a)
                    .is_some_and(|l| !p.rows.get(y).is_some_and(|m| same_rows(l, m)))
            })
            .map(|(a, _)| *a)
            .collect();
        if wrong.is_empty() {
            break p;
        }
        cx.pessimistic.extend(wrong);
    };
    let virtual_broadcasts: HashSet<Value> = cx
        .defs
        .values()
        .filter(|op| op.kind == OpKind::Broadcast)
        .map(|op| op.results[0])
        .filter(|v| {
            uses.get(v).is_some_and(|us| {
                us.iter()
                    .all(|u| mma_elementwise(&u.kind) && p.full.contains_key(&u.results[0]))
            })
        })
        .collect();
    p.virtual_broadcasts = virtual_broadcasts;
    p
}

/// Whether some dot result reaches, through elementwise ops and loop-carried
/// values, a row reduction or another dot's A operand (a softmax between two
/// dots, a chained product; a rotated loop carries its scores,
/// `tilebook_tir::rotate`).
fn attention_like(defs: &HashMap<Value, &Op>, carried: &HashMap<Value, Value>) -> bool {
    let from_dot = |v: Value| {
        let mut stack = vec![(v, 8usize)];
        while let Some((v, depth)) = stack.pop() {
            let Some(op) = defs.get(&v) else {
                if let (Some(&y), true) = (carried.get(&v), depth > 0) {
                    stack.push((y, depth - 1));
                }
                continue;
            };
            match &op.kind {
                OpKind::Dot { .. } => return true,
                k if depth > 0 && mma_elementwise(k) => {
                    stack.extend(op.args.iter().map(|&a| (a, depth - 1)));
                }
                _ => {}
            }
        }
        false
    };
    defs.values().any(|op| match op.kind {
        OpKind::Reduce { axis: 1, .. } => from_dot(op.args[0]),
        OpKind::Dot { .. } => from_dot(op.args[0]),
        _ => false,
    })
}

struct Cx<'a> {
    k: &'a Kernel,
    defs: HashMap<Value, &'a Op>,
    o: &'a PlanOptions<'a>,
    /// Loop-carried region arguments and the values yielded for them.
    carried: HashMap<Value, Value>,
    /// Carried values not to assume in rows layout.
    pessimistic: HashSet<Value>,
    /// Whether dots prefer warps that span whole rows (`layout_for`).
    rows_first: bool,
}

/// Element types an MMA-layout value may have besides the accumulator's:
/// those the conversions to the blocked layout pass through shared memory.
fn mma_elem_ok(d: Option<DType>) -> bool {
    matches!(
        d,
        Some(DType::F32 | DType::F16 | DType::BF16 | DType::I32 | DType::I1)
    )
}

/// Elementwise ops an MMA layout passes through (not pointer arithmetic,
/// not the hints, which codegen treats as shape ops).
fn mma_elementwise(kind: &OpKind) -> bool {
    kind.is_elementwise()
        && !matches!(
            kind,
            OpKind::AddPtr | OpKind::MultipleOf(_) | OpKind::MaxContiguous(_)
        )
}

impl Cx<'_> {
    /// Whether `v` can be recomputed at any coordinates (see `codegen::remat`)
    /// within `budget` ops, and depends on no MMA value.
    fn free(&self, v: Value, p: &Planned, budget: &mut usize) -> bool {
        if !self.k.ty(v).is_block() {
            return true;
        }
        if *budget == 0 || p.full.contains_key(&v) || p.rows.contains_key(&v) {
            return false;
        }
        *budget -= 1;
        let Some(op) = self.defs.get(&v) else {
            return false;
        };
        match &op.kind {
            OpKind::Const(_) | OpKind::Arange(..) | OpKind::Splat => true,
            OpKind::ExpandDims(_) | OpKind::Reshape | OpKind::Broadcast | OpKind::Trans(_) => {
                self.free(op.args[0], p, budget)
            }
            kind if mma_elementwise(kind) && !matches!(kind, OpKind::InlineAsm { .. }) => {
                op.args.iter().all(|&a| self.free(a, p, budget))
            }
            _ => false,
        }
    }

    /// A broadcast `[M, 1] -> [M, N]` of a row vector that reads as full
    /// layout `l`.
    fn broadcast_rows(&self, v: Value, l: &MmaLayout, p: &Planned) -> bool {
        let Some(op) = self.defs.get(&v) else {
            return false;
        };
        op.kind == OpKind::Broadcast
            && self.k.ty(v).shape == [l.m, l.n]
            && p.rows.get(&op.args[0]).is_some_and(|r| same_rows(r, l))
    }

    /// A broadcast `[M, 1] -> [M, N]` or `[1, N] -> [M, N]` of a blocked
    /// value (a loaded row or column vector): codegen moves the vector into
    /// the rows or columns of layout `l` through shared memory, once.
    fn broadcast_blocked(&self, v: Value, l: &MmaLayout, p: &Planned) -> bool {
        let Some(op) = self.defs.get(&v) else {
            return false;
        };
        let src = op.args.first().copied();
        op.kind == OpKind::Broadcast
            && self.k.ty(v).shape == [l.m, l.n]
            && src.is_some_and(|s| {
                let shape = &self.k.ty(s).shape;
                let vector = shape.as_slice() == [l.m, 1] || shape.as_slice() == [1, l.n];
                vector && !p.full.contains_key(&s) && !p.rows.contains_key(&s)
            })
    }

    /// The full layout of an elementwise op's result: some operand is in
    /// one, every other block operand is in the same one, a broadcast of its
    /// rows or of a vector, or free.
    fn elementwise_full(&self, op: &Op, p: &Planned) -> Option<MmaLayout> {
        let r = *op.results.first()?;
        if !mma_elem_ok(self.k.ty(r).dtype()) {
            return None;
        }
        let l = op.args.iter().find_map(|a| p.full.get(a).copied())?;
        op.args
            .iter()
            .all(|&a| {
                p.full.get(&a) == Some(&l)
                    || self.broadcast_rows(a, &l, p)
                    || self.free(a, p, &mut 12)
                    || self.broadcast_blocked(a, &l, p)
            })
            .then_some(l)
    }

    /// The rows layout of an elementwise op on row vectors, and the
    /// loop-carried operands assumed to be in it.
    fn elementwise_rows(&self, op: &Op, p: &Planned) -> Option<(MmaLayout, Vec<Value>)> {
        let r = *op.results.first()?;
        if !mma_elem_ok(self.k.ty(r).dtype()) || op.args.iter().any(|a| p.full.contains_key(a)) {
            return None;
        }
        let l = op.args.iter().find_map(|a| p.rows.get(a).copied())?;
        let mut assumed = vec![];
        for &a in &op.args {
            if p.rows.get(&a).is_some_and(|r| same_rows(r, &l)) || self.free(a, p, &mut 12) {
                continue;
            }
            let shape = &self.k.ty(a).shape;
            let fits = shape.as_slice() == [l.m] || shape.as_slice() == [l.m, 1];
            if fits
                && self.carried.contains_key(&a)
                && !self.pessimistic.contains(&a)
                && !p.rows.contains_key(&a)
            {
                assumed.push(a);
                continue;
            }
            return None;
        }
        Some((l, assumed))
    }

    /// A reduction along the rows of a full value whose warps span its width.
    fn row_reduction(&self, op: &Op, p: &Planned) -> Option<MmaLayout> {
        let OpKind::Reduce { axis: 1, combine } = op.kind else {
            return None;
        };
        let ok = matches!(
            combine,
            Combine::Add
                | Combine::Mul
                | Combine::Max
                | Combine::Min
                | Combine::And
                | Combine::Or
                | Combine::Xor
        );
        let l = p.full.get(op.args.first()?).copied()?;
        let d = self.k.ty(op.results[0]).dtype();
        (ok && op.args.len() == 1
            && op.regions.is_empty()
            && l.wn == 1
            && matches!(d, Some(DType::F32 | DType::I32)))
        .then_some(l)
    }

    fn visit(&self, r: &Region, p: &mut Planned) {
        for op in &r.ops {
            for sub in &op.regions {
                self.visit(sub, p);
            }
            match op.kind {
                OpKind::Dot { .. } => {
                    let wgmma = self.o.features.wgmma && !self.o.no_wgmma.contains(&op.results[0]);
                    let kcol = self.o.kcol_b.contains(&op.results[0]);
                    if let Some(mut l) =
                        layout_for(self.k, op, self.o.warps, wgmma, self.rows_first, kcol)
                    {
                        // A from another dot's accumulator with the same
                        // rows (attention's `p @ v`): `wgmma` reads it from
                        // registers.
                        l.a_regs = l.wgmma
                            && l.kind.is_half()
                            && p.full
                                .get(&op.args[0])
                                .is_some_and(|la| la.wgmma && same_rows(la, &l) && la.n == l.k);
                        p.full.insert(op.results[0], l);
                    }
                }
                OpKind::Reduce { .. } => {
                    if let Some(l) = self.row_reduction(op, p) {
                        p.rows.insert(op.results[0], l);
                    }
                }
                OpKind::Reshape | OpKind::ExpandDims(_) => {
                    if let Some(&l) = p.rows.get(&op.args[0]) {
                        let shape = &self.k.ty(op.results[0]).shape;
                        if shape.as_slice() == [l.m] || shape.as_slice() == [l.m, 1] {
                            p.rows.insert(op.results[0], l);
                        }
                    }
                }
                ref kind if mma_elementwise(kind) => {
                    if let Some(l) = self.elementwise_full(op, p) {
                        p.full.insert(op.results[0], l);
                    } else if let Some((l, assumed)) = self.elementwise_rows(op, p) {
                        p.rows.insert(op.results[0], l);
                        for a in assumed {
                            p.rows.insert(a, l);
                        }
                    }
                }
                OpKind::For => {
                    let region = &op.regions[0];
                    if let Some(y) = region.ops.last() {
                        for (i, v) in y.args.iter().enumerate() {
                            if let Some(&l) = p.full.get(v) {
                                p.full.insert(region.args[i + 1], l);
                                p.full.insert(op.results[i], l);
                            } else if let Some(&l) = p.rows.get(v) {
                                p.rows.insert(region.args[i + 1], l);
                                p.rows.insert(op.results[i], l);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }
}
