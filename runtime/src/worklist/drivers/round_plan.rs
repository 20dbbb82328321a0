//! The planner: which round comes next, and what an outcome means, for every
//! strategy. One planner covers them all: [`Strategy::Topology`] and
//! [`Strategy::Data`] are the hybrid pinned to one mode.
//!
//! Lists: 0 and 1 alternate as a round's input and output (the near pile of
//! near-far); 2 and 3 alternate as the far pile, appended to by near rounds
//! and split into the other one by a far round.
//!
//! Rounds are planned ahead of their outcomes (the engine keeps several in
//! flight), so a decision taken on round `r`'s outcome applies to the rounds
//! planned after it, while the rounds planned before it still run as they
//! were planned. That is always correct here: every round continues from its
//! predecessor's lists, a topology round needs no input, and a round over an
//! empty list does nothing. A *tag* records the epoch and mode a round was
//! planned in, so that outcomes of rounds planned before a decision do not
//! trigger it twice.

use super::{Bucket, ListId, Order, Outcome, Round, RoundShape, Start, Strategy};

/// Data- or topology-driven rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Data,
    Topology,
}

/// When and how a round was planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tag {
    epoch: u32,
    mode: Mode,
}

/// What an outcome means for the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    Done,
}

const NEAR: [ListId; 2] = [ListId(0), ListId(1)];
const FAR: [ListId; 2] = [ListId(2), ListId(3)];

pub(crate) struct Plan {
    order: Order,
    /// Switch to topology-driven rounds when a frontier exceeds this many
    /// items (`None`: never).
    to_topology: Option<f64>,
    /// Switch to data-driven rounds when a topology round changes fewer
    /// (`None`: never).
    to_data: Option<f64>,

    // Planning state: what the next round will be.
    mode: Mode,
    /// The near list holding the next input (0 or 1).
    near: usize,
    /// The far pile now (0 or 1).
    far: usize,
    /// The current bucket `[lo, hi)`.
    lo: f64,
    hi: f64,
    /// Bumped by every decision that changes what later rounds mean (a far
    /// round, a switch).
    epoch: u32,
    /// The near pile was seen empty: the next round splits the far pile.
    far_due: bool,
    /// The next near round clears the far pile (after topology rounds, which
    /// made it stale).
    clear_far: bool,

    // What the outcomes told.
    far_len: u64,
    far_min: f64,
    /// The least key of the last topology round's output.
    topology_min: f64,

    /// The hybrid's frontier sizes, for [`horizon`](Plan::horizon): the
    /// last data-driven round's output (`None` before one of the current
    /// data phase was seen) and the frontier it ran over.
    frontier_last: Option<f64>,
    frontier_before: f64,

    pub(crate) switches: u64,
    pub(crate) far_rounds: u64,
}

/// The upper end of the bucket of width `delta` (buckets `[k·δ, (k+1)·δ)`)
/// that holds `key`: strictly above `key`. A width below the key's
/// resolution (`key + δ == key`) gives the bucket of `key` alone, the next
/// float up: any `δ > 0` then advances by at least one distinct key per
/// bucket, Dijkstra's order at worst, never a bucket that holds nothing.
fn bucket_end(key: f64, delta: f64) -> f64 {
    let end = ((key / delta).floor() + 1.0) * delta;
    if end > key {
        return end;
    }
    let end = key + delta;
    if end > key {
        end
    } else {
        next_up(key)
    }
}

/// The least float above `x` (`f64::next_up`, which is newer than this
/// crate's minimum Rust).
fn next_up(x: f64) -> f64 {
    if x.is_nan() || x == f64::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f64::from_bits(1);
    }
    let bits = x.to_bits();
    f64::from_bits(if x > 0.0 { bits + 1 } else { bits - 1 })
}

fn order_of(strategy: &Strategy) -> Order {
    match *strategy {
        Strategy::Topology => Order::Fifo,
        Strategy::Data(order) | Strategy::Hybrid { order, .. } => order,
    }
}

