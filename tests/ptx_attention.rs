//! Golden PTX checks of `wgmma` kernels and attention's kernels (no GPU
//! needed): attention's forward issues the next key block's `q @ k.T` before
//! this block's softmax (`tilebook_tir::rotate`) in 4-warp blocks, and waits
//! for it at the end of the iteration with the `p @ v` group left running;
//! byte offsets stay 64-bit shifts; row sums stay in registers and shuffles.
//! Also the layer-norm backward's rows kernel (the same benchmark file):
//! its carried sums are updated before the row's store.

use tilebook_tests::{golden_source, gpu_kernel, root};

fn ptx_for(arch: &str, file: &str, source: &str, kernel: &str, signature: &str) -> String {
    gpu_kernel(file, source, kernel, signature, &|o| {
        o.arch = arch.into();
    })
    .ptx
}

fn attention_ptx(d: usize, block: (usize, usize, usize, usize), causal: bool) -> String {
    attention_ptx_scale(d, block, causal, "fp32")
}

/// `scale`: the specialization of `sm_scale` (`fp32`, or `fp32:pos` as every
/// launch with a scale in `[2^-60, 2^60]` has it).
fn attention_ptx_scale(
    d: usize,
    block: (usize, usize, usize, usize),
    causal: bool,
    scale: &str,
) -> String {
    let text = std::fs::read_to_string(root().join("bench/ln_attn_kernels.py")).unwrap();
    let (m, n, warps, stages) = block;
    let sig = format!(
        "*fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp32:16, {scale}, i32:16, D={d}, BLOCK_M={m}, \
         BLOCK_N={n}, CAUSAL={}, KV_DESC=0, num_warps={warps}, num_stages={stages}",
        u8::from(causal)
    );
    gpu_kernel("ln_attn_kernels.py", &text, "attn_fwd", &sig, &|_| {}).ptx
}

/// The first loop's PTX from its header (`$L__BB0_1`) to its exit, then the
/// blocks LLVM placed before the header (entered through a branch to it):
/// the loop's blocks in the order one iteration runs them.
fn loop_from_header(p: &str) -> String {
    let header = p.find("$L__BB0_1:").expect("loop");
    let entry = "bra.uni \t$L__BB0_1;\n";
    let start = p[..header].rfind(entry).map_or(header, |e| e + entry.len());
    let exit_branch = p[header..]
        .find("bra \t$L__BB0_")
        .expect("the loop's exit test")
        + header;
    let label = &p[exit_branch + 5..];
    let label = &label[..label.find(';').expect("label")];
    let exit = p.find(&format!("{label}:")).expect("the exit block");
    format!("{}{}", &p[header..exit], &p[start..header])
}

/// A row maximum of scaled scores is taken on the unscaled dot and scaled
/// per row, behind a branch on `0 < scale < inf` (`codegen/scaled.rs`); the
/// fast path's softmax subtracts it in one `fma` a score and has no `mul`
/// a score besides `acc * alpha`.
#[test]
fn row_maxima_of_scaled_scores_skip_the_scaling() {
    // One warpgroup holding 64 scores a thread keeps the scaled maximum
    // (slower otherwise): one `fma` a row only (`l_i`).
    let one = attention_ptx(64, (128, 64, 4, 2), false);
    assert!(one.matches("fma.rn.f32").count() < 64, "{one}");
    let p = attention_ptx(64, (256, 64, 8, 2), false);
    let body = loop_from_header(&p);
    // Blocks of the loop: the header, then the fast or the slow maximum.
    let blocks: Vec<&str> = body.split("$L__BB0_").collect();
    let count = |b: &str, what: &str| b.matches(what).count();
    let (fast, slow): (Vec<&str>, Vec<&str>) = blocks
        .iter()
        .filter(|b| count(b, "max.f32") >= 64)
        .partition(|b| count(b, "mul.f32") < 64);
    assert_eq!((fast.len(), slow.len()), (1, 1), "{body}");
    assert_eq!(count(slow[0], "mul.f32"), 64, "{body}");
    // The softmax: 64 scores and 64 accumulators a thread.
    let rest: usize = blocks
        .iter()
        .filter(|b| count(b, "max.f32") < 64)
        .map(|b| count(b, "mul.f32"))
        .sum();
    assert!(rest + count(fast[0], "mul.f32") <= 64 + 8, "{body}");
    assert!(count(&body, "fma.rn.f32") >= 64, "{body}");
}

