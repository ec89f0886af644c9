//! LLVM's side of the backend (the `llvm` feature): the pass pipeline,
//! the target machine and the knobs that the environment sets.

use crate::{
    codegen, libdevice, peephole, GpuKernel, GpuOptions, DEFAULT_PASSES, LAZY_WAITS_MARK,
    PTX_FEATURES, TWO_BLOCKS_MARK,
};
use inkwell::context::Context;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{
    CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetTriple,
};
use inkwell::OptimizationLevel;
use tilebook_tir::Kernel;

/// The pipeline; with libdevice linked it first folds the library's
/// `__nvvm_reflect` queries, inlines the functions called (libdevice marks
/// them always-inline) and drops the rest of the library. `default<O0>` is
/// the NVPTX target's pipeline start (`nvvm-reflect` told the target's SM,
/// which libdevice asks as `__CUDA_ARCH`; by name in LLVM 19 it would
/// answer 0 and pick other code paths than Triton's) and the always-inliner.
fn llvm_passes(libdevice: bool) -> String {
    let base = std::env::var("TILEBOOK_LLVM_PASSES").unwrap_or_else(|_| DEFAULT_PASSES.into());
    if libdevice {
        format!("default<O0>,globaldce,{base}")
    } else {
        base
    }
}

/// Whether `tl.dot` may use Hopper's `wgmma`: on sm_90 unless
/// `TILEBOOK_WGMMA=0` (then `mma.sync`, as on Ampere).
fn wgmma_allowed(options: &GpuOptions) -> bool {
    matches!(options.arch.as_str(), "sm_90" | "sm_90a")
        && std::env::var("TILEBOOK_WGMMA").map_or(true, |v| v != "0")
}

/// LLVM's command-line options, set once per process before any compilation.
///
/// Floating-point contraction as Triton does it (`enable_fp_fusion`, on by
/// default): LLVM may fuse a multiply and an add into one `fma`, and leaves
/// `mul`/`add` without `.rn` so that ptxas may fuse too. Results then match
/// Triton's bit for bit where both run the same operations (libdevice's
/// polynomials, `tl.randn`). `TILEBOOK_FP_FUSION=0` turns it off (every
/// `mul`/`add` rounded on its own, as the CPU backend computes). Also: no
/// load/store vectorizer, and `TILEBOOK_LLVM_ARGS` for investigations (both
/// part of the disk cache's key, `env_settings`).
fn llvm_options() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let on = std::env::var("TILEBOOK_FP_FUSION").map_or(true, |v| v != "0");
        let level = if on {
            c"-nvptx-fma-level=1"
        } else {
            c"-nvptx-fma-level=0"
        };
        // Extra LLVM options for investigations (`-time-passes`, ...).
        let extra: Vec<std::ffi::CString> = std::env::var("TILEBOOK_LLVM_ARGS")
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|a| std::ffi::CString::new(a).ok())
            .collect();
        // No load/store vectorizer in code generation: the code generator
        // already emits each run as one vector access, and on the tutorial
        // matmul the pass took a fifth of code generation (16 of 74 ms) to
        // change nothing (the PTX of the 340 conformance kernels and the
        // benchmark's is byte-identical without it; bench/NOTES.md).
        let mut argv = vec![
            c"tilebook".as_ptr(),
            level.as_ptr(),
            c"-disable-nvptx-load-store-vectorizer".as_ptr(),
        ];
        argv.extend(extra.iter().map(|a| a.as_ptr()));
        // SAFETY: valid NUL-terminated strings that outlive the call; LLVM
        // copies what it keeps. Called once, before any compilation.
        unsafe {
            inkwell::llvm_sys::support::LLVMParseCommandLineOptions(
                argv.len() as i32,
                argv.as_ptr(),
                std::ptr::null(),
            );
        }
    });
}

/// Registers a thread may spend on a rotated loop's carried scores (64
/// fp32): attention's 128 x 64 blocks over 4 warps.
const ROTATED_BYTES: usize = 256;

/// Whether two-dot loops are rotated: on `wgmma` targets (whose dots run
/// asynchronously), in blocks of at most 4 warps, unless
/// `TILEBOOK_ROTATE_DOTS=0`. With 8 warps the second set of scores costs
/// the registers that let two blocks share an SM: attention's forward at
/// D = 64, (128, 64, 8, 3) fell from 398 to 302 TFLOPS on the H200 where
/// the 4-warp configs gained 5-11 % (bench/NOTES.md, session 41).
/// `TILEBOOK_ROTATE_DOTS=all` lifts the warp limit (for measuring).
fn rotate_dots(options: &GpuOptions) -> bool {
    let setting = std::env::var("TILEBOOK_ROTATE_DOTS").unwrap_or_default();
    wgmma_allowed(options) && setting != "0" && (options.num_warps <= 4 || setting == "all")
}

