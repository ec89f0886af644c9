//! Loop-carried accumulations updated as soon as their terms exist. In a
//! loop body without dots, an update `acc' = f(acc, terms)` that the body
//! yields, computed by elementwise ops, moves with the single-use ops that
//! build its terms to just after the last of their other operands:
//!
//! ```text
//! x = load; dy = load; xh = (x - mean) * rs; g = w * dy
//! a = sum(xh * g); c = sum(g); store(dx, (g - (xh * a + c)) * rs)
//! dw' = dw + dy * xh; db' = db + dy
//! ==>
//! x = load; dy = load; db' = db + dy; xh = (x - mean) * rs; dw' = dw + dy * xh
//! g = w * dy; a = sum(xh * g); c = sum(g); store(dx, (g - (xh * a + c)) * rs)
//! ```
//!
//! Written at the end (tutorial 05's order), the update keeps its terms
//! live through everything between: the layer-norm backward at 16384
//! columns held `dy` (64 floats a thread at 8 warps) across both row sums
//! and the store, and spilled 142 words a thread where this order spills 98
//! (1670 -> 2090 GB/s on the H200, bench/NOTES.md session 58). The move
//! never lengthens a live range: the carried `acc` is live up to the update
//! either way and `acc'` replaces it from there, the moved ops' other
//! operands are live at least as long as before, and the moved temporaries
//! have no other reader. Only pure elementwise ops move, so no memory access
//! changes order, and the result is the same bit for bit.

use crate::ir::*;
use std::collections::{HashMap, HashSet};

/// Move the accumulations of every dot-free loop body; returns whether
/// anything moved.
pub fn accumulate_early(k: &mut Kernel) -> bool {
    visit(&mut k.body)
}

fn visit(r: &mut Region) -> bool {
    let mut changed = false;
    for op in &mut r.ops {
        if op.kind == OpKind::For {
            if let Some(body) = op.regions.first_mut() {
                changed |= reorder(body);
            }
        }
        for sub in &mut op.regions {
            changed |= visit(sub);
        }
    }
    changed
}

/// The ops that may move: elementwise arithmetic without memory or regions.
fn movable_kind(kind: &OpKind) -> bool {
    matches!(
        kind,
        OpKind::Unary(_)
            | OpKind::Binary(_)
            | OpKind::Cmp(_)
            | OpKind::Select
            | OpKind::Fma
            | OpKind::Cast
    )
}

/// Every value read in `op` (its operands and, in its regions, operands of
/// nested ops), each once per reading op.
fn reads(op: &Op, out: &mut Vec<Value>) {
    out.extend(op.args.iter().copied());
    for r in &op.regions {
        for inner in &r.ops {
            reads(inner, out);
        }
    }
}

fn has_dot(r: &Region) -> bool {
    r.ops
        .iter()
        .any(|op| matches!(op.kind, OpKind::Dot { .. }) || op.regions.iter().any(has_dot))
}

fn reorder(body: &mut Region) -> bool {
    if has_dot(body) {
        return false;
    }
    let Some(last) = body.ops.last() else {
        return false;
    };
    if last.kind != OpKind::Yield {
        return false;
    }
    let carried: Vec<(Value, Value)> = body
        .args
        .iter()
        .skip(1)
        .copied()
        .zip(last.args.iter().copied())
        .collect();
    let mut changed = false;
    for (acc, next) in carried {
        changed |= move_update(body, acc, next);
    }
    changed
}

