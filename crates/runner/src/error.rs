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
