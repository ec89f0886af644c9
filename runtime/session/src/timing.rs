//! The per-kernel timing footer shown after a cell that launched kernels:
//! one line per kernel with its launches, last grid, GPU time from device
//! events (wall time on the CPU backend) and compile time when the cell
//! compiled it. `%timing off` turns it off. Launches made while measuring
//! (`do_bench`, `%timeit`, autotuning) are not logged: the footer describes
//! what the cell itself ran.

use crate::{Backend, Session};
use tilebook_cuda::Mark;

/// At most this many launches per cell get a time (device events, or wall
/// time on the CPU); later ones are only counted, so a loop of launches
/// stays cheap.
const TIMED_PER_CELL: usize = 256;

/// One kernel's launches in the current cell, gathered as they happen (a
/// loop of a million launches adds no entries, only counts).
pub(crate) struct KernelLaunches {
    pub name: String,
    pub launches: usize,
    pub grid: [u32; 3],
    pub compile_s: f64,
    /// Seconds spent loading specializations from the disk cache.
    pub load_s: f64,
    pub times: Vec<Time>,
}

pub(crate) enum Time {
    Gpu(Mark, Mark),
    Wall(f64),
}

impl Session {
    /// Whether the next launch should be timed for the footer.
    pub(crate) fn logging_launches(&self) -> bool {
        self.timing && self.measuring == 0
    }

    /// A start mark for a launch, when the footer wants one.
    pub(crate) fn launch_mark(&self) -> Option<Mark> {
        if !self.logging_launches() || self.timed_launches >= TIMED_PER_CELL {
            return None;
        }
        match &self.backend {
            Backend::Cuda(g) => g.mark().ok(),
            Backend::Cpu => None,
        }
    }

    pub(crate) fn log_launch(
        &mut self,
        name: &str,
        grid: [u32; 3],
        compile_s: f64,
        from_disk: bool,
        time: Option<Time>,
    ) {
        if !self.logging_launches() {
            return;
        }
        let i = match self.launch_log.iter().position(|r| r.name == name) {
            Some(i) => i,
            None => {
                self.launch_log.push(KernelLaunches {
                    name: name.to_string(),
                    launches: 0,
                    grid,
                    compile_s: 0.0,
                    load_s: 0.0,
                    times: vec![],
                });
                self.launch_log.len() - 1
            }
        };
        let r = &mut self.launch_log[i];
        r.launches += 1;
        r.grid = grid;
        if from_disk {
            r.load_s += compile_s;
        } else {
            r.compile_s += compile_s;
        }
        if let Some(t) = time.filter(|_| self.timed_launches < TIMED_PER_CELL) {
            self.timed_launches += 1;
            r.times.push(t);
        }
    }

    /// The footer lines for the cell that just ran, clearing the log.
    pub(crate) fn timing_footer(&mut self) -> Option<String> {
        let log = std::mem::take(&mut self.launch_log);
        self.timed_launches = 0;
        if log.is_empty() {
            return None;
        }
        let gpu = match &self.backend {
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
                let compiled = seconds("compiled", r.compile_s)
                    + &seconds("loaded from the disk cache", r.load_s);
                format!(
                    "[{}] grid ({}, {}, {}){times}: {time}{compiled}",
                    r.name, g[0], g[1], g[2]
                )
            })
            .collect();
        Some(lines.join("\n"))
    }
}
