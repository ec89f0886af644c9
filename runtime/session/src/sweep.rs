//! The calls of a `Benchmark.run` sweep: one point after another, or spread
//! over the GPUs measurements use (`bench_devices`, as autotuning spreads
//! its configs).
//!
//! A sweep is one Python function called point by point, and each call
//! waits for its `do_bench` before going on, so the points cannot run side
//! by side as they stand. Spread, a round of points (one per GPU) runs in
//! three steps:
//! 1. each point runs on its GPU until its first `do_bench`, which keeps the
//!    function it was given and stops the point (`bench::SweepBench`); what
//!    the point printed is held back;
//! 2. the kept functions are measured side by side, one per GPU
//!    (`bench::measure_spread`, Triton's measurement);
//! 3. each point runs again from the start, its first `do_bench` answered
//!    from step 2, and its result is the point's value.
//!
//! A point on another GPU than the sweep's runs with that GPU current and
//! with tensors asked for on the sweep's device placed on its own
//! (`Runtime::device_remap`), so a benchmark written for
//! `DEVICE = cuda:0` measures there unchanged. The code before the first
//! `do_bench` runs twice (its output is shown once); a point that makes no
//! `do_bench`, or whose function catches the stop, runs once as usual.

use crate::bench::{self, Deferred, SweepBench, DEFERRED_KIND};
use crate::value::{Exc, Val, R};
use crate::{Engine, Output};
use std::rc::Rc;
use std::time::Instant;

/// The keyword arguments of every point, in order.
pub type Points = Vec<Vec<(String, Val)>>;

/// Call `f` for every point; its results in order. `name` labels progress.
pub fn run_points(s: &mut Engine, f: &Val, points: &Points, name: &str) -> R<Vec<Val>> {
    let gpus = s.bench_gpus()?;
    let two_pass_here = s.sweep_two_pass && gpus.len() < 2;
    let start = Instant::now();
    let mut out = Vec::with_capacity(points.len());
    if gpus.len() < 2 && !two_pass_here {
        for kw in points {
            s.check_interrupt()?;
            out.push(s.call(f, vec![], kw.clone())?);
            report(s, &start, name, out.len(), points.len());
        }
        return Ok(out);
    }
    // One slot per GPU; without two GPUs (the two-pass check on one
    // device) a single slot on the current device.
    let ordinals: Vec<u32> = match gpus.len() {
        0 | 1 => vec![s.current_device],
        _ => gpus.iter().map(|g| g.ordinal).collect(),
    };
    let base = s.current_device;
    for round in points.chunks(ordinals.len()) {
        let mut states = vec![];
        for (slot, kw) in round.iter().enumerate() {
            s.check_interrupt()?;
            states.push(first_pass(s, f, kw, base, ordinals[slot])?);
        }
        measure_round(s, &mut states, &gpus, &ordinals, base)?;
        for (slot, (kw, state)) in round.iter().zip(states).enumerate() {
            s.check_interrupt()?;
            let answer = match state {
                Point::Done(v, held) => {
                    s.replay_outputs(held);
                    out.push(v);
                    report(s, &start, name, out.len(), points.len());
                    continue;
                }
                Point::Failed(e, held) => {
                    s.replay_outputs(held);
                    return Err(e);
                }
                Point::Measured(times) => Some(SweepBench::Answer(Some(times))),
                Point::Deferred(_) | Point::Rerun => None,
            };
            s.sweep = answer;
            let r = on_slot(s, base, ordinals[slot], |s| s.call(f, vec![], kw.clone()));
            s.sweep = None;
            out.push(r?);
            report(s, &start, name, out.len(), points.len());
        }
    }
    Ok(out)
}

fn report(s: &mut Engine, start: &Instant, name: &str, done: usize, total: usize) {
    if start.elapsed().as_secs_f64() > 1.0 {
        s.progress(name, done, total);
    }
}

/// Where a point stands within its round.
enum Point {
    /// It finished without a `do_bench`: its value and what it printed.
    Done(Val, Vec<Output>),
    /// It failed before any `do_bench`: shown when its turn comes.
    Failed(Exc, Vec<Output>),
    /// Stopped at its first `do_bench`; measured next.
    Deferred(Deferred),
    /// Its `do_bench`'s sorted times, for the second pass.
    Measured(Vec<f64>),
    /// Run it once more as usual (its function caught the stop, or the
    /// measurement failed and the function should see that itself).
    Rerun,
}

