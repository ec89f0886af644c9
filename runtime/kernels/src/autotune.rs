//! `@triton.autotune` and `@triton.heuristics`.
//!
//! Both decorators return a new kernel object (same body, own compile
//! cache) with the tuner or the heuristics set. A launch of an
//! autotuned kernel computes Triton's tuning key (the values of the `key`
//! arguments, a tensor among them by identity, and the dtypes of the tensor
//! arguments); on a miss it prunes the
//! configs (`prune_configs_by`), compiles every remaining config at once
//! (front ends in turn, GPU code generation in parallel, `kernels::compile_all`),
//! times each with `do_bench`'s measurement (median of the measured calls;
//! `reset_to_zero` tensors zeroed before each call, `restore_value` tensors
//! restored after each config), skips configs that fail with a note, and keeps
//! the fastest per key. Heuristics run inside `kernels::prepare`, after a
//! config's meta-parameters are known, as Triton's nesting does.

use crate::kernels::{compile_all, prepare, run, run_with, KernelArg, KernelObj, Prepared};
use crate::value::R;
use crate::value::{to_f64, Args};
use crate::value::{Config, Exc, Object, Val};
use crate::Host;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Instant;

/// Milliseconds of warm-up and of measured calls per config when the
/// decorator does not say (Triton: 25 and 100). A config's median over 20 ms
/// of calls is as stable as over 100 ms for the kernels people tune (µs to
/// ms each), and tuning 16 configs then takes a fifth of the time
/// (bench/NOTES.md).
const TUNE_WARMUP_MS: f64 = 5.0;
const TUNE_REP_MS: f64 = 20.0;

pub use crate::value::kernel::Autotuner;

/// `triton.autotune(configs, key, ...)` and `triton.heuristics(values)`: the
/// decorator, an object whose `__decorate__` method applies it.
pub fn decorator(name: &str, a: &Args) -> R<Val> {
    let attrs = match name {
        "triton.autotune" => {
            let mut attrs = vec![
                ("configs", a.req(0, "configs")?),
                ("key", a.get(1, "key").unwrap_or_else(|| Val::list(vec![]))),
            ];
            for k in [
                "prune_configs_by",
                "reset_to_zero",
                "restore_value",
                "warmup",
                "rep",
            ] {
                if let Some(v) = a.kw(k) {
                    attrs.push((k, v));
                }
            }
            attrs
        }
        _ => vec![("values", a.req(0, "values")?)],
    };
    let obj = Val::object(name, attrs);
    Ok(Val::Method(Box::new(obj), Rc::from("__decorate__")))
}

