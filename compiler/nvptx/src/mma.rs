//! `tl.dot` on tensor cores with `mma.sync.aligned.m16n8k16` (fp16/bf16
//! inputs, fp32 accumulators) or, on Hopper, `wgmma.mma_async` (one
//! warpgroup of four warps per `m64nNk16`), and the MMA accumulator layout of
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
//! With `wgmma`, warp `w` of warpgroup `g` (`wm = 4 * warpgroups along M`)
//! holds the same 16x8 fragments, but a warpgroup's instruction tile is 64
//! rows, so repetition `rep_m` steps 64 rows and the warp's 16-row slab sits
//! inside it:
//!
//! ```text
//! row = (warp_m / 4) * (M / (wm / 4)) + rep_m * 64 + (warp_m % 4) * 16 + l / 4 + 8 * (r / 2)
//! ```
//!
//! Operands go through shared memory. For `mma.sync` both are row-major with
//! rows padded by 8 halves (so a warp's accesses spread over the banks) and
//! fragments come from `ldmatrix`. For `wgmma` they are in the swizzled
//! layout the instruction's descriptors describe (`operand_offset`). The
//! accumulator stays in the MMA layout across the K loop (the plan below marks
//! the loop-carried values); other uses convert it to the blocked layout
//! through shared memory.

use std::collections::HashMap;
use tilebook_tir::{DType, Kernel, Op, OpKind, Value};

/// The MMA layout of one accumulator.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct MmaLayout {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub wm: usize,
    pub wn: usize,
    /// The operand type of the instruction.
    pub kind: MmaKind,
    /// Hopper's warpgroup MMA (operands read from shared memory by descriptor).
    pub wgmma: bool,
    /// fp16/bf16 under `wgmma` with B given as `b.T` of an `[N, K]` block
    /// (a tensor descriptor's load, `x @ w.T`): B's tile is then K-major,
    /// `N x K`, filled row by row as loaded, and the instruction reads it
    /// untransposed (`imm-trans-b` = 0).
    pub kt_b: bool,
    /// With `kt_b`: B is a `[K, N]` block whose columns are contiguous in
    /// memory (`a @ b` with `b` column-major, as `matmul(a, w.T)` passes
    /// it), so its `N x K` tile is filled by K-major copies down the
    /// columns (`async_copy::async_load_k_major`), as fp8's B is.
    pub kcol_b: bool,
    /// Under `wgmma`, fp16/bf16: A comes from registers (the register-A form
    /// of the instruction), as the fragments of another dot's accumulator
    /// with the same rows (attention's probabilities, `p @ v`); the
    /// layout's ring holds B tiles only.
    pub a_regs: bool,
}

/// The operand types of a tensor-core dot, and with them the instruction
/// shape: `m16n8k16` for fp16/bf16 (and fp8, converted to fp16), `m16n8k8`
/// for tf32 (fp32 inputs rounded to 10 mantissa bits), `m16n8k32` for int8
/// with int32 accumulators. All share the 16x8 accumulator fragment.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MmaKind {
    F16,
    BF16,
    Tf32,
    I8,
    /// fp8 (sm_89+): `m16n8k32` with `.e5m2` / `.e4m3` operands.
    E5M2,
    E4M3,
}

/// What the target offers `tl.dot` beyond Ampere's `mma.sync`, and the
/// code generator's other choices.
#[derive(Copy, Clone, Debug, Default)]
pub struct Features {
    /// Hopper's `wgmma` (sm_90a).
    pub wgmma: bool,
    /// Let a loop's `wgmma` group run on while the next iteration starts
    /// (`wgmma.wait_group 1`), where the loop allows it (`wgmma::plan_inflight`).
    pub wgmma_inflight: bool,
    /// Keep the second of a loop's two chained dots in flight into the next
    /// iteration (`wgmma::plan_chain`).
    pub inflight_chain: bool,
    /// NVIDIA's libdevice is there to link (`libdevice.rs`).
    pub libdevice: bool,
    /// Masked global stores as one predicated `st.global` each instead of
    /// a branch around the store (`GpuOptions::predicated_stores`).
    pub predicated_stores: bool,
}