impl Plan {
    /// A planner for `strategy` over a universe of `n`, starting from
    /// `start`.
    pub(crate) fn new(strategy: &Strategy, n: usize, start: &Start<'_>) -> Plan {
        let n = n as f64;
        let order = order_of(strategy);
        let (mode, to_topology, to_data) = match *strategy {
            Strategy::Topology => (Mode::Topology, None, None),
            Strategy::Data(_) => (Mode::Data, None, None),
            Strategy::Hybrid {
                to_topology,
                to_data,
                ..
            } => {
                let up = to_topology * n;
                // A start larger than the threshold starts topology-driven.
                let mode = if start.len(n as usize) as f64 > up {
                    Mode::Topology
                } else {
                    Mode::Data
                };
                (mode, Some(up), Some(to_data * n))
            }
        };
        let hi = match order {
            Order::Fifo => f64::INFINITY,
            Order::NearFar { delta } => delta,
        };
        Plan {
            order,
            to_topology,
            to_data,
            mode,
            near: 0,
            far: 0,
            lo: f64::NEG_INFINITY,
            hi,
            epoch: 0,
            far_due: false,
            clear_far: false,
            far_len: 0,
            far_min: f64::INFINITY,
            topology_min: f64::INFINITY,
            frontier_last: None,
            frontier_before: start.len(n as usize) as f64,
            switches: 0,
            far_rounds: 0,
        }
    }

    /// How many lists the strategy uses.
    pub(crate) fn lists(&self) -> usize {
        match self.order {
            Order::Fifo => 2,
            Order::NearFar { .. } => 4,
        }
    }

    /// Every shape of round `strategy` may run: outputs are always a near
    /// list, inputs its partner (a FIFO's), or a bucket of any (near-far).
    pub(crate) fn shapes(strategy: &Strategy) -> Vec<RoundShape> {
        let needs = strategy.needs();
        let mut shapes = Vec::new();
        for (input, out) in [(NEAR[1], NEAR[0]), (NEAR[0], NEAR[1])] {
            if needs.topology {
                shapes.push(RoundShape::Topology { out });
            }
            if needs.frontier {
                shapes.push(match order_of(strategy) {
                    Order::Fifo => RoundShape::Frontier { input, out },
                    Order::NearFar { .. } => RoundShape::Bucket { out },
                });
            }
        }
        shapes
    }

    /// How many rounds may be planned past the last one observed, at most
    /// `window`, without passing a decision the outcomes could bring: a
    /// hybrid switches on a round's outcome, and rounds planned before it is
    /// seen run in the old mode (a frontier that explodes, as BFS's on a
    /// power-law graph does in a round or two, would run its largest
    /// rounds data-driven). So a hybrid plans one round at a time in
    /// topology mode (its rounds sweep the graph: a synchronisation each
    /// costs nothing against them) and, in data mode, only as many as the
    /// frontier, growing by the factor last seen, cannot take past the
    /// switch; a slowly growing frontier (a road graph's) keeps the whole
    /// window. Strategies that never switch keep the window.
    pub(crate) fn horizon(&self, window: usize) -> usize {
        let Some(up) = self.to_topology else {
            return window;
        };
        if self.mode == Mode::Topology {
            return 1;
        }
        let Some(last) = self.frontier_last else {
            return 1;
        };
        let factor = last / self.frontier_before.max(1.0);
        if factor < 1.0 {
            // A shrinking frontier cannot switch, and at this rate it is
            // empty in about log(last) / log(1 / factor) rounds: plan those
            // and one more, not a window of rounds past the end (each one
            // enqueued costs the host a few launches; `BENCHMARKS.md`,
            // "Launches prepared before the run").
            let left = last.max(1.0).ln() / (1.0 / factor).ln();
            return if left.is_finite() && left < window as f64 {
                (left.ceil() as usize + 1).min(window)
            } else {
                window
            };
        }
        let mut size = last.max(1.0);
        let mut rounds = 0;
        while rounds < window {
            size *= factor;
            if size > up {
                break;
            }
            rounds += 1;
        }
        rounds.max(1)
    }

