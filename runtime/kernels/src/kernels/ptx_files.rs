//! Kernel PTX in files, for looking at and trying changes by hand:
//! `TILEBOOK_DUMP_PTX` writes what the code generator made,
//! `TILEBOOK_PTX_OVERRIDE` loads an edited file in its place.

/// `TILEBOOK_PTX_OVERRIDE=DIR`: load `DIR/NAME-HASH.ptx` (the name
/// `dump_ptx` writes), or else `DIR/NAME.ptx`, in place of the PTX
/// generated for kernel NAME, as Triton's `TRITON_KERNEL_OVERRIDE` does:
/// for trying a hand-edited kernel through the same launch path (tensor
/// maps and all). The block size comes from the file's `.reqntid` or
/// `.maxntid` where it has one. Says on stderr which file it loaded; the
/// disk cache stores nothing while the variable is set (`stored::store`).
pub(super) fn override_ptx(gk: &tilebook_nvptx::GpuKernel) -> Option<(String, Option<u32>)> {
    let dir = std::env::var_os("TILEBOOK_PTX_OVERRIDE")?;
    let dir = std::path::Path::new(&dir);
    let (path, ptx) = [file_name(gk), format!("{}.ptx", gk.name)]
        .into_iter()
        .map(|f| dir.join(f))
        .find_map(|p| std::fs::read_to_string(&p).ok().map(|t| (p, t)))?;
    let threads = ptx.lines().find_map(|l| {
        let l = l.trim();
        let rest = l
            .strip_prefix(".reqntid")
            .or_else(|| l.strip_prefix(".maxntid"))?;
        rest.split(',').next()?.trim().parse::<u32>().ok()
    });
    eprintln!(
        "[tilebook] {}: PTX from {} ({} threads a block)",
        gk.name,
        path.display(),
        threads.unwrap_or(32 * gk.num_warps)
    );
    Some((ptx, threads))
}

/// `TILEBOOK_DUMP_PTX=DIR` (with `TILEBOOK_CHECK_PTX=1`): write each
/// kernel's PTX to `DIR/NAME-HASH.ptx`, HASH of the LLVM IR it was made
/// from, so two runs under different code-generator options can be
/// compared kernel by kernel. Best effort: a write that fails is skipped.
pub(super) fn dump_ptx(gk: &tilebook_nvptx::GpuKernel) {
    let Ok(dir) = std::env::var("TILEBOOK_DUMP_PTX") else {
        return;
    };
    let path = std::path::Path::new(&dir).join(file_name(gk));
    let _ = std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(path, &gk.ptx));
}

/// `NAME-HASH.ptx`, HASH of the LLVM IR the PTX was made from.
fn file_name(gk: &tilebook_nvptx::GpuKernel) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    gk.llvm_ir.hash(&mut h);
    format!("{}-{:016x}.ptx", gk.name, h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(ptx: &str) -> tilebook_nvptx::GpuKernel {
        tilebook_nvptx::GpuKernel {
            name: "k".into(),
            llvm_ir: "ir".into(),
            ptx: ptx.into(),
            shared_bytes: 0,
            num_warps: 4,
            check_bounds: false,
            branched_stores: false,
            stage_seconds: vec![],
            tensor_maps: vec![],
        }
    }

    /// The one test touching the variable (tests run in threads of one
    /// process): unset, a missing file, the name-only file with its block
    /// size, then the hashed name `dump_ptx` writes, which wins.
    #[test]
    fn an_override_file_replaces_the_ptx_and_sets_the_block_size() {
        let dir = std::env::temp_dir().join(format!("tb-override-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let gk = kernel(".entry k\n.maxntid 128, 1, 1\n");
        std::env::remove_var("TILEBOOK_PTX_OVERRIDE");
        assert!(override_ptx(&gk).is_none());
        std::env::set_var("TILEBOOK_PTX_OVERRIDE", &dir);
        assert!(override_ptx(&gk).is_none(), "no file yet");
        std::fs::write(dir.join("k.ptx"), ".entry k\n.reqntid 288, 1, 1\n").unwrap();
        let (ptx, threads) = override_ptx(&gk).unwrap();
        assert!(ptx.contains(".reqntid 288"));
        assert_eq!(threads, Some(288));
        std::env::set_var("TILEBOOK_DUMP_PTX", &dir);
        dump_ptx(&kernel(".entry k\n.maxntid 96, 1, 1\n"));
        std::env::remove_var("TILEBOOK_DUMP_PTX");
        let (ptx, threads) = override_ptx(&gk).unwrap();
        assert!(ptx.contains(".maxntid 96"), "{ptx}");
        assert_eq!(threads, Some(96));
        std::env::remove_var("TILEBOOK_PTX_OVERRIDE");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
