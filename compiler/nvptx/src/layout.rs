//! The flattened blocked layout (see `docs/layouts.md`): a block of `n`
//! elements over `t` threads. When `n >= t`, thread `tid` holds `n / t`
//! registers in runs of `vec` consecutive elements:
//!
//! ```text
//! element(r, tid) = (r / vec) * (t * vec) + tid * vec + (r % vec)
//!
//! n = 1024, t = 128, vec = 4:  tid 0 holds 0..3, 512..515; tid 1 holds 4..7, 516..519; ...
//! ```
//!
//! When `n < t` every element is held by several threads (`tid % n`); only
//! the first holder stores it.

use std::collections::{HashMap, HashSet};
use tilebook_tir::{Kernel, OpKind};

/// Where the registers of a block live.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub n: usize,
    pub threads: usize,
    pub vec: usize,
}

impl Layout {
    /// Runs of up to `max_vec` elements per thread: 4 by default (16 bytes of
    /// 32-bit data), 8 where a block of this size is loaded or stored as
    /// 16-bit data, so one access moves 16 bytes.
    pub fn with_max_vec(n: usize, threads: usize, max_vec: usize) -> Layout {
        let vec = if n >= threads {
            (n / threads).min(max_vec)
        } else {
            1
        };
        Layout { n, threads, vec }
    }

    /// Registers per thread.
    pub fn regs(&self) -> usize {
        (self.n / self.threads).max(1)
    }

    /// Whether the element count, thread count and vector width are powers
    /// of two, so `tid * vec` and `base(r)` have disjoint bits.
    pub fn is_pow2(&self) -> bool {
        self.n.is_power_of_two() && self.threads.is_power_of_two() && self.vec.is_power_of_two()
    }

    /// Whether each element has exactly one holder.
    pub fn replicated(&self) -> bool {
        self.n < self.threads
    }

    /// `(constant part, tid multiplier)` of register `r`'s element index when
    /// not replicated: `element = base + tid * vec`.
    pub fn base(&self, r: usize) -> usize {
        (r / self.vec) * (self.threads * self.vec) + (r % self.vec)
    }
}

/// The run length per thread for each block size: every value of one element
/// count shares a layout (so elementwise ops need no conversion), and the runs
/// are as long as 16 bytes of the narrowest type that a block of that size
/// loads or stores (8 halves, 16 bytes of fp8), 4 elements otherwise;
/// `Gen::scalar_only_sizes` lowers it to 1 where no access can move more
/// than one element at a time.
///
/// A size that also stores a wider type keeps runs of 16 bytes of that
/// type (4 fp32): with runs of 8 each thread stores its 32 bytes of fp32
/// as two 16-byte halves, and a warp's store instruction then writes half
/// of each of 32 sectors, which L2 takes as twice the sector writes (layer
/// norm's backward: 32.6 M sectors for Triton's 21.0 M, bench/NOTES.md
/// session 32). Loads do not need it (the second half hits L1), nor do dot
/// operands, whose tiles are copied in runs of 16 bytes of their own type.
pub(crate) fn run_limits(k: &Kernel, operands: &HashSet<usize>) -> HashMap<usize, usize> {
    let mut out: HashMap<usize, usize> = HashMap::new();
    let mut stored: HashMap<usize, usize> = HashMap::new();
    tilebook_tir::walk_ops(&k.body, &mut |op| {
        if !matches!(op.kind, OpKind::Load { .. } | OpKind::Store { .. }) {
            return;
        }
        let t = k.ty(op.args[0]);
        if let (true, Some(d)) = (t.is_block(), t.elem.pointee()) {
            let size = d.size_bytes().max(1);
            let e = out.entry(t.numel()).or_insert(4);
            *e = (*e).max((16 / size).max(4));
            if matches!(op.kind, OpKind::Store { .. }) {
                let w = stored.entry(t.numel()).or_insert(0);
                *w = (*w).max(size);
            }
        }
    });
    for (n, run) in out.iter_mut() {
        if let Some(&w) = stored.get(n).filter(|_| !operands.contains(n)) {
            *run = (*run).min((16 / w).max(4));
        }
    }
    out
}

/// The element counts of `tl.dot` operands (A and B), whose layouts keep
/// runs of 16 bytes of their type (see `run_limits`, `scalar_only_sizes`).
pub(crate) fn dot_operand_sizes(k: &Kernel) -> HashSet<usize> {
    let mut out = HashSet::new();
    tilebook_tir::walk_ops(&k.body, &mut |op| {
        if matches!(op.kind, OpKind::Dot { .. }) {
            out.extend(op.args[..2].iter().map(|&v| k.ty(v).numel()));
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_element_has_one_holder() {
        for (n, t, v) in [
            (1024, 128, 4),
            (64, 128, 4),
            (4096, 256, 4),
            (128, 128, 4),
            (256, 128, 4),
            (4096, 128, 8),
            (4096, 128, 16),
            (512, 128, 8),
        ] {
            let l = Layout::with_max_vec(n, t, v);
            let mut seen = vec![0; n];
            for tid in 0..t {
                for r in 0..l.regs() {
                    let e = if l.replicated() {
                        tid % n
                    } else {
                        l.base(r) + tid * l.vec
                    };
                    if !l.replicated() || tid < n {
                        seen[e] += 1;
                    }
                }
            }
            assert!(seen.iter().all(|&c| c == 1), "n={n} t={t}");
        }
    }
}
