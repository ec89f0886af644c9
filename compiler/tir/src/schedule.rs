//! Independent dots issued early. In a loop body of several dots
//! (attention's backward), a dot whose operands need no other dot of the
//! iteration is moved, with the pure ops that compute its operands, to
//! just after the iteration's first dot:
//!
//! ```text
//! s = dot(q, k.T); p = exp2(s - lse); dp = dot(do, v.T); ds = p * (dp - delta)
//! ==>
//! s = dot(q, k.T); dp = dot(do, v.T); p = exp2(s - lse); ds = p * (dp - delta)
//! ```
//!
//! On the GPU a dot's tensor-core work runs until the first op that reads
//! its result waits for it, so the second dot then runs while the warps
//! compute the first one's softmax, where before its issue waited for that
//! softmax. A dot moves to just after the dot before it, never above a dot,
//! so dots keep their order. Only values the dot needs move, and only pure
//! ops without regions; a body with an op that has side effects (or
//! regions) between the two places is left alone, so no load moves above a
//! write.

use crate::ir::*;
use std::collections::HashSet;

/// Which dots may move: at least `min_dots` dots at a loop body's top
/// level, and the moved dot's result at most `max_elems` elements a thread
/// over `threads` threads (a moved dot's result lives longer).
#[derive(Clone, Copy, Debug)]
pub struct EarlyDots {
    pub min_dots: usize,
    pub threads: usize,
    pub max_elems: usize,
}

/// Move the independent dots of every qualifying loop body; returns
/// whether anything moved.
pub fn issue_dots_early(k: &mut Kernel, limits: EarlyDots) -> bool {
    let mut body = std::mem::take(&mut k.body);
    let changed = visit(k, &mut body, limits);
    k.body = body;
    changed
}

fn visit(k: &Kernel, r: &mut Region, limits: EarlyDots) -> bool {
    let mut changed = false;
    for op in &mut r.ops {
        if op.kind == OpKind::For {
            if let Some(body) = op.regions.first_mut() {
                changed |= reorder(k, body, limits);
            }
        }
        for sub in &mut op.regions {
            changed |= visit(k, sub, limits);
        }
    }
    changed
}

fn is_dot(op: &Op) -> bool {
    matches!(op.kind, OpKind::Dot { .. })
}

fn reorder(k: &Kernel, body: &mut Region, limits: EarlyDots) -> bool {
    let dots: Vec<usize> = (0..body.ops.len())
        .filter(|&i| is_dot(&body.ops[i]))
        .collect();
    let [first, ..] = dots[..] else {
        return false;
    };
    if dots.len() < limits.min_dots.max(2) {
        return false;
    }
    let dot_results: HashSet<Value> = dots
        .iter()
        .flat_map(|&i| body.ops[i].results.iter().copied())
        .collect();
    let mut changed = false;
    // A dot moves up to just after the dot before it, never above it: the
    // backward's `dk`/`dv` loop, whose `v @ do.T` would pass `p @ do`, ran
    // 2-7 % slower at D = 64 on the H200 with it issued right after the
    // scores (bench/NOTES.md, session 56).
    let mut after = first;
    let mut i = first + 1;
    while i < body.ops.len() {
        if !is_dot(&body.ops[i]) {
            i += 1;
            continue;
        }
        if let Some(moved) = movable(k, body, after, i, &dot_results, limits) {
            if moved.len() + 1 < i - after {
                let tail = body.ops.split_off(after + 1);
                let (mut front, mut back) = (vec![], vec![]);
                for (j, op) in tail.into_iter().enumerate() {
                    let at = after + 1 + j;
                    if at == i || moved.contains(&at) {
                        front.push(op);
                    } else {
                        back.push(op);
                    }
                }
                after += front.len();
                body.ops.extend(front);
                body.ops.extend(back);
                changed = true;
                i = after;
            } else {
                after = i;
            }
        } else {
            after = i;
        }
        i += 1;
    }
    changed
}

