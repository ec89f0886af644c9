//! `triton.testing.do_bench` with Triton's semantics: estimate one call's
//! time, then run warm-up and measured repetitions sized in milliseconds,
//! flushing the L2 cache before each measured call and timing each with
//! device events (wall clock on the CPU backend). Returns the mean by default,
//! `return_mode` ("min", "max", "mean", "median", "all") or `quantiles`.

use crate::value::R;
use crate::value::{to_f64, Args};
use crate::value::{Exc, Val};
use crate::Host;
use std::time::Instant;

/// Overwrite GPU `g`'s L2 flush buffer (allocated on first use).
pub(crate) fn flush_l2(s: &mut dyn Host, g: &tilebook_cuda::Gpu) -> R<()> {
    let rt = |e: String| Exc::new("RuntimeError", e);
    if !s.l2_flush.iter().any(|(o, _)| *o == g.ordinal) {
        let buf = g.alloc(256 << 20).map_err(rt)?;
        s.l2_flush.push((g.ordinal, buf));
    }
    if let Some((_, buf)) = s.l2_flush.iter_mut().find(|(o, _)| *o == g.ordinal) {
        g.zero(buf).map_err(rt)?;
    }
    Ok(())
}

/// Milliseconds of one call of `f`, with the L2 cache flushed first on the
/// GPU (device events on the current device) or by wall clock on the CPU
/// backend.
fn time_once(s: &mut dyn Host, f: &mut dyn FnMut(&mut dyn Host) -> R<()>) -> R<f64> {
    let current = s.current_device;
    match s.gpu(current)? {
        Some(g) => {
            flush_l2(s, &g)?;
            let mut inner = Ok(());
            let (_, ms) = g
                .time(|| {
                    inner = f(s);
                    Ok(())
                })
                .map_err(|e| Exc::new("RuntimeError", e))?;
            inner?;
            Ok(ms as f64)
        }
        None => {
            let t = Instant::now();
            f(s)?;
            Ok(t.elapsed().as_secs_f64() * 1e3)
        }
    }
}

/// Triton's measurement: estimate one call from five, then run `warmup` ms
/// of warm-up calls and `rep` ms of measured ones. Returns the measured
/// times in milliseconds, sorted.
pub fn measure(
    s: &mut dyn Host,
    warmup: f64,
    rep: f64,
    f: &mut dyn FnMut(&mut dyn Host) -> R<()>,
) -> R<Vec<f64>> {
    s.measuring += 1;
    let r = measure_loop(s, warmup, rep, f);
    s.measuring -= 1;
    if s.measuring == 0 {
        // Checked GPU mode: a bad access in the measured launches is raised now.
        crate::kernels::finish_pending_check(s)?;
    }
    r
}

fn measure_loop(
    s: &mut dyn Host,
    warmup: f64,
    rep: f64,
    f: &mut dyn FnMut(&mut dyn Host) -> R<()>,
) -> R<Vec<f64>> {
    time_once(s, f)?;
    // The estimate counts everything a repetition costs (the L2 flush, the
    // events, the host's part), as Triton's does, so that `rep` ms of
    // repetitions take about `rep` ms.
    let t = Instant::now();
    for _ in 0..5 {
        time_once(s, f)?;
    }
    let est = (t.elapsed().as_secs_f64() * 1e3 / 5.0).max(1e-4);
    let n_warmup = ((warmup / est) as usize).clamp(1, 10_000);
    let n_rep = ((rep / est) as usize).clamp(1, 10_000);
    for _ in 0..n_warmup {
        s.check_interrupt()?;
        f(s)?;
    }
    let mut times = Vec::with_capacity(n_rep);
    for _ in 0..n_rep {
        s.check_interrupt()?;
        times.push(time_once(s, f)?);
    }
    times.sort_by(|x, y| x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal));
    Ok(times)
}

