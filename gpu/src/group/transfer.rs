//! One copy between two members of a group, as the exchange above
//! describes it and the group checks it.

use warpfit_runtime::{Error, Result};

/// One copy between two members of a group: `len` elements of member
/// `from`'s source at `src_offset` into member `to`'s destination at
/// `dst_offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transfer {
    /// The sending member.
    pub from: usize,
    /// The receiving member (not `from`).
    pub to: usize,
    /// First element read.
    pub src_offset: usize,
    /// First element written.
    pub dst_offset: usize,
    /// Elements.
    pub len: usize,
}

impl Transfer {
    pub(super) fn check(&self, members: usize, src_len: usize, dst_len: usize) -> Result<()> {
        if self.from >= members || self.to >= members || self.from == self.to {
            return Err(Error::invalid(format!(
                "a transfer from member {} to member {} in a group of {members}",
                self.from, self.to
            )));
        }
        let fits = |off: usize, len: usize| off.checked_add(self.len).is_some_and(|e| e <= len);
        if !fits(self.src_offset, src_len) || !fits(self.dst_offset, dst_len) {
            return Err(Error::invalid(format!(
                "a transfer of {} elements from {} (of {src_len}) to {} (of {dst_len}) runs past an array",
                self.len, self.src_offset, self.dst_offset
            )));
        }
        Ok(())
    }
}
