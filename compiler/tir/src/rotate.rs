//! Rotation of two-dot loops (attention's online softmax): the first dot of
//! iteration `i + 1` is computed at the top of iteration `i` and carried to
//! the next iteration as a loop argument. On the GPU its tensor-core work
//! then runs while the warps compute iteration `i`'s softmax, where before
//! the softmax waited for its own dot (FlashAttention-3's overlap of the
//! softmax with the next `q @ k.T`).
//!
//! ```text
//! for iv, (c...) { k = load(f(iv)); s = dot(q, k); rest(s, c...); yield c'... }
//! ==>
//! s0 = dot(q, load(f(lb), lb < ub))
//! for iv, (c..., s) {
//!     s' = dot(q, load(f(iv + step), iv + step < ub))
//!     rest(s, c...)
//!     yield c'..., s'
//! }
//! ```
//!
//! The loads of the rotated slice are masked by `iv + step < ub`, so the last
//! iteration's extra dot reads no memory (it multiplies the masked tiles and
//! nothing reads its result). A loop qualifies when its body holds exactly
//! two dots at its top level, the first dot's operands come from loads,
//! pure ops, the induction variable and carried values whose next values
//! pure ops compute, the body has no op with side effects (so no write of
//! the loop can be what a rotated load reads), and the step is a positive
//! constant.

use crate::ir::*;
use crate::pipeline::{
    clone_ops, guard_load, less_than, rewrite_loops, slice_through, substitute, LoopHead,
};
use crate::types::Type;
use std::collections::{HashMap, HashSet};

/// Rotate every qualifying loop whose first dot's result has at least
/// `min_rows` rows and takes at most `max_bytes` of registers per thread
/// over `threads` threads (the rotated loop holds two of them at once).
/// Returns whether anything changed.
pub fn rotate_dot_loops(k: &mut Kernel, threads: usize, max_bytes: usize, min_rows: usize) -> bool {
    let mut defs = Defs::default();
    walk_ops(&k.body, &mut |op| {
        if let [r] = op.results.as_slice() {
            match op.kind {
                OpKind::Const(Const::Int(c)) => {
                    defs.ints.insert(*r, c);
                }
                OpKind::Binary(b @ (BinOp::Add | BinOp::Mul)) => {
                    if let [x, y] = op.args.as_slice() {
                        defs.arith.insert(*r, (b, *x, *y));
                    }
                }
                _ => {}
            }
        }
    });
    let limit = Limits {
        bytes: max_bytes.saturating_mul(threads.max(1)),
        rows: min_rows,
    };
    let mut body = std::mem::take(&mut k.body);
    let changed = visit(k, &mut body, &defs, &limit);
    k.body = body;
    if changed {
        crate::passes::dce(k);
    }
    changed
}

/// Which first dots a rotated loop may carry: at most `bytes` of scores
/// over the block, at least `rows` rows of them.
struct Limits {
    bytes: usize,
    rows: usize,
}

/// Integer constants and sums and products of the kernel's values, to
/// recognise a positive constant step and a constant trip count.
#[derive(Default)]
struct Defs {
    ints: HashMap<Value, i64>,
    arith: HashMap<Value, (BinOp, Value, Value)>,
}

