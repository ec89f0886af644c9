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
