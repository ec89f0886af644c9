//! A mutation fuzzer of our own: programs from `tests/fuzz/` (small kernels
//! and host code over the tutorials' surface) are mutated the ways an
//! adversarial user types — numbers to 0, −1, 2³¹, 2⁶³, 1e308, nan; block
//! sizes; dtypes; dropped masks; swapped arguments; truncation; non-ASCII
//! names; deep nesting; long lines; lost or repeated lines — and each
//! mutant runs in its own `tilebook run --device cpu`. An error message is
//! fine; a panic (even one the session catches), an abort, a signal or a
//! hang (still running a few seconds after SIGINT) fails the test, and the
//! mutant is written to `target/fuzz-failures/` to become a regression test.
//!
//! `TILEBOOK_FUZZ_COUNT` (default 2000), `TILEBOOK_FUZZ_SEED` (default 1) and `TILEBOOK_FUZZ_BIN` (default: this build)
//! choose the run; the same seed gives the same mutants.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// xorshift64*: small, fast, and the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

/// Byte ranges of the tokens `keep` selects (runs of identifier or number
/// characters), in order.
fn tokens(text: &str, keep: impl Fn(&str) -> bool) -> Vec<(usize, usize)> {
    let mut out = vec![];
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                i += 1;
            }
            if keep(&text[start..i]) {
                out.push((start, i));
            }
        } else {
            i += 1;
        }
    }
    out
}

fn is_number(t: &str) -> bool {
    t.starts_with(|c: char| c.is_ascii_digit())
}

fn replace_one(text: &str, r: &mut Rng, spots: &[(usize, usize)], with: &str) -> String {
    if spots.is_empty() {
        return text.to_string();
    }
    let (a, b) = spots[r.below(spots.len())];
    format!("{}{with}{}", &text[..a], &text[b..])
}

const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1",
    "3",
    "2**31",
    "2**31 - 1",
    "2**32",
    "2**63 - 1",
    "2**63",
    "2**64",
    "10**12",
    "1e308",
    "float('nan')",
    "float('inf')",
    "-0.0",
    "1e-45",
    "0.5",
];
const BLOCKS: &[&str] = &["0", "1", "3", "-1", "2**20", "2**21", "2**40", "1000"];
const DTYPES: &[&str] = &[
    "float32",
    "float16",
    "bfloat16",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "bool",
    "float8_e5m2",
    "uint32",
];

