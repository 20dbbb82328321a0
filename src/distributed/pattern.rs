//! [`Distributed`]: a kernel's tasks split over a [`DeviceGroup`], its
//! local arrays on the members, and the halo exchange; [`DistVec`]: one
//! array per member.

use super::halo::HaloScalar;
use super::WHOLE_BLOCK_SHARE;
use crate::{Device, DeviceVec, Error, PreparedLaunch, Result, Scalar};
use warpfit_gpu::{DeviceGroup, Transfer};
use warpfit_runtime::distribute::{Distribution, PartitionKind};

/// One array per member of a group: a fine array, a per-task array, or a
/// gathered array in the local layout (owned entries, then the halo) with
/// the buffers its exchange packs into.
pub struct DistVec<T: Scalar> {
    parts: Vec<DeviceVec<T>>,
    /// Per member, the entries it sends, packed (gathered arrays only).
    send: Vec<DeviceVec<T>>,
}

impl<T: Scalar> std::fmt::Debug for DistVec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DistVec")
            .field("parts", &self.parts)
            .finish()
    }
}

impl<T: Scalar> DistVec<T> {
    /// Member `p`'s array.
    pub fn part(&self, p: usize) -> &DeviceVec<T> {
        &self.parts[p]
    }

    /// Member `p`'s array, to write (from the host, say its owned entries
    /// before an exchange).
    pub fn part_mut(&mut self, p: usize) -> &mut DeviceVec<T> {
        &mut self.parts[p]
    }

    /// Every member's array, in member order.
    pub fn parts(&self) -> &[DeviceVec<T>] {
        &self.parts
    }

    /// Shared borrows of every member's array, as
    /// [`DeviceGroup::all_reduce_sum`] takes them.
    pub fn refs(&self) -> Vec<&DeviceVec<T>> {
        self.parts.iter().collect()
    }
}

/// What one exchange moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExchangeStats {
    /// Gathered entries received by all members together, per exchange.
    pub entries: usize,
    /// The largest number one member receives.
    pub max_entries: usize,
    /// Length of the gathered array.
    pub x_len: usize,
    /// Point-to-point messages per exchange.
    pub messages: usize,
    /// The partitioner's replication cost R of the same split: the sum
    /// over members of the distinct entries each reads, less the distinct
    /// entries read at all ([`Distribution::replication`]); `entries` is R
    /// plus the entries read only away from their owner.
    pub replication: usize,
}

impl ExchangeStats {
    /// `entries` as a fraction of the gathered array.
    pub fn fraction(&self) -> f64 {
        self.entries as f64 / self.x_len.max(1) as f64
    }
}

/// A kernel's pattern (range and index arrays) split over a group: each
/// member's tasks, its local range array, its index array rewritten to the
/// local gathered layout, and the halo exchange. See the
/// [module](crate::distributed) for the layout and an example.
pub struct Distributed<'g> {
    group: &'g DeviceGroup,
    dist: Distribution,
    row_ptr: Vec<DeviceVec<u32>>,
    col: Vec<DeviceVec<u32>>,
    /// Per member, the local indices of the entries it sends, grouped by
    /// receiver in member order.
    send_idx: Vec<DeviceVec<u32>>,
    /// Moves of packed entries: from a member's send buffer.
    transfers: Vec<Transfer>,
    /// Moves of whole owned blocks: straight from the sender's `x`.
    whole: Vec<Transfer>,
}

impl std::fmt::Debug for Distributed<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Distributed")
            .field("group", &self.group.describe())
            .field("n_tasks", &self.dist.n_tasks())
            .field("exchange", &self.stats())
            .finish()
    }
}

impl<'g> Distributed<'g> {
    /// Splits the pattern `(row_ptr, col)` of a kernel whose fine tasks
    /// gather from an array of `x_len` entries over `group`'s members by
    /// `kind`, and uploads each member's range and index arrays.
    ///
    /// # Errors
    /// A malformed pattern (see [`Distribution::new`]); a member out of
    /// memory.
    pub fn new(
        group: &'g DeviceGroup,
        kind: PartitionKind,
        row_ptr: &[u32],
        col: &[u32],
        x_len: usize,
    ) -> Result<Self> {
        let dist = Distribution::new(kind, group.len(), row_ptr, col, x_len)?
            .with_whole_blocks(WHOLE_BLOCK_SHARE)?;
        Self::from_distribution(group, dist)
    }

