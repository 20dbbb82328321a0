//! A write to disk in progress on a thread of its own, which its owner
//! waits for when dropped: the throttled handle's kept level order
//! (`order_cache`), written while the launches go on, is on disk once the
//! handle is gone.

/// What a write thread returns: why the write failed, where it did.
pub(in crate::throttle) type WriteOutcome = std::result::Result<(), String>;

/// A write in progress (or none); dropping it waits for the write.
#[derive(Default)]
pub(in crate::throttle) struct PendingWrite(Option<std::thread::JoinHandle<WriteOutcome>>);

impl PendingWrite {
    /// The write `writing` does, waited for when this is dropped.
    pub(in crate::throttle) fn of(writing: std::thread::JoinHandle<WriteOutcome>) -> Self {
        PendingWrite(Some(writing))
    }

    /// Waits for the write in progress, if any: why it failed, where it
    /// did. A second wait finds nothing in progress.
    pub(in crate::throttle) fn wait(&mut self) -> WriteOutcome {
        match self.0.take() {
            Some(writing) => writing
                .join()
                .unwrap_or_else(|_| Err("the writing thread panicked".into())),
            None => Ok(()),
        }
    }
}

impl Drop for PendingWrite {
    fn drop(&mut self) {
        // A failed write leaves no file: the next run makes the order
        // again. Its reason is the owner's to ask for before the drop
        // (`Throttled::wait_for_plan_cache`).
        let _ = self.wait();
    }
}
