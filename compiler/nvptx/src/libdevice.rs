//! NVIDIA's libdevice: the CUDA toolkit's bitcode library of math functions
//! (`__nv_logf`, `__nv_sinf`, ...). Where the toolkit is installed, kernels
//! call it for `log`, `log2`, `sin`, `cos` (as Triton does, so results match
//! Triton's bit for bit) and for every fp64 transcendental; the library is
//! linked into the kernel's module and what the kernel does not call is
//! dropped by LLVM. Without it the backend uses the `approx` instructions for
//! fp32 and refuses fp64 transcendentals.
//!
//! Looked for, in order: `$TILEBOOK_LIBDEVICE` (a file), then
//! `nvvm/libdevice/libdevice.10.bc` under `$CUDA_HOME`, `$CUDA_PATH`,
//! `/usr/local/cuda` and `/usr/local/cuda-*` (newest first).

use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::{Linkage, Module};
use std::path::PathBuf;
use std::sync::OnceLock;

fn candidates() -> Vec<PathBuf> {
    let mut out = vec![];
    if let Some(p) = std::env::var_os("TILEBOOK_LIBDEVICE") {
        out.push(PathBuf::from(p));
    }
    let rel = "nvvm/libdevice/libdevice.10.bc";
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(root) = std::env::var_os(var) {
            out.push(PathBuf::from(root).join(rel));
        }
    }
    out.push(PathBuf::from("/usr/local/cuda").join(rel));
    if let Ok(entries) = std::fs::read_dir("/usr/local") {
        let mut versions: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("cuda-"))
            })
            .collect();
        versions.sort();
        out.extend(versions.into_iter().rev().map(|p| p.join(rel)));
    }
    out
}

/// The library's bitcode, read once per process (`None` without a toolkit).
pub fn bitcode() -> Option<&'static [u8]> {
    static BYTES: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    BYTES
        .get_or_init(|| {
            candidates().into_iter().find_map(|p| {
                let bytes = std::fs::read(&p).ok()?;
                // Bitcode starts with 'BC' 0xC0DE (or the wrapper magic).
                let bitcode = bytes.starts_with(b"BC\xc0\xde")
                    || bytes.starts_with(&[0xde, 0xc0, 0x17, 0x0b]);
                bitcode.then_some(bytes)
            })
        })
        .as_deref()
}

/// Link libdevice (the file `path` names, else the toolkit's) into `module`
/// when it calls any of its functions, and
/// make the library's definitions internal so the optimiser drops the ones
/// not called. `Ok(false)` when nothing was linked (nothing needed it, or
/// no libdevice was found).
pub fn link_into<'ctx>(
    context: &'ctx Context,
    module: &Module<'ctx>,
    path: Option<&std::path::Path>,
) -> Result<bool, String> {
    let wanted = module
        .get_functions()
        .any(|f| f.count_basic_blocks() == 0 && f.get_name().to_bytes().starts_with(b"__nv_"));
    if !wanted {
        return Ok(false);
    }
    // Without a toolkit the calls stay external (`.extern .func` in the
    // PTX); loading such a module names what is missing.
    let named;
    let bytes = match path {
        Some(p) => {
            named = std::fs::read(p).map_err(|e| {
                format!(
                    "cannot read the libdevice named by extern_libs ({}): {e}",
                    p.display()
                )
            })?;
            named.as_slice()
        }
        None => match bitcode() {
            Some(b) => b,
            None => return Ok(false),
        },
    };
    // As Triton does: libdevice's flush-to-zero paths (`__nvvm_reflect`
    // answers `__CUDA_FTZ` with 1), so its functions give Triton's bits.
    // `TILEBOOK_LIBDEVICE_FTZ=0` keeps denormals.
    if std::env::var("TILEBOOK_LIBDEVICE_FTZ").map_or(true, |v| v != "0") {
        module.add_basic_value_flag(
            "nvvm-reflect-ftz",
            inkwell::module::FlagBehavior::Override,
            context.i32_type().const_int(1, false),
        );
    }
    let buffer = MemoryBuffer::create_from_memory_range_copy(bytes, "libdevice.10.bc");
    let lib = Module::parse_bitcode_from_buffer(&buffer, context)
        .map_err(|e| format!("cannot read libdevice: {}", e.to_string()))?;
    lib.set_triple(&module.get_triple());
    if let Some(layout) = module
        .get_data_layout()
        .as_str()
        .to_str()
        .ok()
        .filter(|s| !s.is_empty())
    {
        let _ = layout;
        lib.set_data_layout(&module.get_data_layout());
    }
    module
        .link_in_module(lib)
        .map_err(|e| format!("cannot link libdevice: {}", e.to_string()))?;
    for f in module.get_functions() {
        if f.count_basic_blocks() > 0 && f.get_name().to_bytes().starts_with(b"__nv_") {
            f.set_linkage(Linkage::Internal);
        }
    }
    Ok(true)
}
