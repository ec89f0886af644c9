//! Software pipelining of `for` loops by one stage: the loads of iteration
//! `i + 1` are issued at the top of iteration `i`, carried to the next
//! iteration as loop arguments, so their latency overlaps this iteration's
//! work (on the GPU: the tensor-core MMAs of the previous tile).
//!
//! A load qualifies when its operands (pointer, mask, other) are computed in
//! the loop body only from the loop's arguments, the induction variable and
//! values defined outside, through pure ops. The prefetch's mask is ANDed
//! with `iv + step < ub`, so the extra iteration at the end touches no memory.
//!
//! ```text
//! for iv, (p) { x = load(p); ...; yield p + 32 }
//! ==>
//! x0 = load(p0, lb < ub)
//! for iv, (p, x) { p' = p + 32; x' = load(p', iv + step < ub); ...; yield p', x' }
//! ```

use crate::ir::*;
use crate::provenance::{provenance, Provenance};
use crate::types::{DType, Elem, Type};
use std::collections::{HashMap, HashSet};

/// Which loops [`pipeline_loads`] may pipeline.
#[derive(Copy, Clone, Debug)]
pub struct PipelineOptions {
    /// Threads of a program (a prefetched block costs each thread its
    /// register bytes over these).
    pub threads: usize,
    /// Also loops without a `dot`, whose prefetched blocks wait in registers
    /// (a row loop's next row loads while this row is reduced and stored):
    /// one stage, where the blocks take at most this many register bytes
    /// per thread (elements narrower than 32 bits count 4 bytes); 0: none.
    pub plain_budget: usize,
    /// Vectors longer than this that a loop with a `dot` only broadcasts
    /// along a new leading axis (`lse[None, :]` against the scores) are not
    /// prefetched but loaded at the top of the body: a backend that loads
    /// them into the columns of the dot's layout then holds them for part
    /// of an iteration, not across it; 0: prefetched like the rest.
    pub column_hoist_above: usize,
}

/// Pipeline every innermost `for` loop that loads. Returns whether it changed anything.
pub fn pipeline_loads(k: &mut Kernel, options: PipelineOptions) -> bool {
    // Integer constants and program counts, to recognise loops with a
    // positive step (a constant, or `tl.num_programs` as a grid-stride loop
    // steps).
    let mut positive = HashSet::new();
    walk_ops(&k.body, &mut |op| match (&op.kind, op.results.as_slice()) {
        (OpKind::Const(Const::Int(c)), [r]) if *c > 0 => {
            positive.insert(*r);
        }
        (OpKind::NumPrograms(_), [r]) => {
            positive.insert(*r);
        }
        _ => {}
    });
    let roots = PointerRoots(provenance(k));
    let mut body = std::mem::take(&mut k.body);
    let changed = visit(k, &mut body, &positive, &(options, &roots));
    k.body = body;
    changed
}

/// The parameters a kernel's pointers point into (`provenance`), to tell
/// whether a loop's writes may be what its later iterations load.
struct PointerRoots(Provenance);

impl PointerRoots {
    fn root(&self, v: Value) -> Option<usize> {
        self.0.get(&v).copied().flatten()
    }

    /// Whether prefetching a loop's loads cannot read what an earlier
    /// iteration writes: every load and store points into a known
    /// parameter, no store into one a load reads, and no other op with
    /// side effects (atomics, barriers, impure inline assembly) in the body.
    fn loads_independent_of_writes(&self, body: &[Op], loads: &[usize]) -> bool {
        let mut read = HashSet::new();
        for &i in loads {
            match body[i].args.first().and_then(|&p| self.root(p)) {
                Some(r) => read.insert(r),
                None => return false,
            };
        }
        let mut ok = true;
        let mut check = |op: &Op| {
            if !op.kind.has_side_effects() {
                return;
            }
            let store_root = match op.kind {
                OpKind::Store { .. } => op.args.first().and_then(|&p| self.root(p)),
                _ => None,
            };
            ok &= store_root.is_some_and(|r| !read.contains(&r));
        };
        for op in body {
            check(op);
            for sub in &op.regions {
                walk_ops(sub, &mut check);
            }
        }
        ok
    }
}

