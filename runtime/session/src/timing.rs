//! The per-kernel timing footer shown after a cell that launched kernels:
//! one line per kernel with its launches, last grid, GPU time from device
//! events (wall time on the CPU backend) and compile time when the cell
//! compiled it. `%timing off` turns it off. The log itself is gathered by
//! the kernels runtime (`tilebook_kernels::timing`).

use tilebook_kernels::timing::Time;
use tilebook_kernels::{Backend, Runtime};

/// The footer lines for the cell that just ran, clearing the log.
pub(crate) fn footer(rt: &mut Runtime) -> Option<String> {
    let log = std::mem::take(&mut rt.launch_log);
    rt.timed_launches = 0;
    if log.is_empty() {
        return None;
    }
    let gpu = match &rt.backend {
        Backend::Cuda(g) => Some(g.clone()),
        Backend::Cpu => None,
    };
    let clock = if gpu.is_some() { "GPU" } else { "CPU wall" };
    let lines: Vec<String> = log
        .iter()
        .map(|r| {
            let ms: Vec<f64> = r
                .times
                .iter()
                .filter_map(|t| match (t, &gpu) {
                    (Time::Gpu(a, b), Some(g)) => g.elapsed_ms(a, b).ok().map(f64::from),
                    (Time::Wall(ms), _) => Some(*ms),
                    _ => None,
                })
                .collect();
            let total: f64 = ms.iter().sum();
            let g = r.grid;
            let times = if r.launches == 1 {
                String::new()
            } else {
                format!(" x{}", r.launches)
            };
            let time = match ms.len() {
                0 => "untimed".to_string(),
                t if t == r.launches => format!("{total:.3} ms {clock}"),
                t => format!("{total:.3} ms {clock} (first {t} timed)"),
            };
            let seconds = |what: &str, c: f64| match c {
                c if c >= 1.0 => format!(", {what} in {c:.2} s"),
                c if c > 0.0 => format!(", {what} in {:.1} ms", c * 1e3),
                _ => String::new(),
            };
            let compiled =
                seconds("compiled", r.compile_s) + &seconds("loaded from the disk cache", r.load_s);
            format!(
                "[{}] grid ({}, {}, {}){times}: {time}{compiled}",
                r.name, g[0], g[1], g[2]
            )
        })
        .collect();
    Some(lines.join("\n"))
}
