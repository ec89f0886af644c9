//! Passes the backends need: canonicalise + constant-fold, dot accumulation,
//! CSE and DCE.
//!
//! Each pass returns whether it changed the kernel; `optimize` runs them to a
//! fixed point and, in debug builds, verifies after each one.

use crate::ir::*;
use crate::print::op_head;
use crate::types::{DType, Elem, Type};
use std::collections::{HashMap, HashSet};

/// A pass: rewrites the kernel, returns whether anything changed.
pub type Pass = fn(&mut Kernel) -> bool;

/// The named stages of the optimisation pipeline, in order.
pub const PIPELINE: [(&str, Pass); 4] = [
    ("fold", fold_and_canonicalize),
    ("dot-acc", dot_accumulate),
    ("cse", cse),
    ("dce", dce),
];

/// Run the pipeline until nothing changes (at most a few rounds).
pub fn optimize(k: &mut Kernel) {
    for _round in 0..6 {
        let mut changed = false;
        for (name, pass) in PIPELINE {
            changed |= pass(k);
            if cfg!(debug_assertions) {
                if let Err(e) = crate::verify::verify(k) {
                    panic!(
                        "tile IR invalid after pass `{name}`: {e}\n{}",
                        crate::print::print_kernel(k)
                    );
                }
            }
        }
        if !changed {
            break;
        }
    }
}

fn apply_subst(r: &mut Region, subst: &HashMap<Value, Value>) {
    if subst.is_empty() {
        return;
    }
    for op in &mut r.ops {
        for a in &mut op.args {
            while let Some(&n) = subst.get(a) {
                *a = n;
            }
        }
        for sub in &mut op.regions {
            apply_subst(sub, subst);
        }
    }
}

// ---------------------------------------------------------------- folding

/// Constant folding and algebraic simplification.
pub fn fold_and_canonicalize(k: &mut Kernel) -> bool {
    let mut consts: HashMap<Value, Const> = HashMap::new();
    let mut subst = HashMap::new();
    let mut body = std::mem::take(&mut k.body);
    let changed = fold_region(k, &mut body, &mut consts, &mut subst);
    apply_subst(&mut body, &subst);
    k.body = body;
    changed
}

fn fold_region(
    k: &Kernel,
    r: &mut Region,
    consts: &mut HashMap<Value, Const>,
    subst: &mut HashMap<Value, Value>,
) -> bool {
    let mut changed = false;
    let ops = std::mem::take(&mut r.ops);
    for mut op in ops {
        for a in &mut op.args {
            while let Some(&n) = subst.get(a) {
                *a = n;
            }
        }
        for sub in &mut op.regions {
            changed |= fold_region(k, sub, consts, subst);
        }
        match simplify(k, &op, consts) {
            Simplified::Keep => {}
            Simplified::Const(c) => {
                op.kind = OpKind::Const(c);
                op.args.clear();
                changed = true;
            }
            Simplified::Value(v) => {
                subst.insert(op.results[0], v);
                changed = true;
                continue;
            }
            Simplified::Inline(region_index) => {
                // `if` with a constant condition: splice in the taken branch.
                let mut taken = op.regions.swap_remove(region_index);
                let y = taken.ops.pop().expect("verified region ends in yield");
                for (&res, &val) in op.results.iter().zip(&y.args) {
                    subst.insert(res, val);
                }
                r.ops.extend(taken.ops);
                changed = true;
                continue;
            }
        }
        if let (OpKind::Const(c), [res]) = (&op.kind, op.results.as_slice()) {
            consts.insert(*res, *c);
        }
        r.ops.push(op);
    }
    changed
}

enum Simplified {
    Keep,
    Const(crate::ir::Const),
    Value(Value),
    Inline(usize),
}

