//! The driver's loop: rounds planned ahead and enqueued, outcomes collected
//! `k` at a time, growth after an overflow (see the module docs of
//! [`drivers`](super)).

use super::round_plan::{Flow, Plan, Tag};
use super::{
    DriverOptions, Kernels, ListId, Order, Outcome, Round, RoundBackend, RunReport, Start, Strategy,
};
use crate::{Error, Result};
use std::collections::VecDeque;
use std::time::Instant;

/// The capacity a list of `capacity` grows to so that `needed` items fit:
/// doubled until they do.
pub(crate) fn grown(capacity: usize, needed: u64) -> usize {
    let mut c = capacity.max(1) as u64;
    while c < needed {
        c = c.saturating_mul(2);
    }
    usize::try_from(c).unwrap_or(usize::MAX)
}

fn missing(needs: Kernels, has: Kernels) -> Option<&'static str> {
    if needs.frontier && !has.frontier {
        Some("a frontier kernel")
    } else if needs.topology && !has.topology {
        Some("a topology kernel")
    } else if needs.key && !has.key {
        Some("a key (near-far orders items by it)")
    } else {
        None
    }
}

fn protocol(msg: String) -> Error {
    Error::invalid(format!("round backend: {msg}"))
}

/// The options' strategy, checked, and the kernels it needs bound.
fn check<B: RoundBackend + ?Sized>(b: &B, opts: &DriverOptions) -> Result<()> {
    opts.strategy.check()?;
    if let Some(what) = missing(opts.strategy.needs(), b.kernels()) {
        return Err(Error::invalid(format!(
            "the {} strategy needs {what}, which the backend was not given",
            opts.strategy
        )));
    }
    Ok(())
}

/// [`Driver::prepare`](super::Driver::prepare): the lists a run from
/// `start` makes, and every shape of round the strategy may run over them
/// prepared.
pub(crate) fn prepare<B: RoundBackend + ?Sized>(
    b: &mut B,
    opts: &DriverOptions,
    start: Start<'_>,
) -> Result<()> {
    check(b, opts)?;
    let plan = Plan::new(&opts.strategy, b.universe(), &start);
    make_lists(b, opts, &plan, &start)?;
    b.prepare(&Plan::shapes(&opts.strategy))
}

pub(crate) fn run<B: RoundBackend + ?Sized>(
    b: &mut B,
    opts: &DriverOptions,
    start: Start<'_>,
    on_sync: &mut dyn FnMut(&RunReport),
) -> Result<RunReport> {
    check(b, opts)?;
    let n = b.universe();
    if let Start::Items(items) = start {
        if let Some(&bad) = items.iter().find(|&&i| i as usize >= n) {
            return Err(Error::out_of_range("start item", bad, n));
        }
    }
    let k = rounds_per_sync(b, opts)?;
    // The run's time includes making the lists and filling the start in.
    let started = Instant::now();
    let plan = Plan::new(&opts.strategy, n, &start);
    start_lists(b, opts, &plan, start)?;
    let mut engine = Engine {
        k,
        // Up to 2k − 1 rounds in flight: k waited for, k − 1 behind them to
        // keep a device busy while the host reads the outcomes.
        window: 2 * k - 1,
        max_rounds: opts.max_rounds.unwrap_or(4 * n as u64 + 1024),
        plan,
        report: RunReport::new(opts.strategy),
        in_flight: VecDeque::new(),
        planned: 0,
        useful: 0,
        done: false,
        started,
        last_sync: started,
    };
    loop {
        engine.fill(b)?;
        if engine.in_flight.is_empty() {
            break;
        }
        let count = engine.k.min(engine.in_flight.len());
        let outcomes = engine.wait(b, count)?;
        let (overflow, skipped) = engine.take(outcomes)?;
        if !overflow.is_empty() {
            engine.grow(b, overflow, skipped)?;
        }
        on_sync(&engine.report);
    }
    Ok(engine.finish(b))
}

/// `k`: the options' rounds per synchronisation, else the backend's (at
/// most [`NEAR_FAR_ROUNDS_PER_SYNC`] for near-far), checked.
fn rounds_per_sync<B: RoundBackend + ?Sized>(b: &B, opts: &DriverOptions) -> Result<usize> {
    let k = opts.rounds_per_sync.unwrap_or_else(|| {
        let k = b.rounds_per_sync();
        if near_far(&opts.strategy) {
            k.min(NEAR_FAR_ROUNDS_PER_SYNC)
        } else {
            k
        }
    });
    if !(1..=MAX_ROUNDS_PER_SYNC).contains(&k) {
        return Err(Error::invalid(format!(
            "rounds_per_sync must lie in 1..={MAX_ROUNDS_PER_SYNC}, got {k}"
        )));
    }
    Ok(k)
}

