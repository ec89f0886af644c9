//! The `tilebook` command: the terminal REPL, `run`, `compile` and `jupyter`.
//!
//! A thin front end: cells go to the session engine (`tilebook-session`),
//! which returns outputs as values; this file only reads input and prints.

mod compile;
mod editor;
mod notebook;
mod progress;
mod repl;

use clap::{Parser, Subcommand};
use std::process::ExitCode;
use tilebook_session::{Output, Session};

#[derive(Parser)]
#[command(
    name = "tilebook",
    version,
    about = "Interactive GPU tile programming: Triton's tile language, JIT-compiled"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// The REPL's device: cpu, cuda or auto (default: TILEBOOK_DEVICE, else auto).
    #[arg(long)]
    device: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Run a script (.py) or every code cell of a notebook (.ipynb), printing outputs.
    Run {
        /// The script or notebook to run.
        file: String,
        /// auto (the default: the GPU when one is present, else the CPU backend), cpu, or cuda
        /// (fails when no GPU is present). TILEBOOK_DEVICE sets it too.
        #[arg(long)]
        device: Option<String>,
        /// Report every error, run every cell, and still exit non-zero.
        #[arg(long)]
        keep_going: bool,
        /// Write a notebook's outputs back into it, as nbclient would.
        #[arg(long)]
        inplace: bool,
        /// Arguments for the script (`sys.argv[1:]`), as `python3 FILE ARGS...` passes them.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Notebook tools.
    Notebook {
        #[command(subcommand)]
        action: NotebookCmd,
    },
    /// Compile one specialization of a kernel ahead of time (no GPU needed).
    Compile {
        /// The Python file that defines the kernel.
        file: String,
        /// The name of the @triton.jit function to compile.
        #[arg(long)]
        kernel: String,
        /// Triton's AOT signature, e.g. "*fp32:16, *fp32:16, *fp32:16, i32, BLOCK_SIZE=1024".
        #[arg(long)]
        signature: String,
        /// What to print: ir (tile IR), clif (the CPU backend's Cranelift IR), llvm,
        /// ptx, or sass (needs the CUDA toolkit's ptxas and cuobjdump or nvdisasm).
        #[arg(long, default_value = "ir")]
        emit: String,
        /// The GPU to compile for (llvm, ptx, sass): sm_70 … sm_90a, or volta, turing, ampere,
        /// ada, hopper.
        #[arg(long, default_value = "sm_90")]
        target: Option<String>,
        /// Write the output to this file instead of printing it.
        #[arg(short = 'o')]
        output: Option<String>,
    },
    /// Jupyter integration: install the kernelspec, or run the kernel.
    Jupyter {
        #[command(subcommand)]
        action: JupyterCmd,
    },
}

#[derive(Subcommand)]
enum NotebookCmd {
    /// Run a notebook again and report every output that differs from the saved one.
    Check {
        /// The notebook (.ipynb) to check.
        file: String,
        /// Where to run it: auto (the default), cpu or cuda.
        #[arg(long)]
        device: Option<String>,
    },
}

#[derive(Subcommand)]
enum JupyterCmd {
    /// Run the kernel (what the kernelspec starts).
    Kernel {
        /// The connection file Jupyter writes (ports, key, transport).
        #[arg(long)]
        connection_file: String,
    },
    /// Write the `tilebook` kernelspec.
    Install {
        /// Into the user's Jupyter data directory (the default).
        #[arg(long)]
        user: bool,
        /// Into the current Python environment (`$VIRTUAL_ENV`, `$CONDA_PREFIX`, or python3's sys.prefix).
        #[arg(long)]
        sys_prefix: bool,
        /// Into PREFIX/share/jupyter/kernels.
        #[arg(long)]
        prefix: Option<String>,
    },
}

fn print_outputs(outputs: &[Output]) {
    use std::io::Write;
    for o in outputs {
        match o {
            Output::Stream { name, text } => {
                if name == "stderr" {
                    eprint!("{text}");
                } else {
                    print!("{text}");
                }
            }
            Output::Display { data } | Output::Result { data } => {
                if let Some((_, t)) = data.iter().find(|(m, _)| m == "text/plain") {
                    println!("{t}");
                }
            }
            Output::Error { rendered, .. } => eprint!("{rendered}"),
            Output::Page { text } => print!("{text}"),
            Output::NextInput { .. } | Output::ClearOutput { .. } => {}
        }
    }
    let _ = std::io::stdout().flush();
}

