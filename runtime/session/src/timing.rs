//! The per-kernel timing footer shown after a cell that launched kernels:
//! one line per kernel with its launches, last grid, GPU time from device
//! events (wall time on the CPU backend) and compile time when the cell
//! compiled it. `%timing off` turns it off. Launches made while measuring
//! (`do_bench`, `%timeit`, autotuning) are not logged: the footer describes
//! what the cell itself ran.

use crate::{Backend, Session};
use tilebook_cuda::Mark;

/// At most this many launches per cell get device events; later ones are
/// counted without a time (a loop of launches stays cheap).
const TIMED_PER_CELL: usize = 256;

/// One launch of the cell.
pub(crate) struct Launch {
    pub name: String,
    pub grid: [u32; 3],
    pub compile_s: f64,
    pub time: Time,
}

pub(crate) enum Time {
    Gpu(Mark, Mark),
    Wall(f64),
    Untimed,
}

impl Session {
    /// Whether the next launch should be timed for the footer.
    pub(crate) fn logging_launches(&self) -> bool {
        self.timing && self.measuring == 0
    }

    /// A start mark for a launch, when the footer wants one.
    pub(crate) fn launch_mark(&self) -> Option<Mark> {
        if !self.logging_launches() || self.launch_log.len() >= TIMED_PER_CELL {
            return None;
        }
        match &self.backend {
            Backend::Cuda(g) => g.mark().ok(),
            Backend::Cpu => None,
        }
    }

    pub(crate) fn log_launch(&mut self, name: &str, grid: [u32; 3], compile_s: f64, time: Time) {
        if self.logging_launches() {
            self.launch_log.push(Launch {
                name: name.to_string(),
                grid,
                compile_s,
                time,
            });
        }
    }

    /// The footer lines for the cell that just ran, clearing the log.
    pub(crate) fn timing_footer(&mut self) -> Option<String> {
        let log = std::mem::take(&mut self.launch_log);
        if log.is_empty() {
            return None;
        }
        // (name, launches, last grid, timed launches, ms, compile s), in first-launch order.
        let mut rows: Vec<(String, usize, [u32; 3], usize, f64, f64)> = vec![];
        let gpu = match &self.backend {
            Backend::Cuda(g) => Some(g.clone()),
            Backend::Cpu => None,
        };
        for l in log {
            let ms = match (&l.time, &gpu) {
                (Time::Gpu(a, b), Some(g)) => g.elapsed_ms(a, b).ok().map(f64::from),
                (Time::Wall(ms), _) => Some(*ms),
                _ => None,
            };
            let i = match rows.iter().position(|r| r.0 == l.name) {
                Some(i) => i,
                None => {
                    rows.push((l.name.clone(), 0, l.grid, 0, 0.0, 0.0));
                    rows.len() - 1
                }
            };
            let r = &mut rows[i];
            r.1 += 1;
            r.2 = l.grid;
            if let Some(ms) = ms {
                r.3 += 1;
                r.4 += ms;
            }
            r.5 += l.compile_s;
        }
        let clock = if gpu.is_some() { "GPU" } else { "CPU wall" };
        let lines: Vec<String> = rows
            .iter()
            .map(|(name, n, grid, timed, ms, compile)| {
                let grid = format!("({}, {}, {})", grid[0], grid[1], grid[2]);
                let times = if *n == 1 {
                    String::new()
                } else {
                    format!(" x{n}")
                };
                let time = match timed {
                    0 => "untimed".to_string(),
                    t if t == n => format!("{ms:.3} ms {clock}"),
                    t => format!("{ms:.3} ms {clock} (first {t} timed)"),
                };
                let compiled = match *compile {
                    c if c >= 1.0 => format!(", compiled in {c:.2} s"),
                    c if c > 0.0 => format!(", compiled in {:.1} ms", c * 1e3),
                    _ => String::new(),
                };
                format!("[{name}] grid {grid}{times}: {time}{compiled}")
            })
            .collect();
        Some(lines.join("\n"))
    }
}
