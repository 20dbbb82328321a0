//! One part's share of a distributed kernel, and how the shares are built.

use super::{Bits, Ownership};
use crate::{mem, Result};
use rayon::slice::ParallelSliceMut;

/// One part's share: everything a device needs to run its tasks.
///
/// The local `x` of the part is `[owned entries | halo from the first part
/// read from | halo from the next | …]` ([`PartLayout::local_x_len`]
/// entries): local index `i < owned_x.len()` is global entry `owned_x[i]`,
/// and the halo from part `h.part` occupies `h.offset..h.offset +
/// h.global.len()`, holding global entries `h.global` in that order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartLayout {
    /// Global ids of the tasks this part owns, ascending: local task `i` is
    /// global task `tasks[i]`.
    pub tasks: Vec<u32>,
    /// Global indices of the gathered entries this part owns, ascending:
    /// local `x` index `i < owned_x.len()` is global entry `owned_x[i]`.
    pub owned_x: Vec<u32>,
    /// The local range array: local task `i` owns local fine tasks
    /// `row_ptr[i]..row_ptr[i + 1]`; `tasks.len() + 1` entries from 0.
    pub row_ptr: Vec<u32>,
    /// The local `x` index each local fine task reads. Local fine order is
    /// the owned tasks' fine ranges concatenated in task order, so fine task
    /// `k` of local task `i` is global fine task `row_ptr[tasks[i]] + k`.
    pub col: Vec<u32>,
    /// What this part receives: one entry per other part it reads at least
    /// one gathered entry from, ordered by part, laid out one after the
    /// other after the owned entries.
    pub halo: Vec<HaloFrom>,
    /// What this part sends: one entry per other part that reads at least
    /// one of this part's entries, ordered by part.
    pub sends: Vec<HaloTo>,
}

/// The entries one part receives from another before each launch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HaloFrom {
    /// The sending part (never the receiver itself).
    pub part: usize,
    /// Where the received entries start in the receiver's local `x`.
    pub offset: usize,
    /// Global indices of the received entries, ascending: exactly the
    /// entries owned by `part` that the receiver's fine tasks read, each
    /// once.
    pub global: Vec<u32>,
}

/// The entries one part sends to another before each launch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HaloTo {
    /// The receiving part (never the sender itself).
    pub part: usize,
    /// Local owned-`x` indices on the sender, in the order of the receiver's
    /// [`HaloFrom::global`]: packing `local_x[local[k]]` for every `k` gives
    /// the receiver's halo slice as it is laid out.
    pub local: Vec<u32>,
}

impl PartLayout {
    /// Entries of the local `x`: owned entries plus every halo.
    pub fn local_x_len(&self) -> usize {
        self.owned_x.len() + self.halo_len()
    }

    /// Entries received before each launch (the halo, all senders).
    pub fn halo_len(&self) -> usize {
        self.halo.iter().map(|h| h.global.len()).sum()
    }

    /// Entries sent before each launch (all receivers).
    pub fn send_len(&self) -> usize {
        self.sends.iter().map(|s| s.local.len()).sum()
    }

    /// Fine tasks of this part.
    pub fn fine_len(&self) -> usize {
        self.col.len()
    }

    /// The halo received from part `q`, if this part reads from it.
    pub fn halo_from(&self, q: usize) -> Option<&HaloFrom> {
        let i = self.halo.binary_search_by_key(&q, |h| h.part).ok()?;
        Some(&self.halo[i])
    }

    /// The entries sent to part `p`, if it reads from this part.
    pub fn send_to(&self, p: usize) -> Option<&HaloTo> {
        let i = self.sends.binary_search_by_key(&p, |s| s.part).ok()?;
        Some(&self.sends[i])
    }
}

/// What building one part leaves besides its layout.
pub(super) struct Built {
    /// The part's layout, `sends` still empty.
    pub layout: PartLayout,
    /// What each sender `q` must send to this part, as `(q, HaloTo)`.
    pub sends: Vec<(usize, HaloTo)>,
    /// Distinct gathered entries this part reads (owned and halo).
    pub unique_reads: usize,
    /// The part's fine ranges, consecutive ones merged: `(lo, hi)`.
    pub fine_runs: Vec<(u32, u32)>,
}

/// Build state shared by the parts, sized by `x_len` once.
pub(super) struct Scratch {
    /// For every gathered entry, its index in its owner's `owned_x`, while
    /// a part is built also the halo index of the entries in its halo.
    local: Vec<u32>,
    /// Entries the part being built has read (cleared after each part).
    seen: Bits,
    /// Entries any part has read.
    pub read: Bits,
    /// Per sending part, the entries being collected for the current halo.
    lists: Vec<Vec<u32>>,
}

/// One list of indices per part.
pub(super) type PerPart = Vec<Vec<u32>>;