/// Makes the plan's lists and fills the start in.
fn start_lists<B: RoundBackend + ?Sized>(
    b: &mut B,
    opts: &DriverOptions,
    plan: &Plan,
    start: Start<'_>,
) -> Result<()> {
    make_lists(b, opts, plan, &start)?;
    match plan.start_list() {
        Some(list) => b.fill(list, start),
        None => Ok(()),
    }
}

/// Makes the plan's lists (kept if the backend has them already), the list
/// the start goes to and its partner large enough for it (sized, not an
/// overflow).
fn make_lists<B: RoundBackend + ?Sized>(
    b: &mut B,
    opts: &DriverOptions,
    plan: &Plan,
    start: &Start<'_>,
) -> Result<()> {
    // A deduplicating list holds each item once between clears, so no
    // capacity above the universe is ever filled; without dedup a list that
    // needs more grows on demand like any other.
    let capacity = opts
        .initial_capacity
        .unwrap_or_else(|| super::super::default_capacity(b.universe()))
        .min(b.universe())
        .max(1);
    b.make_lists(plan.lists(), capacity, opts.dedup)?;
    if let Some(list) = plan.start_list() {
        let len = start.len(b.universe()) as u64;
        for l in [list, Plan::partner(list)] {
            let have = b.capacity(l);
            if len > have as u64 {
                b.grow(l, grown(have, len))?;
            }
        }
    }
    Ok(())
}

/// Lists to grow after an overflow, with the items they need room for.
type Overflow = Vec<(ListId, u64)>;

/// The loop's state: the rounds in flight and what their outcomes told.
struct Engine {
    k: usize,
    window: usize,
    max_rounds: u64,
    plan: Plan,
    report: RunReport,
    in_flight: VecDeque<(Round, Tag)>,
    planned: u32,
    /// Rounds that ran and processed something: the rounds past the end and
    /// a near-far bucket's rounds planned past its last item (empty) do not
    /// count towards `max_rounds`; at most a window of them per useful one.
    useful: u64,
    done: bool,
    started: Instant,
    last_sync: Instant,
}

impl Engine {
    /// Enqueues rounds up to the window (or the plan's horizon).
    fn fill<B: RoundBackend + ?Sized>(&mut self, b: &mut B) -> Result<()> {
        while !self.done && self.in_flight.len() < self.plan.horizon(self.window) {
            let runaway = self.useful >= self.max_rounds
                || u64::from(self.planned)
                    >= self
                        .max_rounds
                        .saturating_add(1)
                        .saturating_mul(self.window as u64);
            if runaway {
                return Err(Error::invalid(format!(
                    "the driver ran {} rounds ({}) without reaching its end: a kernel \
                     that keeps pushing, or raise DriverOptions::max_rounds",
                    self.max_rounds, self.report.strategy
                )));
            }
            let mut round = self.plan.next(self.planned + 1);
            if let Round::Topology { out, consumed, .. } = &mut round.0 {
                *consumed =
                    *consumed && self.plan.reads_overflowed_topology_output(b.capacity(*out));
            }
            b.enqueue(&round.0)?;
            self.planned += 1;
            self.report.enqueued += 1;
            self.in_flight.push_back(round);
        }
        Ok(())
    }

    /// Waits for the oldest `count` rounds, timing the synchronisation.
    fn wait<B: RoundBackend + ?Sized>(&mut self, b: &mut B, count: usize) -> Result<Vec<Outcome>> {
        let outcomes = b.wait(count)?;
        self.report.syncs += 1;
        let now = Instant::now();
        self.report.sync_times.push(now - self.last_sync);
        self.last_sync = now;
        if outcomes.len() != count {
            return Err(protocol(format!(
                "{count} outcomes asked, {} returned",
                outcomes.len()
            )));
        }
        Ok(outcomes)
    }

    /// Takes the outcomes of the oldest rounds in flight: the lists a round
    /// overflowed, and the rounds skipped after it (to enqueue again).
    fn take(&mut self, outcomes: Vec<Outcome>) -> Result<(Overflow, Vec<(Round, Tag)>)> {
        let mut overflow: Overflow = Vec::new();
        let mut skipped: Vec<(Round, Tag)> = Vec::new();
        for o in outcomes {
            let (round, tag) = self
                .in_flight
                .pop_front()
                .expect("one in flight per outcome");
            if o.index != round.index() {
                return Err(protocol(format!(
                    "outcome of round {} returned for round {}",
                    o.index,
                    round.index()
                )));
            }
            if !overflow.is_empty() {
                if !o.skipped {
                    return Err(protocol(format!(
                        "round {} ran although an earlier round overflowed",
                        o.index
                    )));
                }
                skipped.push((round, tag));
                continue;
            }
            if o.skipped {
                return Err(protocol(format!(
                    "round {} was skipped with no overflow before it",
                    o.index
                )));
            }
            if self.done {
                // Planned past the end: must be a no-op.
                if o.pushed > 0 || o.deferred > 0 {
                    return Err(Error::invalid(format!(
                        "round {} ran after the end of the computation and still pushed {} \
                         items: the kernels are not monotone (a fixed point must stay fixed)",
                        o.index,
                        o.pushed + o.deferred
                    )));
                }
                continue;
            }
            tally(&mut self.report, &round, &o);
            if o.processed > 0 {
                self.useful += 1;
            }
            overflow = overflowed(&round, &o);
            if self.plan.observe(&round, tag, &o) == Flow::Done {
                self.done = true;
                self.report.rounds = u64::from(round.index());
            }
        }
        Ok((overflow, skipped))
    }