fn visit(
    k: &mut Kernel,
    r: &mut Region,
    positive: &HashSet<Value>,
    ctx: &(PipelineOptions, &PointerRoots),
) -> bool {
    rewrite_loops(k, r, &mut |k, op| {
        let positive_step = op.args.get(2).is_some_and(|s| positive.contains(s));
        if positive_step {
            pipeline_one(k, op, ctx)
        } else {
            None
        }
    })
}

/// Call `f` on every `for` loop of `r`, inner loops first, and place the
/// ops it returns (a prologue) right before that loop. Returns whether `f`
/// changed anything.
pub(crate) fn rewrite_loops(
    k: &mut Kernel,
    r: &mut Region,
    f: &mut dyn FnMut(&mut Kernel, &mut Op) -> Option<Vec<Op>>,
) -> bool {
    let mut changed = false;
    let mut i = 0;
    while i < r.ops.len() {
        for sub in &mut r.ops[i].regions {
            changed |= rewrite_loops(k, sub, f);
        }
        if r.ops[i].kind == OpKind::For {
            if let Some(prologue) = f(k, &mut r.ops[i]) {
                let n = prologue.len();
                r.ops.splice(i..i, prologue);
                i += n;
                changed = true;
            }
        }
        i += 1;
    }
    changed
}

/// Clone `ops` (in order) substituting values, giving results fresh values.
pub(crate) fn clone_ops(k: &mut Kernel, ops: &[Op], subst: &mut HashMap<Value, Value>) -> Vec<Op> {
    let mut out = vec![];
    for op in ops {
        let args = op.args.iter().map(|a| *subst.get(a).unwrap_or(a)).collect();
        let types = op.results.iter().map(|&r| k.ty(r).clone()).collect();
        let new = k.op(op.kind.clone(), args, types, op.loc);
        for (&old, &n) in op.results.iter().zip(&new.results) {
            subst.insert(old, n);
        }
        out.push(new);
    }
    out
}

/// The ops of `body` (in order) that compute `roots` from `allowed` values.
/// `None` if some root depends on anything else inside the body.
fn slice(body: &[Op], roots: &[Value], inside: &HashSet<Value>) -> Option<Vec<usize>> {
    slice_through(body, roots, inside, false)
}

/// [`slice`], passing through loads where `loads` is set.
pub(crate) fn slice_through(
    body: &[Op],
    roots: &[Value],
    inside: &HashSet<Value>,
    loads: bool,
) -> Option<Vec<usize>> {
    let def: HashMap<Value, usize> = body
        .iter()
        .enumerate()
        .flat_map(|(i, op)| op.results.iter().map(move |&r| (r, i)))
        .collect();
    let mut need = HashSet::new();
    let mut stack: Vec<Value> = roots.to_vec();
    while let Some(v) = stack.pop() {
        let Some(&i) = def.get(&v) else {
            // Region arguments and outside values are fine; other body values are not.
            if inside.contains(&v) {
                return None;
            }
            continue;
        };
        let op = &body[i];
        let pure = op.regions.is_empty()
            && op.kind.is_pure()
            && (loads || !matches!(op.kind, OpKind::Load { .. }));
        if !pure {
            return None;
        }
        if need.insert(i) {
            stack.extend(op.args.iter().copied());
        }
    }
    let mut idx: Vec<usize> = need.into_iter().collect();
    idx.sort();
    Some(idx)
}

