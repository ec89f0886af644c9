//! Golden PTX checks of Hopper's bulk tensor copies (TMA), without a GPU:
//! host tensor descriptors read and written by the copy engine, and the
//! blocks tutorial 03's kernel reads through plain pointers
//! (`tilebook_tir::pointer_tma`).

use tilebook_tests::{golden_source, gpu_kernel, root};

fn ptx(file: &str, source: &str, kernel: &str, signature: &str) -> String {
    gpu_kernel(file, source, kernel, signature, &|o| {
        o.arch = "sm_90".into();
    })
    .ptx
}

/// Host `TensorDescriptor`s on Hopper: loads feeding `wgmma` are bulk tensor
/// copies (TMA) per 128-byte column block of each swizzled tile, one thread
/// issuing, an mbarrier per stage, one `grid_constant` tensor map per use;
/// ragged shapes alike (the engine fills past the edges). The store is a
/// bulk tensor store from shared memory. Before: `cp.async` by every thread.
#[test]
fn host_descriptors_are_read_and_written_by_bulk_tensor_copies() {
    let source = std::fs::read_to_string(root().join("tests/surface/persistent_matmul.py"))
        .expect("surface program");
    let sig = |div: &str| {
        format!(
            "tensordesc<fp16[128, 64], shape{div}>, tensordesc<fp16[128, 64], shape{div}>, \
             tensordesc<fp16[128, 128], shape{div}>, i32:16, i32:16, i32:16, \
             BM=128, BN=128, BK=64, GROUP=8, SMS=132, num_warps=8, num_stages=3"
        )
    };
    for div in [":16:16", "::"] {
        let p = ptx(
            "persistent_matmul.py",
            &source,
            "persistent_host_desc",
            &sig(div),
        );
        let bulk = "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes";
        // A and B (128 x 64 halves each, one 128-byte column block), each
        // copied twice before the K loop (three stages) and once in it.
        assert_eq!(p.matches(bulk).count(), 6, "{p}");
        assert!(!p.contains("cp.async.cg.shared.global"), "{p}");
        for m in ["try_wait.parity", "arrive.expect_tx", "init"] {
            assert!(p.contains(&format!("mbarrier.{m}.shared::cta.b64")), "{p}");
        }
        // The two loaded descriptors' maps and the stored one's.
        assert_eq!(p.matches(".param .align 64 .b8").count(), 3, "{p}");
        assert!(p.contains("cvta.param.u64"), "{p}");
        assert!(p.contains("wgmma.mma_async.sync.aligned"), "{p}");
        assert!(!p.contains("mma.sync.aligned"), "{p}");
        let maps = tilebook_nvptx::tensor_maps_in(&p);
        // Loads and the product's store (written from the MMA registers into
        // a swizzled tile): 128 rows by one 64-column block, 128-byte swizzle.
        assert_eq!(maps.len(), 3, "{p}");
        for m in maps {
            assert_eq!((m.rows, m.cols, m.swizzle), (128, 64, 128), "{p}");
        }
        let store = "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group";
        assert_eq!(p.matches(store).count(), 2, "{p}");
        assert!(p.contains("cp.async.bulk.wait_group.read 0"), "{p}");
    }
}

