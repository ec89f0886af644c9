//! The on-disk cache through the session engine (CPU backend): a second
//! session loads what the first compiled and tuned, and the cache keys
//! follow everything the code depends on.

use tilebook_session::disk_cache::DiskCache;
use tilebook_session::Session;
use tilebook_tests::ok;

/// A fresh cache directory for one test.
fn cache_dir(test: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("tilebook-cache-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn session_with(dir: &std::path::Path) -> Session {
    let mut s = Session::new();
    s.announce = false;
    s.disk = Some(DiskCache::new(dir.to_path_buf()));
    s
}

const SCALE: &str = r#"
import torch
import triton
import triton.language as tl

FACTOR = 3

@triton.jit
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    tl.static_print("compiling scale for BLOCK =", BLOCK)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * FACTOR, mask=m)

x = torch.arange(100, dtype=torch.float32, device='cuda')
y = torch.empty_like(x)
"#;

const LAUNCH: &str = "scale[(4,)](x, y, 100, BLOCK=32)\nprint(y[:4].tolist(), y[99].item())";

#[test]
fn a_second_session_loads_what_the_first_compiled() {
    let dir = cache_dir("second");
    let mut a = session_with(&dir);
    ok(&mut a, SCALE);
    let first = a.run_cell(LAUNCH).text();
    assert!(first.contains("compiling scale for BLOCK = 32"), "{first}");
    assert!(first.contains("[0.0, 3.0, 6.0, 9.0] 297.0"), "{first}");
    assert!(first.contains("compiled in"), "{first}");
    let disk = a.disk.as_ref().unwrap();
    assert_eq!((disk.hits.get(), disk.writes.get()), (0, 1));

    let mut b = session_with(&dir);
    ok(&mut b, SCALE);
    let second = b.run_cell(LAUNCH).text();
    // The hit replays what static_print said and computes the same result.
    assert!(
        second.contains("compiling scale for BLOCK = 32"),
        "{second}"
    );
    assert!(second.contains("[0.0, 3.0, 6.0, 9.0] 297.0"), "{second}");
    assert!(second.contains("loaded from the disk cache in"), "{second}");
    let disk = b.disk.as_ref().unwrap();
    assert_eq!((disk.hits.get(), disk.writes.get()), (1, 0));
    assert_eq!(disk.usage().kernels, 1);

    // Another specialization is a miss, compiled and written.
    ok(&mut b, "scale[(1,)](x, y, 100, BLOCK=128)");
    assert_eq!(b.disk.as_ref().unwrap().writes.get(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_changed_constant_or_body_is_compiled_again() {
    let dir = cache_dir("changed");
    let mut s = session_with(&dir);
    ok(&mut s, SCALE);
    ok(&mut s, LAUNCH);
    // The kernel reads FACTOR as a compile-time value: a new value is a new
    // key, in memory and on disk.
    let out = ok(&mut s, &format!("FACTOR = 5\n{LAUNCH}"));
    assert!(out.contains("[0.0, 5.0, 10.0, 15.0] 495.0"), "{out}");
    let redefined = SCALE.replace("* FACTOR", "* FACTOR + 1");
    ok(&mut s, &redefined);
    let out = ok(&mut s, LAUNCH);
    assert!(out.contains("[1.0, 4.0, 7.0, 10.0] 298.0"), "{out}");
    assert_eq!(s.disk.as_ref().unwrap().writes.get(), 3);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_damaged_entry_is_ignored_and_replaced() {
    let dir = cache_dir("damaged");
    let mut a = session_with(&dir);
    ok(&mut a, SCALE);
    ok(&mut a, LAUNCH);
    // Truncate every stored entry.
    fn each(p: &std::path::Path, f: &dyn Fn(&std::path::Path)) {
        for e in std::fs::read_dir(p).unwrap().flatten() {
            if e.path().is_dir() {
                each(&e.path(), f)
            } else {
                f(&e.path())
            }
        }
    }
    each(&dir, &|p| std::fs::write(p, "{\"key\": \"trunc").unwrap());
    let mut b = session_with(&dir);
    ok(&mut b, SCALE);
    let out = ok(&mut b, LAUNCH);
    assert!(out.contains("[0.0, 3.0, 6.0, 9.0] 297.0"), "{out}");
    let disk = b.disk.as_ref().unwrap();
    assert_eq!((disk.hits.get(), disk.writes.get()), (0, 1));
    let _ = std::fs::remove_dir_all(&dir);
}

const TUNED: &str = r#"
import torch
import triton
import triton.language as tl

@triton.autotune(configs=[triton.Config({'BLOCK': 16}), triton.Config({'BLOCK': 64}),
                          triton.Config({'BLOCK': 256})], key=['n'], warmup=1, rep=2)
@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)

x = torch.zeros(1000, device='cuda')
"#;

#[test]
fn tuning_results_outlive_the_session() {
    let dir = cache_dir("tuning");
    let mut a = session_with(&dir);
    ok(&mut a, TUNED);
    let grid = "add_one[lambda m: (triton.cdiv(1000, m['BLOCK']),)](x, 1000)";
    ok(&mut a, grid);
    let best = ok(&mut a, "print(add_one.best_config)");
    // Three configs compiled and written, and the tuning result.
    assert_eq!(a.disk.as_ref().unwrap().usage().tunings, 1);
    assert_eq!(a.total_compiles, 3);

    let mut b = session_with(&dir);
    ok(&mut b, TUNED);
    ok(&mut b, &format!("{grid}\nprint(x.sum().item())"));
    assert_eq!(ok(&mut b, "print(add_one.best_config)"), best);
    // Without tuning, only the chosen config was loaded, and it ran once.
    assert_eq!(b.total_compiles, 1);
    assert_eq!(b.disk.as_ref().unwrap().hits.get(), 2);
    assert_eq!(ok(&mut b, "print(x.sum().item())"), "1000.0\n");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every entry file under `dir/kernels`.
fn entries(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![];
    for shard in std::fs::read_dir(dir.join("kernels")).unwrap().flatten() {
        match std::fs::read_dir(shard.path()) {
            Ok(files) => out.extend(files.flatten().map(|f| f.path())),
            Err(_) => out.push(shard.path()),
        }
    }
    out
}

#[test]
fn an_edited_or_special_entry_is_skipped_with_a_note_and_clear_keeps_other_files() {
    let dir = cache_dir("tampered");
    let mut a = session_with(&dir);
    ok(&mut a, SCALE);
    a.run_cell(LAUNCH);
    let entry = entries(&dir).pop().expect("one entry");
    // Change the kernel's IR inside the entry (the multiplier 3 becomes 6)
    // without fixing the checksum: it must not be trusted.
    let text = std::fs::read_to_string(&entry).unwrap();
    let edited = text.replacen("3.0", "6.0", 1).replacen(" 3 ", " 6 ", 1);
    assert_ne!(text, edited, "the edit changed nothing");
    std::fs::write(&entry, edited).unwrap();
    let mut b = session_with(&dir);
    ok(&mut b, SCALE);
    let out = b.run_cell(LAUNCH).text();
    assert!(out.contains("[0.0, 3.0, 6.0, 9.0] 297.0"), "{out}");
    assert!(out.contains("does not match its checksum"), "{out}");
    // A FIFO in place of the entry is skipped, not waited on.
    let _ = std::fs::remove_file(&entry);
    let made = std::process::Command::new("mkfifo").arg(&entry).status();
    if made.is_ok_and(|s| s.success()) {
        let mut c = session_with(&dir);
        ok(&mut c, SCALE);
        let out = c.run_cell(LAUNCH).text();
        assert!(out.contains("not a regular file"), "{out}");
        let _ = std::fs::remove_file(&entry);
    }
    // `%cache clear` removes entries only.
    let mut d = session_with(&dir);
    ok(&mut d, SCALE);
    d.run_cell(LAUNCH);
    let mine = dir.join("kernels").join("notes.txt");
    std::fs::write(&mine, "mine").unwrap();
    ok(&mut d, "%cache clear");
    assert!(mine.exists(), "a user's file was deleted");
    assert_eq!(entries(&dir), vec![mine]);
    let _ = std::fs::remove_dir_all(&dir);
}