/// With `sm_scale` specialized `fp32:pos` the scale is proven positive and
/// finite: the row maxima take the fast path with no branch in the loop,
/// and one-warpgroup blocks of 128 scores a thread take it too; 64 a thread
/// keep the scaled maximum.
#[test]
fn a_proven_scale_needs_no_branch() {
    let branches = |p: &str| loop_from_header(p).matches("bra").count();
    let checked = attention_ptx_scale(64, (256, 64, 8, 2), false, "fp32");
    let proven = attention_ptx_scale(64, (256, 64, 8, 2), false, "fp32:pos");
    assert!(branches(&proven) < branches(&checked), "{proven}");
    // 64 scores and 64 accumulators a thread: `acc * alpha` and a few more.
    let body = loop_from_header(&proven);
    assert!(body.matches("mul.f32").count() <= 64 + 8, "{body}");
    assert!(body.matches("fma.rn.f32").count() >= 64, "{body}");
    let wide = attention_ptx_scale(64, (128, 128, 4, 3), false, "fp32:pos");
    assert!(wide.matches("fma.rn.f32").count() >= 128, "{wide}");
    let unproven = attention_ptx_scale(64, (128, 128, 4, 3), false, "fp32");
    assert!(unproven.matches("fma.rn.f32").count() < 64, "{unproven}");
    let narrow = attention_ptx_scale(64, (128, 64, 4, 3), false, "fp32:pos");
    assert!(narrow.matches("fma.rn.f32").count() < 64, "{narrow}");
}

/// Two scaled blocks added together: neither is left without registers
/// for the other's `fma` (the first rule planned both and the compile
/// failed on the unbuilt operand).
#[test]
fn a_sum_of_two_scaled_blocks_compiles() {
    let src = r#"import triton
import triton.language as tl
@triton.jit
def k(q_ptr, k_ptr, o_ptr, c, M: tl.constexpr):
    r = tl.arange(0, M)
    q = tl.load(q_ptr + r[:, None] * M + r[None, :])
    kk = tl.load(k_ptr + r[:, None] * M + r[None, :])
    s1 = tl.dot(q, tl.trans(kk)) * c
    s2 = tl.dot(kk, tl.trans(q)) * c
    m = tl.max(s1, 1) + tl.max(s2, 1)
    tl.store(o_ptr + r[:, None] * M + r[None, :], s1 + s2 - m[:, None])
"#;
    let p = ptx_for(
        "sm_90a",
        "two.py",
        src,
        "k",
        "*fp16:16, *fp16:16, *fp32:16, fp32, M=64, num_warps=4",
    );
    assert_eq!(p.matches("wgmma.mma_async").count(), 8, "{p}");
}

#[test]
fn attention_issues_the_next_scores_before_the_softmax() {
    let p = attention_ptx(64, (128, 64, 4, 2), false);
    // Each dot is 8 instructions (4 k-steps x 2 row blocks): the first key
    // block's scores before the loop, the next block's scores and `p @ v`
    // in it.
    assert_eq!(p.matches("wgmma.mma_async").count(), 24, "{p}");
    let body = &loop_from_header(&p);
    let first = body.find("wgmma.mma_async").expect("a dot in the loop");
    let softmax = body.find("ex2.approx").expect("the softmax");
    let waited = body
        .find("wgmma.wait_group.sync.aligned 1")
        .expect("the scores' wait");
    // The scores' group is committed and left running through the softmax;
    // the iteration ends waiting for it with one group (`p @ v`) in flight.
    assert!(first < softmax && softmax < waited, "{p}");
    assert!(!body[first..softmax].contains("wgmma.wait_group"), "{p}");
    assert_eq!(
        p.matches("wgmma.wait_group.sync.aligned 1").count(),
        1,
        "{p}"
    );
}