/// The `p` quantile of sorted `times`, interpolating linearly.
pub fn quantile(times: &[f64], p: f64) -> f64 {
    let pos = p * (times.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    times[lo] + (times[hi] - times[lo]) * (pos - lo as f64)
}

/// `Benchmark.run` spread over GPUs (`session/perf.rs`) runs each sweep
/// point twice: the first pass stops the point at its first `do_bench`
/// and keeps the function, the points of a round are measured side by side
/// (`measure_spread`), and the second pass runs each point again with that
/// `do_bench` answered from its measurement.
pub enum SweepBench {
    /// First pass: the first `do_bench` is kept here and stops the point.
    Collect(Option<Deferred>),
    /// Second pass: the first `do_bench` returns from these sorted times
    /// (taken when used; a later `do_bench` measures as usual).
    Answer(Option<Vec<f64>>),
}

/// A sweep point's `do_bench`, to be measured beside the round's others.
pub struct Deferred {
    pub f: Val,
    pub warmup: f64,
    pub rep: f64,
}

/// The exception that stops a sweep point at its deferred `do_bench`: a
/// `GeneratorExit`, so an `except Exception` in the benchmark function
/// does not take it for the function's own error.
pub const DEFERRED_KIND: &str = "GeneratorExit";

pub fn do_bench(s: &mut dyn Host, a: &Args) -> R<Val> {
    let f = a.req(0, "fn")?;
    let warmup = a
        .get(1, "warmup")
        .map(|v| to_f64(&v))
        .transpose()?
        .unwrap_or(25.0);
    let rep = a
        .get(2, "rep")
        .map(|v| to_f64(&v))
        .transpose()?
        .unwrap_or(100.0);
    let mode = a
        .kw("return_mode")
        .map(|v| v.to_str())
        .unwrap_or_else(|| "mean".into());
    let quantiles = a.kw("quantiles").filter(|v| !matches!(v, Val::None));
    let answered = match s.sweep.as_mut() {
        Some(SweepBench::Collect(slot)) => {
            if slot.is_none() {
                *slot = Some(Deferred { f, warmup, rep });
            }
            return Err(Exc::new(
                DEFERRED_KIND,
                "do_bench deferred: Benchmark.run measures this sweep point beside others on another GPU",
            ));
        }
        Some(SweepBench::Answer(times)) => times.take(),
        None => None,
    };
    let times = match answered {
        // Called once still: what the function computes (an output the
        // benchmark checks after) is there as after a measurement.
        Some(t) if !t.is_empty() => {
            s.call(&f, vec![], vec![])?;
            t
        }
        _ => measure(s, warmup, rep, &mut |s| {
            s.call(&f, vec![], vec![]).map(|_| ())
        })?,
    };
    summarize(&times, &mode, quantiles)
}

/// `do_bench`'s answer from sorted times: the `quantiles` asked for, or the
/// `return_mode` statistic.
fn summarize(times: &[f64], mode: &str, quantiles: Option<Val>) -> R<Val> {
    let q = |p: f64| quantile(times, p);
    if let Some(qs) = quantiles {
        let items = crate::value::iterate(&qs)?;
        let vals: Vec<Val> = items
            .iter()
            .map(|v| to_f64(v).map(|p| Val::Float(q(p))))
            .collect::<R<_>>()?;
        return Ok(if vals.len() == 1 {
            vals[0].clone()
        } else {
            Val::list(vals)
        });
    }
    Ok(match mode {
        "min" => Val::Float(times[0]),
        "max" => Val::Float(times[times.len() - 1]),
        "median" => Val::Float(q(0.5)),
        "all" => Val::list(times.iter().map(|&t| Val::Float(t)).collect()),
        "mean" => Val::Float(times.iter().sum::<f64>() / times.len() as f64),
        other => {
            return Err(Exc::value_error(format!(
                "return_mode must be min, max, mean, median or all, got '{other}'"
            )))
        }
    })
}

/// Leave a stretch run as a measurement (`measuring` raised, outputs kept
/// from the live sink): a checked GPU launch in it is read now.
pub fn end_quiet_stretch(s: &mut dyn Host) -> R<()> {
    s.measuring = s.measuring.saturating_sub(1);
    if s.measuring == 0 {
        crate::kernels::finish_pending_check(s)?;
    }
    Ok(())
}

/// Triton's measurement for several calls at once, call `i` on GPU
/// `gpus[i]` (autotuning's configs spread over devices). Each step queues
/// every call with its L2 flush and events before waiting for any, so the
/// GPUs run side by side from this one host thread; the step count is
/// sized as `measure` sizes it, from the time a step takes. Returns each
/// call's sorted times, or the error that stopped it (the others go on).
pub fn measure_spread(
    s: &mut dyn Host,
    warmup: f64,
    rep: f64,
    gpus: &[std::rc::Rc<tilebook_cuda::Gpu>],
    f: &mut dyn FnMut(&mut dyn Host, usize) -> R<()>,
) -> Vec<R<Vec<f64>>> {
    s.measuring += 1;
    let mut out: Vec<R<Vec<f64>>> = gpus.iter().map(|_| Ok(vec![])).collect();
    let r = spread_loop(s, warmup, rep, gpus, f, &mut out);
    s.measuring -= 1;
    let end = if s.measuring == 0 {
        crate::kernels::finish_pending_check(s)
    } else {
        Ok(())
    };
    // An interrupt (or a failed pending check) ends every call.
    if let Err(e) = r.and(end) {
        return gpus.iter().map(|_| Err(e.clone())).collect();
    }
    for times in out.iter_mut().flatten() {
        times.sort_by(|x, y| x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal));
    }
    out
}

