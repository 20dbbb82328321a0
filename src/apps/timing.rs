//! What an app's run took: set-up (uploads, kernel preparation and
//! compilation) apart from its iterations.

use std::time::Duration;

/// The wall time of an app's set-up and of each of its iterations. An
/// iteration's time is the interval between the host receiving its small
/// readback (a count, a residual) and the previous iteration's; the drivers
/// keep a few iterations enqueued ahead, so it is the device's pace, plus
/// whatever host overhead the queue does not hide.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timings {
    /// Uploading the inputs, preparing the launches (on CUDA this compiles
    /// the kernels, or loads them from the kernel cache) and any first pass
    /// before the iterations.
    pub setup: Duration,
    /// One entry per iteration, in order.
    pub iterations: Vec<Duration>,
}

impl Timings {
    /// The median iteration time (the upper one of an even count); `None`
    /// when nothing was iterated.
    pub fn median_iteration(&self) -> Option<Duration> {
        Self::median_of(&self.iterations)
    }

    /// The median of `times` (the upper one of an even count), `None` for
    /// none: of a part of a run's iterations.
    pub fn median_of(times: &[Duration]) -> Option<Duration> {
        let mut t = times.to_vec();
        t.sort_unstable();
        t.get(t.len() / 2).copied()
    }

    /// The iterations' total time.
    pub fn iterations_total(&self) -> Duration {
        self.iterations.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty_runs() {
        let ms = Duration::from_millis;
        let mut t = Timings {
            setup: ms(9),
            iterations: vec![ms(5), ms(1), ms(3)],
        };
        assert_eq!(t.median_iteration(), Some(ms(3)));
        assert_eq!(t.iterations_total(), ms(9));
        t.iterations.push(ms(4));
        assert_eq!(t.median_iteration(), Some(ms(4)));
        assert_eq!(Timings::default().median_iteration(), None);
    }
}
