//! The kernel's access facts, computed once from the typed IR and read by
//! both emitters and by `work_graph`: which arrays the map reads at the
//! fine-task index, which it gathers through an index array, and whether the
//! kernel can be throttled (or why not).

use crate::ir::{Expr, ExprKind, Kernel, LocalId, Param, Ty};
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

/// The one gather of a throttleable kernel.
pub struct Throttle {
    /// The array the map reads through an index array.
    pub gathered: usize,
    /// The index it reads it at (the `usize` inside `gathered[..]`), in the
    /// map's scope.
    pub index: Expr,
}

/// Why a kernel has no work graph.
pub enum NotThrottled {
    /// The map reads no array through an index array.
    NoGather,
    /// The map gathers from several arrays (sorted parameter indices).
    SeveralArrays(Vec<usize>),
    /// The map reads its one gathered array at several different indices.
    SeveralIndices(usize),
}

impl NotThrottled {
    /// The reason, as the launch API's error states it.
    pub fn reason(&self, params: &[Param]) -> String {
        match self {
            NotThrottled::NoGather => {
                "its map reads no array through an index array (like `x[col[k] as usize]`)".into()
            }
            NotThrottled::SeveralArrays(arrays) => {
                let names: Vec<_> = arrays
                    .iter()
                    .map(|&i| format!("`{}`", params[i].name))
                    .collect();
                format!("its map gathers from several arrays ({})", names.join(", "))
            }
            NotThrottled::SeveralIndices(array) => format!(
                "its map reads `{}` through several different index expressions",
                params[*array].name
            ),
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
    k.map.visit(&mut |x| {
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
    Access {
        direct,
        prechecked_gathers,
        throttle: throttle(&through_index),
    }
}

/// A work graph needs exactly one gathered array, read at one index.
fn throttle(gathers: &[(usize, &Expr)]) -> Result<Throttle, NotThrottled> {
    let arrays: BTreeSet<usize> = gathers.iter().map(|&(a, _)| a).collect();
    let (&(gathered, index), rest) = gathers.split_first().ok_or(NotThrottled::NoGather)?;
    if arrays.len() > 1 {
        return Err(NotThrottled::SeveralArrays(arrays.into_iter().collect()));
    }
    if !rest.iter().all(|(_, other)| other.same_as(index)) {
        return Err(NotThrottled::SeveralIndices(gathered));
    }
    Ok(Throttle {
        gathered,
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
