//! The distribution: ownership plus every part's layout, and the moves of
//! data between global arrays and parts.

use super::layout::{build_part, owned_lists, Built, HaloFrom, PartLayout, Scratch};
use super::{check_pattern, Ownership, PartitionKind};
use crate::{mem, Error, Result};
use rayon::prelude::*;

/// A gather kernel distributed over parts: the [`Ownership`], each part's
/// [`PartLayout`], and the fine ranges that cut fine-task arrays to parts.
///
/// Built once per kernel pattern; the per-launch work is the exchange of
/// halos ([`Distribution::exchange_host`] on the host).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Distribution {
    ownership: Ownership,
    parts: Vec<PartLayout>,
    n_tasks: usize,
    x_len: usize,
    /// Fine tasks of the whole kernel (`col.len()`).
    fine_total: usize,
    /// Per part, its global fine ranges `(lo, hi)` in local fine order,
    /// consecutive ranges merged (one range for a contiguous block of rows).
    fine_runs: Vec<Vec<(u32, u32)>>,
    /// Per part, the distinct gathered entries its fine tasks read.
    unique_reads: Vec<usize>,
    /// Distinct gathered entries read by any fine task.
    read_total: usize,
    /// Made from row blocks ([`Distribution::from_row_blocks`]): there is
    /// no global fine array to cut, `fine_runs` are each part's own.
    from_blocks: bool,
}

impl Distribution {
    /// Distributes the kernel over `parts` parts as `kind` assigns them
    /// ([`Ownership::new`], then [`Distribution::from_ownership`]).
    ///
    /// # Errors
    /// As [`Ownership::new`]; the memory budget refuses a part's arrays.
    pub fn new(
        kind: PartitionKind,
        parts: usize,
        row_ptr: &[u32],
        col: &[u32],
        x_len: usize,
    ) -> Result<Self> {
        let own = Ownership::new(kind, parts, row_ptr, col, x_len)?;
        Self::build(own, row_ptr, col)
    }

    /// Distributes the kernel as `own` assigns tasks and gathered entries.
    /// Each part's layout is built in time linear in its fine tasks plus
    /// sorting its halo.
    ///
    /// # Errors
    /// The pattern is malformed (as [`Ownership::new`] checks it); `own` is
    /// for another shape (`task_owner` not `n_tasks` long or `x_owner` not
    /// `x_len` long); the memory budget refuses an array.
    pub fn from_ownership(
        own: Ownership,
        row_ptr: &[u32],
        col: &[u32],
        x_len: usize,
    ) -> Result<Self> {
        let n_tasks = check_pattern(row_ptr, col, x_len)?;
        if own.task_owner().len() != n_tasks {
            return Err(Error::length(
                "ownership task_owner (= n_tasks)",
                n_tasks,
                own.task_owner().len(),
            ));
        }
        if own.x_owner().len() != x_len {
            return Err(Error::length(
                "ownership x_owner (= x_len)",
                x_len,
                own.x_owner().len(),
            ));
        }
        Self::build(own, row_ptr, col)
    }

    /// The layouts of a checked pattern and an ownership of its shape.
    fn build(own: Ownership, row_ptr: &[u32], col: &[u32]) -> Result<Self> {
        Self::assemble(own, col.len(), false, |p, t, x, x_owner, scratch| {
            build_part(p, t, x, row_ptr, col, x_owner, scratch)
        })
    }

