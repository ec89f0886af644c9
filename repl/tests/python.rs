//! The host language is Python: every program in `tests/python/` prints the
//! same under `tilebook run` as under `python3` (skipped, visibly, when no
//! `python3` is on PATH). Each program is our own; together they cover
//! classes, dunder methods, generators, `with`, closures, `global`,
//! decorators, argument passing, comprehensions, exceptions, f-strings,
//! dataclasses, argparse and the standard library modules notebooks use.

use std::path::{Path, PathBuf};
use std::process::Command;

fn programs() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/python");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/python")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "py"))
        .collect();
    files.sort();
    files
}

fn stdout_of(cmd: &mut Command) -> (bool, String, String) {
    let out = cmd.output().expect("start the program");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn programs_print_what_python3_prints() {
    let files = programs();
    assert!(files.len() >= 80, "{} programs", files.len());
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("SKIPPED: no python3 on PATH to compare with");
        return;
    }
    let mut failures = vec![];
    for f in &files {
        let (py_ok, want, py_err) = stdout_of(Command::new("python3").arg(f));
        assert!(py_ok, "python3 failed on {}: {py_err}", f.display());
        let (ok, got, err) = stdout_of(
            Command::new(env!("CARGO_BIN_EXE_tilebook"))
                .args(["run", "--device", "cpu"])
                .arg(f)
                .env("TILEBOOK_CACHE", "off"),
        );
        if !ok || got != want {
            failures.push(format!(
                "{}:\n--- python3\n{want}--- tilebook (ok={ok})\n{got}{err}",
                f.display()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} programs differ:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn system_exit_ends_run_with_its_code_and_the_repl_goes_on() {
    let dir = std::env::temp_dir().join(format!("tb-exit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("exit.py");
    std::fs::write(
        &script,
        "print('before')\nimport sys\nsys.exit(3)\nprint('after')\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tilebook"))
        .args(["run", "--device", "cpu"])
        .arg(&script)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "before\n");
    // In the REPL it is an error like any other; the session goes on.
    let mut child = Command::new(env!("CARGO_BIN_EXE_tilebook"))
        .args(["--device", "cpu"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"x = 41\nraise SystemExit(5)\n\nprint(x + 1)\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("SystemExit") && text.contains("42"), "{text}");
}

#[test]
fn a_pure_python_package_beside_the_script_imports() {
    let dir = std::env::temp_dir().join(format!("tb-pkg-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("helpers")).unwrap();
    std::fs::write(
        dir.join("helpers/__init__.py"),
        "def table(rows):\n    return '\\n'.join(f'{k:<4}{v:>4}' for k, v in rows)\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("main.py"),
        "from helpers import table\nprint(table([('a', 1), ('bb', 22)]))\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tilebook"))
        .args(["run", "--device", "cpu"])
        .arg(dir.join("main.py"))
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a      1\nbb    22\n");
}

/// `TILEBOOK_SWEEP_CUT=N` shrinks every `perf_report` sweep to its first `N`
/// points without touching the program (how the published tutorials run on
/// the CPU backend), and says so on stderr; unset, the whole sweep runs.
#[test]
fn sweep_cut_keeps_the_first_points_of_a_sweep() {
    let dir = std::env::temp_dir().join(format!("tb-cut-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let program = dir.join("sweep.py");
    std::fs::write(
        &program,
        "import triton\n\
         seen = []\n\
         @triton.testing.perf_report(triton.testing.Benchmark(x_names=['n'], x_vals=[1, 2, 3, 4],\n\
         \x20   line_arg='p', line_vals=['a'], line_names=['A'], plot_name='cut', args={}))\n\
         def bench(n, p):\n\
         \x20   seen.append(n)\n\
         \x20   return float(n)\n\
         bench.run()\n\
         print(seen)\n",
    )
    .unwrap();
    for (cut, want) in [(Some("2"), "[1, 2]\n"), (None, "[1, 2, 3, 4]\n")] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tilebook"));
        cmd.args(["run", "--device", "cpu"]).arg(&program);
        match cut {
            Some(n) => cmd.env("TILEBOOK_SWEEP_CUT", n),
            None => cmd.env_remove("TILEBOOK_SWEEP_CUT"),
        };
        let (ok, out, err) = stdout_of(&mut cmd);
        assert!(ok, "{err}");
        assert_eq!(out, want, "{err}");
        assert_eq!(
            err.contains("keeps its first 2 of 4 points"),
            cut.is_some(),
            "{err}"
        );
    }
    // Zero or a value that is not a number: an error naming the variable.
    for bad in ["0", "two", "-1"] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tilebook"));
        cmd.args(["run", "--device", "cpu"]).arg(&program);
        cmd.env("TILEBOOK_SWEEP_CUT", bad);
        let (ok, out, err) = stdout_of(&mut cmd);
        assert!(!ok, "{out}");
        assert!(
            err.contains("TILEBOOK_SWEEP_CUT") && err.contains("ValueError"),
            "{err}"
        );
    }
}

/// Source nested past what the recursive passes can take, in a cell or
/// compiled at run time by `eval`, `exec` or `compile`, is a RecursionError
/// naming its line; every kind once aborted the process with a stack
/// overflow (`not not ...`, `f()()...`, `a.a...`, `lambda: lambda: ...`
/// in a cell; any of them in `eval`).
#[test]
fn deeply_nested_source_is_a_recursion_error_not_a_crash() {
    let dir = std::env::temp_dir().join(format!("tb-deep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("deep.py");
    std::fs::write(
        &script,
        "n = 20000\n\
         kinds = {'parens': '(' * n + '1' + ')' * n, 'sum': '1+' * n + '1', 'unary': '-' * n + '1',\n\
         \x20        'not': 'not ' * n + '1', 'calls': 'f' + '()' * n, 'attrs': 'a' + '.a' * n,\n\
         \x20        'lambdas': 'lambda: ' * n + '1', 'fstring': \"f'\" + '{(' * n + \"'\"}\n\
         for name, src in kinds.items():\n\
         \x20   for run in (eval, exec, lambda s: compile(s, '<deep>', 'eval')):\n\
         \x20       try:\n\
         \x20           run(src)\n\
         \x20           print(name, 'ran')\n\
         \x20       except RecursionError as e:\n\
         \x20           print(name, 'refused' if 'levels deep' in str(e) else e)\n\
         print(eval('(' * 100 + '7' + ')' * 100), 'alive')\n",
    )
    .unwrap();
    let deep_cell = format!("x = {}1\n", "not ".repeat(20000));
    std::fs::write(dir.join("cell.py"), format!("print('before')\n{deep_cell}")).unwrap();
    let run = |file: &str| {
        Command::new(env!("CARGO_BIN_EXE_tilebook"))
            .args(["run", "--device", "cpu"])
            .arg(dir.join(file))
            .output()
            .unwrap()
    };
    let out = run("deep.py");
    assert!(out.status.success(), "{:?}", out.status);
    let want: String = [
        "parens", "sum", "unary", "not", "calls", "attrs", "lambdas", "fstring",
    ]
    .iter()
    .map(|k| format!("{k} refused\n").repeat(3))
    .collect::<String>()
        + "7 alive\n";
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
    // As under CPython, a file that cannot compile runs none of its lines.
    let out = run("cell.py");
    assert_eq!(out.status.code(), Some(1), "{:?}", out.status);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("RecursionError") && err.contains("levels deep"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Growth one small piece at a time inside RustPython's own loops
/// (`[*range(N)]`, `set(range(N))`, `list(itertools.repeat(0, N))`, a loop
/// of repetitions that appends) is a `MemoryError` once the session passes
/// its memory limit, and the session goes on; each of these once grew
/// until the allocation that failed aborted the process. Results asked for
/// at once (`1 << n`, `int.to_bytes`, `str.join`) are checked against free
/// memory before they are built.
#[test]
fn runaway_growth_is_a_memory_error_and_the_session_goes_on() {
    let dir = std::env::temp_dir().join(format!("tb-grow-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("grow.py");
    std::fs::write(
        &script,
        "import itertools\n\
         def attempt(label, f):\n\
         \x20   try:\n\
         \x20       f()\n\
         \x20       print(label, 'ran')\n\
         \x20   except MemoryError as e:\n\
         \x20       print(label, 'limit' if 'TILEBOOK_HOST_MEMORY_LIMIT' in str(e) else 'free' if 'could not allocate' in str(e) else e)\n\
         def appends():\n\
         \x20   rows = []\n\
         \x20   while True:\n\
         \x20       rows.append([0.5] * 8)\n\
         attempt('unpack', lambda: [*range(10**12)])\n\
         attempt('set', lambda: set(range(10**12)))\n\
         attempt('keys', lambda: dict.fromkeys(range(10**12)))\n\
         attempt('repeat', lambda: list(itertools.repeat(0, 10**12)))\n\
         attempt('pairs', lambda: [*zip(itertools.count(), itertools.count(1))])\n\
         attempt('strings', lambda: list(map(str, range(10**12))))\n\
         attempt('appends', appends)\n\
         attempt('shift', lambda: 3 << 10**13)\n\
         attempt('to_bytes', lambda: (7).to_bytes(10**13, 'little'))\n\
         attempt('join', lambda: '-'.join(['xy' * 10**6] * 10**6))\n\
         print(sum(range(10**5)), len([*range(300)]), '+'.join(c for c in 'abc'), (258).to_bytes(2, 'big'), 5 << 3)\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tilebook"))
        .args(["run", "--device", "cpu"])
        .arg(&script)
        .env("TILEBOOK_HOST_MEMORY_LIMIT", "512M")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}\n{err}", out.status);
    let want = "unpack limit\nset limit\nkeys limit\nrepeat limit\npairs limit\n\
                strings limit\nappends limit\nshift free\nto_bytes free\njoin free\n\
                4999950000 300 a+b+c b'\\x01\\x02' 40\n";
    assert_eq!(String::from_utf8_lossy(&out.stdout), want, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