/// A K loop written `for k0 in range(0, K, BK)` (the induction variable
/// itself steps by BK, as in `x @ w.T` layers and tutorial 06) is as
/// divisible as its start and step, so its loads keep 16-byte `cp.async`
/// copies and the dot `wgmma`; the analysis knew nothing of induction
/// variables and these loads stayed scalar.
/// Tutorial 03's kernel as written (pointers, rows and columns wrapped by
/// `% M` and `% N`, the K edge masked) on Hopper with two warp groups: its
/// dot operands are blocks of `a` and `b`, so each arrives by one bulk
/// tensor copy (TMA) issued by one thread, into the swizzled tile `wgmma`
/// reads, completing on an mbarrier. The launch builds the tensor maps from
/// the kernel's parameters: `a` is M (param 3) by K (5) with row stride
/// `stride_am` (6), `b` K by N (4) with row stride `stride_bk` (8).
#[test]
fn tutorial_matmul_operands_arrive_by_bulk_tensor_copies() {
    let p = ptx(
        "matmul.py",
        &golden_source("matmul.py"),
        "matmul_kernel",
        "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, ACTIVATION='', num_warps=8, num_stages=4",
    );
    let marks: Vec<&str> = p
        .lines()
        .filter(|l| l.starts_with(tilebook_nvptx::TENSOR_MAP_MARK))
        .collect();
    assert_eq!(
        marks,
        [
            "// tilebook tensor map: param 0 box 128 64 swizzle 128 nan 0 shape p3 p5 p6",
            "// tilebook tensor map: param 1 box 64 64 swizzle 128 nan 0 shape p5 p4 p8",
        ],
        "{p}"
    );
    // Three stages filled ahead in the prologue and one per iteration, A
    // and B each: eight fills of 16 KB, A's 128x64 tile as one 128-byte
    // wide box, B's 64x128 as two.
    let bulk = "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes";
    assert_eq!(
        p.matches("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r")
            .count(),
        8,
        "{p}"
    );
    assert_eq!(p.matches("], 16384;").count(), 8, "{p}");
    assert_eq!(p.matches(bulk).count(), 12, "{p}");
    assert!(
        p.contains("mbarrier.try_wait.parity.shared::cta.b64"),
        "{p}"
    );
    // The copy engine writes the tiles in the async proxy that `wgmma`
    // reads, so the loop waits on their barriers with no proxy fence; the
    // one fence left orders the threads' earlier scratch writes before the
    // first bulk copies.
    assert_eq!(p.matches("fence.proxy.async.shared::cta").count(), 1, "{p}");
    let fence = p.find("fence.proxy.async.shared::cta").unwrap_or(0);
    assert!(fence < p.find(bulk).unwrap_or(0), "{p}");
    // No thread copies operands itself any more.
    assert!(!p.contains("cp.async.cg"), "{p}");
    assert!(!p.contains("cp.async.ca"), "{p}");
    assert_eq!(
        p.matches("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16")
            .count(),
        4,
        "{p}"
    );
    // One warp group keeps cp.async (measured faster there, compile.rs).
    let one_group = ptx(
        "matmul.py",
        &golden_source("matmul.py"),
        "matmul_kernel",
        "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, ACTIVATION='', num_warps=4, num_stages=4",
    );
    assert!(!one_group.contains("cp.async.bulk.tensor"), "{one_group}");
    assert!(
        one_group.contains("cp.async.cg.shared.global"),
        "{one_group}"
    );
}

/// Pointer loads whose wrapped rows would be seen keep their per-thread
/// copies (`tilebook_tir::pointer_tma`): in `tests/gpu/pointer_tma.py`,
/// `wrapped_rows_stored` stores the rows past M (its store has no row
/// mask) and `wrapped_rows_summed` sums over them; where the copy engine
/// would read zeros the pointers read rows from the start of `a`. Both
/// kernels' B blocks are masked on both dims (exactly the copy engine's
/// zero fill), so B alone is a bulk copy.
#[test]
fn wrapped_rows_that_reach_the_output_are_not_bulk_copies() {
    let text = std::fs::read_to_string(root().join("tests/gpu/pointer_tma.py")).unwrap();
    for (kernel, sig) in [
        ("wrapped_rows_stored", "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:16, i32:16, BM=128, BN=64, BK=64, num_warps=8"),
        ("wrapped_rows_summed", "*fp16:16, *fp16:16, *fp32:16, i32:16, i32:16, i32:16, i32:16, i32:16, BM=128, BN=64, BK=64, num_warps=8"),
    ] {
        let p = ptx("pointer_tma.py", &text, kernel, sig);
        let marks: Vec<&str> = p
            .lines()
            .filter(|l| l.starts_with(tilebook_nvptx::TENSOR_MAP_MARK))
            .collect();
        assert_eq!(marks.len(), 1, "{kernel}: {p}");
        assert!(marks[0].contains("param 1 box 64 64"), "{kernel}: {p}");
        assert!(p.contains("cp.async.cg.shared.global"), "{kernel}: {p}");
    }
}

