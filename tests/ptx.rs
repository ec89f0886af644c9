//! Golden PTX checks that run without a GPU: the generated code has the
//! structure performance needs (128-bit vector accesses where the
//! specialization allows them), and every tutorial kernel compiles to PTX.

use tilebook_frontend::SourceFile;
use tilebook_tests::{golden_source, gpu_kernel, root};

fn ptx(file: &str, source: &str, kernel: &str, signature: &str) -> String {
    ptx_for("sm_90", file, source, kernel, signature)
}

fn ptx_for(arch: &str, file: &str, source: &str, kernel: &str, signature: &str) -> String {
    gpu_kernel(file, source, kernel, signature, &|o| {
        o.arch = arch.into();
    })
    .ptx
}

/// Hopper PTX without bulk tensor copies for pointer loads (the build a
/// launch falls back to where no tensor map describes its arguments).
fn ptx_without_pointer_maps(file: &str, source: &str, kernel: &str, signature: &str) -> String {
    gpu_kernel(file, source, kernel, signature, &|o| {
        o.arch = "sm_90".into();
        o.pointer_maps = false;
    })
    .ptx
}

#[test]
fn vector_add_at_a_16_signature_uses_128_bit_accesses() {
    let text = std::fs::read_to_string(root().join("tutorials/01-vector-add.py")).unwrap();
    let sig = |o: &str| format!("*fp32:16, *fp32:16, *fp32:16, i32:16, BLOCK_SIZE=1024{o}");
    let add = |o: &str| ptx("01.py", &text, "add_kernel", &sig(o));
    let (p, capped) = (add(""), add(", maxnreg=40"));
    let v = p.contains(".version 8.5") && p.contains(".target sm_90");
    // Two loads of 2 x 4 floats per thread; the block's register cap named.
    assert!(v && p.matches("ld.global.v4.").count() == 4, "{p}");
    assert_eq!(p.matches("st.global.v4.").count(), 2, "{p}");
    assert!(p.contains(".maxntid 128, 1, 1\n.maxnreg 255\n"), "{p}");
    assert!(capped.contains(".maxnreg 40\n"), "{capped}");
}

#[test]
fn stdlib_softmax_rows_use_128_bit_accesses() {
    // The kernel behind torch.softmax on 'cuda' tensors: with 32-bit row
    // offsets and a row stride divisible by 16, loads and stores are v4.
    let text = std::fs::read_to_string(root().join("stdlib/torch_ops.py")).unwrap();
    let p = ptx(
        "torch_ops.py",
        &text,
        "tb_softmax_row",
        "*fp32:16, *fp32:16, i32, i32:16, i32:16, WIDE=False, BLOCK=4096, num_warps=16",
    );
    assert!(p.contains("ld.global.v4."), "{p}");
    assert!(p.contains("st.global.v4."), "{p}");
}

#[test]
fn stdlib_kernels_past_two_to_the_31_use_64_bit_offsets_and_keep_vector_accesses() {
    // `WIDE` (tensors of 2^31+ elements): the program index becomes 64-bit
    // before it scales the block, so offsets cannot wrap; a divisible count
    // keeps vector accesses: 16-byte stores of fp32 in runs of 4, so a
    // warp's store covers whole sectors, and the halves read 8 bytes a run.
    let text = std::fs::read_to_string(root().join("stdlib/torch_ops.py")).unwrap();
    let wide = ptx(
        "torch_ops.py",
        &text,
        "tb_cast",
        "*fp16:16, *fp32:16, i64:16, WIDE=True, BLOCK=1024",
    );
    assert!(wide.contains(", 1024;"), "{wide}");
    assert!(wide.contains("mul.wide.s32"), "{wide}");
    assert!(wide.contains("ld.global.v2.b32"), "{wide}");
    assert!(wide.contains("st.global.v4.f32"), "{wide}");
    let narrow = ptx(
        "torch_ops.py",
        &text,
        "tb_cast",
        "*fp16:16, *fp32:16, i32:16, WIDE=False, BLOCK=1024",
    );
    assert!(narrow.contains("shl.b32"), "{narrow}");
    assert!(!narrow.contains(", 1024;"), "{narrow}");
}

#[test]
fn kernels_carry_launch_bounds_for_their_warps() {
    // `.maxntid` keeps ptxas's register allocation within what a block of
    // 32 * num_warps threads may use (a 16-warp block: 128 per thread).
    let text = std::fs::read_to_string(root().join("tutorials/01-vector-add.py")).unwrap();
    for (warps, threads) in [(4, 128), (16, 512)] {
        let p = ptx(
            "01-vector-add.py",
            &text,
            "add_kernel",
            &format!("*fp32:16, *fp32:16, *fp32:16, i32:16, BLOCK_SIZE=1024, num_warps={warps}"),
        );
        assert!(p.contains(&format!(".maxntid {threads}, 1, 1")), "{p}");
    }
}

#[test]
fn without_the_divisibility_hint_only_the_run_the_bound_cuts_goes_element_by_element() {
    let text = std::fs::read_to_string(root().join("tutorials/01-vector-add.py")).unwrap();
    // n_elements not known to be a multiple of 16: `offs < n` may change
    // inside a run of 4, but only from true to false. Whole runs stay
    // vectors; the run it cuts is read and written element by element.
    let p = ptx(
        "01-vector-add.py",
        &text,
        "add_kernel",
        "*fp32:16, *fp32:16, *fp32:16, i32, BLOCK_SIZE=1024",
    );
    assert_eq!(p.matches("ld.global.v4.").count(), 4, "{p}");
    assert_eq!(p.matches("st.global.v4.").count(), 2, "{p}");
    let scalar = p.matches("ld.global.b32").count() + p.matches("ld.global.f32").count();
    assert_eq!(scalar, 16, "{p}");
    // Without the pointers' alignment, nothing is a vector.
    let p = ptx(
        "01-vector-add.py",
        &text,
        "add_kernel",
        "*fp32, *fp32:16, *fp32:16, i32, BLOCK_SIZE=1024",
    );
    assert_eq!(p.matches("ld.global.v4.").count(), 2, "{p}");
}

