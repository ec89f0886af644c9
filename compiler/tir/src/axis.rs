//! Axis analysis along the fastest (last) dimension, as `docs/layouts.md`
//! describes: contiguity, divisibility and constancy of integer and pointer
//! values. It decides when a group of `vec` registers can be one vector load
//! or store.
//!
//! Divisibility of pointers is in bytes. Unknown values get (1, 1, 1).

use crate::{BinOp, Const, Kernel, Op, OpKind, Value};
use std::collections::HashMap;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AxisInfo {
    /// Runs of this many consecutive integers (pointers: consecutive elements).
    pub contiguity: u64,
    /// The first value of each run is a multiple of this (pointers: bytes).
    pub divisibility: u64,
    /// Runs of this many equal values.
    pub constancy: u64,
}

/// What is known of a value nothing is known of.
pub const UNKNOWN: AxisInfo = AxisInfo {
    contiguity: 1,
    divisibility: 1,
    constancy: 1,
};
/// Divisibility we assume for 0 (any power of two divides it).
const HUGE: u64 = 1 << 30;

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn pow2_factor(v: i64) -> u64 {
    if v == 0 {
        HUGE
    } else {
        1u64 << v.unsigned_abs().trailing_zeros().min(30)
    }
}

pub fn analyze(k: &Kernel) -> HashMap<Value, AxisInfo> {
    analyze_along(k, None, true)
}

/// As `analyze`, but `tl.multiple_of`/`tl.max_contiguous` hints are not
/// believed: facts that hold for any input, for a backend that must stay
/// exact when a hint is wrong (the CPU reference).
pub fn analyze_proven(k: &Kernel) -> HashMap<Value, AxisInfo> {
    analyze_along(k, None, false)
}

/// The same facts along dimension 0 of two-dimensional values (down a
/// column): what a copy of K-major runs out of a `[K, N]` tile needs to know.
/// One-dimensional values keep their facts from `base` (their one dimension
/// becomes dimension 0 under `x[:, None]`).
pub fn analyze_dim0(k: &Kernel, base: &HashMap<Value, AxisInfo>) -> HashMap<Value, AxisInfo> {
    analyze_along(k, Some(base), true)
}

fn analyze_along(
    k: &Kernel,
    base: Option<&HashMap<Value, AxisInfo>>,
    hints: bool,
) -> HashMap<Value, AxisInfo> {
    let mut info: HashMap<Value, AxisInfo> = HashMap::new();
    for p in &k.params {
        // Pointers: bytes; integers: the value.
        let div = p.attrs.divisibility.max(1) as u64;
        info.insert(
            p.value,
            AxisInfo {
                contiguity: 1,
                divisibility: div,
                constancy: 1,
            },
        );
    }
    // Integer constants by value (shift amounts).
    let mut ints = HashMap::new();
    crate::walk_ops(&k.body, &mut |op| {
        if let (OpKind::Const(Const::Int(i)), [r]) = (&op.kind, op.results.as_slice()) {
            ints.insert(*r, *i);
        }
    });
    // Loop-carried values get the meet of their initial and yielded values;
    // facts only shrink, so repeating until nothing changes reaches the
    // fixpoint (a few rounds). Should it not, nothing is claimed.
    for _ in 0..32 {
        let before = info.clone();
        region(k, &k.body, &ints, base, hints, &mut info);
        if info == before {
            return info;
        }
    }
    info.values_mut().for_each(|i| *i = UNKNOWN);
    info
}

fn meet(a: AxisInfo, b: AxisInfo) -> AxisInfo {
    AxisInfo {
        contiguity: gcd(a.contiguity, b.contiguity),
        divisibility: gcd(a.divisibility, b.divisibility),
        constancy: gcd(a.constancy, b.constancy),
    }
}