/// Apply a decorator object to the kernel below it.
pub fn decorate(o: &Object, target: Val) -> R<Val> {
    let Val::Kernel(inner) = &target else {
        return Err(Exc::type_error(format!(
            "@{} applies to a @triton.jit kernel, not a {}",
            o.type_name,
            target.type_name()
        )));
    };
    let k = Rc::new(inner.wrapped());
    let attr = |n: &str| {
        o.attrs
            .borrow()
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, v)| v.clone())
    };
    if o.type_name == "triton.heuristics" {
        let Some(Val::Dict(d)) = attr("values") else {
            return Err(Exc::type_error(
                "triton.heuristics expects a dict of {name: function of the arguments}",
            ));
        };
        let mut h = k.heuristics.borrow_mut();
        for (name, f) in d.borrow().iter() {
            h.push((name.to_str().to_string(), f.clone()));
        }
        drop(h);
        return Ok(Val::Kernel(k));
    }
    let mut configs = vec![];
    for c in crate::value::iterate(&attr("configs").unwrap_or(Val::None))? {
        match c {
            Val::Config(c) => configs.push(c),
            other => {
                return Err(Exc::type_error(format!(
                    "triton.autotune: configs must be triton.Config objects, got a {}",
                    other.type_name()
                )))
            }
        }
    }
    if configs.is_empty() {
        return Err(Exc::value_error(
            "triton.autotune needs at least one config",
        ));
    }
    let (mut early_prune, mut perf_model, mut top_k) = (None, None, None);
    if let Some(Val::Dict(d)) = attr("prune_configs_by") {
        for (key, v) in d.borrow().iter() {
            match &*key.to_str() {
                "early_config_prune" => early_prune = Some(v.clone()),
                "perf_model" => perf_model = Some(v.clone()),
                "top_k" => top_k = Some(v.clone()),
                other => {
                    return Err(Exc::value_error(format!(
                        "prune_configs_by: unknown entry '{other}' (early_config_prune, perf_model, top_k)"
                    )))
                }
            }
        }
    }
    let ms = |n: &str, d: f64| -> R<f64> { attr(n).map(|v| to_f64(&v)).unwrap_or(Ok(d)) };
    let jit = k.jit.borrow().clone();
    let (key, ignored_keys): (Vec<String>, Vec<String>) = names(attr("key"))?
        .into_iter()
        .partition(|n| jit.param_index(n).is_some());
    let tuner = Autotuner {
        configs,
        key,
        ignored_keys,
        reset_to_zero: names(attr("reset_to_zero"))?,
        restore_value: names(attr("restore_value"))?,
        early_prune,
        perf_model,
        top_k,
        warmup: ms("warmup", TUNE_WARMUP_MS)?,
        rep: ms("rep", TUNE_REP_MS)?,
        cache: RefCell::new(HashMap::new()),
        best: RefCell::new(None),
        reported: RefCell::new(Default::default()),
    };
    for (what, list) in [
        ("reset_to_zero", &tuner.reset_to_zero),
        ("restore_value", &tuner.restore_value),
    ] {
        if let Some(bad) = list.iter().find(|n| jit.param_index(n).is_none()) {
            return Err(Exc::value_error(format!(
                "triton.autotune: {what} names '{bad}', which is not a parameter of {} ({})",
                jit.name,
                crate::kernels::param_list(&jit)
            )));
        }
    }
    *k.autotune.borrow_mut() = Some(Rc::new(tuner));
    Ok(Val::Kernel(k))
}

/// Argument names given as a list (or nothing).
fn names(v: Option<Val>) -> R<Vec<String>> {
    match v {
        None | Some(Val::None) => Ok(vec![]),
        Some(v) => Ok(crate::value::iterate(&v)?
            .iter()
            .map(|x| x.to_str().to_string())
            .collect()),
    }
}

/// Launch arguments with a config's meta-parameters and options added.
fn with_config(kwargs: &[(String, Val)], c: &Config) -> R<Vec<(String, Val)>> {
    let mut out = kwargs.to_vec();
    for (name, v) in &c.kwargs {
        if kwargs.iter().any(|(n, _)| n == name) {
            return Err(Exc::value_error(format!(
                "Conflicting meta-parameters: {name}. Make sure that you don't re-define auto-tuned symbols."
            )));
        }
        out.push((name.clone(), v.clone()));
    }
    out.push(("num_warps".into(), Val::Int(c.num_warps)));
    out.push(("num_stages".into(), Val::Int(c.num_stages)));
    if let Some(n) = c.maxnreg {
        out.push(("maxnreg".into(), Val::Int(n)));
    }
    Ok(out)
}

/// The tuning key: the `key` arguments' values and every tensor's dtype,
/// and whether it holds a tensor's identity (then it is kept in memory
/// only: the same tensor object never reaches another session).
fn tuning_key(t: &Autotuner, named: &[(String, Val)]) -> (String, bool) {
    let mut identity = false;
    let mut parts: Vec<String> = t
        .key
        .iter()
        .filter_map(|k| named.iter().find(|(n, _)| n == k))
        .map(|(_, v)| match v {
            // Triton keys a tensor named in `key` by the object itself, not
            // by its contents (whose repr would also copy a GPU tensor to
            // the host on every call): here by the storage and the view of
            // it, which a tensor keeps for its life.
            Val::Tensor(x) => {
                identity = true;
                format!(
                    "tensor@{:p}+{}{:?}{:?}",
                    Rc::as_ptr(&x.storage),
                    x.offset,
                    x.shape,
                    x.strides
                )
            }
            v => v.repr(),
        })
        .collect();
    for (_, v) in named {
        if let Val::Tensor(x) = v {
            parts.push(crate::tensor::torch_name(x.dtype).to_string());
        }
    }
    (parts.join(","), identity)
}

