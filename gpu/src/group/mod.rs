//! A group of devices that run one distributed kernel: several GPUs of one
//! host joined by NCCL ([`DeviceGroup::cuda`]), parts placed several to a
//! GPU and joined by device copies ([`DeviceGroup::cuda_parts`]), or a CPU
//! group of N parts
//! ([`DeviceGroup::cpu`]) whose exchanges are host copies, so that the
//! partition and exchange code above it runs, and is tested, on machines
//! without GPUs.
//!
//! The group moves data and nothing else: [`DeviceGroup::transfer`] copies
//! ranges between members' [`DeviceVec`]s (NCCL sends and receives, grouped),
//! [`DeviceGroup::all_reduce_sum`] sums small arrays across members, and
//! [`DeviceGroup::synchronize`] waits with a timeout, so that a peer that
//! never answers is an `Err`, not a hang. What to move is decided above, by
//! the distribution of a kernel's tasks.

mod nccl;
mod peer;
mod transfer;

use crate::driver::cuda_device::CudaDevice;
use crate::driver::device::Device;
use crate::launch::device_vec::DeviceVec;
use crate::spec::Scalar;
use cudarc::driver::CudaStream;
use nccl::{wait_stream, NcclComms, PeerOp};
use std::sync::Arc;
use std::time::{Duration, Instant};
pub use transfer::Transfer;
use warpfit_runtime::{Error, Result};

/// The most members a group takes (NCCL's single-process initialisation
/// and the per-member bookkeeping are sized by it).
pub const MAX_GROUP: usize = 64;

/// How long [`DeviceGroup::synchronize`] waits by default before it aborts
/// the communicators and returns an `Err`.
pub const DEFAULT_GROUP_TIMEOUT: Duration = Duration::from_secs(120);

/// How many members a group has: a count, or every GPU of the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupSize {
    /// This many members.
    Count(usize),
    /// Every GPU the driver reports (a CUDA group only).
    All,
}

impl GroupSize {
    /// `N` (≥ 1) or `all`, as a command line gives it.
    pub fn parse(s: &str) -> Result<Self> {
        if s == "all" {
            return Ok(GroupSize::All);
        }
        match s.parse::<usize>() {
            Ok(n) if (1..=MAX_GROUP).contains(&n) => Ok(GroupSize::Count(n)),
            _ => Err(Error::invalid(format!(
                "`{s}` is not a group size: expected a count from 1 to {MAX_GROUP}, or `all`"
            ))),
        }
    }
}

/// How members reach each other.
enum Link {
    /// CPU members: copies in host memory.
    Host,
    /// One GPU: nothing to exchange.
    Alone,
    /// GPUs joined by NCCL communicators, with a second stream per GPU
    /// for transfers that run beside its launches
    /// ([`DeviceGroup::transfer_beside`]).
    Nccl {
        comms: NcclComms,
        side: Vec<Arc<CudaStream>>,
    },
    /// Members placed on GPUs, several to a GPU: device and peer copies,
    /// each move done on return (`peer`).
    Peer,
}

/// Devices that run one distributed kernel together, member `p` holding
/// part `p` of its tasks.
///
/// ```
/// use warpfit_gpu::DeviceGroup;
/// // Three CPU parts: the same partition and exchange as three GPUs.
/// let group = DeviceGroup::cpu(3)?;
/// assert_eq!(group.len(), 3);
/// # Ok::<(), warpfit_gpu::Error>(())
/// ```
pub struct DeviceGroup {
    devices: Vec<Device>,
    link: Link,
    timeout: Duration,
}

impl std::fmt::Debug for DeviceGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceGroup")
            .field("devices", &self.devices)
            .field("timeout", &self.timeout)
            .finish()
    }
}

fn check_size(n: usize) -> Result<()> {
    if (1..=MAX_GROUP).contains(&n) {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "a device group has 1 to {MAX_GROUP} members, not {n}"
        )))
    }
}

impl DeviceGroup {
    /// `parts` CPU members, each running its part on all cores in turn.
    pub fn cpu(parts: usize) -> Result<Self> {
        check_size(parts)?;
        Ok(DeviceGroup {
            devices: vec![Device::Cpu; parts],
            link: Link::Host,
            timeout: DEFAULT_GROUP_TIMEOUT,
        })
    }

    /// The GPUs `ordinals` (distinct), joined by NCCL when there are several:
    /// a missing NCCL is an `Err` naming the library.
    pub fn cuda(ordinals: &[usize]) -> Result<Self> {
        check_size(ordinals.len())?;
        let mut seen = ordinals.to_vec();
        seen.sort_unstable();
        if seen.windows(2).any(|w| w[0] == w[1]) {
            return Err(Error::invalid(format!(
                "a device group names each GPU once, not {ordinals:?}"
            )));
        }
        let devices = ordinals
            .iter()
            .map(|&o| Device::open_cuda(o))
            .collect::<Result<Vec<_>>>()?;
        Self::join(devices)
    }

