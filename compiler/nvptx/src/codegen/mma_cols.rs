//! Column vectors loaded in place. A `[N]` vector that is only ever
//! broadcast along the columns of one full MMA layout `l` (the attention
//! backward's `lse[None, :]` and `Delta[None, :]` of a query block, in the
//! transposed scores of the `dk`/`dv` loop) is loaded by each thread at the
//! columns its accumulator fragments hold, `2 * reps_n` registers (`(rep_n,
//! j)`: column `warp_n * (N / wn) + rep_n * 8 + 2 * (lane % 4) + j`, as
//! `cached_vector` places them), instead of loaded blocked and moved into
//! those columns through shared memory (a store, a load per register and
//! three block barriers, every iteration). The pipelining pass's prefetched
//! copy is carried by the loop in the same registers; in blocks of one warp
//! group that pass loads such vectors at the top of the body instead
//! (`PipelineOptions::column_hoist_above`), so that their registers live
//! for part of an iteration only.
//!
//! Each pair of adjacent columns is one predicated `ld.global.v2` where the
//! pointers are contiguous and aligned (the form that lets ptxas batch them;
//! session 19's element-by-element loads behind branches lost to the
//! shared-memory round trip, `bench/NOTES.md`). `TILEBOOK_COLUMN_LOADS=0`
//! turns the plan off.

use super::*;

/// Registers a thread spends on one column vector carried across a loop at
/// most (`2 * reps_n`): in blocks of more than one warp group, and in blocks
/// of one (loaded in the iteration that reads it: the first). A block
/// barrier among the four warps of one group is cheap, and the carried
/// columns cost registers for the whole loop: measured on the H200
/// (session 55, `bench/NOTES.md`), the backward's 4-warp `dk`/`dv` kernels
/// with 16 column registers a vector ran 1-3 % slower (D = 64: 199 -> 233
/// registers; D = 128 with three stages: 4 -> 244 bytes of spills, 17 %
/// slower); those with 8 (32-query blocks) ran between 1.5 % slower and
/// 7 % faster, most faster; the 8-warp one with 16 ran 3-5 % faster.
const MAX_COLUMN_REGS: (usize, usize) = (32, 8);

