//! Progress bars on stderr for terminals (`indicatif`), fed by the session's
//! structured progress reports. A bar is cleared when its operation
//! finishes, and after every cell (an interrupted sweep leaves none behind).

use indicatif::{ProgressBar, ProgressStyle};
use std::cell::RefCell;
use std::io::IsTerminal;
use std::rc::Rc;
use tilebook_session::{Progress, ProgressSink};

/// The bar of the operation in progress, shared with the front end.
#[derive(Clone, Default)]
pub struct Bars(Rc<RefCell<Option<(String, ProgressBar)>>>);

impl Bars {
    /// A sink drawing bars, or `None` when stderr is not a terminal.
    pub fn sink(&self) -> Option<ProgressSink> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let bars = self.0.clone();
        Some(Box::new(move |p: &Progress| {
            let mut slot = bars.borrow_mut();
            if slot.as_ref().is_some_and(|(label, _)| *label != p.label) {
                if let Some((_, old)) = slot.take() {
                    old.finish_and_clear();
                }
            }
            let (_, bar) = slot.get_or_insert_with(|| {
                let bar = ProgressBar::new(p.total as u64);
                let style = ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} {elapsed}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> ");
                bar.set_style(style);
                bar.set_message(p.label.clone());
                (p.label.clone(), bar)
            });
            bar.set_length(p.total as u64);
            bar.set_position(p.done as u64);
            if p.finished() {
                bar.finish_and_clear();
                *slot = None;
            }
        }))
    }

    /// Remove a bar left by an operation that did not finish.
    pub fn clear(&self) {
        if let Some((_, bar)) = self.0.borrow_mut().take() {
            bar.finish_and_clear();
        }
    }
}
