//! A second resident block for kernels that registers alone keep at one.
//!
//! ptxas sizes a kernel's registers for the threads its launch bounds name
//! (`.maxntid`), not for how many blocks share an SM. A memory-bound kernel
//! of 8 warps that lands just above 128 registers (the layer-norm forward
//! at 16384 columns: 166) runs one block per SM, and the SM idles through
//! each block's reductions where a second block would be loading. Such a
//! kernel is compiled again with `.minnctapersm 2`, which makes ptxas fit
//! two blocks' registers, and the second build is kept only when it did so
//! spilling at most `SPILL_BUDGET` bytes per thread (the layer-norm
//! forward: 76 bytes, 2363 -> 2675 GB/s on the H100; its backward would
//! spill 880 and run at half speed, so it keeps its first build).
//!
//! Kernels with tensor-core instructions are left as they are (their
//! registers hold accumulators that cannot spill cheaply), unless the
//! compiler marked their PTX (`TWO_BLOCKS_MARK`): a loop of one `wgmma`
//! dot whose tiles take at most half an SM's shared memory. Such a kernel
//! keeps its second build only without any spill (fp8 matmul at 128 x 128
//! x 128, 8 warps: 147 registers in the first build, Triton's 104 and two
//! blocks per SM).

/// Local memory per thread (bytes) a second build may use for spills.
pub(crate) const SPILL_BUDGET: u32 = 128;

/// The compiler's mark on tensor-core PTX whose tiles fit two blocks per SM
/// (`tilebook_nvptx::TWO_BLOCKS_MARK`, the same text).
const TWO_BLOCKS_MARK: &str = "// tilebook: tiles sized for two blocks per SM";

fn tensor_core(ptx: &str) -> bool {
    ptx.contains("mma.sync") || ptx.contains("wgmma")
}

/// What decides whether a second block could be resident.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Sm {
    /// 32-bit registers of one SM.
    pub regs: u32,
    /// Shared memory of one SM, and what the system reserves per block.
    pub shared: u32,
    pub reserved_shared: u32,
    /// Threads one SM holds at most.
    pub threads: u32,
}

/// The PTX of a second build asking for two blocks per SM, if the first
/// build (`regs` registers per thread) leaves room for only one by its
/// registers while two would fit by threads and shared memory; `None`
/// otherwise (including PTX not in the shape tilebook emits).
pub(crate) fn two_blocks_ptx(
    ptx: &str,
    threads: u32,
    shared: u32,
    regs: u32,
    sm: Sm,
) -> Option<String> {
    if threads < 256 || (tensor_core(ptx) && !ptx.starts_with(TWO_BLOCKS_MARK)) {
        return None;
    }
    let per_block = shared.checked_add(sm.reserved_shared)?;
    let fits_two = threads.checked_mul(2)? <= sm.threads && per_block.checked_mul(2)? <= sm.shared;
    let one_by_regs = regs.checked_mul(threads)?.checked_mul(2)? > sm.regs;
    if !(fits_two && one_by_regs) || ptx.contains(".minnctapersm") {
        return None;
    }
    // Registers two blocks leave each thread, and whether the second build
    // could plausibly spill within the budget: ptxas spilled about half of
    // the excess as 4-byte slots (layer-norm forward: 166 -> 128, 76
    // bytes; backward: 255 -> 128, 880 bytes), so an excess past twice the
    // budget's registers is not worth a second JIT (the backward's took
    // 250 ms of driver time, cold, only to be refused).
    let cap = sm.regs / threads.checked_mul(2)?;
    if regs.saturating_sub(cap) > 2 * SPILL_BUDGET / 4 {
        return None;
    }
    // One entry point with its launch bounds on their own line.
    if ptx.matches(".entry ").count() != 1 {
        return None;
    }
    let at = ptx.find("\n.maxntid ")? + 1;
    let end = at + ptx[at..].find('\n')? + 1;
    let mut out = String::with_capacity(ptx.len() + 20);
    out.push_str(&ptx[..end]);
    out.push_str(".minnctapersm 2\n");
    // The compiler names a register cap (`.maxnreg`): the block's, or a
    // lower one a launch asked for. The second build's is at most what two
    // blocks leave each thread.
    let rest = &ptx[end..];
    match rest.strip_prefix(".maxnreg ") {
        Some(after) => {
            let eol = after.find('\n')?;
            let named: u32 = after[..eol].trim().parse().ok()?;
            out.push_str(&format!(".maxnreg {}\n", named.min(cap / 8 * 8)));
            out.push_str(&after[eol + 1..]);
        }
        None => out.push_str(rest),
    }
    Some(out)
}