impl MmaKind {
    /// K per instruction.
    pub fn k_step(self) -> usize {
        match self {
            MmaKind::F16 | MmaKind::BF16 => 16,
            MmaKind::Tf32 => 8,
            MmaKind::I8 | MmaKind::E5M2 | MmaKind::E4M3 => 32,
        }
    }
    /// Bytes of one operand element in shared memory.
    pub fn elem_bytes(self) -> usize {
        match self {
            MmaKind::F16 | MmaKind::BF16 => 2,
            MmaKind::Tf32 => 4,
            MmaKind::I8 | MmaKind::E5M2 | MmaKind::E4M3 => 1,
        }
    }
    /// fp16 or bf16 (`ldmatrix`, `wgmma`, `cp.async` tiles).
    pub fn is_half(self) -> bool {
        matches!(self, MmaKind::F16 | MmaKind::BF16)
    }
    /// e5m2 or e4m3.
    pub fn is_fp8(self) -> bool {
        matches!(self, MmaKind::E5M2 | MmaKind::E4M3)
    }
    /// The operand type's name in PTX.
    pub fn ptx(self) -> &'static str {
        match self {
            MmaKind::F16 => "f16",
            MmaKind::BF16 => "bf16",
            MmaKind::Tf32 => "tf32",
            MmaKind::I8 => "s8",
            MmaKind::E5M2 => "e5m2",
            MmaKind::E4M3 => "e4m3",
        }
    }
}

/// Where an operand element lives in a `wgmma` tile: rows of `cols`
/// elements of `elem` bytes (A: `M x K`; B: `K x N` for fp16/bf16, `N x K`
/// (K-major) for fp8; the contiguous dimension last), cut into column blocks
/// of `swizzle` bytes; each block stores its rows contiguously, `swizzle`
/// bytes per row, and 16-byte chunks are XORed with the row within each
/// group of 8 (Swizzle<3,4,3> for 128 bytes) — the layout `wgmma`'s swizzle
/// modes read.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Swizzled {
    pub rows: usize,
    pub cols: usize,
    /// Bytes per element: 2 (fp16, bf16) or 1 (fp8).
    pub elem: usize,
    /// 32, 64 or 128 bytes.
    pub swizzle: usize,
}