impl<'ctx> Gen<'ctx, '_> {
    /// Plan `cols`: every group of values (a load, the reshapes that make
    /// it `[1, N]`, the loop arguments that carry it and their other
    /// definitions) whose only readers are broadcasts into elementwise ops
    /// of one full MMA layout.
    ///
    /// `TILEBOOK_COLUMN_LOADS=0` plans none (the shared-memory move, for
    /// comparison).
    pub(super) fn plan_cols(&mut self) {
        self.cols.clear();
        if std::env::var("TILEBOOK_COLUMN_LOADS").is_ok_and(|v| v == "0") {
            return;
        }
        let mut uses: HashMap<Value, Vec<&Op>> = HashMap::new();
        let mut loop_of: HashMap<Value, (&Op, usize)> = HashMap::new();
        let mut in_loop = HashSet::new();
        tilebook_tir::walk_ops(&self.k.body, &mut |op| {
            for &a in &op.args {
                uses.entry(a).or_default().push(op);
            }
            if op.kind == OpKind::For {
                for (i, &a) in op.regions[0].args.iter().enumerate().skip(1) {
                    loop_of.insert(a, (op, i - 1));
                }
                tilebook_tir::walk_ops(&op.regions[0], &mut |o| {
                    in_loop.extend(o.results.iter().copied())
                });
            }
        });
        let mut seeds = vec![];
        tilebook_tir::walk_ops(&self.k.body, &mut |op| {
            let Some(l) = op.results.first().and_then(|r| self.mma.get(r)) else {
                return;
            };
            if !op.kind.is_elementwise() {
                return;
            }
            for &a in &op.args {
                if let Some(src) = self.broadcast_of_blocked(a, l) {
                    if self.ty(src).shape[0] == 1 {
                        seeds.push((self.vector_root(src), *l));
                    }
                }
            }
        });
        for (root, l) in seeds {
            if self.cols.contains_key(&root) {
                continue;
            }
            if let Some(group) = self.column_group(root, &l, &uses, &loop_of, &in_loop) {
                for v in group {
                    self.cols.insert(v, l);
                }
            }
        }
    }

    /// The values that must share `root`'s column layout `l`, or `None`
    /// where one of them is defined or read otherwise.
    fn column_group(
        &self,
        root: Value,
        l: &MmaLayout,
        uses: &HashMap<Value, Vec<&Op>>,
        loop_of: &HashMap<Value, (&Op, usize)>,
        in_loop: &HashSet<Value>,
    ) -> Option<Vec<Value>> {
        let mut seen = HashSet::new();
        let mut carried = false;
        let mut work = vec![root];
        while let Some(v) = work.pop() {
            if !seen.insert(v) {
                continue;
            }
            let t = self.ty(v);
            let shape_ok = t.shape.as_slice() == [l.n] || t.shape.as_slice() == [1, l.n];
            let elem_ok = matches!(
                t.dtype(),
                Some(DType::F32 | DType::F16 | DType::BF16 | DType::I32)
            );
            let taken = self.mma.contains_key(&v)
                || self.rows.contains_key(&v)
                || self.cols.get(&v).is_some_and(|m| !same_cols(m, l));
            if !shape_ok || !elem_ok || taken {
                return None;
            }
            match self.defs.get(&v).map(|op| &op.kind) {
                Some(OpKind::Load { .. }) => {
                    let op = self.defs[&v];
                    let operands_free = op.args.iter().all(|&a| self.remat_shape_ok(a, &mut 24));
                    if !operands_free || self.tiles().contains_key(&v) {
                        return None;
                    }
                }
                Some(OpKind::Reshape | OpKind::ExpandDims(_)) => work.push(self.defs[&v].args[0]),
                Some(OpKind::For) => {
                    let lp = self.defs[&v];
                    let i = lp.results.iter().position(|&r| r == v)?;
                    work.push(lp.regions[0].args[i + 1]);
                }
                Some(_) => return None,
                None => {
                    // A loop argument: its initial value, what the body
                    // yields for it and the loop's result share its layout.
                    carried = true;
                    let &(lp, i) = loop_of.get(&v)?;
                    work.push(lp.args[3 + i]);
                    work.push(lp.regions[0].ops.last()?.args[i]);
                    work.push(lp.results[i]);
                }
            }
            for u in uses.get(&v).map(Vec::as_slice).unwrap_or_default() {
                match u.kind {
                    OpKind::Reshape | OpKind::ExpandDims(_) => work.push(u.results[0]),
                    OpKind::Broadcast => {
                        let b = u.results[0];
                        let into_l = uses.get(&b).is_some_and(|bu| {
                            bu.iter().all(|e| {
                                e.kind.is_elementwise() && self.mma.get(&e.results[0]) == Some(l)
                            })
                        });
                        if self.ty(b).shape.as_slice() != [l.m, l.n] || !into_l {
                            return None;
                        }
                    }
                    // Yielded: only by `for` bodies; the argument it
                    // becomes brings in the rest of the loop's copies.
                    OpKind::Yield => {
                        let lp = loop_of.values().map(|&(lp, _)| lp).find(|lp| {
                            lp.regions[0]
                                .ops
                                .last()
                                .is_some_and(|y| std::ptr::eq(y, *u))
                        })?;
                        for (i, _) in u.args.iter().enumerate().filter(|(_, &a)| a == v) {
                            work.push(lp.regions[0].args[i + 1]);
                        }
                    }
                    OpKind::For => {
                        for (at, _) in u.args.iter().enumerate().filter(|(_, &a)| a == v) {
                            work.push(u.regions[0].args[at.checked_sub(3)? + 1]);
                        }
                    }
                    _ => return None,
                }
            }
        }
        // Loaded in the iteration that reads it (the pipelining pass's
        // column hoist, `tilebook_tir::pipeline`), the registers live for
        // part of an iteration only.
        let hoisted = !carried && seen.iter().all(|v| in_loop.contains(v));
        let max = if self.threads > 128 || hoisted {
            MAX_COLUMN_REGS.0
        } else {
            MAX_COLUMN_REGS.1
        };
        (2 * l.reps_n() <= max).then(|| seen.into_iter().collect())
    }

    /// The column (of layout `l`) of each of a column vector's registers.
    pub(super) fn column_index(&self, l: &MmaLayout) -> R<Vec<IntValue<'ctx>>> {
        let c = self.mma_coords(l)?;
        let mut cols = vec![];
        for rn in 0..l.reps_n() {
            for j in 0..2 {
                cols.push(self.mma_pos(l, &c, 0, rn, j)?.1);
            }
        }
        Ok(cols)
    }

    /// A load planned in column layout `l` (`plan_cols`): each thread loads
    /// the columns it holds, two adjacent ones per access where the
    /// pointers allow.
    pub(super) fn column_load(&mut self, op: &Op, mask: bool, other: bool) -> R<()> {
        let r = op.results[0];
        let l = self.cols[&r];
        let t = self.ty(r).clone();
        let d = t.dtype().unwrap_or(DType::F32);
        let esize = d.size_bytes();
        let (ptr, mask_v) = (op.args[0], mask.then(|| op.args[1]));
        let other_v = other.then(|| tilebook_tir::load_other(op)).flatten();
        let p_info = self.axis.get(&ptr).copied();
        let m_info = mask_v.and_then(|m| self.axis.get(&m).copied());
        let pair = p_info.is_some_and(|p| p.contiguity >= 2 && p.divisibility >= 2 * esize as u64)
            && (mask_v.is_none() || m_info.is_some_and(|m| m.constancy >= 2));
        let w = if pair { 2 } else { 1 };
        let at = |g: &Self, col: IntValue<'ctx>| -> Vec<IntValue<'ctx>> {
            if t.shape.len() == 2 {
                vec![g.i32c(0), col]
            } else {
                vec![col]
            }
        };
        let zero = self.constant(Const::Int(0), t.elem)?;
        let cols = self.column_index(&l)?;
        // Columns of one warp within one contiguous run of the pointers
        // (`LSE + offs`): each access is the first one's pointer plus its
        // constant column distance (`rep_n * 8 + j`), and a mask constant
        // over the run is computed once.
        let span = (l.n / l.wn) as u64;
        let affine = p_info.is_some_and(|p| p.contiguity >= span);
        let mask_once = m_info.is_some_and(|m| m.constancy >= span);
        let first = at(self, cols[0]);
        let p0 = self.remat(ptr, &first)?.into_pointer_value();
        let c0 = match mask_v {
            Some(m) => Some(self.remat(m, &first)?.into_int_value()),
            None => None,
        };
        let mem = self.mem_type(d);
        let mut out = vec![];
        for g0 in (0..cols.len()).step_by(w) {
            let idx = at(self, cols[g0]);
            let p = if g0 == 0 {
                p0
            } else if affine {
                let off = self
                    .ctx
                    .i64_type()
                    .const_int(((g0 / 2) * 8 + g0 % 2) as u64, false);
                // SAFETY: an element of the same contiguous run as `p0`.
                unsafe { self.b.build_gep(mem, p0, &[off], "")? }
            } else {
                self.remat(ptr, &idx)?.into_pointer_value()
            };
            let c = match mask_v {
                Some(_) if g0 == 0 || mask_once => c0,
                Some(m) => Some(self.remat(m, &idx)?.into_int_value()),
                None => None,
            };
            let mut fallback = vec![];
            for &col in &cols[g0..g0 + w] {
                fallback.push(match other_v {
                    Some(o) => {
                        let idx = at(self, col);
                        self.remat(o, &idx)?
                    }
                    None => zero,
                });
            }
            let c = self.check_access(op, p, w * esize, c)?;
            out.extend(self.load_run(p, c, fallback, d, false, w)?);
        }
        self.report_checks(op, crate::record::LOAD)?;
        self.set(r, Reg::B(out));
        Ok(())
    }

    /// A column vector in the blocked layout of its shape, through shared
    /// memory (the lanes that hold a column store the same value).
    pub(super) fn cols_to_blocked(&self, v: Value, l: &MmaLayout) -> R<Vec<BasicValueEnum<'ctx>>> {
        self.vector_to_blocked(v, l.n, true, &|g| g.column_index(l))
    }
}

/// Whether two layouts place columns on threads alike.
pub(super) fn same_cols(a: &MmaLayout, b: &MmaLayout) -> bool {
    a.n == b.n && a.wn == b.wn && a.wm == b.wm && a.wgmma == b.wgmma
}