/// The code cells of a notebook, or the whole script as one cell.
fn cells_of(file: &str, text: &str) -> Result<Vec<(String, String)>, String> {
    if !file.ends_with(".ipynb") {
        return Ok(vec![(file.to_string(), text.to_string())]);
    }
    let nb: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("{file} is not a valid notebook: {e}"))?;
    let cells = nb["cells"]
        .as_array()
        .ok_or_else(|| format!("{file} has no cells"))?;
    let mut out = vec![];
    for (i, c) in cells.iter().enumerate() {
        if c["cell_type"] != "code" {
            continue;
        }
        let src = match &c["source"] {
            serde_json::Value::Array(lines) => {
                lines.iter().filter_map(|l| l.as_str()).collect::<String>()
            }
            serde_json::Value::String(s) => s.clone(),
            _ => String::new(),
        };
        out.push((format!("{file} cell {}", i + 1), src));
    }
    Ok(out)
}

fn run(file: &str, args: &[String], device: Option<&str>, keep_going: bool) -> ExitCode {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("tilebook: cannot read {file}: {e}");
            return ExitCode::from(2);
        }
    };
    let cells = match cells_of(file, &text) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tilebook: {e}");
            return ExitCode::from(2);
        }
    };
    let mut session = match session_for(device) {
        Ok(s) => s,
        Err(code) => return code,
    };
    session.argv = std::iter::once(file.to_string())
        .chain(args.iter().cloned())
        .collect();
    // Streams and displays are printed as the script produces them, so a
    // timeout or Ctrl-C keeps what was already printed.
    session.on_output = Some(Box::new(|o: &Output| {
        print_outputs(std::slice::from_ref(o))
    }));
    let bars = progress::Bars::default();
    session.on_progress = bars.sink();
    let mut failed = false;
    let mut queue: std::collections::VecDeque<(String, String)> = cells.into();
    while let Some((name, src)) = queue.pop_front() {
        let r = session.run_cell_named(&src, &name);
        bars.clear();
        // `sys.exit(code)` / `raise SystemExit`: the script ends with its code.
        if let Some(("SystemExit", code, _)) = r.error() {
            let code = code.to_string();
            let rest: Vec<Output> = r
                .outputs
                .iter()
                .filter(|o| !matches!(o, Output::Error { .. }))
                .cloned()
                .collect();
            print_outputs(&rest);
            return match code.trim().parse::<i64>() {
                Ok(c) => ExitCode::from((c & 0xff) as u8),
                Err(_) if code.trim().is_empty() || code.trim() == "None" => ExitCode::SUCCESS,
                Err(_) => {
                    eprintln!("{code}");
                    ExitCode::from(1)
                }
            };
        }
        print_outputs(&r.outputs);
        // `%load`: nobody is there to edit the loaded text, so it runs next.
        for o in r.outputs.iter().rev() {
            if let Output::NextInput { text } = o {
                queue.push_front((format!("{name} (%load)"), text.clone()));
            }
        }
        if !r.ok {
            failed = true;
            if !keep_going {
                break;
            }
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// A session for `run`: `--device`, else `TILEBOOK_DEVICE`, else auto.
fn session_for(device: Option<&str>) -> Result<Session, ExitCode> {
    let device = device
        .map(str::to_string)
        .or_else(|| std::env::var("TILEBOOK_DEVICE").ok())
        .unwrap_or_else(|| "auto".into());
    Session::with_device(&device).map_err(|e| {
        eprintln!("tilebook: --device {device}: {e}");
        ExitCode::from(2)
    })
}

fn read_notebook(file: &str) -> Result<serde_json::Value, ExitCode> {
    let text = std::fs::read_to_string(file).map_err(|e| {
        eprintln!("tilebook: cannot read {file}: {e}");
        ExitCode::from(2)
    })?;
    serde_json::from_str(&text).map_err(|e| {
        eprintln!("tilebook: {file} is not a valid notebook: {e}");
        ExitCode::from(2)
    })
}

/// `tilebook run NB.ipynb --inplace`.
fn run_inplace(file: &str, device: Option<&str>, keep_going: bool) -> ExitCode {
    if !file.ends_with(".ipynb") {
        eprintln!("tilebook: --inplace writes outputs into notebooks (.ipynb), not {file}");
        return ExitCode::from(2);
    }
    let (mut nb, mut session) = match (read_notebook(file), session_for(device)) {
        (Ok(nb), Ok(s)) => (nb, s),
        (Err(c), _) | (_, Err(c)) => return c,
    };
    let bars = progress::Bars::default();
    session.on_progress = bars.sink();
    let ok = notebook::run_cells(&mut nb, &mut session, file, keep_going, true);
    bars.clear();
    notebook::set_kernel_metadata(&mut nb);
    notebook::set_backend_metadata(&mut nb, session.backend_name());
    let text = serde_json::to_string_pretty(&nb).unwrap_or_default() + "\n";
    if let Err(e) = std::fs::write(file, text) {
        eprintln!("tilebook: cannot write {file}: {e}");
        return ExitCode::from(2);
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `tilebook notebook check NB.ipynb`.
fn check_notebook(file: &str, device: Option<&str>) -> ExitCode {
    let (nb, session) = match (read_notebook(file), session_for(device)) {
        (Ok(nb), Ok(s)) => (nb, s),
        (Err(c), _) | (_, Err(c)) => return c,
    };
    let backend = session.backend_name();
    if notebook::check(file, &nb, session, backend) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn main() -> ExitCode {
    // Started by a session as its GPU worker: serve it and nothing else.
    if let Some(code) = tilebook_cuda::run_if_worker() {
        return ExitCode::from(code.clamp(0, 255) as u8);
    }
    tilebook_cuda::serve_from_this_binary();
    tilebook_session::quiet_expected_panics();
    let cli = Cli::parse();
    // Cells run on a thread with a large stack, as the Jupyter kernel's
    // worker does: the recursive passes over a cell (the parser, the VM's
    // compiler, the kernel front end) get room to spare at the nesting the
    // front end allows, and deep Python recursion ends in a RecursionError.
    let session = std::thread::Builder::new()
        .name("tilebook".into())
        .stack_size(tilebook_session::CELL_STACK_BYTES)
        .spawn(move || dispatch(cli));
    match session {
        Ok(thread) => thread.join().unwrap_or(ExitCode::from(101)),
        Err(e) => {
            eprintln!("tilebook: cannot start the session's thread: {e}");
            ExitCode::from(2)
        }
    }
}

fn dispatch(cli: Cli) -> ExitCode {
    match cli.command {
        None => repl::run(
            &cli.device
                .or_else(|| std::env::var("TILEBOOK_DEVICE").ok())
                .unwrap_or_else(|| "auto".into()),
        ),
        Some(Command::Run {
            file,
            device,
            keep_going,
            inplace,
            args,
        }) => {
            if inplace {
                run_inplace(&file, device.as_deref(), keep_going)
            } else {
                run(&file, &args, device.as_deref(), keep_going)
            }
        }
        Some(Command::Notebook {
            action: NotebookCmd::Check { file, device },
        }) => check_notebook(&file, device.as_deref()),
        Some(Command::Compile {
            file,
            kernel,
            signature,
            emit,
            target,
            output,
        }) => match compile::compile(&file, &kernel, &signature, &emit, target.as_deref()) {
            Ok(text) => {
                match output {
                    Some(path) => {
                        if let Err(e) = std::fs::write(&path, text) {
                            eprintln!("tilebook: cannot write {path}: {e}");
                            return ExitCode::from(2);
                        }
                    }
                    None => print!("{text}"),
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprint!("{e}");
                ExitCode::from(1)
            }
        },
        Some(Command::Jupyter {
            action:
                JupyterCmd::Install {
                    user,
                    sys_prefix,
                    prefix,
                },
        }) => match tilebook_jupyter::install(user, sys_prefix, prefix.as_deref()) {
            Ok(path) => {
                println!("Installed kernelspec tilebook in {path}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("tilebook: {e}");
                ExitCode::from(1)
            }
        },
        Some(Command::Jupyter {
            action: JupyterCmd::Kernel { connection_file },
        }) => match tilebook_jupyter::run_kernel(&connection_file) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("tilebook kernel: {e}");
                ExitCode::from(1)
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_passes_what_follows_the_file_to_the_script() {
        let cli = Cli::try_parse_from([
            "tilebook", "run", "--device", "cpu", "b.py", "--check", "-n", "3",
        ])
        .expect("parses");
        match cli.command {
            Some(Command::Run {
                file, args, device, ..
            }) => {
                assert_eq!(file, "b.py");
                assert_eq!(device.as_deref(), Some("cpu"));
                assert_eq!(args, ["--check", "-n", "3"]);
            }
            _ => panic!("not a run command"),
        }
        // tilebook's own options after FILE stay tilebook's; `--` hands the rest over.
        let cli = Cli::try_parse_from([
            "tilebook", "run", "b.py", "--device", "cpu", "--", "--device", "x",
        ])
        .expect("parses");
        match cli.command {
            Some(Command::Run { args, device, .. }) => {
                assert_eq!(device.as_deref(), Some("cpu"));
                assert_eq!(args, ["--device", "x"]);
            }
            _ => panic!("not a run command"),
        }
    }
}
