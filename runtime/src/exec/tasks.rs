use crate::worklist::Worklist;
use crate::{Error, Result};
use std::marker::PhantomData;

/// A piece of one coarse task: fine tasks `lo..hi` of task `task`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(C)]
pub struct Segment {
    pub task: u32,
    pub lo: u32,
    pub hi: u32,
}

impl Segment {
    /// A segment; `lo <= hi` is checked by [`TaskList::new`].
    pub const fn new(task: u32, lo: u32, hi: u32) -> Self {
        Segment { task, lo, hi }
    }

    /// Number of fine tasks in the segment.
    pub const fn len(&self) -> u32 {
        self.hi.saturating_sub(self.lo)
    }

    /// Whether the segment holds no fine task.
    pub const fn is_empty(&self) -> bool {
        self.hi <= self.lo
    }
}

/// A task that appears in more than one segment of a [`TaskList`]: its
/// partial results are folded in list order before its epilogue runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitTask {
    pub task: u32,
    /// Range into [`TaskList::split_segments`].
    pub first: u32,
    pub count: u32,
}

/// An ordered list of task segments, the unit throttled schedules launch.
///
/// A task may occur in several segments (a long row split across partitions);
/// executors then compute one partial result per segment and fold the
/// partials *in list order*, starting from the kernel's `init` once, before the
/// epilogue runs. That makes the result deterministic for any reduce operator.
/// Tasks that occur once run whole, with no scratch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskList {
    segments: Vec<Segment>,
    /// Per segment: true when its task occurs in no other segment.
    whole: Vec<bool>,
    split: Vec<SplitTask>,
    /// Segment ids of split tasks, grouped by task, each group in list order.
    split_segments: Vec<u32>,
}

impl TaskList {
    /// Builds a task list, checking `lo <= hi` and that the list fits u32 ids.
    pub fn new(segments: Vec<Segment>) -> Result<Self> {
        crate::error::to_u32("number of segments", segments.len())?;
        if let Some((i, s)) = segments.iter().enumerate().find(|(_, s)| s.lo > s.hi) {
            return Err(Error::InvalidTaskList(format!(
                "segment {i} (task {}) has lo {} > hi {}",
                s.task, s.lo, s.hi
            )));
        }
        use rayon::prelude::*;
        // Group the segments by task in list order. A list whose tasks never
        // decrease (a pointer array cut into pieces: every launch's split)
        // is grouped as it is; others through a sort of (task, position):
        // O(s log s), independent of the largest task id. Keys are distinct
        // (the position breaks ties): an unstable parallel sort gives the
        // stable order.
        let ascending = segments.par_windows(2).all(|w| w[0].task <= w[1].task);
        let order: Option<Vec<u32>> = (!ascending).then(|| {
            let mut order: Vec<u32> = (0..segments.len() as u32).collect();
            order.par_sort_unstable_by_key(|&i| (segments[i as usize].task, i));
            order
        });
        let at = |g: usize| order.as_ref().map_or(g as u32, |o| o[g]);
        let mut whole = vec![true; segments.len()];
        let mut split = Vec::new();
        let mut split_segments = Vec::new();
        let mut g = 0;
        while g < segments.len() {
            let task = segments[at(g) as usize].task;
            let mut e = g + 1;
            while e < segments.len() && segments[at(e) as usize].task == task {
                e += 1;
            }
            if e - g > 1 {
                split.push(SplitTask {
                    task,
                    first: split_segments.len() as u32,
                    count: (e - g) as u32,
                });
                for k in g..e {
                    let i = at(k);
                    whole[i as usize] = false;
                    split_segments.push(i);
                }
            }
            g = e;
        }
        Ok(TaskList {
            segments,
            whole,
            split,
            split_segments,
        })
    }

    /// One whole segment per task `0..n`, given the tasks' fine-task ranges as
    /// a CSR-style pointer array of length `n + 1`.
    pub fn from_ptr(ptr: &[u32]) -> Result<Self> {
        Self::chunked(ptr, u32::MAX)
    }