/// One mutation of `text`.
fn mutate(text: &str, r: &mut Rng) -> String {
    if text.lines().next().is_none() {
        // Truncated to nothing: start again from a line of code.
        return "x = 1\n".to_string();
    }
    match r.below(12) {
        0 | 1 => {
            let spots = tokens(text, is_number);
            let with = r.pick(NUMBERS);
            replace_one(text, r, &spots, with)
        }
        2 => {
            // A block size or a launch meta-parameter.
            let spots: Vec<(usize, usize)> = tokens(text, is_number)
                .into_iter()
                .filter(|&(a, _)| text[..a].ends_with('=') || text[..a].ends_with("= "))
                .collect();
            let with = r.pick(BLOCKS);
            replace_one(text, r, &spots, with)
        }
        3 => {
            let spots = tokens(text, |t| DTYPES.iter().any(|d| t.ends_with(d)));
            if spots.is_empty() {
                return text.to_string();
            }
            let (a, b) = spots[r.below(spots.len())];
            let word = &text[a..b];
            let prefix = word.rsplit_once('.').map_or("", |(p, _)| p);
            let d = r.pick(DTYPES);
            let new = if prefix.is_empty() {
                d.to_string()
            } else {
                format!("{prefix}.{d}")
            };
            format!("{}{new}{}", &text[..a], &text[b..])
        }
        4 => {
            // Drop a `mask=` or `other=` argument.
            let key = if r.below(2) == 0 {
                ", mask="
            } else {
                ", other="
            };
            let hits: Vec<usize> = text.match_indices(key).map(|(i, _)| i).collect();
            if hits.is_empty() {
                return text.to_string();
            }
            let at = hits[r.below(hits.len())];
            let rest = &text[at + key.len()..];
            let mut depth = 0i32;
            let mut end = rest.len();
            for (i, c) in rest.char_indices() {
                match c {
                    '(' | '[' => depth += 1,
                    ')' | ']' if depth == 0 => {
                        end = i;
                        break;
                    }
                    ')' | ']' => depth -= 1,
                    ',' if depth == 0 => {
                        end = i;
                        break;
                    }
                    _ => {}
                }
            }
            format!("{}{}", &text[..at], &rest[end..])
        }
        5 => {
            // Swap two adjacent top-level arguments of a call on one line.
            let lines: Vec<&str> = text.lines().collect();
            let i = r.below(lines.len());
            let line = lines[i];
            let Some(open) = line.find('(') else {
                return text.to_string();
            };
            let inner = &line[open + 1..];
            let parts: Vec<&str> = inner.splitn(3, ", ").collect();
            if parts.len() < 3 {
                return text.to_string();
            }
            let swapped = format!(
                "{}{}, {}, {}",
                &line[..open + 1],
                parts[1],
                parts[0],
                parts[2]
            );
            let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            out[i] = swapped;
            out.join("\n")
        }
        6 => {
            // Truncate at a random character boundary.
            let mut cut = r.below(text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text[..cut].to_string()
        }
        7 => {
            // A non-ASCII spelling of one identifier, everywhere.
            let ids = tokens(text, |t| {
                t.len() > 1
                    && !is_number(t)
                    && !t.contains('.')
                    && t.chars().all(|c| c.is_ascii_lowercase() || c == '_')
            });
            if ids.is_empty() {
                return text.to_string();
            }
            let (a, b) = ids[r.below(ids.len())];
            let word = text[a..b].to_string();
            let new = format!("{}ξ{}", &word[..1], &word[1..]);
            text.replace(&word, &new)
        }
        8 => {
            // Deep nesting in an expression.
            let depth = [200, 1000, 3000, 20000][r.below(4)];
            let expr = match r.below(7) {
                0 => format!("{}1{}", "(".repeat(depth), ")".repeat(depth)),
                1 => format!("{}1", "-".repeat(depth)),
                2 => format!("{}1", "not ".repeat(depth)),
                3 => format!("abs{}", "()".repeat(depth)),
                4 => format!("abs{}", ".__call__".repeat(depth)),
                5 => format!("{}1", "lambda: ".repeat(depth)),
                _ => format!("{}0{}", "abs(".repeat(depth), ")".repeat(depth)),
            };
            insert_line(text, r, &format!("deep = {expr}"))
        }
        9 => {
            let n = [1000, 30000, 200000][r.below(3)];
            let line = match r.below(2) {
                0 => format!("long = {}", vec!["1"; n].join(" + ")),
                _ => format!("long = '{}'", "x".repeat(n * 4)),
            };
            insert_line(text, r, &line)
        }
        10 => {
            let mut lines: Vec<&str> = text.lines().collect();
            let i = r.below(lines.len());
            lines.remove(i);
            lines.join("\n")
        }
        _ => {
            let mut lines: Vec<&str> = text.lines().collect();
            let i = r.below(lines.len());
            let j = r.below(lines.len());
            let l = lines[i];
            lines.insert(j, l);
            lines.join("\n")
        }
    }
}

fn insert_line(text: &str, r: &mut Rng, line: &str) -> String {
    // At module level (before an unindented line), so the program parses.
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&i| !lines[i].starts_with([' ', '\t']) && !lines[i].is_empty())
        .collect();
    let at = starts.get(r.below(starts.len())).copied().unwrap_or(0);
    let mut out: Vec<&str> = lines[..at].to_vec();
    out.push(line);
    out.extend(&lines[at..]);
    out.join("\n")
}

#[derive(Debug)]
enum Outcome {
    /// Ran, or stopped with an error message.
    Fine,
    /// Interrupted after the time limit and stopped.
    Interrupted,
    Bad(String),
}

