//! Kernels versioned on in-bounds masks. A mask such as `cols < N` with
//! `cols = tl.arange(0, BLOCK)` is all true whenever `BLOCK - 1 < N`, a
//! condition on scalars alone. A kernel that tests such masks in a loop
//! (layer norm's backward over rows, a row loop of softmax) is rewritten as
//!
//! ```text
//! if <every such mask is all true> { body, the masks replaced by true } else { body }
//! ```
//!
//! and the first copy's loads, stores and selects lose their masks: no
//! predicate per run of elements, no select per element. On the GPU those
//! predicates outnumber the hardware's predicate registers in wide rows
//! (sixteen runs a thread at 16384 columns), and moving them through general
//! registers costs instructions and spills in a kernel that already spills.
//!
//! The masks recognised compare a block of the form `s + tl.arange(a, b)`
//! (broadcast or expanded as masks are; `s` a scalar computed from
//! parameters and program ids, or absent) with a scalar the same way
//! (`<`, `<=`, or `>`, `>=` with the operands swapped), on `i32`. The
//! condition is computed in `i64`, so that it also excludes a block whose
//! `s + b - 1` would wrap: the fast copy runs only where every element
//! provably passes. Kernels with dots are left alone (their masks are per-iteration
//! and their code is large).

use crate::ir::*;
use crate::types::{DType, Type};
use std::collections::{HashMap, HashSet};

/// Which kernels get a version without masks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaskVersions {
    Off,
    /// Kernels where such a mask is computed or used inside a loop.
    Loops,
    /// Every kernel without dots that has such a mask.
    All,
}

/// What becomes of a mask in the unmasked copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrueMasks {
    /// Loads and stores lose it.
    Drop,
    /// They keep it, a constant (selects and mask arithmetic still fold).
    Keep,
}

/// Kernels above this many ops are not copied (compile time).
const MAX_OPS: usize = 4000;

/// Version `k` as the module text says; returns whether it did.
pub fn version_masks(k: &mut Kernel, which: MaskVersions, masks: TrueMasks) -> bool {
    if which == MaskVersions::Off || k.op_count() > MAX_OPS {
        return false;
    }
    let mut has_dot = false;
    walk_ops(&k.body, &mut |op| {
        has_dot |= matches!(op.kind, OpKind::Dot { .. });
    });
    if has_dot {
        return false;
    }
    let params: HashSet<Value> = k.params.iter().map(|p| p.value).collect();
    let mut defs: HashMap<Value, Def> = HashMap::new();
    walk_ops(&k.body, &mut |op| {
        if let [r] = op.results[..] {
            let def = Def {
                kind: op.kind.clone(),
                args: op.args.clone(),
                leaf: op.regions.is_empty(),
                loc: op.loc,
            };
            defs.insert(r, def);
        }
    });
    let facts = Facts {
        k,
        defs: &defs,
        params: &params,
    };
    let mut found: Vec<(Value, Condition)> = vec![];
    collect(&facts, &k.body, false, &mut found);
    if found.is_empty() {
        return false;
    }
    if which == MaskVersions::Loops && !found.iter().any(|(v, c)| c.in_loop || used_in_loop(k, *v))
    {
        return false;
    }
    let replace: HashSet<Value> = found.iter().map(|(v, _)| *v).collect();
    let conditions: Vec<Condition> = found.into_iter().map(|(_, c)| c).collect();

    let mut prefix = vec![];
    let mut hoisted = HashMap::new();
    let mut all = None;
    for c in &conditions {
        let ok = c.build(k, &defs, &mut hoisted, &mut prefix);
        all = Some(match all {
            None => ok,
            Some(a) => push(
                k,
                &mut prefix,
                OpKind::Binary(BinOp::And),
                vec![a, ok],
                DType::I1,
            ),
        });
    }
    let Some(all) = all else { return false };
    let body = std::mem::take(&mut k.body.ops);
    let mut subst = HashMap::new();
    let mut fast = clone_region_ops(k, &body, &mut subst, &replace);
    let loc = body.first().map(|o| o.loc).unwrap_or_default();
    fast.push(k.op(OpKind::Yield, vec![], vec![], loc));
    let mut general = body;
    general.push(k.op(OpKind::Yield, vec![], vec![], loc));
    let mut branch = k.op(OpKind::If, vec![all], vec![], loc);
    branch.regions = vec![
        Region {
            args: vec![],
            ops: fast,
        },
        Region {
            args: vec![],
            ops: general,
        },
    ];
    prefix.push(branch);
    k.body.ops = prefix;
    crate::passes::optimize(k);
    if masks == TrueMasks::Drop {
        drop_true_masks(k);
        crate::passes::optimize(k);
    }
    true
}

/// What defines a value (of ops with one result).
struct Def {
    kind: OpKind,
    args: Vec<Value>,
    /// Without regions.
    leaf: bool,
    loc: Loc,
}

struct Facts<'a> {
    k: &'a Kernel,
    defs: &'a HashMap<Value, Def>,
    params: &'a HashSet<Value>,
}

