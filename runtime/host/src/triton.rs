//! `triton` on the host: `cdiv`, `next_power_of_2`, `Config`, the
//! `autotune`/`heuristics` decorators, `testing.do_bench`, and the driver
//! object of `triton.runtime.driver.active`.

use crate::builtins::make_config;
use crate::registry::Entry;
use crate::tensor::Device;
use crate::value::{to_int, Args, Exc, Val, R};
use crate::Engine;

/// The functions of `triton`, `triton.testing` and the driver object.
pub const TABLE: &[Entry] = &[
    Entry {
        name: "triton.jit",
        f: triton_jit,
        doc: r#"triton.jit(fn)
Decorator: compile fn as a tile kernel, launched as fn[grid](args...).
Parameters annotated tl.constexpr are compile-time values.
"#,
    },
    Entry {
        name: "triton.testing.do_bench",
        f: triton_testing_do_bench,
        doc: r#"triton.testing.do_bench(fn, warmup=25, rep=100, quantiles=None, return_mode='mean')
Time fn in milliseconds: warm up for warmup ms, run for about rep ms with
the L2 cache flushed between runs, time each with device events.
"#,
    },
    Entry {
        name: "triton.cdiv",
        f: triton_cdiv,
        doc: r#"triton.cdiv(x, y)
Integer division rounded up, for grids: triton.cdiv(n, BLOCK).
"#,
    },
    Entry {
        name: "triton.next_power_of_2",
        f: triton_next_power_of_2,
        doc: r#"triton.next_power_of_2(n)
The smallest power of two >= n.
"#,
    },
    Entry {
        name: "triton.Config",
        f: triton_config,
        doc: r#"triton.Config(kwargs, num_warps=4, num_stages=3, maxnreg=None, pre_hook=None)
One autotuning candidate: meta-parameter values and launch options
(`maxnreg`: at most this many registers a thread, on the GPU).
"#,
    },
    Entry {
        name: "triton.autotune",
        f: triton_autotune,
        doc: r#"triton.autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None, warmup=None, rep=None)
Decorator: on the first launch for each value of the key arguments, time
every config and keep the fastest (kernel.best_config). Results are
cached in memory and on disk.
"#,
    },
    Entry {
        name: "triton.heuristics",
        f: triton_autotune,
        doc: r#"triton.heuristics(values)
Decorator: meta-parameters computed from the arguments, e.g.
{'BLOCK': lambda args: triton.next_power_of_2(args['n'])}.
"#,
    },
    Entry {
        name: "triton.set_allocator",
        f: triton_set_allocator,
        doc: r#"triton.set_allocator(alloc_fn)
Triton asks for global scratch memory for descriptors made inside kernels
(tl.make_tensor_descriptor). tilebook's descriptors need none: the
allocator is accepted and never called.
"#,
    },
    Entry {
        name: "driver.get_current_target",
        f: driver_get_current_target,
        doc: "triton.runtime.driver.active.get_current_target(): the backend ('cuda') and its arch (e.g. 90).",
    },
    Entry {
        name: "driver.get_device_properties",
        f: driver_get_device_properties,
        doc: "driver.active.utils.get_device_properties(i): the GPU's SM count, shared memory, registers.",
    },
    Entry {
        name: "compiled._init_handles",
        f: compiled_init_handles,
        doc: "CompiledKernel._init_handles(): loads the kernel now (tilebook loads at compile: no-op).",
    },
    Entry {
        name: "driver.get_active_torch_device",
        f: driver_get_active_torch_device,
        doc: "driver.active.get_active_torch_device(): the torch device kernels launch on.",
    },
];

fn triton_testing_do_bench(s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    crate::bench::do_bench(s, &a)
}

fn triton_cdiv(_s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    let x = to_int(&a.req(0, "x")?)?;
    let d = to_int(&a.req(1, "div")?)?;
    if d == 0 {
        return Err(Exc::new("ZeroDivisionError", "triton.cdiv by zero"));
    }
    // In i128: `x + d - 1` overflows i64 near its ends.
    let q = (i128::from(x) + i128::from(d) - 1).div_euclid(i128::from(d));
    i64::try_from(q).map(Val::Int).map_err(|_| {
        Exc::new(
            "OverflowError",
            "triton.cdiv result does not fit in 64 bits",
        )
    })
}

fn triton_next_power_of_2(_s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    let n = to_int(&a.req(0, "n")?)?;
    (n.max(1) as u64)
        .checked_next_power_of_two()
        .and_then(|p| i64::try_from(p).ok())
        .map(Val::Int)
        .ok_or_else(|| {
            Exc::new(
                "OverflowError",
                format!("next_power_of_2({n}) does not fit in 64 bits"),
            )
        })
}

fn triton_config(_s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    make_config(&a)
}

fn triton_autotune(_s: &mut Engine, name: &str, a: Args) -> R<Val> {
    crate::autotune::decorator(name, &a)
}

fn triton_set_allocator(_s: &mut Engine, name: &str, a: Args) -> R<Val> {
    a.req(0, "allocator")
        .map_err(|e| Exc::type_error(format!("{name}: {}", e.message)))?;
    Ok(Val::None)
}

fn driver_get_current_target(s: &mut Engine, _name: &str, _a: Args) -> R<Val> {
    Ok(s.current_target())
}

fn driver_get_device_properties(s: &mut Engine, _name: &str, _a: Args) -> R<Val> {
    Ok(s.device_properties())
}

/// Handles load with the module; nothing is left to do.
fn compiled_init_handles(_s: &mut Engine, _name: &str, _a: Args) -> R<Val> {
    Ok(Val::None)
}

fn driver_get_active_torch_device(s: &mut Engine, _name: &str, _a: Args) -> R<Val> {
    s.announce_backend();
    Ok(Val::Device(Device::Cuda(s.current_device)))
}

/// `triton.jit` needs the function's Python object, so the VM's call of a
/// native (`vm/natives.rs`) takes it before this entry is reached; only a
/// call from the library itself ends here.
fn triton_jit(_s: &mut Engine, _name: &str, _a: Args) -> R<Val> {
    Err(Exc::type_error(
        "triton.jit decorates a Python function (@triton.jit above its def)",
    ))
}