#[test]
fn short_diagonal_loops_eight_warp_and_64_row_blocks_stay_unrotated() {
    // Causal: the diagonal loop runs BLOCK_M / BLOCK_N = 2 times and is not
    // rotated; the loop left of it is (one extra dot before it).
    let causal = attention_ptx(64, (128, 64, 4, 2), true);
    assert_eq!(causal.matches("wgmma.mma_async").count(), 40, "{causal}");
    // 8 warps (two warpgroups, 4 instructions a dot): two dots, no third.
    let wide = attention_ptx(64, (128, 64, 8, 3), false);
    assert_eq!(wide.matches("wgmma.mma_async").count(), 8, "{wide}");
    // 64-row blocks over 4 warps (one m64 row block, 4 instructions a dot):
    // two dots, no third (rotated they lost 4-9 % on the H200).
    for d in [64, 128] {
        let short = attention_ptx(d, (64, 64, 4, 3), false);
        let two_dots = d / 16 + 64 / 16;
        assert_eq!(
            short.matches("wgmma.mma_async").count(),
            two_dots,
            "{short}"
        );
    }
}

/// `mul.wide` lines with a power-of-two multiplier, as LLVM writes an `i32`
/// index's byte offset.
fn wide_shifts(p: &str) -> usize {
    p.lines()
        .filter(|l| {
            let l = l.trim();
            l.starts_with("mul.wide.") && {
                let m = l.trim_end_matches(';').rsplit(", ").next().unwrap_or("");
                m.parse::<u64>().is_ok_and(|m| m > 1 && m.is_power_of_two())
            }
        })
        .count()
}

#[test]
fn wgmma_kernels_keep_byte_offsets_as_64_bit_shifts() {
    // ptxas redoes a `mul.wide` offset inside the K loop as an `IMAD.WIDE`
    // with the pointer it is added to, which stalled the copy phase
    // (`compiler/nvptx/src/peephole.rs`); `cvt` + `shl` keeps it a 64-bit
    // register. The B tile's eight runs a thread copies each add one.
    let sig = "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, ACTIVATION='', num_warps=8, num_stages=3";
    let src = golden_source("matmul.py");
    let p = ptx_for("sm_90", "matmul.py", &src, "matmul_kernel", sig);
    assert!(p.contains("wgmma.mma_async"), "{p}");
    assert_eq!(wide_shifts(&p), 0, "{p}");
    assert!(p.matches("shl.b64").count() >= 8, "{p}");
    // Without `wgmma` (the `mma.sync` path of sm_80) LLVM's form stays.
    let old = ptx_for("sm_80", "matmul.py", &src, "matmul_kernel", sig);
    assert!(!old.contains("wgmma"), "{old}");
    assert!(wide_shifts(&old) > 0, "{old}");
}

#[test]
fn row_sums_of_a_blocked_tile_stay_in_registers_and_shuffles() {
    // Attention's backward `delta`: a [64, 64] product summed over its rows.
    // Each row is 8 runs of 8 across 8 lanes: a 3-step butterfly, then one
    // word per row through shared memory (the general path wrote all 4096
    // products there and read 64 per row).
    let text = std::fs::read_to_string(root().join("bench/ln_attn_kernels.py")).unwrap();
    let sig = "*fp16:16, *fp16:16, *fp32:16, D=64, BLOCK_M=64, num_warps=4";
    let p = gpu_kernel("ln_attn_kernels.py", &text, "attn_bwd_delta", sig, &|_| {}).ptx;
    assert_eq!(p.matches("shfl.sync.bfly").count(), 4 * 3, "{p}");
    let stores = p
        .lines()
        .filter(|l| l.trim_start().starts_with("st.shared"))
        .count();
    assert_eq!(stores, 4, "{p}");
    let loads = p
        .lines()
        .filter(|l| l.trim_start().starts_with("ld.shared"))
        .count();
    assert_eq!(loads, 1, "{p}");
}

