//! The CPU round backend: kernels as Rust closures, run on all cores with
//! rayon as each round is enqueued, over [`Worklist`]s with real atomics.

use super::{Kernels, ListId, Outcome, Round, RoundBackend, Start};
use crate::worklist::{push, Worklist};
use crate::{Error, Result};
use rayon::prelude::*;
use std::collections::VecDeque;

/// Items (or elements) a rayon task takes at least: below this, splitting
/// costs more than the kernels it spreads.
const GRAIN: usize = 256;

/// What a kernel sees of its round.
#[derive(Debug)]
pub struct Step<'a> {
    /// The round's number, from 1.
    pub round: u32,
    /// The list the kernel pushes onto (with [`push`]).
    pub out: &'a Worklist,
}

type Kernel<'k> = dyn Fn(u32, &Step<'_>) + Sync + 'k;
type Key<'k> = dyn Fn(u32) -> f64 + Sync + 'k;

/// The CPU backend of the [`Driver`](super::Driver): a frontier kernel
/// `f(item, step)`, a topology kernel `t(element, step)` and a key, each
/// optional, as closures that push with [`push`]`(step.out, item)`; the
/// arrays they update are shared through [`Atomic`](crate::worklist::Atomic)
/// views. A round runs on all cores when it is enqueued;
/// [`RoundBackend::wait`] only hands its outcome over, so the CPU takes one
/// round per synchronisation (nothing to overlap).
///
/// An item a kernel pushes outside the universe is a fault: the round's
/// enqueue returns it as an error naming the round.
pub struct CpuRounds<'k> {
    universe: usize,
    frontier: Option<Box<Kernel<'k>>>,
    topology: Option<Box<Kernel<'k>>>,
    key: Option<Box<Key<'k>>>,
    lists: Vec<Worklist>,
    halted: bool,
    finished: VecDeque<Outcome>,
}

impl std::fmt::Debug for CpuRounds<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuRounds")
            .field("universe", &self.universe)
            .field("kernels", &self.kernels())
            .field("lists", &self.lists)
            .field("halted", &self.halted)
            .finish_non_exhaustive()
    }
}

impl<'k> CpuRounds<'k> {
    /// A backend over the universe `0..universe`, with no kernel yet.
    ///
    /// # Errors
    /// A universe beyond what `u32` items name (`2^32`).
    pub fn new(universe: usize) -> Result<Self> {
        if universe as u64 > u64::from(u32::MAX) + 1 {
            return Err(Error::invalid(format!(
                "a round backend's universe of {universe} is more than u32 items name"
            )));
        }
        Ok(CpuRounds {
            universe,
            frontier: None,
            topology: None,
            key: None,
            lists: Vec::new(),
            halted: false,
            finished: VecDeque::new(),
        })
    }

