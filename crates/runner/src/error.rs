//! Errors of the runner.

use std::fmt;

use crate::failure::Failure;
use crate::report::RunReport;

/// Result with the runner's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can stop a run.
///
/// `Display`, `std::error::Error` and the `From` conversions are written out rather than
/// derived with `thiserror`: the source of [`Error::Failed`] is the first failure's own error,
/// inside a `Vec`, which no field attribute can name.
#[non_exhaustive]
#[derive(Debug)]
pub enum Error {
    /// A GPU-side problem before the run started (no adapter, bad WGSL, ...).
    Compute(wgpipe_compute::Error),
    /// A storage problem before the run started (output exists, unwritable path, ...).
    Storage(wgpipe_storage::Error),
    /// The run does not fit the host's memory, or a count overflows (device and sink limits
    /// come as [`Error::Compute`] and [`Error::Storage`]); nothing was allocated or created.
    TooLarge {
        /// The setting to change, as a config key (`io.io_buffer`, `io.staging_buffers`,
        /// `grid` or `run.frames`); the builder call of the same name changes it.
        key: &'static str,
        /// The grid, the bytes needed, the memory available and what to change.
        message: String,
    },
    /// A run configuration is wrong (a key, its line, what to do) or its devices cannot be
    /// opened ([`crate::config::Config::launch`]).
    Config(crate::config_error::ConfigError),
    /// An existing output cannot be resumed: it holds other fields than the config writes,
    /// or what is complete in it cannot be told. Nothing was changed.
    Resume {
        /// The output.
        path: std::path::PathBuf,
        /// Why, and what to do.
        message: String,
    },
    /// The pipeline was built with something missing or inconsistent.
    Invalid(String),
    /// MPI cannot run a pipeline's ranks (`ranks::initialize`, feature `mpi`): why,
    /// and what to do.
    Mpi(String),
    /// Threads failed during the run; every frame written before is in the output. The
    /// error's `source` is the first failure's own error (the sink's or the device's, see
    /// [`Failure::storage_error`]), so that a program can match or downcast it.
    Failed {
        /// What failed, per thread.
        failures: Vec<Failure>,
        /// What the run did until then.
        report: Box<RunReport>,
    },
    /// The run was stopped (Ctrl-C or [`crate::StopHandle::stop`]); the frames already
    /// produced were written and the output was finished.
    Interrupted {
        /// What the run did until then.
        report: Box<RunReport>,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Compute(e) => e.fmt(f),
            Error::Storage(e) => e.fmt(f),
            Error::Config(e) => e.fmt(f),
            Error::TooLarge { message, .. } => f.write_str(message),
            Error::Resume { path, message } => write!(f, "cannot resume {}: {message}", path.display()),
            Error::Invalid(message) => write!(f, "invalid pipeline: {message}"),
            Error::Mpi(message) => write!(f, "MPI: {message}"),
            Error::Failed { failures, report } => {
                write!(f, "run failed after writing {} frames: ", report.written_frames())?;
                write_joined(f, failures)
            }
            Error::Interrupted { report } => {
                write!(f, "run interrupted: {} frames written and the output closed cleanly", report.written_frames())
            }
        }
    }
}

/// The failures, separated by `; `.
fn write_joined(f: &mut fmt::Formatter<'_>, failures: &[Failure]) -> fmt::Result {
    for (i, failure) in failures.iter().enumerate() {
        if i > 0 {
            f.write_str("; ")?;
        }
        write!(f, "{failure}")?;
    }
    Ok(())
}

impl std::error::Error for Error {
    /// The wrapped errors are transparent (their own source, as their text is this error's);
    /// a failed run's source is the first failure that carries the sink's or device's error.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Compute(e) => e.source(),
            Error::Storage(e) => e.source(),
            Error::Config(e) => e.source(),
            Error::Failed { failures, .. } => failures.iter().find_map(|f| f.kind.error()),
            Error::TooLarge { .. }
            | Error::Resume { .. }
            | Error::Invalid(_)
            | Error::Mpi(_)
            | Error::Interrupted { .. } => None,
        }
    }
}

impl From<wgpipe_compute::Error> for Error {
    fn from(e: wgpipe_compute::Error) -> Self {
        Error::Compute(e)
    }
}

impl From<wgpipe_storage::Error> for Error {
    fn from(e: wgpipe_storage::Error) -> Self {
        Error::Storage(e)
    }
}

impl From<crate::config_error::ConfigError> for Error {
    fn from(e: crate::config_error::ConfigError) -> Self {
        Error::Config(e)
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;
    use std::sync::Arc;

    use super::*;
    use crate::failure::FailureKind;

    fn failure(thread: &str, message: &str, kind: FailureKind) -> Failure {
        Failure { thread: thread.into(), message: message.into(), kind }
    }

    #[test]
    fn a_failed_run_reads_as_before_and_its_source_is_the_first_typed_error() {
        let limit = wgpipe_storage::Error::FileSizeLimit { path: "o.h5".into(), needed: 2, limit: 1 };
        let failures = vec![
            failure("device 0", "panicked: boom", FailureKind::Other),
            failure("writer", "full", FailureKind::of_storage(Arc::new(limit))),
        ];
        let error = Error::Failed { failures, report: Box::default() };
        assert_eq!(error.to_string(), "run failed after writing 0 frames: device 0: panicked: boom; writer: full");
        let source = error.source().and_then(|s| s.downcast_ref::<wgpipe_storage::Error>());
        assert!(matches!(source, Some(wgpipe_storage::Error::FileSizeLimit { limit: 1, .. })), "{source:?}");
        let untyped =
            Error::Failed { failures: vec![failure("writer", "x", FailureKind::Other)], report: Box::default() };
        assert!(untyped.source().is_none());
    }

    #[test]
    fn wrapped_errors_stay_transparent() {
        let io = std::io::Error::other("denied");
        let error = Error::from(wgpipe_storage::Error::Io { action: "cannot create", path: "o".into(), source: io });
        assert_eq!(error.to_string(), "cannot create o: denied");
        assert_eq!(error.source().map(ToString::to_string).as_deref(), Some("denied"));
    }
}