    /// The distribution of `own` from its parts' layouts, built in part
    /// order by `part(p, tasks, owned_x, x_owner, scratch)`.
    fn assemble(
        own: Ownership,
        fine_total: usize,
        from_blocks: bool,
        mut part: impl FnMut(usize, Vec<u32>, Vec<u32>, &[u32], &mut Scratch) -> Result<Built>,
    ) -> Result<Self> {
        let (tasks, owned_x, mut scratch) = owned_lists(&own)?;
        let n = own.parts();
        let mut parts = Vec::with_capacity(n);
        let mut fine_runs = Vec::with_capacity(n);
        let mut unique_reads = Vec::with_capacity(n);
        let mut sends = vec![Vec::new(); n];
        for (p, (t, x)) in tasks.into_iter().zip(owned_x).enumerate() {
            let built = part(p, t, x, own.x_owner(), &mut scratch)?;
            // Parts are built in order, so each sender's list is by receiver.
            for (q, s) in built.sends {
                sends[q].push(s);
            }
            parts.push(built.layout);
            fine_runs.push(built.fine_runs);
            unique_reads.push(built.unique_reads);
        }
        for (layout, s) in parts.iter_mut().zip(sends) {
            layout.sends = s;
        }
        Ok(Distribution {
            n_tasks: own.task_owner().len(),
            x_len: own.x_owner().len(),
            ownership: own,
            parts,
            fine_total,
            fine_runs,
            unique_reads,
            read_total: scratch.read.count(),
            from_blocks,
        })
    }

    /// A square kernel distributed by contiguous blocks of rows given part
    /// by part: `blocks[p] = (row_ptr, col)` holds part `p`'s rows, the
    /// blocks in order (part 0 the first rows), each with its own range
    /// array from 0 and its fine tasks' global gathered indices (below
    /// `x_len`, the sum of the blocks' rows). Part `p` owns its rows and
    /// the gathered entries of the same indices. The layouts are those
    /// [`Distribution::from_ownership`] makes of the whole pattern with that
    /// ownership, but no array of the whole is ever held: each block's
    /// counts must fit u32, the whole's need not (a matrix built part by
    /// part, as [`rmat_rows`](crate::gen::rmat_rows) does). There is no
    /// global fine array: [`Distribution::fine_part`] refuses, each part's
    /// fine arrays are its block's own.
    ///
    /// # Errors
    /// No block, or more than [`MAX_PARTS`](super::MAX_PARTS); a block's
    /// pattern malformed (as [`Distribution::new`] checks it) or a column
    /// not below `x_len`; the memory budget.
    pub fn from_row_blocks(blocks: &[(&[u32], &[u32])]) -> Result<Self> {
        super::check_parts(blocks.len())?;
        let x_len: usize = blocks
            .iter()
            .map(|(ptr, _)| ptr.len().saturating_sub(1))
            .sum();
        let mut task_owner = Vec::new();
        mem::try_reserve(&mut task_owner, x_len, "the row blocks' owners")?;
        for (p, (ptr, col)) in blocks.iter().enumerate() {
            let rows = check_pattern(ptr, col, x_len)
                .map_err(|e| Error::invalid(format!("row block {p}: {e}")))?;
            task_owner.extend(std::iter::repeat(p as u32).take(rows));
        }
        let own = Ownership::from_owners(blocks.len(), task_owner.clone(), task_owner)?;
        let fine_total = blocks.iter().map(|(_, col)| col.len()).sum();
        Self::assemble(own, fine_total, true, |p, t, x, x_owner, scratch| {
            // The block's rows are its local tasks 0..len; the layout names
            // them by their global ids.
            let (ptr, col) = blocks[p];
            let local: Vec<u32> = (0..t.len() as u32).collect();
            let mut built = build_part(p, local, x, ptr, col, x_owner, scratch)?;
            built.layout.tasks = t;
            Ok(built)
        })
    }

