//! Binding and staging a throttled handle's per-launch arguments: each
//! parameter's slot (a shape array the handle owns, a per-launch array
//! staged in a buffer of the handle's or bound in place, a scalar), the key
//! a prepared schedule was made over, and the argument list a schedule's
//! launches take (permuted into the remapped numbering where it runs
//! there).

use crate::engines::gather_layouts::LayoutKernels;
use crate::launch::arg::Arg;
use crate::launch::device_vec::{Place, ResidentArray};
use crate::spec::{ParamKind, ScalarValue};
use crate::throttle::device_layouts::{DeviceLayout, Space};
use crate::throttle::erased_vec::ErasedVec;
use crate::throttle::handle::{Runs, Schedule, Throttled};
use crate::throttle::slots::{arg_signature, bindable, Bound, Slot, Staging};
use warpfit_runtime::{Error, Result};

impl Throttled {
    /// What a prepared schedule depends on besides the plan: the staged
    /// arrays' addresses and lengths, the scalars, the numbering.
    pub(in crate::throttle) fn binding_key(&self) -> Result<Vec<u64>> {
        let mut key = vec![u64::from(self.plan_order)];
        for slot in &self.slots {
            match slot {
                Slot::Scalar(v) => key.push(match v {
                    None => u64::MAX,
                    Some(ScalarValue::F32(x)) => u64::from(x.to_bits()),
                    Some(ScalarValue::F64(x)) => x.to_bits(),
                    Some(ScalarValue::I32(x)) => *x as u32 as u64,
                    Some(ScalarValue::U32(x)) => u64::from(*x),
                    Some(ScalarValue::I64(x)) => *x as u64,
                    Some(ScalarValue::U64(x)) => *x,
                    Some(ScalarValue::U8(x)) => u64::from(*x),
                    Some(ScalarValue::Bool(x)) => u64::from(*x),
                }),
                Slot::Staged(Staging::Own(b)) => {
                    let addr = match b.arg(ParamKind::Input) {
                        Arg::Resident(ResidentArray {
                            place: Place::Cuda { ptr, .. },
                            ..
                        }) => ptr,
                        Arg::Resident(ResidentArray {
                            place: Place::Host { addr },
                            ..
                        }) => addr as u64,
                        _ => 0,
                    };
                    key.extend([addr, b.len() as u64]);
                }
                Slot::Staged(Staging::Bound(b)) => key.extend([b.addr, b.len as u64]),
                Slot::Staged(Staging::Empty) | Slot::Shape(_) => key.push(0),
            }
        }
        Ok(key)
    }

    /// Keeps the prepared schedule when the staged arrays are those it was
    /// prepared over; else sets it aside and takes the one set aside if it
    /// fits (a driver alternating two sets of arrays, `x → y` then `y → x`,
    /// prepares each once), or leaves none, which the launch prepares.
    pub(in crate::throttle) fn rebind(&mut self) -> Result<()> {
        let key = self.binding_key()?;
        if key == self.key {
            return Ok(());
        }
        let current = self.schedule.take();
        if let Some((k, s)) = self.spare.take() {
            if k == key {
                self.schedule = Some(s);
            }
        }
        if let Some(s) = current {
            self.spare = Some((std::mem::take(&mut self.key), s));
        }
        self.key = key;
        Ok(())
    }

    /// The schedule set aside (prepared over other arrays) rebound to the
    /// arrays staged now: its split, task lists and layouts kept, only its
    /// arguments made again (`CudaLaunch::rebound`), where preparing it
    /// again would measure and cut every launch's tasks once more. `None`
    /// where nothing is set aside (the launch prepares).
    pub(in crate::throttle) fn rebound_spare(&mut self) -> Result<Option<Schedule>> {
        let Some((key, prior)) = self.spare.take() else {
            return Ok(None);
        };
        let rebound = self.rebound(&prior);
        self.spare = Some((key, prior));
        rebound.map(Some)
    }

    /// `prior` over the arrays staged now.
    fn rebound(&mut self, prior: &Schedule) -> Result<Schedule> {
        if let (Space::Remapped, Some(dev)) = (prior.space, self.device.cuda().cloned()) {
            // The per-launch arrays' remapped copies, for these arrays.
            self.remap_tables(&dev)?;
        }
        let space = prior.space;
        let runs = match &prior.runs {
            Runs::Single(p) => Runs::Single(Box::new(p.rebound(self.per_launch_args(space)?)?)),
            Runs::Carried(c) => Runs::Carried(c.rebound(&|| self.per_launch_args(space))?),
            Runs::Cpu => Runs::Cpu,
        };
        Ok(Schedule {
            policy: prior.policy,
            space,
            runs,
            layouts: prior.layouts.clone(),
        })
    }