/// The positions in `(after, at)` of the ops the dot at `at` needs, where
/// it may move to just after `after`: none of them reads a dot's result,
/// all are pure and without regions, and no op with side effects or
/// regions stays between.
fn movable(
    k: &Kernel,
    body: &Region,
    after: usize,
    at: usize,
    dot_results: &HashSet<Value>,
    limits: EarlyDots,
) -> Option<HashSet<usize>> {
    let dot = &body.ops[at];
    let elems = k.ty(*dot.results.first()?).numel();
    if elems > limits.max_elems.saturating_mul(limits.threads.max(1)) {
        return None;
    }
    let mut need: HashSet<Value> = dot.args.iter().copied().collect();
    let mut moved = HashSet::new();
    for j in (after + 1..at).rev() {
        let op = &body.ops[j];
        if op.results.iter().any(|r| need.contains(r)) {
            if !op.kind.is_pure() || !op.regions.is_empty() || is_dot(op) {
                return None;
            }
            moved.insert(j);
            need.extend(op.args.iter().copied());
        } else if op.kind.has_side_effects() || !op.regions.is_empty() {
            return None;
        }
    }
    if need.iter().any(|v| dot_results.contains(v)) {
        return None;
    }
    Some(moved)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What both test kernels start with: a `[64, 64]` fp16 block `%10`
    /// loaded from `%0` at offsets `%9`, loop bounds `%2..%3` step `%4`, a
    /// zero accumulator `%11`, and `%7` for the output's offsets.
    const PROLOGUE: &str = "\
kernel @k(%0: *fp16 {div=16} \"q\", %1: *fp32 {div=16} \"o\") {
  %2 = const[0] : i32
  %3 = const[256] : i32
  %4 = const[64] : i32
  %5 = arange[0, 64] : <64xi32>
  %6 = reshape %5 : <64x1xi32>
  %7 = broadcast %6 : <64x64xi32>
  %8 = splat %0 : <64x64x*fp16>
  %9 = addptr %8, %7 : <64x64x*fp16>
  %10 = load %9 : <64x64xfp16>
  %11 = const[0.0] : <64x64xfp32>
";

    /// The `dq` loop of attention's backward, reduced: `s`, its softmax,
    /// then `dp` (which needs no other dot), then `dq`.
    fn dq_loop(store: bool) -> Kernel {
        let store = if store { "    store %9, %21\n" } else { "" };
        let text = format!(
            "{PROLOGUE}\
  %12 = for %2, %3, %4, %11 : <64x64xfp32> {{
    ^(%13: i32, %14: <64x64xfp32>):
    %15 = splat %13 : <64x64xi32>
    %16 = addptr %9, %15 : <64x64x*fp16>
    %17 = load %16 : <64x64xfp16>
    %18 = trans[1, 0] %17 : <64x64xfp16>
    %19 = dot %10, %18, %11 : <64x64xfp32>
    %20 = exp2 %19 : <64x64xfp32>
    %21 = cast %20 : <64x64xfp16>
{store}    %22 = trans[1, 0] %10 : <64x64xfp16>
    %23 = dot %17, %22, %11 : <64x64xfp32>
    %24 = mul %20, %23 : <64x64xfp32>
    %25 = cast %24 : <64x64xfp16>
    %26 = dot %25, %17, %14 : <64x64xfp32>
    yield %26
  }}
  %27 = splat %1 : <64x64x*fp32>
  %28 = addptr %27, %7 : <64x64x*fp32>
  store %28, %12
}}
"
        );
        crate::parse::parse_kernel(&text).expect("test kernel parses")
    }

    /// The `dk`/`dv` loop, reduced: `dp` needs no other dot but comes after
    /// `dv`, which reads the scores.
    fn kv_loop() -> Kernel {
        let text = format!(
            "{PROLOGUE}\
  %12, %13 = for %2, %3, %4, %11, %11 : <64x64xfp32>, <64x64xfp32> {{
    ^(%14: i32, %15: <64x64xfp32>, %16: <64x64xfp32>):
    %17 = splat %14 : <64x64xi32>
    %18 = addptr %9, %17 : <64x64x*fp16>
    %19 = load %18 : <64x64xfp16>
    %20 = trans[1, 0] %19 : <64x64xfp16>
    %21 = dot %10, %20, %11 : <64x64xfp32>
    %22 = exp2 %21 : <64x64xfp32>
    %23 = cast %22 : <64x64xfp16>
    %24 = dot %23, %19, %15 : <64x64xfp32>
    %25 = dot %19, %20, %11 : <64x64xfp32>
    %26 = mul %22, %25 : <64x64xfp32>
    %27 = cast %26 : <64x64xfp16>
    %28 = dot %27, %19, %16 : <64x64xfp32>
    yield %24, %28
  }}
  %29 = splat %1 : <64x64x*fp32>
  %30 = addptr %29, %7 : <64x64x*fp32>
  store %30, %12
  store %30, %13
}}
"
        );
        crate::parse::parse_kernel(&text).expect("test kernel parses")
    }

    const LIMITS: EarlyDots = EarlyDots {
        min_dots: 3,
        threads: 128,
        max_elems: 32,
    };

    use crate::ir::last_loop_body as body;

    fn kinds(ops: &[Op]) -> Vec<String> {
        ops.iter()
            .map(|o| {
                format!("{:?}", o.kind)
                    .split([' ', '(', '{'])
                    .next()
                    .unwrap_or("")
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn an_independent_dot_is_issued_after_the_first() {
        let mut k = dq_loop(false);
        assert!(issue_dots_early(&mut k, LIMITS));
        crate::verify::verify(&k).expect("reordered kernel verifies");
        let ops = body(&k);
        let dots: Vec<usize> = (0..ops.len()).filter(|&i| is_dot(&ops[i])).collect();
        let exp = ops.iter().position(|o| o.kind == OpKind::Unary(UnOp::Exp2));
        assert_eq!(dots, vec![4, 6, 11], "{:?}", kinds(&ops));
        assert_eq!(exp, Some(7));
        // The third dot reads both: it stays last.
        assert!(!issue_dots_early(&mut k, LIMITS));
    }

    #[test]
    fn nothing_moves_past_a_store_or_in_a_loop_of_two_dots() {
        let mut k = dq_loop(true);
        let before = body(&k);
        assert!(!issue_dots_early(&mut k, LIMITS));
        assert_eq!(body(&k), before);
        let mut k = dq_loop(false);
        let two = EarlyDots {
            min_dots: 4,
            ..LIMITS
        };
        assert!(!issue_dots_early(&mut k, two));
        let small = EarlyDots {
            max_elems: 16,
            ..LIMITS
        };
        assert!(!issue_dots_early(&mut k, small));
    }

    #[test]
    fn a_dot_does_not_pass_an_earlier_dot() {
        let mut k = kv_loop();
        crate::verify::verify(&k).expect("test kernel verifies");
        let before = body(&k);
        assert!(!issue_dots_early(&mut k, LIMITS));
        assert_eq!(body(&k), before);
    }
}
