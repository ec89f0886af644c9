//! Computes the compiler's identity for the on-disk kernel cache: a hash of
//! every source file that decides what code a kernel compiles to (the
//! compiler crates and the kernels runtime's specialization rules). A change to any
//! of them gives new cache keys, so stale code is never loaded.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "target") {
                sources(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs" || x == "toml") {
            out.push(p);
        }
    }
}

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = here.join("../..");
    let mut files = vec![];
    sources(&here.join("src/kernels"), &mut files);
    sources(&root.join("compiler"), &mut files);
    files.sort();
    let mut h = Sha256::new();
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        if let Ok(bytes) = std::fs::read(f) {
            h.update(
                f.strip_prefix(&root)
                    .unwrap_or(f)
                    .to_string_lossy()
                    .as_bytes(),
            );
            h.update(&bytes);
        }
    }
    println!("cargo:rerun-if-changed={}", root.join("compiler").display());
    println!(
        "cargo:rerun-if-changed={}",
        here.join("src/kernels").display()
    );
    let hex: String = h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    println!(
        "cargo:rustc-env=TILEBOOK_COMPILER_ID={}-{hex}",
        std::env::var("CARGO_PKG_VERSION").unwrap()
    );
}