impl Defs {
    /// `ub - lb` where both are the same value plus or times constants
    /// (`i * B` and `(i + 1) * B`, a causal diagonal's bounds; `lb + c`).
    fn span(&self, lb: Value, ub: Value) -> Option<i64> {
        let int = |v: &Value| self.ints.get(v).copied();
        match self.arith.get(&ub)? {
            (BinOp::Add, x, c) if *x == lb => int(c),
            (BinOp::Add, c, x) if *x == lb => int(c),
            (BinOp::Mul, sum, c) => {
                let c = int(c)?;
                let (BinOp::Add, x, a) = self.arith.get(sum)? else {
                    return None;
                };
                let a = int(a)?;
                match self.arith.get(&lb)? {
                    (BinOp::Mul, y, d) if y == x && int(d) == Some(c) => a.checked_mul(c),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

/// Loops of at most this many iterations (known at compile time) are not
/// rotated: the rotated loop's last dot is wasted work, and a short loop has
/// little softmax to overlap (a causal diagonal block runs once or twice).
const MIN_TRIPS: i64 = 3;

fn visit(k: &mut Kernel, r: &mut Region, defs: &Defs, limit: &Limits) -> bool {
    rewrite_loops(k, r, &mut |k, op| {
        let step = op.args.get(2).and_then(|s| defs.ints.get(s)).copied()?;
        let (lb, ub) = (op.args[0], op.args[1]);
        let short = defs
            .span(lb, ub)
            .is_some_and(|n| n <= MIN_TRIPS.saturating_sub(1).saturating_mul(step));
        if step > 0 && !short {
            rotate_one(k, op, limit)
        } else {
            None
        }
    })
}

/// Bytes of a block's elements (4 per element of 32 bits or less).
fn block_bytes(t: &Type) -> usize {
    let size = t.dtype().map_or(4, |d| d.size_bytes().max(4));
    t.shape
        .iter()
        .try_fold(size, |a, &n| a.checked_mul(n))
        .unwrap_or(usize::MAX)
}

/// Rotate one loop; returns the prologue to place before it.
fn rotate_one(k: &mut Kernel, for_op: &mut Op, limit: &Limits) -> Option<Vec<Op>> {
    let head = LoopHead::of(for_op);
    let body = &for_op.regions[0].ops;
    let y = body.last().filter(|y| y.kind == OpKind::Yield)?;
    let yields = y.args.clone();
    // Exactly two dots, both at the top level; nothing with side effects.
    let mut nested_dots = 0;
    let mut effects = false;
    for op in body {
        effects |= op.kind.has_side_effects();
        for sub in &op.regions {
            walk_ops(sub, &mut |o| {
                effects |= o.kind.has_side_effects();
                nested_dots += usize::from(matches!(o.kind, OpKind::Dot { .. }));
            });
        }
    }
    let dots: Vec<usize> = body
        .iter()
        .enumerate()
        .filter(|(_, op)| matches!(op.kind, OpKind::Dot { .. }))
        .map(|(i, _)| i)
        .collect();
    let [d1, d2] = dots[..] else { return None };
    if effects || nested_dots > 0 {
        return None;
    }
    let s_old = body[d1].results[0];
    let rows = k.ty(s_old).shape.first().copied().unwrap_or(1);
    if block_bytes(k.ty(s_old)) > limit.bytes || rows < limit.rows {
        return None;
    }
    let inside: HashSet<Value> = body
        .iter()
        .flat_map(|op| op.results.iter().copied())
        .collect();
    let mut sl = slice_through(body, &body[d1].args, &inside, true)?;
    // The second dot must not be part of the first's operands.
    if sl.contains(&d2) {
        return None;
    }
    sl.push(d1);
    // Carried values the slice reads need their next values, from pure ops.
    let used: HashSet<Value> = sl
        .iter()
        .flat_map(|&i| body[i].args.iter().copied())
        .collect();
    let needed = head.needed(&used);
    let needed_yields: Vec<Value> = needed.iter().map(|&i| yields[i]).collect();
    let yield_slice = slice_through(body, &needed_yields, &inside, false)?;
    let loc = body[d1].loc;
    let ops: Vec<Op> = sl.iter().map(|&i| body[i].clone()).collect();

    // Prologue: the first iteration's dot, its loads guarded by lb < ub.
    let mut prologue = vec![];
    let first_cond = less_than(k, head.lb, head.ub, loc, &mut prologue);
    let mut subst = head.first_iteration();
    let (s0, first_loads) = emit_guarded(k, &ops, &mut subst, first_cond, &mut prologue, s_old);

    // Top of the body: the next iteration's carried values and dot.
    let mut top = vec![];
    let yield_ops = yield_slice.iter().map(|&i| body[i].clone()).collect();
    let next = head.next_iteration(&yields, &needed, yield_ops);
    let (_, cond, mut subst) = next.emit(k, loc, &mut top);
    let (s_next, next_loads) = emit_guarded(k, &ops, &mut subst, cond, &mut top, s_old);

    // This iteration's dot result becomes a loop argument; the old dot goes
    // (its loads and operand ops become dead and DCE removes them).
    let s_arg = k.new_value(k.ty(s_old).clone());
    let replace: HashMap<Value, Value> = [(s_old, s_arg)].into_iter().collect();
    let region = &mut for_op.regions[0];
    let mut new_body = top;
    for (i, mut op) in region.ops.drain(..).enumerate() {
        if i == d1 {
            continue;
        }
        substitute(&mut op, &replace);
        new_body.push(op);
    }
    // The scores, and each rotated load as a value the body does not read:
    // it ties the load before the loop to the body's into one sequence (a
    // backend that stages loaded tiles in a ring gives them one slot per
    // stage instead of one each).
    let mut carried_new = vec![(s_arg, s0, s_next)];
    for (&first, &next) in first_loads.iter().zip(&next_loads) {
        let arg = k.new_value(k.ty(first).clone());
        carried_new.push((arg, first, next));
    }
    for &(arg, _, next) in &carried_new {
        if let Some(y) = new_body.last_mut() {
            y.args.push(next);
        }
        region.args.push(arg);
    }
    region.ops = new_body;
    for (arg, init, _) in carried_new {
        for_op.args.push(init);
        let r = k.new_value(k.ty(arg).clone());
        for_op.results.push(r);
    }
    Some(prologue)
}

/// Clone `ops` into `out` with `subst`, every load masked by `cond` as well;
/// returns the clone of `result` and the loads' results.
fn emit_guarded(
    k: &mut Kernel,
    ops: &[Op],
    subst: &mut HashMap<Value, Value>,
    cond: Value,
    out: &mut Vec<Op>,
    result: Value,
) -> (Value, Vec<Value>) {
    let mut loads = vec![];
    for op in ops {
        let mut cloned = clone_ops(k, std::slice::from_ref(op), subst);
        let Some(c) = cloned.pop() else { continue };
        if matches!(c.kind, OpKind::Load { .. }) {
            let guarded = guard_load(k, c, cond, out);
            loads.extend(guarded.results.first().copied());
            out.push(guarded);
        } else {
            out.push(c);
        }
    }
    (*subst.get(&result).unwrap_or(&result), loads)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loop of `s = dot(q, load(p + iv)); acc = dot(s, v, acc)`.
    fn two_dot_loop() -> Kernel {
        let text = "\
kernel @k(%0: *fp16 {div=16} \"a\", %1: *fp16 {div=16} \"o\") {
  %2 = const[0] : i32
  %3 = const[64] : i32
  %4 = const[16] : i32
  %5 = arange[0, 16] : <16xi32>
  %6 = reshape %5 : <16x1xi32>
  %7 = broadcast %6 : <16x16xi32>
  %8 = splat %0 : <16x16x*fp16>
  %9 = addptr %8, %7 : <16x16x*fp16>
  %10 = load %9 : <16x16xfp16>
  %11 = const[0.0] : <16x16xfp32>
  %12 = for %2, %3, %4, %11 : <16x16xfp32> {
    ^(%13: i32, %14: <16x16xfp32>):
    %15 = splat %13 : <16x16xi32>
    %16 = addptr %9, %15 : <16x16x*fp16>
    %17 = load %16 : <16x16xfp16>
    %18 = dot %10, %17, %11 : <16x16xfp32>
    %19 = cast %18 : <16x16xfp16>
    %20 = dot %19, %10, %14 : <16x16xfp32>
    yield %20
  }
  %21 = splat %1 : <16x16x*fp16>
  %22 = addptr %21, %7 : <16x16x*fp16>
  %23 = cast %12 : <16x16xfp16>
  store %22, %23
}
";
        crate::parse::parse_kernel(text).expect("test kernel parses")
    }

    #[test]
    fn the_first_dot_moves_to_the_top_of_the_next_iteration() {
        let mut k = two_dot_loop();
        assert!(rotate_dot_loops(&mut k, 128, 1024, 16));
        crate::verify::verify(&k).expect("rotated kernel verifies");
        let text = crate::print::print_kernel(&k);
        // One dot before the loop, two in it; the loop carries the score.
        let body_start = text.find("for ").expect("loop");
        assert_eq!(text[..body_start].matches("dot ").count(), 1, "{text}");
        assert_eq!(text[body_start..].matches("dot ").count(), 2, "{text}");
        let mut loop_op = None;
        walk_ops(&k.body, &mut |op| {
            if op.kind == OpKind::For {
                loop_op = Some(op.clone());
            }
        });
        let l = loop_op.expect("loop");
        // iv, acc, the scores and the rotated load.
        assert_eq!(l.regions[0].args.len(), 4, "{text}");
        // The first op of the body that is a dot is the rotated one; the
        // loads of the body are masked by the next iteration's bound.
        let body = &l.regions[0].ops;
        let loads: Vec<&Op> = body
            .iter()
            .filter(|o| matches!(o.kind, OpKind::Load { .. }))
            .collect();
        assert_eq!(loads.len(), 1, "{text}");
        assert_eq!(
            loads[0].kind,
            OpKind::Load {
                mask: true,
                other: false,
                tma: None,
                map: None,
                guards: 1,
            }
        );
        let y = body.last().expect("yield");
        let first_dot = body
            .iter()
            .find(|o| matches!(o.kind, OpKind::Dot { .. }))
            .expect("dot");
        let load = loads[0].results[0];
        assert_eq!(y.args[1..], [first_dot.results[0], load], "{text}");
    }

    #[test]
    fn wide_scores_and_loops_with_stores_are_left_alone() {
        let mut k = two_dot_loop();
        // 16 x 16 fp32 over 128 threads is 8 bytes a thread.
        assert!(!rotate_dot_loops(&mut k, 128, 4, 16));
        assert_eq!(k, two_dot_loop());
        // 16 rows where 32 are asked for.
        assert!(!rotate_dot_loops(&mut k, 128, 1024, 32));
        assert_eq!(k, two_dot_loop());
    }
}