/// A mask `offset + [lo, hi] < bound` (or `<=`, not `strict`) elementwise
/// (`offset` absent: 0; `lo >= 0`).
struct Condition {
    offset: Option<Value>,
    hi: i64,
    bound: Value,
    strict: bool,
    in_loop: bool,
}

impl Condition {
    /// Ops appended to `prefix` computing this condition as an `i1`.
    fn build(
        &self,
        k: &mut Kernel,
        defs: &HashMap<Value, Def>,
        hoisted: &mut HashMap<Value, Value>,
        prefix: &mut Vec<Op>,
    ) -> Value {
        // In `i64`, the last element `s + hi` does not wrap; below an `i32`
        // bound the `i32` elements `s + lo ..= s + hi` (`lo >= 0`) do not
        // either, so each is what the test computed.
        let bound = hoist(k, defs, self.bound, hoisted, prefix);
        let bound = push(k, prefix, OpKind::Cast, vec![bound], DType::I64);
        let mut last = constant(k, prefix, self.hi, DType::I64);
        if let Some(s) = self.offset {
            let s = hoist(k, defs, s, hoisted, prefix);
            let s = push(k, prefix, OpKind::Cast, vec![s], DType::I64);
            last = push(
                k,
                prefix,
                OpKind::Binary(BinOp::Add),
                vec![s, last],
                DType::I64,
            );
        }
        let pred = if self.strict {
            CmpPred::Lt
        } else {
            CmpPred::Le
        };
        push(k, prefix, OpKind::Cmp(pred), vec![last, bound], DType::I1)
    }
}

fn push(k: &mut Kernel, prefix: &mut Vec<Op>, kind: OpKind, args: Vec<Value>, d: DType) -> Value {
    let op = k.op(kind, args, vec![Type::scalar(d)], Loc::default());
    let r = op.results[0];
    prefix.push(op);
    r
}

fn constant(k: &mut Kernel, prefix: &mut Vec<Op>, c: i64, d: DType) -> Value {
    push(k, prefix, OpKind::Const(Const::Int(c)), vec![], d)
}

/// A copy in `prefix` of the scalar ops computing `v` (parameters stay).
fn hoist(
    k: &mut Kernel,
    defs: &HashMap<Value, Def>,
    v: Value,
    hoisted: &mut HashMap<Value, Value>,
    prefix: &mut Vec<Op>,
) -> Value {
    if let Some(&h) = hoisted.get(&v) {
        return h;
    }
    let Some(op) = defs.get(&v) else { return v };
    let args = op
        .args
        .iter()
        .map(|&a| hoist(k, defs, a, hoisted, prefix))
        .collect();
    let ty = k.ty(v).clone();
    let new = k.op(op.kind.clone(), args, vec![ty], op.loc);
    let r = new.results[0];
    prefix.push(new);
    hoisted.insert(v, r);
    r
}

impl Facts<'_> {
    /// Whether `v` is a scalar computed from parameters, program ids and
    /// constants by pure ops (so it can be computed before the body).
    fn hoistable(&self, v: Value, depth: usize) -> bool {
        if self.k.ty(v).is_block() || depth > 16 {
            return false;
        }
        if self.params.contains(&v) {
            return true;
        }
        let Some(op) = self.defs.get(&v) else {
            return false; // a region argument (a loop's index, a carried value)
        };
        op.leaf
            && op.kind.is_pure()
            && !matches!(op.kind, OpKind::Load { .. } | OpKind::InlineAsm { .. })
            && op.args.iter().all(|&a| self.hoistable(a, depth + 1))
    }

    /// Look through the ops that give a mask its shape.
    fn origin(&self, mut v: Value) -> Option<&Def> {
        loop {
            let op = self.defs.get(&v)?;
            match op.kind {
                OpKind::Broadcast | OpKind::ExpandDims(_) | OpKind::Reshape => v = op.args[0],
                _ => return Some(op),
            }
        }
    }

    /// `v` as a block of one hoistable scalar.
    fn splat_of(&self, v: Value) -> Option<Value> {
        if !self.k.ty(v).is_block() {
            return self.hoistable(v, 0).then_some(v);
        }
        let op = self.origin(v)?;
        match op.kind {
            OpKind::Splat if self.hoistable(op.args[0], 0) => Some(op.args[0]),
            _ => None,
        }
    }

    /// `v` as `offset + arange(lo, hi + 1)`.
    fn range_of(&self, v: Value) -> Option<(Option<Value>, i64, i64)> {
        let op = self.origin(v)?;
        match op.kind {
            OpKind::Arange(a, b) if b > a && a >= 0 => Some((None, a, b - 1)),
            OpKind::Binary(BinOp::Add) => {
                let (x, y) = (op.args[0], op.args[1]);
                let pick = |r: Value, s: Value| {
                    let (None, lo, hi) = self.range_of(r)? else {
                        return None;
                    };
                    Some((Some(self.splat_of(s)?), lo, hi))
                };
                pick(x, y).or_else(|| pick(y, x))
            }
            _ => None,
        }
    }

    fn condition(&self, op: &Op, in_loop: bool) -> Option<Condition> {
        let OpKind::Cmp(pred) = op.kind else {
            return None;
        };
        let (&[a, b], &[r]) = (op.args.as_slice(), op.results.as_slice()) else {
            return None;
        };
        if !self.k.ty(r).is_block() || self.k.ty(a).dtype() != Some(DType::I32) {
            return None;
        }
        let (elems, bound, strict) = match pred {
            CmpPred::Lt => (a, b, true),
            CmpPred::Le => (a, b, false),
            CmpPred::Gt => (b, a, true),
            CmpPred::Ge => (b, a, false),
            _ => return None,
        };
        let (offset, _, hi) = self.range_of(elems)?;
        Some(Condition {
            offset,
            hi,
            bound: self.splat_of(bound)?,
            strict,
            in_loop,
        })
    }
}

