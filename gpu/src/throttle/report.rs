//! What building and choosing a throttled schedule found
//! ([`ThrottleReport`]), and how the handle fills it: when a plan comes
//! in, and when the first launch after it has chosen a schedule.

use crate::config::Split;
use crate::launch::split_policy::PACKED_WARP_BUDGET;
use std::ops::Range;
use std::time::Duration;
use warpfit_runtime::schedule::{RemapOrder, ThrottlePolicy};

/// What building and choosing a throttled schedule found.
#[derive(Debug, Clone, PartialEq)]
pub struct ThrottleReport {
    /// The policy asked for.
    pub asked: ThrottlePolicy,
    /// The schedule the launches run (`auto` resolved on the first launch
    /// after the plan).
    pub chosen: ThrottlePolicy,
    /// Cache-fit partitions of the plan (0 when none was planned).
    pub partitions: usize,
    /// Host time spent partitioning and ordering the plan.
    pub planning: Duration,
    /// Measurements on the first launch after the plan: median device
    /// milliseconds per run of each schedule timed (`auto` times every
    /// candidate; `sj` and `sjq` their chosen cover), permutations of a
    /// remapped schedule included.
    pub profile: Vec<(ThrottlePolicy, f64)>,
    /// Candidates `auto` did not time, and why.
    pub skipped: Vec<(ThrottlePolicy, String)>,
    /// The partitions each launch of the chosen `sj`/`sjq` cover runs.
    pub sj_launches: Vec<Range<usize>>,
    /// Wall time the first launch after the plan spent building layouts
    /// and profiling (SJ passes, `auto`'s candidates).
    pub profiling: Duration,
    /// Of that, per schedule built: the wall time of its layouts, task
    /// lists and launches, its SJ passes (built and timed) included, and of
    /// its timing runs (`auto` builds every candidate).
    pub profiling_by_policy: Vec<(ThrottlePolicy, Duration)>,
    /// Whether the chosen schedule runs in the remapped numbering.
    pub remapped: bool,
    /// The order of that numbering (`None`: not remapped).
    pub remap_order: Option<RemapOrder>,
    /// `org_r`'s median milliseconds per run in each order timed: two
    /// entries where `auto` compared them
    /// ([`ThrottleOptions::remap_orders_to_time`](warpfit_runtime::schedule::ThrottleOptions::remap_orders_to_time)); `profile` holds the
    /// faster.
    pub remap_profile: Vec<(RemapOrder, f64)>,
    /// The warp budgets `auto` timed for a single-launch schedule (`org`,
    /// `org_r`) whose automatic split packed warps by work, each with its
    /// median milliseconds per run: the automatic split's own first, then
    /// wider ones; the schedule keeps the fastest, whose time `profile`
    /// holds. Empty where no launch was packed that way.
    pub budget_profile: Vec<(ThrottlePolicy, u32, f64)>,
    /// The warp budget the chosen schedule runs under where `auto` kept a
    /// wider one than its automatic split's (`None`: the automatic split).
    pub warp_budget: Option<u32>,
    /// The CTE serial-fallback bounds `auto` timed for a single-launch
    /// schedule whose automatic split packed warps by work and raised the
    /// bound for local gathers, each with its median milliseconds per run
    /// at the fastest budget: the raised bound, then the configured one
    /// (`LaunchConfig::cte_serial_max`). Empty where none was raised.
    pub serial_profile: Vec<(ThrottlePolicy, u32, f64)>,
    /// The serial-fallback bound the chosen schedule runs under where
    /// `auto` timed more than one (`None`: not timed).
    pub serial_bound: Option<u32>,
    /// The same single-launch schedules at their fastest budget and serial
    /// bound, timed again with their packed warps taken from a device queue
    /// ([`Split::Queued`]): the policy, its median
    /// milliseconds per run without and with the queue. Empty where no
    /// launch was packed by work.
    pub queue_profile: Vec<(ThrottlePolicy, f64, f64)>,
    /// Whether the chosen schedule's packed warps take their groups from a
    /// device queue (`auto` found it faster).
    pub queued: bool,
    /// Whether the chosen schedule's layout holds the gather's index array
    /// as 16-bit offsets from the task
    /// ([`ThrottleOptions::narrow_index`](warpfit_runtime::schedule::ThrottleOptions::narrow_index); `org` reads the arrays as given).
    pub narrow_index: bool,
    /// Launches run with `org` while a pipelined plan was being made.
    pub launches_before_plan: usize,
    /// What `auto` by the cost model saw, built and timed (`None`: it did
    /// not run; [`ThrottleOptions::exhaustive`](warpfit_runtime::schedule::ThrottleOptions::exhaustive)
    /// or another policy).
    pub model: Option<ModelReport>,
}

/// What `auto` by the cost model saw, built on the device and timed.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelReport {
    /// Why it chose as it did (the rule that decided, or the cache).
    pub reason: String,
    /// The decision came from the plan cache: nothing was measured or
    /// timed.
    pub from_cache: bool,
    /// Of the sampled warp steps' gathers in the kernel's numbering, the
    /// share that fell on a cache line another lane of the step read.
    pub sharing: f64,
    /// The same in the level order, where it was made.
    pub sharing_levels: Option<f64>,
    /// Wall time of each device layout built (the level order's includes
    /// making the order).
    pub build: Vec<(crate::throttle::plan_choice::DevicePlan, Duration)>,
    /// Milliseconds of the one timed run of each candidate (`org` first),
    /// each computing the launch's result.
    pub timed: Vec<(crate::throttle::plan_choice::DevicePlan, f64)>,
    /// Wall time of the whole decision on the first launch: measuring,
    /// building, timing (or reading the cache and building its layout).
    pub planning: Duration,
    /// Why the decision could not be written to the plan cache, where it
    /// could not (the run goes on).
    pub cache_error: Option<String>,
    /// Where the plan cache's decision was the level order and the order
    /// kept beside its entry was not used: why (no file, a header, length
    /// or digest that does not match, words that are not a permutation of
    /// the rows). The order was then made again, and kept again.
    pub order_not_read: Option<String>,
    /// Wall time of each step of the decision, in order (the locality
    /// sample, the plan cache's key, each candidate's layout, preparation and
    /// timed run, the cache's write): where `planning` went.
    pub steps: Vec<(&'static str, Duration)>,
}

