//! `torch.linspace` and `torch.logspace`: `steps` evenly spaced values
//! from `start` to `end` (both included), or `base` to those powers. As
//! torch computes them, the first half counts up from `start` and the
//! second half down from `end`, so both ends are exact.

use crate::args::Args;
use crate::registry::Entry;
use crate::tensor::Scalar;
use crate::tensor_lib::tensor_from;
use crate::value::{to_f64, to_int, Exc, Val, R};
use crate::Engine;
use tilebook_tir::DType;

pub const TABLE: &[Entry] = &[
    Entry {
        name: "torch.linspace",
        f: torch_spaced,
        doc: "torch.linspace(start, end, steps, dtype=None, device='cpu')\n`steps` evenly spaced values from start to end, both included.\n",
    },
    Entry {
        name: "torch.logspace",
        f: torch_spaced,
        doc: "torch.logspace(start, end, steps, base=10.0, dtype=None, device='cpu')\n`steps` values base ** x for x evenly spaced from start to end.\n",
    },
];

fn torch_spaced(s: &mut Engine, name: &str, a: Args) -> R<Val> {
    let start = to_f64(&a.req(0, "start")?)?;
    let end = to_f64(&a.req(1, "end")?)?;
    let steps = to_int(&a.req(2, "steps")?)?;
    let base = match name {
        "torch.logspace" => Some(
            a.get(3, "base")
                .map(|v| to_f64(&v))
                .transpose()?
                .unwrap_or(10.0),
        ),
        _ => None,
    };
    let steps = usize::try_from(steps).map_err(|_| {
        Exc::new(
            "RuntimeError",
            format!("{name}: number of steps must be non-negative"),
        )
    })?;
    let step = if steps > 1 {
        (end - start) / (steps - 1) as f64
    } else {
        0.0
    };
    let half = steps / 2;
    let mut i = 0usize;
    tensor_from(s, &a, vec![steps], DType::F32, &mut |_| {
        let x = if steps == 1 {
            start
        } else if i < half {
            start + step * i as f64
        } else {
            end - step * (steps - 1 - i) as f64
        };
        i += 1;
        Scalar::F(base.map_or(x, |b| b.powf(x)))
    })
}
