//! The kernel's access facts, computed once from the typed IR and read by
//! both emitters and by `work_graph`: which arrays the map reads at the
//! fine-task index, which it gathers through an index array, and whether the
//! kernel can be throttled (or why not).

use crate::ir::{Expr, ExprKind, Kernel, LocalId, Param, ParamKind, Reduce, Stmt, Ty};
use std::collections::BTreeSet;

/// How the map of a kernel reads its input arrays.
pub struct Access {
    /// Input arrays read at exactly the fine-task index (`val[k]`, `col[k]`):
    /// one bound check per range (`hi <= len`) covers all their loads.
    pub direct: BTreeSet<usize>,
    /// `(gathered, index)` pairs read as `gathered[index[k] as usize]` where
    /// `index` is one of `direct` with an unsigned element type: one pass
    /// over `index[lo..hi]` against `gathered.len()` covers those loads.
    /// (A signed index is excluded: a negative value cast to `usize` is
    /// huge, which comparing the signed values would not show.)
    pub prechecked_gathers: BTreeSet<(usize, usize)>,
    /// Whether a work graph (throttling) can describe the kernel.
    pub throttle: Result<Throttle, NotThrottled>,
}

/// The gather of a throttleable kernel: one index, one or more arrays read
/// at it (the conserved variables of a cell's neighbour, a PageRank's rank
/// and degree), which a cache-fit partition holds together.
pub struct Throttle {
    /// The arrays the map reads through an index array, sorted; all read at
    /// `index`.
    pub gathered: Vec<usize>,
    /// The index they are read at (the `usize` inside `gathered[..]`), in
    /// the map's scope.
    pub index: Expr,
}

impl Throttle {
    /// The first gathered array, whose length sizes the plan (the others
    /// must have the same length).
    pub fn first(&self) -> usize {
        self.gathered[0]
    }