impl ModelReport {
    pub(in crate::throttle) fn new() -> Self {
        ModelReport {
            reason: String::new(),
            from_cache: false,
            sharing: 0.0,
            sharing_levels: None,
            build: Vec::new(),
            timed: Vec::new(),
            planning: Duration::ZERO,
            cache_error: None,
            order_not_read: None,
            steps: Vec::new(),
        }
    }
}

impl ThrottleReport {
    /// The report of a handle asked to run `asked`, before any plan: its
    /// launches run `org`.
    pub(in crate::throttle) fn new(asked: ThrottlePolicy) -> Self {
        ThrottleReport {
            asked,
            chosen: ThrottlePolicy::Org,
            partitions: 0,
            planning: Duration::ZERO,
            profile: Vec::new(),
            skipped: Vec::new(),
            sj_launches: Vec::new(),
            profiling: Duration::ZERO,
            profiling_by_policy: Vec::new(),
            remapped: false,
            remap_order: None,
            remap_profile: Vec::new(),
            budget_profile: Vec::new(),
            warp_budget: None,
            serial_profile: Vec::new(),
            serial_bound: None,
            queue_profile: Vec::new(),
            queued: false,
            narrow_index: false,
            launches_before_plan: 0,
            model: None,
        }
    }

    /// A plan of `partitions` came in after `planning`: the next launch
    /// runs the asked schedule, or `org` where one partition (`throttled`
    /// false) makes the plan the unthrottled launch.
    pub(in crate::throttle) fn record_plan(
        &mut self,
        partitions: usize,
        planning: Duration,
        throttled: bool,
    ) {
        self.partitions = partitions;
        self.planning = planning;
        self.chosen = if throttled {
            self.asked
        } else {
            // One partition: the plan is the unthrottled launch.
            ThrottlePolicy::Org
        };
    }

    /// The schedule chosen: its policy, the split `auto` kept for it
    /// (`None`: the launch's own), whether it runs remapped and whether
    /// its layouts hold 16-bit index offsets. The serial bound is the one
    /// its fastest timing ran under, where `auto` timed more than one.
    pub(in crate::throttle) fn record_choice(
        &mut self,
        chosen: ThrottlePolicy,
        kept: Option<Split>,
        remapped: bool,
        narrow_index: bool,
    ) {
        self.chosen = chosen;
        self.warp_budget = match kept {
            Some(Split::Budget(b) | Split::Queued(b)) if b != PACKED_WARP_BUDGET => Some(b),
            _ => None,
        };
        self.queued = matches!(kept, Some(Split::Queued(_)));
        self.serial_bound = self
            .serial_profile
            .iter()
            .filter(|t| t.0 == chosen)
            .min_by(|a, b| a.2.total_cmp(&b.2))
            .map(|t| t.1);
        self.remapped = remapped;
        self.narrow_index = narrow_index;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_report_runs_org_until_a_plan_comes_in() {
        let mut r = ThrottleReport::new(ThrottlePolicy::Cf);
        assert_eq!(
            (r.asked, r.chosen),
            (ThrottlePolicy::Cf, ThrottlePolicy::Org)
        );
        r.record_plan(4, Duration::from_millis(3), true);
        assert_eq!((r.partitions, r.chosen), (4, ThrottlePolicy::Cf));
        assert_eq!(r.planning, Duration::from_millis(3));
        r.record_plan(1, Duration::ZERO, false);
        assert_eq!(r.chosen, ThrottlePolicy::Org);
    }

    #[test]
    fn the_choice_records_a_wider_budget_the_queue_and_the_fastest_serial_bound() {
        let mut r = ThrottleReport::new(ThrottlePolicy::Auto);
        r.serial_profile = vec![
            (ThrottlePolicy::OrgR, 256, 2.0),
            (ThrottlePolicy::OrgR, 64, 1.5),
            (ThrottlePolicy::Org, 32, 0.5),
        ];
        r.record_choice(ThrottlePolicy::OrgR, Some(Split::Queued(1024)), true, true);
        assert_eq!(r.chosen, ThrottlePolicy::OrgR);
        assert_eq!(r.warp_budget, Some(1024));
        assert!(r.queued && r.remapped && r.narrow_index);
        assert_eq!(r.serial_bound, Some(64));
        // The automatic split's own budget is no kept budget.
        r.record_choice(
            ThrottlePolicy::Org,
            Some(Split::Budget(PACKED_WARP_BUDGET)),
            false,
            false,
        );
        assert_eq!((r.warp_budget, r.queued), (None, false));
        assert_eq!(r.serial_bound, Some(32));
        r.record_choice(ThrottlePolicy::Cf, None, false, false);
        assert_eq!((r.warp_budget, r.serial_bound), (None, None));
    }
}
