//! Errors of the storage crate.

use std::path::PathBuf;

/// Result with the storage crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while storing frames.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The output already exists and overwriting was not asked for.
    #[error("output {0} already exists: remove it, choose another path, or set overwrite = true")]
    OutputExists(PathBuf),
    /// An I/O operation on a path failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done, e.g. "cannot create".
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A frame does not fit the layout given to `begin`.
    #[error("frame {index} of stream {stream} does not match the layout: {reason}")]
    FrameMismatch {
        /// Stream index of the frame.
        stream: usize,
        /// Frame index.
        index: u64,
        /// What differs.
        reason: String,
    },
    /// The layout itself is unusable.
    #[error("invalid stream layout: {0}")]
    InvalidLayout(String),
    /// A sink was called out of order (write before begin, ...).
    #[error("sink used out of order: {0}")]
    Usage(&'static str),
    /// No sink has this name.
    #[error("unknown sink {0:?}: choose one of {1}")]
    UnknownSink(String, String),
}