    /// Whether a topology round that overflowed its output list of
    /// `capacity` can have its output read: only a hybrid reads a topology
    /// round's output, after a round that changed fewer than its `to_data`
    /// threshold, which a round that pushed more than `capacity` did not if
    /// `capacity` reaches the threshold. Such a round need not halt the
    /// rounds after it, nor its list grow (BFS's bottom-up levels on a
    /// power-law graph overflow lists of `n / 5` otherwise).
    pub(crate) fn reads_overflowed_topology_output(&self, capacity: usize) -> bool {
        self.to_data.is_some_and(|down| (capacity as f64) < down)
    }

    /// The list the start items go to, if the first round reads them.
    pub(crate) fn start_list(&self) -> Option<ListId> {
        (self.mode == Mode::Data).then_some(NEAR[0])
    }

    /// The list sharing a role with `list` (its alternate), grown with it.
    pub(crate) fn partner(list: ListId) -> ListId {
        ListId(list.0 ^ 1)
    }

    /// The next round, numbered `index`, and its tag.
    pub(crate) fn next(&mut self, index: u32) -> (Round, Tag) {
        let tag = |plan: &Plan| Tag {
            epoch: plan.epoch,
            mode: plan.mode,
        };
        let (input, out) = (NEAR[self.near], NEAR[self.near ^ 1]);
        self.near ^= 1;
        if self.mode == Mode::Topology {
            // Its output is read only if data-driven rounds may follow.
            let consumed = self.to_data.is_some();
            let round = Round::Topology {
                index,
                out,
                consumed,
                min_key: consumed && matches!(self.order, Order::NearFar { .. }),
            };
            return (round, tag(self));
        }
        let Order::NearFar { delta } = self.order else {
            let round = Round::Frontier {
                index,
                input,
                out,
                bucket: None,
            };
            return (round, tag(self));
        };
        if self.far_due {
            // The near pile is empty: advance the bucket past the least key
            // on the far pile, and split the pile.
            self.far_due = false;
            self.lo = self.hi;
            self.hi = (self.hi + delta).max(bucket_end(self.far_min, delta));
            let bucket = Bucket {
                lo: self.lo,
                hi: self.hi,
                deferred: FAR[self.far ^ 1],
                clear_deferred: true,
            };
            let round = Round::Frontier {
                index,
                input: FAR[self.far],
                out,
                bucket: Some(bucket),
            };
            self.far ^= 1;
            self.epoch += 1;
            self.far_rounds += 1;
            return (round, tag(self));
        }
        let bucket = Bucket {
            lo: self.lo,
            hi: self.hi,
            deferred: FAR[self.far],
            clear_deferred: std::mem::take(&mut self.clear_far),
        };
        let round = Round::Frontier {
            index,
            input,
            out,
            bucket: Some(bucket),
        };
        (round, tag(self))
    }

    /// Takes a finished round's outcome, in round order.
    pub(crate) fn observe(&mut self, round: &Round, tag: Tag, o: &Outcome) -> Flow {
        let current = tag.epoch == self.epoch;
        match *round {
            Round::Topology { min_key, .. } => {
                if min_key {
                    self.topology_min = o.min_key;
                }
                if o.pushed == 0 {
                    // Nothing changed anywhere: the fixed point.
                    return Flow::Done;
                }
            }
            Round::Frontier { bucket: None, .. } => {
                if o.pushed == 0 {
                    // The frontier ran and activated nothing: nothing is
                    // left (every change since an element ran is on the
                    // frontier).
                    return Flow::Done;
                }
            }
            Round::Frontier {
                bucket: Some(b), ..
            } => {
                self.far_len = o.deferred_len;
                self.far_min = if b.clear_deferred {
                    o.min_key
                } else {
                    self.far_min.min(o.min_key)
                };
                if o.pushed == 0 {
                    if self.far_len == 0 {
                        return Flow::Done;
                    }
                    // The near pile is empty (the rounds planned after this
                    // one run over empty lists); split the far pile next,
                    // once per epoch.
                    if current && self.mode == Mode::Data {
                        self.far_due = true;
                    }
                }
            }
        }
        // Switches, decided on rounds of the mode being planned.
        if tag.mode != self.mode {
            return Flow::Continue;
        }
        if self.mode == Mode::Data && matches!(round, Round::Frontier { .. }) {
            self.frontier_before = self.frontier_last.unwrap_or(self.frontier_before);
            self.frontier_last = Some(o.pushed as f64);
        }
        match self.mode {
            Mode::Data => {
                if self.to_topology.is_some_and(|up| o.pushed as f64 > up) {
                    self.mode = Mode::Topology;
                    self.switch();
                }
            }
            Mode::Topology => {
                if self.to_data.is_some_and(|down| (o.pushed as f64) < down) {
                    self.mode = Mode::Data;
                    self.switch();
                    self.frontier_before = o.pushed as f64;
                    self.frontier_last = None;
                    // The next data rounds start over: every pending element
                    // is on the topology round's output, the far pile is
                    // stale, and the first bucket holds the least key seen.
                    if let Order::NearFar { delta } = self.order {
                        self.lo = f64::NEG_INFINITY;
                        self.hi = bucket_end(self.topology_min, delta);
                        self.clear_far = true;
                        self.far_len = 0;
                        self.far_min = f64::INFINITY;
                    }
                }
            }
        }
        Flow::Continue
    }

