//! Runs the Jupyter kernel's Python test suite (`jupyter/tests/run.sh`):
//! jupyter_kernel_test conformance, a forged signature, interrupt within
//! 2 s, and a notebook under nbclient, against this build's binary on the
//! CPU backend. The script makes its own virtualenv on first use.

mod common;

#[test]
fn jupyter_kernel_python_suite() {
    let (ok, text) = common::run_script_on_binary("run.sh");
    assert!(ok, "the Jupyter suite failed:\n{text}");
    assert!(text.contains("OK"), "{text}");
}