fn simplify(k: &Kernel, op: &Op, consts: &HashMap<Value, Const>) -> Simplified {
    use Simplified::*;
    let c = |i: usize| op.args.get(i).and_then(|a| consts.get(a)).copied();
    let rty = op.results.first().map(|&r| k.ty(r));
    let dtype = rty.and_then(|t| t.dtype());
    match &op.kind {
        OpKind::Splat
        | OpKind::Broadcast
        | OpKind::ExpandDims(_)
        | OpKind::Reshape
        | OpKind::Trans(_) => {
            if let Some(v) = c(0) {
                return Const(v);
            }
            // A permutation keeps the type of a square block but not its
            // values: only the identity permutation is a no-op.
            let identity = match &op.kind {
                OpKind::Trans(perm) => perm.iter().enumerate().all(|(i, &p)| i == p),
                _ => true,
            };
            if identity && rty == Some(k.ty(op.args[0])) {
                return Value(op.args[0]);
            }
            Keep
        }
        OpKind::Cast => {
            let (Some(v), Some(to), Some(from)) = (c(0), dtype, k.ty(op.args[0]).dtype()) else {
                return if rty == Some(k.ty(op.args[0])) {
                    Value(op.args[0])
                } else {
                    Keep
                };
            };
            Const(cast_const(v, from, to))
        }
        OpKind::Binary(b) => {
            let Some(d) = dtype else { return Keep };
            if let (Some(x), Some(y)) = (c(0), c(1)) {
                return fold_binary(*b, x, y, d).map_or(Keep, Const);
            }
            let is_zero = |i| c(i).is_some_and(|v| v.as_f64() == 0.0);
            let is_one = |i| c(i).is_some_and(|v| v.as_f64() == 1.0);
            match b {
                BinOp::Add | BinOp::Or | BinOp::Xor if d.is_int() && is_zero(1) => {
                    Value(op.args[0])
                }
                BinOp::Add | BinOp::Or | BinOp::Xor if d.is_int() && is_zero(0) => {
                    Value(op.args[1])
                }
                BinOp::Sub if d.is_int() && is_zero(1) => Value(op.args[0]),
                BinOp::Mul if is_one(1) => Value(op.args[0]),
                BinOp::Mul if is_one(0) => Value(op.args[1]),
                BinOp::Mul if d.is_int() && (is_zero(0) || is_zero(1)) => {
                    Const(crate::ir::Const::Int(0))
                }
                BinOp::Div if d.is_int() && is_one(1) => Value(op.args[0]),
                _ => Keep,
            }
        }
        OpKind::Unary(u) => match (c(0), dtype) {
            (Some(x), Some(d)) => fold_unary(*u, x, d).map_or(Keep, Const),
            _ => Keep,
        },
        OpKind::Cmp(p) => {
            let (Some(x), Some(y)) = (c(0), c(1)) else {
                return Keep;
            };
            let d = k.ty(op.args[0]).dtype().unwrap_or(DType::I64);
            let ord = if d.is_float() {
                x.as_f64().partial_cmp(&y.as_f64())
            } else if d.is_unsigned_int() {
                Some((x.as_i64() as u64).cmp(&(y.as_i64() as u64)))
            } else {
                Some(x.as_i64().cmp(&y.as_i64()))
            };
            let Some(ord) = ord else {
                return Const(crate::ir::Const::Int((*p == CmpPred::Ne) as i64));
            };
            use std::cmp::Ordering::*;
            let t = match p {
                CmpPred::Eq => ord == Equal,
                CmpPred::Ne => ord != Equal,
                CmpPred::Lt => ord == Less,
                CmpPred::Le => ord != Greater,
                CmpPred::Gt => ord == Greater,
                CmpPred::Ge => ord != Less,
            };
            Const(crate::ir::Const::Int(t as i64))
        }
        OpKind::Select => match c(0) {
            Some(v) if v.as_i64() != 0 => Value(op.args[1]),
            Some(_) => Value(op.args[2]),
            None if op.args[1] == op.args[2] => Value(op.args[1]),
            None => Keep,
        },
        OpKind::AddPtr if c(1).is_some_and(|v| v.as_i64() == 0) => Value(op.args[0]),
        OpKind::If => match c(0) {
            Some(v) => Inline(if v.as_i64() != 0 { 0 } else { 1 }),
            None => Keep,
        },
        _ => Keep,
    }
}

/// Convert a constant between dtypes as a `cast` op would.
pub fn cast_const(v: Const, from: DType, to: DType) -> Const {
    if to.is_float() {
        let f = if from.is_unsigned_int() {
            v.as_i64() as u64 as f64
        } else {
            v.as_f64()
        };
        Const::Float(round_float(f, to))
    } else if to == DType::I1 {
        Const::Int((v.as_f64() != 0.0) as i64)
    } else if from.is_float() {
        let f = v.as_f64();
        let i = if to.is_unsigned_int() {
            f as u64 as i64
        } else {
            f as i64
        };
        Const::Int(wrap_int(i, to))
    } else {
        Const::Int(wrap_int(v.as_i64(), to))
    }
}