/// Whether the second build is the one to keep: ptxas fitted two blocks'
/// registers, spilling at most `SPILL_BUDGET` bytes per thread (nothing,
/// for tensor-core code).
pub(crate) fn keep_second(ptx: &str, threads: u32, regs: u32, local_bytes: u32, sm: Sm) -> bool {
    let budget = if tensor_core(ptx) { 0 } else { SPILL_BUDGET };
    local_bytes <= budget
        && regs
            .checked_mul(threads)
            .and_then(|r| r.checked_mul(2))
            .is_some_and(|r| r <= sm.regs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const H100: Sm = Sm {
        regs: 65536,
        shared: 233472,
        reserved_shared: 1024,
        threads: 2048,
    };

    const PTX: &str =
        ".version 8.0\n.target sm_90a\n.visible .entry k(\n)\n.maxntid 256, 1, 1\n{\n\tret;\n}\n";

    #[test]
    fn asks_for_two_blocks_only_where_registers_keep_one() {
        let two = two_blocks_ptx(PTX, 256, 1024, 166, H100).expect("second build");
        assert!(
            two.contains(".maxntid 256, 1, 1\n.minnctapersm 2\n{"),
            "{two}"
        );
        // The compiler's one-block register cap becomes two blocks' cap.
        let capped = PTX.replace("1, 1\n{", "1, 1\n.maxnreg 255\n{");
        let two = two_blocks_ptx(&capped, 256, 1024, 166, H100).expect("second build");
        assert!(
            two.contains(".maxntid 256, 1, 1\n.minnctapersm 2\n.maxnreg 128\n{"),
            "{two}"
        );
        let asked = PTX.replace("1, 1\n{", "1, 1\n.maxnreg 96\n{");
        let two = two_blocks_ptx(&asked, 256, 1024, 166, H100).expect("second build");
        assert!(two.contains(".minnctapersm 2\n.maxnreg 96\n{"), "{two}");
        // Already two blocks by registers, too few threads to matter, too
        // much shared memory for two, or tensor-core code: no second build.
        assert!(two_blocks_ptx(PTX, 256, 1024, 128, H100).is_none());
        assert!(two_blocks_ptx(PTX, 128, 1024, 255, H100).is_none());
        assert!(two_blocks_ptx(PTX, 256, 120 * 1024, 166, H100).is_none());
        let mma = PTX.replace(
            "ret;",
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 x;",
        );
        assert!(two_blocks_ptx(&mma, 256, 1024, 166, H100).is_none());
        // Tensor-core code the compiler marked (tiles fit two blocks): asked.
        let marked = format!(
            "{TWO_BLOCKS_MARK}\n{}",
            mma.replace("mma.sync", "wgmma.mma_async")
        );
        assert!(two_blocks_ptx(&marked, 256, 96 * 1024, 147, H100).is_some());
        assert!(two_blocks_ptx(&marked, 256, 128 * 1024, 147, H100).is_none());
        // Too far above two blocks' registers to fit without a large spill.
        assert!(two_blocks_ptx(PTX, 256, 1024, 192, H100).is_some());
        assert!(two_blocks_ptx(PTX, 256, 1024, 200, H100).is_none());
        // Sizes that would overflow are refused, not wrapped.
        assert!(two_blocks_ptx(PTX, u32::MAX, 0, 166, H100).is_none());
    }

    #[test]
    fn keeps_the_second_build_within_the_spill_budget() {
        assert!(keep_second(PTX, 256, 128, 80, H100));
        assert!(!keep_second(PTX, 256, 128, 536, H100));
        assert!(!keep_second(PTX, 256, 136, 0, H100));
        // Tensor-core code: no spill at all.
        let wgmma = PTX.replace("ret;", "wgmma.mma_async.sync.aligned x;");
        assert!(keep_second(&wgmma, 256, 128, 0, H100));
        assert!(!keep_second(&wgmma, 256, 128, 8, H100));
    }
}
