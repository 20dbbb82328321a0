//! K-D tiling (Section 4.1): the tuples are points `(task, gathered index)` of a
//! 2-D space, and a bisection is a median cut along one coordinate, the two
//! coordinates alternating with depth as in a k-d tree.
//!
//! Every tuple subset the partitioner handles is kept in increasing tuple id,
//! which is CSR order. Then the task coordinate is monotone inside a subset, so
//! a task cut is a binary search (O(log n)), and a gathered-index cut is one
//! quickselect for the median (O(n) expected) plus one stable partition pass
//! (O(n)) that keeps both halves sorted. Cuts prefer to keep all tuples of the
//! median task (or median gathered element) on one side, since a vertex split
//! between the halves is one replica; they split it only when it would leave a
//! side empty.

use super::dbwp::Unique;
use super::work_graph::WorkGraphOf;
use super::{par, stable_partition};

/// A K-D cut of a subset.
pub(crate) struct Cut {
    /// Length of the left half.
    pub left: usize,
    /// The halves' unique vertices, when the cut counted them.
    pub halves: Option<[Unique; 2]>,
    /// Whether the halves were written to the scratch array (`ids` left
    /// as it was) rather than back into `ids`.
    pub moved: bool,
}

/// Splits `ids` (ascending tuple ids, `len >= 2`) into two non-empty halves,
/// both ascending, in place or (see [`Cut::moved`]) into `scratch`. Even
/// depths cut along the task coordinate, odd depths along the gathered
/// index.
///
/// A large gathered cut runs the parallel passes (a radix select of the
/// same median, a parallel stable partition into `scratch` that counts
/// each half's tasks); given the subset's [`par::Tally`], the radix
/// select starts from its histogram and the halves' gathered elements are
/// counted from its set: those below the pivot, those above, and the pivot
/// on each side it went to.
pub(crate) fn split(
    g: &WorkGraphOf<'_>,
    ids: &mut [u32],
    scratch: &mut [u32],
    depth: u32,
    tally: Option<&par::Tally>,
) -> Cut {
    debug_assert!(ids.len() >= 2);
    let n = ids.len();
    if depth % 2 == 0 || !par::worth(n) {
        return Cut {
            left: split_in_place(g, ids, scratch, depth),
            halves: None,
            moved: false,
        };
    }
    let cut = par::median_cut(g, ids, tally);
    let left = best_cut(n, [cut.lt, cut.lt + cut.eq]);
    let eq_left = left - cut.lt;
    let halves = par::partition_gathered(g, ids, scratch, &cut, eq_left);
    let counts = tally.map(|t| {
        let p = cut.pivot as usize;
        [
            Unique {
                tasks: halves.tasks[0],
                gathered: t.marks.count(0, p) + u32::from(eq_left > 0),
            },
            Unique {
                tasks: halves.tasks[1],
                gathered: t.marks.count(p + 1, g.n_gathered()) + u32::from(eq_left < cut.eq),
            },
        ]
    });
    Cut {
        left: halves.left,
        halves: counts,
        moved: true,
    }
}

/// The same cut on one thread, the halves back in `ids` (`scratch` at
/// least as long, for the gathered cut); returns the left half's length.
pub(crate) fn split_in_place(
    g: &WorkGraphOf<'_>,
    ids: &mut [u32],
    scratch: &mut [u32],
    depth: u32,
) -> usize {
    debug_assert!(ids.len() >= 2);
    if depth % 2 == 0 {
        split_tasks(g, ids)
    } else {
        split_gathered(g, ids, scratch)
    }
}

/// Picks the cut among `candidates` closest to `n / 2` that leaves both sides
/// non-empty, or `n / 2` when none does.
fn best_cut(n: usize, candidates: [usize; 2]) -> usize {
    let half = n / 2;
    candidates
        .into_iter()
        .filter(|&c| c > 0 && c < n)
        .min_by_key(|&c| c.abs_diff(half))
        .unwrap_or(half)
}