    /// Members placed on GPUs, several to a GPU where `ordinals` names one
    /// more than once: member `p` runs on GPU `ordinals[p]`. For a kernel
    /// cut into more parts than the host has GPUs, each part within the
    /// 32-bit indices of a part's layout (RMAT 29 in four parts on two
    /// GPUs). Members on one GPU share its stream; the exchange is device
    /// and peer copies and the all-reduce a sum on the host, each waiting
    /// for every member and done on return: a group for holding what one
    /// part per GPU cannot, not for speed. No NCCL is needed.
    ///
    /// # Errors
    /// No ordinal, or more than [`MAX_GROUP`]; a GPU that cannot be opened.
    pub fn cuda_parts(ordinals: &[usize]) -> Result<Self> {
        check_size(ordinals.len())?;
        let mut devices: Vec<Device> = Vec::with_capacity(ordinals.len());
        for &o in ordinals {
            // A GPU named again is the same device: its members share it.
            let opened = devices
                .iter()
                .find(|d| d.cuda().is_some_and(|c| c.ordinal() == o))
                .cloned();
            devices.push(match opened {
                Some(d) => d,
                None => Device::open_cuda(o)?,
            });
        }
        let link = match devices.len() {
            1 => Link::Alone,
            _ => Link::Peer,
        };
        Ok(DeviceGroup {
            devices,
            link,
            timeout: DEFAULT_GROUP_TIMEOUT,
        })
    }

    /// Every GPU of the host.
    pub fn cuda_all() -> Result<Self> {
        Self::cuda(&(0..cuda_count()?).collect::<Vec<_>>())
    }

    /// A group like `device`: `size` CPU parts for the CPU, or `size` GPUs
    /// from `device`'s ordinal on (`All`: every GPU) for CUDA, the first
    /// member being `device` itself.
    pub fn like(device: &Device, size: GroupSize) -> Result<Self> {
        match (device, size) {
            (Device::Cpu, GroupSize::Count(n)) => Self::cpu(n),
            (Device::Cpu, GroupSize::All) => Err(Error::invalid(
                "`all` counts GPUs: give the CPU group a number of parts",
            )),
            (Device::Cuda(first), size) => {
                let start = first.ordinal();
                let count = cuda_count()?;
                let end = match size {
                    GroupSize::All => count,
                    GroupSize::Count(n) => start.saturating_add(n),
                };
                if end > count || end <= start {
                    return Err(Error::Unavailable {
                        what: format!("GPUs {start}..{end}"),
                        reason: format!("the driver reports {count} GPU(s)"),
                    });
                }
                check_size(end - start)?;
                let mut devices = vec![device.clone()];
                for o in start + 1..end {
                    devices.push(Device::open_cuda(o)?);
                }
                Self::join(devices)
            }
        }
    }

    fn join(devices: Vec<Device>) -> Result<Self> {
        let link = if devices.len() == 1 {
            Link::Alone
        } else {
            let cudas: Vec<CudaDevice> = devices.iter().filter_map(|d| d.cuda().cloned()).collect();
            let side = cudas
                .iter()
                .map(|d| {
                    d.context()
                        .new_stream()
                        .map_err(crate::driver::errors::cuda_err(
                            "creating a transfer stream",
                        ))
                })
                .collect::<Result<Vec<_>>>()?;
            Link::Nccl {
                comms: NcclComms::init(&cudas)?,
                side,
            }
        };
        Ok(DeviceGroup {
            devices,
            link,
            timeout: DEFAULT_GROUP_TIMEOUT,
        })
    }

