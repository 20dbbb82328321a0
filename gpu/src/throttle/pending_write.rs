//! A write to disk in progress on a thread of its own, which its owner
//! waits for when dropped: the throttled handle's kept level order
//! (`order_cache`), written while the launches go on, is on disk once the
//! handle is gone.

/// A write in progress (or none); dropping it waits for the write.
#[derive(Default)]
pub(in crate::throttle) struct PendingWrite(Option<std::thread::JoinHandle<()>>);

impl PendingWrite {
    /// The write `writing` does, waited for when this is dropped.
    pub(in crate::throttle) fn of(writing: std::thread::JoinHandle<()>) -> Self {
        PendingWrite(Some(writing))
    }
}

impl Drop for PendingWrite {
    fn drop(&mut self) {
        if let Some(writing) = self.0.take() {
            // The write's own failure leaves no file: the next run makes
            // the order again.
            let _ = writing.join();
        }
    }
}