/// Pipeline one loop; returns the prologue to place before it.
fn pipeline_one(
    k: &mut Kernel,
    for_op: &mut Op,
    (options, roots): &(PipelineOptions, &PointerRoots),
) -> Option<Vec<Op>> {
    let head = LoopHead::of(for_op);
    let body = &for_op.regions[0].ops;
    let yields = body.last()?.args.clone();
    let inside: HashSet<Value> = body
        .iter()
        .flat_map(|op| op.results.iter().copied())
        .collect();
    let has_dot = body.iter().any(|op| matches!(op.kind, OpKind::Dot { .. }));
    let (mut hoisted, mut loads): (Vec<usize>, Vec<usize>) = body
        .iter()
        .enumerate()
        .filter(|(_, op)| matches!(op.kind, OpKind::Load { .. }) && k.ty(op.results[0]).is_block())
        .map(|(i, _)| i)
        .partition(|&i| has_dot && column_vector(k, body, i, options.column_hoist_above));
    // Moved above the body's other ops only where no write of the loop may
    // be what they read (a store earlier in the same iteration).
    if !hoisted.is_empty() && !roots.loads_independent_of_writes(body, &hoisted) {
        loads.append(&mut hoisted);
        loads.sort_unstable();
    }
    // Loops whose loads feed a `dot` (there the tiles wait in shared
    // memory); others where their blocks fit `plain_budget` and no write of
    // the loop may be what a later iteration's load reads (`x = load(p +
    // i); store(p + i + 1, x)` must read the stored value).
    if !has_dot {
        if !roots.loads_independent_of_writes(body, &loads) {
            return None;
        }
        let bytes = loads
            .iter()
            .map(|&i| register_bytes(k.ty(body[i].results[0])))
            .fold(0usize, usize::saturating_add);
        if bytes > options.plain_budget.saturating_mul(options.threads.max(1)) {
            return None;
        }
    }
    // Each load's operands, and each carried value's next value, must be computable up front.
    let mut plans = vec![];
    for &li in &loads {
        let ops_slice = slice(body, &body[li].args, &inside)?;
        plans.push((li, ops_slice));
    }
    let mut hoists = vec![];
    for &li in &hoisted {
        hoists.push((li, slice(body, &body[li].args, &inside)?));
    }
    if plans.is_empty() && hoists.is_empty() {
        return None;
    }
    // The carried values the loads' operands read need their next values up front.
    let mut used: HashSet<Value> = HashSet::new();
    for (li, sl) in &plans {
        for &i in sl.iter().chain(std::iter::once(li)) {
            used.extend(body[i].args.iter().copied());
        }
    }
    let needed = head.needed(&used);
    let needed_yields: Vec<Value> = needed.iter().map(|&i| yields[i]).collect();
    let yield_slice = slice(body, &needed_yields, &inside)?;
    let loc = for_op.loc;

    // Prologue: the first iteration's loads, guarded by lb < ub.
    let mut prologue = vec![];
    let first_cond_v = less_than(k, head.lb, head.ub, loc, &mut prologue);
    let mut first_loaded = vec![];
    for (li, sl) in &plans {
        let mut subst = head.first_iteration();
        let mut ops: Vec<Op> = sl.iter().map(|&i| body[i].clone()).collect();
        ops.push(body[*li].clone());
        let mut cloned = clone_ops(k, &ops, &mut subst);
        let load = cloned.pop().expect("load");
        prologue.extend(cloned);
        let guarded = guard_load(k, load, first_cond_v, &mut prologue);
        first_loaded.push(guarded.results[0]);
        prologue.push(guarded);
    }

    // Top of the body: next iteration's carried values and loads.
    let mut top = vec![];
    // The loop runs forward (positive step) for prefetching; other loops are skipped below.
    let yield_ops = yield_slice.iter().map(|&i| body[i].clone()).collect();
    let next = head.next_iteration(&yields, &needed, yield_ops);
    let (_, cond, subst_next) = next.emit(k, loc, &mut top);
    let mut next_loaded = vec![];
    for (li, sl) in &plans {
        let mut subst = subst_next.clone();
        let mut ops: Vec<Op> = sl.iter().map(|&i| body[i].clone()).collect();
        ops.push(body[*li].clone());
        let mut cloned = clone_ops(k, &ops, &mut subst);
        let load = cloned.pop().expect("load");
        top.extend(cloned);
        let guarded = guard_load(k, load, cond, &mut top);
        next_loaded.push(guarded.results[0]);
        top.push(guarded);
    }

    // Column vectors: this iteration's, loaded first.
    let mut replace: HashMap<Value, Value> = HashMap::new();
    for (li, sl) in &hoists {
        let mut ops: Vec<Op> = sl.iter().map(|&i| body[i].clone()).collect();
        ops.push(body[*li].clone());
        let cloned = clone_ops(k, &ops, &mut HashMap::new());
        let loaded = cloned.last().expect("load").results[0];
        replace.insert(body[*li].results[0], loaded);
        top.extend(cloned);
    }
    // The current tiles become loop arguments; uses of the old loads read them.
    let mut new_args = vec![];
    for (li, _) in &plans {
        let old = body[*li].results[0];
        let arg = k.new_value(k.ty(old).clone());
        replace.insert(old, arg);
        new_args.push(arg);
    }
    let region = &mut for_op.regions[0];
    let mut new_body: Vec<Op> = top;
    for (i, op) in region.ops.drain(..).enumerate() {
        if plans.iter().chain(&hoists).any(|(li, _)| *li == i) {
            continue;
        }
        let mut op = op;
        substitute(&mut op, &replace);
        new_body.push(op);
    }
    // Yield the prefetched tiles as the next iteration's current ones.
    if let Some(y) = new_body.last_mut() {
        y.args.extend(next_loaded.iter().copied());
    }
    region.ops = new_body;
    region.args.extend(new_args.iter().copied());
    for_op.args.extend(first_loaded);
    for &a in &new_args {
        let r = k.new_value(k.ty(a).clone());
        for_op.results.push(r);
    }
    Some(prologue)
}