impl Swizzled {
    pub fn new(rows: usize, cols: usize, elem: usize) -> Option<Swizzled> {
        let row_bytes = cols * elem;
        let swizzle = row_bytes.min(128);
        let ok = matches!(swizzle, 32 | 64 | 128)
            && row_bytes.is_multiple_of(swizzle)
            && rows.is_multiple_of(8);
        ok.then_some(Swizzled {
            rows,
            cols,
            elem,
            swizzle,
        })
    }
    /// Elements per column block.
    pub fn block_cols(&self) -> usize {
        self.swizzle / self.elem
    }
    /// Bytes of one column block (all rows).
    pub fn block_bytes(&self) -> usize {
        self.rows * self.swizzle
    }
    /// Byte offset of `(row, col)` before swizzling (the address a
    /// descriptor's start field takes, for `row % 8 == 0`).
    pub fn linear(&self, row: usize, col: usize) -> usize {
        (col / self.block_cols()) * self.block_bytes()
            + row * self.swizzle
            + (col % self.block_cols()) * self.elem
    }
    /// The mask applied to bits 7.. before XORing them into bits 4..
    pub fn xor_mask(&self) -> usize {
        self.swizzle / 16 - 1
    }
    /// The byte offset of `(row, col)` (what `async_copy::operand_offset`
    /// computes in IR; the tests check it is a permutation).
    #[cfg(test)]
    pub fn offset(&self, row: usize, col: usize) -> usize {
        let off = self.linear(row, col);
        off ^ (((off >> 7) & self.xor_mask()) << 4)
    }
    /// `offset(row + dr, col + dc) - offset(row, col)` where that is the
    /// same constant for every `(row, col)`: `dc` a whole number of column
    /// blocks and the byte move a multiple of the swizzle's period (adding
    /// it leaves the bits the XOR reads, and the bits it flips, alone).
    pub fn shift(&self, dr: i64, dc: i64) -> Option<i64> {
        let bc = self.block_cols() as i64;
        if dc % bc != 0 {
            return None;
        }
        let d = dr * self.swizzle as i64 + dc / bc * self.block_bytes() as i64;
        let period = 128 * (self.xor_mask() as i64 + 1);
        (d % period == 0).then_some(d)
    }
    /// The descriptor's swizzle-mode field.
    pub fn mode(&self) -> u64 {
        match self.swizzle {
            128 => 1,
            64 => 2,
            _ => 3,
        }
    }
    pub fn bytes(&self) -> usize {
        self.rows * self.cols * self.elem
    }
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
    /// Padded row length (in elements) of A (`M x K`) in shared memory, and
    /// for tf32/int8 also of B, stored transposed (`N x K`). The padding
    /// (16 bytes; 4 words for int8's narrow rows) makes the eight row groups
    /// of a warp's fragment loads start on different banks.
    pub fn row_k(&self) -> usize {
        match self.kind {
            MmaKind::F16 | MmaKind::BF16 => self.k + 8,
            MmaKind::Tf32 => self.k + 4,
            MmaKind::I8 | MmaKind::E5M2 | MmaKind::E4M3 => self.k + 16,
        }
    }
    /// Padded row length (in halves) of B (`K x N`, row-major) in shared memory.
    pub fn row_n(&self) -> usize {
        self.n + 8
    }
    /// The swizzled layout of operand 0 (A) or 1 (B) under `wgmma`: fp8
    /// operands are both K-major (`wgmma` cannot transpose them), so B's
    /// tile is `N x K`.
    pub fn swizzled(&self, operand: usize) -> Swizzled {
        let (rows, cols) = match operand {
            0 => (self.m, self.k),
            _ if self.kind.is_fp8() || self.kt_b => (self.n, self.k),
            _ => (self.k, self.n),
        };
        Swizzled::new(rows, cols, self.kind.elem_bytes())
            .expect("wgmma layouts are chosen swizzlable")
    }
    /// Whether operand `operand`'s tile is stored K-major with K running
    /// down the columns of the loaded `[K, N]` block (fp8's B, and `kcol_b`).
    pub fn k_major_b(&self, operand: usize) -> bool {
        operand == 1 && (self.kind.is_fp8() || self.kcol_b)
    }
    /// Byte offset of B's tile.
    pub fn b_base(&self) -> usize {
        if self.wgmma && self.a_regs {
            return 0;
        }
        if self.wgmma {
            return self.swizzled(0).bytes().next_multiple_of(1024);
        }
        self.m * self.row_k() * self.kind.elem_bytes()
    }
    /// Shared-memory bytes of both operands (a multiple of 1024 under
    /// `wgmma`, whose swizzle pattern repeats every 1024 bytes).
    pub fn smem_bytes(&self) -> usize {
        if self.wgmma {
            return self.b_base() + self.swizzled(1).bytes().next_multiple_of(1024);
        }
        if !self.kind.is_half() {
            return self.b_base() + self.n * self.row_k() * self.kind.elem_bytes();
        }
        self.b_base() + self.k * self.row_n() * 2
    }
    /// Shared-memory bytes of both operand tiles when the dot runs from
    /// registers (`mma.sync`): halves with padded rows (fp8 too, exact in
    /// fp16), or the narrow kinds' own elements (tf32, int8).
    pub fn register_tiles_bytes(&self, b_untransposed: bool) -> usize {
        if !self.kind.is_half() && !self.wgmma {
            return self.smem_bytes();
        }
        // B as `K x N` rows of `row_n`, or untransposed (`N x K`, rows of
        // `row_k`) when it is the transpose of a value in registers.
        let b = if b_untransposed {
            self.n * self.row_k()
        } else {
            self.k * self.row_n()
        };
        self.m * self.row_k() * 2 + b * 2
    }
    /// Warpgroups along M and N under `wgmma`.
    pub fn warpgroups(&self) -> (usize, usize) {
        (self.wm / 4, self.wn)
    }
}

