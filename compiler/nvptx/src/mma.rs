//! `tl.dot` on tensor cores with `mma.sync.aligned.m16n8k16` (fp16/bf16
//! inputs, fp32 accumulators), and the MMA accumulator layout of
//! `docs/layouts.md`.
//!
//! Warps tile the `M x N` accumulator `wm x wn` (warps along M first). Each
//! warp repeats the 16x8 instruction tile `reps_m x reps_n` times; lane `l`
//! holds, for each repetition, four fp32 registers at
//!
//! ```text
//! row = warp_m * (M / wm) + rep_m * 16 + l / 4 + 8 * (r / 2)
//! col = warp_n * (N / wn) + rep_n * 8 + 2 * (l % 4) + r % 2
//! ```
//!
//! Operands go through shared memory as fp16, both row-major with rows padded
//! by 8 halves (so a warp's accesses spread over the banks), written as 8-byte
//! vectors; A fragments are 32-bit loads, B fragments `ldmatrix.x2.trans`. The accumulator stays in this layout across the K loop (the plan
//! below marks the loop-carried values); other uses convert it to the blocked
//! layout through shared memory.

use std::collections::HashMap;
use tilebook_tir::{DType, Kernel, Op, OpKind, Region, Value};

/// The MMA layout of one accumulator.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct MmaLayout {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub wm: usize,
    pub wn: usize,
    /// `.f16` or `.bf16` operands.
    pub bf16: bool,
}

impl MmaLayout {
    pub fn reps_m(&self) -> usize {
        self.m / (16 * self.wm)
    }
    pub fn reps_n(&self) -> usize {
        self.n / (8 * self.wn)
    }
    pub fn regs(&self) -> usize {
        self.reps_m() * self.reps_n() * 4
    }
    /// Padded row length (in halves) of A (`M x K`) in shared memory.
    pub fn row_k(&self) -> usize {
        self.k + 8
    }
    /// Padded row length (in halves) of B (`K x N`, row-major) in shared memory.
    pub fn row_n(&self) -> usize {
        self.n + 8
    }
    /// Byte offset of B's tile.
    pub fn b_base(&self) -> usize {
        self.m * self.row_k() * 2
    }
    /// Shared-memory bytes of both operands.
    pub fn smem_bytes(&self) -> usize {
        self.b_base() + self.k * self.row_n() * 2
    }
}

/// Which dots run on tensor cores, for a CTA of `warps` warps.
fn layout_for(k: &Kernel, op: &Op, warps: usize) -> Option<MmaLayout> {
    let (a, b, acc) = (k.ty(op.args[0]), k.ty(op.args[1]), k.ty(op.args[2]));
    let da = a.dtype()?;
    if !matches!(da, DType::F16 | DType::BF16)
        || b.dtype() != Some(da)
        || acc.dtype() != Some(DType::F32)
    {
        return None;
    }
    let (m, kk, n) = (a.shape[0], a.shape[1], b.shape[1]);
    if kk % 16 != 0 || m % 16 != 0 || n % 8 != 0 {
        return None;
    }
    // Split the warps over M and N so that each warp's tile is as square as
    // possible: a warp reads `m / wm` rows of A and `n / wn` columns of B from
    // shared memory per k-step, so minimise their sum.
    let (wm, wn) = (0..=warps.trailing_zeros())
        .map(|s| (1usize << s, warps >> s))
        .filter(|&(wm, wn)| m % (16 * wm) == 0 && n % (8 * wn) == 0)
        .min_by_key(|&(wm, wn)| (m / wm + n / wn, wn))?;
    let l = MmaLayout {
        m,
        n,
        k: kk,
        wm,
        wn,
        bf16: da == DType::BF16,
    };
    // Keep the accumulator within a sane register budget.
    (l.regs() <= 256).then_some(l)
}

/// Values whose registers are in an MMA layout: tensor-core dot results and
/// the loop-carried accumulators they flow into.
pub fn plan(k: &Kernel, warps: usize) -> HashMap<Value, MmaLayout> {
    let mut out = HashMap::new();
    // Two rounds settle loops nested in loops.
    for _ in 0..2 {
        visit(k, &k.body, warps, &mut out);
    }
    out
}

fn visit(k: &Kernel, r: &Region, warps: usize, out: &mut HashMap<Value, MmaLayout>) {
    for op in &r.ops {
        for sub in &op.regions {
            visit(k, sub, warps, out);
        }
        match op.kind {
            OpKind::Dot { .. } => {
                if let Some(l) = layout_for(k, op, warps) {
                    out.insert(op.results[0], l);
                }
            }
            OpKind::For => {
                let region = &op.regions[0];
                if let Some(y) = region.ops.last() {
                    for (i, v) in y.args.iter().enumerate() {
                        if let Some(&l) = out.get(v) {
                            out.insert(region.args[i + 1], l);
                            out.insert(op.results[i], l);
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

/// fp16/bf16 values used only as `dot` operands (directly, or carried through
/// `for` loops into one): their registers can stay in the memory type from
/// the load to the shared-memory store, skipping a round trip through f32.
pub fn dot_only_operands(
    k: &Kernel,
    plan: &HashMap<Value, MmaLayout>,
) -> std::collections::HashSet<Value> {
    use std::collections::HashSet;
    // uses[v] = list of (op kind, operand position, op) for every use.
    let mut uses: HashMap<Value, Vec<(&Op, usize)>> = HashMap::new();
    let mut loops: Vec<&Op> = vec![];
    tilebook_tir::walk_ops(&k.body, &mut |op| {
        for (i, a) in op.args.iter().enumerate() {
            uses.entry(*a).or_default().push((op, i));
        }
        if op.kind == OpKind::For {
            loops.push(op);
        }
    });
    // Yields of loop bodies: which region argument each yield position feeds.
    let mut yield_pos: HashMap<(*const Op, usize), Value> = HashMap::new();
    for l in &loops {
        if let Some(y) = l.regions[0].ops.last() {
            for (i, _) in y.args.iter().enumerate() {
                yield_pos.insert((y as *const Op, i), l.regions[0].args[i + 1]);
            }
        }
    }
    let mut init_pos: HashMap<(*const Op, usize), Value> = HashMap::new();
    for l in &loops {
        for i in 3..l.args.len() {
            init_pos.insert((*l as *const Op, i), l.regions[0].args[i - 2]);
        }
    }
    let is_half = |v: &Value| {
        matches!(k.ty(*v).dtype(), Some(DType::F16 | DType::BF16)) && k.ty(*v).is_block()
    };
    // Start from everything half-typed and remove values with a disqualifying use.
    let mut set: HashSet<Value> = HashSet::new();
    tilebook_tir::walk_ops(&k.body, &mut |op| {
        for r in &op.results {
            if is_half(r) {
                set.insert(*r);
            }
        }
        for r in &op.regions {
            for a in &r.args {
                if is_half(a) {
                    set.insert(*a);
                }
            }
        }
    });
    loop {
        let before = set.len();
        let snapshot = set.clone();
        set.retain(|v| {
            let Some(us) = uses.get(v) else { return false };
            us.iter().all(|(op, i)| match op.kind {
                OpKind::Dot { .. } => *i < 2 && plan.contains_key(&op.results[0]),
                OpKind::Yield => yield_pos
                    .get(&(*op as *const Op, *i))
                    .is_some_and(|t| snapshot.contains(t)),
                OpKind::For => init_pos
                    .get(&(*op as *const Op, *i))
                    .is_some_and(|t| snapshot.contains(t)),
                _ => false,
            })
        });
        if set.len() == before {
            break;
        }
    }
    set
}