    /// Widens every halo that holds at least `share` of its sender's owned
    /// entries (but not all) to all of them, and rewrites the receivers'
    /// columns to match. A halo of all the sender's entries is the
    /// sender's owned `x` as it lies ([`HaloTo::local`](super::HaloTo::local) is `0..n`), so it can
    /// be sent without packing: the pair's exchange becomes its share of an
    /// all-gather, trading the entries added for the pack it saves. `share
    /// = 1` changes nothing; `share = 0` makes every exchanging pair whole.
    /// [`Distribution::replication`] is unchanged (it counts what is read);
    /// [`Distribution::exchanged`] counts what is sent.
    ///
    /// # Errors
    /// `share` outside `0..=1`; the memory budget refuses a part's column
    /// map.
    pub fn with_whole_blocks(mut self, share: f64) -> Result<Self> {
        if !(0.0..=1.0).contains(&share) {
            return Err(Error::invalid(format!(
                "a whole-block share is a fraction in 0..=1, got {share}"
            )));
        }
        let owned: Vec<usize> = self.parts.iter().map(|l| l.owned_x.len()).collect();
        let widen = |h: &HaloFrom| {
            let n = owned[h.part];
            h.global.len() < n && h.global.len() as f64 >= share * n as f64
        };
        for p in 0..self.parts.len() {
            if !self.parts[p].halo.iter().any(widen) {
                continue;
            }
            let layout = &self.parts[p];
            let mut remap = mem::try_filled("a part's column map", layout.local_x_len(), 0u32)?;
            remap[..owned[p]]
                .iter_mut()
                .enumerate()
                .for_each(|(i, r)| *r = i as u32);
            let mut halo = Vec::with_capacity(layout.halo.len());
            let mut widened = Vec::new();
            let mut offset = owned[p];
            for h in &layout.halo {
                let q = h.part;
                let slots = &mut remap[h.offset..h.offset + h.global.len()];
                if widen(h) {
                    let sent = self.parts[q].send_to(p).ok_or_else(|| {
                        Error::invalid(format!(
                            "distribution: part {p} receives from {q}, which sends nothing"
                        ))
                    })?;
                    // Within x_len, which fits u32.
                    for (r, &l) in slots.iter_mut().zip(&sent.local) {
                        *r = (offset + l as usize) as u32;
                    }
                    halo.push(HaloFrom {
                        part: q,
                        offset,
                        global: self.parts[q].owned_x.clone(),
                    });
                    widened.push(q);
                    offset += owned[q];
                } else {
                    for (k, r) in slots.iter_mut().enumerate() {
                        *r = (offset + k) as u32;
                    }
                    halo.push(HaloFrom {
                        part: q,
                        offset,
                        global: h.global.clone(),
                    });
                    offset += h.global.len();
                }
            }
            let layout = &mut self.parts[p];
            layout
                .col
                .par_chunks_mut(1 << 14)
                .for_each(|c| c.iter_mut().for_each(|c| *c = remap[*c as usize]));
            layout.halo = halo;
            for q in widened {
                let n = owned[q] as u32;
                let sends = &mut self.parts[q].sends;
                if let Some(s) = sends.iter_mut().find(|s| s.part == p) {
                    s.local = (0..n).collect();
                }
            }
        }
        Ok(self)
    }

    /// Every part's layout, by part.
    pub fn parts(&self) -> &[PartLayout] {
        &self.parts
    }

    /// Who owns each task and gathered entry.
    pub fn ownership(&self) -> &Ownership {
        &self.ownership
    }

    /// Tasks of the whole kernel.
    pub fn n_tasks(&self) -> usize {
        self.n_tasks
    }

    /// Entries of the whole gathered vector.
    pub fn x_len(&self) -> usize {
        self.x_len
    }

    /// Fine tasks of the whole kernel.
    pub fn fine_len(&self) -> usize {
        self.fine_total
    }

    /// Part `p`'s layout, or an error naming `p`.
    fn part(&self, p: usize) -> Result<&PartLayout> {
        self.parts
            .get(p)
            .ok_or_else(|| Error::out_of_range("distribution part", p, self.parts.len()))
    }

    /// A fine-task array (one entry per fine task, e.g. matrix values) cut to
    /// part `p`'s local fine order: entry `k` is the value of the fine task
    /// whose local column is `parts()[p].col[k]`.
    ///
    /// # Errors
    /// `p` is not a part; `global` is not `col.len()` long; a distribution
    /// made [from row blocks](Distribution::from_row_blocks); the memory
    /// budget.
    pub fn fine_part<T: Copy>(&self, p: usize, global: &[T]) -> Result<Vec<T>> {
        let layout = self.part(p)?;
        if self.from_blocks {
            return Err(Error::invalid(
                "a distribution made from row blocks has no global fine array: each \
                 part's fine arrays are its block's own",
            ));
        }
        check_len("fine-task array (= fine tasks)", self.fine_total, global)?;
        let mut out = Vec::new();
        mem::try_reserve(&mut out, layout.fine_len(), "a part's fine-task array")?;
        for &(lo, hi) in &self.fine_runs[p] {
            out.extend_from_slice(&global[lo as usize..hi as usize]);
        }
        Ok(out)
    }