fn region(
    k: &Kernel,
    r: &crate::Region,
    ints: &HashMap<Value, i64>,
    base: Option<&HashMap<Value, AxisInfo>>,
    hints: bool,
    info: &mut HashMap<Value, AxisInfo>,
) {
    for op in &r.ops {
        if op.kind == OpKind::For {
            let body = &op.regions[0];
            // The induction variable `lb + i * step` is divisible by what
            // divides both (`for k0 in range(0, K, BK)`); with a step that is
            // not a known constant, nothing is claimed.
            if let Some(&step) = op.args.get(2).and_then(|s| ints.get(s)) {
                let lb = info.get(&op.args[0]).copied().unwrap_or(UNKNOWN);
                let div = gcd(lb.divisibility, pow2_factor(step));
                info.insert(
                    body.args[0],
                    AxisInfo {
                        contiguity: 1,
                        divisibility: div.max(1),
                        constancy: 1,
                    },
                );
            }
            let yields = body.ops.last().map(|y| y.args.clone()).unwrap_or_default();
            for (i, &init) in op.args[3..].iter().enumerate() {
                let a = info.get(&init).copied().unwrap_or(UNKNOWN);
                let carried = match yields.get(i).and_then(|y| info.get(y)) {
                    Some(&y) => meet(a, y),
                    None => a,
                };
                info.insert(body.args[i + 1], carried);
            }
            region(k, body, ints, base, hints, info);
            for (i, &res) in op.results.iter().enumerate() {
                let c = info.get(&body.args[i + 1]).copied().unwrap_or(UNKNOWN);
                info.insert(res, c);
            }
            continue;
        }
        if op.kind == OpKind::While {
            // A while loop's carried values: nothing is claimed.
            for sub in &op.regions {
                for &a in &sub.args {
                    info.insert(a, UNKNOWN);
                }
            }
        }
        for sub in &op.regions {
            region(k, sub, ints, base, hints, info);
        }
        match base {
            None => one(k, op, ints, info),
            Some(b) => one_dim0(k, op, ints, b, info),
        }
        // Results past the first (an `if`'s or a while loop's, a multi-value
        // reduction's): nothing known, as for the first. Without a fact, a
        // `for` loop that carries one kept its initial value's facts (a
        // zero block's "all equal"), so `l = l + tl.sum(s, 1)` reset in an
        // `if` with another value read lane 0 for every row.
        for &res in op.results.iter().skip(1) {
            info.insert(res, UNKNOWN);
        }
        if !hints && matches!(op.kind, OpKind::MultipleOf(_) | OpKind::MaxContiguous(_)) {
            let x = info.get(&op.args[0]).copied().unwrap_or(UNKNOWN);
            info.insert(op.results[0], x);
        }
    }
}

fn one(k: &Kernel, op: &Op, ints: &HashMap<Value, i64>, info: &mut HashMap<Value, AxisInfo>) {
    let Some(&r) = op.results.first() else { return };
    let last = k.ty(r).shape.last().copied().unwrap_or(1) as u64;
    let result = match &op.kind {
        OpKind::Broadcast | OpKind::ExpandDims(_) | OpKind::Reshape => {
            let x = info.get(&op.args[0]).copied().unwrap_or(UNKNOWN);
            let src_last = k.ty(op.args[0]).shape.last().copied().unwrap_or(1) as u64;
            // Only a broadcast repeats one value along the last dimension; a
            // reshape of `[n, 1]` to `[n]` makes the column the row.
            if src_last == 1 && last > 1 && op.kind == OpKind::Broadcast {
                AxisInfo {
                    contiguity: 1,
                    divisibility: x.divisibility,
                    constancy: last,
                }
            } else if src_last == last {
                x
            } else {
                UNKNOWN
            }
        }
        _ => elementwise(k, op, ints, last, info),
    };
    info.insert(r, result);
}

