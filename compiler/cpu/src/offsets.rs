//! Loop-carried pointer blocks advanced by one offset for every element
//! (`a_ptrs += BLOCK_K * stride_ak` in a K loop) become a carried scalar
//! offset: the loop carries `o: i64` from 0, adds the step each iteration,
//! and the block is `addptr(initial, splat(o))` where the body uses it.
//!
//! On the CPU backend a carried block lives in the frame, so advancing it
//! rewrote every pointer of it each iteration (for the tutorial matmul's
//! 128 x 32 tiles, 8 192 pointers stored per K step). Rewritten, the block
//! is computed inside the fused loop of the load that reads it, from the
//! initial block's first address and `o`, and nothing is stored. Addresses
//! are the same: 64-bit pointers advanced by sign-extended offsets wrap the
//! same whether the offsets are added one at a time or summed first.
//!
//! The rewrite is the CPU backend's own (the GPU keeps pointer blocks in
//! registers, where LLVM does the same strength reduction).

use tilebook_tir::{BinOp, Const, DType, Elem, Kernel, Loc, Op, OpKind, Region, Type, Value};

/// The kernel with every qualifying carried pointer block of every `for`
/// loop (nested ones too) carried as a scalar offset.
pub fn carried_offsets(k: &Kernel) -> Kernel {
    let mut k = k.clone();
    let mut body = std::mem::take(&mut k.body);
    rewrite_region(&mut k, &mut body);
    k.body = body;
    k
}

fn rewrite_region(k: &mut Kernel, r: &mut Region) {
    let mut i = 0;
    while i < r.ops.len() {
        for sub in &mut r.ops[i].regions {
            rewrite_region(k, sub);
        }
        if r.ops[i].kind == OpKind::For {
            let (before, after) = rewrite_for(k, &mut r.ops[i]);
            // The final blocks only where something after the loop reads them.
            let after: Vec<Op> = after
                .into_iter()
                .filter(|(result, _)| uses_in(r, *result) > 0)
                .flat_map(|(_, ops)| ops)
                .collect();
            let n = before.len();
            r.ops.splice(i + 1..i + 1, after);
            r.ops.splice(i..i, before);
            i += n;
        }
        i += 1;
    }
}

/// The step of a carried block `arg` whose yielded value is
/// `addptr(arg, u)` with `u` the same offset everywhere: `splat s` of an
/// `i32`/`i64` scalar, or an integer constant block.
enum Step {
    Scalar(Value),
    Constant(i64),
}

fn uniform_step(k: &Kernel, body: &Region, arg: Value, yielded: Value) -> Option<Step> {
    let inc = body
        .ops
        .iter()
        .find(|o| o.results.first() == Some(&yielded))?;
    if inc.kind != OpKind::AddPtr || inc.args[0] != arg {
        return None;
    }
    let u = inc.args[1];
    let ud = k.ty(u).dtype()?;
    if !matches!(ud, DType::I32 | DType::I64) {
        return None;
    }
    let mut found = None;
    tilebook_tir::walk_ops(body, &mut |o| {
        if o.results.first() == Some(&u) {
            found = Some(o.clone());
        }
    });
    // Defined outside the loop: look no further (not worth a kernel walk).
    let def = found?;
    match def.kind {
        OpKind::Splat => Some(Step::Scalar(def.args[0])),
        OpKind::Const(Const::Int(v)) => Some(Step::Constant(v)),
        _ => None,
    }
}

fn uses_in(r: &Region, v: Value) -> usize {
    let mut n = 0;
    tilebook_tir::walk_ops(r, &mut |o| n += o.args.iter().filter(|a| **a == v).count());
    n
}

/// Uses of `v` by `o` and the ops of its regions.
fn uses_by(o: &Op, v: Value) -> usize {
    o.args.iter().filter(|a| **a == v).count()
        + o.regions.iter().map(|r| uses_in(r, v)).sum::<usize>()
}

/// An op whose one result is the existing value `result` (the rewrite keeps
/// the value numbers its users already name).
fn defining(k: &mut Kernel, kind: OpKind, args: Vec<Value>, result: Value, loc: Loc) -> Op {
    let mut o = k.op(kind, args, vec![], loc);
    o.results = vec![result];
    o
}

/// The ops that rebuild one final block after the loop, and that block.
type Final = (Value, [Op; 2]);

