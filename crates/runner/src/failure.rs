//! What went wrong in one thread of a run, keeping the sink's or the device's own error so
//! that a program can match it ([`Failure::storage_error`], [`Failure::device_error`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One thing that went wrong in one thread of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The thread: `device <label>` or `writer`.
    pub thread: String,
    /// What happened.
    pub message: String,
    /// What kind of failure it was, with the sink's or the device's error, for a program that
    /// reacts to some (a full disk, a file size limit, a lost device).
    pub kind: FailureKind,
}

impl Failure {
    /// The sink's error, when the sink failed (a full disk included): the run's failures keep
    /// it whole so that a program matches its variant rather than reading [`Failure::message`].
    pub fn storage_error(&self) -> Option<&wgpipe_storage::Error> {
        self.kind.storage_error()
    }

    /// The device's error, when a device (its kernel, its frame source, the GPU itself) failed.
    pub fn device_error(&self) -> Option<&wgpipe_compute::Error> {
        self.kind.device_error()
    }

    /// The output that did not fit, when the disk (or quota) was full.
    pub fn disk_full_path(&self) -> Option<&Path> {
        match &self.kind {
            FailureKind::DiskFull { path, .. } => Some(path),
            _ => None,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.thread, self.message)
    }
}

/// Its source is the sink's or the device's error, so that error chains (`anyhow`,
/// `downcast_ref`) reach it.
impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.kind.error()
    }
}

/// What kind of thing failed, so that a caller can tell a full disk from a bug without
/// reading the message, and match the error itself.
///
/// The errors are shared ([`Arc`]) because a [`Failure`] is cloned and they are not (they
/// hold [`std::io::Error`]s). For the same reason, two kinds compare equal when their errors
/// read the same, not by the errors' own equality (which they do not have).
#[non_exhaustive]
#[derive(Debug, Clone)]
pub enum FailureKind {
    /// The disk (or the user's quota) had no room for the output at `path`: every frame
    /// written before is kept ([`wgpipe_storage::Error::disk_full_path`]).
    DiskFull {
        /// The output file that did not fit.
        path: PathBuf,
        /// The sink's error ([`wgpipe_storage::Error::DiskFull`], or another whose
        /// `disk_full_path` is `path`).
        error: Arc<wgpipe_storage::Error>,
    },
    /// The sink failed otherwise (a write, closing the output, a user's sink, a file size
    /// limit).
    Storage(Arc<wgpipe_storage::Error>),
    /// A device failed: its kernel, its frame source, or the GPU itself (lost, out of memory).
    Device(Arc<wgpipe_compute::Error>),
    /// A thread panicked or could not start, an MPI rank failed, or a device failed before
    /// it had a device error (a job without a grid, a frame source of the wrong size).
    Other,
}

impl FailureKind {
    /// The kind of a sink's error: [`FailureKind::DiskFull`] when it is a full disk.
    pub fn of_storage(error: Arc<wgpipe_storage::Error>) -> Self {
        match error.disk_full_path() {
            Some(path) => FailureKind::DiskFull { path: path.to_owned(), error },
            None => FailureKind::Storage(error),
        }
    }

    /// The sink's error, for [`FailureKind::DiskFull`] and [`FailureKind::Storage`].
    pub fn storage_error(&self) -> Option<&wgpipe_storage::Error> {
        match self {
            FailureKind::DiskFull { error, .. } | FailureKind::Storage(error) => Some(error),
            FailureKind::Device(_) | FailureKind::Other => None,
        }
    }

    /// The device's error, for [`FailureKind::Device`].
    pub fn device_error(&self) -> Option<&wgpipe_compute::Error> {
        match self {
            FailureKind::Device(error) => Some(error),
            _ => None,
        }
    }

    /// The sink's or the device's error as a [`std::error::Error`] (`None` for
    /// [`FailureKind::Other`]): what the failure's and the run error's `source` return.
    pub fn error(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FailureKind::DiskFull { error, .. } | FailureKind::Storage(error) => Some(&**error),
            FailureKind::Device(error) => Some(&**error),
            FailureKind::Other => None,
        }
    }
}

/// Equal kinds with errors of the same text (or the very same error).
impl PartialEq for FailureKind {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (FailureKind::DiskFull { path: a, error: e }, FailureKind::DiskFull { path: b, error: f }) => {
                a == b && same_error(e, f)
            }
            (FailureKind::Storage(e), FailureKind::Storage(f)) => same_error(e, f),
            (FailureKind::Device(e), FailureKind::Device(f)) => same_error(e, f),
            (FailureKind::Other, FailureKind::Other) => true,
            _ => false,
        }
    }
}

impl Eq for FailureKind {}

/// Whether `a` and `b` are one shared error or read the same.
fn same_error<E: std::fmt::Display>(a: &Arc<E>, b: &Arc<E>) -> bool {
    Arc::ptr_eq(a, b) || a.to_string() == b.to_string()
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    fn disk_full() -> Arc<wgpipe_storage::Error> {
        Arc::new(wgpipe_storage::Error::DiskFull {
            path: "out.h5".into(),
            needed: 4096,
            source: std::io::Error::from(std::io::ErrorKind::StorageFull),
        })
    }

    #[test]
    fn a_full_disk_is_its_own_kind_and_keeps_the_sinks_error() {
        let failure = Failure {
            thread: "writer".into(),
            message: "disk full".into(),
            kind: FailureKind::of_storage(disk_full()),
        };
        assert_eq!(failure.disk_full_path(), Some(Path::new("out.h5")));
        assert!(matches!(failure.storage_error(), Some(wgpipe_storage::Error::DiskFull { needed: 4096, .. })));
        assert!(failure.device_error().is_none());
        let source = failure.source().and_then(|s| s.downcast_ref::<wgpipe_storage::Error>());
        assert!(matches!(source, Some(wgpipe_storage::Error::DiskFull { .. })));
    }

    #[test]
    fn kinds_compare_by_variant_and_by_their_errors_text() {
        let other = || Arc::new(wgpipe_storage::Error::Usage("write before begin"));
        assert_eq!(FailureKind::of_storage(disk_full()), FailureKind::of_storage(disk_full()));
        assert_eq!(FailureKind::of_storage(other()), FailureKind::Storage(other()));
        assert_ne!(FailureKind::of_storage(other()), FailureKind::of_storage(disk_full()));
        assert_ne!(FailureKind::Storage(other()), FailureKind::Other);
        let lost = Arc::new(wgpipe_compute::Error::DeviceLost { device: "0".into(), message: "reset".into() });
        assert_eq!(FailureKind::Device(Arc::clone(&lost)), FailureKind::Device(lost));
    }
}
