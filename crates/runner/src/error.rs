//! Errors of the runner.

use crate::report::RunReport;

/// Result with the runner's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// One thing that went wrong in one thread of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The thread: `device <label>` or `writer`.
    pub thread: String,
    /// What happened.
    pub message: String,
    /// What kind of failure it was, for a program that reacts to some (a full disk).
    pub kind: FailureKind,
}

/// What kind of thing failed, so that a caller can tell a full disk from a bug without
/// reading the message.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureKind {
    /// The disk (or the user's quota) had no room for the output at `path`: every frame
    /// written before is kept ([`wgpipe_storage::Error::disk_full_path`]).
    DiskFull {
        /// The output file that did not fit.
        path: std::path::PathBuf,
    },
    /// The sink failed otherwise (a write, closing the output, a user's sink).
    Storage,
    /// A device, its kernel, a thread or an MPI rank failed.
    Other,
}

impl FailureKind {
    /// The kind of a sink's error.
    pub fn of_storage(error: &wgpipe_storage::Error) -> Self {
        match error.disk_full_path() {
            Some(path) => FailureKind::DiskFull { path: path.to_owned() },
            None => FailureKind::Storage,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.thread, self.message)
    }
}

/// Everything that can stop a run.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A GPU-side problem before the run started (no adapter, bad WGSL, ...).
    #[error(transparent)]
    Compute(#[from] wgpipe_compute::Error),
    /// A storage problem before the run started (output exists, unwritable path, ...).
    #[error(transparent)]
    Storage(#[from] wgpipe_storage::Error),
    /// The run does not fit the host's memory, or a count overflows (device and sink limits
    /// come as [`Error::Compute`] and [`Error::Storage`]); nothing was allocated or created.
    #[error("{message}")]
    TooLarge {
        /// The setting to change, as a config key (`io.io_buffer`, `io.staging_buffers`,
        /// `grid` or `run.frames`); the builder call of the same name changes it.
        key: &'static str,
        /// The grid, the bytes needed, the memory available and what to change.
        message: String,
    },
    /// A run configuration is wrong (a key, its line, what to do) or its devices cannot be
    /// opened ([`crate::config::Config::launch`]).
    #[error(transparent)]
    Config(#[from] crate::config_error::ConfigError),
    /// An existing output cannot be resumed: it holds other fields than the config writes,
    /// or what is complete in it cannot be told. Nothing was changed.
    #[error("cannot resume {}: {message}", path.display())]
    Resume {
        /// The output.
        path: std::path::PathBuf,
        /// Why, and what to do.
        message: String,
    },
    /// The pipeline was built with something missing or inconsistent.
    #[error("invalid pipeline: {0}")]
    Invalid(String),
    /// Threads failed during the run; every frame written before is in the output.
    #[error("run failed after writing {} frames: {}", report.written_frames(), failures.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Failed {
        /// What failed, per thread.
        failures: Vec<Failure>,
        /// What the run did until then.
        report: Box<RunReport>,
    },
    /// The run was stopped (Ctrl-C or [`crate::StopHandle::stop`]); the frames already
    /// produced were written and the output was finished.
    #[error("run interrupted: {} frames written and the output closed cleanly", report.written_frames())]
    Interrupted {
        /// What the run did until then.
        report: Box<RunReport>,
    },
}