/// Move the ops computing `next` from the carried `acc` (see the module
/// text) up to just after their last outside operand; whether they moved.
fn move_update(body: &mut Region, acc: Value, next: Value) -> bool {
    let mut def: HashMap<Value, usize> = HashMap::new();
    let mut uses: HashMap<Value, usize> = HashMap::new();
    for (i, op) in body.ops.iter().enumerate() {
        for &r in &op.results {
            def.insert(r, i);
        }
        let mut read = vec![];
        reads(op, &mut read);
        for v in read {
            *uses.entry(v).or_default() += 1;
        }
    }
    let Some(&top) = def.get(&next) else {
        return false;
    };
    if !movable_kind(&body.ops[top].kind) || uses.get(&next) != Some(&1) {
        return false;
    }
    // The group: the update and the single-use ops that build its terms.
    let mut group: HashSet<usize> = HashSet::from([top]);
    let mut work = vec![top];
    while let Some(i) = work.pop() {
        for a in &body.ops[i].args {
            let Some(&j) = def.get(a) else { continue };
            let op = &body.ops[j];
            if !group.contains(&j)
                && movable_kind(&op.kind)
                && op.results.len() == 1
                && uses.get(a) == Some(&1)
            {
                group.insert(j);
                work.push(j);
            }
        }
    }
    // `acc` must be read by the group only, so that it dies where `next` is made.
    let acc_reads = group
        .iter()
        .flat_map(|&i| body.ops[i].args.iter())
        .filter(|&&a| a == acc)
        .count();
    if acc_reads == 0 || uses.get(&acc) != Some(&acc_reads) {
        return false;
    }
    let after = group
        .iter()
        .flat_map(|&i| body.ops[i].args.iter())
        .filter_map(|a| def.get(a).copied())
        .filter(|j| !group.contains(j))
        .max();
    let to = after.map_or(0, |j| j + 1);
    let first = group.iter().copied().min().unwrap_or(top);
    // Nothing to gain unless some op not in the group lies between.
    if (to..=top).all(|i| group.contains(&i)) || to > first {
        return false;
    }
    let tail = body.ops.split_off(to);
    let (mut moved, mut rest) = (vec![], vec![]);
    for (j, op) in tail.into_iter().enumerate() {
        if group.contains(&(to + j)) {
            moved.push(op);
        } else {
            rest.push(op);
        }
    }
    body.ops.extend(moved);
    body.ops.extend(rest);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layer-norm backward's row loop, reduced (values numbered in
    /// order of definition, as the parser numbers them): `%21` is x, `%24`
    /// dy, `%26` xh, `%27` g; the row sum `%29` and the store come before
    /// the updates of dw (`%16` -> `%33`) and db (`%17` -> `%34`).
    fn ln_loop(dot: bool) -> Kernel {
        let extra = if dot {
            "    %40 = reshape %27 : <16x4xfp32>\n    %41 = reshape %26 : <4x16xfp32>\n    %42 = const[0.0] : <16x16xfp32>\n    %43 = dot %40, %41, %42 : <16x16xfp32>\n"
        } else {
            ""
        };
        let text = format!(
            "\
kernel @k(%0: *fp16 {{div=16}} \"x\", %1: *fp16 {{div=16}} \"dx\", %2: fp32 \"m\") {{
  %3 = const[0] : i32
  %4 = const[8] : i32
  %5 = const[1] : i32
  %6 = arange[0, 64] : <64xi32>
  %7 = splat %0 : <64x*fp16>
  %8 = addptr %7, %6 : <64x*fp16>
  %9 = load %8 : <64xfp16>
  %10 = cast %9 : <64xfp32>
  %11 = const[0.0] : <64xfp32>
  %12 = splat %1 : <64x*fp16>
  %13, %14 = for %3, %4, %5, %11, %11 : <64xfp32>, <64xfp32> {{
    ^(%15: i32, %16: <64xfp32>, %17: <64xfp32>):
    %18 = splat %15 : <64xi32>
    %19 = addptr %8, %18 : <64x*fp16>
    %20 = load %19 : <64xfp16>
    %21 = cast %20 : <64xfp32>
    %22 = addptr %12, %18 : <64x*fp16>
    %23 = load %22 : <64xfp16>
    %24 = cast %23 : <64xfp32>
    %25 = splat %2 : <64xfp32>
    %26 = sub %21, %25 : <64xfp32>
    %27 = mul %10, %24 : <64xfp32>
    %28 = mul %26, %27 : <64xfp32>
    %29 = reduce[0, add] %28 : fp32
    %30 = splat %29 : <64xfp32>
    %31 = sub %27, %30 : <64xfp32>
    %32 = cast %31 : <64xfp16>
{extra}    store %22, %32
    %33 = fma %24, %26, %16 : <64xfp32>
    %34 = add %17, %24 : <64xfp32>
    yield %33, %34
  }}
  %35 = cast %13 : <64xfp16>
  store %8, %35
}}
"
        );
        crate::parse::parse_kernel(&text).expect("test kernel parses")
    }

    use crate::ir::last_loop_body as body;

    /// Where in the loop body the op that defines the value named `%v` in
    /// `ln_loop`'s text now stands (the parser numbers values its own way,
    /// so names are matched through the source's op order).
    fn position(ops: &[Op], v: u32) -> usize {
        let original = body(&ln_loop(false));
        let name_at = |name: u32| -> Option<Value> {
            // The body's first op defines `%18`; each defines one value
            // but the store, which stands between `%32` and `%33`.
            let i = usize::try_from(name.checked_sub(18)?).ok()? + usize::from(name > 32);
            original.get(i)?.results.first().copied()
        };
        let value = name_at(v).expect("a value of the loop body");
        ops.iter()
            .position(|o| o.results.contains(&value))
            .expect("value defined in the body")
    }

    #[test]
    fn updates_move_to_just_after_their_terms() {
        let mut k = ln_loop(false);
        crate::verify::verify(&k).expect("test kernel verifies");
        assert!(accumulate_early(&mut k));
        crate::verify::verify(&k).expect("reordered kernel verifies");
        let ops = body(&k);
        // db' right after dy, dw' right after xh, both before the row sum.
        assert_eq!(position(&ops, 34), position(&ops, 24) + 1);
        assert_eq!(position(&ops, 33), position(&ops, 26) + 1);
        assert!(position(&ops, 33) < position(&ops, 29));
        // Everything else keeps its order, and a second run moves nothing.
        let rest: Vec<usize> = [21, 24, 25, 26, 27, 28, 29, 30, 31, 32]
            .iter()
            .map(|&v| position(&ops, v))
            .collect();
        assert!(rest.windows(2).all(|w| w[0] < w[1]), "{rest:?}");
        assert!(!accumulate_early(&mut k));
    }

    #[test]
    fn loops_with_dots_are_left_alone() {
        let mut k = ln_loop(true);
        crate::verify::verify(&k).expect("test kernel verifies");
        let before = body(&k);
        assert!(!accumulate_early(&mut k));
        assert_eq!(body(&k), before);
    }

    #[test]
    fn an_accumulator_read_elsewhere_stays() {
        // `%16` (dw) also feeds the store: moving its update would keep
        // both `%16` and `%33` live, so nothing moves for it.
        let mut k = ln_loop(false);
        for op in k.body.ops.iter_mut().filter(|op| op.kind == OpKind::For) {
            let dw = op.regions[0].args[1];
            // `%31 = sub %27, %30` becomes `%31 = sub %16, %30`.
            let sub = &mut op.regions[0].ops[13];
            assert_eq!(sub.kind, OpKind::Binary(BinOp::Sub));
            sub.args[0] = dw;
        }
        crate::verify::verify(&k).expect("verifies");
        assert!(accumulate_early(&mut k));
        let ops = body(&k);
        assert!(position(&ops, 33) > position(&ops, 32));
        assert_eq!(position(&ops, 34), position(&ops, 24) + 1);
    }
}
