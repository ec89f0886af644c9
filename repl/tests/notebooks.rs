//! Notebooks from the command line (CPU backend): the tutorials' notebooks
//! match their scripts and run; `tilebook notebook check` passes on a
//! notebook whose saved outputs come from the CPU backend and fails, naming
//! the cell, when a saved value is changed; `--inplace` writes outputs back.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn tilebook(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tilebook"))
        .args(args)
        .env("TILEBOOK_CACHE", "off")
        .current_dir(root())
        .output()
        .expect("run tilebook");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn tutorial_notebooks_match_their_scripts() {
    let out = Command::new("python3")
        .arg(root().join("tutorials/build_notebooks.py"))
        .arg("--check")
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The tutorial notebooks' outputs were saved on the H100; on the CPU
/// backend `notebook check` runs them and compares what does not depend on
/// the device (results, shapes, errors), skipping benchmark tables, plots,
/// timings and the autotuner's report, and says how many it skipped.
#[test]
fn every_tutorial_notebook_checks_on_the_cpu_backend() {
    let mut n = 0;
    for e in std::fs::read_dir(root().join("tutorials"))
        .unwrap()
        .flatten()
    {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "ipynb") {
            let file = p.to_string_lossy().to_string();
            let (ok, text) = tilebook(&["notebook", "check", &file, "--device", "cpu"]);
            assert!(ok, "{file}:\n{text}");
            assert!(
                text.contains(
                    "skipped as device-dependent (saved on cuda, run now on cpu), 0 differ"
                ),
                "{file}:\n{text}"
            );
            n += 1;
        }
    }
    assert!(n >= 6, "{n} notebooks");
}

#[test]
fn notebook_check_passes_on_saved_cpu_outputs_and_fails_on_a_change() {
    let (ok, text) = tilebook(&[
        "notebook",
        "check",
        "tests/notebooks/small-cpu.ipynb",
        "--device",
        "cpu",
    ]);
    assert!(ok, "{text}");
    // Saved on the CPU backend and checked there: everything is compared.
    assert!(
        text.contains("4 code cells, 4 outputs compared, 0 differ") && !text.contains("skipped"),
        "{text}"
    );

    // A copy with one saved value changed: the check names the cell and fails.
    let nb = std::fs::read_to_string(root().join("tests/notebooks/small-cpu.ipynb")).unwrap();
    let changed = nb.replacen("9.642857142857142", "9.75", 1);
    assert_ne!(nb, changed);
    let dir = std::env::temp_dir().join(format!("tilebook-nbcheck-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("changed.ipynb");
    std::fs::write(&copy, changed).unwrap();
    let (ok, text) = tilebook(&[
        "notebook",
        "check",
        &copy.to_string_lossy(),
        "--device",
        "cpu",
    ]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("cell 3:")
            && text.contains("saved: ")
            && text.contains("9.75")
            && text.contains("1 of 4 code cells differ"),
        "{text}"
    );

    // --inplace writes fresh outputs back; then the check passes again.
    let (ok, text) = tilebook(&[
        "run",
        &copy.to_string_lossy(),
        "--inplace",
        "--device",
        "cpu",
    ]);
    assert!(ok, "{text}");
    let (ok, text) = tilebook(&[
        "notebook",
        "check",
        &copy.to_string_lossy(),
        "--device",
        "cpu",
    ]);
    assert!(ok, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
