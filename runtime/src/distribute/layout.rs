//! One part's share of a distributed kernel, and how the shares are built.

use super::{Bits, Ownership};
use crate::{mem, Result};
use rayon::prelude::*;
use std::sync::atomic::Ordering::Relaxed;

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
    /// The number of parts.
    parts: usize,
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
        parts,
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
    let (local_ptr, fine_runs) = local_ranges(&tasks, row_ptr)?;
    let fine_len = local_ptr[local_ptr.len() - 1] as usize;
    // The entries the part reads, marked by all cores.
    for &(lo, hi) in &fine_runs {
        let seen = &scratch.seen;
        col[lo as usize..hi as usize]
            .par_chunks(1 << 14)
            .for_each(|c| c.iter().for_each(|&g| seen.set(g as usize)));
    }
    let (unique_reads, lists) = halo_lists(p, scratch.parts, &scratch.seen, &scratch.read, x_owner);
    // The halo, in part order, after the owned entries; the sends to it.
    let mut halo = Vec::new();
    let mut sends = Vec::new();
    let mut offset = owned_x.len();
    for (q, global) in lists.into_iter().enumerate() {
        if global.is_empty() {
            continue;
        }
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
    let local_col = rewrite_columns(&fine_runs, fine_len, col, &scratch.local)?;
    scratch
        .seen
        .words
        .par_iter()
        .for_each(|w| w.store(0, Relaxed));
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

/// The local range array of `tasks` (rebased to 0) and their global fine
/// ranges, consecutive ones merged.
fn local_ranges(tasks: &[u32], row_ptr: &[u32]) -> Result<(Vec<u32>, FineRuns)> {
    let mut local_ptr = Vec::new();
    mem::try_reserve(&mut local_ptr, tasks.len() + 1, "a part's row_ptr")?;
    local_ptr.push(0u32);
    let mut fine_runs: Vec<(u32, u32)> = Vec::new();
    for &t in tasks {
        let (lo, hi) = (row_ptr[t as usize], row_ptr[t as usize + 1]);
        // At most nnz, which fits u32.
        local_ptr.push(local_ptr[local_ptr.len() - 1] + (hi - lo));
        if lo == hi {
            continue;
        }
        match fine_runs.last_mut() {
            Some(run) if run.1 == lo => run.1 = hi,
            _ => fine_runs.push((lo, hi)),
        }
    }
    Ok((local_ptr, fine_runs))
}

/// Global fine ranges `(lo, hi)`, in local fine order.
type FineRuns = Vec<(u32, u32)>;

/// Words of the read marks scanned per parallel chunk.
const SCAN_WORDS: usize = 4096;

/// From the entries part `p` read (`seen`): how many there are, and per
/// other part `q` the ones `q` owns, ascending (the marks are scanned in
/// index order, by chunks in parallel). Also adds them to `read`.
fn halo_lists(
    p: usize,
    parts: usize,
    seen: &Bits,
    read: &Bits,
    x_owner: &[u32],
) -> (usize, Vec<Vec<u32>>) {
    let chunks: Vec<(usize, Vec<Vec<u32>>)> = seen
        .words
        .par_chunks(SCAN_WORDS)
        .enumerate()
        .map(|(c, words)| {
            let mut lists = vec![Vec::new(); parts];
            let mut unique = 0;
            for (i, w) in words.iter().enumerate() {
                let word = c * SCAN_WORDS + i;
                let mut bits = w.load(Relaxed);
                if bits == 0 {
                    continue;
                }
                read.words[word].fetch_or(bits, Relaxed);
                unique += bits.count_ones() as usize;
                while bits != 0 {
                    let g = word * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    let q = x_owner[g] as usize;
                    if q != p {
                        lists[q].push(g as u32);
                    }
                }
            }
            (unique, lists)
        })
        .collect();
    let unique = chunks.iter().map(|c| c.0).sum();
    let mut lists: Vec<Vec<u32>> = (0..parts)
        .map(|q| Vec::with_capacity(chunks.iter().map(|c| c.1[q].len()).sum()))
        .collect();
    for (_, chunk) in chunks {
        for (q, l) in chunk.into_iter().enumerate() {
            lists[q].extend_from_slice(&l);
        }
    }
    (unique, lists)
}

/// The part's fine tasks' gathered indices in its local numbering
/// (`local[g]`), in local fine order, rewritten by all cores.
fn rewrite_columns(
    fine_runs: &[(u32, u32)],
    fine_len: usize,
    col: &[u32],
    local: &[u32],
) -> Result<Vec<u32>> {
    let mut out = mem::try_filled("a part's local col", fine_len, 0u32)?;
    let mut at = 0;
    for &(lo, hi) in fine_runs {
        let (lo, hi) = (lo as usize, hi as usize);
        out[at..at + (hi - lo)]
            .par_chunks_mut(1 << 14)
            .zip(col[lo..hi].par_chunks(1 << 14))
            .for_each(|(o, c)| {
                for (o, &g) in o.iter_mut().zip(c) {
                    *o = local[g as usize];
                }
            });
        at += hi - lo;
    }
    Ok(out)
}