/// Whether load `i` of `body` is a vector of more than `above` elements
/// whose every use is a reshape to `[1, N]` that is only broadcast
/// (`PipelineOptions::column_hoist_above`).
fn column_vector(k: &Kernel, body: &[Op], i: usize, above: usize) -> bool {
    let r = body[i].results[0];
    let shape = &k.ty(r).shape;
    if above == 0 || shape.len() != 1 || shape[0] <= above {
        return false;
    }
    // Uses at the body's top level; none inside a nested region.
    let uses = |v: Value| -> Option<Vec<&Op>> {
        let mut nested = false;
        for op in body {
            for sub in &op.regions {
                walk_ops(sub, &mut |o| nested |= o.args.contains(&v));
            }
        }
        let top: Vec<&Op> = body.iter().filter(|op| op.args.contains(&v)).collect();
        (!nested && !top.is_empty()).then_some(top)
    };
    let Some(first) = uses(r) else {
        return false;
    };
    first.iter().all(|u| {
        let expand = matches!(u.kind, OpKind::Reshape | OpKind::ExpandDims(0));
        expand
            && u.results.first().is_some_and(|&row| {
                k.ty(row).shape.as_slice() == [1, shape[0]]
                    && uses(row)
                        .is_some_and(|next| next.iter().all(|b| b.kind == OpKind::Broadcast))
            })
    })
}

/// A `for` op's bounds, induction variable, initial and carried values:
/// what the loop passes (pipelining, rotation) read before rewriting it.
pub(crate) struct LoopHead {
    pub lb: Value,
    pub ub: Value,
    pub step: Value,
    pub iv: Value,
    pub inits: Vec<Value>,
    pub carried: Vec<Value>,
}

impl LoopHead {
    pub fn of(for_op: &Op) -> Self {
        let region = &for_op.regions[0];
        LoopHead {
            lb: for_op.args[0],
            ub: for_op.args[1],
            step: for_op.args[2],
            iv: region.args[0],
            inits: for_op.args[3..].to_vec(),
            carried: region.args[1..].to_vec(),
        }
    }

