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
//! blocks per SM). Loops of several dots that leave groups running
//! (`LAZY_WAITS_MARK`, attention's backward) are asked for two blocks too,
//! kept within `LAZY_SPILL_BUDGET`.
//!
//! A kernel without tensor-core instructions that registers hold to a few
//! blocks (two or more) is compiled again for `TARGET_WARPS` warps per SM
//! (`.minnctapersm`), when that costs a thread at most `MORE_EXCESS`
//! registers, and the second build is kept only if ptxas fitted it without
//! any spill: the layer-norm forward at 4096 columns, 8 warps, takes 56
//! registers (4 blocks, 32 warps) where 40 fit six blocks, and runs 11 %
//! faster so (2674 -> 2967 GB/s on the H200, bench/NOTES.md session 45).
//! Tensor-core code that registers hold to two or more blocks asks for one
//! block more, under the same conditions: attention's backward `dk`/`dv`
//! kernel at 64 x 64, 4 warps, takes 185 registers (two blocks) where
//! Triton's 168 run three (bench/NOTES.md session 46).

/// Local memory per thread (bytes) a second build for two blocks may use
/// for spills.
pub(crate) const SPILL_BUDGET: u32 = 128;

/// Local memory per thread (bytes) a two-block build of tensor-core code
/// that leaves `wgmma` groups running (`LAZY_WAITS_MARK`: attention's
/// backward) may use. Its 8-warp `dq` kernel at D = 64 takes 143-148
/// registers, one block per SM; capped at 128 for two blocks it ran 12-14 %
/// faster on the H200 without a spill at 16384 keys (26.4 -> 23.0 ms,
/// Triton's 122-register build 23.1) and 11 % faster with 24 bytes spilled
/// causal at 4096 (bench/NOTES.md, session 56). At D = 128 (198 registers,
/// past what a second build is asked for) the cap spilled 104 bytes and ran
/// 40 % slower.
pub(crate) const LAZY_SPILL_BUDGET: u32 = 32;

/// Warps per SM a second build of a dot-free kernel asks for (three
/// quarters of an H100's or H200's 64).
pub(crate) const TARGET_WARPS: u32 = 48;

/// Registers a thread may give up for that build; past this a second JIT
/// would only spill.
pub(crate) const MORE_EXCESS: u32 = 24;

/// A second build to try: its PTX, the blocks per SM it asks for, and the
/// spill (bytes per thread) under which it is kept.
#[derive(Debug)]
pub(crate) struct SecondBuild {
    pub ptx: String,
    pub blocks: u32,
    pub spill_budget: u32,
}

/// The compiler's mark on tensor-core PTX whose tiles fit two blocks per SM
/// (`tilebook_nvptx::TWO_BLOCKS_MARK`, the same text).
pub const TWO_BLOCKS_MARK: &str = "// tilebook: tiles sized for two blocks per SM";

/// The compiler's mark on PTX that leaves `wgmma` groups running past their
/// dot (`tilebook_nvptx::LAZY_WAITS_MARK`, the same text).
pub const LAZY_WAITS_MARK: &str = "// tilebook: wgmma groups waited for at their first reader";

/// `ptx` with every `wgmma` group waited for as it is committed: the same
/// results (a wait for all groups is never too early; the later waits
/// return at once), without the registers that groups left running hold.
fn serialized(ptx: &str) -> String {
    ptx.replace(
        "wgmma.commit_group.sync.aligned;",
        "wgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0;",
    )
}

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
    /// Blocks one SM holds at most.
    pub blocks: u32,
}

/// Registers ptxas gives one block of `threads` at `regs` a thread: whole
/// warps, in units of 8 registers a thread (256 a warp).
fn block_regs(regs: u32, threads: u32) -> Option<u32> {
    let per_thread = regs.checked_add(7)? / 8 * 8;
    per_thread.checked_mul(threads.checked_add(31)? / 32 * 32)
}

