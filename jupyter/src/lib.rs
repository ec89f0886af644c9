//! Jupyter front end over the session engine. For now: the kernelspec that
//! `tilebook jupyter install` writes; the wire protocol (on `jupyter-protocol`
//! and `jupyter-zmq-client`) comes with the Jupyter issue.
//!
//! Architecture invariant: only this crate knows the Jupyter protocol.

use std::path::PathBuf;

/// The kernelspec JSON for a given path to the `tilebook` binary.
pub fn kernelspec(binary: &str) -> serde_json::Value {
    serde_json::json!({
        "argv": [binary, "jupyter", "kernel", "--connection-file", "{connection_file}"],
        "display_name": "Tile (tilebook)",
        "language": "python",
        "interrupt_mode": "message",
        "metadata": {"debugger": false}
    })
}

/// Write the kernelspec under the user's or a prefix's `share/jupyter/kernels/tilebook`.
pub fn install(user: bool, prefix: Option<&str>) -> Result<String, String> {
    let base: PathBuf = match (prefix, user) {
        (Some(p), _) => PathBuf::from(p).join("share/jupyter/kernels"),
        (None, _) => {
            let home = std::env::var("HOME").map_err(|_| "HOME is not set".to_string())?;
            PathBuf::from(home).join(".local/share/jupyter/kernels")
        }
    };
    let dir = base.join("tilebook");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let spec = kernelspec(&exe.to_string_lossy());
    let text = serde_json::to_string_pretty(&spec).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("kernel.json"), text)
        .map_err(|e| format!("cannot write kernel.json: {e}"))?;
    Ok(dir.display().to_string())
}
