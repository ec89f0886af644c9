//! The REPL driven through a pseudo-terminal, as a person types: keys go in
//! (Enter is `\r`, Tab `\t`, Up `ESC [ A`), the screen comes out.
//! `NO_COLOR` keeps the echoed input free of colour codes, so the
//! expectations match text; the editor is otherwise the one people use.

use rexpect::session::{spawn_command, PtySession};
use std::process::Command;
use std::time::{Duration, Instant};

/// What the editor writes when it starts reading a cell (it turns bracketed
/// paste on): the REPL is ready for keys. Keys typed before that, while a
/// cell runs, may be dropped by the terminal switching modes, as for a person.
const READY: &str = "\x1b[?2004h";

fn history_file(test: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("tilebook-hist-{}-{test}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

fn start(history: &std::path::Path) -> PtySession {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tilebook"));
    cmd.env("NO_COLOR", "1")
        .env("TERM", "xterm")
        .env("TILEBOOK_HISTORY", history)
        .env("TILEBOOK_CACHE", "off")
        .args(["--device", "cpu"]);
    let mut p = spawn_command(cmd, Some(30_000)).expect("spawn tilebook");
    p.exp_string(READY).expect("first prompt");
    p
}

/// Type `keys` and wait for `expect` in what the terminal shows.
fn typed(p: &mut PtySession, keys: &str, expect: &str) {
    p.send(keys).unwrap();
    p.flush().unwrap();
    if let Err(e) = p.exp_string(expect) {
        panic!("after typing {keys:?}, expected {expect:?}: {e}");
    }
}

/// Type a cell ending in Enter, wait for `expect`, then for the next prompt.
fn cell(p: &mut PtySession, keys: &str, expect: &str) {
    typed(p, keys, expect);
    if let Err(e) = p.exp_string(READY) {
        panic!("no prompt after {keys:?}: {e}");
    }
}

fn quit(mut p: PtySession) {
    p.send_control('d').unwrap();
    p.exp_eof().unwrap();
    let status = format!("{:?}", p.process.wait().unwrap());
    assert!(
        status.starts_with("Exited(") && status.ends_with(", 0)"),
        "{status}"
    );
}

#[test]
fn a_kernel_typed_with_auto_indent_then_launched() {
    let h = history_file("kernel");
    let mut p = start(&h);
    cell(&mut p, "import torch, triton\r", "");
    cell(&mut p, "import triton.language as tl\r", "");
    // Lines are typed without indentation: Enter indents after `:`.
    p.send("@triton.jit\r").unwrap();
    p.send("def k(x_ptr, n, B: tl.constexpr):\r").unwrap();
    p.send("o = tl.arange(0, B)\r").unwrap();
    p.send("tl.store(x_ptr + o, o.to(tl.float32) * 2, mask=o < n)\r")
        .unwrap();
    // The blank line ends the block.
    cell(&mut p, "\r", "");
    cell(&mut p, "x = torch.zeros(6)\r", "");
    cell(&mut p, "k[(1,)](x, 6, B=8)\r", "");
    cell(
        &mut p,
        "print(x.tolist())\r",
        "[0.0, 2.0, 4.0, 6.0, 8.0, 10.0]",
    );
    // The kernel's body was indented by the editor, as the source shows.
    cell(&mut p, "k??\r", "\n    o = tl.arange(0, B)");
    quit(p);
    let _ = std::fs::remove_file(&h);
}

#[test]
fn tab_completes_tl_members_and_names() {
    let h = history_file("tab");
    let mut p = start(&h);
    cell(&mut p, "import triton.language as tl\r", "");
    typed(&mut p, "tl.ara\t", "tl.arange");
    cell(&mut p, "\r", "<built-in function tl.arange>");
    cell(&mut p, "my_long_name = 5\r", "");
    typed(&mut p, "my_lo\t", "my_long_name");
    cell(&mut p, " * 2\r", "\n10");
    cell(&mut p, "import torch\r", "");
    cell(&mut p, "x = torch.zeros(3)\r", "");
    typed(&mut p, "x.sha\t", "x.shape");
    cell(&mut p, "\r", "(3,)");
    quit(p);
    let _ = std::fs::remove_file(&h);
}

#[test]
fn ctrl_c_interrupts_a_running_cell_and_the_session_goes_on() {
    let h = history_file("ctrlc");
    let mut p = start(&h);
    cell(&mut p, "kept = 7\r", "");
    typed(&mut p, "while True: pass\r", "\x1b[?2004l");
    std::thread::sleep(Duration::from_millis(300));
    p.send_control('c').unwrap();
    p.exp_string("KeyboardInterrupt").unwrap();
    p.exp_string(READY).unwrap();
    cell(&mut p, "1 + 1\r", "\n2");
    cell(&mut p, "kept\r", "\n7");
    // Ctrl-C at the prompt clears the line.
    typed(&mut p, "this is not run", "not run");
    p.send_control('c').unwrap();
    p.exp_string(READY).unwrap();
    cell(&mut p, "3 + 3\r", "\n6");
    quit(p);
    let _ = std::fs::remove_file(&h);
}

#[test]
fn a_syntax_error_then_a_good_cell_and_time() {
    let h = history_file("syntax");
    let mut p = start(&h);
    cell(&mut p, "1 +* 2\r", "SyntaxError");
    cell(&mut p, "3 * 3\r", "\n9");
    typed(&mut p, "%time sum(range(1000))\r", "Wall time: ");
    cell(&mut p, "", "\n499500");
    quit(p);
    let _ = std::fs::remove_file(&h);
}

#[test]
fn pasted_multi_line_code_runs_as_one_cell() {
    let h = history_file("paste");
    let mut p = start(&h);
    // A terminal wraps pasted text in bracketed-paste markers.
    typed(
        &mut p,
        "\x1b[200~def sq(v):\n    return v * v\n\nvals = [sq(i) for i in range(4)]\x1b[201~",
        "range(4)]",
    );
    cell(&mut p, "\r", "");
    cell(&mut p, "vals\r", "[0, 1, 4, 9]");
    quit(p);
    let _ = std::fs::remove_file(&h);
}

#[test]
fn history_is_recalled_after_a_restart() {
    let h = history_file("restart");
    let mut p = start(&h);
    cell(&mut p, "remembered = 40 + 2\r", "");
    quit(p);
    let mut p = start(&h);
    // Up recalls the previous session's cell; Enter runs it.
    typed(&mut p, "\x1b[A", "remembered = 40 + 2");
    cell(&mut p, "\r", "");
    cell(&mut p, "print(remembered)\r", "\n42");
    quit(p);
    let _ = std::fs::remove_file(&h);
}

#[test]
fn the_first_prompt_appears_quickly() {
    let h = history_file("startup");
    let t = Instant::now();
    let p = start(&h);
    let ms = t.elapsed().as_secs_f64() * 1e3;
    eprintln!("first prompt after {ms:.1} ms");
    // Generous for a loaded CI machine; bench/repl_startup.py measures it.
    assert!(ms < 2000.0, "first prompt after {ms:.1} ms");
    quit(p);
    let _ = std::fs::remove_file(&h);
}

/// The GPU worker process, started from the binary as a session starts it:
/// the shared region reaches it, it answers (how many devices its driver
/// shows: 0 on a machine without one), refuses an unknown command with an
/// error, and leaves when the session lets it go. (On the H100 the GPU
/// suite's `fault_recovery.py` checks the rest: a fault costs a worker, not
/// the session.)
#[test]
#[cfg(feature = "gpu")]
fn the_gpu_worker_process_answers_and_leaves() {
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_tilebook"));
    let t = Instant::now();
    let (devices, pid) = tilebook_cuda::probe_worker(exe).expect("worker round trip");
    let gpus = tilebook_cuda::probe_names().len();
    assert!(gpus > 0 || devices == 0, "{devices} devices without a GPU");
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the worker {pid} is still there"
    );
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
}
