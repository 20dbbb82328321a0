use crate::Error;

/// What a kernel body can fail with while it runs: a checked index or an
/// integer division by zero. Small and `Copy` so the hot loop stays cheap;
/// [`Fault::into_error`] attaches the kernel and task for the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// `array[index]` with `index >= len`.
    Index {
        array: &'static str,
        index: u64,
        len: u64,
    },
    /// Integer `/` or `%` by zero.
    DivisionByZero,
    /// A task-list segment outside the task's own fine-task range.
    SegmentOutOfRange {
        lo: u64,
        hi: u64,
        task_lo: u64,
        task_hi: u64,
    },
    /// `push(worklist, item)` with `item` outside the list's universe.
    Push {
        worklist: &'static str,
        item: u64,
        universe: u64,
    },
}

impl Fault {
    /// Shorthand used by generated code for a failed bounds check.
    #[inline]
    pub fn index(array: &'static str, index: usize, len: usize) -> Self {
        Fault::Index {
            array,
            index: index as u64,
            len: len as u64,
        }
    }

    /// Shorthand used by generated code for a push outside the universe.
    #[cold]
    pub fn push(worklist: &'static str, e: crate::worklist::PushError) -> Self {
        match e {
            crate::worklist::PushError::OutOfUniverse { item, universe } => Fault::Push {
                worklist,
                item: u64::from(item),
                universe: universe as u64,
            },
        }
    }

    /// The user-facing error for this fault in `task` of `kernel`.
    pub fn into_error(self, kernel: &'static str, task: usize) -> Error {
        match self {
            Fault::Index { array, index, len } => Error::IndexOutOfRange {
                what: format!("kernel `{kernel}`, task {task}: `{array}`"),
                index,
                len,
            },
            Fault::DivisionByZero => Error::DivisionByZero {
                kernel,
                task: task as u64,
            },
            Fault::SegmentOutOfRange {
                lo,
                hi,
                task_lo,
                task_hi,
            } => Error::InvalidTaskList(format!(
                "kernel `{kernel}`: segment {lo}..{hi} of task {task} is outside the task's range {task_lo}..{task_hi}"
            )),
            Fault::Push {
                worklist,
                item,
                universe,
            } => Error::IndexOutOfRange {
                what: format!("kernel `{kernel}`, task {task}: item pushed to worklist `{worklist}`"),
                index: item,
                len: universe,
            },
        }
    }
}

/// A kernel in the nested map/fold shape, as `#[nested_reduce]` generates it.
///
/// The body of the user's function is cut into these pieces so that an executor
/// can run one task whole, or a segment of its fine tasks, or merge the partial
/// results of a split task: `prologue` evaluates the `let`s before the nested
/// pattern and the range `lo..hi`; `map` is the closure of `.map`, `init` and
/// `reduce` those of `.fold`; `epilogue` is everything after, given the folded
/// value. All of them see the kernel's arguments through `&self`.
pub trait NestedKernel: Sync {
    /// The kernel's name, for error messages.
    const NAME: &'static str;
    /// The type of the folded value.
    type Acc: Copy + Send + Sync;
    /// The prologue bindings that `init`, `map` and `epilogue` use.
    type Ctx: Send + Sync;

    /// Runs the prologue of `task`; returns its bindings and fine-task range.
    fn prologue(&self, task: usize) -> Result<(Self::Ctx, usize, usize), Fault>;
    /// The fold's initial value for `task`.
    fn init(&self, task: usize, ctx: &Self::Ctx) -> Result<Self::Acc, Fault>;
    /// The map closure applied to fine task `k` of `task`.
    fn map(&self, task: usize, ctx: &Self::Ctx, k: usize) -> Result<Self::Acc, Fault>;
    /// The fold's reduce operator.
    fn reduce(&self, a: Self::Acc, b: Self::Acc) -> Result<Self::Acc, Fault>;
    /// The statements after the fold, given its result; the only place that writes.
    fn epilogue(&self, task: usize, ctx: &Self::Ctx, acc: Self::Acc) -> Result<(), Fault>;

    /// Whether `acc` settles the fold: nothing folded onto it changes it
    /// (`true` for `(lo..hi).any(..)`, `false` for `.all(..)`), so an
    /// executor may stop there. Folds that never settle keep `false`.
    #[inline]
    fn settled(&self, acc: &Self::Acc) -> bool {
        let _ = acc;
        false
    }

    /// Folds fine tasks `lo..hi` of `task` onto `acc`: through
    /// [`fold_range_prechecked`](Self::fold_range_prechecked) when
    /// [`precheck`](Self::precheck) passes for the range, else checked.
    #[inline]
    fn fold_range(
        &self,
        task: usize,
        ctx: &Self::Ctx,
        lo: usize,
        hi: usize,
        acc: Self::Acc,
    ) -> Result<Self::Acc, Fault> {
        if lo < hi && self.precheck(lo, hi) {
            // SAFETY: `precheck` just passed for exactly `lo..hi`.
            return unsafe { self.fold_range_prechecked(task, ctx, lo, hi, acc) };
        }
        self.fold_range_checked(task, ctx, lo, hi, acc)
    }