    /// A per-task array (`n_tasks` entries) cut to part `p`'s tasks, in local
    /// task order.
    ///
    /// # Errors
    /// `p` is not a part; `global` is not `n_tasks` long; the memory budget.
    pub fn task_part<T: Copy>(&self, p: usize, global: &[T]) -> Result<Vec<T>> {
        let layout = self.part(p)?;
        check_len("per-task array (= n_tasks)", self.n_tasks, global)?;
        gather(&layout.tasks, global, "a part's per-task array")
    }

    /// A gathered array (`x_len` entries) laid out as part `p`'s local `x`:
    /// the owned entries, then every halo, filled from `global` (what the
    /// local `x` holds after an exchange).
    ///
    /// # Errors
    /// `p` is not a part; `global` is not `x_len` long; the memory budget.
    pub fn x_part<T: Copy>(&self, p: usize, global: &[T]) -> Result<Vec<T>> {
        let layout = self.part(p)?;
        let mut out = self.owned_x_part(p, global)?;
        mem::try_reserve(&mut out, layout.halo_len(), "a part's local x")?;
        for h in &layout.halo {
            out.extend(h.global.iter().map(|&g| global[g as usize]));
        }
        Ok(out)
    }

    /// Just the owned entries of a gathered array (`x_len` entries) for part
    /// `p`, in local order: the first `owned_x.len()` entries of its local
    /// `x`.
    ///
    /// # Errors
    /// `p` is not a part; `global` is not `x_len` long; the memory budget.
    pub fn owned_x_part<T: Copy>(&self, p: usize, global: &[T]) -> Result<Vec<T>> {
        let layout = self.part(p)?;
        check_len("gathered array (= x_len)", self.x_len, global)?;
        gather(&layout.owned_x, global, "a part's owned x")
    }

    /// Per-task outputs of every part (`parts[p]` has `tasks.len()` entries of
    /// part `p`) put back in global task order: the inverse of
    /// [`Distribution::task_part`].
    ///
    /// # Errors
    /// Not one array per part, or one not of its part's task count; the
    /// memory budget.
    pub fn assemble_tasks<T: Copy + Default>(&self, parts: &[Vec<T>]) -> Result<Vec<T>> {
        check_len("per-part task arrays (= parts)", self.parts.len(), parts)?;
        let mut out = mem::try_filled("the assembled task array", self.n_tasks, T::default())?;
        for (p, (layout, part)) in self.parts.iter().zip(parts).enumerate() {
            if part.len() != layout.tasks.len() {
                return Err(Error::length(
                    format!("task array of part {p} (= its tasks)"),
                    layout.tasks.len(),
                    part.len(),
                ));
            }
            for (&t, &v) in layout.tasks.iter().zip(part) {
                out[t as usize] = v;
            }
        }
        Ok(out)
    }

    /// The owned entries of every part put back in a global gathered array
    /// (`x_len` entries): the inverse of [`Distribution::owned_x_part`].
    /// `parts[p]` is part `p`'s owned entries, or its whole local `x` (then
    /// the halo is ignored: only the owner's copy of an entry counts).
    ///
    /// # Errors
    /// Not one array per part, or one neither `owned_x.len()` nor
    /// `local_x_len()` long; the memory budget.
    pub fn assemble_x<T: Copy + Default>(&self, parts: &[Vec<T>]) -> Result<Vec<T>> {
        check_len(
            "per-part gathered arrays (= parts)",
            self.parts.len(),
            parts,
        )?;
        let mut out = mem::try_filled("the assembled gathered array", self.x_len, T::default())?;
        for (p, (layout, part)) in self.parts.iter().zip(parts).enumerate() {
            let owned = layout.owned_x.len();
            if part.len() != owned && part.len() != layout.local_x_len() {
                return Err(Error::length(
                    format!("gathered array of part {p} (= its owned entries)"),
                    owned,
                    part.len(),
                ));
            }
            for (&g, &v) in layout.owned_x.iter().zip(part) {
                out[g as usize] = v;
            }
        }
        Ok(out)
    }