fn fold_binary(b: BinOp, x: Const, y: Const, d: DType) -> Option<Const> {
    if d.is_float() {
        let (a, c) = (x.as_f64(), y.as_f64());
        let r = match b {
            BinOp::Add => a + c,
            BinOp::Sub => a - c,
            BinOp::Mul => a * c,
            BinOp::Div | BinOp::DivFull => a / c,
            BinOp::Rem => a % c,
            BinOp::Min => a.min(c),
            BinOp::Max => a.max(c),
            BinOp::Pow => a.powf(c),
            _ => return None,
        };
        return Some(Const::Float(round_float(r, d)));
    }
    let (a, c) = (x.as_i64(), y.as_i64());
    let unsigned = d.is_unsigned_int();
    let r = match b {
        BinOp::Add => a.wrapping_add(c),
        BinOp::Sub => a.wrapping_sub(c),
        BinOp::Mul => a.wrapping_mul(c),
        BinOp::Div | BinOp::Rem if c == 0 => return None,
        BinOp::Div if unsigned => ((a as u64) / (c as u64)) as i64,
        BinOp::Div => a.wrapping_div(c),
        BinOp::Rem if unsigned => ((a as u64) % (c as u64)) as i64,
        BinOp::Rem => a.wrapping_rem(c),
        BinOp::And => a & c,
        BinOp::Or => a | c,
        BinOp::Xor => a ^ c,
        BinOp::Shl if (0..d.bits() as i64).contains(&c) => a.wrapping_shl(c as u32),
        BinOp::Shr if (0..d.bits() as i64).contains(&c) && unsigned => ((a as u64) >> c) as i64,
        BinOp::Shr if (0..d.bits() as i64).contains(&c) => a >> c,
        // By the width or more (or a negative amount): 0, or the sign
        // (the backends' rule, PTX's and numpy's).
        BinOp::Shr if !unsigned => a >> 63,
        BinOp::Shl | BinOp::Shr => 0,
        BinOp::Min if unsigned => (a as u64).min(c as u64) as i64,
        BinOp::Max if unsigned => (a as u64).max(c as u64) as i64,
        BinOp::Min => a.min(c),
        BinOp::Max => a.max(c),
        _ => return None,
    };
    Some(Const::Int(wrap_int(r, d)))
}

fn fold_unary(u: UnOp, x: Const, d: DType) -> Option<Const> {
    if d.is_int() {
        let a = x.as_i64();
        let r = match u {
            UnOp::Neg => a.wrapping_neg(),
            UnOp::Not => !a,
            UnOp::Abs if d.is_unsigned_int() => a,
            UnOp::Abs => a.wrapping_abs(),
            _ => return None,
        };
        return Some(Const::Int(wrap_int(r, d)));
    }
    let a = x.as_f64();
    let r = match u {
        UnOp::Neg => -a,
        UnOp::Abs => a.abs(),
        UnOp::Floor => a.floor(),
        UnOp::Ceil => a.ceil(),
        UnOp::Sqrt | UnOp::SqrtApprox => a.sqrt(),
        _ => return None,
    };
    Some(Const::Float(round_float(r, d)))
}

// ---------------------------------------------------------------- CSE

/// Common-subexpression elimination over pure, region-free ops (loads excluded:
/// memory may change between them). Scoped: a value computed in a nested
/// region is not reused outside it.
pub fn cse(k: &mut Kernel) -> bool {
    let mut subst = HashMap::new();
    let mut body = std::mem::take(&mut k.body);
    let changed = cse_region(k, &mut body, &HashMap::new(), &mut subst);
    apply_subst(&mut body, &subst);
    k.body = body;
    changed
}

fn cse_region(
    k: &Kernel,
    r: &mut Region,
    outer: &HashMap<String, Value>,
    subst: &mut HashMap<Value, Value>,
) -> bool {
    let mut seen = outer.clone();
    let mut changed = false;
    let ops = std::mem::take(&mut r.ops);
    for mut op in ops {
        for a in &mut op.args {
            while let Some(&n) = subst.get(a) {
                *a = n;
            }
        }
        for sub in &mut op.regions {
            changed |= cse_region(k, sub, &seen, subst);
        }
        let eligible = op.kind.is_pure()
            && op.regions.is_empty()
            && op.results.len() == 1
            && !matches!(op.kind, OpKind::Load { .. });
        if eligible {
            let key = format!(
                "{}|{:?}|{}",
                op_head(&op.kind),
                op.args,
                k.ty(op.results[0])
            );
            if let Some(&prev) = seen.get(&key) {
                subst.insert(op.results[0], prev);
                changed = true;
                continue;
            }
            seen.insert(key, op.results[0]);
        }
        r.ops.push(op);
    }
    changed
}