    /// Splits every task of a CSR-style pointer array into segments of at most
    /// `max_len` fine tasks (an empty task keeps one empty segment). Bounding
    /// the work per segment is how long rows stop serializing a warp.
    pub fn chunked(ptr: &[u32], max_len: u32) -> Result<Self> {
        if max_len == 0 {
            return Err(Error::invalid("segment length bound must be at least 1"));
        }
        use rayon::prelude::*;
        let n = ptr.len().saturating_sub(1);
        crate::error::to_u32("number of tasks", n)?;
        if let Some(t) = (0..n).into_par_iter().find_first(|&t| ptr[t] > ptr[t + 1]) {
            return Err(Error::InvalidTaskList(format!(
                "pointer array decreases at task {t}: {} > {}",
                ptr[t],
                ptr[t + 1]
            )));
        }
        // In parallel (a launch's split cuts every task of its matrix, tens
        // of millions): blocks of tasks, each block's pieces written into
        // its own part of the list, found by a prefix sum of the blocks'
        // piece counts. An empty task keeps one empty piece; (pieces − 1) ·
        // max_len < hi − lo, so no start overflows.
        let pieces = |t: usize| (ptr[t + 1] - ptr[t]).div_ceil(max_len).max(1) as usize;
        const BLOCK: usize = 1 << 14;
        let blocks = n.div_ceil(BLOCK);
        let tasks = |b: usize| b * BLOCK..((b + 1) * BLOCK).min(n);
        let counts: Vec<usize> = (0..blocks)
            .into_par_iter()
            .map(|b| tasks(b).map(pieces).sum())
            .collect();
        let total: usize = counts.iter().sum();
        crate::mem::check_elems::<Segment>("a task list's segments", total)?;
        let mut segs: Vec<Segment> = Vec::with_capacity(total);
        let mut parts = Vec::with_capacity(blocks);
        let mut rest = &mut segs.spare_capacity_mut()[..total];
        for (b, &c) in counts.iter().enumerate() {
            let (head, tail) = rest.split_at_mut(c);
            parts.push((b, head));
            rest = tail;
        }
        parts.into_par_iter().for_each(|(b, out)| {
            let mut slots = out.iter_mut();
            for t in tasks(b) {
                let (lo, hi) = (ptr[t], ptr[t + 1]);
                for k in 0..pieces(t) as u32 {
                    let s = lo + k * max_len;
                    let seg = Segment::new(t as u32, s, s.saturating_add(max_len).min(hi));
                    slots.next().expect("counted above").write(seg);
                }
            }
        });
        // SAFETY: the parts tile the first `total` slots, and each block
        // wrote one segment per piece of its tasks: as many as it counted
        // (the same `pieces`), so every slot below `total` is written.
        unsafe { segs.set_len(total) };
        Self::new(segs)
    }

    /// Task `task` alone, its fine tasks `lo..hi` cut into `pieces`
    /// consecutive segments of near-equal length (lengths differ by at most
    /// one), in order: one long task spread over the whole device, as a
    /// global reduction runs (the partials are folded in list order, so the
    /// result is the same on every run). Fewer pieces when the range is
    /// shorter than `pieces` (one fine task each); an empty range keeps one
    /// empty segment.
    ///
    /// # Errors
    /// `pieces` is 0, or `lo > hi`.
    pub fn split_evenly(task: u32, lo: u32, hi: u32, pieces: u32) -> Result<Self> {
        Self::new(even_pieces(task, lo, hi, pieces)?)
    }

    /// Every task of a CSR-style pointer array cut into `pieces` segments
    /// of near-equal length ([`TaskList::split_evenly`] per task, tasks in
    /// order): fewer for a task shorter than `pieces`, one empty segment for
    /// an empty task.
    ///
    /// # Errors
    /// `pieces` is 0, the pointer array decreases, or the list would hold
    /// more than `u32::MAX` segments.
    pub fn split_every_task(ptr: &[u32], pieces: u32) -> Result<Self> {
        let n = ptr.len().saturating_sub(1);
        crate::error::to_u32("number of tasks", n)?;
        let mut segs = Vec::with_capacity(n);
        for t in 0..n {
            let (lo, hi) = (ptr[t], ptr[t + 1]);
            if lo > hi {
                return Err(Error::InvalidTaskList(format!(
                    "pointer array decreases at task {t}: {lo} > {hi}"
                )));
            }
            segs.extend(even_pieces(t as u32, lo, hi, pieces)?);
        }
        Self::new(segs)
    }

