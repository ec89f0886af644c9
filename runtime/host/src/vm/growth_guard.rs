//! Memory that grows a little at a time until none is left.
//!
//! `memory_guard` and `size_guard` check results whose size is known when
//! they are asked for. A comprehension over `range(10**10)`, `[*range(N)]`,
//! `list(itertools.repeat(0, N))` or a `while` loop that appends asks for
//! one small piece at a time; RustPython 0.5 gives each piece, and the one
//! that does not fit aborts the process (a failed Rust allocation cannot be
//! an error on stable Rust) or the kernel's OOM killer ends it.
//!
//! So a watcher thread samples the process's resident size (every `POLL`;
//! the limits are read only after it has grown by `STEP`) and, when memory
//! is short, raises a flag that the places below take as a `MemoryError`
//! (after checking the shortage again): each item a leaf iterator hands out
//! (`range`'s, `itertools.count`, `repeat`, `cycle`, `product` ...: the
//! loops inside RustPython that `[*range(N)]`, `set(range(N))`,
//! `dict.fromkeys(...)` or `list(itertools.repeat(0, N))` run without a
//! bytecode instruction in between), and each repetition and sized
//! constructor `memory_guard` and `size_guard` check (`[0] * 10` in a
//! `while` loop that appends). The exception is raised from inside the
//! call, as the call's own error; the growing object unwinds, its memory
//! comes back, and the session goes on. The same item checks take the VM's
//! pending requests, so an interrupt (Ctrl-C, Jupyter's) stops those loops.
//!
//! Not covered: growth by bytecode alone, e.g. `[i for i in range(N)]`
//! inside a function (RustPython iterates `range` without the slot, and an
//! exception raised between its instructions from outside corrupts the
//! frame in 0.5: measured, `frame.rs` index out of bounds).
//!
//! Memory is short when any of these holds:
//! - the resident size passes `TILEBOOK_HOST_MEMORY_LIMIT` (bytes, or with a
//!   `K`, `M`, `G` suffix, binary units);
//! - the cgroup's anonymous memory comes within a reserve of its `memory.max`
//!   (containers, where the OOM killer acts before the system runs low);
//! - the address space passes 80 % of `ulimit -v`;
//! - the system's `MemAvailable` falls below the reserve (5 % of the
//!   memory, at least 128 MiB, at most 1 GiB).

use rustpython_vm::protocol::PyIterReturn;
use rustpython_vm::{PyObject, PyResult, VirtualMachine};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

const POLL: Duration = Duration::from_millis(10);
const MIB: u64 = 1 << 20;

/// Set by the watcher when memory is short; taken by `check_item`.
static SHORT: AtomicBool = AtomicBool::new(false);
/// The resident size when `check_item` last raised (0: memory was found
/// fine since). The memory the unwound object held usually stays with the
/// allocator, so the shortage reads the same right after; the next
/// `MemoryError` waits until the session grows `STEP` past this.
static RAISED_AT: AtomicU64 = AtomicU64::new(0);
const STEP: u64 = 16 * MIB;
static WATCHER: OnceLock<()> = OnceLock::new();

/// Start the watcher thread (once per process; from `Host::new`).
pub(super) fn watch() {
    WATCHER.get_or_init(|| {
        let started = std::thread::Builder::new()
            .name("tilebook-memory".into())
            .spawn(watcher);
        if let Err(e) = started {
            eprintln!("tilebook: no memory watcher ({e}); runaway growth can end the process");
        }
    });
}

/// Samples the resident size; when it has grown by `STEP` since memory was
/// last found fine (or short), reads the limits again. A session whose
/// freed memory the allocator keeps (the resident size stays up after a
/// `MemoryError`) is flagged again only once it grows past that.
fn watcher() {
    let mut calm = resident_bytes().unwrap_or(0);
    loop {
        std::thread::sleep(POLL);
        let Some(rss) = resident_bytes() else {
            continue;
        };
        calm = calm.min(rss);
        if rss < calm.saturating_add(STEP) {
            continue;
        }
        calm = rss;
        let short = shortage().is_some();
        if !short {
            RAISED_AT.store(0, Ordering::Release);
        }
        SHORT.store(short, Ordering::Release);
    }
}