/// The second build worth trying for a kernel whose first build takes
/// `regs` registers per thread: two blocks per SM where registers keep it
/// at one (`SPILL_BUDGET`, see the module text), more blocks for dot-free
/// code that registers keep below `TARGET_WARPS` (no spill); `None`
/// otherwise (including PTX not in the shape tilebook emits).
pub(crate) fn second_build(
    ptx: &str,
    threads: u32,
    shared: u32,
    regs: u32,
    sm: Sm,
) -> Option<SecondBuild> {
    if ptx.contains(".minnctapersm") || threads == 0 {
        return None;
    }
    let tensor = tensor_core(ptx);
    let per_block = shared.checked_add(sm.reserved_shared)?;
    let room = (sm.threads / threads)
        .min(sm.shared.checked_div(per_block)?)
        .min(sm.blocks);
    let by_regs = sm.regs / block_regs(regs, threads)?.max(1);
    let lazy = tensor && ptx.lines().take(2).any(|l| l == LAZY_WAITS_MARK);
    let (blocks, spill_budget) = if by_regs <= 1 {
        let marked = ptx.starts_with(TWO_BLOCKS_MARK) || lazy;
        if threads < 256 || (tensor && !marked) || room < 2 {
            return None;
        }
        let budget = match (tensor, lazy) {
            (false, _) => SPILL_BUDGET,
            (true, true) => LAZY_SPILL_BUDGET,
            (true, false) => 0,
        };
        (2, budget)
    } else {
        // Tensor-core code asks for one block more than its registers hold
        // (its accumulators leave little to give up), other code for
        // `TARGET_WARPS`.
        let want = if tensor {
            by_regs.saturating_add(1)
        } else {
            TARGET_WARPS.div_ceil(threads.div_ceil(32))
        }
        .min(room);
        if by_regs >= want {
            return None;
        }
        (want, 0)
    };
    // Registers the asked blocks leave each thread, and whether the build
    // could plausibly stay within its spill budget: ptxas spilled about
    // half of the excess as 4-byte slots when asked for two blocks
    // (layer-norm forward: 166 -> 128, 76 bytes; backward: 255 -> 128, 880
    // bytes), so an excess past twice the budget's registers (or, for a
    // build that may not spill, past `MORE_EXCESS`) is not worth a second
    // JIT (the backward's took 250 ms of driver time, cold, only to be
    // refused).
    let cap = sm.regs / threads.checked_mul(blocks)? / 8 * 8;
    let excess = regs.saturating_sub(cap);
    let limit = if blocks == 2 {
        2 * SPILL_BUDGET / 4
    } else {
        MORE_EXCESS
    };
    // Lazy waits cost registers (attention's backward `dk`/`dv` kernel at
    // D = 64: 199 against 192 serialized, and only the serialized form fits
    // the third block's 168 without spilling): past the limit, by at most
    // as much again, the serialized form is built for the asked blocks.
    let serial;
    let ptx = if excess <= limit {
        ptx
    } else if lazy && blocks > 2 && excess <= 2 * MORE_EXCESS {
        serial = serialized(ptx);
        serial.as_str()
    } else {
        return None;
    };
    // One entry point with its launch bounds on their own line.
    if ptx.matches(".entry ").count() != 1 {
        return None;
    }
    let at = ptx.find("\n.maxntid ")? + 1;
    let end = at + ptx[at..].find('\n')? + 1;
    let mut out = String::with_capacity(ptx.len() + 20);
    out.push_str(&ptx[..end]);
    out.push_str(&format!(".minnctapersm {blocks}\n"));
    // The compiler names a register cap (`.maxnreg`): the block's, or a
    // lower one a launch asked for. The second build's is at most what the
    // asked blocks leave each thread.
    let rest = &ptx[end..];
    match rest.strip_prefix(".maxnreg ") {
        Some(after) => {
            let eol = after.find('\n')?;
            let named: u32 = after[..eol].trim().parse().ok()?;
            out.push_str(&format!(".maxnreg {}\n", named.min(cap)));
            out.push_str(&after[eol + 1..]);
        }
        None => out.push_str(rest),
    }
    Some(SecondBuild {
        ptx: out,
        blocks,
        spill_budget,
    })
}