/// Tensors among the named arguments, by the names given.
fn tensors_named(names: &[String], named: &[(String, Val)]) -> Vec<Val> {
    names
        .iter()
        .filter_map(|n| named.iter().find(|(m, _)| m == n))
        .filter(|(_, v)| matches!(v, Val::Tensor(_)))
        .map(|(_, v)| v.clone())
        .collect()
}

fn method(s: &mut dyn Host, t: &Val, name: &str, args: Vec<Val>) -> R<Val> {
    s.call_method(t, name, args)
}

/// The call's arguments by parameter name (defaults filled in), as the
/// tuning key, pruning and `reset_to_zero` see them. Binding errors are left
/// to `prepare`, which reports them.
fn call_named(k: &KernelObj, args: &[Val], kwargs: &[(String, Val)]) -> Vec<(String, Val)> {
    let jit = k.jit.borrow();
    let defaults = k.defaults.borrow();
    jit.params
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let v = args
                .get(i)
                .cloned()
                .or_else(|| {
                    kwargs
                        .iter()
                        .find(|(n, _)| *n == p.name)
                        .map(|(_, v)| v.clone())
                })
                .or_else(|| defaults.get(&p.name).cloned())?;
            Some((p.name.clone(), v))
        })
        .collect()
}

/// `kernel[grid](...)` of an autotuned kernel.
pub fn launch_tuned(
    s: &mut dyn Host,
    k: &Rc<KernelObj>,
    grid: &Val,
    args: Vec<Val>,
    kwargs: Vec<(String, Val)>,
) -> R<Val> {
    let Some(t) = k.autotune.borrow().clone() else {
        return Err(Exc::new("InternalError", "launch_tuned without a tuner"));
    };
    let named = call_named(k, &args, &kwargs);
    let (key, identity) = tuning_key(&t, &named);
    let cached = t.cache.borrow().get(&key).cloned();
    let cached = cached.or_else(|| (!identity).then(|| from_disk(s, k, &t, &key)).flatten());
    // One config: nothing to choose, so nothing is timed (as in Triton).
    let only = (t.configs.len() == 1).then(|| t.configs[0].clone());
    let best = match cached.or(only) {
        Some(c) => c,
        None => {
            let best = tune(s, k, &t, grid, &args, &kwargs, &named)?;
            if let (Some(disk), false) = (&s.disk, identity) {
                disk.store_tuning(&disk_key(s, k, &t, &key), &text(&best));
            }
            best
        }
    };
    *t.best.borrow_mut() = Some(best.clone());
    pre_hook(s, &best, &named)?;
    let p = prepare(s, k, grid, args, with_config(&kwargs, &best)?)?;
    let c = crate::kernels::compiled(s, k, &p)?;
    run(s, k, &p, &c)
}

/// The on-disk key of a tuning result: the kernel (source, the functions and
/// constants it names), the configs offered, the tuning key and the device.
fn disk_key(s: &dyn Host, k: &KernelObj, t: &Autotuner, key: &str) -> String {
    let configs: Vec<String> = t.configs.iter().map(text).collect();
    let device = match &s.backend {
        crate::Backend::Cuda(g) => format!("{} {}", g.name, g.arch),
        crate::Backend::Cpu => "cpu".into(),
    };
    crate::disk_cache::DiskCache::kernel_key(&format!(
        "autotune|{}|{}|{key}|{device}",
        crate::kernels::source_key(&k.scope(s), &k.jit.borrow()),
        configs.join(";")
    ))
}

/// The best config stored on disk for this key, when it is still one of the
/// kernel's configs (remembered in memory too).
fn from_disk(s: &dyn Host, k: &KernelObj, t: &Autotuner, key: &str) -> Option<Rc<Config>> {
    let best = s.disk.as_ref()?.load_tuning(&disk_key(s, k, t, key))?;
    let c = t.configs.iter().find(|c| text(c) == best)?.clone();
    t.cache.borrow_mut().insert(key.to_string(), c.clone());
    Some(c)
}

