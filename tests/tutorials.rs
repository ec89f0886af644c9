//! The tutorial kernels on the CPU backend at sizes that are not multiples of
//! their blocks, checked against host references; compile caching.

use tilebook_tests::{golden_source, ok, root, session};

#[test]
fn tutorial_01_script_runs() {
    let mut s = session();
    let text = std::fs::read_to_string(root().join("tutorials/01-vector-add.py")).unwrap();
    let out = ok(&mut s, &text);
    assert!(out.contains("largest difference from x + y: 0.0"), "{out}");
    assert!(out.contains("128 of 1024 lanes active"), "{out}");
    assert!(out.contains("vector-add-performance:"), "{out}");
}

#[test]
fn tutorial_02_script_runs() {
    let mut s = session();
    let text = std::fs::read_to_string(root().join("tutorials/02-fused-softmax.py")).unwrap();
    let out = ok(&mut s, &text);
    for line in [
        "fused matches torch.softmax: True",
        "fused matches the unfused version: True",
        "every row sums to 1: True",
        "781 of 1024 lanes active",
        "softmax-performance (M=64):",
        "N =   512: fused is",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
}

#[test]
fn tutorial_03_script_runs() {
    let mut s = session();
    let text =
        std::fs::read_to_string(root().join("tutorials/03-matrix-multiplication.py")).unwrap();
    let out = ok(&mut s, &text);
    for line in [
        "\nmatches: True",
        "A @ B.T matches: True",
        "a_ptr 4.0 KB, b_ptr 36.0 KB",
        "a_ptr 12.0 KB, b_ptr 12.0 KB",
        "grouped / row-major = ",
        "leaky ReLU fused in the kernel matches: True",
        "fp8 inputs match fp16 matmul of the same values: True",
        "matmul-performance-fp16:",
        "matmul-performance-fp8:",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
}

/// Runs `tutorials/NAME` on the CPU backend and checks that each of `lines`
/// appears in its output.
fn tutorial_prints(name: &str, lines: &[&str]) {
    let mut s = session();
    let text = std::fs::read_to_string(root().join("tutorials").join(name)).unwrap();
    let out = ok(&mut s, &text);
    for line in lines {
        assert!(out.contains(line), "{line}\n{out}");
    }
}

#[test]
fn tutorial_04_script_runs() {
    tutorial_prints(
        "04-low-memory-dropout.py",
        &[
            "same seed, same zeros: True",
            "identical masks: True",
            "rows 0 and 2 equal: True | rows 0 and 1 equal: False",
            // The four words of one Philox evaluation (seed 42, counter 0); the first is randint.
            "offset 0: 9ceaf053 77f5493b 12bf50ad 5742b3d7   randint: 9ceaf053",
            "dropout-time:",
        ],
    );
}

#[test]
fn tutorial_05_script_runs() {
    tutorial_prints(
        "05-layer-norm.py",
        &[
            "forward matches torch: True",
            // The order itself is not checked: a launch long enough is
            // spread over the CPU's cores, and then programs take the locks
            // in whatever order the threads reach them.
            "every lock taken in row order: ",
            "tickets per buffer: 4 at most",
            "dx, dw and db match torch",
            "autograd dx matches: True",
            "autograd dw matches: True",
            "layer-norm-backward (M=64, fp16):",
        ],
    );
}

#[test]
fn tutorial_06_script_runs() {
    tutorial_prints(
        "06-fused-attention.py",
        &[
            "online result equals softmax(s) @ v: True",
            "causal=False: 128 of 128 blocks visited, 0 masked",
            "causal=True: 72 of 128 blocks visited, 16 masked",
            "causal=True: forward matches scaled_dot_product_attention",
            "causal=True: output and dq, dk, dv match scaled_dot_product_attention",
            "attention-bwd (batch 1, 1 heads, d 64):",
        ],
    );
}

/// Host code of tutorial 02; the kernel comes from `tests/ir/softmax.py`.
const SOFTMAX_HOST: &str = r#"
import torch
import triton

def softmax(x, programs):
    n_rows, n_cols = x.shape
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    y = torch.empty_like(x)
    softmax_kernel[(programs, 1, 1)](y, x, x.stride(0), y.stride(0), n_rows, n_cols, BLOCK_SIZE, 2, num_warps=8)
    return y
"#;

#[test]
fn tutorial_02_fused_softmax_matches_torch() {
    let mut s = session();
    ok(&mut s, &golden_source("softmax.py"));
    ok(&mut s, SOFTMAX_HOST);
    for (rows, cols, programs) in [(1823, 781, 7), (5, 1, 2), (33, 1000, 40), (4, 2049, 3)] {
        ok(
            &mut s,
            &format!(
                "torch.manual_seed({rows})\nx = torch.randn({rows}, {cols}, device='cuda')\ny = softmax(x, {programs})\nassert torch.allclose(y, torch.softmax(x, 1), atol=1e-6), torch.max(torch.abs(y - torch.softmax(x, 1)))"
            ),
        );
    }
}

/// Host code of tutorial 03; the kernel comes from `tests/ir/matmul.py`.
const MATMUL_HOST: &str = r#"
import torch
import triton
def matmul(a, b, activation=""):
    assert a.shape[1] == b.shape[0], "Incompatible dimensions"
    assert a.is_contiguous(), "Matrix A must be contiguous"
    M, K = a.shape
    K, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = lambda META: (triton.cdiv(M, META['BLOCK_SIZE_M']) * triton.cdiv(N, META['BLOCK_SIZE_N']), )
    matmul_kernel[grid](
        a, b, c,
        M, N, K,
        a.stride(0), a.stride(1),
        b.stride(0), b.stride(1),
        c.stride(0), c.stride(1),
        BLOCK_SIZE_M=32, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, GROUP_SIZE_M=8,
        ACTIVATION=activation
    )
    return c
"#;

#[test]
fn tutorial_03_matmul_with_leaky_relu_matches_torch() {
    let mut s = session();
    ok(&mut s, &golden_source("matmul.py"));
    ok(&mut s, MATMUL_HOST);
    for (m, n, k) in [(100, 77, 50), (257, 129, 95), (16, 16, 16)] {
        ok(
            &mut s,
            &format!(
                "torch.manual_seed(0)\na = torch.randn(({m}, {k}), device='cuda', dtype=torch.float16)\nb = torch.randn(({k}, {n}), device='cuda', dtype=torch.float16)\nref = torch.matmul(a, b)\nc = matmul(a, b)\nassert torch.allclose(c, ref, atol=1e-2, rtol=1e-2), torch.max(torch.abs(c - ref))\nc2 = matmul(a, b, 'leaky_relu')\nref2 = torch.nn.functional.leaky_relu(ref.float(), 0.01).half()\nassert torch.allclose(c2, ref2, atol=1e-2, rtol=1e-2), torch.max(torch.abs(c2 - ref2))"
            ),
        );
    }
}

#[test]
fn same_specialization_compiles_once() {
    let mut s = session();
    let text = std::fs::read_to_string(root().join("tutorials/01-vector-add.py")).unwrap();
    ok(&mut s, &text);
    assert_eq!(ok(&mut s, "add_kernel.compile_count"), "1\n");
    // Same sizes and dtypes again: served from the cache.
    ok(&mut s, "add(x, y)");
    assert_eq!(ok(&mut s, "add_kernel.compile_count"), "1\n");
    // n_elements = 98432 is divisible by 16; 98433 is not: a new specialization.
    ok(&mut s, "z = torch.rand(98433, device=DEVICE)\nadd(z, z)");
    assert_eq!(ok(&mut s, "add_kernel.compile_count"), "2\n");
    // Redefining the kernel with a new body compiles again.
    ok(
        &mut s,
        &text.replace(
            "output_ptr + offsets, x + y,",
            "output_ptr + offsets, y + x,",
        ),
    );
    assert_eq!(ok(&mut s, "add_kernel.compile_count"), "3\n");
}