    /// [`Distributed::new`] from a distribution already made (one per
    /// pattern, shared by several groups or kernels).
    pub fn from_distribution(group: &'g DeviceGroup, dist: Distribution) -> Result<Self> {
        if dist.parts().len() != group.len() {
            return Err(Error::length(
                "a distribution's parts against the group's members",
                group.len(),
                dist.parts().len(),
            ));
        }
        let mut row_ptr = Vec::with_capacity(group.len());
        let mut col = Vec::with_capacity(group.len());
        let mut send_idx = Vec::with_capacity(group.len());
        let (mut transfers, mut whole) = (Vec::new(), Vec::new());
        for (p, (part, device)) in dist.parts().iter().zip(group.devices()).enumerate() {
            row_ptr.push(device.upload(&part.row_ptr)?);
            col.push(device.upload(&part.col)?);
            let mut idx = Vec::new();
            for to in &part.sends {
                // Where `to` receives from `p`.
                let slot = dist.parts()[to.part]
                    .halo
                    .iter()
                    .find(|h| h.part == p)
                    .ok_or_else(|| Error::invalid("a send with no matching receive"))?;
                // All the owned entries, ascending: the owned `x` as it lies.
                if to.local.len() == part.owned_x.len() {
                    whole.push(Transfer {
                        from: p,
                        to: to.part,
                        src_offset: 0,
                        dst_offset: slot.offset,
                        len: to.local.len(),
                    });
                    continue;
                }
                transfers.push(Transfer {
                    from: p,
                    to: to.part,
                    src_offset: idx.len(),
                    dst_offset: slot.offset,
                    len: to.local.len(),
                });
                idx.extend_from_slice(&to.local);
            }
            send_idx.push(device.upload(&idx)?);
        }
        Ok(Distributed {
            group,
            dist,
            row_ptr,
            col,
            send_idx,
            transfers,
            whole,
        })
    }

    /// The group.
    pub fn group(&self) -> &'g DeviceGroup {
        self.group
    }

    /// Member `p`'s device.
    pub fn device(&self, p: usize) -> &'g Device {
        &self.group.devices()[p]
    }

    /// The host-side distribution (which member owns what).
    pub fn distribution(&self) -> &Distribution {
        &self.dist
    }

    /// The distribution back, its members' arrays freed: to place it on
    /// another group ([`Distributed::from_distribution`]) without making it
    /// again.
    pub fn into_distribution(self) -> Distribution {
        self.dist
    }

    /// Member `p`'s task count: launch its part over `0..tasks(p)`.
    pub fn tasks(&self, p: usize) -> usize {
        self.dist.parts()[p].tasks.len()
    }

    /// Member `p`'s range array (rebased to its fine tasks).
    pub fn row_ptr(&self, p: usize) -> &DeviceVec<u32> {
        &self.row_ptr[p]
    }

    /// Member `p`'s index array, in its local gathered layout.
    pub fn col(&self, p: usize) -> &DeviceVec<u32> {
        &self.col[p]
    }

    /// What one exchange moves.
    pub fn stats(&self) -> ExchangeStats {
        ExchangeStats {
            entries: self.dist.exchanged(),
            max_entries: self
                .dist
                .parts()
                .iter()
                .map(|p| p.halo_len())
                .max()
                .unwrap_or(0),
            x_len: self.dist.x_len(),
            messages: self.transfers.len() + self.whole.len(),
            replication: self.dist.replication(),
        }
    }

    fn per_member<T: Scalar>(
        &self,
        make: impl Fn(usize, &Device) -> Result<DeviceVec<T>>,
    ) -> Result<Vec<DeviceVec<T>>> {
        self.group
            .devices()
            .iter()
            .enumerate()
            .map(|(p, d)| make(p, d))
            .collect()
    }

    /// A fine-task array (one entry per entry of `col`, such as the values)
    /// cut to each member's fine tasks.
    pub fn fine<T: Scalar>(&self, global: &[T]) -> Result<DistVec<T>> {
        Ok(DistVec {
            parts: self.per_member(|p, d| d.upload(&self.dist.fine_part(p, global)?))?,
            send: Vec::new(),
        })
    }

    /// A per-task array (one entry per task) cut to each member's tasks.
    pub fn per_task<T: Scalar>(&self, global: &[T]) -> Result<DistVec<T>> {
        Ok(DistVec {
            parts: self.per_member(|p, d| d.upload(&self.dist.task_part(p, global)?))?,
            send: Vec::new(),
        })
    }

    /// A zeroed per-task array: a kernel's outputs.
    pub fn outputs<T: Scalar>(&self) -> Result<DistVec<T>> {
        Ok(DistVec {
            parts: self.per_member(|p, d| d.alloc::<T>(self.tasks(p)))?,
            send: Vec::new(),
        })
    }

    fn send_buffers<T: Scalar>(&self) -> Result<Vec<DeviceVec<T>>> {
        self.per_member(|p, d| d.alloc::<T>(self.send_idx[p].len()))
    }

    /// A gathered array (`x_len` entries) in each member's local layout,
    /// owned entries and halo filled from `global`.
    pub fn gathered<T: Scalar>(&self, global: &[T]) -> Result<DistVec<T>> {
        Ok(DistVec {
            parts: self.per_member(|p, d| d.upload(&self.dist.x_part(p, global)?))?,
            send: self.send_buffers()?,
        })
    }

    /// A zeroed gathered array in the local layout, to be written by a
    /// kernel (its owned entries) and exchanged (its halo).
    pub fn gathered_zeros<T: Scalar>(&self) -> Result<DistVec<T>> {
        Ok(DistVec {
            parts: self.per_member(|p, d| d.alloc::<T>(self.dist.parts()[p].local_x_len()))?,
            send: self.send_buffers()?,
        })
    }

    /// The exchange of `x`'s halo, prepared once: [`Exchange::run`] packs and
    /// moves the entries.
    pub fn exchange_of<'a, T: HaloScalar>(&'a self, x: &'a DistVec<T>) -> Result<Exchange<'a, T>> {
        if x.send.len() != self.group.len() || x.parts.len() != self.group.len() {
            return Err(Error::invalid(
                "an exchange needs a gathered array (Distributed::gathered or gathered_zeros)",
            ));
        }
        let mut packs = Vec::new();
        for p in 0..self.group.len() {
            let local = self.dist.parts()[p].local_x_len();
            if x.parts[p].len() != local {
                return Err(Error::length(
                    format!("member {p}'s gathered array"),
                    local,
                    x.parts[p].len(),
                ));
            }
            let n = self.send_idx[p].len();
            if n > 0 {
                packs.push(T::prepare_pack(
                    self.device(p),
                    n,
                    &self.send_idx[p],
                    &x.parts[p],
                    &x.send[p],
                )?);
            }
        }
        Ok(Exchange { d: self, x, packs })
    }

    /// Refreshes `x`'s halo once (see [`Distributed::exchange_of`] to repeat
    /// it without preparing it each time).
    pub fn exchange<T: HaloScalar>(&self, x: &DistVec<T>) -> Result<()> {
        let ex = self.exchange_of(x)?;
        ex.run()?;
        ex.check()
    }

    /// Downloads a per-task array and puts it in the caller's task order.
    pub fn collect_tasks<T: Scalar + Default>(&self, v: &DistVec<T>) -> Result<Vec<T>> {
        self.group.synchronize()?;
        let parts = v
            .parts
            .iter()
            .map(|p| p.to_vec())
            .collect::<Result<Vec<_>>>()?;
        self.dist.assemble_tasks(&parts)
    }

    /// Downloads the owned entries of a gathered array, in global order.
    pub fn collect_gathered<T: Scalar + Default>(&self, v: &DistVec<T>) -> Result<Vec<T>> {
        self.group.synchronize()?;
        let parts = v
            .parts
            .iter()
            .enumerate()
            .map(|(p, a)| {
                let mut all = a.to_vec()?;
                all.truncate(self.dist.parts()[p].owned_x.len());
                Ok(all)
            })
            .collect::<Result<Vec<_>>>()?;
        self.dist.assemble_x(&parts)
    }
}

