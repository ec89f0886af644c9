//! Runs the Jupyter kernel's Python test suite (`jupyter/tests/run.sh`):
//! jupyter_kernel_test conformance, a forged signature, interrupt within
//! 2 s, and a notebook under nbclient, against this build's binary on the
//! CPU backend. The script makes its own virtualenv on first use.

#[test]
fn jupyter_kernel_python_suite() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = std::process::Command::new("bash")
        .arg(root.join("jupyter/tests/run.sh"))
        .arg(env!("CARGO_BIN_EXE_tilebook"))
        .output()
        .expect("run jupyter/tests/run.sh");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    assert!(out.status.success(), "the Jupyter suite failed:\n{text}");
    assert!(text.contains("OK"), "{text}");
}