    /// Folds fine tasks `lo..hi` with every check `map` makes: the path that
    /// reports the exact first fault.
    #[inline]
    fn fold_range_checked(
        &self,
        task: usize,
        ctx: &Self::Ctx,
        lo: usize,
        hi: usize,
        mut acc: Self::Acc,
    ) -> Result<Self::Acc, Fault> {
        for k in lo..hi {
            let v = self.map(task, ctx, k)?;
            acc = self.reduce(acc, v)?;
            if self.settled(&acc) {
                break;
            }
        }
        Ok(acc)
    }

    /// Runs `task` whole: prologue, fold over its range from `init`, epilogue.
    #[inline]
    fn run_task(&self, task: usize) -> Result<(), Fault> {
        let (ctx, lo, hi) = self.prologue(task)?;
        let init = self.init(task, &ctx)?;
        let acc = self.fold_range(task, &ctx, lo, hi, init)?;
        self.epilogue(task, &ctx, acc)
    }

    /// Whether the loads that [`fold_range_prechecked`](Self::fold_range_prechecked)
    /// reads unchecked are in bounds for every fine task in `lo..hi`: the
    /// arrays read at the fine-task index reach `hi`, and the arrays
    /// gathered through an index array hold every index it has there. One
    /// call for a block of tasks whose ranges lie in `lo..hi` replaces a
    /// check per task and per element. `false`: no such fast path.
    #[inline]
    fn precheck(&self, lo: usize, hi: usize) -> bool {
        let _ = (lo, hi);
        false
    }

    /// [`fold_range`](Self::fold_range) without the checks that
    /// [`precheck`](Self::precheck) covers.
    ///
    /// # Safety
    ///
    /// `precheck(a, b)` returned `true` for some `a <= lo` and `hi <= b`.
    #[inline]
    unsafe fn fold_range_prechecked(
        &self,
        task: usize,
        ctx: &Self::Ctx,
        lo: usize,
        hi: usize,
        acc: Self::Acc,
    ) -> Result<Self::Acc, Fault> {
        self.fold_range_checked(task, ctx, lo, hi, acc)
    }
}

/// A kernel together with a fine-task range whose loads its
/// [`precheck`](NestedKernel::precheck) found in bounds: tasks whose ranges
/// lie inside run their fold without the covered checks. It borrows the
/// kernel, whose inputs are shared borrows, so they cannot change meanwhile.
pub struct Prechecked<'k, K: ?Sized> {
    kernel: &'k K,
    lo: usize,
    hi: usize,
}

impl<'k, K: NestedKernel + ?Sized> Prechecked<'k, K> {
    /// Runs `kernel.precheck(lo, hi)`; `Some` when it passed.
    pub fn new(kernel: &'k K, lo: usize, hi: usize) -> Option<Self> {
        (lo <= hi && kernel.precheck(lo, hi)).then_some(Prechecked { kernel, lo, hi })
    }

    /// [`NestedKernel::run_task`], its fold unchecked where the precheck
    /// covers it: when the task's range lies in the prechecked one (else it
    /// runs checked, so a block that misses a task costs speed, never safety).
    #[inline]
    pub fn run_task(&self, task: usize) -> Result<(), Fault> {
        let k = self.kernel;
        let (ctx, lo, hi) = k.prologue(task)?;
        let init = k.init(task, &ctx)?;
        let acc = if self.lo <= lo && hi <= self.hi {
            // SAFETY: `new` ran `precheck(self.lo, self.hi)` on this kernel,
            // whose inputs are immutable while it is borrowed, and `lo..hi`
            // lies inside that range.
            unsafe { k.fold_range_prechecked(task, &ctx, lo, hi, init)? }
        } else {
            k.fold_range(task, &ctx, lo, hi, init)?
        };
        k.epilogue(task, &ctx, acc)
    }
}

/// A kernel whose map reads arrays through one index (`x[col[k]]`, or a
/// cell's neighbour's `density[nbr[k]]` and `energy[nbr[k]]`): the shape
/// throttling partitions. `#[nested_reduce]` implements it when every gather
/// of the kernel IR reads at one index expression.
pub trait GatherKernel: NestedKernel {
    /// Names of the gathered arrays, joined by `", "` (`x` in
    /// `x[col[k] as usize]`).
    const GATHERED: &'static str;
    /// Size in bytes of one gathered element: one element of each gathered
    /// array, which a cache-fit partition holds together.
    const GATHERED_ELEM_BYTES: usize;
    /// Size in bytes of one output element per task (summed over outputs).
    const OUTPUT_ELEM_BYTES: usize;
    /// Length of the (first) gathered array: the data elements fine tasks can
    /// touch.
    fn gathered_len(&self) -> usize;
    /// The gathered index that fine task `k` of `task` reads.
    fn gathered_index(&self, task: usize, ctx: &Self::Ctx, k: usize) -> Result<usize, Fault>;
    /// The part of [`NestedKernel::prologue`] the work graph needs: the
    /// range bounds and the context the gathered index reads, over the
    /// shape arrays only (other context fields may be left at their
    /// defaults). The whole prologue unless the kernel says otherwise.
    fn shape(&self, task: usize) -> Result<(Self::Ctx, usize, usize), Fault> {
        self.prologue(task)
    }
}