    /// Indices of the carried values among `used`.
    pub fn needed(&self, used: &HashSet<Value>) -> Vec<usize> {
        (0..self.carried.len())
            .filter(|&i| used.contains(&self.carried[i]))
            .collect()
    }

    /// The first iteration's values: `iv` is `lb`, carried values their inits.
    pub fn first_iteration(&self) -> HashMap<Value, Value> {
        let mut subst: HashMap<Value, Value> = self
            .carried
            .iter()
            .copied()
            .zip(self.inits.iter().copied())
            .collect();
        subst.insert(self.iv, self.lb);
        subst
    }

    /// The next iteration's values of the `needed` carried values, from the
    /// body's `yields` and the pure `yield_ops` computing them.
    pub fn next_iteration<'a>(
        &'a self,
        yields: &'a [Value],
        needed: &'a [usize],
        yield_ops: Vec<Op>,
    ) -> NextIteration<'a> {
        NextIteration {
            iv: self.iv,
            step: self.step,
            ub: self.ub,
            carried: &self.carried,
            yields,
            needed,
            yield_ops,
        }
    }
}

/// What the top of a loop body needs to compute the next iteration's
/// induction variable and the carried values a prefetch reads.
pub(crate) struct NextIteration<'a> {
    pub iv: Value,
    pub step: Value,
    pub ub: Value,
    pub carried: &'a [Value],
    pub yields: &'a [Value],
    /// Indices of the carried values needed.
    pub needed: &'a [usize],
    /// The pure ops computing their yields (cloned here).
    pub yield_ops: Vec<Op>,
}

impl NextIteration<'_> {
    /// Emit `iv + step`, `iv + step < ub` and the needed next values into
    /// `out`; returns those two values and the substitution taking each
    /// needed carried value (and `iv`) to its next value.
    pub(crate) fn emit(
        &self,
        k: &mut Kernel,
        loc: Loc,
        out: &mut Vec<Op>,
    ) -> (Value, Value, HashMap<Value, Value>) {
        let iv_ty = k.ty(self.iv).dtype().unwrap_or(DType::I32);
        let add = k.op(
            OpKind::Binary(BinOp::Add),
            vec![self.iv, self.step],
            vec![Type::scalar(iv_ty)],
            loc,
        );
        let iv_next = add.results[0];
        out.push(add);
        let cond = less_than(k, iv_next, self.ub, loc, out);
        let mut ident: HashMap<Value, Value> = HashMap::new();
        out.extend(clone_ops(k, &self.yield_ops, &mut ident));
        let mut subst = HashMap::new();
        for &i in self.needed {
            let y = self.yields[i];
            subst.insert(self.carried[i], *ident.get(&y).unwrap_or(&y));
        }
        subst.insert(self.iv, iv_next);
        (iv_next, cond, subst)
    }
}

/// Append the scalar `a < b` to `out`; returns its value.
pub(crate) fn less_than(k: &mut Kernel, a: Value, b: Value, loc: Loc, out: &mut Vec<Op>) -> Value {
    let lt = k.op(
        OpKind::Cmp(CmpPred::Lt),
        vec![a, b],
        vec![Type::scalar(DType::I1)],
        loc,
    );
    let v = lt.results[0];
    out.push(lt);
    v
}

/// Replace uses of values in an op and everything nested in it.
pub(crate) fn substitute(op: &mut Op, replace: &HashMap<Value, Value>) {
    for a in &mut op.args {
        if let Some(n) = replace.get(a) {
            *a = *n;
        }
    }
    for r in &mut op.regions {
        for inner in &mut r.ops {
            substitute(inner, replace);
        }
    }
}