    /// The frontier kernel: runs once per item of a round's input list.
    pub fn frontier(mut self, kernel: impl Fn(u32, &Step<'_>) + Sync + 'k) -> Self {
        self.frontier = Some(Box::new(kernel));
        self
    }

    /// The topology kernel: runs once per element of the universe.
    pub fn topology(mut self, kernel: impl Fn(u32, &Step<'_>) + Sync + 'k) -> Self {
        self.topology = Some(Box::new(kernel));
        self
    }

    /// The key near-far orders items by (read when the item is taken from
    /// a list, so it sees the latest value).
    pub fn key(mut self, key: impl Fn(u32) -> f64 + Sync + 'k) -> Self {
        self.key = Some(Box::new(key));
        self
    }

    fn list(&self, id: ListId) -> Result<&Worklist> {
        self.lists
            .get(id.index())
            .ok_or_else(|| Error::out_of_range("worklist id", id.0, self.lists.len()))
    }

    fn check_fault(&self, list: &Worklist, index: u32) -> Result<()> {
        match list.take_fault() {
            None => Ok(()),
            Some(e) => Err(Error::invalid(format!(
                "kernel fault in round {index}: {}",
                Error::from(e)
            ))),
        }
    }

    fn topology_round(
        &mut self,
        index: u32,
        out: ListId,
        consumed: bool,
        min_key: bool,
    ) -> Result<Outcome> {
        let kernel = self
            .topology
            .as_deref()
            .ok_or_else(|| Error::invalid("a topology round needs a topology kernel"))?;
        let lists = &mut self.lists;
        let out_list = lists
            .get_mut(out.index())
            .ok_or_else(|| Error::out_of_range("worklist id", out.0, 0))?;
        out_list.clear();
        let step = Step {
            round: index,
            out: out_list,
        };
        // Elements are below the universe, at most 2^32: they fit u32.
        (0..self.universe)
            .into_par_iter()
            .with_min_len(GRAIN)
            .for_each(|t| kernel(t as u32, &step));
        let out_list = &mut self.lists[out.index()];
        let mut o = Outcome::empty(index);
        o.processed = self.universe as u64;
        o.pushed = out_list.needed() as u64;
        o.out_overflowed = out_list.overflowed();
        if min_key {
            if let Some(key) = self.key.as_deref() {
                o.min_key = out_list
                    .items()
                    .par_iter()
                    .with_min_len(GRAIN)
                    .map(|&v| key(v))
                    .reduce(|| f64::INFINITY, f64::min);
            }
        }
        self.halted = consumed && o.out_overflowed;
        self.check_fault(&self.lists[out.index()], index)?;
        Ok(o)
    }

    fn frontier_round(
        &mut self,
        index: u32,
        input: ListId,
        out: ListId,
        bucket: Option<super::Bucket>,
    ) -> Result<Outcome> {
        let kernel = self
            .frontier
            .as_deref()
            .ok_or_else(|| Error::invalid("a frontier round needs a frontier kernel"))?;
        let deferred = bucket.map(|b| b.deferred);
        if input == out || Some(input) == deferred || Some(out) == deferred {
            return Err(Error::invalid(format!(
                "round {index}: input, output and far lists must be distinct"
            )));
        }
        for id in [Some(input), Some(out), deferred].into_iter().flatten() {
            self.list(id)?;
        }
        self.lists[out.index()].clear();
        if let Some(b) = bucket.filter(|b| b.clear_deferred) {
            self.lists[b.deferred.index()].clear();
        }
        let deferred_before = deferred.map_or(0, |d| self.lists[d.index()].needed() as u64);
        // The input exclusively (its items), the others shared.
        let (mut input_list, mut out_list, mut far_list) = (None, None, None);
        for (i, l) in self.lists.iter_mut().enumerate() {
            if i == input.index() {
                input_list = Some(l);
            } else if i == out.index() {
                out_list = Some(&*l);
            } else if deferred.is_some_and(|d| d.index() == i) {
                far_list = Some(&*l);
            }
        }
        let (items, out_list) = (
            input_list.expect("checked").items(),
            out_list.expect("checked"),
        );
        let step = Step {
            round: index,
            out: out_list,
        };
        let mut o = Outcome::empty(index);
        match bucket {
            None => {
                items
                    .par_iter()
                    .with_min_len(GRAIN)
                    .for_each(|&v| kernel(v, &step));
                o.processed = items.len() as u64;
            }
            Some(b) => {
                let key = self
                    .key
                    .as_deref()
                    .ok_or_else(|| Error::invalid("a near-far round needs a key"))?;
                let far_list = far_list.expect("checked");
                // (ran, dropped, least deferred key)
                let (ran, dropped, least) = items
                    .par_iter()
                    .with_min_len(GRAIN)
                    .fold(
                        || (0u64, 0u64, f64::INFINITY),
                        |(ran, dropped, least), &v| {
                            let k = key(v);
                            if k < b.lo {
                                (ran, dropped + 1, least)
                            } else if k >= b.hi {
                                push(far_list, v);
                                (ran, dropped, least.min(k))
                            } else {
                                kernel(v, &step);
                                (ran + 1, dropped, least)
                            }
                        },
                    )
                    .reduce(
                        || (0, 0, f64::INFINITY),
                        |a, b| (a.0 + b.0, a.1 + b.1, a.2.min(b.2)),
                    );
                o.processed = ran;
                o.dropped = dropped;
                o.min_key = least;
                o.deferred_len = far_list.needed() as u64;
                o.deferred = o.deferred_len - deferred_before;
                o.deferred_overflowed = far_list.overflowed();
            }
        }
        o.pushed = out_list.needed() as u64;
        o.out_overflowed = out_list.overflowed();
        self.halted = o.out_overflowed || o.deferred_overflowed;
        self.check_fault(&self.lists[out.index()], index)?;
        Ok(o)
    }
}

impl RoundBackend for CpuRounds<'_> {
    fn universe(&self) -> usize {
        self.universe
    }

    fn rounds_per_sync(&self) -> usize {
        1
    }

    fn kernels(&self) -> Kernels {
        Kernels {
            frontier: self.frontier.is_some(),
            topology: self.topology.is_some(),
            key: self.key.is_some(),
        }
    }

    fn make_lists(&mut self, count: usize, capacity: usize, dedup: bool) -> Result<()> {
        if count > 256 {
            return Err(Error::invalid(format!("{count} worklists: at most 256")));
        }
        let have = self.lists.iter().map(|l| (l.dedup(), l.capacity()));
        if super::lists_fit(have, count, capacity, dedup) {
            self.lists.iter().for_each(Worklist::reset);
            self.halted = false;
            self.finished.clear();
            return Ok(());
        }
        self.lists.clear();
        for _ in 0..count {
            self.lists.push(if dedup {
                Worklist::new_dedup(self.universe, capacity)?
            } else {
                Worklist::new(self.universe, capacity)?
            });
        }
        self.halted = false;
        self.finished.clear();
        Ok(())
    }

    fn capacity(&self, list: ListId) -> usize {
        self.lists.get(list.index()).map_or(0, Worklist::capacity)
    }

    fn fill(&mut self, list: ListId, start: Start<'_>) -> Result<()> {
        let n = self.universe;
        self.list(list)?;
        let l = &mut self.lists[list.index()];
        if start.len(n) > l.capacity() {
            return Err(Error::invalid(format!(
                "{} start items do not fit a list of {}",
                start.len(n),
                l.capacity()
            )));
        }
        l.clear();
        match start {
            Start::Items(items) => {
                for &i in items {
                    l.push(i)?;
                }
            }
            Start::All => {
                for i in 0..n {
                    push(l, i as u32);
                }
            }
        }
        Ok(())
    }

    fn enqueue(&mut self, round: &Round) -> Result<()> {
        let o = if self.halted {
            Outcome::skipped(round.index())
        } else {
            match *round {
                Round::Topology {
                    index,
                    out,
                    consumed,
                    min_key,
                } => self.topology_round(index, out, consumed, min_key)?,
                Round::Frontier {
                    index,
                    input,
                    out,
                    bucket,
                } => self.frontier_round(index, input, out, bucket)?,
            }
        };
        self.finished.push_back(o);
        Ok(())
    }

    fn wait(&mut self, count: usize) -> Result<Vec<Outcome>> {
        if count > self.finished.len() {
            return Err(Error::invalid(format!(
                "waiting for {count} rounds, {} enqueued",
                self.finished.len()
            )));
        }
        Ok(self.finished.drain(..count).collect())
    }

    fn grow(&mut self, list: ListId, capacity: usize) -> Result<()> {
        self.list(list)?;
        self.lists[list.index()].grow(capacity)
    }

    fn resume(&mut self) -> Result<()> {
        self.halted = false;
        Ok(())
    }
}
