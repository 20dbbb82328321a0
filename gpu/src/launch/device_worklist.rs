//! Worklists on a [`Device`]: [`DeviceWorklist`] (its docs say how it
//! works), made, filled, read, cleared and grown on either backend.

use crate::abi::{PushVariant, WorklistRef};
use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::driver::device::Device;
use crate::driver::errors::cuda_err;
use crate::launch::device_vec::DeviceVec;
use crate::launch::worklist_arg::{ListArg, ListPlace, WorklistArg};
use crate::launch::worklist_kernels::{bitmap_words, WorklistKernels};
use warpfit_runtime::exec::DeviceFrontier;
use warpfit_runtime::worklist::Worklist;
use warpfit_runtime::{Error, Result, Tasks};

/// A worklist of `u32` items over a universe `0..universe`, on a device:
/// what push kernels push to and what a data-driven round's launch takes
/// as its tasks.
///
/// Like [`DeviceVec`], a `DeviceWorklist` lives where its device runs
/// kernels: on the CPU backend it is a [`Worklist`] (the runtime's, used in
/// place by the CPU twin), on CUDA the device form of the same list
/// (`gpu/cuda/worklist.cuh`): `capacity` item slots, a push count, a spill
/// bitmap and, deduplicating, a bitmap of the items pushed. A full list
/// never drops an item and never writes out of bounds: the item goes to the
/// spill bitmap, and [`DeviceWorklist::grow`] moves the spilled items in on
/// the device (`wf_unspill`), after which the list holds what a list
/// preallocated that large would (as a set; the spilled ones ascending).
///
/// A launch over a `DeviceWorklist` (`tasks = &list`) reads the number of
/// items on the device: its grid is sized for the list's capacity and the
/// threads past the items stored have nothing to do, so a round costs no
/// host read of the count. (A persistent grid looping over the items would
/// launch fewer idle blocks, but every decomposition takes its items from
/// its block and thread index; the early exit needs no change to them and
/// costs a block's start per 256 slots of capacity.)
///
/// Pushes reserve their slots per [`PushVariant`] (one atomic per push,
/// per warp, or per block through shared-memory staging), set per list
/// with [`DeviceWorklist::set_push_variant`]: the same kernel can be timed
/// with each. The CPU backend has one way.
///
/// ```
/// use warpfit_gpu::{Device, DeviceWorklist};
/// let device = Device::cpu();
/// let mut frontier = device.worklist(100, 20)?; // items 0..100, room for 20
/// frontier.set_items(&[3, 7])?;
/// assert_eq!(frontier.to_vec()?, [3, 7]);
/// frontier.clear()?;
/// assert_eq!(frontier.len()?, 0);
/// # Ok::<(), warpfit_runtime::Error>(())
/// ```
pub struct DeviceWorklist {
    storage: Storage,
}

enum Storage {
    /// The CPU backend: the runtime's list, used in place.
    Host {
        list: Worklist,
        variant: PushVariant,
    },
    Cuda(Box<CudaList>),
}

/// A worklist in a GPU's memory.
struct CudaList {
    items: DeviceBuffer<u32>,
    /// The push count, one `u64` (a `DeviceVec` so that drivers can read
    /// it back asynchronously, [`crate::Readback`]).
    count: DeviceVec<u64>,
    /// One bit per universe element (at least one word).
    spill: DeviceBuffer<u32>,
    seen: Option<DeviceBuffer<u32>>,
    capacity: usize,
    universe: usize,
    variant: PushVariant,
    device: CudaDevice,
}

impl std::fmt::Debug for DeviceWorklist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceWorklist")
            .field("universe", &self.universe())
            .field("capacity", &self.capacity())
            .field("dedup", &self.dedup())
            .field("push", &self.push_variant())
            .field("location", &self.location())
            .finish()
    }
}

impl Device {
    /// An empty worklist over items `0..universe` with room for `capacity`
    /// items, on this device (see [`DeviceWorklist`]).
    ///
    /// # Errors
    /// `universe` above `2^32`, or memory the budget or the GPU cannot give.
    pub fn worklist(&self, universe: usize, capacity: usize) -> Result<DeviceWorklist> {
        DeviceWorklist::new(self, universe, capacity, false)
    }