/// b passed transposed (tutorial 03's fp8 run, and `a @ w.T` in fp16): its
/// `[K, N]` blocks are transposed blocks of an N-major tensor (`map_t`), so
/// one bulk copy of an `N x K` box fills the K-major tile `wgmma` reads,
/// the map over N (param 4) rows by K (5) columns, rows `stride_bn` (9)
/// apart. No operand byte moves by `cp.async`.
#[test]
fn transposed_b_blocks_arrive_by_bulk_tensor_copies_into_k_major_tiles() {
    for (ty, out, bk, wgmma, a_box, b_box) in [
        (
            "fp8e5",
            "fp16",
            128,
            "m64n256k32.f32.e5m2.e5m2",
            "box 128 128 swizzle 128",
            "box 256 128 swizzle 128",
        ),
        (
            "fp8e4nv",
            "fp16",
            64,
            "m64n256k32.f32.e4m3.e4m3",
            "box 128 64 swizzle 64",
            "box 256 64 swizzle 64",
        ),
        (
            "fp16",
            "fp16",
            64,
            "m64n256k16.f32.f16.f16",
            "box 128 64 swizzle 128",
            "box 256 64 swizzle 128",
        ),
    ] {
        let sig = format!("*{ty}:16, *{ty}:16, *{out}:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:1, i32:16, i32:16, i32:1, BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K={bk}, GROUP_SIZE_M=8, ACTIVATION='', num_warps=8, num_stages=3");
        let p = ptx(
            "matmul.py",
            &golden_source("matmul.py"),
            "matmul_kernel",
            &sig,
        );
        let marks: Vec<&str> = p
            .lines()
            .filter(|l| l.starts_with(tilebook_nvptx::TENSOR_MAP_MARK))
            .collect();
        let mark = |param: u32, b: &str, shape: &str| {
            format!(
                "{} param {param} {b} nan 0 shape {shape}",
                tilebook_nvptx::TENSOR_MAP_MARK
            )
        };
        assert_eq!(
            marks,
            [mark(0, a_box, "p3 p5 p6"), mark(1, b_box, "p4 p5 p9")],
            "{ty}: {p}"
        );
        assert!(
            p.contains(&format!("wgmma.mma_async.sync.aligned.{wgmma}")),
            "{ty}: {p}"
        );
        assert!(!p.contains("cp.async.cg"), "{ty}: {p}");
        assert!(p.contains("cp.async.bulk.tensor.2d"), "{ty}: {p}");
        assert_eq!(
            p.matches("fence.proxy.async.shared::cta").count(),
            1,
            "{ty}: {p}"
        );
        // Every copy is a prefetch under the pipeliner's guard (prologue:
        // the loop runs; body: the iteration it is for runs): where the
        // guard is false thread 0 only completes the barrier's phase, so no
        // copy past the last iteration runs and waits at the loop's end
        // (which put the fp8 tile in a mode 10 % slower on the H200).
        let copies: Vec<&str> = p
            .lines()
            .filter(|l| l.contains("cp.async.bulk.tensor.2d"))
            .collect();
        assert_eq!(copies.len(), 6, "{ty}: {p}");
        for l in copies {
            assert!(
                l.contains("and.pred p, p, q;")
                    && l.contains("@n mbarrier.arrive.shared::cta.b64 _,")
                    && l.contains("@p mbarrier.arrive.expect_tx"),
                "{ty}: {l}"
            );
        }
    }
}