// ---------------------------------------------------------------- dot accumulation

/// `x + dot(a, b, 0)` becomes `dot(a, b, x)` when nothing else reads the
/// dot's result: `acc += tl.dot(a, b)` then accumulates in the tensor cores'
/// registers like `acc = tl.dot(a, b, acc)` does, and a loop carrying `acc`
/// is pipelined the same way. The dot moves down to the add's place (its
/// operands are already defined there), so `x` may be defined after it.
pub fn dot_accumulate(k: &mut Kernel) -> bool {
    let mut uses: HashMap<Value, usize> = HashMap::new();
    let mut zeros = HashSet::new();
    walk_ops(&k.body, &mut |op| {
        for &a in &op.args {
            *uses.entry(a).or_default() += 1;
        }
        if let (OpKind::Const(c), [r]) = (&op.kind, op.results.as_slice()) {
            if c.as_f64() == 0.0 {
                zeros.insert(*r);
            }
        }
    });
    dot_accumulate_region(&mut k.body, &uses, &zeros)
}

fn dot_accumulate_region(
    r: &mut Region,
    uses: &HashMap<Value, usize>,
    zeros: &HashSet<Value>,
) -> bool {
    let mut changed = false;
    for op in &mut r.ops {
        for sub in &mut op.regions {
            changed |= dot_accumulate_region(sub, uses, zeros);
        }
    }
    // Dots of this region whose accumulator is zero and whose result has one use.
    let mut candidates: HashMap<Value, usize> = HashMap::new();
    let mut i = 0;
    while i < r.ops.len() {
        let op = &r.ops[i];
        if matches!(op.kind, OpKind::Dot { .. })
            && zeros.contains(&op.args[2])
            && uses.get(&op.results[0]) == Some(&1)
        {
            candidates.insert(op.results[0], i);
        }
        if op.kind == OpKind::Binary(BinOp::Add) {
            let pick = (0..2).find(|&j| candidates.contains_key(&op.args[j]));
            if let Some(j) = pick {
                let at = candidates[&op.args[j]];
                let other = op.args[1 - j];
                let result = op.results[0];
                let mut dot = r.ops.remove(at);
                candidates.clear();
                dot.args[2] = other;
                dot.results[0] = result;
                // The add is now at `i - 1`.
                r.ops[i - 1] = dot;
                changed = true;
                continue;
            }
        }
        i += 1;
    }
    changed
}

// ---------------------------------------------------------------- DCE

/// Remove ops whose results are unused and that have no side effects
/// (control flow included when nothing inside it has effects).
pub fn dce(k: &mut Kernel) -> bool {
    let mut changed = false;
    loop {
        let mut used = HashSet::new();
        collect_uses(&k.body, &mut used);
        if !dce_region(&mut k.body, &used) {
            break;
        }
        changed = true;
    }
    changed
}

fn collect_uses(r: &Region, used: &mut HashSet<Value>) {
    for op in &r.ops {
        used.extend(op.args.iter().copied());
        for sub in &op.regions {
            collect_uses(sub, used);
        }
    }
}

fn has_effects(op: &Op) -> bool {
    op.kind.has_side_effects() || op.regions.iter().any(|r| r.ops.iter().any(has_effects))
}

fn dce_region(r: &mut Region, used: &HashSet<Value>) -> bool {
    let before = r.ops.len();
    r.ops.retain(|op| {
        op.kind == OpKind::Yield || has_effects(op) || op.results.iter().any(|v| used.contains(v))
    });
    let mut changed = r.ops.len() != before;
    for op in &mut r.ops {
        for sub in &mut op.regions {
            changed |= dce_region(sub, used);
        }
    }
    changed
}

/// A scalar `Type` helper for passes and builders.
pub fn scalar_ty(d: DType) -> Type {
    Type {
        elem: Elem::Scalar(d),
        shape: vec![],
    }
}
