//! The on-disk cache: compiled kernels and autotuning results that outlive
//! the session (`~/.cache/tilebook` by default).
//!
//! A kernel entry holds what a new session needs to skip the front end and
//! the GPU code generator: the optimised tile IR (its text form round-trips,
//! so the CPU backend recompiles it in milliseconds), the PTX and LLVM IR
//! when it was built for a GPU, the cubin the driver made of that PTX (with
//! the architecture and driver that made it: used only under the same, so a
//! hit skips the driver's JIT too), and the `tl.static_print` output of the
//! compile (replayed on a hit, so a hit looks like a compile). A tuning entry
//! holds the best config for one tuning key.
//!
//! Keys are SHA-256 digests of a text naming everything the code depends on:
//! the compiler's identity (a hash of the compiler's sources, made by
//! `build.rs`), the code-generation settings read from the environment, the
//! kernel's source and the `@jit` functions and constants it names, the
//! specialization, the options and the target. Each entry stores its full
//! key text and is used only when that text matches, so a digest collision
//! cannot load the wrong code. Entries are written to a temporary file and
//! renamed into place: concurrent sessions never see half an entry.
//!
//! `TILEBOOK_CACHE_DIR` moves the cache; `TILEBOOK_CACHE=off` turns it off.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::cell::Cell;
use std::path::{Path, PathBuf};

/// The compiler's identity: its version and a hash of its sources.
pub const COMPILER_ID: &str = env!("TILEBOOK_COMPILER_ID");

/// No entry tilebook writes comes near this size (PTX and IR of one kernel).
const ENTRY_LIMIT: u64 = 256 << 20;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A kernel specialization as stored.
#[derive(Serialize, Deserialize)]
pub struct KernelEntry {
    pub key: String,
    pub name: String,
    pub tir: String,
    /// What `tl.static_print` wrote while compiling.
    pub static_out: String,
    pub gpu: Option<GpuEntry>,
}

/// The GPU code of a specialization.
#[derive(Serialize, Deserialize)]
pub struct GpuEntry {
    pub name: String,
    pub llvm_ir: String,
    pub ptx: String,
    pub shared_bytes: u32,
    pub num_warps: u32,
    /// The driver's cubin of `ptx`, base64, and what made it
    /// (`tilebook_cuda::Loader::target`); empty when there is none.
    #[serde(default)]
    pub cubin: String,
    #[serde(default)]
    pub cubin_target: String,
}

#[derive(Serialize, Deserialize)]
struct TuningEntry {
    key: String,
    best: String,
}

/// Counts of a cache directory's entries, for `%cache`.
pub struct Usage {
    pub kernels: usize,
    pub tunings: usize,
    pub bytes: u64,
}

pub struct DiskCache {
    pub dir: PathBuf,
    /// Entries loaded and written by this session.
    pub hits: Cell<usize>,
    pub writes: Cell<usize>,
    notes: std::cell::RefCell<Vec<String>>,
}

const KERNELS: &str = "kernels";
const TUNINGS: &str = "autotune";

impl DiskCache {
    pub fn new(dir: PathBuf) -> DiskCache {
        DiskCache {
            dir,
            hits: Cell::new(0),
            writes: Cell::new(0),
            notes: Default::default(),
        }
    }

    /// The cache the environment asks for: `TILEBOOK_CACHE=off` for none,
    /// else `TILEBOOK_CACHE_DIR`, `$XDG_CACHE_HOME/tilebook` or
    /// `~/.cache/tilebook`.
    pub fn from_env() -> Option<DiskCache> {
        let off = std::env::var("TILEBOOK_CACHE")
            .is_ok_and(|v| matches!(v.as_str(), "0" | "off" | "false" | "no"));
        if off {
            return None;
        }
        let var = |n: &str| std::env::var_os(n).filter(|v| !v.is_empty());
        let dir = match (
            var("TILEBOOK_CACHE_DIR"),
            var("XDG_CACHE_HOME"),
            var("HOME"),
        ) {
            (Some(d), _, _) => PathBuf::from(d),
            (None, Some(x), _) => PathBuf::from(x).join("tilebook"),
            (None, None, Some(h)) => PathBuf::from(h).join(".cache/tilebook"),
            _ => return None,
        };
        Some(DiskCache::new(dir))
    }

    /// The key text of a kernel specialization: the session's in-memory key
    /// (source, specialization, options, target) with the compiler's
    /// identity and the code-generation settings from the environment.
    pub fn kernel_key(memory_key: &str) -> String {
        format!(
            "{COMPILER_ID}|{}|{memory_key}",
            tilebook_nvptx::env_settings()
        )
    }

    fn path(&self, kind: &str, key: &str) -> PathBuf {
        let hex = hex(&Sha256::digest(key.as_bytes()));
        self.dir
            .join(kind)
            .join(&hex[..2])
            .join(format!("{}.json", &hex[2..]))
    }

