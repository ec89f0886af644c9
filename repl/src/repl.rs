//! The REPL, a thin front end over the session engine.
//!
//! In a terminal: a rustyline editor (`editor.rs`) with multi-line cells,
//! auto-indent, colours, completion, history hints and history kept across
//! sessions; Ctrl-C while a cell runs interrupts it (the namespace stays),
//! Ctrl-C at the prompt clears the line, Ctrl-D exits with status 0. The
//! device is opened when the first cell runs, so the prompt appears at once.
//!
//! Long operations show an `indicatif` progress bar on stderr.
//!
//! Without a terminal it reads cells from stdin (a blank line or the end of
//! input ends a cell) and prints results without prompts or colour, so it
//! can be scripted.

use crate::editor::{EnterHandler, TileHelper};
use rustyline::history::DefaultHistory;
use rustyline::{Editor, EventHandler, KeyCode, KeyEvent, Modifiers};
use std::cell::RefCell;
use std::io::{BufRead, IsTerminal};
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use tilebook_frontend::parse::{is_complete, Completeness};
use tilebook_session::{Output, Session};

pub fn run(device: &str) -> ExitCode {
    let mut session = match Session::lazy(device) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("tilebook: {e}");
            return ExitCode::from(2);
        }
    };
    let bars = crate::progress::Bars::default();
    session.on_progress = bars.sink();
    if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
        interactive(session, device, &bars)
    } else {
        piped(session)
    }
}

/// The device the banner names, without starting CUDA.
fn banner_device(device: &str) -> String {
    let gpu = if device == "cpu" {
        None
    } else {
        tilebook_cuda::probe_name()
    };
    match gpu {
        Some(name) => format!("kernels run on {name} (CUDA)"),
        None if device == "cuda" => "no GPU found; kernels run on the CPU backend".into(),
        None => "kernels run on the CPU backend (no GPU in use)".into(),
    }
}

fn interactive(mut session: Session, device: &str, bars: &crate::progress::Bars) -> ExitCode {
    let color = std::env::var_os("NO_COLOR").is_none()
        && std::env::var("TERM").map_or(true, |t| t != "dumb");
    session.color = color;
    let interrupt = session.interrupt.clone();
    println!(
        "tilebook {} — {}. help(x), %lsmagic; Ctrl-D exits.",
        env!("CARGO_PKG_VERSION"),
        banner_device(device)
    );
    let session = Rc::new(RefCell::new(session));
    let config = rustyline::Config::builder()
        .auto_add_history(false)
        .completion_type(rustyline::CompletionType::List)
        .build();
    let mut editor: Editor<TileHelper, DefaultHistory> = match Editor::with_config(config) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("tilebook: cannot start the line editor: {e}");
            return piped(
                Rc::try_unwrap(session)
                    .ok()
                    .map(|c| c.into_inner())
                    .unwrap_or_default(),
            );
        }
    };
    // Ctrl-C while a cell runs (at the prompt the terminal is raw and the
    // editor reads it as a key). Installed after the editor, which sets a
    // SIGINT handler of its own when it starts.
    let _ = ctrlc::set_handler(move || interrupt.store(true, Ordering::Relaxed));
    editor.set_helper(Some(TileHelper::new(session.clone(), color)));
    editor.bind_sequence(
        KeyEvent(KeyCode::Enter, Modifiers::NONE),
        EventHandler::Conditional(Box::new(EnterHandler)),
    );
    let history = crate::editor::history_path();
    if let Some(p) = &history {
        let _ = editor.load_history(p);
    }
    let mut next_input: Option<String> = None;
    loop {
        let read = match next_input.take() {
            Some(text) => editor.readline_with_initial(">>> ", (&text, "")),
            None => editor.readline(">>> "),
        };
        let cell = match read {
            Ok(line) => line,
            // Ctrl-C at the prompt: the line is dropped.
            Err(rustyline::error::ReadlineError::Interrupted) => continue,
            Err(rustyline::error::ReadlineError::Eof) => break,
            Err(e) => {
                eprintln!("tilebook: {e}");
                break;
            }
        };
        let cell = cell.trim_end().to_string();
        if cell.trim().is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(cell.as_str());
        if let Some(p) = &history {
            if let Some(dir) = p.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = editor.save_history(p);
        }
        let r = session.borrow_mut().run_cell(&cell);
        bars.clear();
        crate::print_outputs(&r.outputs);
        next_input = r.outputs.iter().find_map(|o| match o {
            Output::NextInput { text } => Some(text.trim_end().to_string()),
            _ => None,
        });
    }
    ExitCode::SUCCESS
}

/// Cells from a pipe: lines accumulate until the cell is complete; a blank
/// line ends an open block.
fn piped(mut session: Session) -> ExitCode {
    let stdin = std::io::stdin();
    let mut cell = String::new();
    let run = |session: &mut Session, cell: &str| {
        let r = session.run_cell(cell);
        crate::print_outputs(&r.outputs);
    };
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let blank = line.trim().is_empty();
        if cell.is_empty() && blank {
            continue;
        }
        cell.push_str(&line);
        cell.push('\n');
        let state = if blank {
            Completeness::Complete
        } else {
            is_complete(&cell)
        };
        if state == Completeness::Incomplete {
            continue;
        }
        run(&mut session, &cell);
        cell.clear();
    }
    if !cell.trim().is_empty() {
        run(&mut session, &cell);
    }
    ExitCode::SUCCESS
}