/// Along dimension 0 (see `analyze_dim0`): shape ops map dimensions, the
/// rest is as along the last dimension with the column's length.
fn one_dim0(
    k: &Kernel,
    op: &Op,
    ints: &HashMap<Value, i64>,
    base: &HashMap<Value, AxisInfo>,
    info: &mut HashMap<Value, AxisInfo>,
) {
    let Some(&r) = op.results.first() else { return };
    let shape = &k.ty(r).shape;
    if shape.len() != 2 {
        if let Some(&b) = base.get(&r) {
            info.insert(r, b);
        }
        return;
    }
    let rows = shape[0] as u64;
    let src = op.args.first().map(|a| k.ty(*a).shape.clone());
    let shape_op = matches!(op.kind, OpKind::ExpandDims(_) | OpKind::Reshape);
    let result = match (&op.kind, src.as_deref()) {
        // `x[:, None]`: the column is `x`.
        (_, Some([n])) if shape_op && shape[..] == [*n, 1] => {
            base.get(&op.args[0]).copied().unwrap_or(UNKNOWN)
        }
        // `x[None, :]`: a column of one element each; each is divisible by
        // what divides every element of `x`.
        (_, Some([n])) if shape_op && shape[..] == [1, *n] => {
            let x = base.get(&op.args[0]).copied().unwrap_or(UNKNOWN);
            AxisInfo {
                contiguity: 1,
                divisibility: if x.contiguity == 1 { x.divisibility } else { 1 },
                constancy: 1,
            }
        }
        (OpKind::Broadcast, Some([1, _])) => {
            let x = info.get(&op.args[0]).copied().unwrap_or(UNKNOWN);
            AxisInfo {
                contiguity: 1,
                divisibility: x.divisibility,
                constancy: rows,
            }
        }
        (OpKind::Broadcast, Some([r0, _])) if *r0 as u64 == rows => {
            info.get(&op.args[0]).copied().unwrap_or(UNKNOWN)
        }
        (OpKind::Broadcast | OpKind::ExpandDims(_) | OpKind::Reshape, _) => UNKNOWN,
        (OpKind::MultipleOf(_) | OpKind::MaxContiguous(_), _) => {
            info.get(&op.args[0]).copied().unwrap_or(UNKNOWN)
        }
        _ => elementwise(k, op, ints, rows, info),
    };
    info.insert(r, result);
}