/// Rewrite one `for` op in place; returns the ops to put before it (initial
/// offsets) and after it (the final blocks).
fn rewrite_for(k: &mut Kernel, f: &mut Op) -> (Vec<Op>, Vec<Final>) {
    let (mut before, mut after) = (vec![], vec![]);
    let loc = f.loc;
    let i64t = Type::scalar(DType::I64);
    let carried = f.regions[0].args.len().saturating_sub(1);
    for c in 0..carried {
        let body = &f.regions[0];
        let arg = body.args[1 + c];
        let ty = k.ty(arg).clone();
        if !ty.is_block() || !ty.elem.is_ptr() {
            continue;
        }
        let Some(yield_op) = body.ops.last().filter(|o| o.kind == OpKind::Yield) else {
            continue;
        };
        let yielded = yield_op.args[c];
        let Some(step) = uniform_step(k, body, arg, yielded) else {
            continue;
        };
        let init = f.args[3 + c];
        let result = f.results[c];
        let off_ty = ty.with_elem(Elem::Scalar(DType::I64));

        // Before the loop: the offset starts at 0.
        let zero_op = k.op(
            OpKind::Const(Const::Int(0)),
            vec![],
            vec![i64t.clone()],
            loc,
        );
        let zero = zero_op.results[0];
        before.push(zero_op);
        f.args[3 + c] = zero;

        let body = &mut f.regions[0];
        // In the body: `arg` is now computed from the carried offset, just
        // before its first user (so it fuses with that user's loop).
        let o = k.new_value(i64t.clone());
        body.args[1 + c] = o;
        let first_use = body
            .ops
            .iter()
            .position(|x| uses_by(x, arg) > 0)
            .unwrap_or(body.ops.len() - 1);
        let spread = k.op(OpKind::Splat, vec![o], vec![off_ty.clone()], loc);
        let block = defining(k, OpKind::AddPtr, vec![init, spread.results[0]], arg, loc);
        body.ops.splice(first_use..first_use, [spread, block]);
        // The yield: the offset plus the step.
        let last = body.ops.len() - 1;
        let mut adds = vec![];
        let step64 = match step {
            Step::Scalar(s) if k.ty(s).dtype() == Some(DType::I64) => s,
            Step::Scalar(s) => {
                adds.push(k.op(OpKind::Cast, vec![s], vec![i64t.clone()], loc));
                adds[0].results[0]
            }
            Step::Constant(v) => {
                adds.push(k.op(
                    OpKind::Const(Const::Int(v)),
                    vec![],
                    vec![i64t.clone()],
                    loc,
                ));
                adds[0].results[0]
            }
        };
        adds.push(k.op(
            OpKind::Binary(BinOp::Add),
            vec![o, step64],
            vec![i64t.clone()],
            loc,
        ));
        let next = adds[adds.len() - 1].results[0];
        body.ops[last].args[c] = next;
        body.ops.splice(last..last, adds);
        // The old increment, if nothing else reads it.
        if uses_in(body, yielded) == 0 {
            body.ops.retain(|x| x.results.first() != Some(&yielded));
        }

        // After the loop: the block the loop used to leave.
        let final_off = k.new_value(i64t.clone());
        f.results[c] = final_off;
        let spread_end = k.op(OpKind::Splat, vec![final_off], vec![off_ty], loc);
        let block = defining(
            k,
            OpKind::AddPtr,
            vec![init, spread_end.results[0]],
            result,
            loc,
        );
        after.push((result, [spread_end, block]));
    }
    (before, after)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tutorial matmul's tile IR, as `tests/ir/matmul.py` expects it.
    fn matmul() -> Kernel {
        let src = include_str!("../../../tests/ir/matmul.py");
        let text: String = src
            .split("# expect:\n")
            .nth(1)
            .expect("an expect section")
            .lines()
            .map(|l| format!("{}\n", l.strip_prefix("# ").unwrap_or(l)))
            .collect();
        tilebook_tir::parse::parse_kernel(&text).expect("the expected IR parses")
    }

    #[test]
    fn the_matmul_k_loop_carries_offsets_not_pointer_blocks() {
        let k = matmul();
        let out = carried_offsets(&k);
        tilebook_tir::verify::verify(&out).expect("the rewritten kernel verifies");
        let mut carried = vec![];
        tilebook_tir::walk_ops(&out.body, &mut |o| {
            if o.kind == OpKind::For {
                carried.extend(o.regions[0].args[1..].iter().map(|v| out.ty(*v).clone()));
            }
        });
        // a_ptrs and b_ptrs became i64 offsets; the accumulator stays a block.
        let ptr_blocks = carried.iter().filter(|t| t.elem.is_ptr()).count();
        let offsets = carried
            .iter()
            .filter(|t| **t == Type::scalar(DType::I64))
            .count();
        assert_eq!(
            (ptr_blocks, offsets, carried.len()),
            (0, 2, 3),
            "{carried:?}"
        );
        // The increments of the old blocks are gone; each block is rebuilt
        // once in the body (and the loop's final blocks, unused, are not).
        let addptrs = |k: &Kernel| {
            let mut n = 0;
            tilebook_tir::walk_ops(&k.body, &mut |o| n += (o.kind == OpKind::AddPtr) as usize);
            n
        };
        assert_eq!(addptrs(&k), addptrs(&out));
    }
}