#[test]
fn attention_shared_memory_leaves_room_for_more_blocks() {
    // q's tile is read by every iteration of the key loops (two when causal),
    // so the rings stay reserved until the last of them ends; the epilogue's
    // layout change then reuses them. D = 128, 64 x 64 blocks, 3 stages:
    // q 16 KB + 3 x (16 + 16) KB = 112 KB, two blocks per SM (the epilogue's
    // 17 KB after the rings made it one; H200: 248 -> 337 TFLOPS at N = 1024).
    let text = std::fs::read_to_string(root().join("bench/ln_attn_kernels.py")).unwrap();
    for causal in [0, 1] {
        let sig = format!(
            "*fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp32:16, fp32, i32:16, D=128, BLOCK_M=64, \
             BLOCK_N=64, CAUSAL={causal}, KV_DESC=0, num_warps=4, num_stages=3"
        );
        let k = gpu_kernel("ln_attn_kernels.py", &text, "attn_fwd", &sig, &|_| {});
        assert_eq!(k.shared_bytes, 112 * 1024, "causal={causal}");
    }
    // D = 64, 64 x 64 blocks, 3 stages: q 8 KB + 3 x (8 + 8) KB = 56 KB, four
    // 4-warp blocks per SM; `p @ v` kept in flight would take a fourth V
    // stage (64 KB, three blocks), so it is waited for in its iteration
    // (H200: 331 -> 365 TFLOPS at N = 1024, Triton 351).
    let sig = "*fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp32:16, fp32, i32:16, D=64, BLOCK_M=64, \
               BLOCK_N=64, CAUSAL=0, KV_DESC=0, num_warps=4, num_stages=3";
    let k = gpu_kernel("ln_attn_kernels.py", &text, "attn_fwd", sig, &|_| {});
    assert_eq!(k.shared_bytes, 56 * 1024);
    // The backward's `dk`/`dv` kernel holds k and v as fixed A tiles the same
    // way: 96 KB at D = 128, 64 x 64 (was 113 KB: one block per SM; 256
    // bytes more until `lse` and `Delta` loaded in place, session 55).
    let sig = "*fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp32:16, *fp32:16, \
               fp32, i32:16, D=128, BLOCK_M=64, BLOCK_N=64, CAUSAL=1, num_warps=4, num_stages=2";
    let k = gpu_kernel("ln_attn_kernels.py", &text, "attn_bwd_kv", sig, &|_| {});
    assert_eq!(k.shared_bytes, 96 * 1024);
}

#[test]
fn backward_dots_run_while_the_warps_compute() {
    // `dk`/`dv` over query blocks: `dv += p.T @ do` is left running while
    // `v @ do.T` is issued (`wgmma::plan_lazy`), both waited for before
    // `ds`; `dv`'s group is waited for at the yield, behind two later ones.
    let text = std::fs::read_to_string(root().join("bench/ln_attn_kernels.py")).unwrap();
    let sig = "*fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp32:16, *fp32:16, \
               fp32, i32:16, D=64, BLOCK_M=64, BLOCK_N=64, CAUSAL=0, num_warps=4, num_stages=2";
    let p = gpu_kernel("ln_attn_kernels.py", &text, "attn_bwd_kv", sig, &|_| {}).ptx;
    // The loader may build it again with every group waited for at once.
    assert!(p.starts_with(tilebook_nvptx::LAZY_WAITS_MARK), "{p}");
    let body = &p[p.find("$L__BB0_1:").expect("loop")..];
    let body = &body[..body.find("cp.async.wait_all").expect("the loop's end")];
    let softmax = body.find("ex2.approx").expect("the softmax");
    let after = &body[softmax..];
    let first_wait = after.find("wgmma.wait_group").expect("a wait");
    assert_eq!(
        after[..first_wait].matches("wgmma.commit_group").count(),
        2,
        "{p}"
    );
    assert_eq!(
        body.matches("wgmma.wait_group.sync.aligned 2;").count(),
        1,
        "{p}"
    );
    assert_eq!(body.matches("wgmma.commit_group").count(), 4, "{p}");
    // At D = 128 `dv` is 64 accumulators a thread: waited for at once (the
    // kernel is at 255 registers, and a running group made it spill).
    let sig = sig.replace("D=64", "D=128");
    let p = gpu_kernel("ln_attn_kernels.py", &text, "attn_bwd_kv", &sig, &|_| {}).ptx;
    assert!(!p.starts_with(tilebook_nvptx::LAZY_WAITS_MARK), "{p}");
    assert!(!p.contains("wgmma.wait_group.sync.aligned 2;"), "{p}");
}