    fn switch(&mut self) {
        self.switches += 1;
        self.epoch += 1;
        self.far_due = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(index: u32, pushed: u64) -> Outcome {
        Outcome {
            pushed,
            ..Outcome::empty(index)
        }
    }

    #[test]
    fn bucket_ends_lie_strictly_above_the_key() {
        assert_eq!(bucket_end(0.0, 1.0), 1.0);
        assert_eq!(bucket_end(2.5, 1.0), 3.0);
        assert_eq!(bucket_end(3.0, 1.0), 4.0);
        assert_eq!(bucket_end(-0.5, 1.0), 0.0);
        // A width below the key's resolution: the next float up.
        assert_eq!(bucket_end(5.0, 1e-16), f64::from_bits(5.0f64.to_bits() + 1));
        assert_eq!(next_up(-1.0), -1.0 + f64::EPSILON / 2.0);
        assert_eq!(next_up(-0.0), f64::from_bits(1));
        assert_eq!(bucket_end(0.0, 1e-300), 1e-300);
        assert!(bucket_end(1e300, 1e-300) > 1e300);
        for (k, d) in [(0.3f64, 0.1f64), (1e9, 1e-3), (0.7, 0.7)] {
            assert!(bucket_end(k, d) > k, "{k} {d}");
        }
    }

    #[test]
    fn fifo_alternates_two_lists_and_ends_on_an_empty_frontier() {
        let mut p = Plan::new(&Strategy::Data(Order::Fifo), 10, &Start::Items(&[0]));
        assert_eq!(p.start_list(), Some(ListId(0)));
        let (r1, t1) = p.next(1);
        let (r2, t2) = p.next(2);
        assert_eq!(
            r1,
            Round::Frontier {
                index: 1,
                input: ListId(0),
                out: ListId(1),
                bucket: None
            }
        );
        assert!(matches!(
            r2,
            Round::Frontier {
                input: ListId(1),
                out: ListId(0),
                ..
            }
        ));
        assert_eq!(p.observe(&r1, t1, &outcome(1, 3)), Flow::Continue);
        assert_eq!(p.observe(&r2, t2, &outcome(2, 0)), Flow::Done);
    }

    #[test]
    fn near_far_splits_the_far_pile_once_per_empty_near_pile() {
        let s = Strategy::Data(Order::NearFar { delta: 2.0 });
        let mut p = Plan::new(&s, 100, &Start::Items(&[0]));
        assert_eq!(p.lists(), 4);
        // Three near rounds planned ahead.
        let planned: Vec<_> = (1..=3).map(|i| p.next(i)).collect();
        // Round 1 defers 5 items (least key 7.5) and pushes nothing near.
        let o1 = Outcome {
            deferred: 5,
            deferred_len: 5,
            min_key: 7.5,
            ..outcome(1, 0)
        };
        assert_eq!(p.observe(&planned[0].0, planned[0].1, &o1), Flow::Continue);
        // Rounds 2 and 3 were no-ops: no second split is planned for them.
        for (r, t) in &planned[1..] {
            let o = Outcome {
                deferred_len: 5,
                ..outcome(r.index(), 0)
            };
            assert_eq!(p.observe(r, *t, &o), Flow::Continue);
        }
        let (far, tag) = p.next(4);
        let Round::Frontier {
            input,
            bucket: Some(b),
            ..
        } = far
        else {
            panic!("{far:?}")
        };
        // The bucket skips the empty ones, up to the one holding 7.5.
        assert_eq!((input, b.lo, b.hi), (ListId(2), 2.0, 8.0));
        assert_eq!((b.deferred, b.clear_deferred), (ListId(3), true));
        // The near rounds after it append to the new far pile.
        let (near, _) = p.next(5);
        let Round::Frontier {
            bucket: Some(nb), ..
        } = near
        else {
            panic!()
        };
        assert_eq!(
            (nb.deferred, nb.clear_deferred, nb.lo, nb.hi),
            (ListId(3), false, 2.0, 8.0)
        );
        // The split moved everything on: done.
        let o4 = Outcome {
            processed: 5,
            ..outcome(4, 0)
        };
        assert_eq!(p.observe(&far, tag, &o4), Flow::Done);
        assert_eq!(p.far_rounds, 1);
    }

    #[test]
    fn a_hybrid_plans_ahead_only_as_far_as_its_frontier_cannot_switch() {
        let s = Strategy::Hybrid {
            order: Order::Fifo,
            to_topology: 0.05,
            to_data: 0.01,
        };
        // Threshold: 5000 items of 100000.
        let mut p = Plan::new(&s, 100_000, &Start::Items(&[0]));
        // Nothing seen yet: one round at a time.
        assert_eq!(p.horizon(15), 1);
        let (r1, t1) = p.next(1);
        // 1 → 10 items: at ×10 per round, 100 and 1000 stay below, 10⁴
        // would not.
        assert_eq!(p.observe(&r1, t1, &outcome(1, 10)), Flow::Continue);
        assert_eq!(p.horizon(15), 2);
        let (r2, t2) = p.next(2);
        // 10 → 12: slow growth, the whole window.
        assert_eq!(p.observe(&r2, t2, &outcome(2, 12)), Flow::Continue);
        assert_eq!(p.horizon(15), 15);
        assert_eq!(p.horizon(3), 3);
        // Past the threshold: topology rounds, one at a time.
        let (r3, t3) = p.next(3);
        assert_eq!(p.observe(&r3, t3, &outcome(3, 6000)), Flow::Continue);
        assert_eq!(p.horizon(15), 1);
        let (r4, t4) = p.next(4);
        assert!(matches!(r4, Round::Topology { .. }));
        // Back to data-driven rounds: nothing seen in this phase yet.
        assert_eq!(p.observe(&r4, t4, &outcome(4, 500)), Flow::Continue);
        assert_eq!(p.horizon(15), 1);
        // 500 → 50: ten times fewer a round, empty in about three more
        // rounds; plan those and one.
        let (r5, t5) = p.next(5);
        assert_eq!(p.observe(&r5, t5, &outcome(5, 50)), Flow::Continue);
        assert_eq!(p.horizon(15), 3);
        // 50 → 2: one more round and one.
        let (r6, t6) = p.next(6);
        assert_eq!(p.observe(&r6, t6, &outcome(6, 2)), Flow::Continue);
        assert_eq!(p.horizon(15), 2);
        // 2 → 2: steady, the window.
        let (r7, t7) = p.next(7);
        assert_eq!(p.observe(&r7, t7, &outcome(7, 2)), Flow::Continue);
        assert_eq!(p.horizon(15), 15);
        // 1900 → 1800 (a road graph's slowly shrinking frontier): empty in
        // some 140 rounds at that rate, the window.
        for (i, pushed) in [(8, 1900), (9, 1800)] {
            let (r, t) = p.next(i);
            assert_eq!(p.observe(&r, t, &outcome(i, pushed)), Flow::Continue);
        }
        assert_eq!(p.horizon(15), 15);
        // Strategies that never switch keep their window.
        let fifo = Plan::new(&Strategy::Data(Order::Fifo), 100, &Start::Items(&[0]));
        assert_eq!(fifo.horizon(15), 15);
        let topo = Plan::new(&Strategy::Topology, 100, &Start::All);
        assert_eq!(topo.horizon(15), 15);
    }

    #[test]
    fn hybrid_switches_on_the_frontier_size_of_rounds_of_its_mode() {
        let s = Strategy::Hybrid {
            order: Order::Fifo,
            to_topology: 0.5,
            to_data: 0.1,
        };
        let mut p = Plan::new(&s, 100, &Start::Items(&[0]));
        let (r1, t1) = p.next(1);
        let (r2, t2) = p.next(2);
        // Round 1's frontier is large: rounds planned from now on are
        // topology-driven, round 2 still runs data-driven.
        assert_eq!(p.observe(&r1, t1, &outcome(1, 60)), Flow::Continue);
        let (r3, t3) = p.next(3);
        assert!(matches!(
            r3,
            Round::Topology {
                out: ListId(1),
                consumed: true,
                ..
            }
        ));
        // Round 2 was planned data-driven: its small frontier does not
        // switch back.
        assert_eq!(p.observe(&r2, t2, &outcome(2, 5)), Flow::Continue);
        assert!(matches!(p.next(4).0, Round::Topology { .. }));
        // Round 3 changed few elements: back to data-driven rounds, which
        // read the latest topology round's output.
        assert_eq!(p.observe(&r3, t3, &outcome(3, 5)), Flow::Continue);
        assert_eq!(
            p.next(5).0,
            Round::Frontier {
                index: 5,
                input: ListId(0),
                out: ListId(1),
                bucket: None
            }
        );
        assert_eq!(p.switches, 2);
        // A start larger than the threshold starts topology-driven.
        let all = Plan::new(&s, 100, &Start::All);
        assert_eq!(all.start_list(), None);
    }

    #[test]
    fn topology_runs_to_a_round_that_pushes_nothing() {
        let mut p = Plan::new(&Strategy::Topology, 10, &Start::All);
        let (r, t) = p.next(1);
        assert!(matches!(
            r,
            Round::Topology {
                consumed: false,
                min_key: false,
                ..
            }
        ));
        assert_eq!(p.observe(&r, t, &outcome(1, 4)), Flow::Continue);
        let (r, t) = p.next(2);
        assert_eq!(p.observe(&r, t, &outcome(2, 0)), Flow::Done);
    }

    #[test]
    fn every_round_planned_has_a_shape_the_strategy_prepares() {
        use crate::rng;
        let strategies = [
            Strategy::Topology,
            Strategy::Data(Order::Fifo),
            Strategy::Data(Order::NearFar { delta: 2.0 }),
            Strategy::hybrid(Order::Fifo),
            Strategy::hybrid(Order::NearFar { delta: 2.0 }),
        ];
        for (s, strategy) in strategies.iter().enumerate() {
            let shapes = Plan::shapes(strategy);
            let mut rng = rng::chunk_rng(7, rng::VALUES, s as u64);
            let mut p = Plan::new(strategy, 1000, &Start::Items(&[0]));
            let lists = p.lists();
            let mut seen = std::collections::HashSet::new();
            for index in 1..400 {
                let (r, t) = p.next(index);
                let shape = r.shape();
                assert!(shapes.contains(&shape), "{strategy}: {r:?} as {shape:?}");
                seen.insert(shape);
                for l in [shape_lists(&shape), vec![r.out()]].concat() {
                    assert!(l.index() < lists, "{strategy}: {r:?}");
                }
                // Frontiers that grow past and shrink below the hybrid's
                // thresholds; far piles that fill and empty.
                let pushed = u64::from(rng::below(&mut rng, 200));
                let o = Outcome {
                    pushed,
                    processed: pushed,
                    deferred_len: u64::from(rng::below(&mut rng, 3)),
                    min_key: f64::from(rng::below(&mut rng, 50)),
                    ..Outcome::empty(index)
                };
                let _ = p.observe(&r, t, &o);
            }
            assert_eq!(
                seen.len(),
                shapes.len(),
                "{strategy}: {seen:?} of {shapes:?}"
            );
        }
    }

    fn shape_lists(shape: &RoundShape) -> Vec<ListId> {
        match *shape {
            RoundShape::Topology { out } | RoundShape::Bucket { out } => vec![out],
            RoundShape::Frontier { input, out } => vec![input, out],
        }
    }
}
