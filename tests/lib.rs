//! Helpers shared by the cross-crate tests: run cells in a fresh session and
//! fail with the cell's full output when something goes wrong.

use tilebook_session::{CellResult, Session};

/// A session that does not print the CPU-backend note or the timing
/// footer (keeps outputs exact), with no disk cache (each test compiles
/// what it runs; `disk_cache.rs` tests the cache itself).
pub fn session() -> Session {
    let mut s = Session::new();
    s.announce = false;
    s.timing = false;
    s.disk = None;
    s
}

/// Run a cell and require success; returns its text output.
pub fn ok(s: &mut Session, cell: &str) -> String {
    let r: CellResult = s.run_cell(cell);
    assert!(r.ok, "cell failed:\n{cell}\n--- output ---\n{}", r.text());
    r.text()
}

/// The repository root (for tutorials and data files).
pub fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Python source of a lowering golden file (`tests/ir/*.py`) without its
/// header and expectations: the one copy of kernels shared by tests and bench.
pub fn golden_source(name: &str) -> String {
    let text = std::fs::read_to_string(root().join("tests/ir").join(name)).expect("golden file");
    strip_golden(&text)
}

/// Drop the `# test` header line and the `# expect:` block.
pub fn strip_golden(text: &str) -> String {
    let body = text.split("# expect:").next().unwrap_or("");
    body.lines()
        .filter(|l| !l.starts_with("# test"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// A Python helper for autograd tests: `numeric(f, x)` is the gradient of
/// the scalar function `f` at `x` by central differences (x is float64).
pub const FINITE_DIFFERENCES: &str = r#"
import torch

def numeric(f, x, h=1e-6):
    g = torch.zeros_like(x)
    flat = x.reshape(-1)
    for i in range(flat.numel()):
        keep = flat[i].item()
        flat[i] = keep + h
        up = f(x).item()
        flat[i] = keep - h
        down = f(x).item()
        flat[i] = keep
        g.reshape(-1)[i] = (up - down) / (2 * h)
    return g
"#;

/// The GPU backend's code for `kernel` of `source` at an AOT `signature`
/// (`*fp32:16, BLOCK=1024, num_warps=8, maxnreg=..`), with options `set`
/// adjusts after the signature's.
pub fn gpu_kernel(
    file: &str,
    source: &str,
    kernel: &str,
    signature: &str,
    set: &dyn Fn(&mut tilebook_nvptx::GpuOptions),
) -> tilebook_nvptx::GpuKernel {
    let src = tilebook_frontend::SourceFile::new(file, source);
    let k = tilebook_frontend::aot::lower_file(&src, kernel, signature)
        .unwrap_or_else(|e| panic!("{e}"));
    let launch = tilebook_frontend::kernel::parse_signature_options(signature);
    let mut options = tilebook_nvptx::GpuOptions::new("sm_90", launch.num_warps, launch.num_stages);
    options.maxnreg = launch.maxnreg;
    set(&mut options);
    tilebook_nvptx::compile(&k, &options).unwrap_or_else(|e| panic!("{e}"))
}