fn spread_loop(
    s: &mut dyn Host,
    warmup: f64,
    rep: f64,
    gpus: &[std::rc::Rc<tilebook_cuda::Gpu>],
    f: &mut dyn FnMut(&mut dyn Host, usize) -> R<()>,
    out: &mut [R<Vec<f64>>],
) -> R<()> {
    let rt = |e: String| Exc::new("RuntimeError", e);
    // One step: every live call once; `timed` records its time.
    let mut step = |s: &mut dyn Host, out: &mut [R<Vec<f64>>], timed: bool| -> R<()> {
        let mut marks = vec![];
        for (i, g) in gpus.iter().enumerate() {
            if out[i].is_err() {
                continue;
            }
            let r = (|| {
                if !timed {
                    return f(s, i).map(|_| None);
                }
                flush_l2(s, g)?;
                let a = g.mark().map_err(rt)?;
                f(s, i)?;
                let b = g.mark().map_err(rt)?;
                Ok(Some((a, b)))
            })();
            match r {
                Ok(m) => marks.push((i, m)),
                Err(e) if e.kind == "KeyboardInterrupt" => return Err(e),
                Err(e) => out[i] = Err(e),
            }
        }
        for (i, m) in marks {
            if let (Some((a, b)), Ok(times)) = (m, &mut out[i]) {
                match gpus[i].elapsed_ms(&a, &b) {
                    Ok(ms) => times.push(ms as f64),
                    Err(e) => out[i] = Err(rt(e)),
                }
            }
        }
        Ok(())
    };
    step(s, out, true)?;
    let t = Instant::now();
    for _ in 0..5 {
        step(s, out, true)?;
    }
    let est = (t.elapsed().as_secs_f64() * 1e3 / 5.0).max(1e-4);
    let n_warmup = ((warmup / est) as usize).clamp(1, 10_000);
    let n_rep = ((rep / est) as usize).clamp(1, 10_000);
    for _ in 0..n_warmup {
        s.check_interrupt()?;
        step(s, out, false)?;
    }
    // The estimate's steps were warm-up too.
    for times in out.iter_mut().flatten() {
        times.clear();
    }
    for _ in 0..n_rep {
        s.check_interrupt()?;
        step(s, out, true)?;
    }
    Ok(())
}
