//! For a single-launch schedule whose automatic split packed warps by work:
//! the warp budgets, the serial-fallback bound and the device queue,
//! timed, the fastest kept.

use crate::config::LaunchConfig;
use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::driver::event_timer::EventTimer;
use crate::throttle::handle::{Runs, Schedule, Throttled};
use warpfit_runtime::Result;

impl Throttled {
    /// A single-launch schedule `s` (timed at `ms`) whose automatic split
    /// packed its warps by work, timed again under the wider budgets of
    /// `split_policy::budgets_to_time` over the same layout and serial bound, then,
    /// where the split raised that bound, at the fastest budget under the
    /// configured one, then with its groups dequeued (`Split::Queued`):
    /// the fastest with its time. Every budget timed goes to
    /// `budget_profile`, every serial bound to `serial_profile`, the queue
    /// to `queue_profile`.
    pub(in crate::throttle) fn fastest_budget(
        &mut self,
        dev: &CudaDevice,
        s: Schedule,
        ms: f64,
        timer: &EventTimer,
        snap: &[(usize, DeviceBuffer<u8>)],
    ) -> Result<(Schedule, f64)> {
        let (budgets, serial_max) = match &s.runs {
            Runs::Single(p) => (
                crate::launch::split_policy::budgets_to_time(p.chosen_split()),
                p.cte_serial_max(),
            ),
            _ => return Ok((s, ms)),
        };
        if budgets.is_empty() {
            return Ok((s, ms));
        }
        let policy = s.policy;
        self.report.budget_profile.push((
            policy,
            crate::launch::split_policy::PACKED_WARP_BUDGET,
            ms,
        ));
        let mut best = (s, ms, None);
        for &b in budgets {
            let config = LaunchConfig {
                split: crate::config::Split::Budget(b),
                cte_serial_max: serial_max,
                ..self.config
            };
            let (wider, wider_ms) = self.timed_like(dev, &best.0, &config, timer, snap)?;
            self.report.budget_profile.push((policy, b, wider_ms));
            if wider_ms < best.1 {
                best = (wider, wider_ms, Some(config));
            }
        }
        // The automatic split raises the serial-fallback bound where the
        // first gathers of neighbouring tasks are local, which a mesh's
        // rows gain from; a level-ordered power-law matrix passes the same
        // probe but loses a little (BENCHMARKS.md, "Where the remaining
        // time goes"), so the configured bound is timed too, at the
        // fastest budget.
        let configured = self.config.cte_serial_max;
        if serial_max > configured {
            let budget = match best.2 {
                Some(LaunchConfig {
                    split: crate::config::Split::Budget(b),
                    ..
                }) => b,
                _ => crate::launch::split_policy::PACKED_WARP_BUDGET,
            };
            let config = LaunchConfig {
                split: crate::config::Split::Budget(budget),
                cte_serial_max: configured,
                ..self.config
            };
            let (serial, serial_ms) = self.timed_like(dev, &best.0, &config, timer, snap)?;
            self.report.serial_profile.extend([
                (policy, serial_max, best.1),
                (policy, configured, serial_ms),
            ]);
            if serial_ms < best.1 {
                best = (serial, serial_ms, Some(config));
            }
        }
        // The fastest configuration once more, its groups dequeued by a
        // persistent grid (`Split::Queued`): faster where warps of a block
        // finish far apart, slower where neighbouring warps shared lines.
        let (budget, serial) = match best.2 {
            Some(LaunchConfig {
                split: crate::config::Split::Budget(b),
                cte_serial_max,
                ..
            }) => (b, cte_serial_max),
            _ => (crate::launch::split_policy::PACKED_WARP_BUDGET, serial_max),
        };
        let config = LaunchConfig {
            split: crate::config::Split::Queued(budget),
            cte_serial_max: serial,
            ..self.config
        };
        let (queued, queued_ms) = self.timed_like(dev, &best.0, &config, timer, snap)?;
        self.report.queue_profile.push((policy, best.1, queued_ms));
        if queued_ms < best.1 {
            best = (queued, queued_ms, Some(config));
        }
        if let Some(config) = best.2 {
            self.kept_configs.retain(|(p, _)| *p != policy);
            self.kept_configs.push((policy, config));
        }
        Ok((best.0, best.1))
    }
}
