//! tilebook in an evcxr notebook: evcxr's own engine (`CommandContext`, what
//! `evcxr_jupyter` runs) runs every code cell of
//! `tutorials/rust/01-vector-add.ipynb` (`:dep tilebook = { path = ...,
//! default-features = false }`, then cells that define a kernel, launch it on
//! the CPU backend, read the result back, show a bad launch's error and a
//! session cell's perf table and plot), and this test checks what they
//! display. `TILEBOOK_EVCXR_SAVE=1` writes the outputs into the notebook.
//!
//! evcxr builds the dependency in a target directory of its own,
//! `target/evcxr-test` (kept between runs, so only the first run pays for
//! building tilebook), with this workspace's `Cargo.lock` so that it builds
//! the versions the workspace is tested with. `TILEBOOK_SKIP_EVCXR=1` skips
//! the test (and says so).

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn main() {
    // In evcxr's child process this runs the cells and never returns.
    evcxr::runtime_hook();
    if std::env::var("TILEBOOK_SKIP_EVCXR").is_ok_and(|v| v == "1") {
        println!("test evcxr_notebook ... SKIPPED (TILEBOOK_SKIP_EVCXR=1)");
        return;
    }
    let started = Instant::now();
    match run() {
        Ok(()) => println!(
            "test evcxr_notebook ... ok ({:.0} s)",
            started.elapsed().as_secs_f64()
        ),
        Err(e) => {
            eprintln!("test evcxr_notebook ... FAILED\n{e}");
            std::process::exit(1);
        }
    }
}

fn workspace() -> Result<PathBuf, String> {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .map_err(|e| format!("workspace: {e}"))
}

/// What one cell showed: its stdout and its displayed MIME bundle.
struct Shown {
    stdout: String,
    data: Vec<(String, String)>,
}

impl Shown {
    fn text(&self) -> &str {
        self.data
            .iter()
            .find(|(m, _)| m == "text/plain")
            .map_or("", |(_, t)| t.as_str())
    }
}

