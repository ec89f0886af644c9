//! Masks that cut a copy's run short.
//!
//! A `cp.async` copies a run of `w` consecutive elements (4, 8 or 16
//! bytes) and zero-fills what its source size leaves out. A mask that is the
//! same over each run (`constancy >= w`) gives each run all or none of its
//! bytes. A bound known only at run time (`offs_k < K - k * BLOCK_K` for a
//! ragged K, a tensor descriptor's `shape` made in the kernel) may fall
//! inside a run; such a mask is still true on a *prefix* of every run when
//! it is an `and` of factors that are either the same over each run or
//! compare a run of consecutive integers against a value that is the same
//! over the run (`idx < bound`, `idx <= bound`, `bound > idx`,
//! `bound >= idx`): the run's first `bound - idx` elements pass. Such a run
//! is copied with a source size of that many elements, so the load keeps
//! its 16-byte copies and the tile path instead of falling back to one
//! element per load.

use super::{Gen, GenError, R};
use crate::layout::Layout;
use inkwell::values::{BasicValueEnum, IntValue, PointerValue};
use inkwell::IntPredicate;
use std::collections::{HashMap, HashSet};
use tilebook_tir::{BinOp, CmpPred, Op, OpKind, Value};

/// How a factor's coordinates follow from its user's.
#[derive(Clone, Debug)]
enum Step {
    /// The factor was broadcast: its dims of size 1 read index 0.
    Broadcast(Vec<usize>),
    /// The factor was expanded at this axis: drop that coordinate.
    Expand(usize),
}

/// A comparison that cuts runs: `Cmp` op result and the coordinate steps
/// from the mask down to it.
#[derive(Clone, Debug)]
pub(super) struct Cut {
    cmp: Value,
    path: Vec<Step>,
}