/// The fp8 tile's result (128 x 128 fp16) has the element count of its
/// fp8 operands, which arrive by bulk copy and so keep no register runs:
/// the store takes runs of 8 halves, each warp store whole 32-byte sectors
/// (not a thread's 32 bytes as two 16-byte halves, half of each of 32
/// sectors). The trip through shared memory addresses each register at an
/// immediate offset from one per-thread address. Before: epilogue 3.7 k
/// cycles a program against Triton's 1.7 k (bench/NOTES.md, session 64).
#[test]
fn bulk_copied_fp8_tile_stores_whole_sectors_from_one_address() {
    let sig = "*fp8e5:16, *fp8e5:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:1, i32:16, i32:16, i32:1, BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=128, GROUP_SIZE_M=8, ACTIVATION='', num_warps=8, num_stages=3";
    let p = ptx(
        "matmul.py",
        &golden_source("matmul.py"),
        "matmul_kernel",
        sig,
    );
    assert!(p.contains("cp.async.bulk.tensor.2d"), "{p}");
    let stores: Vec<&str> = p
        .lines()
        .filter(|l| l.contains("st.global.v4.b32"))
        .collect();
    assert_eq!(stores.len(), 8, "{p}");
    assert!(stores.iter().all(|l| !l.contains("+16]")), "{stores:?}");
    // (paired halves are stored as `b32` or as `u32`, as LLVM types them)
    for (op, n) in [("st.shared.[bu]32", 32), ("ld.shared.v4.b32", 8)] {
        let ls: Vec<&str> = p
            .lines()
            .filter(|l| {
                ["b", "u"]
                    .iter()
                    .any(|t| l.contains(&op.replace("[bu]", t)))
            })
            .collect();
        assert_eq!(ls.len(), n, "{op}: {p}");
        let immediate = ls.iter().filter(|l| l.contains("+")).count();
        assert_eq!(immediate, n - 1, "{op}: {ls:?}");
    }
    // Each stored pair of halves is converted by one instruction (session
    // 65; before, a `cvt.rn.f16.f32` per half and a move to pack them).
    assert_eq!(p.matches("cvt.rn.f16x2.f32").count(), 32, "{p}");
    assert!(!p.contains("cvt.rn.f16.f32"), "{p}");
}

/// With `pointer_bulk_stores`, tutorial 03's result block (stored through
/// plain pointers, masked by `rows < M & cols < N`) is a bulk tensor store:
/// each thread writes its MMA registers into the swizzled tile (pairs of
/// halves converted by one `cvt.rn.f16x2.f32`), and one thread asks the
/// copy engine for four 64-column boxes, which it clips at the tensor's
/// edges as the mask did. The launch builds the third map from `c` (param
/// 2), M (3), N (4) and `stride_cm` (10). The kernel ends after the store,
/// so no barrier follows the wait for the engine's read.
#[test]
fn tutorial_matmul_result_as_a_bulk_tensor_store() {
    let sig = "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, ACTIVATION='', num_warps=8, num_stages=3";
    let p = gpu_kernel(
        "matmul.py",
        &golden_source("matmul.py"),
        "matmul_kernel",
        sig,
        &|o| {
            o.arch = "sm_90".into();
            o.pointer_bulk_stores = true;
        },
    )
    .ptx;
    let marks: Vec<&str> = p
        .lines()
        .filter(|l| l.starts_with(tilebook_nvptx::TENSOR_MAP_MARK))
        .collect();
    assert_eq!(
        marks.last().copied(),
        Some("// tilebook tensor map: param 2 box 128 64 swizzle 128 nan 0 shape p3 p4 p10"),
        "{p}"
    );
    let store = "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group";
    assert_eq!(p.matches(store).count(), 4, "{p}");
    assert!(!p.contains("st.global"), "{p}");
    assert_eq!(p.matches("cvt.rn.f16x2.f32").count(), 64, "{p}");
    assert!(!p.contains("cvt.rn.f16.f32"), "{p}");
    let tail: Vec<&str> = p.lines().rev().take(6).collect();
    assert!(!tail.iter().any(|l| l.contains("bar.sync")), "{tail:?}");
    // Without the option the block is stored by every thread.
    let plain = ptx(
        "matmul.py",
        &golden_source("matmul.py"),
        "matmul_kernel",
        sig,
    );
    assert!(
        !plain.contains(store) && plain.contains("st.global"),
        "{plain}"
    );
}