fn run() -> Result<(), String> {
    let root = workspace()?;
    let tmp = root.join("target/evcxr-test");
    std::fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let notebook_path = root.join("tutorials/rust/01-vector-add.ipynb");
    let mut notebook: Value =
        serde_json::from_str(&std::fs::read_to_string(&notebook_path).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    // Relative `:dep` paths are resolved from the notebook's folder, as
    // in Jupyter. Set before any other thread of this process exists.
    std::env::set_current_dir(notebook_path.parent().unwrap()).map_err(|e| e.to_string())?;
    unsafe { std::env::set_var("EVCXR_TMPDIR", &tmp) };
    let (ctx, outputs) = evcxr::EvalContext::new().map_err(|e| e.to_string())?;
    // evcxr waits, at the end of a cell, until its stdout channel is
    // drained: a thread drains it as it fills.
    let printed = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = printed.clone();
    let stdout_lines = outputs.stdout.clone();
    std::thread::spawn(move || {
        while let Ok(line) = stdout_lines.recv() {
            let mut s = sink.lock().unwrap();
            s.push_str(&line);
            s.push('\n');
        }
    });
    let mut ctx = evcxr::CommandContext::with_eval_context(ctx);
    // The interpreter and the CPU backend's compiler need no optimisation
    // for a few cells; the kernels themselves are compiled by Cranelift.
    ctx.set_opt_level("0").map_err(|e| e.to_string())?;
    std::fs::copy(root.join("Cargo.lock"), tmp.join("Cargo.lock"))
        .map_err(|e| format!("copying Cargo.lock: {e}"))?;

    let mut shown = vec![];
    let cells = notebook["cells"].as_array_mut().ok_or("no cells")?;
    for cell in cells.iter_mut().filter(|c| c["cell_type"] == "code") {
        let source = match &cell["source"] {
            Value::String(s) => s.clone(),
            Value::Array(lines) => lines.iter().filter_map(|l| l.as_str()).collect(),
            _ => String::new(),
        };
        let t = Instant::now();
        let result = ctx.execute(&source);
        // The drain thread may hold the last line it took for a moment.
        std::thread::sleep(std::time::Duration::from_millis(100));
        let stdout = std::mem::take(&mut *printed.lock().unwrap());
        let mut stderr = String::new();
        while let Ok(line) = outputs.stderr.try_recv() {
            stderr.push_str(&line);
            stderr.push('\n');
        }
        let first = source.lines().next().unwrap_or("");
        eprintln!("evcxr: `{first}` took {:.1} s", t.elapsed().as_secs_f64());
        // A `?` that returned early is reported on stderr, not as an `Err`.
        if !stderr.trim().is_empty() {
            return Err(format!(
                "cell `{first}` wrote to stderr:\n{stderr}--- stdout ---\n{stdout}"
            ));
        }
        let out = result.map_err(|e| {
            format!("cell `{first}` failed: {e}\n--- stdout ---\n{stdout}--- stderr ---\n{stderr}")
        })?;
        let mut data: Vec<(String, String)> = out.content_by_mime_type.into_iter().collect();
        data.sort();
        let mut saved = vec![];
        if !stdout.is_empty() {
            saved.push(json!({"name": "stdout", "output_type": "stream", "text": stdout}));
        }
        if !data.is_empty() {
            let bundle: serde_json::Map<String, Value> =
                data.iter().map(|(m, v)| (m.clone(), json!(v))).collect();
            saved.push(json!({"data": bundle, "execution_count": null, "metadata": {}, "output_type": "execute_result"}));
        }
        cell["outputs"] = Value::Array(saved);
        shown.push(Shown { stdout, data });
    }
    check(&shown)?;
    if std::env::var("TILEBOOK_EVCXR_SAVE").is_ok_and(|v| v == "1") {
        notebook["metadata"]["tilebook"] =
            json!({"backend": "cpu", "saved_by": "tests/evcxr (evcxr 0.22)"});
        let text = serde_json::to_string_pretty(&notebook).map_err(|e| e.to_string())? + "\n";
        std::fs::write(&notebook_path, text).map_err(|e| e.to_string())?;
        eprintln!("evcxr: outputs saved into {}", notebook_path.display());
    }
    Ok(())
}

/// What the notebook's cells must show (by position among the code cells).
fn check(shown: &[Shown]) -> Result<(), String> {
    let expect = |i: usize, ok: bool, what: &str| {
        if ok {
            Ok(())
        } else {
            Err(format!(
                "code cell {i} does not show {what}: stdout {:?}, data {:?}",
                shown[i].stdout, shown[i].data
            ))
        }
    };
    if shown.len() != 8 {
        return Err(format!(
            "{} code cells ran, the notebook has 8",
            shown.len()
        ));
    }
    expect(
        1,
        shown[1].text().contains("CPU backend"),
        "the CPU backend",
    )?;
    expect(2, shown[2].text() == "\"add_kernel\"", "the kernel's name")?;
    expect(
        3,
        shown[3]
            .text()
            .starts_with("tensor([1.0000, 1.3556, 1.6502"),
        "the launched kernel's output tensor",
    )?;
    expect(
        4,
        shown[4].stdout == "98432 elements, max |out - (x + y)| = 0\n",
        "an exact sum",
    )?;
    expect(
        5,
        shown[5].stdout.contains("kernel @add_kernel("),
        "the tile IR",
    )?;
    expect(
        6,
        shown[6].stdout.contains("TypeError") && shown[6].stdout.contains("add_kernel"),
        "the bad launch's TypeError",
    )?;
    let html = shown[7].data.iter().find(|(m, _)| m == "text/html");
    expect(
        7,
        html.is_some_and(|(_, h)| h.contains("<svg") && h.contains("<table")),
        "the perf table and plot as HTML",
    )?;
    Ok(())
}