/// The configs left after `prune_configs_by`. As in Triton,
/// `early_config_prune(configs, named_args, **kwargs)` gets the launch's
/// keyword arguments as keywords (`named_args` holds every argument).
fn pruned(
    s: &mut dyn Host,
    t: &Autotuner,
    named: &[(String, Val)],
    kwargs: &[(String, Val)],
) -> R<Vec<Rc<Config>>> {
    let mut configs = t.configs.clone();
    let as_vals =
        |cs: &[Rc<Config>]| Val::list(cs.iter().map(|c| Val::Config(c.clone())).collect());
    if let Some(f) = &t.early_prune {
        let out = s.call(
            f,
            vec![as_vals(&configs), Val::Dict(named_dict(named))],
            kwargs.to_vec(),
        )?;
        configs = crate::value::iterate(&out)?
            .into_iter()
            .filter_map(|v| match v {
                Val::Config(c) => Some(c),
                _ => None,
            })
            .collect();
    }
    if let (Some(model), Some(top_k)) = (&t.perf_model, &t.top_k) {
        let mut scored = vec![];
        for c in configs {
            let mut kw: Vec<(String, Val)> = named.to_vec();
            kw.extend(c.kwargs.iter().cloned());
            kw.push(("num_warps".into(), Val::Int(c.num_warps)));
            kw.push(("num_stages".into(), Val::Int(c.num_stages)));
            let est = to_f64(&s.call(model, vec![], kw)?)?;
            scored.push((est, c));
        }
        scored.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
        let n = match top_k {
            Val::Float(f) if *f <= 1.0 => ((scored.len() as f64) * f).ceil() as usize,
            v => crate::value::to_int(v)? as usize,
        };
        configs = scored.into_iter().take(n.max(1)).map(|(_, c)| c).collect();
    }
    if configs.is_empty() {
        return Err(Exc::value_error(
            "triton.autotune: prune_configs_by left no configs",
        ));
    }
    Ok(configs)
}

/// A config's `pre_hook`, called with every argument and the config's
/// meta-parameters by name.
fn pre_hook(s: &mut dyn Host, c: &Config, named: &[(String, Val)]) -> R<()> {
    let Some(h) = &c.pre_hook else {
        return Ok(());
    };
    let mut all = named.to_vec();
    all.extend(c.kwargs.iter().cloned());
    all.push(("num_warps".into(), Val::Int(c.num_warps)));
    all.push(("num_stages".into(), Val::Int(c.num_stages)));
    s.call(h, vec![Val::Dict(named_dict(&all))], vec![])?;
    Ok(())
}

fn named_dict(named: &[(String, Val)]) -> Rc<RefCell<Vec<(Val, Val)>>> {
    Rc::new(RefCell::new(
        named
            .iter()
            .map(|(n, v)| (Val::str(n), v.clone()))
            .collect(),
    ))
}