fn collect(f: &Facts, r: &Region, in_loop: bool, out: &mut Vec<(Value, Condition)>) {
    for op in &r.ops {
        if let Some(c) = f.condition(op, in_loop) {
            out.push((op.results[0], c));
        }
        let looped = in_loop || matches!(op.kind, OpKind::For | OpKind::While);
        for sub in &op.regions {
            collect(f, sub, looped, out);
        }
    }
}

/// Whether `v`, or a mask the body's top level derives from it, is an
/// operand of some op inside a loop.
fn used_in_loop(k: &Kernel, v: Value) -> bool {
    let mut derived = HashSet::from([v]);
    for op in &k.body.ops {
        let shaping = matches!(
            op.kind,
            OpKind::Broadcast
                | OpKind::ExpandDims(_)
                | OpKind::Reshape
                | OpKind::Binary(BinOp::And | BinOp::Or)
        );
        if shaping && op.args.iter().any(|a| derived.contains(a)) {
            derived.extend(op.results.iter().copied());
        }
        if matches!(op.kind, OpKind::For | OpKind::While) {
            let mut found = false;
            for sub in &op.regions {
                walk_ops(sub, &mut |inner| {
                    found |= inner.args.iter().any(|a| derived.contains(a));
                });
            }
            if found {
                return true;
            }
        }
    }
    false
}

/// A copy of `ops` (nested regions included, with fresh region arguments),
/// the results in `replace` given as all-true constants.
fn clone_region_ops(
    k: &mut Kernel,
    ops: &[Op],
    subst: &mut HashMap<Value, Value>,
    replace: &HashSet<Value>,
) -> Vec<Op> {
    let mut out = vec![];
    for op in ops {
        if let [r] = op.results[..] {
            if replace.contains(&r) {
                let ty = k.ty(r).clone();
                let c = k.op(OpKind::Const(Const::Int(1)), vec![], vec![ty], op.loc);
                subst.insert(r, c.results[0]);
                out.push(c);
                continue;
            }
        }
        let args = op.args.iter().map(|a| *subst.get(a).unwrap_or(a)).collect();
        let types = op.results.iter().map(|&r| k.ty(r).clone()).collect();
        let mut new = k.op(op.kind.clone(), args, types, op.loc);
        for sub in &op.regions {
            let args = sub
                .args
                .iter()
                .map(|&a| {
                    let n = k.new_value(k.ty(a).clone());
                    subst.insert(a, n);
                    n
                })
                .collect();
            let ops = clone_region_ops(k, &sub.ops, subst, replace);
            new.regions.push(Region { args, ops });
        }
        for (&old, &n) in op.results.iter().zip(&new.results) {
            subst.insert(old, n);
        }
        out.push(new);
    }
    out
}

/// Loads and stores (not bulk tensor ones) whose mask is a true constant
/// lose it (a load its `other` too).
fn drop_true_masks(k: &mut Kernel) {
    let mut ones = HashSet::new();
    walk_ops(&k.body, &mut |op| {
        if let (OpKind::Const(Const::Int(c)), [r]) = (&op.kind, op.results.as_slice()) {
            if *c & 1 == 1 && k.ty(*r).dtype() == Some(DType::I1) {
                ones.insert(*r);
            }
        }
    });
    let mut body = std::mem::take(&mut k.body);
    drop_in(&mut body, &ones);
    k.body = body;
}

fn drop_in(r: &mut Region, ones: &HashSet<Value>) {
    for op in &mut r.ops {
        match op.kind {
            OpKind::Load {
                mask: true,
                tma: None,
                ..
            } if ones.contains(&op.args[1]) => {
                op.args.truncate(1);
                op.kind = OpKind::Load {
                    mask: false,
                    other: false,
                    tma: None,
                };
            }
            OpKind::Store {
                mask: true,
                tma: None,
            } if ones.contains(&op.args[2]) => {
                op.args.truncate(2);
                op.kind = OpKind::Store {
                    mask: false,
                    tma: None,
                };
            }
            _ => {}
        }
        for sub in &mut op.regions {
            drop_in(sub, ones);
        }
    }
}
