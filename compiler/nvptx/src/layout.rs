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