/// Run `f` with GPU `ordinal` current and the sweep's device `base` mapped
/// to it; both restored after.
fn on_slot<T>(s: &mut Engine, base: u32, ordinal: u32, f: impl FnOnce(&mut Engine) -> T) -> T {
    let saved = (s.current_device, s.device_remap);
    s.current_device = ordinal;
    s.device_remap = (ordinal != base).then_some((base, ordinal));
    let r = f(s);
    (s.current_device, s.device_remap) = saved;
    r
}

/// Step 1 for one point: run it up to its first `do_bench`, quietly.
fn first_pass(s: &mut Engine, f: &Val, kw: &[(String, Val)], base: u32, ordinal: u32) -> R<Point> {
    let before = s.outputs_len();
    // Text printed now may be appended to the last stream output.
    let tail = match s.outputs.last() {
        Some(Output::Stream { text, .. }) => Some(text.len()),
        _ => None,
    };
    s.sweep = Some(SweepBench::Collect(None));
    s.measuring += 1;
    let r = on_slot(s, base, ordinal, |s| s.call(f, vec![], kw.to_vec()));
    s.flush_host_stream();
    let mut held = s.outputs.split_off(before.min(s.outputs.len()));
    if let (Some(n), Some(Output::Stream { name, text })) = (tail, s.outputs.last_mut()) {
        if text.len() > n {
            let more = text.split_off(n);
            held.insert(
                0,
                Output::Stream {
                    name: name.clone(),
                    text: more,
                },
            );
        }
    }
    let kept = match s.sweep.take() {
        Some(SweepBench::Collect(d)) => d,
        _ => None,
    };
    bench::end_quiet_stretch(s)?;
    Ok(match (r, kept) {
        (Err(e), _) if e.kind == "KeyboardInterrupt" => return Err(e),
        (Err(e), Some(d)) if e.kind == DEFERRED_KIND => Point::Deferred(d),
        (Err(e), None) => Point::Failed(e, held),
        (Ok(v), None) => Point::Done(v, held),
        // The function caught the stop and went on: run it as usual.
        (_, Some(_)) => Point::Rerun,
    })
}

/// Step 2: measure the round's deferred functions side by side, one per
/// GPU (on one device, one after another).
fn measure_round(
    s: &mut Engine,
    states: &mut [Point],
    gpus: &[Rc<tilebook_cuda::Gpu>],
    ordinals: &[u32],
    base: u32,
) -> R<()> {
    let mut items: Vec<(usize, Deferred)> = vec![];
    for (slot, st) in states.iter_mut().enumerate() {
        if let Point::Deferred(_) = st {
            if let Point::Deferred(d) = std::mem::replace(st, Point::Rerun) {
                items.push((slot, d));
            }
        }
    }
    if items.is_empty() {
        return Ok(());
    }
    let results: Vec<R<Vec<f64>>> = if gpus.len() >= 2 {
        let on: Vec<Rc<tilebook_cuda::Gpu>> = items.iter().map(|(k, _)| gpus[*k].clone()).collect();
        let warmup = items.iter().map(|(_, d)| d.warmup).fold(0.0, f64::max);
        let rep = items.iter().map(|(_, d)| d.rep).fold(0.0, f64::max);
        bench::measure_spread(s, warmup, rep, &on, &mut |h, i| {
            let s = tilebook_host::engine_of(h)?;
            let (slot, d) = &items[i];
            on_slot(s, base, ordinals[*slot], |s| {
                s.call(&d.f, vec![], vec![]).map(|_| ())
            })
        })
    } else {
        let mut rs = vec![];
        for (slot, d) in &items {
            let r = on_slot(s, base, ordinals[*slot], |s| {
                bench::measure(s, d.warmup, d.rep, &mut |h| {
                    h.call(&d.f, vec![], vec![]).map(|_| ())
                })
            });
            rs.push(r);
        }
        rs
    };
    for ((slot, _), r) in items.iter().zip(results) {
        states[*slot] = match r {
            Err(e) if e.kind == "KeyboardInterrupt" => return Err(e),
            Ok(times) if !times.is_empty() => Point::Measured(times),
            // The function meets its failure itself when run as usual.
            _ => Point::Rerun,
        };
    }
    Ok(())
}