    /// [`Device::worklist`], deduplicating: a push of an item pushed since
    /// the last [`DeviceWorklist::clear`] is skipped (one atomic `or` on a
    /// bitmap per push).
    pub fn worklist_dedup(&self, universe: usize, capacity: usize) -> Result<DeviceWorklist> {
        DeviceWorklist::new(self, universe, capacity, true)
    }
}

impl DeviceWorklist {
    fn new(device: &Device, universe: usize, capacity: usize, dedup: bool) -> Result<Self> {
        let storage = match device {
            Device::Cpu => Storage::Host {
                list: if dedup {
                    Worklist::new_dedup(universe, capacity)?
                } else {
                    Worklist::new(universe, capacity)?
                },
                variant: PushVariant::default(),
            },
            Device::Cuda(d) => {
                // Items are u32, as the CPU's list checks.
                if universe as u64 > u64::from(u32::MAX) + 1 {
                    return Err(Error::invalid(format!(
                        "worklist universe {universe} is larger than the u32 items can name (2^32)"
                    )));
                }
                let words = bitmap_words(universe);
                Storage::Cuda(Box::new(CudaList {
                    items: DeviceBuffer::zeros(d, capacity)?,
                    count: device.alloc::<u64>(1)?,
                    spill: DeviceBuffer::zeros(d, words)?,
                    seen: if dedup {
                        Some(DeviceBuffer::zeros(d, words)?)
                    } else {
                        None
                    },
                    capacity,
                    universe,
                    variant: PushVariant::default(),
                    device: d.clone(),
                }))
            }
        };
        Ok(DeviceWorklist { storage })
    }

    /// The items are `0..universe`.
    pub fn universe(&self) -> usize {
        match &self.storage {
            Storage::Host { list, .. } => list.universe(),
            Storage::Cuda(c) => c.universe,
        }
    }

    /// Items the list stores before it spills.
    pub fn capacity(&self) -> usize {
        match &self.storage {
            Storage::Host { list, .. } => list.capacity(),
            Storage::Cuda(c) => c.capacity,
        }
    }

    /// Whether pushes of an item pushed already are skipped.
    pub fn dedup(&self) -> bool {
        match &self.storage {
            Storage::Host { list, .. } => list.dedup(),
            Storage::Cuda(c) => c.seen.is_some(),
        }
    }

    /// How pushes reserve their slots on CUDA (the CPU backend has one way).
    pub fn push_variant(&self) -> PushVariant {
        match &self.storage {
            Storage::Host { variant, .. } => *variant,
            Storage::Cuda(c) => c.variant,
        }
    }

    /// Sets how pushes reserve their slots in launches made from now on
    /// (kept, with no effect, on the CPU backend).
    pub fn set_push_variant(&mut self, variant: PushVariant) {
        match &mut self.storage {
            Storage::Host { variant: v, .. } => *v = variant,
            Storage::Cuda(c) => c.variant = variant,
        }
    }

    /// Where the list lives, in words.
    pub fn location(&self) -> String {
        match &self.storage {
            Storage::Host { .. } => "the CPU".into(),
            Storage::Cuda(c) => format!("CUDA device {} ({})", c.device.ordinal(), c.device.name()),
        }
    }

    /// The runtime's list, on the CPU backend.
    pub fn host(&self) -> Option<&Worklist> {
        match &self.storage {
            Storage::Host { list, .. } => Some(list),
            Storage::Cuda(_) => None,
        }
    }

    /// The push count on the device, for an asynchronous read
    /// ([`crate::Readback`]); `None` on the CPU backend ([`needed`](Self::needed)
    /// reads it there at no cost).
    pub fn count(&self) -> Option<&DeviceVec<u64>> {
        match &self.storage {
            Storage::Host { .. } => None,
            Storage::Cuda(c) => Some(&c.count),
        }
    }

    /// Pushes since the last clear, stored or spilled: the capacity that
    /// would have held them all. On CUDA this waits for the device's work
    /// and reads one word.
    pub fn needed(&self) -> Result<usize> {
        match &self.storage {
            Storage::Host { list, .. } => Ok(list.needed()),
            Storage::Cuda(c) => {
                let n = c.count.to_vec()?.first().copied().unwrap_or(0);
                usize::try_from(n).map_err(|_| Error::invalid("a worklist count beyond usize"))
            }
        }
    }