#[test]
fn the_dq_loop_issues_both_score_dots_before_its_softmax() {
    // `dq` over key blocks: `do @ v.T` needs no other dot, so it is issued
    // right after `q @ k.T` (`tilebook_tir::schedule`) and runs while the
    // warps compute `exp2` of the scores: two groups committed, then a wait
    // that leaves one running, before the first `ex2`.
    let text = std::fs::read_to_string(root().join("bench/ln_attn_kernels.py")).unwrap();
    for (d, m, warps) in [(64, 64, 4), (64, 128, 8), (128, 128, 8)] {
        let sig = format!(
            "*fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp32:16, *fp32:16, fp32, i32:16, \
             D={d}, BLOCK_M={m}, BLOCK_N=64, CAUSAL=1, num_warps={warps}, num_stages=3"
        );
        let p = gpu_kernel("ln_attn_kernels.py", &text, "attn_bwd_q", &sig, &|_| {}).ptx;
        assert!(p.starts_with(tilebook_nvptx::LAZY_WAITS_MARK), "{p}");
        let body = first_loop(&p);
        let softmax = body.find("ex2.approx").expect("the softmax");
        let before = &body[..softmax];
        assert_eq!(before.matches("wgmma.commit_group").count(), 2, "{p}");
        let wait = before.rfind("wgmma.wait_group").expect("a wait");
        assert!(
            before[wait..].starts_with("wgmma.wait_group.sync.aligned 1;"),
            "{p}"
        );
        assert_eq!(body.matches("wgmma.commit_group").count(), 3, "{p}");
    }
}

#[test]
fn the_loader_reads_the_marks_the_compiler_writes() {
    // The runtime does not depend on the compiler, so each names the text.
    assert_eq!(
        tilebook_cuda::LAZY_WAITS_MARK,
        tilebook_nvptx::LAZY_WAITS_MARK
    );
    assert_eq!(
        tilebook_cuda::TWO_BLOCKS_MARK,
        tilebook_nvptx::TWO_BLOCKS_MARK
    );
}

/// The body of the kernel's first loop (its header label to its back edge).
fn first_loop(p: &str) -> &str {
    let start = p.find("$L__BB0_1:").expect("a loop");
    let end = start
        + p[start..]
            .find("bra.uni \t$L__BB0_1;")
            .expect("its back edge");
    &p[start..end]
}

