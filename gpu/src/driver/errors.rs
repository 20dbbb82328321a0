//! Driver errors as warpfit's [`Error`], each naming what was being done.

use warpfit_runtime::Error;

/// Maps a driver error to warpfit's error with context.
#[doc(hidden)]
pub fn cuda_err(context: impl Into<String>) -> impl FnOnce(cudarc::driver::DriverError) -> Error {
    let context = context.into();
    move |e| Error::Cuda {
        context,
        message: e.to_string(),
    }
}

/// The error for a per-device cache whose lock a panicking thread held.
pub(crate) fn poisoned<T>(_: std::sync::PoisonError<T>) -> Error {
    Error::Cuda {
        context: "the module cache".into(),
        message: "a thread panicked while holding its lock".into(),
    }
}