    /// Items stored (at most the capacity); on CUDA it waits, as
    /// [`needed`](Self::needed).
    pub fn len(&self) -> Result<usize> {
        Ok(self.needed()?.min(self.capacity()))
    }

    /// Whether nothing was pushed since the last clear (waits on CUDA).
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.needed()? == 0)
    }

    /// Whether some pushed items are in the spill bitmap (waits on CUDA).
    pub fn overflowed(&self) -> Result<bool> {
        Ok(self.needed()? > self.capacity())
    }

    /// The stored items, in slot order (waits on CUDA).
    pub fn to_vec(&self) -> Result<Vec<u32>> {
        match &self.storage {
            Storage::Host { list, .. } => Ok((0..list.len()).filter_map(|i| list.get(i)).collect()),
            Storage::Cuda(c) => {
                let len = self.len()?;
                let mut all = c.items.to_vec(&c.device)?;
                all.truncate(len);
                Ok(all)
            }
        }
    }

    /// Empties the list (its items, spill bitmap and, deduplicating, its
    /// record of pushed items). On CUDA it is enqueued on the device's
    /// stream, ordered with launches (a kernel that clears the bitmaps as
    /// far as the count on the device says they hold anything, then the
    /// count); a shared borrow, so that lists that prepared launches hold
    /// can be cleared between rounds.
    pub fn clear(&self) -> Result<()> {
        match &self.storage {
            Storage::Host { list, .. } => {
                list.reset();
                Ok(())
            }
            Storage::Cuda(c) => {
                let k = c.device.extension::<WorklistKernels>()?;
                k.clear(&c.device, c.device_ref())?;
                c.count.zero_async()
            }
        }
    }

    /// Replaces the list's contents by `items` (a round's first frontier),
    /// as if each had been pushed once since a clear.
    ///
    /// # Errors
    /// An item outside the universe, or more items than the capacity.
    pub fn set_items(&mut self, items: &[u32]) -> Result<()> {
        if let Some(&bad) = items.iter().find(|&&i| i as usize >= self.universe()) {
            return Err(Error::out_of_range(
                "item set in a worklist",
                bad,
                self.universe(),
            ));
        }
        if items.len() > self.capacity() {
            return Err(Error::invalid(format!(
                "{} items do not fit a worklist of capacity {}: grow it first",
                items.len(),
                self.capacity()
            )));
        }
        match &mut self.storage {
            Storage::Host { list, .. } => {
                list.clear();
                for &i in items {
                    list.push(i).map_err(Error::from)?;
                }
                Ok(())
            }
            Storage::Cuda(c) => {
                if !items.is_empty() {
                    let mut view = c.items.as_slice_mut().slice_mut(0..items.len());
                    c.device
                        .stream()
                        .memcpy_htod(items, &mut view)
                        .map_err(cuda_err("uploading a worklist's items"))?;
                }
                let words = bitmap_words(c.universe);
                c.spill.clear(&c.device)?;
                if let Some(seen) = &mut c.seen {
                    let mut bits = vec![0u32; words];
                    for &i in items {
                        bits[i as usize / 32] |= 1 << (i % 32);
                    }
                    seen.copy_from(&c.device, &bits)?;
                }
                c.count.copy_from(&[items.len() as u64])
            }
        }
    }

    /// Grows the list to `capacity` slots, keeping its items, then moves
    /// spilled items in (ascending) while they fit; with `capacity >=
    /// needed()` it afterwards holds exactly the items pushed (as a set),
    /// as a list that large from the start would. On CUDA the items are
    /// copied and unspilled on the device (`wf_unspill`), enqueued.
    ///
    /// # Errors
    /// A smaller capacity than the current one, or memory the budget or
    /// the GPU cannot give (the list is unchanged then).
    pub fn grow(&mut self, capacity: usize) -> Result<()> {
        match &mut self.storage {
            Storage::Host { list, .. } => list.grow(capacity),
            Storage::Cuda(c) => {
                if capacity < c.capacity {
                    return Err(Error::invalid(format!(
                        "a worklist grows, it does not shrink: capacity {capacity} < {}",
                        c.capacity
                    )));
                }
                let mut items = DeviceBuffer::<u32>::zeros(&c.device, capacity)?;
                if c.capacity > 0 {
                    let from = c.items.as_slice().slice(0..c.capacity);
                    let mut to = items.as_slice_mut().slice_mut(0..c.capacity);
                    c.device
                        .stream()
                        .memcpy_dtod(&from, &mut to)
                        .map_err(cuda_err(
                            "copying a worklist's items into its grown storage",
                        ))?;
                }
                let old_capacity = c.capacity;
                c.items = items;
                c.capacity = capacity;
                let k = c.device.extension::<WorklistKernels>()?;
                k.unspill(&c.device, c.device_ref(), old_capacity as u64)
            }
        }
    }

    /// The list's device form for a kernel's `Params`, on `dev`.
    pub(crate) fn device_ref(&self) -> Option<(WorklistRef, &CudaDevice)> {
        match &self.storage {
            Storage::Host { .. } => None,
            Storage::Cuda(c) => Some((c.device_ref(), &c.device)),
        }
    }
}