impl<'ctx> Gen<'ctx, '_> {
    /// The elements per copy of a row-wise load of `ptr` under `mask`, and
    /// the cuts where the copies are longer than a mask the same over each
    /// run would allow (see the module's text).
    pub(super) fn copy_runs(
        &self,
        ptr: Value,
        mask: Option<Value>,
        l: &Layout,
        e: usize,
    ) -> (usize, Option<Vec<Cut>>) {
        let w = self.vector_width(ptr, mask, l, e);
        if let Some(m) = mask {
            let wp = self.vector_width(ptr, None, l, e);
            if wp > w && wp * e >= 4 {
                if let Some(cuts) = self.prefix_cuts(m, wp) {
                    return (wp, Some(cuts));
                }
            }
        }
        (w, None)
    }

    /// Element counts whose every load and store moves one element at a
    /// time whatever the layout (pointers of unknown alignment: a store
    /// through addresses loaded from memory, a row stride not known to be
    /// a multiple of 16) get layouts of one element per thread per run, so
    /// that neighbouring threads touch neighbouring elements and each warp
    /// access is coalesced, as Triton sizes its layouts by alignment. (With
    /// runs of 8, each thread's element `j` lay 16 bytes from its
    /// neighbour's: a warp's 2-byte store touched 16 sectors.)
    ///
    /// Element counts of `tl.dot` operands keep their runs: an operand
    /// written to shared memory from registers is stored a run at a time,
    /// and with runs of one element its tile offsets alone took hundreds of
    /// registers (published tutorial 09's naive matmul at 128 x 256 x 128
    /// and 4 warps then spilled about 4 KB per thread and faulted on the
    /// H100 in a shared store whose address came back from a spill slot,
    /// though every address of its PTX is in bounds; bench/NOTES.md,
    /// session 32).
    pub(super) fn scalar_only_sizes(&mut self, operands: &HashSet<usize>) {
        let mut widest: HashMap<usize, usize> = HashMap::new();
        tilebook_tir::walk_ops(&self.k.body, &mut |op| {
            let mask = match op.kind {
                OpKind::Load { mask, .. } => mask.then(|| op.args[1]),
                OpKind::Store { mask, .. } => mask.then(|| op.args[2]),
                _ => return,
            };
            let t = self.ty(op.args[0]);
            let Some(d) = t.elem.pointee().filter(|_| t.is_block()) else {
                return;
            };
            let e = d.size_bytes().max(1);
            let p = self.axis.get(&op.args[0]).copied();
            let m = mask.and_then(|m| self.axis.get(&m).copied());
            let mut w = (16 / e).max(1);
            while w > 1 {
                let fits =
                    p.is_some_and(|p| p.contiguity >= w as u64 && p.divisibility >= (w * e) as u64);
                let masked = mask.is_none()
                    || m.is_some_and(|m| m.constancy >= w as u64)
                    || mask.is_some_and(|m| self.prefix_cuts(m, w).is_some());
                if fits && masked {
                    break;
                }
                w /= 2;
            }
            let e = widest.entry(t.numel()).or_insert(1);
            *e = (*e).max(w);
        });
        for (n, w) in widest {
            if w == 1 && !operands.contains(&n) {
                self.max_vec.insert(n, 1);
            }
        }
    }

    /// The comparisons that cut runs of `w` elements of `mask` short, if
    /// `mask` is true on a prefix of every run (see the module's text);
    /// `None` if it is not known to be.
    pub(super) fn prefix_cuts(&self, mask: Value, w: usize) -> Option<Vec<Cut>> {
        let mut cuts = vec![];
        let mut budget = 32;
        self.walk_prefix(mask, w as u64, &mut vec![], &mut cuts, &mut budget)
            .then_some(cuts)
    }

    fn walk_prefix(
        &self,
        v: Value,
        w: u64,
        path: &mut Vec<Step>,
        cuts: &mut Vec<Cut>,
        budget: &mut usize,
    ) -> bool {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        let t = self.ty(v);
        if t.shape.last().is_none_or(|&n| n == 1)
            || self.axis.get(&v).is_some_and(|a| a.constancy >= w)
        {
            return true;
        }
        let Some(op) = self.defs.get(&v).copied() else {
            return false;
        };
        match &op.kind {
            OpKind::Binary(BinOp::And) => op
                .args
                .iter()
                .all(|&a| self.walk_prefix(a, w, path, cuts, budget)),
            OpKind::Broadcast => {
                let src = self.ty(op.args[0]).shape.clone();
                if src.len() != t.shape.len() {
                    return false;
                }
                path.push(Step::Broadcast(src));
                let ok = self.walk_prefix(op.args[0], w, path, cuts, budget);
                path.pop();
                ok
            }
            // Expanding at the last axis gives a last dim of 1 (handled
            // above); elsewhere the last dim is the same.
            OpKind::ExpandDims(axis) => {
                path.push(Step::Expand(*axis));
                let ok = self.walk_prefix(op.args[0], w, path, cuts, budget);
                path.pop();
                ok
            }
            OpKind::Cmp(p) => {
                let (idx, bound) = match p {
                    CmpPred::Lt | CmpPred::Le => (op.args[0], op.args[1]),
                    CmpPred::Gt | CmpPred::Ge => (op.args[1], op.args[0]),
                    _ => return false,
                };
                let int = self
                    .ty(idx)
                    .dtype()
                    .is_some_and(|d| d.is_int() && d.bits() > 1);
                let runs = self.axis.get(&idx).is_some_and(|a| a.contiguity >= w);
                let same = self.axis.get(&bound).is_some_and(|a| a.constancy >= w);
                let remat =
                    self.remat_shape_ok(idx, &mut 64) && self.remat_shape_ok(bound, &mut 64);
                let ok = int && runs && same && remat;
                if ok {
                    cuts.push(Cut {
                        cmp: v,
                        path: path.clone(),
                    });
                }
                ok
            }
            _ => false,
        }
    }

    /// The run of `w` elements from register `g0` of an access whose mask
    /// `ms` is a prefix mask with these `cuts`: whether the run is whole,
    /// whether it is cut (its first element in, not all), and each
    /// element's pointer and condition for the element-by-element path (in
    /// checked mode checked here, before any branch, as `report_checks`
    /// needs).
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    pub(super) fn cut_run(
        &mut self,
        op: &Op,
        cuts: &[Cut],
        l: &Layout,
        shape: &[usize],
        g0: usize,
        w: usize,
        e: usize,
        ms: &[BasicValueEnum<'ctx>],
        ptrs: &[BasicValueEnum<'ctx>],
    ) -> R<(
        IntValue<'ctx>,
        (
            IntValue<'ctx>,
            Vec<(PointerValue<'ctx>, Option<IntValue<'ctx>>)>,
        ),
    )> {
        let rc = self.elem_coords(l, g0, shape)?;
        let first = ms[g0].into_int_value();
        let bytes = self.prefix_bytes(cuts, &rc, first, w, e)?;
        let full =
            self.b
                .build_int_compare(IntPredicate::EQ, bytes, self.i32c((w * e) as i64), "")?;
        let cut = self.b.build_not(full, "")?;
        let cut = self.b.build_and(cut, first, "")?;
        let mut elems = vec![];
        for j in g0..g0 + w {
            let p = ptrs[j].into_pointer_value();
            let mut m = ms[j].into_int_value();
            if self.check.is_some() {
                m = self.b.build_and(m, cut, "")?;
            }
            elems.push((p, self.check_access(op, p, e, Some(m))?));
        }
        Ok((full, (cut, elems)))
    }

    /// The source bytes of the run whose first element is at `rc` (the
    /// mask's coordinates), `e` bytes an element, under a prefix mask with
    /// these `cuts`: none where `first` (the mask at the run's first
    /// element) is false, else `e` times the smallest `bound - idx` (plus
    /// one for `<=`) of the cuts, at most `w`.
    pub(super) fn prefix_bytes(
        &mut self,
        cuts: &[Cut],
        rc: &[IntValue<'ctx>],
        first: IntValue<'ctx>,
        w: usize,
        e: usize,
    ) -> R<IntValue<'ctx>> {
        let i32t = self.ctx.i32_type();
        let mut n = self.i32c(w as i64);
        for cut in cuts {
            let mut idx = rc.to_vec();
            for step in &cut.path {
                match step {
                    Step::Broadcast(src) => {
                        for (x, &d) in idx.iter_mut().zip(src) {
                            if d == 1 {
                                *x = self.i32c(0);
                            }
                        }
                    }
                    Step::Expand(axis) => {
                        if *axis < idx.len() {
                            idx.remove(*axis);
                        }
                    }
                }
            }
            let op = self
                .defs
                .get(&cut.cmp)
                .copied()
                .ok_or_else(|| GenError("prefix mask: undefined comparison".into()))?;
            let OpKind::Cmp(p) = op.kind else {
                return Err(GenError("prefix mask: not a comparison".into()));
            };
            let (a, b) = match p {
                CmpPred::Lt | CmpPred::Le => (op.args[0], op.args[1]),
                _ => (op.args[1], op.args[0]),
            };
            let signed = self.ty(a).dtype().is_some_and(|d| !d.is_unsigned_int());
            let av = self.remat(a, &idx)?.into_int_value();
            let bv = self.remat(b, &idx)?.into_int_value();
            let it = av.get_type();
            // The run's last index is `idx + w - 1` (a run of consecutive
            // integers): if it passes, the whole run does; if not, while
            // the first passes, `bound - idx` (plus one for `<=`) lies in
            // 1..w, exact in the values' own width.
            let inclusive = matches!(p, CmpPred::Le | CmpPred::Ge);
            let pred = match (inclusive, signed) {
                (false, true) => IntPredicate::SLT,
                (true, true) => IntPredicate::SLE,
                (false, false) => IntPredicate::ULT,
                (true, false) => IntPredicate::ULE,
            };
            let last = self
                .b
                .build_int_add(av, it.const_int(w as u64 - 1, false), "")?;
            let full = self.b.build_int_compare(pred, last, bv, "")?;
            let mut d = self.b.build_int_sub(bv, av, "")?;
            if inclusive {
                d = self.b.build_int_add(d, it.const_int(1, false), "")?;
            }
            let d = self.b.build_int_cast(d, i32t, "")?;
            let c = self.b.build_select(full, self.i32c(w as i64), d, "")?;
            let less = self
                .b
                .build_int_compare(IntPredicate::ULT, c.into_int_value(), n, "")?;
            n = self
                .b
                .build_select(less, c.into_int_value(), n, "")?
                .into_int_value();
        }
        let bytes = self.b.build_int_mul(n, self.i32c(e as i64), "")?;
        Ok(self
            .b
            .build_select(first, bytes, self.i32c(0), "")?
            .into_int_value())
    }
}
