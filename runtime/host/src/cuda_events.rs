//! The natives behind `torch.cuda.Event` (the class itself is Python, in
//! the prelude): a recorded event is a device event on the stream of the
//! GPU it was recorded on, or, on the CPU backend (where a launch returns
//! when its kernel has run), the host clock at the moment of recording.
//! The session keeps each event's mark under a number the Python object
//! holds; `__del__` gives it back.

use crate::args::{to_int, Args};
use crate::registry::Entry;
use crate::value::{Exc, Val, R};
use crate::Engine;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Instant;
use tilebook_kernels::gpu_fault::GpuFault;

/// One recorded event.
enum EventMark {
    Gpu(Rc<tilebook_cuda::Gpu>, tilebook_cuda::Mark),
    Host(Instant),
}

/// The session's recorded events, by number.
#[derive(Default)]
pub struct Events {
    marks: HashMap<i64, EventMark>,
    next: i64,
}

pub const TABLE: &[Entry] = &[
    Entry {
        name: "torch.cuda._event_record",
        f: event_record,
        doc: "torch.cuda._event_record(number=None)\nRecord an event now on the current GPU's stream (the host clock on the CPU backend); returns its number (the one given, re-recorded, or a new one). Used by torch.cuda.Event.record.\n",
    },
    Entry {
        name: "torch.cuda._event_elapsed",
        f: event_elapsed,
        doc: "torch.cuda._event_elapsed(start, end)\nMilliseconds between two recorded events, waiting for the second. Used by torch.cuda.Event.elapsed_time.\n",
    },
    Entry {
        name: "torch.cuda._event_wait",
        f: event_wait,
        doc: "torch.cuda._event_wait(number)\nWait until the work queued before the event has finished. Used by torch.cuda.Event.synchronize.\n",
    },
    Entry {
        name: "torch.cuda._event_free",
        f: event_free,
        doc: "torch.cuda._event_free(number)\nForget a recorded event. Used when a torch.cuda.Event goes away.\n",
    },
];

fn number(a: &Args, i: usize, name: &str) -> R<Option<i64>> {
    match a.get(i, name) {
        None | Some(Val::None) => Ok(None),
        Some(v) => to_int(&v).map(Some),
    }
}

fn event_record(s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    let device = s.current_device;
    let mark = match s.gpu(device)? {
        Some(g) => match g.mark() {
            Ok(m) => EventMark::Gpu(g, m),
            Err(e) => return Err(s.gpu_failure(Exc::new("RuntimeError", e))),
        },
        None => EventMark::Host(Instant::now()),
    };
    let n = match number(&a, 0, "number")? {
        Some(n) => n,
        None => {
            s.events.next += 1;
            s.events.next
        }
    };
    s.events.marks.insert(n, mark);
    Ok(Val::Int(n))
}

fn not_recorded() -> Exc {
    Exc::new(
        "RuntimeError",
        "Both events must be recorded before calculating elapsed time.",
    )
}

fn recorded(s: &Engine, n: i64) -> R<&EventMark> {
    s.events.marks.get(&n).ok_or_else(not_recorded)
}

fn event_elapsed(s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    let (Some(x), Some(y)) = (number(&a, 0, "start")?, number(&a, 1, "end")?) else {
        return Err(not_recorded());
    };
    let ms =
        match (recorded(s, x)?, recorded(s, y)?) {
            (EventMark::Host(t0), EventMark::Host(t1)) => {
                let ms = if t1 >= t0 {
                    t1.duration_since(*t0).as_secs_f64() * 1e3
                } else {
                    -(t0.duration_since(*t1).as_secs_f64() * 1e3)
                };
                Ok(ms)
            }
            (EventMark::Gpu(g0, m0), EventMark::Gpu(g1, m1)) if g0.ordinal == g1.ordinal => {
                g0.elapsed_ms(m0, m1).map(|ms| ms as f64)
            }
            (EventMark::Gpu(g0, _), EventMark::Gpu(g1, _)) => {
                return Err(Exc::value_error(format!(
                "elapsed_time: the events were recorded on different devices (cuda:{} and cuda:{})",
                g0.ordinal, g1.ordinal
            )))
            }
            _ => return Err(Exc::value_error(
                "elapsed_time: one event was recorded on the GPU and the other on the CPU backend",
            )),
        };
    match ms {
        Ok(ms) => Ok(Val::Float(ms)),
        Err(e) => Err(s.gpu_failure(Exc::new("RuntimeError", e))),
    }
}

fn event_wait(s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    let Some(n) = number(&a, 0, "number")? else {
        return Ok(Val::None);
    };
    let r = match s.events.marks.get(&n) {
        Some(EventMark::Gpu(g, m)) => g.elapsed_ms(m, m).map(|_| ()),
        _ => Ok(()),
    };
    r.map(|_| Val::None)
        .map_err(|e| s.gpu_failure(Exc::new("RuntimeError", e)))
}

fn event_free(s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    if let Some(n) = number(&a, 0, "number")? {
        s.events.marks.remove(&n);
    }
    Ok(Val::None)
}