/// The tasks and the owned entries of every part, ascending (a counting
/// pass), plus the scratch whose `local` map gives each entry's owned index.
pub(super) fn owned_lists(own: &Ownership) -> Result<(PerPart, PerPart, Scratch)> {
    let parts = own.parts();
    let bucket = |owners: &[u32], what: &str| -> Result<PerPart> {
        let mut count = vec![0usize; parts];
        for &o in owners {
            count[o as usize] += 1;
        }
        let mut lists: Vec<Vec<u32>> = Vec::with_capacity(parts);
        for &c in &count {
            let mut v = Vec::new();
            mem::try_reserve(&mut v, c, what)?;
            lists.push(v);
        }
        for (i, &o) in owners.iter().enumerate() {
            lists[o as usize].push(i as u32);
        }
        Ok(lists)
    };
    let tasks = bucket(own.task_owner(), "a part's task list")?;
    let owned_x = bucket(own.x_owner(), "a part's owned gathered entries")?;
    let x_len = own.x_owner().len();
    let mut local = Vec::new();
    mem::try_reserve(&mut local, x_len, "the gathered entries' local indices")?;
    let mut next = vec![0u32; parts];
    local.extend(own.x_owner().iter().map(|&o| {
        let i = next[o as usize];
        next[o as usize] += 1;
        i
    }));
    let scratch = Scratch {
        local,
        seen: Bits::new(x_len, "the per-part read marks")?,
        read: Bits::new(x_len, "the read marks")?,
        lists: vec![Vec::new(); parts],
    };
    Ok((tasks, owned_x, scratch))
}

/// Builds part `p`'s layout from its tasks and owned entries (ascending) and
/// the checked global pattern, using `scratch` (left as it was found, but
/// for `read`).
///
/// The halo from each `q` is every distinct `q`-owned entry the part's fine
/// tasks read, sorted; the sends to this part list those entries' indices in
/// `q`'s owned `x`. To rewrite columns in one pass, each halo entry's
/// `scratch.local` is set to its halo index for the part's duration and then
/// restored from the sends, which hold exactly the old values.
pub(super) fn build_part(
    p: usize,
    tasks: Vec<u32>,
    owned_x: Vec<u32>,
    row_ptr: &[u32],
    col: &[u32],
    x_owner: &[u32],
    scratch: &mut Scratch,
) -> Result<Built> {
    let range = |t: u32| row_ptr[t as usize] as usize..row_ptr[t as usize + 1] as usize;
    let mut local_ptr = Vec::new();
    mem::try_reserve(&mut local_ptr, tasks.len() + 1, "a part's row_ptr")?;
    local_ptr.push(0u32);
    let mut fine_runs: Vec<(u32, u32)> = Vec::new();
    let mut unique_reads = 0usize;
    for &t in &tasks {
        let r = range(t);
        // At most nnz, which fits u32.
        local_ptr.push(local_ptr[local_ptr.len() - 1] + (r.end - r.start) as u32);
        if r.is_empty() {
            continue;
        }
        match fine_runs.last_mut() {
            Some(run) if run.1 as usize == r.start => run.1 = r.end as u32,
            _ => fine_runs.push((r.start as u32, r.end as u32)),
        }
        for &g in &col[r] {
            if scratch.seen.insert(g as usize) {
                scratch.read.insert(g as usize);
                unique_reads += 1;
                let q = x_owner[g as usize] as usize;
                if q != p {
                    scratch.lists[q].push(g);
                }
            }
        }
    }
    let fine_len = local_ptr[local_ptr.len() - 1] as usize;
    // The halo, in part order, after the owned entries; the sends to it.
    let mut halo = Vec::new();
    let mut sends = Vec::new();
    let mut offset = owned_x.len();
    for q in 0..scratch.lists.len() {
        let mut global = std::mem::take(&mut scratch.lists[q]);
        if global.is_empty() {
            continue;
        }
        global.par_sort_unstable();
        let local: Vec<u32> = global.iter().map(|&g| scratch.local[g as usize]).collect();
        for (k, &g) in global.iter().enumerate() {
            // Below the part's local x length, itself at most x_len.
            scratch.local[g as usize] = (offset + k) as u32;
        }
        let len = global.len();
        halo.push(HaloFrom {
            part: q,
            offset,
            global,
        });
        sends.push((q, HaloTo { part: p, local }));
        offset += len;
    }
    let mut local_col = Vec::new();
    mem::try_reserve(&mut local_col, fine_len, "a part's local col")?;
    for &(lo, hi) in &fine_runs {
        for &g in &col[lo as usize..hi as usize] {
            local_col.push(scratch.local[g as usize]);
            scratch.seen.remove(g as usize);
        }
    }
    for (h, (_, s)) in halo.iter().zip(&sends) {
        for (&g, &l) in h.global.iter().zip(&s.local) {
            scratch.local[g as usize] = l;
        }
    }
    Ok(Built {
        layout: PartLayout {
            tasks,
            owned_x,
            row_ptr: local_ptr,
            col: local_col,
            halo,
            sends: Vec::new(),
        },
        sends,
        unique_reads,
        fine_runs,
    })
}