/// Time every config for one key and return the fastest.
#[allow(clippy::too_many_arguments)]
fn tune(
    s: &mut dyn Host,
    k: &Rc<KernelObj>,
    t: &Autotuner,
    grid: &Val,
    args: &[Val],
    kwargs: &[(String, Val)],
    named: &[(String, Val)],
) -> R<Rc<Config>> {
    let start = Instant::now();
    let name = k.jit.borrow().name.clone();
    if !t.ignored_keys.is_empty() {
        let note = format!(
            "autotune {name}: key names {} not among the kernel's parameters; ignored (as Triton ignores them)\n",
            t.ignored_keys.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ")
        );
        if t.reported.borrow_mut().insert(note.clone()) {
            s.emit_stream("stderr", &note);
        }
    }
    let configs = pruned(s, t, named, kwargs)?;
    let mut preps: Vec<Prepared> = vec![];
    for c in &configs {
        // A pre-hook may change what the launch specializes on (a
        // descriptor's block shape), so it runs before each preparation.
        pre_hook(s, c, named)?;
        preps.push(prepare(s, k, grid, args.to_vec(), with_config(kwargs, c)?)?);
    }
    let compiled = compile_all(s, k, &preps);
    let compile_s = start.elapsed().as_secs_f64();
    let zero = tensors_named(&t.reset_to_zero, named);
    // Tuning runs the kernel many times; afterwards the arguments it may
    // change (`restore_value`, and `reset_to_zero`, which is zeroed before
    // each timed run) get their contents from before tuning back, so the
    // real launch sees what the caller passed.
    let mut restore = tensors_named(&t.restore_value, named);
    restore.extend(zero.iter().cloned());
    let saved: Vec<Val> = restore
        .iter()
        .map(|v| method(s, v, "clone", vec![]))
        .collect::<R<_>>()?;
    // Tuning launches are not cross-checked against the CPU (the chosen
    // config's real launch is).
    let check = std::mem::replace(&mut s.check_gpu, false);
    let was_gpu = on_gpu(s);
    let mut timings: Vec<(f64, usize)> = vec![];
    let (mut notes, mut failed) = (vec![], vec![]);
    // With several GPUs of one model and nothing to reset or restore
    // between calls, the configs are timed side by side, one per device.
    // The launch's tensors must be on the current device, where the
    // first GPU's timing events are recorded.
    let current = s.current_device;
    let on_current = preps.iter().all(|p| {
        p.args.iter().all(|a| match a {
            KernelArg::Tensor(t) => {
                matches!(t.device, crate::tensor::Device::Cuda(d) if d == current)
            }
            _ => true,
        })
    });
    let spread = if on_current
        && zero.is_empty()
        && restore.is_empty()
        && configs.iter().all(|c| c.pre_hook.is_none())
    {
        s.bench_gpus()?
    } else {
        vec![]
    };
    let results: Vec<R<f64>> = if spread.len() > 1 {
        match spread_args(s, &spread, &preps) {
            Ok(per_device) => measure_over(s, k, t, &spread, &per_device, &preps, &compiled),
            Err(e) => {
                s.check_gpu = check;
                return Err(e);
            }
        }
    } else {
        vec![]
    };
    for (i, (p, c)) in preps.iter().zip(&compiled).enumerate() {
        if let Some(r) = results.get(i) {
            match r {
                Ok(ms) => timings.push((*ms, i)),
                Err(e) if e.kind == "KeyboardInterrupt" || (was_gpu && !on_gpu(s)) => {
                    s.check_gpu = check;
                    return Err(e.clone());
                }
                Err(e) => {
                    let note = format!("  {}: {}", text(&configs[i]), e.message);
                    if t.reported.borrow_mut().insert(note.clone()) {
                        notes.push(note);
                    }
                    failed.push(format!("  {}: {}", text(&configs[i]), e.message));
                }
            }
            continue;
        }
        let result = match c {
            Ok(c) => crate::bench::measure(s, t.warmup, t.rep, &mut |s| {
                for z in &zero {
                    method(s, z, "zero_", vec![])?;
                }
                pre_hook(s, &configs[i], named)?;
                run(s, k, p, c).map(|_| ())
            })
            .map(|times| crate::bench::quantile(&times, 0.5)),
            Err(e) => Err(e.clone()),
        };
        for (v, old) in restore.iter().zip(&saved) {
            method(s, v, "copy_", vec![old.clone()])?;
        }
        if start.elapsed().as_secs_f64() > 1.0 {
            s.progress(&format!("autotune {name}"), i + 1, preps.len());
        }
        match result {
            Ok(ms) => timings.push((ms, i)),
            // An interrupt or a lost GPU ends tuning; a config that does
            // not compile or launch is skipped.
            Err(e) if e.kind == "KeyboardInterrupt" || (was_gpu && !on_gpu(s)) => {
                s.check_gpu = check;
                return Err(e);
            }
            Err(e) => {
                let note = format!("  {}: {}", text(&configs[i]), e.message);
                if t.reported.borrow_mut().insert(note.clone()) {
                    notes.push(note);
                }
                failed.push(format!("  {}: {}", text(&configs[i]), e.message));
            }
        }
    }
    s.check_gpu = check;
    if !notes.is_empty() {
        s.emit_stream(
            "stderr",
            &format!(
                "autotune {name}: skipped {} of {} configs:\n{}\n",
                failed.len(),
                configs.len(),
                notes.join("\n")
            ),
        );
    }
    let Some(&(ms, best)) = timings
        .iter()
        .min_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal))
    else {
        // The same error everywhere (a kernel that does not compile) is
        // best shown as itself.
        if let Some(Err(e)) = compiled.first() {
            if compiled
                .iter()
                .all(|c| matches!(c, Err(x) if x.message == e.message))
            {
                return Err(e.clone());
            }
        }
        return Err(Exc::new(
            "RuntimeError",
            format!(
                "autotune {name}: none of the {} configs ran:\n{}",
                configs.len(),
                failed.join("\n")
            ),
        ));
    };
    let total = start.elapsed().as_secs_f64();
    if total > 1.0 {
        s.emit_stream(
            "stderr",
            &format!(
                "autotune {name}: {} configs in {total:.2} s (compiling {compile_s:.2} s{}); best {} at {ms:.3} ms\n",
                configs.len(),
                match spread.len() {
                    n if n > 1 => format!(", timed on {n} GPUs"),
                    _ => String::new(),
                },
                text(&configs[best])
            ),
        );
    }
    let (key, _) = tuning_key(t, named);
    t.cache.borrow_mut().insert(key, configs[best].clone());
    Ok(configs[best].clone())
}