/// Whether the second build is the one to keep: ptxas fitted the asked
/// blocks' registers, spilling at most the build's budget.
pub(crate) fn keep_second(
    build: &SecondBuild,
    threads: u32,
    regs: u32,
    local_bytes: u32,
    sm: Sm,
) -> bool {
    local_bytes <= build.spill_budget
        && block_regs(regs, threads)
            .and_then(|r| r.checked_mul(build.blocks))
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
        blocks: 32,
    };

    const PTX: &str =
        ".version 8.0\n.target sm_90a\n.visible .entry k(\n)\n.maxntid 256, 1, 1\n{\n\tret;\n}\n";

    /// The second build's text, if one is asked for.
    fn two_blocks_ptx(ptx: &str, threads: u32, shared: u32, regs: u32, sm: Sm) -> Option<String> {
        second_build(ptx, threads, shared, regs, sm)
            .filter(|b| b.blocks == 2)
            .map(|b| b.ptx)
    }

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
        assert!(second_build(PTX, 256, 1024, 128, H100).is_none());
        assert!(second_build(PTX, 128, 1024, 255, H100).is_none());
        assert!(second_build(PTX, 256, 120 * 1024, 166, H100).is_none());
        let mma = PTX.replace(
            "ret;",
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 x;",
        );
        assert!(second_build(&mma, 256, 1024, 166, H100).is_none());
        // Tensor-core code the compiler marked (tiles fit two blocks): asked.
        let marked = format!(
            "{TWO_BLOCKS_MARK}\n{}",
            mma.replace("mma.sync", "wgmma.mma_async")
        );
        assert!(two_blocks_ptx(&marked, 256, 96 * 1024, 147, H100).is_some());
        assert!(second_build(&marked, 256, 128 * 1024, 147, H100).is_none());
        let b = second_build(&marked, 256, 96 * 1024, 147, H100).expect("second build");
        assert_eq!(b.spill_budget, 0);
        // So is code that leaves wgmma groups running (the backward's dq
        // kernel at 8 warps, 143 registers, 82 KB), with a few bytes to spill.
        let lazy = format!(
            "{LAZY_WAITS_MARK}\n{}",
            mma.replace("mma.sync", "wgmma.mma_async")
        );
        let b = second_build(&lazy, 256, 82 * 1024, 143, H100).expect("second build");
        assert_eq!((b.blocks, b.spill_budget), (2, LAZY_SPILL_BUDGET));
        assert!(b.ptx.contains(".minnctapersm 2\n"), "{}", b.ptx);
        // At D = 128 (198 registers) two blocks are too far.
        assert!(second_build(&lazy, 256, 82 * 1024, 198, H100).is_none());
        // Too far above two blocks' registers to fit without a large spill.
        assert!(two_blocks_ptx(PTX, 256, 1024, 192, H100).is_some());
        assert!(second_build(PTX, 256, 1024, 200, H100).is_none());
        // Sizes that would overflow are refused, not wrapped.
        assert!(second_build(PTX, u32::MAX, 0, 166, H100).is_none());
        assert!(second_build(PTX, 0, 0, 166, H100).is_none());
    }

    #[test]
    fn asks_dot_free_code_for_three_quarters_of_the_warps() {
        // The layer-norm forward at 4096 columns: 8 warps at 56 registers
        // hold 4 blocks (32 warps); six blocks leave 40 registers.
        let b = second_build(PTX, 256, 1024, 56, H100).expect("second build");
        assert_eq!((b.blocks, b.spill_budget), (6, 0));
        assert!(
            b.ptx.contains(".maxntid 256, 1, 1\n.minnctapersm 6\n{"),
            "{}",
            b.ptx
        );
        let capped = PTX.replace("1, 1\n{", "1, 1\n.maxnreg 255\n{");
        let b = second_build(&capped, 256, 1024, 56, H100).expect("second build");
        assert!(
            b.ptx.contains(".minnctapersm 6\n.maxnreg 40\n{"),
            "{}",
            b.ptx
        );
        // Four warps ask for twelve blocks (42 registers, 40 in units of 8).
        let four = PTX.replace(".maxntid 256", ".maxntid 128");
        assert_eq!(
            second_build(&four, 128, 1024, 56, H100).map(|b| b.blocks),
            Some(12)
        );
        // Already there, too far above (an excess past MORE_EXCESS would
        // only spill), or shared memory for no more: none.
        assert!(second_build(PTX, 256, 1024, 40, H100).is_none());
        assert!(second_build(PTX, 256, 1024, 72, H100).is_none());
        assert!(second_build(PTX, 256, 56 * 1024, 56, H100).is_none());
        // Tensor-core code asks for one block more, without spill: 56
        // registers hold four blocks of 8 warps, five leave 48.
        let wgmma = PTX.replace("ret;", "wgmma.mma_async.sync.aligned x;");
        let b = second_build(&wgmma, 256, 1024, 56, H100).expect("second build");
        assert_eq!((b.blocks, b.spill_budget), (5, 0));
        // Attention's backward dk/dv kernel (4 warps, 58.4 KB of tiles): 185
        // registers hold two blocks, three leave 168; shared memory holds
        // no fourth.
        let four = wgmma.replace(".maxntid 256", ".maxntid 128");
        let b = second_build(&four, 128, 59_770, 185, H100).expect("second build");
        assert_eq!(b.blocks, 3);
        assert!(
            b.ptx.contains(".maxntid 128, 1, 1\n.minnctapersm 3\n{"),
            "{}",
            b.ptx
        );
        assert!(second_build(&four, 128, 59_770, 168, H100).is_none());
        // More than MORE_EXCESS registers above the next block's share: none.
        assert!(second_build(&four, 128, 59_770, 200, H100).is_none());
        // Unless its groups were left running (`LAZY_WAITS_MARK`): then the
        // build waits for each group at its commit, up to twice that excess.
        let lazy = format!("{LAZY_WAITS_MARK}\n{four}").replace(
            "wgmma.mma_async.sync.aligned x;",
            "wgmma.mma_async.sync.aligned x;\n\twgmma.commit_group.sync.aligned;",
        );
        let b = second_build(&lazy, 128, 59_770, 200, H100).expect("second build");
        assert_eq!((b.blocks, b.spill_budget), (3, 0));
        assert!(
            b.ptx
                .contains("commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0;"),
            "{}",
            b.ptx
        );
        assert!(second_build(&lazy, 128, 59_770, 168 + 49, H100).is_none());
        // Within the limit the lazy build itself is asked for.
        let b = second_build(&lazy, 128, 59_770, 185, H100).expect("second build");
        assert!(!b.ptx.contains("wait_group"), "{}", b.ptx);
        // One warp a block: 48 would exceed the 32 blocks an SM holds, so
        // 32 are asked (64 registers).
        let one = PTX.replace(".maxntid 256", ".maxntid 32");
        let b = second_build(&one, 32, 0, 72, H100).expect("second build");
        assert_eq!(b.blocks, 32);
        assert!(second_build(&one, 32, 0, 64, H100).is_none());
        // Shared memory for five blocks: five asked (48 registers).
        let b = second_build(PTX, 256, 44 * 1024, 56, H100).expect("second build");
        assert_eq!(b.blocks, 5);
        assert!(b.ptx.contains(".minnctapersm 5\n"));
    }

    #[test]
    fn keeps_the_second_build_within_the_spill_budget() {
        let two = second_build(PTX, 256, 1024, 166, H100).expect("second build");
        assert!(keep_second(&two, 256, 128, 80, H100));
        assert!(!keep_second(&two, 256, 128, 536, H100));
        assert!(!keep_second(&two, 256, 136, 0, H100));
        // Tensor-core code: no spill at all.
        let wgmma = format!(
            "{TWO_BLOCKS_MARK}\n{}",
            PTX.replace("ret;", "wgmma.mma_async.sync.aligned x;")
        );
        let two = second_build(&wgmma, 256, 1024, 166, H100).expect("second build");
        assert!(keep_second(&two, 256, 128, 0, H100));
        assert!(!keep_second(&two, 256, 128, 8, H100));
        // More blocks for dot-free code: fitted and no spill.
        let six = second_build(PTX, 256, 1024, 56, H100).expect("second build");
        assert!(keep_second(&six, 256, 40, 0, H100));
        assert!(!keep_second(&six, 256, 40, 8, H100));
        assert!(!keep_second(&six, 256, 48, 0, H100));
    }
}