    /// Checks `per_launch` against the kernel and stages it: scalars and
    /// arrays bound or copied into the handle's buffers (a change of
    /// length, scalar or bound array changes the binding key, and the
    /// launch rebinds the prepared schedule: [`Throttled::rebind`], then
    /// [`Throttled::rebound_spare`]). Returns the per-launch parameters'
    /// indices.
    pub(in crate::throttle) fn stage(&mut self, per_launch: &[Arg<'_>]) -> Result<Vec<usize>> {
        let name = self.spec.name;
        let params: Vec<usize> = (0..self.spec.params.len())
            .filter(|&i| !self.roles.shapes(i))
            .collect();
        if per_launch.len() != params.len() {
            return Err(Error::invalid(format!(
                "kernel `{name}`: a throttled launch takes {} arguments, got {}",
                params.len(),
                per_launch.len()
            )));
        }
        for (arg, &i) in per_launch.iter().zip(&params) {
            let p = &self.spec.params[i];
            let (kind, ty, len) = arg_signature(arg);
            if kind != p.kind || ty != p.ty {
                return Err(Error::invalid(format!(
                    "kernel `{name}`: argument `{}` must be {}, got {}",
                    p.name,
                    p.kind.rust_type(p.ty),
                    kind.rust_type(ty)
                )));
            }
            match (&mut self.slots[i], arg) {
                (Slot::Scalar(v), Arg::Scalar(s)) => *v = Some(*s),
                (Slot::Staged(staging), _) => {
                    if let Some(bound) = bindable(&self.device, arg) {
                        *staging = Staging::Bound(bound);
                        continue;
                    }
                    if !matches!(staging, Staging::Own(b) if b.len() == len) {
                        *staging = Staging::Empty;
                        *staging = Staging::Own(ErasedVec::zeros(&self.device, ty, len)?);
                    }
                    if let Staging::Own(b) = staging {
                        b.copy_in(&self.device, arg, p.name)?;
                    }
                }
                _ => {
                    return Err(Error::invalid(format!(
                        "kernel `{name}`: argument `{}` does not match its parameter",
                        p.name
                    )))
                }
            }
        }
        self.check_bound_outputs()?;
        Ok(params)
    }

    /// An output used in place must not be another argument too (the
    /// kernel would read what it writes).
    pub(in crate::throttle) fn check_bound_outputs(&self) -> Result<()> {
        let bound: Vec<(usize, Bound)> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s {
                Slot::Staged(Staging::Bound(b)) => Some((i, *b)),
                _ => None,
            })
            .collect();
        for &(i, b) in &bound {
            if self.spec.params[i].kind != ParamKind::Output || b.len == 0 {
                continue;
            }
            if let Some(&(j, _)) = bound.iter().find(|(j, c)| *j != i && c.addr == b.addr) {
                return Err(Error::invalid(format!(
                    "kernel `{}`: output `{}` is also passed as `{}`; an output must be an array of its own",
                    self.spec.name, self.spec.params[i].name, self.spec.params[j].name
                )));
            }
        }
        Ok(())
    }

    /// The device address of per-launch array `i` as staged.
    pub(in crate::throttle) fn staged_ptr(&self, i: usize) -> Result<(u64, usize)> {
        match &self.slots[i] {
            Slot::Staged(Staging::Own(b)) => Ok((b.device_ptr()?, b.len())),
            Slot::Staged(Staging::Bound(b)) if b.cuda => Ok((b.addr, b.len)),
            _ => Err(Error::invalid(format!(
                "kernel `{}`: parameter `{}` has no device array",
                self.spec.name, self.spec.params[i].name
            ))),
        }
    }

    /// The remapped numbering's copy of per-launch array `i`.
    pub(in crate::throttle) fn staged_r(&self, i: usize) -> Option<&ErasedVec> {
        self.staged_r.iter().find(|(j, _)| *j == i).map(|(_, v)| v)
    }

    /// Moves the permuted per-launch arrays between the caller's numbering
    /// and the plan's (`into`: before a run, every permuted array;
    /// after: the outputs back).
    pub(in crate::throttle) fn permute(&self, into: bool) -> Result<()> {
        let (Some(dev), Some(tables)) = (self.device.cuda(), self.layouts.tables.as_ref()) else {
            return Err(Error::invalid(
                "a remapped schedule without its permutations",
            ));
        };
        let kernels = dev.extension::<LayoutKernels>()?;
        for (i, r) in &self.staged_r {
            let (ptr, len) = self.staged_ptr(*i)?;
            let perm = if self.roles.gathered.contains(i) {
                &tables.gathered_perm
            } else {
                &tables.task_perm
            };
            let w = r.ty().size();
            let scratch = tables.scratch.as_ref();
            if into && self.roles.overwritten.contains(i) {
                // Every task overwrites it: its old values are never seen.
                continue;
            }
            if into {
                // r[new] = a[perm[new]]
                perm.run(dev, &kernels, w, r.device_ptr()?, ptr, len as u64, scratch)?;
            } else if self.spec.params[*i].kind == ParamKind::Output {
                // a[perm[new]] = r[new], written as a[old] = r[inv[old]]
                // over the tasks (an output is only ever indexed by the
                // task, and `perm` is a bijection of them): random reads
                // and ordered writes cost a fraction of the scatter's
                // random partial-sector writes (BENCHMARKS.md, "Outputs
                // back by a gather").
                tables.task_inv.run(
                    dev,
                    &kernels,
                    w,
                    ptr,
                    r.device_ptr()?,
                    r.len() as u64,
                    scratch,
                )?;
            }
        }
        Ok(())
    }