/// Where growth can be stopped: the VM's pending requests (an interrupt)
/// are taken, and a shortage the watcher flagged, still there, is a
/// `MemoryError`.
pub(super) fn check_item(vm: &VirtualMachine) -> PyResult<()> {
    vm.check_signals()?;
    if SHORT.load(Ordering::Relaxed) && SHORT.swap(false, Ordering::AcqRel) {
        let rss = resident_bytes().unwrap_or(u64::MAX);
        let last = RAISED_AT.load(Ordering::Acquire);
        if last != 0 && rss < last.saturating_add(STEP) {
            return Ok(());
        }
        if let Some(why) = shortage() {
            RAISED_AT.store(rss, Ordering::Release);
            return Err(vm.new_memory_error(why));
        }
    }
    Ok(())
}

/// Why memory is short now, or `None` when it is not.
pub(crate) fn shortage() -> Option<String> {
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let rss = resident_bytes();
    if let (Some(limit), Some(rss)) = (env_limit(), rss) {
        if rss > limit {
            return Some(format!(
                "out of memory: this session holds {:.2} GiB, past TILEBOOK_HOST_MEMORY_LIMIT ({:.2} GiB)",
                gib(rss),
                gib(limit)
            ));
        }
    }
    if let Some((anon, max)) = cgroup_memory() {
        if anon.saturating_add(reserve(max)) > max {
            return Some(format!(
                "out of memory: the container's limit is {:.2} GiB and {:.2} GiB of it is in use",
                gib(max),
                gib(anon)
            ));
        }
    }
    if let Some((size, limit)) = address_space() {
        if size > limit / 10 * 8 {
            return Some(format!(
                "out of memory: this session's address space is {:.2} GiB of the {:.2} GiB `ulimit -v` allows",
                gib(size),
                gib(limit)
            ));
        }
    }
    if let Some((available, total)) = system_memory() {
        if available < reserve(total) {
            return Some(format!(
                "out of memory: the host has {:.2} GiB of {:.2} GiB available",
                gib(available),
                gib(total)
            ));
        }
    }
    None
}

/// What is kept free of `total`: 5 %, at least 128 MiB, at most 1 GiB.
fn reserve(total: u64) -> u64 {
    (total / 20).clamp(128 * MIB, 1024 * MIB)
}

/// `TILEBOOK_HOST_MEMORY_LIMIT` in bytes (read once; a value that does not
/// parse is said once on stderr and not used).
fn env_limit() -> Option<u64> {
    static LIMIT: OnceLock<Option<u64>> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        let text = std::env::var("TILEBOOK_HOST_MEMORY_LIMIT").ok()?;
        let parsed = parse_size(&text);
        if parsed.is_none() {
            eprintln!(
                "tilebook: TILEBOOK_HOST_MEMORY_LIMIT={text:?} is not a size (bytes, or a number with K, M or G); not used"
            );
        }
        parsed
    })
}

/// `1073741824`, `1024M`, `1G`, `512k` (binary units) in bytes.
pub(crate) fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    let n: u64 = digits.parse().ok()?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(scale)
}

/// The resident size of this process (`/proc/self/statm`, 4 KiB pages).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    pages.checked_mul(4096)
}

/// A `Key:   N kB` line of a `/proc` file, in bytes.
fn kib_field(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kib: u64 = line[key.len()..].split_whitespace().next()?.parse().ok()?;
    kib.checked_mul(1024)
}

fn system_memory() -> Option<(u64, u64)> {
    let m = std::fs::read_to_string("/proc/meminfo").ok()?;
    Some((kib_field(&m, "MemAvailable:")?, kib_field(&m, "MemTotal:")?))
}

/// The address space in use and `ulimit -v`, where one is set.
fn address_space() -> Option<(u64, u64)> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    let limit: u64 = line["Max address space".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    Some((kib_field(&status, "VmSize:")?, limit))
}

