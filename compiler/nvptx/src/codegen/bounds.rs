//! Launch bounds and the register cap of a kernel (`.maxntid`, `.maxnreg`).

use inkwell::context::Context;
use inkwell::module::Module;
use inkwell::values::FunctionValue;

/// Registers a thread of a `threads`-thread block may use: an SM's 64K
/// registers shared by the block's threads, at most 255, in ptxas's units
/// of 8.
pub(crate) fn register_cap(threads: usize) -> u32 {
    let per_thread = 65536 / threads.max(1);
    (per_thread.min(256) as u32 / 8 * 8).clamp(8, 255)
}

/// Annotates `func` with its launch bounds and register cap.
///
/// Launch bounds (`.maxntid`): ptxas then keeps the register count low
/// enough for `threads` threads per block. Without them a 16-warp kernel
/// may be given more registers than a block of 512 threads can have, and
/// its launch fails for lack of resources.
///
/// The register cap those threads allow, said outright (`.maxnreg`): with
/// `.maxntid` alone the toolkit's ptxas 12.8 gave the layer-norm backward at
/// 16384 columns and 8 warps 32 registers and 3.8 KB of spills per thread,
/// 255 registers and 0.7 KB with the cap named. The driver's own compiler
/// did not (the same kernel ran at the same speed either way on the H200,
/// bench/NOTES.md session 37); the cap keeps the two alike, so that
/// `tilebook compile --emit sass` shows what runs. `TILEBOOK_MAXNREG=0`
/// leaves it out, unless a launch asked for a cap (`maxnreg=`, kept within
/// 16 and the block's cap).
pub(crate) fn annotate<'ctx>(
    ctx: &'ctx Context,
    module: &Module<'ctx>,
    func: FunctionValue<'ctx>,
    threads: usize,
    asked: Option<u32>,
) -> Result<(), String> {
    let mut notes = vec![("maxntidx", threads as u64)];
    let cap = register_cap(threads);
    match asked {
        Some(n) => notes.push(("maxnreg", n.clamp(16, cap) as u64)),
        None if std::env::var("TILEBOOK_MAXNREG").map_or(true, |v| v != "0") => {
            notes.push(("maxnreg", cap as u64))
        }
        None => {}
    }
    for (name, value) in notes {
        let node = ctx.metadata_node(&[
            func.as_global_value().as_pointer_value().into(),
            ctx.metadata_string(name).into(),
            ctx.i32_type().const_int(value, false).into(),
        ]);
        module
            .add_global_metadata("nvvm.annotations", &node)
            .map_err(|e| format!("launch bounds ({name}): {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::register_cap;

    #[test]
    fn the_cap_is_what_an_sm_leaves_each_thread() {
        assert_eq!(register_cap(128), 255);
        assert_eq!(register_cap(256), 255);
        assert_eq!(register_cap(384), 168);
        assert_eq!(register_cap(512), 128);
        assert_eq!(register_cap(1024), 64);
    }
}