    /// The arguments of a launch: the shape arrays of `shape` (a layout and
    /// which of its range arrays; `None`: the arrays as given), the
    /// per-launch ones as staged, in the remapped numbering for `space`
    /// `Remapped`.
    pub(in crate::throttle) fn args<'s>(
        &'s self,
        shape: Option<(&'s DeviceLayout, usize)>,
        space: Space,
    ) -> Result<Vec<Arg<'s>>> {
        (0..self.spec.params.len())
            .map(|i| self.arg(i, shape, space))
            .collect()
    }

    /// The per-launch arguments as [`args`](Self::args) gives them, by
    /// parameter index: what a schedule prepared over other arrays is
    /// rebound to.
    pub(in crate::throttle) fn per_launch_args(
        &self,
        space: Space,
    ) -> Result<Vec<(usize, Arg<'_>)>> {
        (0..self.spec.params.len())
            .filter(|&i| !self.roles.shapes(i))
            .map(|i| Ok((i, self.arg(i, None, space)?)))
            .collect()
    }

    /// Argument `i` of [`args`](Self::args).
    fn arg<'s>(
        &'s self,
        i: usize,
        shape: Option<(&'s DeviceLayout, usize)>,
        space: Space,
    ) -> Result<Arg<'s>> {
        let missing = || {
            Error::invalid(format!(
                "kernel `{}`: parameter `{}` has no array for this schedule",
                self.spec.name, self.spec.params[i].name
            ))
        };
        let kind = self.spec.params[i].kind;
        if space == Space::Remapped && !self.plan_order && self.roles.permuted(i) {
            return Ok(self.staged_r(i).ok_or_else(missing)?.arg(kind));
        }
        Ok(match (&self.slots[i], shape) {
            (Slot::Scalar(v), _) => Arg::Scalar(v.ok_or_else(missing)?),
            (Slot::Staged(Staging::Own(b)), _) => b.arg(kind),
            (Slot::Staged(Staging::Bound(b)), _) => {
                let place = match (b.cuda, self.device.cuda()) {
                    (true, Some(device)) => Place::Cuda {
                        ptr: b.addr,
                        device,
                    },
                    _ => Place::Host {
                        addr: b.addr as usize,
                    },
                };
                Arg::Resident(ResidentArray {
                    kind,
                    ty: self.spec.params[i].ty,
                    len: b.len,
                    place,
                })
            }
            (Slot::Staged(Staging::Empty), _) => return Err(missing()),
            (Slot::Shape(_), Some((l, p))) if i == self.roles.range => {
                l.ptrs.get(p).ok_or_else(missing)?.arg(kind)
            }
            (Slot::Shape(_), Some((l, _))) => match &l.delta {
                Some(d) if d.param == i => d.arg(kind),
                _ => l.fine(i).ok_or_else(missing)?.arg(kind),
            },
            (Slot::Shape(b), None) => b.as_ref().ok_or_else(missing)?.arg(kind),
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::driver::device::Device;
    use crate::launch::arg::Arg;
    use crate::throttle::plan_thread::tests::cpu_handle;
    use warpfit_runtime::gen;
    use warpfit_runtime::schedule::ThrottlePolicy;

    #[test]
    fn the_binding_key_follows_the_arrays_bound_in_place() {
        let a = gen::uniform(256, 4, 1).unwrap();
        let (n, m) = (a.nrows(), a.ncols());
        let mut t = cpu_handle(&a, ThrottlePolicy::Org);
        let dev = Device::Cpu;
        let (x1, x2) = (
            dev.upload(&vec![1f32; m]).unwrap(),
            dev.upload(&vec![2f32; m]).unwrap(),
        );
        let y = dev.alloc::<f32>(n).unwrap();
        t.launch(&mut [Arg::resident_input(&x1), Arg::resident_output(&y)])
            .unwrap();
        let first = t.binding_key().unwrap();
        // The caller's numbering, then one entry per parameter or two per
        // array (address and length).
        assert_eq!(first[0], 0);
        assert_eq!(first, t.key);
        t.launch(&mut [Arg::resident_input(&x1), Arg::resident_output(&y)])
            .unwrap();
        assert_eq!(t.binding_key().unwrap(), first, "the same arrays");
        t.launch(&mut [Arg::resident_input(&x2), Arg::resident_output(&y)])
            .unwrap();
        let second = t.binding_key().unwrap();
        assert_ne!(second, first, "another input array");
        assert_eq!(second.len(), first.len());
    }
}