    /// Entries exchanged per launch: the sum of every part's halo length
    /// (equally, of every part's sends). This is the communication volume,
    /// in gathered entries, that one launch costs.
    pub fn exchanged(&self) -> usize {
        self.parts.iter().map(PartLayout::halo_len).sum()
    }

    /// The replication cost R in the partitioner's sense
    /// ([`Metrics::replication`](crate::partition::Metrics::replication),
    /// Equation 2):
    /// over the gathered entries read by at least one fine task, the sum of
    /// (parts reading the entry − 1), i.e. `Σ_p |U_p| − |U|` where `U_p` is
    /// the set of distinct entries part `p`'s fine tasks read and `U` the set
    /// read by any. Tasks add nothing: a task is never split, so its output
    /// lives in one part.
    ///
    /// It is at most [`Distribution::exchanged`]: an entry read by `r`
    /// non-owners is exchanged `r` times and replicated `r` times if its
    /// owner reads it too, `r − 1` times if not.
    pub fn replication(&self) -> usize {
        self.unique_reads.iter().sum::<usize>() - self.read_total
    }

    /// The largest halo of one part: the most entries a part receives per
    /// launch.
    pub fn max_halo(&self) -> usize {
        self.parts
            .iter()
            .map(PartLayout::halo_len)
            .max()
            .unwrap_or(0)
    }

    /// The largest fine-task count of one part: the most work a part does
    /// per launch.
    pub fn max_fine(&self) -> usize {
        self.parts
            .iter()
            .map(PartLayout::fine_len)
            .max()
            .unwrap_or(0)
    }

    /// The host exchange, the reference a device exchange is tested against:
    /// given every part's local `x` (`local_x[p].len() ==
    /// parts()[p].local_x_len()`, owned entries current), every part packs
    /// what each receiver needs ([`HaloTo::local`](super::HaloTo::local)) and the
    /// packed entries are copied into the receiver's halo slice. Only owned
    /// entries are read and only halo entries written, so the order of the
    /// copies does not matter; afterwards every local `x` equals
    /// [`Distribution::x_part`] of the global vector the owned entries form.
    ///
    /// # Errors
    /// Not one array per part, or one not of its part's local `x` length.
    pub fn exchange_host<T: Copy>(&self, local_x: &mut [Vec<T>]) -> Result<()> {
        check_len("local x arrays (= parts)", self.parts.len(), local_x)?;
        for (p, (layout, x)) in self.parts.iter().zip(local_x.iter()).enumerate() {
            if x.len() != layout.local_x_len() {
                return Err(Error::length(
                    format!("local x of part {p} (= owned + halo)"),
                    layout.local_x_len(),
                    x.len(),
                ));
            }
        }
        let mut packed: Vec<T> = Vec::new();
        for (q, layout) in self.parts.iter().enumerate() {
            for send in &layout.sends {
                packed.clear();
                packed.extend(send.local.iter().map(|&i| local_x[q][i as usize]));
                let halo = self.parts[send.part].halo_from(q).ok_or_else(|| {
                    Error::invalid(format!(
                        "distribution: part {q} sends to part {} which has no halo from it",
                        send.part
                    ))
                })?;
                local_x[send.part][halo.offset..halo.offset + packed.len()]
                    .copy_from_slice(&packed);
            }
        }
        Ok(())
    }
}

/// Checks that `got` has `expected` entries.
fn check_len<T>(what: &str, expected: usize, got: &[T]) -> Result<()> {
    if got.len() == expected {
        Ok(())
    } else {
        Err(Error::length(what, expected, got.len()))
    }
}

/// `global[i]` for every `i` of `index` (checked lengths, in range).
fn gather<T: Copy>(index: &[u32], global: &[T], what: &str) -> Result<Vec<T>> {
    let mut out = Vec::new();
    mem::try_reserve(&mut out, index.len(), what)?;
    out.extend(index.iter().map(|&i| global[i as usize]));
    Ok(out)
}