/// A prepared halo exchange of one gathered array.
pub struct Exchange<'a, T: HaloScalar> {
    d: &'a Distributed<'a>,
    x: &'a DistVec<T>,
    packs: Vec<PreparedLaunch<'a>>,
}

impl<T: HaloScalar> Exchange<'_, T> {
    /// [`Exchange::run`] beside the launches that follow: the packs are
    /// enqueued, then the moves start on each GPU's second stream once the
    /// packs are done, while the launches enqueued next (those reading only
    /// owned entries) run. Call [`Exchange::join`] before the launches that
    /// read the halo. On the CPU, the same as `run`.
    pub fn start(&self) -> Result<()> {
        self.moves(true)
    }

    /// Makes every member wait for the moves [`Exchange::start`] began.
    pub fn join(&self) -> Result<()> {
        self.d.group.join_transfers()
    }

    /// Packs every member's outgoing entries and moves them into the
    /// receivers' halos: enqueued on the members' streams, ordered with
    /// their launches (on the CPU, done on return).
    pub fn run(&self) -> Result<()> {
        self.moves(false)
    }

    /// The packs, then the moves of packed entries and of whole blocks (on
    /// the second streams when `beside`).
    fn moves(&self, beside: bool) -> Result<()> {
        for pack in &self.packs {
            pack.run()?;
        }
        let group = self.d.group;
        let (send, x): (Vec<&DeviceVec<T>>, _) = (self.x.send.iter().collect(), self.x.refs());
        let go = |src: &[&DeviceVec<T>], moves: &[Transfer]| {
            if moves.is_empty() {
                Ok(())
            } else if beside {
                group.transfer_beside(src, &x, moves)
            } else {
                group.transfer(src, &x, moves)
            }
        };
        go(&send, &self.d.transfers)?;
        go(&x, &self.d.whole)
    }

    /// Reports the first fault of the packs run since the last check.
    pub fn check(&self) -> Result<()> {
        self.packs.iter().try_for_each(PreparedLaunch::check)
    }
}