#[test]
fn descriptor_keys_and_values_wait_on_their_barriers_alone() {
    // The benchmark's forward with K and V through host descriptors (its
    // "kv" configs): both are bulk tensor copies. `p @ v` waits on `v`'s
    // barrier only (the copy engine's writes are visible to every thread
    // that waited, and `wgmma` reads them in the same proxy): no proxy
    // fence (H200, D = 128, 128 x 128, 8 warps: 522 -> 578 TFLOPS at N =
    // 4096, bench/NOTES.md session 52). No block barrier in the loop at all:
    // each warp releases the two stages about to be refilled (one arrival
    // each on their release barriers) and thread 0 waits for both releases
    // before refilling them (session 53).
    let text = std::fs::read_to_string(root().join("bench/ln_attn_kernels.py")).unwrap();
    let desc = "tensordesc<fp16[128, 128], shape:16:16>";
    let sig = format!(
        "*fp16:16, {desc}, {desc}, *fp16:16, *fp32:16, fp32:pos, i32:16, D=128, BLOCK_M=128, \
         BLOCK_N=128, CAUSAL=0, KV_DESC=1, num_warps=8, num_stages=2"
    );
    let k = gpu_kernel("ln_attn_kernels.py", &text, "attn_fwd", &sig, &|_| {});
    let p = &k.ptx;
    assert_eq!(tilebook_nvptx::tensor_maps_in(p).len(), 2, "{p}");
    let body = first_loop(p);
    assert_eq!(body.matches("cp.async.bulk.tensor.2d").count(), 4, "{body}");
    // Two tiles' barriers and two stages' release barriers.
    assert_eq!(
        body.matches("mbarrier.try_wait.parity").count(),
        4,
        "{body}"
    );
    assert_eq!(body.matches("bar.sync").count(), 0, "{body}");
    assert_eq!(
        body.matches("@p mbarrier.arrive.shared::cta.b64").count(),
        2,
        "{body}"
    );
    // Each refill follows its stage's release, all before the first product.
    let first_copy = body.find("cp.async.bulk.tensor").unwrap();
    let releases: Vec<usize> = body
        .match_indices("tb_free_wait:")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(releases.len(), 2, "{body}");
    assert!(releases.iter().all(|&r| r < first_copy), "{body}");
    assert!(first_copy < body.find("wgmma.mma_async").unwrap(), "{body}");
    let v_wait = body.rfind("tb_tma_wait:").unwrap();
    let pv = &body[v_wait..];
    let pv = &pv[..pv.find("wgmma.commit_group").expect("p @ v")];
    assert!(
        !pv.contains("bar.sync") && !pv.contains("fence.proxy.async"),
        "{pv}"
    );
    // The barriers (one per stage of each stream, and its release barrier)
    // take 8 bytes each after everything else, not a 1024-byte block of
    // their own before the rings.
    let barriers = k.shared_bytes % 1024;
    assert!(
        barriers > 0 && barriers.is_multiple_of(8) && barriers <= 128,
        "{}",
        k.shared_bytes
    );
}

#[test]
fn a_tile_loaded_before_a_descriptor_loop_needs_no_barrier_of_its_own() {
    // A `dq`-shaped loop: `q` and `do` loaded once before it (`cp.async`),
    // `k` and `v` through descriptors (bulk copies), three products. Only
    // the first product issues refills; `do @ v.T` and `ds @ k` wait for
    // nothing but `v`'s barrier. With 8 warps the loop has no block barrier
    // (stage releases); with 4 the one of the first product's wait, after
    // which the tiles loaded before the loop are known landed (H200: 8-12 %
    // off the backward's `dq` kernel through descriptors, bench/NOTES.md
    // session 54).
    let src = r#"
import triton
import triton.language as tl

@triton.jit
def dq(Q, K, V, DO, DQ, N, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, D)
    q = tl.load(Q + rows[:, None] * D + cols[None, :])
    do = tl.load(DO + rows[:, None] * D + cols[None, :])
    acc = tl.zeros([BM, D], dtype=tl.float32)
    for start in range(0, N, BN):
        k = K.load([start, 0])
        v = V.load([start, 0])
        s = tl.dot(q, tl.trans(k))
        ds = s * tl.dot(do, tl.trans(v))
        acc = tl.dot(ds.to(tl.float16), k, acc)
    tl.store(DQ + rows[:, None] * D + cols[None, :], acc.to(tl.float16))
"#;
    let desc = "tensordesc<fp16[64, 64], shape:16:16>";
    for (warps, barriers) in [(8, 0), (4, 1)] {
        let sig = format!(
            "*fp16:16, {desc}, {desc}, *fp16:16, *fp16:16, i32:16, D=64, BM=128, BN=64, \
             num_warps={warps}, num_stages=2"
        );
        let k = gpu_kernel("dq.py", src, "dq", &sig, &|_| {});
        let body = first_loop(&k.ptx);
        assert_eq!(body.matches("cp.async.bulk.tensor.2d").count(), 2, "{body}");
        assert_eq!(body.matches("wgmma.commit_group").count(), 3, "{body}");
        assert_eq!(
            body.matches("bar.sync").count(),
            barriers,
            "{warps} warps: {body}"
        );
        let second = body.find("wgmma.commit_group").unwrap();
        assert!(!body[second..].contains("cp.async.wait_group"), "{body}");
    }
}