/// The `wgmma` layout of an `m x n x k` dot on `warps` warps, if one fits:
/// warpgroups split M in slabs of 64 rows first, then N; each instruction is
/// `m64nNk16` (`k32` for fp8) with `N = n / warpgroups_n <= 256`, and both
/// operand tiles must have a swizzled layout (contiguous rows of 32, 64 or a
/// multiple of 128 bytes).
fn wgmma_layout(
    m: usize,
    n: usize,
    k: usize,
    warps: usize,
    kind: MmaKind,
    kt_b: bool,
    kcol_b: bool,
) -> Option<MmaLayout> {
    if !warps.is_multiple_of(4) || !k.is_multiple_of(kind.k_step()) {
        return None;
    }
    let e = kind.elem_bytes();
    Swizzled::new(m, k, e)?;
    if kind.is_fp8() || kt_b {
        Swizzled::new(n, k, e)?;
    } else {
        Swizzled::new(k, n, e)?;
    }
    let groups = warps / 4;
    let (gm, gn) = (0..=groups.trailing_zeros())
        .map(|s| (groups >> s, 1usize << s))
        .find(|&(gm, gn)| {
            let nw = n / gn;
            m.is_multiple_of(64 * gm)
                && n.is_multiple_of(8 * gn)
                && nw <= 256
                && (gn == 1 || nw.is_multiple_of(64))
        })?;
    let l = MmaLayout {
        m,
        n,
        k,
        wm: 4 * gm,
        wn: gn,
        kind,
        wgmma: true,
        kt_b: kt_b && !kind.is_fp8(),
        kcol_b: kt_b && kcol_b && !kind.is_fp8(),
        a_regs: false,
    };
    (l.regs() <= 256).then_some(l)
}

