//! SASS, the GPU's own instructions, for a PTX module: assembled by the CUDA
//! toolkit's `ptxas` and disassembled by `cuobjdump -sass` (or `nvdisasm`).
//! These are optional external tools, looked up in `TILEBOOK_CUDA_BIN` and
//! then on `PATH` (Triton's wheel ships them in
//! `triton/backends/nvidia/bin`); without them this stage says so and every
//! other stage still works. `ptxas -v` also reports registers, shared memory
//! and spills, which are kept with the text.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The SASS of one module, and what `ptxas -v` said about its resources.
#[derive(Clone, Debug)]
pub struct Sass {
    pub text: String,
    /// `ptxas -v` lines: registers, spill stores/loads, shared memory.
    pub resources: String,
}

/// Where a CUDA toolkit program is, if anywhere.
fn tool(name: &str) -> Option<PathBuf> {
    let dirs = std::env::var_os("TILEBOOK_CUDA_BIN")
        .into_iter()
        .chain(std::env::var_os("PATH"));
    dirs.flat_map(|d| std::env::split_paths(&d).collect::<Vec<_>>())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The `.target` of a PTX module (`sm_90a`), which `ptxas` must be given.
fn target(ptx: &str) -> Option<&str> {
    ptx.lines()
        .find_map(|l| l.trim().strip_prefix(".target "))
        .map(|t| t.split(',').next().unwrap_or(t).trim())
}

fn run(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
}

/// Assemble `ptx` and disassemble the result.
pub fn sass(ptx: &str) -> Result<Sass, String> {
    let ptxas = tool("ptxas")
        .ok_or("SASS needs the CUDA toolkit's ptxas (set TILEBOOK_CUDA_BIN or put it on PATH)")?;
    let arch = target(ptx).ok_or("the PTX has no .target line")?;
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("tilebook-sass-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let result = (|| {
        let src = dir.join("k.ptx");
        let cubin = dir.join("k.cubin");
        std::fs::write(&src, ptx).map_err(|e| format!("cannot write {}: {e}", src.display()))?;
        let resources = run(
            Command::new(&ptxas)
                .arg(format!("-arch={arch}"))
                .arg("-v")
                .arg("-o")
                .arg(&cubin)
                .arg(&src),
            "ptxas",
        )?;
        let text = disassemble(&cubin)?;
        Ok(Sass {
            text,
            resources: resources.trim().to_string(),
        })
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn disassemble(cubin: &Path) -> Result<String, String> {
    if let Some(c) = tool("cuobjdump") {
        return run(Command::new(c).arg("-sass").arg(cubin), "cuobjdump");
    }
    if let Some(d) = tool("nvdisasm") {
        return run(Command::new(d).arg(cubin), "nvdisasm");
    }
    Err("SASS needs cuobjdump or nvdisasm from the CUDA toolkit (set TILEBOOK_CUDA_BIN or put it on PATH)".into())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_target_line_names_the_architecture() {
        let ptx = "//\n.version 8.5\n.target sm_90a\n.address_size 64\n";
        assert_eq!(super::target(ptx), Some("sm_90a"));
    }
}