    /// The gathered arrays' names, as errors and documentation list them.
    pub fn names(&self, params: &[Param]) -> String {
        self.gathered
            .iter()
            .map(|&i| format!("`{}`", params[i].name))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Why a kernel has no work graph.
pub enum NotThrottled {
    /// The map reads no array through an index array.
    NoGather,
    /// The map gathers at several different index expressions (the arrays
    /// read at them, sorted parameter indices).
    SeveralIndices(Vec<usize>),
    /// A push kernel's `for_each`: there is no fold to carry between the
    /// cache-fit launches.
    ForEach,
    /// The kernel updates shared arrays or pushes to worklists, which the
    /// throttled handle does not hold.
    Scatters,
}

impl NotThrottled {
    /// The reason, as the launch API's error states it.
    pub fn reason(&self, params: &[Param]) -> String {
        match self {
            NotThrottled::NoGather => {
                "its map reads no array through an index array (like `x[col[k] as usize]`)".into()
            }
            NotThrottled::SeveralIndices(arrays) => {
                let names: Vec<_> = arrays
                    .iter()
                    .map(|&i| format!("`{}`", params[i].name))
                    .collect();
                match names.as_slice() {
                    [one] => format!("its map reads {one} through several different index expressions"),
                    _ => format!(
                        "its map gathers {} through different index expressions; a cache-fit partition holds the elements of one index",
                        names.join(", ")
                    ),
                }
            }
            NotThrottled::ForEach => "it is a `for_each` kernel, and throttling needs a fold (each task's fold is carried between the cache-fit launches)".into(),
            NotThrottled::Scatters => "it updates shared arrays or pushes to worklists, which the throttled handle does not hold".into(),
        }
    }
}

impl Access {
    /// The index array CTE probes at each item's first fine task to tell
    /// local gathers (neighbouring items read neighbouring data) from
    /// scattered ones.
    pub fn probe(&self) -> Option<usize> {
        self.prechecked_gathers
            .iter()
            .next()
            .map(|&(_, index)| index)
    }

    /// The index arrays of `prechecked_gathers`, each with the arrays
    /// gathered through it.
    pub fn index_arrays(&self) -> Vec<(usize, Vec<usize>)> {
        let indices: BTreeSet<usize> = self.prechecked_gathers.iter().map(|&(_, c)| c).collect();
        indices
            .into_iter()
            .map(|c| {
                let gathered = self
                    .prechecked_gathers
                    .iter()
                    .filter(|&&(_, c2)| c2 == c)
                    .map(|&(g, _)| g)
                    .collect();
                (c, gathered)
            })
            .collect()
    }

    /// Whether the load `array[index]` is covered by the range prechecks.
    pub fn is_prechecked(
        &self,
        fine: LocalId,
        params: &[Param],
        array: usize,
        index: &Expr,
    ) -> bool {
        match &index.kind {
            ExprKind::Local(id) => *id == fine && self.direct.contains(&array),
            _ => gather_index(index, fine, params)
                .is_some_and(|c| self.prechecked_gathers.contains(&(array, c))),
        }
    }
}

/// The access facts of a kernel's map.
pub fn kernel(k: &Kernel) -> Access {
    let mut direct = BTreeSet::new();
    let mut gathers_at_fine = BTreeSet::new();
    // Loads whose index itself reads an input array: the throttling shape.
    let mut through_index: Vec<(usize, &Expr)> = Vec::new();
    k.visit_map(&mut |x| {
        let ExprKind::Load(array, index) = &x.kind else {
            return;
        };
        if matches!(index.kind, ExprKind::Local(id) if id == k.k) {
            direct.insert(*array);
        }
        if let Some(c) = gather_index(index, k.k, &k.params) {
            gathers_at_fine.insert((*array, c));
        }
        if index.any(&mut |e| matches!(e.kind, ExprKind::Load(..))) {
            through_index.push((*array, index));
        }
    });
    let prechecked_gathers = gathers_at_fine
        .into_iter()
        .filter(|(_, c)| direct.contains(c))
        .collect();
    let throttle = if k.for_each.is_some() {
        Err(NotThrottled::ForEach)
    } else if k.scatters() {
        Err(NotThrottled::Scatters)
    } else {
        throttle(&through_index)
    };
    Access {
        direct,
        prechecked_gathers,
        throttle,
    }
}

/// A work graph needs one gathered index: every gather reads its array at
/// the same index expression (several arrays may be read at it).
fn throttle(gathers: &[(usize, &Expr)]) -> Result<Throttle, NotThrottled> {
    let arrays: BTreeSet<usize> = gathers.iter().map(|&(a, _)| a).collect();
    let (&(_, index), rest) = gathers.split_first().ok_or(NotThrottled::NoGather)?;
    if !rest.iter().all(|(_, other)| other.same_as(index)) {
        return Err(NotThrottled::SeveralIndices(arrays.into_iter().collect()));
    }
    Ok(Throttle {
        gathered: arrays.into_iter().collect(),
        index: index.clone(),
    })
}

/// The index array `c` when `idx` is `c[k] as usize` with `c` of an unsigned
/// element type.
fn gather_index(idx: &Expr, k: LocalId, params: &[Param]) -> Option<usize> {
    let ExprKind::Cast(inner) = &idx.kind else {
        return None;
    };
    let ExprKind::Load(c, at) = &inner.kind else {
        return None;
    };
    let unsigned = matches!(params[*c].ty, Ty::U8 | Ty::U32 | Ty::U64 | Ty::Usize);
    (idx.ty == Ty::Usize && unsigned && matches!(at.kind, ExprKind::Local(id) if id == k))
        .then_some(*c)
}

/// How a `#[throttled]` kernel's parameters take part in a cache-fit plan:
/// the throttled handle owns copies of the range array (one per partition)
/// and of the fine arrays (reordered part by part); everything else is
/// passed at each launch.
pub struct Roles {
    /// `A` in the range `A[task] as usize .. A[task + 1] as usize`.
    pub range: usize,
    /// Arrays read only at the fine-task index, sorted.
    pub fine: Vec<usize>,
    /// The arrays the map gathers, sorted.
    pub gathered: Vec<usize>,
    /// The `u32` fine array the gathered arrays are read through (`col` in
    /// `x[col[k] as usize]`), whether or not the kernel can be remapped:
    /// what a plan made on the device groups fine tasks by.
    pub through: Option<usize>,
    /// How a remapped plan (Algorithm 5: tasks and gathered elements
    /// renumbered) applies, or why it cannot.
    pub remap: Result<Remap, String>,
}

/// What remapping renumbers: the index array's values (gathered element
/// ids), and the per-launch arrays read and written at the task index only
/// (outputs always; inputs like `dist[v]`), which travel in the plan's
/// task order.
pub struct Remap {
    /// The fine array the gathered array is read through (`col` in
    /// `x[col[k] as usize]`), of `u32` elements.
    pub index: usize,
    /// Per-launch arrays indexed by the task only, sorted.
    pub task_indexed: Vec<usize>,
    /// Of those, the outputs every task overwrites without reading them
    /// (a store at the epilogue's top level, no read anywhere): a remapped
    /// launch need not bring their old values into the plan's order.
    pub overwritten: Vec<usize>,
    /// Whether a gathered array is also read at the task index (a cell's
    /// own state beside its neighbours'): a remapped plan then needs one
    /// permutation for tasks and gathered elements, so as many of each.
    pub gathered_at_task: bool,
}

/// The roles of a kernel's parameters under throttling, or why it cannot
/// be throttled. Throttling gives each partition its own range array and
/// reorders the fine tasks within each task, so: the range is the CSR form
/// over one unsigned input array, read nowhere else, whose bounds nothing
/// after the prologue uses (they are per partition); the fine arrays are
/// read only at the fine index, which the map uses for nothing else; and
/// the work graph (the range bounds, the gather's index and the prologue
/// bindings they use) depends on those arrays only, so that the handle can
/// be planned before any launch. Other prologue bindings may read the
/// launch's arrays (a cell's own state).
pub fn roles(k: &Kernel, access: &Access) -> Result<Roles, String> {
    let params = &k.params;
    let gather = access.throttle.as_ref().map_err(|why| why.reason(params))?;
    let count = k.columns;
    let range = range_array(k)?;
    let name = |i: usize| params[i].name.to_string();
    // The work graph runs only the prologue's bindings the range bounds and
    // the gathered index need (`shape_lets`), over the shape arrays: those
    // read nothing else. The other bindings (a cell's own state) run at
    // each launch, with its arrays.
    let shape = shape_lets(k, &gather.index);
    let (mut shape_reads, mut prologue_loads) = (None, Vec::new());
    for (id, e) in &k.prologue {
        e.visit(&mut |x| match &x.kind {
            ExprKind::Load(a, _) => {
                prologue_loads.push(*a);
                if shape.contains(id) && *a != range {
                    shape_reads.get_or_insert(*a);
                }
            }
            ExprKind::Scalar(p) if shape.contains(id) && Some(*p) != count => {
                shape_reads.get_or_insert(*p);
            }
            _ => {}
        });
    }
    let mut later_loads = Vec::new();
    let mut later = |e: &Expr| {
        e.visit(&mut |x| {
            if let ExprKind::Load(a, i) = &x.kind {
                later_loads.push((*a, matches!(i.kind, ExprKind::Local(id) if id == k.k)));
            }
        })
    };
    later(&k.init);
    later(&k.map);
    if let Reduce::Closure { body, .. } = &k.reduce {
        later(body);
    }
    for s in &k.epilogue {
        s.visit_exprs(&mut |e| {
            if let ExprKind::Load(a, i) = &e.kind {
                later_loads.push((*a, matches!(i.kind, ExprKind::Local(id) if id == k.k)));
            }
        });
    }
    if let Some(a) = shape_reads {
        return Err(format!(
            "its range or gathered index depends on `{}`, read in the prologue; they may read only the range array `{}` and the arrays read at the fine-task index, so that the plan can be made before any launch",
            name(a),
            name(range)
        ));
    }
    if later_loads.iter().any(|&(a, _)| a == range) {
        return Err(format!(
            "it reads its range array `{}` outside the range; under throttling each partition has its own copy",
            name(range)
        ));
    }
    // The range's bounds differ per partition: nothing after the prologue
    // may use a prologue binding that reads the range array.
    let reads_range =
        |e: &Expr| e.any(&mut |x| matches!(x.kind, ExprKind::Load(a, _) if a == range));
    if let Some(&id) = k
        .ctx
        .iter()
        .find(|&&id| bound(k, id).is_some_and(|e| reads_range(resolve(k, e)) || reads_range(e)))
    {
        return Err(format!(
            "it uses `{}` after the prologue; under throttling the range's bounds are each partition's, not the task's",
            k.locals[id].name
        ));
    }
    let fine: Vec<usize> = access.direct.iter().copied().collect();
    if let Some(&a) = prologue_loads.iter().find(|a| fine.contains(a)) {
        return Err(format!(
            "its prologue reads `{}`, which the map reads at the fine-task index; throttling reorders those arrays, which must be read at it only",
            name(a)
        ));
    }
    if let Some(&(a, _)) = later_loads
        .iter()
        .find(|&&(a, at_k)| fine.contains(&a) && !at_k)
    {
        return Err(format!(
            "it reads `{}` at the fine-task index and elsewhere; throttling reorders the arrays read at the fine-task index, which must be read at it only",
            name(a)
        ));
    }
    // `k` only as the index of those loads.
    let (mut uses, mut as_index) = (0usize, 0usize);
    k.map.visit(&mut |x| match &x.kind {
        ExprKind::Local(id) if *id == k.k => uses += 1,
        ExprKind::Load(_, i) if matches!(i.kind, ExprKind::Local(id) if id == k.k) => as_index += 1,
        _ => {}
    });
    if uses != as_index {
        return Err(
            "its map uses the fine-task index other than to index arrays; throttling reorders the fine tasks within each task".into(),
        );
    }
    let mut index_reads_other = None;
    gather.index.visit(&mut |x| {
        if let ExprKind::Load(a, _) = &x.kind {
            if !fine.contains(a) {
                index_reads_other = Some(*a);
            }
        }
        if let ExprKind::Scalar(s) = &x.kind {
            if Some(*s) != count {
                index_reads_other = Some(*s);
            }
        }
    });
    if let Some(a) = index_reads_other {
        return Err(format!(
            "the gathered index reads `{}`; a throttled kernel's gathered index reads only arrays at the fine-task index, so that the plan can be made before any launch",
            name(a)
        ));
    }
    let (remap, through) = remap_and_index(k, gather, range, &fine)?;
    Ok(Roles {
        range,
        fine,
        gathered: gather.gathered.clone(),
        through,
        remap,
    })
}

/// How a remapped plan applies (or why not), and the `u32` fine array the
/// gathered arrays are read through. A 2-D kernel gathers whole rows at
/// `c[e] as usize * k as usize + j` and is never remapped; its plan needs
/// that index array.
fn remap_and_index(
    k: &Kernel,
    gather: &Throttle,
    range: usize,
    fine: &[usize],
) -> Result<(Result<Remap, String>, Option<usize>), String> {
    let params = &k.params;
    let (remap, through) = match k.columns {
        None => (
            remap(k, gather, range, fine),
            gather_index(&gather.index, k.k, params),
        ),
        Some(c) => {
            let Some(through) = row_gather(k, &gather.index, c) else {
                return Err(format!(
                    "a throttled 2-D kernel gathers whole rows of {}: its gathered index must be `col[e] as usize * {n} as usize + j`, with `col` a `u32` array read at the fine-task index and `j` the column index, so that a cache-fit partition holds rows of `{n}` elements",
                    gather.names(params),
                    n = params[c].name
                ));
            };
            (
                Err("it is a 2-D kernel, whose gathered rows are not renumbered".into()),
                Some(through),
            )
        }
    };
    let through = through.filter(|&c| params[c].ty == Ty::U32 && fine.contains(&c));
    if k.columns.is_some() && through.is_none() {
        return Err(format!(
            "a throttled 2-D kernel reads {} through a `u32` array read at the fine-task index only, which the plan made on the device groups each row's fine tasks by",
            gather.names(params)
        ));
    }
    Ok((remap, through))
}

/// The range array `a` of a range `a[task] as usize .. a[task + 1] as
/// usize` over unsigned integers, or why the range is not that form. A
/// 2-D kernel's range is over its row, `task / k` of the flattened task
/// (`columns.rs`): the plan is made over rows.
fn range_array(k: &Kernel) -> Result<usize, String> {
    let count = k.columns;
    let is_task = |e: &Expr| match &resolve(k, e).kind {
        ExprKind::Local(id) => *id == k.task && count.is_none(),
        ExprKind::Binary(crate::ir::BinOp::Div, t, n) => {
            count.is_some_and(|c| is_scalar(k, n, c)) && is_flat_task(k, t)
        }
        _ => false,
    };
    let is_one = |e: &Expr| matches!(e.kind, ExprKind::Lit(crate::ir::Lit::Int(1)));
    let csr = match count {
        None => "its range must be the CSR form `a[task] as usize .. a[task + 1] as usize` over one input array `a` of unsigned integers, which throttling replaces by one range array per partition",
        Some(_) => "its range must be the CSR form `a[row] as usize .. a[row + 1] as usize` over one input array `a` of unsigned integers, which throttling replaces by one range array per partition",
    };
    let range = match (&resolve(k, &k.lo).kind, &resolve(k, &k.hi).kind) {
        (ExprKind::Load(a, lo_i), ExprKind::Load(b, hi_i))
            if a == b
                && is_task(lo_i)
                && matches!(&resolve(k, hi_i).kind, ExprKind::Binary(crate::ir::BinOp::Add, x, y)
                    if (is_task(x) && is_one(y)) || (is_one(x) && is_task(y))) =>
        {
            *a
        }
        _ => return Err(csr.into()),
    };
    if !matches!(k.params[range].ty, Ty::U32 | Ty::U64) {
        return Err(csr.into());
    }
    Ok(range)
}

/// The prologue bindings a work graph needs: those the range bounds and the
/// gathered index use, and those they use in turn (a binding uses only
/// earlier ones, so one backward pass closes the set). The graph runs these
/// alone; the others may read the launch's arrays.
pub fn shape_lets(k: &Kernel, index: &Expr) -> BTreeSet<LocalId> {
    let mut need = BTreeSet::new();
    let add = |e: &Expr, need: &mut BTreeSet<LocalId>| {
        e.visit(&mut |x| {
            if let ExprKind::Local(id) = x.kind {
                need.insert(id);
            }
        })
    };
    add(&k.lo, &mut need);
    add(&k.hi, &mut need);
    add(index, &mut need);
    for (id, e) in k.prologue.iter().rev() {
        if need.contains(id) {
            add(e, &mut need);
        }
    }
    need
}

/// Whether a remapped plan can run the kernel: its gathered array is read
/// only through one `u32` index array at the fine-task index (so renaming
/// the gathered elements is renaming that array's values), and every other
/// per-launch array only at the task index (so renaming tasks is permuting
/// those arrays).
fn remap(k: &Kernel, gather: &Throttle, range: usize, fine: &[usize]) -> Result<Remap, String> {
    let params = &k.params;
    let name = |i: usize| params[i].name.to_string();
    let gs = &gather.gathered;
    let g = gather.first();
    let index = match gather_index(&gather.index, k.k, params) {
        Some(c) if params[c].ty == Ty::U32 && fine.contains(&c) => c,
        _ => {
            return Err(format!(
                "it gathers {} at an index other than a `u32` index array read at the fine-task index (`{}[col[k] as usize]`)",
                gather.names(params),
                name(g)
            ))
        }
    };
    let is_task = |e: &Expr| matches!(resolve(k, e).kind, ExprKind::Local(id) if id == k.task);
    let is_constant =
        |e: &Expr| matches!(resolve(k, e).kind, ExprKind::Lit(crate::ir::Lit::Int(_)));
    let mut why = None;
    // Inputs read at a constant index (`dangling[0]`): the same element
    // in any numbering, so a remapped launch passes them as they are.
    let mut at_constant = BTreeSet::new();
    let mut at_task = BTreeSet::new();
    let mut gathered_at_task = false;
    let mut check = |e: &Expr| {
        e.visit(&mut |x| {
            let ExprKind::Load(a, i) = &x.kind else {
                return;
            };
            if why.is_some() || *a == range || fine.contains(a) {
                return;
            }
            let gathered = gs.contains(a);
            if gathered && is_task(i) {
                gathered_at_task = true;
            } else if gathered && !i.same_as(&gather.index) {
                why = Some(format!(
                    "it reads `{}` other than through `{}` or at the task index; a remapped plan renames its elements",
                    name(*a),
                    name(index)
                ));
            } else if !gathered && is_constant(i) {
                at_constant.insert(*a);
            } else if !gathered && !is_task(i) {
                why = Some(format!(
                    "it reads `{}` at an index other than the task's or a constant; a remapped plan renames tasks",
                    name(*a)
                ));
            } else if !gathered {
                at_task.insert(*a);
            }
        })
    };
    k.visit_parts(&mut check);
    if let Some(why) = why {
        return Err(why);
    }
    // The index array's values are gathered element ids, which a remapped
    // plan renames: read anywhere but inside the gather's index (an argmin
    // that returns `col[k]`), they would reach the result renamed.
    let (mut index_reads, mut gather_reads) = (0usize, 0usize);
    k.visit_parts(&mut |e| {
        e.visit(&mut |x| match &x.kind {
            ExprKind::Load(a, _) if *a == index => index_reads += 1,
            ExprKind::Load(a, i) if gs.contains(a) && i.same_as(&gather.index) => {
                i.visit(&mut |y| {
                    if matches!(y.kind, ExprKind::Load(b, _) if b == index) {
                        gather_reads += 1;
                    }
                })
            }
            _ => {}
        })
    });
    if index_reads > gather_reads {
        return Err(format!(
            "it uses the values of `{}` other than to gather {}; a remapped plan renames them",
            name(index),
            gather.names(params)
        ));
    }
    if let Some(&a) = at_constant
        .iter()
        .find(|&&a| at_task.contains(&a) || params[a].kind != ParamKind::Input)
    {
        return Err(format!(
            "it reads `{}` at a constant index and also at the task's or writes it; a remapped plan renames tasks",
            name(a)
        ));
    }
    let task_indexed: Vec<usize> = (0..params.len())
        .filter(|&i| {
            !gs.contains(&i)
                && i != range
                && !fine.contains(&i)
                && !at_constant.contains(&i)
                && params[i].kind != ParamKind::Scalar
        })
        .collect();
    let overwritten = task_indexed
        .iter()
        .copied()
        .filter(|&i| params[i].kind == ParamKind::Output && overwrites(k, i))
        .collect();
    Ok(Remap {
        index,
        task_indexed,
        overwritten,
        gathered_at_task,
    })
}

/// Whether every task stores output `param` (a store at the epilogue's top
/// level, not under a condition) and nothing reads it, so that its old
/// values are never seen.
fn overwrites(k: &Kernel, param: usize) -> bool {
    let stored = k
        .epilogue
        .iter()
        .any(|s| matches!(s, Stmt::Store { param: p, .. } if *p == param));
    let mut read = false;
    k.visit_parts(&mut |e| {
        read |= e.any(&mut |x| matches!(x.kind, ExprKind::LoadOut(p) if p == param));
    });
    stored && !read
}

/// Whether `e` is scalar parameter `c`, through casts and copies.
fn is_scalar(k: &Kernel, e: &Expr, c: usize) -> bool {
    matches!(resolve(k, e).kind, ExprKind::Scalar(p) if p == c)
}

/// Whether `e` is the (flattened) task index, through casts and copies.
fn is_flat_task(k: &Kernel, e: &Expr) -> bool {
    matches!(resolve(k, e).kind, ExprKind::Local(id) if id == k.task)
}

/// The index array `c` when a 2-D kernel's gathered index `idx` is
/// `c[e] as usize * n as usize + j` (either operand order), `n` the column
/// count (parameter `count`) and `j` the column index (`task % n` of the
/// flattened task): the gather of a whole row of `n` elements.
fn row_gather(k: &Kernel, idx: &Expr, count: usize) -> Option<usize> {
    use crate::ir::BinOp;
    let is_column = |e: &Expr| {
        matches!(&resolve(k, e).kind, ExprKind::Binary(BinOp::Rem, t, n)
            if is_flat_task(k, t) && is_scalar(k, n, count))
    };
    let ExprKind::Binary(BinOp::Add, a, b) = &idx.kind else {
        return None;
    };
    let row = match (is_column(a), is_column(b)) {
        (false, true) => a,
        (true, false) => b,
        _ => return None,
    };
    let ExprKind::Binary(BinOp::Mul, x, y) = &row.kind else {
        return None;
    };
    let at = match (is_scalar(k, x, count), is_scalar(k, y, count)) {
        (false, true) => x,
        (true, false) => y,
        _ => return None,
    };
    gather_index(at, k.k, &k.params)
}

/// The prologue's binding of local `id`.
fn bound(k: &Kernel, id: LocalId) -> Option<&Expr> {
    k.prologue.iter().find(|(l, _)| *l == id).map(|(_, e)| e)
}

/// `e` through the prologue's copies and casts.
fn resolve<'a>(k: &'a Kernel, mut e: &'a Expr) -> &'a Expr {
    loop {
        match &e.kind {
            ExprKind::Cast(inner) => e = inner,
            ExprKind::Local(id) => match bound(k, *id) {
                Some(b) => e = b,
                None => return e,
            },
            _ => return e,
        }
    }
}