/// Which dots run on tensor cores, for a CTA of `warps` warps; `wgmma` when
/// allowed and the shapes fit.
/// With `rows_first`, `mma.sync` layouts give each warp whole rows (`wn ==
/// 1`) where the shape allows, so that row reductions and chained dots stay
/// in registers (`mma_plan`).
pub(crate) fn layout_for(
    k: &Kernel,
    op: &Op,
    warps: usize,
    wgmma: bool,
    rows_first: bool,
    kcol_b: bool,
) -> Option<MmaLayout> {
    let (a, b, acc) = (k.ty(op.args[0]), k.ty(op.args[1]), k.ty(op.args[2]));
    let da = a.dtype()?;
    let tf32 = matches!(op.kind, OpKind::Dot { tf32: true });
    // fp8 operands run on Hopper's fp8 `wgmma` (below) or else on the fp16
    // `mma.sync`: every e5m2 and e4m3 value is exactly an fp16 value, so
    // products and fp32 sums are the same. (The native fp8 `mma.sync` of
    // sm_89 needs its tiles built byte by byte through registers and measured
    // slower than the fp16 path on the H100, bench/NOTES.md; it is not used.)
    let kind = match (da, acc.dtype()?) {
        (DType::F16 | DType::F8E5 | DType::F8E4NV, DType::F32) => MmaKind::F16,
        (DType::BF16, DType::F32) => MmaKind::BF16,
        (DType::F32, DType::F32) if tf32 => MmaKind::Tf32,
        (DType::I8, DType::I32) => MmaKind::I8,
        _ => return None,
    };
    if b.dtype() != Some(da) {
        return None;
    }
    let (m, kk, n) = (a.shape[0], a.shape[1], b.shape[1]);
    if kk % kind.k_step() != 0 || m % 16 != 0 || n % 8 != 0 {
        return None;
    }
    if wgmma && kind.is_half() && matches!(da, DType::F16 | DType::BF16) {
        // `b.T` (a K loop's `acc = tl.dot(a, b.T, acc)`, attention's
        // `q @ k.T`) reads `b`'s tile K-major. The same tile serves a
        // `[K, N]` B whose columns are contiguous (`kcol_b`, decided by the
        // caller from the axis analysis), in an accumulating loop.
        let kt_b = transposed_operand(k, op.args[1]) || (kcol_b && loop_carried(k, op.args[2]));
        if let Some(l) = wgmma_layout(m, n, kk, warps, kind, kt_b, kcol_b) {
            return Some(l);
        }
    }
    // fp8 on Hopper: `wgmma` takes e5m2/e4m3 operands directly from K-major
    // tiles (fp32 accumulation).
    let fp8 = match da {
        DType::F8E5 => Some(MmaKind::E5M2),
        DType::F8E4NV => Some(MmaKind::E4M3),
        _ => None,
    };
    if let (true, Some(f), DType::F32) = (wgmma, fp8, acc.dtype()?) {
        if let Some(l) = wgmma_layout(m, n, kk, warps, f, false, false) {
            return Some(l);
        }
    }
    // Split the warps over M and N so that each warp's tile is as square as
    // possible: a warp reads `m / wm` rows of A and `n / wn` columns of B from
    // shared memory per k-step, so minimise their sum.
    let (wm, wn) = (0..=warps.trailing_zeros())
        .map(|s| (1usize << s, warps >> s))
        .filter(|&(wm, wn)| m % (16 * wm) == 0 && n % (8 * wn) == 0)
        .min_by_key(|&(wm, wn)| (!(rows_first && wn == 1), m / wm + n / wn, wn))?;
    let l = MmaLayout {
        m,
        n,
        k: kk,
        wm,
        wn,
        kind,
        wgmma: false,
        kt_b: false,
        kcol_b: false,
        a_regs: false,
    };
    // Keep the accumulator within a sane register budget.
    (l.regs() <= 256).then_some(l)
}

/// Whether `v` is `x.T` of a 2-D block (`Trans([1, 0])`).
pub(crate) fn transposed_operand(k: &Kernel, v: Value) -> bool {
    let mut found = false;
    tilebook_tir::walk_ops(&k.body, &mut |op| {
        found |= op.results.first() == Some(&v)
            && matches!(&op.kind, OpKind::Trans(p) if p.as_slice() == [1, 0]);
    });
    found
}

/// Whether `v` is a value a `for` loop carries (one of its region's
/// arguments after the induction variable).
fn loop_carried(k: &Kernel, v: Value) -> bool {
    let mut found = false;
    tilebook_tir::walk_ops(&k.body, &mut |op| {
        if op.kind == OpKind::For {
            found |= op.regions[0].args.iter().skip(1).any(|a| *a == v);
        }
    });
    found
}

