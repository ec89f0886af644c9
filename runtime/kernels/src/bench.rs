//! `triton.testing.do_bench` with Triton's semantics: estimate one call's
//! time, then run warm-up and measured repetitions sized in milliseconds,
//! flushing the L2 cache before each measured call and timing each with
//! device events (wall clock on the CPU backend). Returns the mean by default,
//! `return_mode` ("min", "max", "mean", "median", "all") or `quantiles`.

use crate::value::R;
use crate::value::{to_f64, Args};
use crate::value::{Exc, Val};
use crate::{Backend, Host};
use std::time::Instant;

/// Milliseconds of one call of `f`, with the L2 cache flushed first on the
/// GPU (device events) or by wall clock on the CPU backend.
fn time_once(s: &mut dyn Host, f: &mut dyn FnMut(&mut dyn Host) -> R<()>) -> R<f64> {
    match s.backend.clone() {
        Backend::Cuda(g) => {
            if s.l2_flush.is_none() {
                s.l2_flush = Some(
                    g.alloc(256 << 20)
                        .map_err(|e| Exc::new("RuntimeError", e))?,
                );
            }
            if let Some(buf) = s.l2_flush.as_mut() {
                g.zero(buf).map_err(|e| Exc::new("RuntimeError", e))?;
            }
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
        Backend::Cpu => {
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
    let times = measure(s, warmup, rep, &mut |s| {
        s.call(&f, vec![], vec![]).map(|_| ())
    })?;
    let q = |p: f64| quantile(&times, p);
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
    Ok(match mode.as_str() {
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