fn run_one(bin: &Path, file: &Path, cache: &Path) -> Outcome {
    // stderr goes to a file: a pipe nobody reads while the child runs would
    // fill up and stall a child that reports a long line.
    let err_path = file.with_extension("err");
    let Ok(err_file) = std::fs::File::create(&err_path) else {
        return Outcome::Bad("could not create the stderr file".into());
    };
    let mut cmd = Command::new(bin);
    // A harness started with SIGINT ignored (`nohup ... &`) would pass that
    // on, and its children would not stop on the SIGINT it sends them: give
    // them the default disposition, as a terminal would.
    // SAFETY: `signal` is async-signal-safe, the only call between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = match cmd
        .args(["run", "--device", "cpu"])
        .arg(file)
        .env("TILEBOOK_CACHE_DIR", cache)
        .env("TILEBOOK_CHECK_GPU", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(err_file))
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return Outcome::Bad(format!("could not start: {e}")),
    };
    let start = Instant::now();
    let limit = Duration::from_secs(8);
    let mut interrupted = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) => {}
            Err(e) => return Outcome::Bad(format!("wait: {e}")),
        }
        let t = start.elapsed();
        if t > limit && !interrupted {
            let _ = Command::new("kill")
                .args(["-INT", &child.id().to_string()])
                .status();
            interrupted = true;
        }
        if t > limit + Duration::from_secs(5) {
            let _ = child.kill();
            let _ = child.wait();
            return Outcome::Bad("hang: still running 5 s after SIGINT".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let err = String::from_utf8_lossy(&std::fs::read(&err_path).unwrap_or_default()).into_owned();
    let _ = std::fs::remove_file(&err_path);
    use std::os::unix::process::ExitStatusExt;
    if let Some(sig) = status.signal() {
        // Stopping on the SIGINT we sent is stopping.
        if interrupted && sig == 2 {
            return Outcome::Interrupted;
        }
        return Outcome::Bad(format!("killed by signal {sig}"));
    }
    if err.contains("InternalError") || err.contains("panicked at") {
        let line = err
            .lines()
            .find(|l| l.contains("InternalError") || l.contains("panicked"))
            .unwrap_or("")
            .chars()
            .take(200)
            .collect::<String>();
        return Outcome::Bad(format!("panic: {line}"));
    }
    match status.code() {
        Some(0..=2) => {
            if interrupted {
                Outcome::Interrupted
            } else {
                Outcome::Fine
            }
        }
        Some(130) if interrupted => Outcome::Interrupted,
        Some(c) => {
            let last: String = err.lines().last().unwrap_or("").chars().take(200).collect();
            Outcome::Bad(format!("exit code {c}: {last}"))
        }
        None => Outcome::Bad("no exit code".into()),
    }
}

#[test]
fn mutants_never_panic_crash_or_hang() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // TILEBOOK_FUZZ_BIN: another build to fuzz (a long local run can use a
    // copy while the tree is rebuilt).
    let bin = std::env::var_os("TILEBOOK_FUZZ_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_tilebook")));
    let count: usize = std::env::var("TILEBOOK_FUZZ_COUNT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let seed: u64 = std::env::var("TILEBOOK_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let mut seeds: Vec<(String, String)> = std::fs::read_dir(root.join("tests/fuzz"))
        .expect("tests/fuzz")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "py"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).expect("seed program"),
            )
        })
        .collect();
    seeds.sort();
    assert!(seeds.len() >= 6, "{} seed programs", seeds.len());
    let work = root.join("target/fuzz-work");
    let failures = root.join("target/fuzz-failures");
    let _ = std::fs::create_dir_all(&work);
    let cache = work.join("cache");
    // The mutants, made up front from one generator: the same seed, the same run.
    let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mutants: Vec<(String, String)> = (0..count)
        .map(|i| {
            let (name, text) = &seeds[i % seeds.len()];
            let mut t = text.clone();
            for _ in 0..1 + r.below(3) {
                t = mutate(&t, &mut r);
            }
            (format!("{i:05}-{name}"), t)
        })
        .collect();
    let next = AtomicUsize::new(0);
    let tally = Mutex::new((0usize, 0usize, Vec::<(String, String)>::new()));
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(8);
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((name, text)) = mutants.get(i) else {
                    break;
                };
                let file = work.join(name);
                if std::fs::write(&file, text).is_err() {
                    continue;
                }
                let outcome = run_one(&bin, &file, &cache);
                let _ = std::fs::remove_file(&file);
                let mut t = tally.lock().unwrap_or_else(|p| p.into_inner());
                match outcome {
                    Outcome::Fine => t.0 += 1,
                    Outcome::Interrupted => t.1 += 1,
                    Outcome::Bad(why) => {
                        let _ = std::fs::create_dir_all(&failures);
                        let _ = std::fs::write(failures.join(name), text);
                        t.2.push((name.clone(), why));
                    }
                }
            });
        }
    });
    let (fine, interrupted, bad) = tally.into_inner().unwrap_or_else(|p| p.into_inner());
    eprintln!(
        "fuzz: {count} mutants of {} programs (seed {seed}) in {:.0} s on {workers} workers: \
         {fine} ran or stopped with an error, {interrupted} interrupted at the time limit, {} failed",
        seeds.len(),
        started.elapsed().as_secs_f64(),
        bad.len()
    );
    assert!(
        bad.is_empty(),
        "{} mutants panicked, crashed or hung (saved in target/fuzz-failures/):\n{}",
        bad.len(),
        bad.iter()
            .map(|(n, w)| format!("  {n}: {w}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