/// A copy of `load` whose mask is also ANDed with the scalar `cond`.
pub(crate) fn guard_load(k: &mut Kernel, load: Op, cond: Value, out: &mut Vec<Op>) -> Op {
    let OpKind::Load {
        mask,
        other,
        tma,
        map,
        guards,
    } = load.kind
    else {
        return load;
    };
    let t = k.ty(load.results[0]).clone();
    let mt = t.with_elem(Elem::Scalar(DType::I1));
    let splat = k.op(OpKind::Splat, vec![cond], vec![mt.clone()], load.loc);
    let cv = splat.results[0];
    out.push(splat);
    let new_mask = if mask {
        let and = k.op(
            OpKind::Binary(BinOp::And),
            vec![load.args[1], cv],
            vec![mt],
            load.loc,
        );
        let m = and.results[0];
        out.push(and);
        m
    } else {
        cv
    };
    let mut args = vec![load.args[0], new_mask];
    args.extend(crate::ir::load_other(&load));
    if tma.is_some() {
        args.extend(&load.args[1 + mask as usize + other as usize..]);
    }
    Op {
        kind: OpKind::Load {
            mask: true,
            other,
            tma,
            map,
            guards: guards.saturating_add(1),
        },
        args,
        results: load.results,
        regions: vec![],
        loc: load.loc,
    }
}

