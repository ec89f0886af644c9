//! The stdlib kernels behind torch operations on `'cuda'` tensors
//! (`runtime/host/src/device_ops.rs`), forced onto the CPU backend and
//! checked against the host implementations by `tests/gpu/torch_ops.py`, the
//! same script the GPU run uses.

use tilebook_tests::{ok, root, session};

#[test]
fn torch_ops_as_kernels_agree_with_the_host() {
    let mut s = session();
    s.ops_as_kernels = true;
    s.timing = true;
    let text = std::fs::read_to_string(root().join("tests/gpu/torch_ops.py")).unwrap();
    let out = ok(&mut s, &text);
    assert!(out.contains("agree with the host"), "{out}");
    // The footer names the kernels that ran: the operations went to them.
    for k in [
        "tb_binary",
        "tb_unary",
        "tb_row_sum",
        "tb_row_max",
        "tb_softmax_row",
        "tb_softmax_long",
        "tb_random",
        "tb_cast",
        "tb_cast_fp8",
        "tb_copy",
        "tb_masked_fill",
        "tb_triangle",
        "tb_mismatches",
        "tb_layer_norm_fwd",
        "tb_layer_norm_bwd",
        "tb_col_sums",
        "tb_attention_fwd",
    ] {
        assert!(out.contains(&format!("[{k}]")), "{k} did not run:\n{out}");
    }
}

#[test]
fn without_the_switch_the_cpu_backend_computes_on_the_host() {
    let mut s = session();
    s.timing = true;
    let out = ok(
        &mut s,
        "import torch\nx = torch.ones(4, device='cuda')\nprint((x + x).sum().item())",
    );
    assert!(out.contains("8.0") && !out.contains("tb_binary"), "{out}");
}