/// The anonymous memory of this process's cgroup (v2) and its
/// `memory.max`, where one is set. Page cache is left out: the kernel
/// takes it back before it kills anything.
fn cgroup_memory() -> Option<(u64, u64)> {
    let cg = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = cg.lines().find_map(|l| l.strip_prefix("0::"))?.trim();
    let dir = format!("/sys/fs/cgroup{}", path.trim_end_matches('/'));
    let max: u64 = std::fs::read_to_string(format!("{dir}/memory.max"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let stat = std::fs::read_to_string(format!("{dir}/memory.stat")).ok()?;
    let anon: u64 = stat
        .lines()
        .find_map(|l| l.strip_prefix("anon "))?
        .trim()
        .parse()
        .ok()?;
    Some((anon, max))
}

type Next = fn(&PyObject, &VirtualMachine) -> PyResult<PyIterReturn>;

/// One leaf iterator's `next` slot wrapped: the VM's pending requests
/// (a shortage, an interrupt) are taken before each item.
macro_rules! checked_next {
    ($name:ident, $orig:ident) => {
        static $orig: OnceLock<Next> = OnceLock::new();
        fn $name(zelf: &PyObject, vm: &VirtualMachine) -> PyResult<PyIterReturn> {
            check_item(vm)?;
            match $orig.get() {
                Some(f) => f(zelf, vm),
                None => Err(vm.new_system_error("an iterator slot was not kept".to_owned())),
            }
        }
    };
}

checked_next!(range_next, RANGE_NEXT);
checked_next!(long_range_next, LONG_RANGE_NEXT);
checked_next!(count_next, COUNT_NEXT);
checked_next!(repeat_next, REPEAT_NEXT);
checked_next!(cycle_next, CYCLE_NEXT);
checked_next!(product_next, PRODUCT_NEXT);
checked_next!(permutations_next, PERMUTATIONS_NEXT);
checked_next!(combinations_next, COMBINATIONS_NEXT);
checked_next!(combinations_r_next, COMBINATIONS_R_NEXT);

/// Wrap the leaf iterators' `next` slots (from `install_guards`, once per
/// thread): the range iterators and `itertools`' sources
/// of many items from few. Iterators built on others (`map`, `zip`,
/// `enumerate`, `islice` ...) reach one of these for every item.
pub(super) fn install(vm: &VirtualMachine) {
    let t = &vm.ctx.types;
    let mut slots: Vec<(rustpython_vm::PyObjectRef, &OnceLock<Next>, Next)> = vec![
        (
            t.range_iterator_type.to_owned().into(),
            &RANGE_NEXT,
            range_next,
        ),
        (
            t.long_range_iterator_type.to_owned().into(),
            &LONG_RANGE_NEXT,
            long_range_next,
        ),
    ];
    let itertools: [(&str, &OnceLock<Next>, Next); 7] = [
        ("count", &COUNT_NEXT, count_next),
        ("repeat", &REPEAT_NEXT, repeat_next),
        ("cycle", &CYCLE_NEXT, cycle_next),
        ("product", &PRODUCT_NEXT, product_next),
        ("permutations", &PERMUTATIONS_NEXT, permutations_next),
        ("combinations", &COMBINATIONS_NEXT, combinations_next),
        (
            "combinations_with_replacement",
            &COMBINATIONS_R_NEXT,
            combinations_r_next,
        ),
    ];
    if let Ok(module) = vm.import("itertools", 0) {
        for (name, keep, guarded) in itertools {
            if let Ok(cls) = module.get_attr(name, vm) {
                slots.push((cls, keep, guarded));
            }
        }
    }
    for (cls, keep, guarded) in slots {
        let Some(ty) = cls.downcast_ref::<rustpython_vm::builtins::PyType>() else {
            continue;
        };
        wrap_slot!(ty.slots.iternext, keep, guarded);
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("1024"), Some(1024));
        assert_eq!(parse_size("512k"), Some(512 << 10));
        assert_eq!(parse_size(" 3G "), Some(3 << 30));
        assert_eq!(parse_size("200MiB"), Some(200 << 20));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("1T"), None);
        assert_eq!(parse_size("99999999999999999999G"), None);
    }
}