/// The facts of an elementwise (or constant, range, splat) result whose
/// analysed dimension has `last` elements.
fn elementwise(
    k: &Kernel,
    op: &Op,
    ints: &HashMap<Value, i64>,
    last: u64,
    info: &HashMap<Value, AxisInfo>,
) -> AxisInfo {
    {
        let r = op.results[0];
        let get = |v: &Value| info.get(v).copied().unwrap_or(UNKNOWN);
        let a = op.args.first().map(get);
        let b = op.args.get(1).map(get);
        match &op.kind {
            OpKind::Const(c) => {
                let div = match c {
                    Const::Int(i) => pow2_factor(*i),
                    Const::Float(_) => 1,
                };
                AxisInfo {
                    contiguity: 1,
                    divisibility: div,
                    constancy: last,
                }
            }
            OpKind::Arange(start, end) => AxisInfo {
                contiguity: (end - start) as u64,
                divisibility: pow2_factor(*start),
                constancy: 1,
            },
            OpKind::Splat => {
                let x = a.unwrap_or(UNKNOWN);
                AxisInfo {
                    contiguity: 1,
                    divisibility: x.divisibility,
                    constancy: last,
                }
            }
            OpKind::MultipleOf(v) => {
                let x = a.unwrap_or(UNKNOWN);
                AxisInfo {
                    divisibility: x.divisibility.max(*v.last().unwrap_or(&1) as u64),
                    ..x
                }
            }
            OpKind::MaxContiguous(v) => {
                let x = a.unwrap_or(UNKNOWN);
                AxisInfo {
                    contiguity: x.contiguity.max(*v.last().unwrap_or(&1) as u64),
                    ..x
                }
            }
            OpKind::AddPtr => {
                let (p, o) = (a.unwrap_or(UNKNOWN), b.unwrap_or(UNKNOWN));
                let size = k
                    .ty(r)
                    .elem
                    .pointee()
                    .map(|d| d.size_bytes() as u64)
                    .unwrap_or(1);
                AxisInfo {
                    // As for `add`: a contiguous run plus a uniform offset stays contiguous.
                    contiguity: gcd(p.contiguity, o.constancy).max(gcd(o.contiguity, p.constancy)),
                    divisibility: gcd(p.divisibility, o.divisibility.saturating_mul(size)),
                    constancy: gcd(p.constancy, o.constancy),
                }
            }
            OpKind::Binary(BinOp::Add) | OpKind::Binary(BinOp::Sub) => {
                let (x, y) = (a.unwrap_or(UNKNOWN), b.unwrap_or(UNKNOWN));
                // `c - offsets` runs backwards: only `offsets - c` stays contiguous.
                let backwards = if op.kind == OpKind::Binary(BinOp::Sub) {
                    1
                } else {
                    gcd(y.contiguity, x.constancy)
                };
                AxisInfo {
                    contiguity: gcd(x.contiguity, y.constancy).max(backwards),
                    divisibility: gcd(x.divisibility, y.divisibility),
                    constancy: gcd(x.constancy, y.constancy),
                }
            }
            OpKind::Binary(BinOp::Rem) => {
                let (x, y) = (a.unwrap_or(UNKNOWN), b.unwrap_or(UNKNOWN));
                // `offsets % n` with a uniform `n`: a contiguous run that starts
                // at a multiple of n's divisibility does not wrap before it.
                let uniform = y.constancy >= last;
                AxisInfo {
                    contiguity: if uniform {
                        gcd(x.contiguity, y.divisibility)
                    } else {
                        1
                    },
                    divisibility: gcd(x.divisibility, y.divisibility),
                    constancy: gcd(x.constancy, y.constancy),
                }
            }
            OpKind::Binary(BinOp::Mul) => {
                let (x, y) = (a.unwrap_or(UNKNOWN), b.unwrap_or(UNKNOWN));
                AxisInfo {
                    contiguity: 1,
                    divisibility: x.divisibility.saturating_mul(y.divisibility).min(HUGE),
                    constancy: gcd(x.constancy, y.constancy),
                }
            }
            OpKind::Cmp(_) => {
                let (x, y) = (a.unwrap_or(UNKNOWN), b.unwrap_or(UNKNOWN));
                // `offsets < n`: constant over runs that start at multiples of
                // both divisibilities and stay inside a contiguous run.
                let run = |c: &AxisInfo, s: &AxisInfo| {
                    if s.constancy >= c.contiguity.max(1) {
                        gcd(c.contiguity, gcd(c.divisibility, s.divisibility))
                    } else {
                        1
                    }
                };
                let c = gcd(x.constancy, y.constancy)
                    .max(run(&x, &y))
                    .max(run(&y, &x));
                AxisInfo {
                    contiguity: 1,
                    divisibility: 1,
                    constancy: c,
                }
            }
            OpKind::Cast => {
                let x = a.unwrap_or(UNKNOWN);
                let from = k.ty(op.args[0]).dtype();
                let to = k.ty(r).dtype();
                match (from, to) {
                    // Integer widening keeps every value, so runs and
                    // multiples survive (`pid.to(tl.int64) * BLOCK +
                    // tl.arange(...)`); narrowing keeps them for runs that
                    // do not wrap, which the divisibility cap accounts for.
                    (Some(f), Some(t))
                        if f.is_int() && t.is_int() && f.bits() > 1 && t.bits() > 1 =>
                    {
                        let cap = 1u64 << (t.bits().min(f.bits()).saturating_sub(1)).min(30);
                        AxisInfo {
                            divisibility: x.divisibility.min(if t.bits() < f.bits() {
                                cap
                            } else {
                                HUGE
                            }),
                            ..x
                        }
                    }
                    // Other casts map equal values to equal values.
                    _ => AxisInfo {
                        contiguity: 1,
                        divisibility: 1,
                        constancy: x.constancy,
                    },
                }
            }
            OpKind::Binary(BinOp::Shl) => {
                let (x, y) = (a.unwrap_or(UNKNOWN), b.unwrap_or(UNKNOWN));
                // Shifting by a constant amount multiplies by a power of two.
                let shift = match op.args.get(1).and_then(|v| ints.get(v)) {
                    Some(&s) if (0..30).contains(&s) => s as u32,
                    _ => 0,
                };
                AxisInfo {
                    contiguity: 1,
                    divisibility: x.divisibility.saturating_mul(1 << shift).min(HUGE),
                    constancy: gcd(x.constancy, y.constancy),
                }
            }
            OpKind::Binary(BinOp::And) | OpKind::Binary(BinOp::Or) => {
                let (x, y) = (a.unwrap_or(UNKNOWN), b.unwrap_or(UNKNOWN));
                AxisInfo {
                    contiguity: 1,
                    divisibility: 1,
                    constancy: gcd(x.constancy, y.constancy),
                }
            }
            _ => UNKNOWN,
        }
    }
}