/// Cut along tasks: the median tuple's task goes wholly to whichever side
/// balances better. No data moves: ids are already ordered by task.
pub(crate) fn split_tasks(g: &WorkGraphOf<'_>, ids: &[u32]) -> usize {
    let n = ids.len();
    let ptr = g.ptr();
    let t = g.task_of(ids[n / 2]) as usize;
    let (first, end) = (ptr[t], ptr[t + 1]);
    let before = ids.partition_point(|&id| id < first);
    let through = ids.partition_point(|&id| id < end);
    best_cut(n, [before, through])
}

/// Cut along gathered indices: quickselect the median gathered index `c`, then
/// move tuples reading `< c` left and `> c` right; those reading `c` all go to
/// the side that balances better (split only when one side would be empty).
fn split_gathered(g: &WorkGraphOf<'_>, ids: &mut [u32], scratch: &mut [u32]) -> usize {
    let n = ids.len();
    let gathered = g.gathered();
    let cols = &mut scratch[..n];
    for (c, &id) in cols.iter_mut().zip(ids.iter()) {
        *c = gathered[id as usize];
    }
    let (_, &mut pivot, _) = cols.select_nth_unstable(n / 2);
    let (mut lt, mut eq) = (0usize, 0usize);
    for &id in ids.iter() {
        let c = gathered[id as usize];
        lt += usize::from(c < pivot);
        eq += usize::from(c == pivot);
    }
    let left = best_cut(n, [lt, lt + eq]);
    // `left - lt` of the pivot's tuples go left, in order.
    let mut eq_left = left - lt;
    stable_partition(ids, scratch, |id| {
        let c = gathered[id as usize];
        if c == pivot {
            let l = eq_left > 0;
            eq_left = eq_left.saturating_sub(1);
            l
        } else {
            c < pivot
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_cut_keeps_the_median_task_whole() {
        // Tasks of sizes 3, 4, 1: the median tuple (id 4) is in task 1 (ids 3..7).
        let g = WorkGraphOf::new(vec![0, 3, 7, 8], vec![0, 1, 2, 0, 1, 2, 3, 0], 4, 4, 4).unwrap();
        let mut ids: Vec<u32> = (0..8).collect();
        let mut scratch = vec![0; 8];
        let cut = split_in_place(&g, &mut ids, &mut scratch, 0);
        // Cuts at 3 (|3 - 4| = 1) or 7 (|7 - 4| = 3): 3 wins.
        assert_eq!(cut, 3);
        assert_eq!(ids, (0..8).collect::<Vec<u32>>());
    }

    #[test]
    fn gathered_cut_is_stable_and_balanced() {
        let g = WorkGraphOf::new(vec![0, 4, 8], vec![5, 1, 4, 0, 2, 7, 3, 6], 8, 4, 4).unwrap();
        let mut ids: Vec<u32> = (0..8).collect();
        let mut scratch = vec![0; 8];
        let cut = split_in_place(&g, &mut ids, &mut scratch, 1);
        assert_eq!(cut, 4);
        // Gathered < 4 on the left, each half in increasing id.
        assert_eq!(&ids[..4], &[1, 3, 4, 6]);
        assert_eq!(&ids[4..], &[0, 2, 5, 7]);
    }

    #[test]
    fn single_vertex_subsets_still_split() {
        // One task, every tuple reads element 0: both cuts must split a vertex.
        let g = WorkGraphOf::new(vec![0, 5], vec![0; 5], 1, 4, 4).unwrap();
        let mut scratch = vec![0; 5];
        for depth in 0..2 {
            let mut ids: Vec<u32> = (0..5).collect();
            let cut = split_in_place(&g, &mut ids, &mut scratch, depth);
            assert!(cut > 0 && cut < 5, "depth {depth}: cut {cut}");
            assert_eq!(ids, (0..5).collect::<Vec<u32>>());
        }
    }
}
