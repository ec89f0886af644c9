//! Shared by the tests that drive a shell script of `jupyter/tests/` against
//! this build's binary.

/// Runs `bash jupyter/tests/<script> <tilebook binary>`; whether it
/// succeeded, and its stdout and stderr together (also echoed to stderr so
/// `--nocapture` shows them).
pub fn run_script_on_binary(script: &str) -> (bool, String) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = std::process::Command::new("bash")
        .arg(root.join("jupyter/tests").join(script))
        .arg(env!("CARGO_BIN_EXE_tilebook"))
        .output()
        .unwrap_or_else(|e| panic!("run jupyter/tests/{script}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    (out.status.success(), text)
}