/// Rows of scores a rotated loop's first dot needs: two `m64` row blocks
/// per warpgroup. With one (attention's 64 x 64 blocks over 4 warps) the
/// rotation lost on the H200 in 5 of 6 shapes, 4-9 % (D = 64 causal N =
/// 1024 257.5 -> 238.2 TFLOPS, D = 128 causal N = 4096 395 -> 366; +4 % at
/// D = 64 non-causal N = 1024), while 128-row blocks gained up to 5 %
/// (bench/NOTES.md, session 48). Our reading: two or four such blocks
/// share an SM, and their warps already overlap one block's softmax with
/// another's dots. `TILEBOOK_ROTATE_DOTS=all` lifts it.
fn rotated_rows(warps: u32) -> usize {
    if std::env::var("TILEBOOK_ROTATE_DOTS").is_ok_and(|v| v == "all") {
        return 0;
    }
    128 * (warps as usize / 4).max(1)
}

/// Tensor-core instructions the target offers beyond Ampere's.
fn features(options: &GpuOptions) -> codegen::Features {
    codegen::Features {
        wgmma: wgmma_allowed(options),
        wgmma_inflight: std::env::var("TILEBOOK_WGMMA_INFLIGHT").map_or(true, |v| v != "0"),
        inflight_chain: std::env::var("TILEBOOK_INFLIGHT_CHAIN").map_or(true, |v| v != "0"),
        libdevice: options.libdevice
            && (options.libdevice_path.is_some() || libdevice::bitcode().is_some()),
        predicated_stores: options.predicated_stores,
    }
}

/// The optimisation level of LLVM's NVPTX code generator (instruction
/// selection, scheduling, register allocation): `TILEBOOK_CODEGEN_OPT` =
/// 0..3, default 2: for the generated kernels 2 gives the same PTX as 3
/// in two thirds of the time (bench/NOTES.md).
fn codegen_level() -> OptimizationLevel {
    match std::env::var("TILEBOOK_CODEGEN_OPT").as_deref() {
        Ok("0") => OptimizationLevel::None,
        Ok("1") => OptimizationLevel::Less,
        Ok("2") => OptimizationLevel::Default,
        Ok("3") => OptimizationLevel::Aggressive,
        _ => OptimizationLevel::Default,
    }
}

/// Register bytes per thread that the prefetched blocks of a loop without a
/// `dot` may take: a third of what a thread may have (255 registers, fewer
/// where 65536 per SM over the block's threads is less). Layer norm's
/// backward row loop: 4096 columns over 4 warps (32 registers) 2049 -> 2265
/// GB/s on the H200; 16384 over 16 warps (a 128-register cap) fell from
/// 1547 to 652 when prefetched (bench/NOTES.md). `TILEBOOK_PLAIN_PIPELINE=0`
/// turns it off.
fn plain_budget(threads: usize) -> usize {
    if std::env::var("TILEBOOK_PLAIN_PIPELINE").is_ok_and(|v| v == "0") {
        return 0;
    }
    let cap = (65536 / threads.max(1)).min(255);
    cap * 4 / 3
}

/// Column vectors (`PipelineOptions::column_hoist_above`) loaded at the top
/// of the body rather than a loop ahead: in blocks of one warp group, where
/// `codegen/mma_cols.rs` would carry more than 8 registers a vector across
/// the loop (vectors of more than 32 elements). Measured on the H200
/// (session 55): the attention backward's 4-warp `dk`/`dv` kernels 4-13 %
/// faster than with the shared-memory move, and fewer registers.
/// `TILEBOOK_COLUMN_LOADS=0` turns it off with the column loads.
fn column_hoist_above(threads: usize) -> usize {
    let off = std::env::var("TILEBOOK_COLUMN_LOADS").is_ok_and(|v| v == "0");
    if !off && threads <= 128 {
        32
    } else {
        0
    }
}

/// Loops of three or more dots issue a dot that needs no other dot of the
/// iteration right after the first (`tilebook_tir::schedule`), so that it
/// runs while the warps compute the first one's softmax (the `wgmma` groups
/// of such loops are waited for lazily, `codegen::wgmma::plan_lazy`).
/// `TILEBOOK_EARLY_DOTS=0` turns it off.
fn early_dots() -> bool {
    !std::env::var("TILEBOOK_EARLY_DOTS").is_ok_and(|v| v == "0")
}