impl CudaList {
    fn device_ref(&self) -> WorklistRef {
        let d = &self.device;
        WorklistRef {
            items: self.items.device_ptr(d),
            count: self.count.cuda_ptr().unwrap_or(0),
            spill: self.spill.device_ptr(d),
            seen: self.seen.as_ref().map_or(0, |s| s.device_ptr(d)),
            capacity: self.capacity as u64,
            universe: self.universe as u64,
            variant: self.variant as u32,
            pad: 0,
        }
    }
}

impl<'a> From<&'a DeviceWorklist> for Tasks<'a> {
    /// The list's items as a launch's tasks: on the CPU backend the
    /// runtime's [`Tasks::Frontier`], on CUDA a [`Tasks::DeviceFrontier`]
    /// whose count the launch reads on the device.
    fn from(list: &'a DeviceWorklist) -> Self {
        match &list.storage {
            Storage::Host { list, .. } => Tasks::Frontier(list),
            Storage::Cuda(c) => {
                let r = c.device_ref();
                // SAFETY: the addresses are the list's own buffers on its
                // device, which the borrow `'a` keeps alive and unchanged
                // (growth takes `&mut`).
                Tasks::DeviceFrontier(unsafe {
                    DeviceFrontier::new(r.items, r.count, r.capacity, c.device.ordinal())
                })
            }
        }
    }
}

impl WorklistArg for DeviceWorklist {
    fn list_arg(&self) -> ListArg<'_> {
        let place = match (&self.storage, self.device_ref()) {
            (Storage::Host { list, .. }, _) => ListPlace::Host(list),
            (Storage::Cuda(_), Some((list, device))) => ListPlace::Cuda { list, device },
            (Storage::Cuda(_), None) => unreachable!("a CUDA list has a device form"),
        };
        ListArg { place }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_list_runs_the_runtimes_list() {
        let device = Device::cpu();
        let mut wl = device.worklist_dedup(10, 2).unwrap();
        assert!(wl.dedup() && wl.count().is_none());
        assert_eq!(wl.push_variant(), PushVariant::Warp);
        wl.set_push_variant(PushVariant::Block);
        assert_eq!(wl.push_variant(), PushVariant::Block);
        wl.set_items(&[4, 9]).unwrap();
        assert_eq!(wl.to_vec().unwrap(), [4, 9]);
        assert!(wl.set_items(&[10]).is_err());
        assert!(wl.set_items(&[1, 2, 3]).is_err());
        let host = wl.host().unwrap();
        host.push(4).unwrap(); // deduplicated
        host.push(5).unwrap(); // spilled
        assert!(wl.overflowed().unwrap());
        assert_eq!(wl.needed().unwrap(), 3);
        wl.grow(3).unwrap();
        assert_eq!(wl.to_vec().unwrap(), [4, 9, 5]);
        assert!(wl.grow(1).is_err());
        wl.clear().unwrap();
        assert!(wl.is_empty().unwrap());
        match Tasks::from(&wl) {
            Tasks::Frontier(l) => assert!(std::ptr::eq(l, wl.host().unwrap())),
            other => panic!("{other:?}"),
        }
        assert!(format!("{wl:?}").contains("the CPU"));
    }
}
