//! Jupyter front end over the session engine: the kernelspec that
//! `tilebook jupyter install` writes, and the kernel it starts
//! (`tilebook jupyter kernel --connection-file F`) on `jupyter-protocol` and
//! `jupyter-zmq-client`: `kernel.rs` the channels and replies, `worker.rs`
//! the thread that owns the session and runs cells.
//!
//! Architecture invariant: only this crate knows the Jupyter protocol.

mod kernel;
mod wire;
mod worker;

pub use kernel::run as run_kernel;

use std::path::PathBuf;

/// The kernelspec JSON for a given path to the `tilebook` binary.
pub fn kernelspec(binary: &str) -> serde_json::Value {
    serde_json::json!({
        "argv": [binary, "jupyter", "kernel", "--connection-file", "{connection_file}"],
        "display_name": "Tile (tilebook)",
        "language": "python",
        "interrupt_mode": "message",
        "env": {},
        "metadata": {"debugger": false}
    })
}

/// The kernel's logo (JupyterLab shows `logo-svg.svg` in its launcher).
const LOGO_SVG: &str = r##"<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64">
<rect width="64" height="64" rx="10" fill="#0b3d91"/>
<g fill="#ffd54f"><rect x="8" y="8" width="14" height="14"/><rect x="25" y="8" width="14" height="14"/><rect x="42" y="8" width="14" height="14"/>
<rect x="8" y="25" width="14" height="14"/><rect x="25" y="25" width="14" height="14" fill="#ff7043"/><rect x="42" y="25" width="14" height="14"/>
<rect x="8" y="42" width="14" height="14"/><rect x="25" y="42" width="14" height="14"/><rect x="42" y="42" width="14" height="14"/></g>
</svg>
"##;

/// The Python environment's prefix for `--sys-prefix`.
fn sys_prefix() -> Result<PathBuf, String> {
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(p) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            return Ok(PathBuf::from(p));
        }
    }
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.prefix)"])
        .output()
        .map_err(|e| format!("--sys-prefix: cannot run python3: {e}"))?;
    let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if p.is_empty() {
        return Err("--sys-prefix: python3 did not report sys.prefix".into());
    }
    Ok(PathBuf::from(p))
}

/// Write the kernelspec (and logo) under the user's Jupyter data directory,
/// the Python environment's prefix, or a given prefix.
pub fn install(_user: bool, sys: bool, prefix: Option<&str>) -> Result<String, String> {
    let base: PathBuf = match (prefix, sys) {
        (Some(p), _) => PathBuf::from(p).join("share/jupyter/kernels"),
        (None, true) => sys_prefix()?.join("share/jupyter/kernels"),
        (None, false) => {
            let data = std::env::var_os("JUPYTER_DATA_DIR")
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share/jupyter"))
                })
                .ok_or("HOME is not set")?;
            data.join("kernels")
        }
    };
    let dir = base.join("tilebook");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let spec = kernelspec(&exe.to_string_lossy());
    let text = serde_json::to_string_pretty(&spec).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("kernel.json"), text)
        .map_err(|e| format!("cannot write kernel.json: {e}"))?;
    std::fs::write(dir.join("logo-svg.svg"), LOGO_SVG)
        .map_err(|e| format!("cannot write the logo: {e}"))?;
    Ok(dir.display().to_string())
}