/// Register bytes of a block value: 4 per element of 32 bits or less, 8
/// for wider ones (0 for values without a dtype).
fn register_bytes(t: &Type) -> usize {
    let Some(d) = t.dtype() else {
        return 0;
    };
    t.shape
        .iter()
        .try_fold(d.size_bytes().max(4), |a, &n| a.checked_mul(n))
        .unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dot loop that subtracts `b[iv:iv + 64][None, :]` from its
    /// product; with `store_b`, the body first writes that slice of `b`.
    fn column_loop(store_b: bool) -> Kernel {
        let store = if store_b {
            "    %31 = cast %21 : <64xfp32>\n    store %23, %31\n"
        } else {
            ""
        };
        let text = format!(
            "\
kernel @k(%0: *fp16 {{div=16}} \"a\", %1: *fp32 {{div=16}} \"b\", %2: *fp32 {{div=16}} \"o\") {{
  %3 = const[0] : i32
  %4 = const[256] : i32
  %5 = const[64] : i32
  %6 = arange[0, 64] : <64xi32>
  %7 = reshape %6 : <64x1xi32>
  %8 = broadcast %7 : <64x64xi32>
  %9 = splat %0 : <64x64x*fp16>
  %10 = addptr %9, %8 : <64x64x*fp16>
  %11 = load %10 : <64x64xfp16>
  %12 = const[0.0] : <64x64xfp32>
  %13 = for %3, %4, %5, %12 : <64x64xfp32> {{
    ^(%14: i32, %15: <64x64xfp32>):
    %16 = splat %14 : <64x64xi32>
    %17 = addptr %10, %16 : <64x64x*fp16>
    %18 = load %17 : <64x64xfp16>
    %19 = dot %11, %18, %12 : <64x64xfp32>
    %20 = splat %14 : <64xi32>
    %21 = add %20, %6 : <64xi32>
    %22 = splat %1 : <64x*fp32>
    %23 = addptr %22, %21 : <64x*fp32>
{store}    %24 = load %23 : <64xfp32>
    %25 = reshape %24 : <1x64xfp32>
    %26 = broadcast %25 : <64x64xfp32>
    %27 = sub %19, %26 : <64x64xfp32>
    %28 = add %15, %27 : <64x64xfp32>
    yield %28
  }}
  %29 = splat %2 : <64x64x*fp32>
  %30 = addptr %29, %8 : <64x64x*fp32>
  store %30, %13
}}
"
        );
        crate::parse::parse_kernel(&text).expect("test kernel parses")
    }

    /// The loop's body after one application of the pass.
    fn pipelined_body(store_b: bool, column_hoist_above: usize) -> (Vec<Op>, usize) {
        let mut k = column_loop(store_b);
        let options = PipelineOptions {
            threads: 128,
            plain_budget: 0,
            column_hoist_above,
        };
        assert!(pipeline_loads(&mut k, options));
        crate::verify::verify(&k).expect("pipelined kernel verifies");
        let mut found = None;
        walk_ops(&k.body, &mut |op| {
            if op.kind == OpKind::For {
                found = Some(op.clone());
            }
        });
        let l = found.expect("loop");
        let args = l.regions[0].args.len();
        (l.regions[0].ops.clone(), args)
    }

    fn first(body: &[Op], f: impl Fn(&Op) -> bool) -> usize {
        body.iter().position(f).expect("an op")
    }

    /// Each pipelining step guards the prefetches once more (`guards=n`),
    /// the guards are the mask's outermost AND terms, and the count
    /// survives printing and parsing.
    #[test]
    fn prefetches_count_their_iteration_guards() {
        let mut k = column_loop(false);
        let options = PipelineOptions {
            threads: 128,
            plain_budget: 0,
            column_hoist_above: 0,
        };
        let guards_in_loop = |k: &Kernel| {
            let mut g = vec![];
            walk_ops(&k.body, &mut |op| {
                if op.kind == OpKind::For {
                    for o in &op.regions[0].ops {
                        if let OpKind::Load { guards, .. } = o.kind {
                            g.push(guards);
                        }
                    }
                }
            });
            g
        };
        assert_eq!(guards_in_loop(&k), [0, 0]);
        assert!(pipeline_loads(&mut k, options));
        assert_eq!(guards_in_loop(&k), [1, 1]);
        assert!(pipeline_loads(&mut k, options));
        assert_eq!(guards_in_loop(&k), [2, 2]);
        crate::verify::verify(&k).expect("pipelined kernel verifies");
        // The outermost term of a guarded mask is a splat of the guard.
        let mut defs = HashMap::new();
        walk_ops(&k.body, &mut |op| {
            for &r in &op.results {
                defs.insert(r, op.clone());
            }
        });
        walk_ops(&k.body, &mut |op| {
            if let OpKind::Load { guards: 2, .. } = op.kind {
                let and = &defs[&op.args[1]];
                assert_eq!(and.kind, OpKind::Binary(BinOp::And));
                assert_eq!(defs[&and.args[1]].kind, OpKind::Splat);
            }
        });
        let text = crate::print::print_kernel(&k);
        assert!(text.contains("guards=2"), "{text}");
        let again = crate::parse::parse_kernel(&text).expect("printed kernel parses");
        assert_eq!(guards_in_loop(&again), [2, 2]);
    }

    #[test]
    fn column_vectors_load_at_the_top_of_the_body() {
        let vector_load = |o: &Op| matches!(o.kind, OpKind::Load { .. }) && o.results.len() == 1;
        // Prefetched: iv, the sum, the tile and the vector are carried.
        let (_, args) = pipelined_body(false, 0);
        assert_eq!(args, 4);
        // Hoisted: the vector is this iteration's, loaded before the dot.
        let (body, args) = pipelined_body(false, 32);
        assert_eq!(args, 3);
        let dot = first(&body, |o| matches!(o.kind, OpKind::Dot { .. }));
        let loads: Vec<usize> = (0..body.len()).filter(|&i| vector_load(&body[i])).collect();
        assert_eq!(loads.len(), 2);
        assert!(loads.iter().all(|&i| i < dot));
        // Not longer than the threshold: prefetched.
        let (_, args) = pipelined_body(false, 64);
        assert_eq!(args, 4);
    }

    #[test]
    fn a_column_vector_the_body_writes_first_is_not_hoisted_above_the_write() {
        let (body, args) = pipelined_body(true, 32);
        assert_eq!(args, 4);
        let store = first(&body, |o| matches!(o.kind, OpKind::Store { .. }));
        let unmasked_vector_load = body[..store].iter().any(|o| {
            o.kind
                == OpKind::Load {
                    mask: false,
                    other: false,
                    tma: None,
                    map: None,
                    guards: 0,
                }
        });
        assert!(!unmasked_vector_load);
    }
}