    /// After an overflow every round behind the overflowing one was
    /// skipped: collects the rest, grows the lists, resumes, and enqueues
    /// the skipped rounds again.
    fn grow<B: RoundBackend + ?Sized>(
        &mut self,
        b: &mut B,
        overflow: Overflow,
        mut skipped: Vec<(Round, Tag)>,
    ) -> Result<()> {
        let growth_start = Instant::now();
        if !self.in_flight.is_empty() {
            let rest = self.wait(b, self.in_flight.len())?;
            for o in rest {
                let (round, tag) = self
                    .in_flight
                    .pop_front()
                    .expect("one in flight per outcome");
                if !o.skipped || o.index != round.index() {
                    return Err(protocol(format!(
                        "round {} ran although an earlier round overflowed",
                        o.index
                    )));
                }
                skipped.push((round, tag));
            }
        }
        for (list, needed) in overflow {
            let to = grown(b.capacity(list), needed);
            b.grow(list, to)?;
            self.report.growths += 1;
            // Its alternate will hold the next round's output: as large.
            let partner = Plan::partner(list);
            if b.capacity(partner) < to {
                b.grow(partner, to)?;
            }
        }
        b.resume()?;
        self.report.growth_time += growth_start.elapsed();
        if !self.done {
            for round in skipped {
                b.enqueue(&round.0)?;
                self.report.enqueued += 1;
                self.in_flight.push_back(round);
            }
        }
        Ok(())
    }

    /// The report, with the plan's counts and the lists' final capacity.
    fn finish<B: RoundBackend + ?Sized>(mut self, b: &B) -> RunReport {
        self.report.switches = self.plan.switches;
        self.report.far_rounds = self.plan.far_rounds;
        self.report.capacity = (0..self.plan.lists())
            .map(|l| b.capacity(ListId(l as u8)))
            .max()
            .unwrap_or(0);
        self.report.time = self.started.elapsed();
        self.report
    }
}

fn tally(report: &mut RunReport, round: &Round, o: &Outcome) {
    report.processed += o.processed;
    report.pushed += o.pushed + o.deferred;
    if matches!(round, Round::Topology { .. }) {
        report.topology_rounds += 1;
    }
}

/// The lists a round overflowed that a later round reads, with the items
/// they need room for.
fn overflowed(round: &Round, o: &Outcome) -> Vec<(ListId, u64)> {
    let mut lists = Vec::new();
    if o.out_overflowed && round.out_consumed() {
        lists.push((round.out(), o.pushed));
    }
    if let Round::Frontier {
        bucket: Some(b), ..
    } = round
    {
        if o.deferred_overflowed {
            lists.push((b.deferred, o.deferred_len));
        }
    }
    lists
}

/// Rounds per host synchronisation a near-far run takes by default (at most):
/// the driver decides to advance the bucket only when it sees a round that
/// found the near pile empty, so every round queued behind that one runs
/// empty. A few rounds per synchronisation save more waiting than the empty
/// rounds cost; many cost more. Measured on the road graph:
/// `BENCHMARKS.md`, "Tuning constants: history".
pub(crate) const NEAR_FAR_ROUNDS_PER_SYNC: usize = 4;

/// The most rounds per host synchronisation a driver takes: the driver only
/// learns that the computation ended when it reads the outcomes, so up to
/// `2k - 1` rounds run past the end; a synchronisation costs microseconds,
/// and beyond a thousand rounds per one there is nothing left to save.
pub const MAX_ROUNDS_PER_SYNC: usize = 1024;

fn near_far(s: &Strategy) -> bool {
    matches!(
        s,
        Strategy::Data(Order::NearFar { .. })
            | Strategy::Hybrid {
                order: Order::NearFar { .. },
                ..
            }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_doubles_until_the_items_fit() {
        assert_eq!(grown(10, 10), 10);
        assert_eq!(grown(10, 11), 20);
        assert_eq!(grown(10, 75), 80);
        assert_eq!(grown(0, 3), 4);
        assert_eq!(grown(3, u64::MAX), usize::MAX);
    }
}