    /// The segments, in launch order.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Number of segments.
    pub fn len(&self) -> usize {
        self.segments.len()
    }

    /// Whether the list holds no segment.
    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }

    /// Whether segment `i`'s task occurs only in that segment.
    pub fn is_whole(&self, i: usize) -> bool {
        self.whole[i]
    }

    /// The tasks that occur in more than one segment.
    pub fn split_tasks(&self) -> &[SplitTask] {
        &self.split
    }

    /// Segment ids of split tasks, grouped as [`SplitTask::first`] says.
    pub fn split_segments(&self) -> &[u32] {
        &self.split_segments
    }

    /// Per-segment flags: whether each segment's task is whole.
    pub fn whole_flags(&self) -> &[bool] {
        &self.whole
    }

    /// The segments as `task, lo, hi` words, three per segment, without a
    /// copy: what a device upload sends (a launch's list holds tens of
    /// millions of segments).
    pub fn segment_words(&self) -> &[u32] {
        const _: () =
            assert!(std::mem::size_of::<Segment>() == 12 && std::mem::align_of::<Segment>() == 4);
        // SAFETY: `Segment` is `repr(C)` of three `u32` with no padding
        // (asserted above), so `len` segments are `3 · len` initialised,
        // aligned `u32`, borrowed for as long as `self`.
        unsafe {
            std::slice::from_raw_parts(
                self.segments.as_ptr().cast::<u32>(),
                3 * self.segments.len(),
            )
        }
    }

    /// [`whole_flags`](Self::whole_flags) as bytes (0 or 1), without a copy.
    pub fn whole_bytes(&self) -> &[u8] {
        // SAFETY: a `bool` is one byte holding 0 or 1, a valid `u8`; same
        // length and lifetime.
        unsafe { std::slice::from_raw_parts(self.whole.as_ptr().cast::<u8>(), self.whole.len()) }
    }
}

/// `lo..hi` of `task` in `min(pieces, hi - lo)` segments (one empty
/// segment for an empty range) whose lengths differ by at most one.
fn even_pieces(task: u32, lo: u32, hi: u32, pieces: u32) -> Result<Vec<Segment>> {
    if pieces == 0 {
        return Err(Error::invalid("a task must be split into at least 1 piece"));
    }
    if lo > hi {
        return Err(Error::InvalidTaskList(format!(
            "task {task}: range {lo}..{hi} is reversed"
        )));
    }
    let len = u64::from(hi - lo);
    let p = u64::from(pieces).min(len).max(1);
    // Piece i starts at lo + floor(len * i / p): u64 keeps the product exact.
    let at = |i: u64| lo + (len * i / p) as u32;
    Ok((0..p)
        .map(|i| Segment::new(task, at(i), at(i + 1)))
        .collect())
}

/// Which coarse tasks a launch runs.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Tasks<'a> {
    /// Tasks `0..n`, each whole.
    All(usize),
    /// The segments of a task list, split tasks merged in list order.
    List(&'a TaskList),
    /// The items of a worklist, each a whole task (an item pushed twice
    /// runs twice): the frontier of a data-driven round. The launch reads
    /// the items stored when it starts; pushes to other lists meanwhile are
    /// fine, pushes to this one are not part of it.
    Frontier(&'a Worklist),
    /// The items of a worklist in GPU memory, as the device layer
    /// describes it (`warpfit_gpu::DeviceWorklist` converts into this);
    /// the launch reads the count on the device, not on the host.
    DeviceFrontier(DeviceFrontier<'a>),
}

/// A worklist in GPU memory as a task source: device addresses, borrowed
/// for `'a` from the list that owns them. Only the CUDA backend runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceFrontier<'a> {
    /// Device address of the items (`u32`, `capacity` of them).
    pub items: u64,
    /// Device address of the list's push count (`u64`): the items stored
    /// are the first `min(count, capacity)`.
    pub count: u64,
    /// Items the list can store.
    pub capacity: u64,
    /// The ordinal of the CUDA device the memory belongs to.
    pub device: usize,
    _borrow: PhantomData<&'a ()>,
}

impl DeviceFrontier<'_> {
    /// A frontier over the list at these addresses.
    ///
    /// # Safety
    /// `items` holds `capacity` `u32`s and `count` one `u64` in the memory
    /// of CUDA device `device`, both valid for as long as the frontier (and
    /// any launch made with it) lives.
    pub unsafe fn new(items: u64, count: u64, capacity: u64, device: usize) -> Self {
        DeviceFrontier {
            items,
            count,
            capacity,
            device,
            _borrow: PhantomData,
        }
    }
}

