//! Launches of 2-D kernels (`#[nested_reduce(columns = k)]`): the generated
//! launch API takes a row count, and the kernel runs over the flattened
//! tasks `row·k + j` (docs/codegen.md, "2-D kernels").

use crate::config::{Decomposition, LaunchConfig};
use warpfit_runtime::{Error, Result, Tasks};

/// The flattened tasks of `rows` rows of `columns` columns: `Tasks::All(rows
/// · columns)`. A task list or a worklist names rows of another kernel's
/// numbering and is refused, as is a product that overflows.
pub fn column_tasks<'t>(kernel: &str, tasks: Tasks<'t>, columns: u64) -> Result<Tasks<'t>> {
    match tasks {
        Tasks::All(rows) => usize::try_from(columns)
            .ok()
            .and_then(|c| rows.checked_mul(c))
            .map(Tasks::All)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "`{kernel}`: {rows} rows of {columns} columns are more tasks than a launch can number"
                ))
            }),
        _ => Err(Error::invalid(format!(
            "`{kernel}` is a 2-D kernel (`columns`): it runs over a row count, not over a task list or a worklist"
        ))),
    }
}

/// The options a 2-D launch runs with: CTE, the default decomposition,
/// becomes the column mapping when a row has several columns: one
/// flattened task per thread ([`Decomposition::Thread`]), so that a warp's
/// lanes take consecutive columns of one row, read each of the row's
/// nonzeros at one address (one transaction for the warp) and gather
/// consecutive elements of `x`'s rows (coalesced). With one column the
/// kernel is a 1-D kernel and keeps CTE. Other decompositions run as asked.
pub fn column_config(config: &LaunchConfig, columns: u64) -> LaunchConfig {
    if config.decomposition == Decomposition::Cte && columns >= 2 {
        LaunchConfig {
            decomposition: Decomposition::Thread,
            ..*config
        }
    } else {
        *config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_become_flattened_tasks() {
        assert!(matches!(
            column_tasks("k", Tasks::All(3), 5),
            Ok(Tasks::All(15))
        ));
        assert!(matches!(
            column_tasks("k", Tasks::All(3), 0),
            Ok(Tasks::All(0))
        ));
        let e = column_tasks("k", Tasks::All(usize::MAX), 2).unwrap_err();
        assert!(e.to_string().contains("more tasks"), "{e}");
        let list = warpfit_runtime::exec::TaskList::from_ptr(&[0, 1, 3]).unwrap();
        let e = column_tasks("k", Tasks::List(&list), 2).unwrap_err();
        assert!(e.to_string().contains("row count"), "{e}");
    }

    #[test]
    fn cte_becomes_the_column_mapping() {
        let cte = LaunchConfig::default();
        assert_eq!(column_config(&cte, 2).decomposition, Decomposition::Thread);
        assert_eq!(column_config(&cte, 1).decomposition, Decomposition::Cte);
        let sub = LaunchConfig::new(Decomposition::SubWarp(4));
        assert_eq!(column_config(&sub, 64), sub);
    }
}