    /// How long [`DeviceGroup::synchronize`] waits before giving up.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.devices.len()
    }

    /// Always `false`: a group has at least one member.
    pub fn is_empty(&self) -> bool {
        self.devices.is_empty()
    }

    /// The members, in part order.
    pub fn devices(&self) -> &[Device] {
        &self.devices
    }

    /// `cpu` or `cuda`.
    pub fn backend_name(&self) -> &'static str {
        self.devices[0].backend_name()
    }

    /// In words: `3 CPU parts`, `4 GPUs (0, 1, 2, 3) over NCCL`.
    pub fn describe(&self) -> String {
        match &self.link {
            Link::Host => format!("{} CPU part(s)", self.len()),
            Link::Alone => format!("1 GPU ({})", self.ordinals_text()),
            Link::Nccl { .. } => {
                format!("{} GPUs ({}) over NCCL", self.len(), self.ordinals_text())
            }
            Link::Peer => format!(
                "{} parts on GPUs ({}) joined by device copies",
                self.len(),
                self.ordinals_text()
            ),
        }
    }

    fn ordinals_text(&self) -> String {
        let o: Vec<String> = self
            .cudas()
            .iter()
            .map(|d| d.ordinal().to_string())
            .collect();
        o.join(", ")
    }

    fn cudas(&self) -> Vec<CudaDevice> {
        self.devices
            .iter()
            .filter_map(|d| d.cuda().cloned())
            .collect()
    }

    /// Checks that `vecs` has one array per member, each on its member.
    fn check_members<T: Scalar>(&self, what: &str, vecs: &[&DeviceVec<T>]) -> Result<()> {
        if vecs.len() != self.len() {
            return Err(Error::length(
                format!("{what}: arrays per member"),
                self.len(),
                vecs.len(),
            ));
        }
        for (p, (v, d)) in vecs.iter().zip(&self.devices).enumerate() {
            let ok = match (d, v.cuda_device()) {
                (Device::Cpu, None) => true,
                (Device::Cuda(want), Some(have)) => want.ordinal() == have.ordinal(),
                _ => false,
            };
            if !ok {
                return Err(Error::invalid(format!(
                    "{what}: member {p}'s array lives in {}, not on member {p}",
                    v.location()
                )));
            }
        }
        Ok(())
    }

    /// Copies each transfer's `len` elements from `src[from]` at
    /// `src_offset` into `dst[to]` at `dst_offset`. On GPUs: one NCCL group
    /// of sends and receives on the members' streams, ordered with their
    /// launches, not waited for; on the CPU: copies, done on return.
    pub fn transfer<T: Scalar>(
        &self,
        src: &[&DeviceVec<T>],
        dst: &[&DeviceVec<T>],
        transfers: &[Transfer],
    ) -> Result<()> {
        self.transfer_on(src, dst, transfers, false)
    }

    /// [`DeviceGroup::transfer`] beside the launches: on GPUs the transfers
    /// start once the work enqueued so far on each member's stream is done
    /// (the packing of what they send), and run on a second stream while
    /// the launches enqueued next run; [`DeviceGroup::join_transfers`] makes
    /// each member's stream wait for them before the launches that read
    /// what they bring. Until then, neither the sources nor the
    /// destinations' ranges may be touched. On the CPU the same as
    /// `transfer`.
    pub fn transfer_beside<T: Scalar>(
        &self,
        src: &[&DeviceVec<T>],
        dst: &[&DeviceVec<T>],
        transfers: &[Transfer],
    ) -> Result<()> {
        self.transfer_on(src, dst, transfers, true)
    }

    /// Makes every member's stream wait for the transfers started by
    /// [`DeviceGroup::transfer_beside`] (nothing on the CPU).
    pub fn join_transfers(&self) -> Result<()> {
        if let Link::Nccl { side, .. } = &self.link {
            for (d, s) in self.cudas().iter().zip(side) {
                d.stream().join(s).map_err(crate::driver::errors::cuda_err(
                    "waiting for a group's transfers",
                ))?;
            }
        }
        Ok(())
    }

    fn transfer_on<T: Scalar>(
        &self,
        src: &[&DeviceVec<T>],
        dst: &[&DeviceVec<T>],
        transfers: &[Transfer],
        beside: bool,
    ) -> Result<()> {
        self.check_members("a transfer's sources", src)?;
        self.check_members("a transfer's destinations", dst)?;
        for t in transfers {
            t.check(self.len(), src[t.from].len(), dst[t.to].len())?;
        }
        // On GPUs: the device address of element `off` of a member's array.
        let size = T::TYPE.size();
        let ptr = |v: &DeviceVec<T>, off: usize| v.cuda_ptr().unwrap_or(0) + (off * size) as u64;
        match &self.link {
            Link::Alone => Ok(()),
            Link::Host => {
                for t in transfers.iter().filter(|t| t.len > 0) {
                    let (Some(s), Some(d)) =
                        (src[t.from].host_cells_ptr(), dst[t.to].host_cells_ptr())
                    else {
                        return Err(Error::invalid("a CPU group's arrays are in host memory"));
                    };
                    // SAFETY: both ranges are in bounds (checked above); the
                    // arrays are not `Sync`, so no other thread touches them
                    // during this call; `copy` allows the two ranges to be
                    // the same array.
                    unsafe { std::ptr::copy(s.add(t.src_offset), d.add(t.dst_offset), t.len) };
                }
                Ok(())
            }
            Link::Peer => {
                let copies: Vec<peer::PeerCopy> = transfers
                    .iter()
                    .map(|t| peer::PeerCopy {
                        from: t.from,
                        src: ptr(src[t.from], t.src_offset),
                        to: t.to,
                        dst: ptr(dst[t.to], t.dst_offset),
                        bytes: t.len * size,
                    })
                    .collect();
                peer::copy_all(&self.cudas(), &copies)
            }
            Link::Nccl { comms, side } => {
                let mut ops = Vec::with_capacity(2 * transfers.len());
                for t in transfers {
                    ops.push(PeerOp {
                        rank: t.from,
                        peer: t.to,
                        ptr: ptr(src[t.from], t.src_offset),
                        count: t.len,
                        send: true,
                    });
                    ops.push(PeerOp {
                        rank: t.to,
                        peer: t.from,
                        ptr: ptr(dst[t.to], t.dst_offset),
                        count: t.len,
                        send: false,
                    });
                }
                let cudas = self.cudas();
                if !beside {
                    return comms.exchange(&cudas, None, T::TYPE, &ops);
                }
                for (d, s) in cudas.iter().zip(side) {
                    s.join(d.stream()).map_err(crate::driver::errors::cuda_err(
                        "ordering a group's transfers",
                    ))?;
                }
                let streams: Vec<_> = side.iter().map(|s| s.cu_stream() as _).collect();
                comms.exchange(&cudas, Some(&streams), T::TYPE, &ops)
            }
        }
    }

    /// Sums elements `range` of the arrays of all members element by
    /// element, leaving the sum in every one (NCCL all-reduce on GPUs,
    /// enqueued; on the CPU the sum in member order, done on return).
    pub fn all_reduce_sum<T>(
        &self,
        bufs: &[&DeviceVec<T>],
        range: std::ops::Range<usize>,
    ) -> Result<()>
    where
        T: Scalar + Default + std::ops::Add<Output = T>,
    {
        self.check_members("an all-reduce", bufs)?;
        if let Some(v) = bufs
            .iter()
            .find(|v| range.start > range.end || range.end > v.len())
        {
            return Err(Error::invalid(format!(
                "an all-reduce of elements {}..{} of an array of {}",
                range.start,
                range.end,
                v.len()
            )));
        }
        match &self.link {
            Link::Alone => Ok(()),
            Link::Host => {
                let ptrs: Vec<*mut T> = bufs.iter().filter_map(|v| v.host_cells_ptr()).collect();
                for i in range {
                    // SAFETY: `i` is within every array (checked above); not
                    // `Sync`, so nothing else accesses them meanwhile.
                    unsafe {
                        let mut sum = *ptrs[0].add(i);
                        for p in &ptrs[1..] {
                            sum = sum + *p.add(i);
                        }
                        for p in &ptrs {
                            *p.add(i) = sum;
                        }
                    }
                }
                Ok(())
            }
            Link::Nccl { comms, .. } => {
                let ptrs = range_ptrs(bufs, range.start);
                comms.all_reduce_sum(&self.cudas(), T::TYPE, &ptrs, range.len())
            }
            Link::Peer => {
                let ptrs = range_ptrs(bufs, range.start);
                peer::all_reduce_sum_on_host::<T>(&self.cudas(), &ptrs, range.len())
            }
        }
    }

    /// Waits for every member's work and reports the first fault. On GPUs a
    /// wait longer than the group's timeout, or an error NCCL reports
    /// meanwhile, aborts the communicators and is an `Err` (a peer that
    /// never answers does not hang the process).
    pub fn synchronize(&self) -> Result<()> {
        if let Link::Nccl { comms, side } = &self.link {
            let start = Instant::now();
            for (d, s) in self.cudas().iter().zip(side) {
                wait_stream(d, d.stream(), comms, start, self.timeout)?;
                wait_stream(d, s, comms, start, self.timeout)?;
            }
        }
        self.devices.iter().try_for_each(Device::synchronize)
    }
}

/// The device address of element `start` of each member's array.
fn range_ptrs<T: Scalar>(bufs: &[&DeviceVec<T>], start: usize) -> Vec<u64> {
    let size = T::TYPE.size() as u64;
    bufs.iter()
        .map(|v| v.cuda_ptr().unwrap_or(0) + start as u64 * size)
        .collect()
}

/// The number of GPUs the driver reports.
fn cuda_count() -> Result<usize> {
    crate::probe::require(crate::probe::Library::Driver)?;
    let n = cudarc::driver::CudaContext::device_count()
        .map_err(crate::driver::errors::cuda_err("counting CUDA devices"))?;
    if n <= 0 {
        return Err(Error::Unavailable {
            what: "a CUDA group".into(),
            reason: "the driver reports no GPU".into(),
        });
    }
    Ok(n as usize)
}