    /// An entry: a first line `sha256:<digest of the rest>`, then JSON.
    /// Special files, oversized files and entries whose content does not
    /// match their digest are skipped with a note (and rewritten by the
    /// compile that follows); they are never trusted or waited on.
    fn read<T: for<'de> Deserialize<'de>>(&self, kind: &str, key: &str) -> Option<T> {
        let path = self.path(kind, key);
        let meta = std::fs::symlink_metadata(&path).ok()?;
        let skip = |why: &str| {
            self.notes.borrow_mut().push(format!(
                "tilebook: skipped the disk-cache entry {} ({why}); compiling again",
                path.display()
            ));
            None
        };
        if !meta.is_file() {
            return skip("not a regular file");
        }
        if meta.len() > ENTRY_LIMIT {
            return skip("larger than any entry tilebook writes");
        }
        let text = std::fs::read_to_string(&path).ok()?;
        let Some((head, body)) = text.split_once('\n') else {
            return skip("no checksum");
        };
        if head.strip_prefix("sha256:") != Some(&hex(&Sha256::digest(body.as_bytes()))) {
            return skip("its content does not match its checksum");
        }
        match serde_json::from_str(body) {
            Ok(v) => Some(v),
            Err(_) => skip("unreadable"),
        }
    }

    /// Notes about skipped entries since the last call (the session shows them).
    pub fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut *self.notes.borrow_mut())
    }

    /// Write atomically; a cache that cannot be written is not an error.
    fn write<T: Serialize>(&self, kind: &str, key: &str, value: &T) {
        let path = self.path(kind, key);
        let Some(parent) = path.parent() else { return };
        let Ok(text) = serde_json::to_string(value) else {
            return;
        };
        let text = format!("sha256:{}\n{text}", hex(&Sha256::digest(text.as_bytes())));
        let tmp = parent.join(format!(".{}.{}.tmp", std::process::id(), self.writes.get()));
        let ok = std::fs::create_dir_all(parent).is_ok()
            && std::fs::write(&tmp, text).is_ok()
            && std::fs::rename(&tmp, &path).is_ok();
        if ok {
            self.writes.set(self.writes.get() + 1);
        } else {
            let _ = std::fs::remove_file(&tmp);
        }
    }

    pub fn load_kernel(&self, key: &str) -> Option<KernelEntry> {
        let e: KernelEntry = self.read(KERNELS, key)?;
        (e.key == key).then(|| {
            self.hits.set(self.hits.get() + 1);
            e
        })
    }

    pub fn store_kernel(&self, e: &KernelEntry) {
        self.write(KERNELS, &e.key, e);
    }

    /// The best config (as text) stored for a tuning key.
    pub fn load_tuning(&self, key: &str) -> Option<String> {
        let e: TuningEntry = self.read(TUNINGS, key)?;
        (e.key == key).then(|| {
            self.hits.set(self.hits.get() + 1);
            e.best
        })
    }

    pub fn store_tuning(&self, key: &str, best: &str) {
        let e = TuningEntry {
            key: key.to_string(),
            best: best.to_string(),
        };
        self.write(TUNINGS, key, &e);
    }

    /// Entries and bytes on disk.
    pub fn usage(&self) -> Usage {
        fn walk(p: &Path, files: &mut usize, bytes: &mut u64) {
            let Ok(rd) = std::fs::read_dir(p) else { return };
            for e in rd.flatten() {
                let Ok(m) = e.metadata() else { continue };
                if m.is_dir() {
                    walk(&e.path(), files, bytes);
                } else if e.path().extension().is_some_and(|x| x == "json") {
                    *files += 1;
                    *bytes += m.len();
                }
            }
        }
        let (mut kernels, mut tunings, mut bytes) = (0, 0, 0);
        walk(&self.dir.join(KERNELS), &mut kernels, &mut bytes);
        walk(&self.dir.join(TUNINGS), &mut tunings, &mut bytes);
        Usage {
            kernels,
            tunings,
            bytes,
        }
    }

    /// Remove every entry tilebook wrote (`kind/xx/<62 hex digits>.json`
    /// and leftover temporary files); anything else in the folder stays.
    pub fn clear(&self) -> std::io::Result<()> {
        self.clear_kinds(&[KERNELS, TUNINGS])
    }

    /// Remove the tuning results only (compiled kernels stay).
    pub fn clear_tunings(&self) -> std::io::Result<()> {
        self.clear_kinds(&[TUNINGS])
    }

    fn clear_kinds(&self, kinds: &[&str]) -> std::io::Result<()> {
        let ours = |name: &str| {
            let entry = name.len() == 67
                && name.ends_with(".json")
                && name[..62].bytes().all(|b| b.is_ascii_hexdigit());
            entry || (name.starts_with('.') && name.ends_with(".tmp"))
        };
        for &kind in kinds {
            let Ok(shards) = std::fs::read_dir(self.dir.join(kind)) else {
                continue;
            };
            for shard in shards.flatten() {
                let name = shard.file_name().to_string_lossy().into_owned();
                let is_shard = name.len() == 2 && name.bytes().all(|b| b.is_ascii_hexdigit());
                if !is_shard || !shard.file_type().is_ok_and(|t| t.is_dir()) {
                    continue;
                }
                for f in std::fs::read_dir(shard.path())?.flatten() {
                    let n = f.file_name().to_string_lossy().into_owned();
                    if ours(&n) && f.file_type().is_ok_and(|t| t.is_file()) {
                        std::fs::remove_file(f.path())?;
                    }
                }
                // Only if empty: a user's file there keeps its folder.
                let _ = std::fs::remove_dir(shard.path());
            }
            let _ = std::fs::remove_dir(self.dir.join(kind));
        }
        Ok(())
    }
}