/// Pointer loads of tensor blocks as bulk tensor copies on Hopper
/// (`tilebook_tir::pointer_tma`). `TILEBOOK_POINTER_TMA=0` turns it off.
fn pointer_maps() -> bool {
    !std::env::var("TILEBOOK_POINTER_TMA").is_ok_and(|v| v == "0")
}

/// Dot-free loops update their carried accumulations as soon as the terms
/// exist (`tilebook_tir::accumulate`), so the terms stop holding registers
/// through the rest of the body: the layer-norm backward at 16384 columns
/// spilled 98 words a thread instead of 142 and ran 25 % faster on the
/// H200 (bench/NOTES.md, session 58). `TILEBOOK_EARLY_ACCUMULATE=0` turns
/// it off.
fn early_accumulate() -> bool {
    !std::env::var("TILEBOOK_EARLY_ACCUMULATE").is_ok_and(|v| v == "0")
}

/// `k` with its loops' loads prefetched `stages - 1` iterations ahead (at
/// least one): each application of the pass prefetches one more.
/// Also whether a two-dot loop was rotated (with `rotate`).
fn pipelined(k: &Kernel, stages: u32, warps: u32, rotate: bool) -> Result<(Kernel, bool), String> {
    let mut k = k.clone();
    // Two-dot loops (attention) compute the next iteration's first dot
    // before this iteration's softmax, where the carried scores fit
    // `ROTATED_BYTES` a thread (see `tilebook_tir::rotate`).
    let rotated = rotate
        && tilebook_tir::rotate::rotate_dot_loops(
            &mut k,
            32 * warps as usize,
            ROTATED_BYTES,
            rotated_rows(warps),
        );
    if rotated {
        tilebook_tir::passes::optimize(&mut k);
        tilebook_tir::verify::verify(&k)
            .map_err(|e| format!("internal error: rotation produced invalid tile IR: {e}"))?;
    }
    for i in 0..stages.saturating_sub(1).max(1) {
        let threads = 32 * warps as usize;
        // Loops without a dot: one stage, their blocks in registers.
        let options = tilebook_tir::pipeline::PipelineOptions {
            threads,
            plain_budget: if i == 0 { plain_budget(threads) } else { 0 },
            column_hoist_above: column_hoist_above(threads),
        };
        if !tilebook_tir::pipeline::pipeline_loads(&mut k, options) {
            break;
        }
        tilebook_tir::passes::optimize(&mut k);
        tilebook_tir::verify::verify(&k)
            .map_err(|e| format!("internal error: pipelining produced invalid tile IR: {e}"))?;
    }
    if early_accumulate() && tilebook_tir::accumulate::accumulate_early(&mut k) {
        tilebook_tir::verify::verify(&k).map_err(|e| {
            format!("internal error: early accumulation produced invalid tile IR: {e}")
        })?;
    }
    if early_dots() {
        let limits = tilebook_tir::schedule::EarlyDots {
            min_dots: 3,
            threads: 32 * warps as usize,
            max_elems: codegen::wgmma::LAZY_ACC_REGS,
        };
        if tilebook_tir::schedule::issue_dots_early(&mut k, limits) {
            tilebook_tir::verify::verify(&k).map_err(|e| {
                format!("internal error: issuing dots early produced invalid tile IR: {e}")
            })?;
        }
    }
    Ok((k, rotated))
}

