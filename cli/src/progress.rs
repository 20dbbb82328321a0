//! Progress of long CPU runs: a bar on stderr that appears only when the
//! run has taken more than about a second and stderr is a terminal, so short
//! runs and piped output stay exactly as they were.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Runs shorter than this show no bar.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// Steps (iterations, sweeps) of a run, counted as they finish.
pub struct Steps {
    bar: ProgressBar,
    start: Instant,
    shown: bool,
    enabled: bool,
}

impl Steps {
    /// `total` steps when known (SpMV repetitions, PageRank iterations), or
    /// `None` for runs to a fixed point (sssp, bfs, cc), which show a count
    /// of rounds.
    pub fn new(label: &str, total: Option<u64>) -> Self {
        let bar = match total {
            Some(n) => ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::hidden()),
            None => ProgressBar::hidden(),
        };
        let template = match total {
            Some(_) => format!("{label} [{{elapsed_precise}}] {{wide_bar}} {{pos}}/{{len}}"),
            None => format!("{label} [{{elapsed_precise}}] {{spinner}} {{pos}} rounds"),
        };
        if let Ok(style) = ProgressStyle::with_template(&template) {
            bar.set_style(style);
        }
        Steps {
            bar,
            start: Instant::now(),
            shown: false,
            enabled: std::io::stderr().is_terminal(),
        }
    }

    /// One more step done.
    pub fn step(&mut self) {
        self.bar.inc(1);
        self.show_if_long();
    }

    /// `done` steps done in all (a driver's rounds, reported per
    /// synchronisation).
    pub fn reach(&mut self, done: u64) {
        self.bar.set_position(done);
        self.show_if_long();
    }

    /// Draws the bar once the run has taken [`SHOW_AFTER`] on a terminal.
    fn show_if_long(&mut self) {
        if self.enabled && !self.shown && self.start.elapsed() >= SHOW_AFTER {
            self.shown = true;
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }
}

impl Drop for Steps {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run to a fixed point reports its rounds by position, and the
    /// count shows once the run is past a second on a terminal.
    #[test]
    fn rounds_reached_show_after_a_second_on_a_terminal() {
        let mut steps = Steps::new("sssp", None);
        steps.enabled = true;
        steps.reach(3);
        assert!(!steps.shown, "a short run shows nothing");
        assert_eq!(steps.bar.position(), 3);
        steps.start -= SHOW_AFTER;
        steps.reach(40);
        assert!(steps.shown);
        assert_eq!(steps.bar.position(), 40);
        let mut piped = Steps::new("bfs", None);
        piped.enabled = false;
        piped.start -= SHOW_AFTER;
        piped.reach(7);
        assert!(!piped.shown, "nothing on a pipe");
    }
}
