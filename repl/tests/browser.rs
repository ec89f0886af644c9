//! A real browser on the kernel (`jupyter/tests/browser.sh`): JupyterLab and
//! headless Chromium run every tutorial notebook with Run All on the CPU
//! backend and check the page (tables, SVG plots, no error outputs, no raw
//! escape codes, the kernel idle after), then stop `while True: pass` with
//! the toolbar's interrupt button and run the next cell. Screenshots land in
//! `target/browser-test/`.

mod common;

#[test]
fn tutorials_run_all_in_jupyterlab_under_chromium() {
    let started = std::time::Instant::now();
    let (ok, text) = common::run_script_on_binary("browser.sh");
    eprintln!(
        "browser test: {:.1} s in all (setting up its virtualenv included when it had none)",
        started.elapsed().as_secs_f64()
    );
    assert!(ok, "the browser test failed:\n{text}");
    assert!(text.contains("browser test passed"), "{text}");
    assert!(text.contains("ok interrupt"), "{text}");
}