#[test]
fn int64_offsets_keep_128_bit_accesses() {
    // Kernels for tensors past 2^31 elements compute offsets in int64; the
    // casts must not hide that the runs are contiguous and aligned. The
    // kernel is the one the conformance suite runs (tests/conformance/memory.py).
    let memory = std::fs::read_to_string(root().join("tests/conformance/memory.py")).unwrap();
    let p = ptx(
        "memory.py",
        &memory,
        "add_int64",
        "*fp32:16, *fp32:16, *fp32:16, i64:16, BLOCK=1024",
    );
    assert!(p.contains("ld.global.v4."), "{p}");
    assert!(p.contains("st.global.v4."), "{p}");
    // A constant shift multiplies the divisibility.
    let source = r#"
import triton
import triton.language as tl

@triton.jit
def shifted(x_ptr, out_ptr, BLOCK: tl.constexpr):
    base = tl.program_id(0) << 10
    offsets = base + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets))
"#;
    let p = ptx(
        "shifted.py",
        source,
        "shifted",
        "*fp32:16, *fp32:16, BLOCK=1024",
    );
    assert!(p.contains("ld.global.v4."), "{p}");
}

#[test]
fn tutorial_matmul_compiles_to_ptx() {
    // With M and N not known to be multiples of 16, B's columns wrap (`% N`)
    // and are not contiguous: operands go through registers to shared memory.
    let p = ptx(
        "matmul.py",
        &golden_source("matmul.py"),
        "matmul_kernel",
        "*fp16:16, *fp16:16, *fp16:16, i32, i32, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, ACTIVATION='leaky_relu'",
    );
    assert!(p.contains(".entry matmul_kernel"), "{p}");
    // 64x64 on 4 warps: 1x4 repetitions of 16x8 per warp, two k-steps of 16.
    assert!(
        p.contains("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
        "{p}"
    );
    let mmas = p.matches("mma.sync").count();
    assert_eq!(mmas, 16, "{mmas} mma instructions");
    // One barrier in the K loop (the operand tiles are double-buffered) and
    // three for the one conversion of the accumulator in the epilogue. The
    // K-loop masks are rematerialised, not broadcast through shared memory.
    let barriers = p.matches("bar.sync").count();
    assert_eq!(barriers, 4, "{barriers} barriers");
}

#[test]
fn tutorial_matmul_at_divisible_sizes_pipelines_with_cp_async() {
    // On Ampere (no wgmma): mma.sync with ldmatrix fragments.
    let p = ptx_for(
        "sm_80",
        "matmul.py",
        &golden_source("matmul.py"),
        "matmul_kernel",
        "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, ACTIVATION=''",
    );
    // Operands go global -> shared with cp.async (no registers), four
    // 16-byte runs per thread and tile, one commit group per tile. With the
    // default num_stages=3 the K loop prefetches two iterations ahead: the
    // prologue copies A and B of iterations 0 and 1, the loop those of i + 2.
    assert_eq!(p.matches("cp.async.cg.shared.global").count(), 24, "{p}");
    assert!(!p.contains("cp.async.ca"), "{p}");
    assert_eq!(p.matches("cp.async.commit_group").count(), 6, "{p}");
    // The dot waits for its own tiles only: the two groups of iteration
    // i + 1 stay in flight; the copies for i + 2 are issued after the barrier,
    // into the buffer that iteration i - 1 read.
    assert!(p.contains("cp.async.wait_group 2;"), "{p}");
    let wait = p.find("cp.async.wait_group 2;").unwrap();
    let bar = wait + p[wait..].find("bar.sync").unwrap();
    let (copy, mma) = (p[bar..].find("cp.async.cg"), p[bar..].find("mma.sync"));
    assert!(copy.unwrap() < mma.unwrap(), "{p}");
    // Fragments come from ldmatrix, A plain and B transposed, four 8x8 matrices at a time.
    let ldmatrix = "ldmatrix.sync.aligned.m8n8.x4";
    assert!(p.contains(&format!("{ldmatrix}.shared.b16")), "{p}");
    assert!(p.contains(&format!("{ldmatrix}.trans.shared.b16")), "{p}");
    assert!(!p.contains("ld.shared.u32"), "{p}");
    assert_eq!(p.matches("mma.sync.aligned.m16n8k16").count(), 64, "{p}");
    // The fp16 result leaves in 16-byte stores: 128x128 halves over 128
    // threads is 16 runs of 8 per thread.
    assert_eq!(p.matches("st.global.v4.b32").count(), 16, "{p}");
}

#[test]
fn tutorial_matmul_on_hopper_uses_wgmma_on_swizzled_tiles() {
    let p = ptx_without_pointer_maps(
        "matmul.py",
        &golden_source("matmul.py"),
        "matmul_kernel",
        "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, ACTIVATION='', num_warps=8, num_stages=4",
    );
    // wgmma is an sm_90a feature.
    assert!(p.contains(".target sm_90a"), "{p}");
    // Two warpgroups of 64 rows each; four k-steps of 16 per iteration, in the
    // loop only (the pipelining pass moved the loads, not the dot).
    assert_eq!(
        p.matches("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16")
            .count(),
        4,
        "{p}"
    );
    assert!(p.contains("wgmma.fence.sync.aligned"), "{p}");
    // The loop keeps one group in flight and waits for the last at its exit,
    // before the epilogue reads the accumulators: once each.
    let inflight = p
        .find("wgmma.wait_group.sync.aligned 1")
        .expect("in-flight wait");
    let last = p
        .find("wgmma.wait_group.sync.aligned 0")
        .expect("final wait");
    assert!(inflight < last, "{p}");
    assert_eq!(p.matches("wgmma.wait_group").count(), 2, "{p}");
    // Operands arrive by 16-byte cp.async, made visible to the async proxy
    // before the barrier that precedes the wgmma.
    let fence = p
        .find("fence.proxy.async.shared::cta")
        .expect("proxy fence");
    let bar = fence + p[fence..].find("bar.sync").unwrap();
    assert!(bar < p.find("wgmma.mma_async").unwrap(), "{p}");
    assert!(p.contains("cp.async.cg.shared.global"), "{p}");
    // No register fragments: ldmatrix and mma.sync are gone.
    assert!(!p.contains("ldmatrix"), "{p}");
    assert!(!p.contains("mma.sync"), "{p}");
    // The shared window is aligned for the 128-byte swizzle pattern.
    assert!(p.contains(".align 1024"), "{p}");
    // The epilogue casts to fp16 in the accumulator's layout and moves
    // halves, not floats, through shared memory: 64 accumulators per thread
    // leave in 32 paired-half stores and return in 16-byte loads.
    assert!(!p.contains("st.shared.v2.f32"), "{p}");
    let paired = p.matches("st.shared.b32").count() + p.matches("st.shared.u32").count();
    assert_eq!(paired, 32, "{p}");
    let v4 = p.contains("ld.shared.v4.b32") || p.contains("ld.shared.v4.u32");
    assert!(v4, "{p}");
}

#[test]
fn in_flight_wgmma_needs_room_for_its_extra_stage() {
    // 128 x N x 64 fp16 tiles: 16 + N / 8 KB a stage. N = 256: 3 stages and the in-flight one fit
    // a block's 227 KB, 4 + 1 do not (each dot is waited for). N = 128, 3 stages: room for two
    // blocks per SM, which the in-flight stage would take: waited for, PTX marked (H200 563 -> 655).
    let build = |n: usize, stages: usize| {
        let sig = format!(
            "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, BLOCK_SIZE_M=128, BLOCK_SIZE_N={n}, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, ACTIVATION='', num_warps=8, num_stages={stages}"
        );
        ptx(
            "matmul.py",
            &golden_source("matmul.py"),
            "matmul_kernel",
            &sig,
        )
    };
    let p = build(256, 3);
    assert!(p.contains("wgmma.wait_group.sync.aligned 1"), "{p}");
    assert!(!p.contains(tilebook_nvptx::TWO_BLOCKS_MARK), "{p}");
    let p = build(256, 4);
    assert!(!p.contains("wgmma.wait_group.sync.aligned 1"), "{p}");
    assert!(p.contains("wgmma.wait_group.sync.aligned 0"), "{p}");
    let p = build(128, 3);
    assert!(p.contains(tilebook_nvptx::TWO_BLOCKS_MARK), "{p}");
    assert!(!p.contains("wgmma.wait_group.sync.aligned 1"), "{p}");
}

#[test]
fn plus_equals_dot_pipelines_like_a_dot_with_accumulator() {
    // `accumulator += tl.dot(a, b)` is folded into the dot (`dot-acc` in the
    // tile IR pipeline), so the loop keeps its wgmma group in flight too.
    let source = golden_source("matmul.py").replace(
        "accumulator = tl.dot(a, b, accumulator)",
        "accumulator += tl.dot(a, b)",
    );
    assert!(source.contains("accumulator += tl.dot(a, b)"));
    let p = ptx(
        "matmul.py",
        &source,
        "matmul_kernel",
        "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, ACTIVATION='', num_warps=8, num_stages=4",
    );
    assert!(p.contains("wgmma.wait_group.sync.aligned 1"), "{p}");
}

#[test]
fn fp8_dot_runs_on_tensor_cores() {
    let src = r#"
import triton
import triton.language as tl

@triton.jit
def dot8(a_ptr, b_ptr, c_ptr):
    r = tl.arange(0, 32)
    a = tl.load(a_ptr + r[:, None] * 32 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * 32 + r[None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + r[:, None] * 32 + r[None, :], c)
"#;
    for ty in ["fp8e5", "fp8e4nv"] {
        let sig = format!("*{ty}:16, *{ty}:16, *fp32:16");
        // Too small for `wgmma` (32 rows), and on Ampere, which has no fp8
        // MMA: fp8 values are exact in fp16, so the fp16 instruction gives
        // the same result, in two k-steps of 16 on two 16x8 tiles per warp.
        for arch in ["sm_80", "sm_90"] {
            let p = ptx_for(arch, "dot8.py", src, "dot8", &sig);
            assert_eq!(
                p.matches("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
                    .count(),
                4,
                "{ty}: {p}"
            );
            assert!(!p.contains("fma.rn.f32"), "{ty}: {p}");
        }
    }
}

#[test]
fn fp16_matmul_with_column_major_b_uses_wgmma_on_k_major_tiles() {
    // `matmul(a, w.T)` as tutorial 09 calls its pointer kernels: b's `[K, N]`
    // blocks are contiguous down the columns (`stride_bk == 1`). B's tiles
    // are filled by 16-byte `cp.async` runs down those columns into K-major
    // tiles, which `wgmma` reads untransposed (`imm-trans-b` = 0).
    let p = ptx_without_pointer_maps(
        "matmul.py",
        &golden_source("matmul.py"),
        "matmul_kernel",
        "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:1, i32:16, i32:16, i32:1, BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, ACTIVATION='', num_warps=8",
    );
    let instr = "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16";
    assert_eq!(p.matches(instr).count(), 4, "{p}");
    assert_eq!(p.matches("p, 1, 1, 0, 0;").count(), 4, "{p}");
    assert!(!p.contains("mma.sync"), "{p}");
    assert!(!p.contains("ldmatrix"), "{p}");
    // A's 128x64 and B's 64x128 halves are four 16-byte copies per thread
    // each, for the two tiles the prologue prefetches and the loop's one
    // (in the build without pointer maps; `tests/ptx_tma.rs` has the
    // default, bulk copies).
    assert_eq!(p.matches("cp.async.cg.shared.global").count(), 24, "{p}");
    assert!(!p.contains("cp.async.ca"), "{p}");
}

/// A grouped product in the manner of tutorial 08 (`hinted_groups` of
/// `tests/conformance/pointers.py`, which checks its values on both
/// backends): each problem's matrices arrive as addresses loaded from a
/// tensor and cast to pointers, their leading dimensions loaded too, so
/// nothing is known of their alignment; `tl.multiple_of(ptrs, [16, 16])`
/// written as a statement promises it (the hint applies to the name, as
/// Triton records it on the value).
#[test]
fn hint_statements_put_pointers_loaded_from_memory_on_the_tile_path() {
    let sig = |hint: &str| {
        format!(
            "*i64:16, *i32:16, i32, BM=128, BN=128, BK=32, HINT={hint}, num_warps=4, num_stages=3"
        )
    };
    let text = std::fs::read_to_string(root().join("tests/conformance/pointers.py")).unwrap();
    let compile = |hint| ptx_for("sm_90a", "pointers.py", &text, "hinted_groups", &sig(hint));
    let hinted = compile("True");
    assert_eq!(hinted.matches("wgmma.mma_async").count(), 4, "{hinted}");
    assert_eq!(
        hinted.matches("cp.async.cg.shared.global").count(),
        24,
        "{hinted}"
    );
    assert!(!hinted.contains("mma.sync"), "{hinted}");
    // The result's addresses are not hinted: 2-byte stores, from a layout
    // of one element per thread per run, so a warp's stores are neighbours.
    assert_eq!(hinted.matches("st.global.b16").count(), 128, "{hinted}");
    // Without the promise the addresses may be odd: element by element.
    let plain = compile("False");
    assert!(!plain.contains("cp.async"), "{plain}");
    assert!(!plain.contains("wgmma"), "{plain}");
    // Operands keep runs of 8 (stored into their tiles as vectors; one
    // element per run spilled and faulted at 09's sizes, see prefix.rs).
    assert_eq!(plain.matches("st.shared.v4.b16").count(), 16, "{plain}");
    assert!(!plain.contains("st.shared.b16"), "{plain}");
}

#[test]
fn fp8_matmul_with_k_major_b_uses_wgmma_on_hopper() {
    // Tutorial 03's fp8 run: b is pre-transposed (`b.T`), so its `[K, N]`
    // tiles are contiguous down the columns (`stride_bk == 1`). Both tiles
    // arrive by 16-byte `cp.async` into K-major swizzled tiles and `wgmma`
    // reads e5m2/e4m3 directly: 128x128x64 on two warpgroups is two k-steps
    // of 32 per iteration.
    for (ty, ptx_ty) in [("fp8e5", "e5m2"), ("fp8e4nv", "e4m3")] {
        let p = ptx_without_pointer_maps(
            "matmul.py",
            &golden_source("matmul.py"),
            "matmul_kernel",
            &format!("*{ty}:16, *{ty}:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:1, i32:16, i32:16, i32:1, BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, ACTIVATION='', num_warps=8"),
        );
        let instr = format!("wgmma.mma_async.sync.aligned.m64n128k32.f32.{ptx_ty}.{ptx_ty}");
        assert_eq!(p.matches(&instr).count(), 2, "{ty}: {p}");
        assert!(p.contains(".target sm_90a"), "{p}");
        assert!(!p.contains("ldmatrix"), "{p}");
        assert!(!p.contains("mma.sync"), "{p}");
        // Every operand byte moves by 16-byte cp.async (in the build
        // without pointer maps; `tests/ptx_tma.rs` has the default): A's
        // 128x64 tile is two copies per thread of 256, B's 64x128 two more,
        // for each of the two tiles the prologue prefetches (three stages)
        // and in the loop.
        assert_eq!(p.matches("cp.async.cg.shared.global").count(), 12, "{p}");
        assert!(!p.contains("cp.async.ca"), "{p}");
    }
    // With B in its plain layout (N contiguous) there are no K-major runs
    // to copy: B's rows arrive by 16-byte cp.async into a staging tile, and
    // each dot transposes it into a K-major tile (4 x 4-byte blocks through
    // `prmt`) before the same fp8 `wgmma`s read it.
    let p = ptx_without_pointer_maps(
        "matmul.py",
        &golden_source("matmul.py"),
        "matmul_kernel",
        "*fp8e5:16, *fp8e5:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, ACTIVATION='', num_warps=8",
    );
    let instr = "wgmma.mma_async.sync.aligned.m64n128k32.f32.e5m2.e5m2";
    assert_eq!(p.matches(instr).count(), 2, "{p}");
    assert!(!p.contains("mma.sync"), "{p}");
    assert_eq!(p.matches("cp.async.cg.shared.global").count(), 12, "{p}");
    // 64x128 bytes in 4x4 blocks over 256 threads: two blocks per thread,
    // eight `prmt` each.
    assert_eq!(p.matches("prmt.b32").count(), 16, "{p}");
}

#[test]
fn tf32_and_int8_dots_run_on_tensor_cores() {
    let src = r#"
import triton
import triton.language as tl

@triton.jit
def dot32(a_ptr, b_ptr, c_ptr):
    r = tl.arange(0, 32)
    a = tl.load(a_ptr + r[:, None] * 32 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * 32 + r[None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + r[:, None] * 32 + r[None, :], c)

@triton.jit
def dot_ieee(a_ptr, b_ptr, c_ptr):
    r = tl.arange(0, 32)
    a = tl.load(a_ptr + r[:, None] * 32 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * 32 + r[None, :])
    c = tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + r[:, None] * 32 + r[None, :], c)
"#;
    // 32x32 over 2x2 warps: two 16x8 tiles per warp; K = 32 is four tf32
    // steps of 8 or one int8 step of 32.
    let p = ptx("dot32.py", src, "dot32", "*fp32:16, *fp32:16, *fp32:16");
    assert_eq!(
        p.matches("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")
            .count(),
        8,
        "{p}"
    );
    let p = ptx("dot32.py", src, "dot32", "*i8:16, *i8:16, *i32:16");
    assert_eq!(
        p.matches("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32")
            .count(),
        2,
        "{p}"
    );
    // Full fp32 precision stays on the FMA units.
    let p = ptx("dot32.py", src, "dot_ieee", "*fp32:16, *fp32:16, *fp32:16");
    assert!(!p.contains("mma.sync"), "{p}");
    assert!(p.contains("fma.rn.f32"), "{p}");
}

/// `tl.debug_barrier` is `bar.sync` between a block's stores and the lock's
/// release; atomics carry the kernel's `sem`/`scope`; a lock release whose
/// old value nobody reads costs no barrier of its own.
#[test]
fn barriers_and_atomics_reach_the_ptx() {
    let src = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr, lock, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n    while tl.atomic_cas(lock, 0, 1) == 1:\n        pass\n    tl.store(x_ptr + offs, offs)\n    tl.debug_barrier()\n    tl.atomic_xchg(lock, 0, sem='release')\n    tl.atomic_add(x_ptr + offs, 1, mask=offs < 100, sem='relaxed', scope='cta')\n";
    let p = ptx("barrier.py", src, "k", "*i32:16, *i32, BLOCK=256");
    let store = p.find("st.global").expect("the store");
    let release = p
        .find("atom.release.gpu.global.exch.b32")
        .expect("the release");
    let between = &p[store..release];
    assert_eq!(between.matches("bar.sync").count(), 1, "{p}");
    assert!(p.contains("atom.acq_rel.gpu.global.cas.b32"), "{p}");
    assert!(p.contains("atom.relaxed.cta.global.add.u32"), "{p}");
}

#[test]
fn inline_ptx_is_emitted_once_per_element_with_operands_broadcast() {
    let src = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr, y_ptr, t_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n    x = tl.load(x_ptr + offs)\n    y = tl.inline_asm_elementwise('fma.rn.f32 $0, $1, $2, $3;', '=f,f,f,f', [x, 2.0, 0.5], dtype=tl.float32, is_pure=True, pack=1)\n    tl.store(y_ptr + offs, y)\n    tl.store(t_ptr, tl.extra.cuda.globaltimer())\n    tl.store(t_ptr + 1, tl.extra.cuda.smid().to(tl.int64))\n";
    // 128 elements over 4 warps: one element per thread, one asm each.
    let p = ptx("asm.py", src, "k", "*fp32:16, *fp32:16, *i64:16, BLOCK=128");
    assert_eq!(p.matches("fma.rn.f32").count(), 1, "{p}");
    assert!(p.contains("%globaltimer"), "{p}");
    assert!(p.contains("%smid"), "{p}");
    // 1024 elements: eight per thread.
    let p = ptx(
        "asm.py",
        src,
        "k",
        "*fp32:16, *fp32:16, *i64:16, BLOCK=1024",
    );
    assert_eq!(p.matches("fma.rn.f32").count(), 8, "{p}");
}

/// Checked GPU mode: the kernel takes the record and each parameter's
/// bounds after its own parameters, keeps its vector accesses (one check
/// per vector), records the first violation with a compare-and-swap, and
/// checks addresses loaded from memory against the listed allocations.
#[test]
fn checked_mode_guards_every_access_and_keeps_vectors() {
    let text = std::fs::read_to_string(root().join("tutorials/01-vector-add.py")).unwrap();
    let sig = "*fp32:16, *fp32:16, *fp32:16, i32:16, BLOCK_SIZE=1024";
    let plain = ptx("01-vector-add.py", &text, "add_kernel", sig);
    let checked = gpu_kernel("01-vector-add.py", &text, "add_kernel", sig, &|o| {
        o.check_bounds = true
    })
    .ptx;
    let params = |p: &str| p.matches(".param .").count();
    assert_eq!(params(&checked), params(&plain) + 1 + 2 * 4, "{checked}");
    assert!(!plain.contains("atom.global.cas"), "{plain}");
    assert!(checked.contains("atom.global.cas.b32"), "{checked}");
    assert!(checked.contains("%ctaid.x"), "{checked}");
    assert_eq!(checked.matches("ld.global.v4.").count(), 4, "{checked}");
    assert_eq!(checked.matches("st.global.v4.").count(), 2, "{checked}");
    assert!(!checked.contains("tb_in_any"), "{checked}");
    let src = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(a_ptr, out_ptr):\n    i = tl.program_id(0)\n    p = tl.load(a_ptr + i).to(tl.pointer_type(tl.float32))\n    tl.store(out_ptr + i, tl.load(p))\n";
    let p = gpu_kernel("addr.py", src, "k", "*i64:16, *fp32:16", &|o| {
        o.check_bounds = true
    })
    .ptx;
    assert!(p.contains("tb_in_any"), "{p}");
    // Integer division checks its divisor (and a plain build does not).
    let src = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(a_ptr, b_ptr):\n    offs = tl.arange(0, 128)\n    tl.store(a_ptr + offs, tl.load(a_ptr + offs) // tl.load(b_ptr + offs))\n";
    let sig = "*i32:16, *i32:16";
    let plain = ptx("div.py", src, "k", sig);
    let checked = gpu_kernel("div.py", src, "k", sig, &|o| o.check_bounds = true).ptx;
    // One record per op that can fail: two loads, the division, the store.
    assert_eq!(
        checked.matches("atom.global.cas.b32").count(),
        4,
        "{checked}"
    );
    assert!(!plain.contains("atom.global.cas"), "{plain}");
}

/// Two fp8 dots share A and one B layout; b1 is pre-transposed (K-major
/// runs), b2 is not. The layout's B tiles are staged and transposed, so b1
/// would be copied by rows too, and its rows are one byte wide: `cp.async`
/// moves only 4, 8 or 16 bytes (the driver refused the module). Such a
/// load now leaves the tile path, with its dot and every dot linked to it,
/// and the kernel compiles with no `cp.async` narrower than 4 bytes. Its
/// two register-path dots write their operand tiles to the two copies in
/// turn (one counter for every dot of the kernel): the first at offset 0,
/// the second 35840 bytes on (the tiles' size: 128 x 72 + 64 x 136 halves).
/// With a counter per dot both wrote one copy, and on the H100 the second
/// overwrote tiles that slower warps still read (`tests/gpu/two_dots.py`).
#[test]
fn fp8_b_loads_of_one_layout_that_cannot_all_be_staged_leave_the_tile_path() {
    let path = "tests/gpu/two_dots.py";
    let source = std::fs::read_to_string(root().join(path)).unwrap();
    let p = ptx(
        path,
        &source,
        "two_b_kernel",
        "*fp8e5:16, *fp8e5:16, *fp8e5:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:1, i32:16, i32:16, i32:1, i32:16, i32:1, BM=128, BN=128, BK=64, num_warps=8",
    );
    let copies: Vec<&str> = p
        .lines()
        .filter(|l| l.contains("cp.async.ca.shared") || l.contains("cp.async.cg.shared"))
        .collect();
    for line in &copies {
        let size = line
            .trim_end_matches(';')
            .rsplit(',')
            .next()
            .unwrap_or("")
            .trim();
        assert!(matches!(size, "4" | "8" | "16"), "{line}");
    }
    // The dots still run on tensor cores (from registers).
    assert!(p.contains("mma"), "{p}");
    // The loop's second dot stores into the other copy.
    assert!(p.contains("+35840]"), "{p}");
}

/// An attention loop (a dot, an online softmax along its rows, a second dot
/// taking the probabilities as A) keeps everything in the MMA layout: row
/// max and sum by quad shuffles, the probabilities handed to the second dot
/// as A fragments in registers, `k.T` stored untransposed and read by plain
/// `ldmatrix`, the loop-invariant `q` loaded into fragments once before the
/// loop. Each iteration then has two barriers (one per dot's operand tiles);
/// through shared memory it had 32 and no shuffles (bench/NOTES.md,
/// session 19).
/// The PTX lines of the loop around the first line containing `marker`:
/// from the label before it to the last branch back to that label.
fn loop_body<'a, 'b>(lines: &'b [&'a str], marker: &str) -> &'b [&'a str] {
    let first = lines
        .iter()
        .position(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("no {marker}"));
    let head = lines[..first]
        .iter()
        .rposition(|l| l.starts_with("$L__BB"))
        .expect("a loop");
    let back = format!("{};", lines[head].trim_end_matches(':'));
    let end = lines
        .iter()
        .rposition(|l| l.contains("bra") && l.trim_end().ends_with(&back))
        .expect("a back edge");
    &lines[head..end]
}

/// An attention forward kernel in the shape of tutorial 06 (causal mask,
/// exp2 online softmax, two chained dots).
const ATTENTION: &str = r#"import triton
import triton.language as tl

@triton.jit
def attn(Q, K, V, O, scale, n, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    d = tl.arange(0, D)
    q = tl.load(Q + rows[:, None] * D + d[None, :])
    m = tl.full([BM], float('-inf'), tl.float32)
    l = tl.zeros([BM], dtype=tl.float32)
    acc = tl.zeros([BM, D], dtype=tl.float32)
    for start in range(0, n, BN):
        cols = start + tl.arange(0, BN)
        k = tl.load(K + cols[:, None] * D + d[None, :])
        s = tl.dot(q, tl.trans(k)) * scale
        s = tl.where(rows[:, None] >= cols[None, :], s, -1.0e6)
        m_new = tl.maximum(m, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m - m_new)
        l = l * alpha + tl.sum(p, 1)
        v = tl.load(V + cols[:, None] * D + d[None, :])
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m = m_new
    tl.store(O + rows[:, None] * D + d[None, :], (acc / l[:, None]).to(tl.float16))
"#;

#[test]
fn attention_stages_shrink_where_more_would_cost() {
    // D = 128, 128-key tiles: 3 stages leave no room for the epilogue; 2 stages, on `wgmma`.
    let compile = |sig: &str| {
        let file = SourceFile::new("attn.py", ATTENTION);
        let k = tilebook_frontend::aot::lower_file(&file, "attn", sig)
            .unwrap_or_else(|e| panic!("{e}"));
        let launch = tilebook_frontend::kernel::parse_signature_options(sig);
        let options =
            tilebook_nvptx::GpuOptions::new("sm_90a", launch.num_warps, launch.num_stages);
        tilebook_nvptx::compile(&k, &options).unwrap_or_else(|e| panic!("{e}"))
    };
    let b = "*fp16:16, *fp16:16, *fp16:16, *fp16:16, fp32, i32, D=128";
    let at = |m, n, w, s| {
        compile(&format!(
            "{b}, BM={m}, BN={n}, num_warps={w}, num_stages={s}"
        ))
    };
    let (big, two, fits) = (at(128, 128, 8, 3), at(128, 128, 8, 2), at(128, 64, 8, 3));
    assert!(big.ptx.contains("wgmma.mma_async") && !big.ptx.contains("mma.sync"));
    assert!(big.shared_bytes <= 232_448, "{} bytes", big.shared_bytes);
    assert!(big.ptx == two.ptx && fits.ptx.contains("wgmma") && !fits.ptx.contains("mma.sync"));
    let (three, two) = (at(64, 64, 8, 3), at(64, 64, 8, 2)); // `mma.sync`: 2 stages
    assert!(three.ptx.contains("mma.sync") && three.ptx == two.ptx);
}

#[test]
fn attention_softmax_stays_in_the_mma_layout() {
    let src = ATTENTION;
    let sig = "*fp16:16, *fp16:16, *fp16:16, *fp16:16, fp32, i32, D=64, BM=128, BN=64";
    // Hopper: both dots on `wgmma`, `q` and the K/V tiles in shared memory
    // by `cp.async`, the probabilities as the second dot's register A.
    let h = ptx_for("sm_90a", "attn.py", src, "attn", sig);
    let wgmma = "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16";
    let with_desc_a = h
        .lines()
        .filter(|l| l.contains(wgmma) && l.trim_end().ends_with("p, 1, 1, 0, 0;"))
        .count();
    let with_regs_a = h
        .lines()
        .filter(|l| {
            l.contains(wgmma) && l.contains("}, {%r") && l.trim_end().ends_with("p, 1, 1, 1;")
        })
        .count();
    // Per dot, 4 k-steps x 2 slabs of 64 rows: `q @ k.T` before the loop
    // (its first key block) and in it (the next one's, `tilebook_tir::rotate`).
    assert_eq!((with_desc_a, with_regs_a), (16, 8), "{h}");
    assert!(!h.contains("mma.sync") && !h.contains("ldmatrix"), "{h}");
    assert!(h.contains("cp.async.cg.shared.global"), "{h}");
    assert!(h.matches("shfl.sync.bfly").count() >= 8, "{h}");
    // `exp2` as Triton's (flush to zero): one instruction per element.
    assert!(h.contains("ex2.approx.ftz.f32"), "{h}");
    assert!(!h.contains("ex2.approx.f32"), "{h}");
    // One `cp.async` wait and one barrier per iteration: the second dot's V
    // tile landed at the first dot's wait. Two `wgmma` waits: the previous
    // `p @ v` before the next scores' group starts (`plan_chain`), and those
    // scores at the iteration's end, with this `p @ v` left in flight.
    let lines: Vec<&str> = h.lines().collect();
    // (The register-A `p @ v` is only in the loop.)
    let body = loop_body(&lines, "p, 1, 1, 1;");
    let count = |s: &str| body.iter().filter(|l| l.contains(s)).count();
    let waits = ["bar.sync", "cp.async.wait", "wgmma.wait", "wgmma.commit"];
    assert_eq!(waits.map(count), [1, 1, 2, 2], "{}", body.join("\n"));
    // Ampere: `mma.sync` with the softmax in its layout.
    let p = ptx_for("sm_80", "attn.py", src, "attn", sig);
    // Row max and row sum: two shuffles each per row register.
    assert!(p.matches("shfl.sync.bfly").count() >= 8, "{p}");
    // k.T by plain ldmatrix like q (v by .trans): more plain than
    // transposing loads (with k.T transposed through shared memory first,
    // the other way round).
    let plain = p.matches("ldmatrix.sync.aligned.m8n8.x4.shared").count();
    let trans = p
        .matches("ldmatrix.sync.aligned.m8n8.x4.trans.shared")
        .count();
    assert!(plain > trans && trans > 0, "{plain} {trans}");
    // The loop body (from its label to the last branch back to it) has two
    // barriers.
    let lines: Vec<&str> = p.lines().collect();
    let body = loop_body(&lines, "mma.sync");
    let barriers = body.iter().filter(|l| l.contains("bar.sync")).count();
    assert!(
        barriers <= 2,
        "{barriers} barriers in the loop:\n{}",
        body.join("\n")
    );
}

/// A persistent matmul (tutorial 09's shape: the K loop inside a loop over
/// output tiles) takes the same path as the plain one: `cp.async` tiles
/// and `wgmma`. The pipelining prologue of the inner loop sits in the outer
/// loop's body, two loads per operand at `num_stages=3`; those used to be
/// taken for two tiles of one operand per iteration and sent the dot to
/// `mma.sync` from registers (78 TFLOPS on the H100 instead of ~600).
#[test]
fn persistent_matmul_keeps_cp_async_tiles_and_wgmma() {
    let source = std::fs::read_to_string(root().join("tests/surface/persistent_matmul.py"))
        .expect("surface program");
    let p = ptx(
        "persistent_matmul.py",
        &source,
        "persistent",
        "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, BM=128, BN=256, BK=64, GROUP=8, SMS=132, num_warps=8, num_stages=3",
    );
    assert!(p.contains("cp.async.cg.shared.global"), "{p}");
    assert!(p.contains("wgmma.mma_async.sync.aligned"), "{p}");
    assert!(!p.contains("mma.sync.aligned"), "{p}");
}

/// `tl.dot(a, b.T)` with `b` an `[N, K]` block (a tensor descriptor's load,
/// as tutorial 09's TMA kernels and `x @ w.T` write it) on Hopper: B is
/// copied as loaded into a K-major tile and `wgmma` reads it untransposed
/// (`imm-trans-b` = 0); before, the dot ran on `mma.sync` from registers.
#[test]
fn dot_with_a_transposed_descriptor_block_uses_wgmma_on_a_k_major_tile() {
    let source = std::fs::read_to_string(root().join("tests/surface/persistent_matmul.py"))
        .expect("surface program");
    let p = ptx(
        "persistent_matmul.py",
        &source,
        "persistent_device_desc",
        "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, BM=128, BN=128, BK=64, GROUP=8, SMS=132, num_warps=8, num_stages=3",
    );
    assert!(p.contains("cp.async.cg.shared.global"), "{p}");
    let mma = p
        .lines()
        .find(|l| l.contains("wgmma.mma_async"))
        .unwrap_or_else(|| panic!("no wgmma:\n{p}"));
    assert!(mma.trim_end().ends_with("p, 1, 1, 0, 0;"), "{mma}");
    assert!(!p.contains("mma.sync.aligned"), "{p}");
}

#[test]
fn an_induction_variable_stepping_by_the_block_keeps_vector_copies() {
    let src = r#"import triton
import triton.language as tl

@triton.jit
def linear(x_ptr, w_ptr, y_ptr, M, N, K, sxm, swn, sym, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        x = tl.load(x_ptr + rm[:, None] * sxm + ks[None, :], mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[:, None] * swn + ks[None, :], mask=(rn[:, None] < N) & (ks[None, :] < K), other=0.0)
        acc = tl.dot(x, w.T, acc)
    tl.store(y_ptr + rm[:, None] * sym + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))
"#;
    let sig = "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:16, i32:16, BM=128, BN=128, BK=64, num_warps=8, num_stages=3";
    let p = ptx("linear.py", src, "linear", sig);
    assert!(p.contains("cp.async.cg.shared.global"), "{p}");
    assert!(p.contains("p, 1, 1, 0, 0;"), "{p}");
}

/// Two dots sharing A, one B column-major (a K-major `wgmma` tile of its
/// own layout), the other row-major: A's tile is the same rows and columns
/// for both layouts, so one copy of it serves both dots (this panicked in
/// the tile planner once, then ran both dots from registers). Per
/// iteration three loads, three commit groups; `tests/gpu/two_dots.py`
/// checks the sums on the GPU. With both B column-major the second dot's
/// accumulator is not loop-carried, so its B gets no K-major tile and both
/// dots run from registers.
#[test]
fn two_dots_sharing_a_with_b_in_different_layouts_share_one_a_tile() {
    let text = std::fs::read_to_string(root().join("tests/gpu/two_dots.py")).unwrap();
    let ptx = |strides: &str| {
        ptx_for(
            "sm_90a",
            "two_dots.py",
            &text,
            "two_b_kernel",
            &format!("*fp16:16, *fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, {strides}, i32:16, i32:1, BM=128, BN=128, BK=64, num_warps=8"),
        )
    };
    let p = ptx("i32:1, i32:16, i32:16, i32:1");
    assert!(!p.contains("mma.sync"), "{p}");
    let lines: Vec<&str> = p.lines().collect();
    let body = loop_body(&lines, "wgmma.mma_async").join("\n");
    assert_eq!(body.matches("cp.async.commit_group").count(), 3, "{body}");
    // The first dot's B is K-major (read untransposed), the second's not.
    let first = body.find("1, 1, 0, 0;").expect("first dot");
    let second = body.find("1, 1, 0, 1;").expect("second dot");
    assert!(first < second, "{body}");
    let p = ptx("i32:1, i32:16, i32:1, i32:16");
    assert!(!p.contains("wgmma.mma_async"), "{p}");
    assert!(p.contains("mma.sync.aligned.m16n8k16"), "{p}");
}

/// A masked row (`cols < N`, N a multiple of 16) as layer norm loads it: one
/// compare per 16-byte vector, not per element (the axis analysis knows the
/// mask is constant over each run), and predicated loads rather than a
/// branch around each, so the fp16 row is not widened to fp32 registers at
/// the load (ptxas on the H100: 220 -> 169 registers).
#[test]
fn masked_rows_take_one_compare_per_vector_and_predicated_loads() {
    let text = std::fs::read_to_string(root().join("bench/ln_attn_kernels.py")).unwrap();
    let sig = "*fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp32:16, *fp32:16, i32:16, i32:16, fp32, BLOCK=16384, num_warps=8";
    let build = |on| {
        gpu_kernel("ln_attn_kernels.py", &text, "ln_fwd", sig, &|o| {
            o.arch = "sm_90a".into();
            o.predicated_stores = on;
        })
    };
    let (gk, pred) = (build(false), build(true));
    let p = &gk.ptx;
    // x, w and b: 64 halves per thread each, eight 16-byte vectors.
    let loads = p
        .lines()
        .filter(|l| l.trim_start().starts_with("@%p") && l.contains("ld.global.v4.b32"))
        .count();
    assert_eq!(loads, 24, "{p}");
    assert_eq!(p.matches("st.global.v4.b32").count(), 8, "{p}");
    // The eight stores of y share one address register, the runs at
    // constant offsets (`[%rdN+4096]` ...): element indices are `nuw nsw`.
    assert!(p.contains("+28672], {"), "{p}");
    // One compare per vector and use (per element, as before: 75).
    assert!(p.matches("setp.").count() <= 32, "{p}");
    // Stores branch by default (`@%pN st.global`, after a space, when asked
    // for). The runtime builds a kernel that spills again with them
    // predicated if it stores in a loop, as the backward does.
    assert_eq!(p.matches(" st.global.v4.b32").count(), 0);
    assert_eq!(pred.ptx.matches(" st.global.v4.b32").count(), 8);
    assert!(!gk.branched_stores && !pred.branched_stores);
    let sig = "*fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp32:16, *fp32:16, *fp32:16, *fp32:16, i32, i32:16, i32:16, BLOCK=16384, num_warps=8";
    let bwd = gpu_kernel("ln.py", &text, "ln_bwd_rows", sig, &|_| {});
    assert!(bwd.branched_stores);
}

/// Attention's backward (`dK, dV` of the benchmark's kernel, causal, so two
/// loops): `q` and `do` are each read by two dots, once transposed (a
/// K-major B) and once not, and `k @ q.T` and `v @ do.T` share a layout
/// with two fixed A tiles. Each loop loads `q` and `do` once per iteration
/// (two commit groups), waits once, and runs its four dots on `wgmma`; the
/// tile planner kept them all on `mma.sync` before tile streams.
#[test]
fn attention_backward_dots_share_their_tiles_on_wgmma() {
    let text = std::fs::read_to_string(root().join("bench/ln_attn_kernels.py")).unwrap();
    let p = ptx_for(
        "sm_90a",
        "ln_attn_kernels.py",
        &text,
        "attn_bwd_kv",
        "*fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp32:16, *fp32:16, fp32, i32:16, D=64, BLOCK_M=64, BLOCK_N=64, CAUSAL=1, num_warps=4, num_stages=3",
    );
    assert!(!p.contains("mma.sync"), "{p}");
    let lines: Vec<&str> = p.lines().collect();
    let body = loop_body(&lines, "wgmma.mma_async").join("\n");
    assert_eq!(body.matches("wgmma.commit_group").count(), 4, "{body}");
    assert_eq!(body.matches("cp.async.commit_group").count(), 2, "{body}");
    assert_eq!(body.matches("cp.async.wait_group").count(), 1, "{body}");
    // K-major B (`k @ q.T`, `v @ do.T`) and register-A forms (`pt @ do`,
    // `dst @ q`).
    assert!(body.contains("p, 1, 1, 0, 0;"), "{body}");
    assert!(body.contains("p, 1, 1, 1;"), "{body}");
}

/// fp32 `/` is Triton's `div.full.f32` (within 2 ulp; IEEE `div.rn` cost
/// attention's epilogue a compare and a slow-path call per element);
/// `tl.div_rn` and `tl.fdiv(..., ieee_rounding=True)` stay correctly rounded.
#[test]
fn fp32_division_is_tritons_and_div_rn_is_ieee() {
    let src = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr, y_ptr, o_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n    x = tl.load(x_ptr + offs)\n    y = tl.load(y_ptr + offs)\n    tl.store(o_ptr + offs, x / y)\n    tl.store(o_ptr + BLOCK + offs, tl.div_rn(x, y))\n    tl.store(o_ptr + 2 * BLOCK + offs, tl.fdiv(x, y, ieee_rounding=True))\n";
    let sig = "*fp32:16, *fp32:16, *fp32:16, BLOCK=128";
    let p = ptx("div.py", src, "k", sig);
    assert_eq!(p.matches("div.full.f32").count(), 1, "{p}");
    assert_eq!(p.matches("div.rn.f32").count(), 1, "{p}");
}

/// Layer norm's backward row loop (no dot) prefetches the next row where registers allow: `w`
/// once, then `x` and `dy` before and in the loop (5 x `w`'s loads); not at 16384 columns.
#[test]
fn row_loops_prefetch_the_next_row_where_registers_allow() {
    let text = std::fs::read_to_string(root().join("bench/ln_attn_kernels.py")).unwrap();
    let loads = |block: usize, warps: usize| {
        let sig = format!("*fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp32:16, *fp32:16, *fp32:16, *fp32:16, i32:16, i32:16, i32:16, BLOCK={block}, num_warps={warps}");
        let p = ptx_for("sm_90a", "ln.py", &text, "ln_bwd_rows", &sig);
        p.matches("ld.global.v").count()
    };
    assert_eq!(loads(4096, 8), 5 * 4);
    assert_eq!((loads(16384, 4), loads(16384, 16)), (3 * 32, 3 * 8));
    // Not where a store may write what the next iteration loads.
    let src = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(p, n, B: tl.constexpr):\n    o = tl.arange(0, B)\n    for i in range(0, n):\n        x = tl.load(p + i * B + o)\n        tl.store(p + (i + 1) * B + o, x + 1)\n";
    let p = ptx("carry.py", src, "k", "*fp32:16, i32, B=128");
    assert_eq!(p.matches("ld.global").count(), 1, "{p}");
}