fn on_gpu(s: &dyn Host) -> bool {
    matches!(s.backend, crate::Backend::Cuda(_))
}

/// The launch's tensor arguments copied to each GPU of `gpus` after the
/// first (the same tensors for every config: copied once), as argument lists
/// per device and config; the first device uses the originals.
fn spread_args(
    s: &mut dyn Host,
    gpus: &[Rc<tilebook_cuda::Gpu>],
    preps: &[Prepared],
) -> R<Vec<Vec<Vec<KernelArg>>>> {
    let mut per_device = vec![preps.iter().map(|p| p.args.clone()).collect::<Vec<_>>()];
    for g in &gpus[1..] {
        let mut copies: Vec<(*const crate::tensor::Tensor, Rc<crate::tensor::Tensor>)> = vec![];
        let mut lists = vec![];
        for p in preps {
            let mut args = vec![];
            for a in &p.args {
                args.push(match a {
                    KernelArg::Tensor(t) => {
                        let key = Rc::as_ptr(t);
                        let copy = match copies.iter().find(|(k, _)| *k == key) {
                            Some((_, c)) => c.clone(),
                            None => {
                                // Its owner's context first, so the device copy is found.
                                if let Some(owner) = s.gpu_of(&t.device)? {
                                    s.prepare_copy(&owner, g);
                                }
                                let storage = t
                                    .storage
                                    .copy_to_gpu(g)
                                    .map_err(|e| Exc::new("RuntimeError", e))?;
                                let mut c = t.with_device(crate::tensor::Device::Cuda(g.ordinal));
                                c.storage = storage;
                                let c = Rc::new(c);
                                copies.push((key, c.clone()));
                                c
                            }
                        };
                        KernelArg::Tensor(copy)
                    }
                    other => other.clone(),
                });
            }
            lists.push(args);
        }
        per_device.push(lists);
    }
    Ok(per_device)
}

/// Time the configs in rounds of one per GPU (`bench::measure_spread`);
/// returns each config's median, or why it failed.
fn measure_over(
    s: &mut dyn Host,
    k: &Rc<KernelObj>,
    t: &Autotuner,
    gpus: &[Rc<tilebook_cuda::Gpu>],
    per_device: &[Vec<Vec<KernelArg>>],
    preps: &[Prepared],
    compiled: &[R<Rc<crate::value::kernel::Compiled>>],
) -> Vec<R<f64>> {
    let n = gpus.len();
    let mut out: Vec<R<f64>> = compiled
        .iter()
        .map(|c| c.as_ref().map(|_| 0.0).map_err(|e| e.clone()))
        .collect();
    let runnable: Vec<usize> = (0..preps.len()).filter(|&i| compiled[i].is_ok()).collect();
    let name = k.jit.borrow().name.clone();
    let start = Instant::now();
    for (r, round) in runnable.chunks(n).enumerate() {
        let slots = &gpus[..round.len()];
        let times = crate::bench::measure_spread(s, t.warmup, t.rep, slots, &mut |s, slot| {
            let i = round[slot];
            let Ok(c) = &compiled[i] else {
                return Ok(());
            };
            run_with(s, k, &preps[i], c, &per_device[slot][i]).map(|_| ())
        });
        for (slot, r) in times.into_iter().enumerate() {
            out[round[slot]] = r.map(|times| crate::bench::quantile(&times, 0.5));
        }
        if start.elapsed().as_secs_f64() > 1.0 {
            s.progress(
                &format!("autotune {name}"),
                ((r + 1) * n).min(runnable.len()),
                runnable.len(),
            );
        }
    }
    out
}

/// A config as Triton prints it.
fn text(c: &Rc<Config>) -> String {
    Val::Config(c.clone()).to_str().to_string()
}