/// fp16/bf16 values used only as `dot` operands (directly, or carried through
/// `for` loops into one): their registers can stay in the memory type from
/// the load to the shared-memory store, skipping a round trip through f32.
/// With `fp8`, the same for e5m2/e4m3 values (which `wgmma` reads from
/// shared tiles; they never need registers).
pub fn dot_only_operands(
    k: &Kernel,
    plan: &HashMap<Value, MmaLayout>,
    fp8: bool,
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
        let d = k.ty(*v).dtype();
        let ok = if fp8 {
            matches!(d, Some(DType::F8E5 | DType::F8E4NV))
        } else {
            matches!(d, Some(DType::F16 | DType::BF16))
        };
        ok && k.ty(*v).is_block()
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
            // A value nothing reads qualifies (a rotated loop carries its
            // first tile unread, `tilebook_tir::rotate`).
            let Some(us) = uses.get(v) else { return true };
            us.iter().all(|(op, i)| match &op.kind {
                OpKind::Dot { .. } => *i < 2 && plan.contains_key(&op.results[0]),
                // `tl.trans(k)` read only as B by `mma.sync` dots, which
                // store `k` as it is (`codegen::mma_rows::dot_transposes`),
                // or by `wgmma` dots that read `k`'s tile K-major (`kt_b`).
                OpKind::Trans(p) if !fp8 && p.as_slice() == [1, 0] => {
                    uses.get(&op.results[0]).is_some_and(|tu| {
                        tu.iter().all(|(d, j)| {
                            *j == 1
                                && matches!(d.kind, OpKind::Dot { .. })
                                && plan
                                    .get(&d.results[0])
                                    .is_some_and(|l| l.kind.is_half() && (!l.wgmma || l.kt_b))
                        })
                    })
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The swizzle is a permutation of 16-byte chunks within each 8-row group
    /// and keeps every chunk's 16 bytes together.
    #[test]
    fn swizzled_offsets_are_a_permutation() {
        for (rows, cols) in [(128, 64), (64, 32), (32, 128), (128, 16)] {
            let s = Swizzled::new(rows, cols, 2).unwrap();
            let mut seen = vec![false; s.bytes() / 2];
            for r in 0..rows {
                for c in 0..cols {
                    let o = s.offset(r, c);
                    assert_eq!(o % 2, 0);
                    assert!(!seen[o / 2], "{rows}x{cols}: ({r}, {c}) collides");
                    seen[o / 2] = true;
                    assert_eq!(o - s.offset(r, c - c % 8), (c % 8) * 2);
                }
            }
        }
    }

    /// Where `shift` gives a constant, every element moved by it lands there.
    #[test]
    fn shifts_are_constant_offsets() {
        for (rows, cols, elem) in [
            (128, 64, 2),
            (64, 32, 2),
            (32, 128, 2),
            (128, 16, 2),
            (64, 128, 1),
            (256, 64, 2),
        ] {
            let s = Swizzled::new(rows, cols, elem).unwrap();
            let mut some = 0;
            for dr in [0i64, 1, 2, 4, 8, 16, 24, 32, 64] {
                for dc in [0i64, 8, 16, 32, 64] {
                    let Some(d) = s.shift(dr, dc) else { continue };
                    some += 1;
                    for r in 0..rows as i64 - dr {
                        for c in 0..cols as i64 - dc {
                            let (a, b) = (
                                s.offset(r as usize, c as usize),
                                s.offset((r + dr) as usize, (c + dc) as usize),
                            );
                            assert_eq!(
                                b as i64 - a as i64,
                                d,
                                "{rows}x{cols}x{elem}: ({r}, {c}) + ({dr}, {dc})"
                            );
                        }
                    }
                }
            }
            assert!(some > 1, "{rows}x{cols}x{elem}: no shift besides zero");
        }
    }

    /// Eight rows of one 16-byte column land in eight different bank groups
    /// under the 128-byte swizzle (what makes the `cp.async` writes conflict-free).
    #[test]
    fn a_column_of_chunks_spreads_over_the_banks() {
        let s = Swizzled::new(64, 64, 2).unwrap();
        let mut groups: Vec<usize> = (0..8).map(|r| (s.offset(r, 0) / 16) % 8).collect();
        groups.sort();
        assert_eq!(groups, (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn hopper_layouts_use_warpgroups() {
        let l = wgmma_layout(128, 128, 64, 8, MmaKind::F16, false, false).unwrap();
        assert_eq!((l.wm, l.wn, l.reps_m(), l.reps_n()), (8, 1, 1, 16));
        let l = wgmma_layout(128, 128, 32, 4, MmaKind::F16, false, false).unwrap();
        assert_eq!((l.wm, l.wn, l.reps_m(), l.reps_n()), (4, 1, 2, 16));
        assert_eq!(l.smem_bytes() % 1024, 0);
        assert!(wgmma_layout(32, 64, 32, 4, MmaKind::F16, false, false).is_none());
        assert!(wgmma_layout(128, 128, 24, 4, MmaKind::F16, false, false).is_none());
    }
}