/// The backward's `lse` and `Delta` of a query block, broadcast along the
/// columns of the `dk`/`dv` loop's scores, are loaded in those columns
/// (`codegen/mma_cols.rs`), one `ld.global.v2` a pair, with no shared-memory
/// move and its three block barriers per vector: prefetched a loop ahead in
/// an 8-warp block, loaded at the top of the body in a 4-warp one
/// (`PipelineOptions::column_hoist_above`), ahead of the first dot.
#[test]
fn column_vectors_of_the_backward_load_in_place() {
    let text = std::fs::read_to_string(root().join("bench/ln_attn_kernels.py")).unwrap();
    let sig = |warps: usize, n: usize| {
        format!(
            "*fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp32:16, *fp32:16, \
             fp32, i32:16, D=128, BLOCK_M=64, BLOCK_N={n}, CAUSAL=0, num_warps={warps}, \
             num_stages=2"
        )
    };
    for (warps, n, prefetched) in [(8, 128, true), (4, 64, false)] {
        let p = gpu_kernel(
            "ln_attn_kernels.py",
            &text,
            "attn_bwd_kv",
            &sig(warps, n),
            &|_| {},
        )
        .ptx;
        let body = first_loop(&p);
        // 2 vectors x 8 pairs of columns, one vector load a pair.
        assert_eq!(body.matches("ld.global.v2").count(), 16, "{p}");
        assert!(!body.contains("ld.shared.f32"), "{p}");
        assert_eq!(body.matches("bar.sync").count(), 1, "{p}");
        // A prefetch is predicated on the next iteration; a hoisted load
        // is this iteration's, issued before the first `wgmma`.
        let predicated = body.matches("ld.global.v2.b32").count();
        assert_eq!(predicated, if prefetched { 16 } else { 0 }, "{p}");
        if !prefetched {
            let last_load = body.rfind("ld.global.v2").expect("a load");
            assert!(
                last_load < body.find("wgmma.mma_async").expect("a dot"),
                "{p}"
            );
        }
    }
}

/// `ln_bwd_rows` at 16384 columns, 8 warps, in its predicated-store build
/// (the one the runtime keeps, since the first spills): the updates of the
/// carried `dw` (`fma` into its own register) come before the `dx` store,
/// so `dy` and `xh` do not hold registers through the row sums and the
/// store (`tilebook_tir::accumulate`; they came after the store before, and
/// the kernel spilled 142 words a thread against 98).
#[test]
fn layer_norm_backward_updates_its_sums_before_the_row_store() {
    let text = std::fs::read_to_string(root().join("bench/ln_attn_kernels.py")).unwrap();
    let sig = "*fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp32:16, *fp32:16, *fp32:16, *fp32:16, \
               i32:16, i32:16, i32:16, BLOCK=16384, num_warps=8";
    let p = gpu_kernel("ln_attn_kernels.py", &text, "ln_bwd_rows", sig, &|o| {
        o.predicated_stores = true;
    })
    .ptx;
    let lines: Vec<&str> = p.lines().collect();
    let accumulations: Vec<usize> = (0..lines.len())
        .filter(|&i| {
            let f: Vec<&str> = lines[i]
                .split([' ', '\t', ',', ';'])
                .filter(|t| !t.is_empty())
                .collect();
            f.first() == Some(&"fma.rn.f32") && f.len() == 5 && f[1] == f[4]
        })
        .collect();
    assert_eq!(accumulations.len(), 64, "{p}");
    let stores: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains("st.global.v2.b32"))
        .collect();
    assert_eq!(stores.len(), 16, "{p}");
    assert!(accumulations.last() < stores.first(), "{p}");
}
