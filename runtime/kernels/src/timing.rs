//! The log of a cell's launches behind the session's timing footer: per
//! kernel its launches, last grid, device events around the first launches
//! (wall time on the CPU backend) and compile or disk-load time. Launches
//! made while measuring (`do_bench`, `%timeit`, autotuning) are not logged:
//! the footer describes what the cell itself ran.

use crate::{Backend, Runtime};
use tilebook_cuda::Mark;

/// At most this many launches per cell get a time (device events, or wall
/// time on the CPU); later ones are only counted, so a loop of launches
/// stays cheap. Each timed GPU launch costs the worker two event records
/// (the events themselves are made with the context): on the H100 a loop
/// of 2000 launches whose first 63 were timed took 0.6 us more per launch
/// than the same loop untimed (bench/NOTES.md, session 29).
pub const TIMED_PER_CELL: usize = 16;

/// One kernel's launches in the current cell, gathered as they happen (a
/// loop of a million launches adds no entries, only counts).
pub struct KernelLaunches {
    pub name: String,
    pub launches: usize,
    pub grid: [u32; 3],
    pub compile_s: f64,
    /// Seconds spent loading specializations from the disk cache.
    pub load_s: f64,
    pub times: Vec<Time>,
}

pub enum Time {
    Gpu(Mark, Mark),
    Wall(f64),
}

impl Runtime {
    /// Whether the next launch should be timed for the footer.
    pub fn logging_launches(&self) -> bool {
        self.timing && self.measuring == 0
    }

    /// A start mark for a launch, when the footer wants one.
    pub fn launch_mark(&self) -> Option<Mark> {
        if !self.logging_launches() || self.timed_launches >= TIMED_PER_CELL {
            return None;
        }
        match &self.backend {
            Backend::Cuda(g) => g.mark().ok(),
            Backend::Cpu => None,
        }
    }

    pub fn log_launch(
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
}
