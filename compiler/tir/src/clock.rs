//! Wall-clock time per named compilation stage, so that every backend reports
//! where a first launch spends its time in the same shape (`kernel.stages`,
//! `TILEBOOK_TIME_STAGES=1`).

use std::time::Instant;

/// Laps of a stopwatch, each named after the stage that just finished.
pub struct StageClock {
    last: Instant,
    pub laps: Vec<(&'static str, f64)>,
}

impl Default for StageClock {
    fn default() -> Self {
        Self::new()
    }
}

impl StageClock {
    pub fn new() -> StageClock {
        StageClock {
            last: Instant::now(),
            laps: Vec::new(),
        }
    }

    /// Close the stage `name` (time since the previous lap) and start the next.
    pub fn lap(&mut self, name: &'static str) {
        let now = Instant::now();
        self.laps
            .push((name, now.duration_since(self.last).as_secs_f64()));
        self.last = now;
    }

    /// Start the next stage now without recording a lap (after laps that were
    /// measured elsewhere were appended).
    pub fn restart(&mut self) {
        self.last = Instant::now();
    }
}
