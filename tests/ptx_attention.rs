//! Golden PTX checks of attention's forward loop on `wgmma` (no GPU needed):
//! the next key block's `q @ k.T` is issued before this block's softmax
//! (`tilebook_tir::rotate`) in 4-warp blocks, and waited for at the end of
//! the iteration with the `p @ v` group left running.

use tilebook_tests::{gpu_kernel, root};

fn attention_ptx(d: usize, block: (usize, usize, usize, usize), causal: bool) -> String {
    let text = std::fs::read_to_string(root().join("bench/ln_attn_kernels.py")).unwrap();
    let (m, n, warps, stages) = block;
    let sig = format!(
        "*fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp32:16, fp32, i32:16, D={d}, BLOCK_M={m}, \
         BLOCK_N={n}, CAUSAL={}, num_warps={warps}, num_stages={stages}",
        u8::from(causal)
    );
    gpu_kernel("ln_attn_kernels.py", &text, "attn_fwd", &sig, &|_| {}).ptx
}

#[test]
fn attention_issues_the_next_scores_before_the_softmax() {
    let p = attention_ptx(64, (128, 64, 4, 2), false);
    // Each dot is 8 instructions (4 k-steps x 2 row blocks): the first key
    // block's scores before the loop, the next block's scores and `p @ v`
    // in it.
    assert_eq!(p.matches("wgmma.mma_async").count(), 24, "{p}");
    let body = &p[p.find("$L__BB0_1:").expect("loop")..];
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
fn short_diagonal_loops_and_eight_warp_blocks_stay_unrotated() {
    // Causal: the diagonal loop runs BLOCK_M / BLOCK_N = 2 times and is not
    // rotated; the loop left of it is (one extra dot before it).
    let causal = attention_ptx(64, (128, 64, 4, 2), true);
    assert_eq!(causal.matches("wgmma.mma_async").count(), 40, "{causal}");
    // 8 warps (two warpgroups, 4 instructions a dot): two dots, no third.
    let wide = attention_ptx(64, (128, 64, 8, 3), false);
    assert_eq!(wide.matches("wgmma.mma_async").count(), 8, "{wide}");
}