impl<'a> From<&'a Worklist> for Tasks<'a> {
    fn from(list: &'a Worklist) -> Self {
        Tasks::Frontier(list)
    }
}

impl From<usize> for Tasks<'_> {
    fn from(n: usize) -> Self {
        Tasks::All(n)
    }
}

impl<'a> From<&'a TaskList> for Tasks<'a> {
    fn from(list: &'a TaskList) -> Self {
        Tasks::List(list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_splits_long_rows_and_keeps_empty_ones() {
        let list = TaskList::chunked(&[0, 5, 5, 6], 2).unwrap();
        let segs: Vec<_> = list
            .segments()
            .iter()
            .map(|s| (s.task, s.lo, s.hi))
            .collect();
        assert_eq!(
            segs,
            vec![(0, 0, 2), (0, 2, 4), (0, 4, 5), (1, 5, 5), (2, 5, 6)]
        );
        assert_eq!(list.split_tasks().len(), 1);
        assert_eq!(list.split_tasks()[0].count, 3);
        assert_eq!(list.split_segments(), &[0, 1, 2]);
        assert_eq!(list.whole_flags(), &[false, false, false, true, true]);
    }

    #[test]
    fn split_groups_follow_list_order() {
        let list = TaskList::new(vec![
            Segment::new(3, 4, 6),
            Segment::new(1, 0, 1),
            Segment::new(3, 0, 4),
        ])
        .unwrap();
        assert_eq!(list.split_segments(), &[0, 2]);
        assert!(list.is_whole(1));
    }

    fn triples(list: &TaskList) -> Vec<(u32, u32, u32)> {
        list.segments()
            .iter()
            .map(|s| (s.task, s.lo, s.hi))
            .collect()
    }

    #[test]
    fn split_evenly_cuts_one_task_into_near_equal_pieces() {
        let list = TaskList::split_evenly(0, 10, 20, 3).unwrap();
        assert_eq!(triples(&list), vec![(0, 10, 13), (0, 13, 16), (0, 16, 20)]);
        assert_eq!(list.split_tasks().len(), 1);
        assert_eq!(list.split_tasks()[0].count, 3);
        // Shorter than `pieces`: one fine task each; empty: one empty segment.
        assert_eq!(
            triples(&TaskList::split_evenly(4, 0, 2, 8).unwrap()),
            vec![(4, 0, 1), (4, 1, 2)]
        );
        let empty = TaskList::split_evenly(1, 5, 5, 8).unwrap();
        assert_eq!(triples(&empty), vec![(1, 5, 5)]);
        assert!(empty.is_whole(0));
        // The whole u32 range: exact arithmetic, lengths differ by at most one.
        let big = TaskList::split_evenly(0, 0, u32::MAX, 7).unwrap();
        let lens: Vec<u32> = big.segments().iter().map(Segment::len).collect();
        assert_eq!(
            lens.iter().map(|&l| u64::from(l)).sum::<u64>(),
            u64::from(u32::MAX)
        );
        assert!(lens.iter().max().unwrap() - lens.iter().min().unwrap() <= 1);
        assert!(TaskList::split_evenly(0, 0, 10, 0).is_err());
        assert!(TaskList::split_evenly(0, 10, 9, 2).is_err());
    }

    #[test]
    fn split_every_task_cuts_each_task_in_order() {
        let list = TaskList::split_every_task(&[0, 5, 5, 6], 2).unwrap();
        assert_eq!(
            triples(&list),
            vec![(0, 0, 2), (0, 2, 5), (1, 5, 5), (2, 5, 6)]
        );
        assert_eq!(list.whole_flags(), &[false, false, true, true]);
        assert!(TaskList::split_every_task(&[0, 4, 2], 2).is_err());
        assert!(TaskList::split_every_task(&[0, 4], 0).is_err());
        assert!(TaskList::split_every_task(&[], 3).unwrap().is_empty());
    }

    #[test]
    fn words_and_bytes_are_the_segments_and_flags() {
        let list = TaskList::chunked(&[0, 5, 5, 6], 2).unwrap();
        let words: Vec<u32> = list
            .segments()
            .iter()
            .flat_map(|s| [s.task, s.lo, s.hi])
            .collect();
        assert_eq!(list.segment_words(), &words[..]);
        let bytes: Vec<u8> = list.whole_flags().iter().map(|&w| u8::from(w)).collect();
        assert_eq!(list.whole_bytes(), &bytes[..]);
        assert!(TaskList::new(Vec::new())
            .unwrap()
            .segment_words()
            .is_empty());
    }

    #[test]
    fn rejects_reversed_segments_and_bad_pointers() {
        assert!(TaskList::new(vec![Segment::new(0, 3, 1)]).is_err());
        assert!(TaskList::chunked(&[0, 4, 2], 8).is_err());
        assert!(TaskList::chunked(&[0, 4], 0).is_err());
    }

    /// Whole flags, split tasks and their segments by brute force.
    fn grouped_naively(segs: &[Segment]) -> (Vec<bool>, Vec<(u32, Vec<u32>)>) {
        let mut tasks: Vec<u32> = segs.iter().map(|s| s.task).collect();
        tasks.sort_unstable();
        tasks.dedup();
        let mut split = Vec::new();
        let mut whole = vec![true; segs.len()];
        for t in tasks {
            let ids: Vec<u32> = (0..segs.len() as u32)
                .filter(|&i| segs[i as usize].task == t)
                .collect();
            if ids.len() > 1 {
                ids.iter().for_each(|&i| whole[i as usize] = false);
                split.push((t, ids));
            }
        }
        (whole, split)
    }

    proptest::proptest! {
        /// The parallel cut gives, piece for piece, what cutting each task
        /// in turn gives (across blocks of tasks too: up to 40 000 tasks).
        #[test]
        fn chunked_cuts_each_task_in_turn(
            lens in proptest::collection::vec(0u32..9, 0..40_000),
            max_len in 1u32..6,
        ) {
            let mut ptr = vec![0u32];
            for l in &lens {
                ptr.push(ptr.last().unwrap() + l);
            }
            let mut want = Vec::new();
            for t in 0..lens.len() {
                let (lo, hi) = (ptr[t], ptr[t + 1]);
                if lo == hi {
                    want.push(Segment::new(t as u32, lo, hi));
                }
                let mut s = lo;
                while s < hi {
                    let e = (s + max_len).min(hi);
                    want.push(Segment::new(t as u32, s, e));
                    s = e;
                }
            }
            let got = TaskList::chunked(&ptr, max_len).unwrap();
            proptest::prop_assert_eq!(got.segments(), &want[..]);
        }

        /// Lists in task order (grouped as they are) and in any order
        /// (grouped through the sort) both group as the brute force does.
        #[test]
        fn grouping_matches_brute_force(
            tasks in proptest::collection::vec(0u32..12, 0..60),
            sorted in proptest::bool::ANY,
        ) {
            let mut tasks = tasks;
            if sorted {
                tasks.sort_unstable();
            }
            let segs: Vec<Segment> = tasks
                .iter()
                .enumerate()
                .map(|(i, &t)| Segment::new(t, i as u32, i as u32 + 1))
                .collect();
            let list = TaskList::new(segs.clone()).unwrap();
            let (whole, split) = grouped_naively(&segs);
            proptest::prop_assert_eq!(list.whole_flags(), &whole[..]);
            let got: Vec<(u32, Vec<u32>)> = list
                .split_tasks()
                .iter()
                .map(|s| {
                    let ids = &list.split_segments()[s.first as usize..][..s.count as usize];
                    (s.task, ids.to_vec())
                })
                .collect();
            proptest::prop_assert_eq!(got, split);
        }
    }
}