pub(crate) fn compile_with(k: &Kernel, options: &GpuOptions) -> Result<GpuKernel, String> {
    let mut clock = tilebook_tir::StageClock::new();
    Target::initialize_nvptx(&InitializationConfig::default());
    llvm_options();
    let context = Context::create();
    let triple = TargetTriple::create("nvptx64-nvidia-cuda");
    let target = Target::from_triple(&triple).map_err(|e| e.to_string())?;
    let machine_for = |arch: &str| {
        target
            .create_target_machine(
                &triple,
                arch,
                PTX_FEATURES,
                codegen_level(),
                RelocMode::Default,
                CodeModel::Default,
            )
            .ok_or_else(|| format!("LLVM cannot target {arch}"))
    };
    let machine = machine_for(&options.arch)?;
    // A config whose stage rings leave no shared memory for a chained
    // `wgmma` dot's epilogue is built again with one stage fewer (down to
    // two) rather than on the register path, which is many times slower
    // (attention's backward at D = 128, (64, 128, 4, 3): 26-31 TFLOPS on
    // the register path, 119-135 with two stages; Triton 130-195).
    // A rotated build that leaves a dot off `wgmma` or passes the shared
    // memory limit is built again unrotated before anything else changes.
    // Pointer loads of 2-D tensor blocks are marked as bulk tensor copies
    // where `wgmma` can read their tiles (`tilebook_tir::pointer_tma`), in
    // blocks of more than one warp group, whose stages are released warp
    // by warp (`codegen/release.rs`). The tutorial matmul on the H200
    // (session 61): 8 warps, 128x256x64, 698-703 TFLOPS at 4096 and
    // 691-692 at 8192 with them, 699-702 and 650-693 without; 4 warps,
    // 128x128x64, 574-599 against 583-602 (the block barrier between
    // stages), so one warp group keeps `cp.async`.
    let mapped;
    let k = if wgmma_allowed(options)
        && !options.check_bounds
        && options.num_warps > 4
        && options.pointer_maps
        && pointer_maps()
    {
        let mut m = k.clone();
        if tilebook_tir::pointer_tma::annotate(&mut m, options.pointer_bulk_stores) {
            tilebook_tir::verify::verify(&m).map_err(|e| {
                format!("internal error: marking bulk tensor copies produced invalid tile IR: {e}")
            })?;
        }
        mapped = m;
        &mapped
    } else {
        k
    };
    let mut stages = options.num_stages;
    let mut rotate = rotate_dots(options);
    let (module, k, emitted) = loop {
        let module = context.create_module(&k.name);
        module.set_triple(&triple);
        module.set_data_layout(&machine.get_target_data().get_data_layout());
        let (pipelined, rotated) = pipelined(k, stages, options.num_warps, rotate)?;
        clock.lap("gpu pipelining");
        let emitted = codegen::emit(
            &context,
            &module,
            &pipelined,
            options.num_warps,
            features(options),
            options.check_bounds,
            options.maxnreg,
        )?;
        clock.lap("llvm ir");
        let too_big = emitted.shared_bytes as usize > codegen::wgmma::MAX_SHARED;
        if rotated && (emitted.over_budget || emitted.register_prefetch || too_big) {
            rotate = false;
            continue;
        }
        if emitted.over_budget && stages > 2 {
            stages -= 1;
            continue;
        }
        // Dots on the register path whose operand tiles the pipelining pass
        // carries in registers: each stage past two holds another copy of
        // every such tile in every thread (attention's backward with
        // 32-row blocks at D = 128: 65-73 TFLOPS at 3 stages, 93-125 at 2).
        if emitted.register_prefetch && stages > 2 {
            stages = 2;
            continue;
        }
        break (module, pipelined, emitted);
    };
    let k = &k;
    let shared_bytes = emitted.shared_bytes;
    // `wgmma` is an sm_90a feature: such kernels target the Hopper-specific ISA.
    let machine = if emitted.wgmma && options.arch == "sm_90" {
        machine_for("sm_90a")?
    } else {
        machine
    };
    let linked = libdevice::link_into(&context, &module, options.libdevice_path.as_deref())?;
    if linked {
        clock.lap("libdevice");
    }
    module.verify().map_err(|e| {
        format!(
            "internal error: invalid LLVM IR for `{}`: {}",
            k.name,
            e.to_string()
        )
    })?;
    module
        .run_passes(&llvm_passes(linked), &machine, PassBuilderOptions::create())
        .map_err(|e| format!("LLVM optimisation failed: {}", e.to_string()))?;
    clock.lap("llvm passes");
    let llvm_ir = module.print_to_string().to_string();
    let buf = machine
        .write_to_memory_buffer(&module, FileType::Assembly)
        .map_err(|e| e.to_string())?;
    let mut ptx = String::from_utf8_lossy(buf.as_slice()).into_owned();
    if emitted.wgmma {
        ptx = peephole::unfuse_wide_shifts(&ptx);
    }
    if emitted.lazy_waits {
        // Read by the same rule, which then may try the kernel with every
        // group waited for at its commit (fewer registers).
        ptx.insert_str(0, &format!("{LAZY_WAITS_MARK}\n"));
    }
    if emitted.two_blocks {
        // Read by the runtime's occupancy rule (`tilebook_cuda::occupancy`),
        // which then may build the kernel for two blocks per SM.
        ptx.insert_str(0, &format!("{TWO_BLOCKS_MARK}\n"));
    }
    for m in emitted.tensor_maps.iter().rev() {
        ptx.insert_str(0, &format!("{}\n", m.mark()));
    }
    clock.lap("ptx");
    Ok(GpuKernel {
        tensor_maps: emitted.tensor_maps.clone(),
        name: k.name.clone(),
        llvm_ir,
        ptx,
        shared_bytes,
        num_warps: options.num_warps,
        check_bounds: options.check_bounds,
        branched_stores: emitted.branched_stores,
        stage_seconds: clock.laps,
    })
}
