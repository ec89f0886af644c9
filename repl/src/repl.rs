//! A minimal line-at-a-time REPL (the full editor comes with the REPL issue):
//! lines accumulate until the shared `is_complete` check says the cell is
//! whole; a blank line ends an open block. Without a terminal it reads
//! cells from stdin and prints without prompts, so it can be scripted.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;
use tilebook_frontend::parse::{is_complete, Completeness};
use tilebook_session::Session;

pub fn run() -> ExitCode {
    let interactive = std::io::stdin().is_terminal();
    if interactive {
        println!(
            "tilebook {} — kernels run on the CPU backend (no GPU in use). Ctrl-D exits.",
            env!("CARGO_PKG_VERSION")
        );
    }
    let mut session = Session::new();
    session.on_progress = tilebook_session::terminal_progress();
    let stdin = std::io::stdin();
    let mut cell = String::new();
    let prompt = |cont: bool| {
        if interactive {
            print!("{}", if cont { "... " } else { ">>> " });
            let _ = std::io::stdout().flush();
        }
    };
    prompt(false);
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let blank = line.trim().is_empty();
        if cell.is_empty() && blank {
            prompt(false);
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
            prompt(true);
            continue;
        }
        let r = session.run_cell(&cell);
        crate::print_outputs(&r.outputs);
        cell.clear();
        prompt(false);
    }
    if !cell.trim().is_empty() {
        let r = session.run_cell(&cell);
        crate::print_outputs(&r.outputs);
    }
    if interactive {
        println!();
    }
    ExitCode::SUCCESS
}
