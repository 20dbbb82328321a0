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

    /// Folds fine tasks `lo..hi` of `task` onto `acc`.
    #[inline]
    fn fold_range(
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
}

/// A kernel whose map reads one array through an index array (`x[col[k]]`):
/// the shape throttling partitions. `#[nested_reduce]` implements it when the
/// kernel IR shows exactly one such gathered array.
pub trait GatherKernel: NestedKernel {
    /// Name of the gathered array (`x` in `x[col[k] as usize]`).
    const GATHERED: &'static str;
    /// Size in bytes of one gathered element.
    const GATHERED_ELEM_BYTES: usize;
    /// Size in bytes of one output element per task (summed over outputs).
    const OUTPUT_ELEM_BYTES: usize;
    /// Length of the gathered array: the data elements fine tasks can touch.
    fn gathered_len(&self) -> usize;
    /// The gathered index that fine task `k` of `task` reads.
    fn gathered_index(&self, task: usize, ctx: &Self::Ctx, k: usize) -> Result<usize, Fault>;
}
