//! Errors of the storage crate.

use std::path::PathBuf;
use std::str::FromStr;

use crate::frame::DType;

/// Result with the storage crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while storing frames.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The output already exists and overwriting was not asked for.
    #[error("output {0} already exists: remove it, choose another path, or set overwrite = true")]
    OutputExists(PathBuf),
    /// The output exists but is not something this sink may replace (a directory where a file
    /// goes, or a directory holding files that are not a raw output).
    #[error("output {path} cannot be replaced: {reason}; choose another path")]
    CannotReplace {
        /// The existing output.
        path: PathBuf,
        /// Why it is left alone.
        reason: &'static str,
    },
    /// The directory the output goes into does not exist.
    #[error("directory {0} does not exist: create it first or choose another output path")]
    MissingParent(PathBuf),
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
    /// The disk (or the user's quota) has no room for the next frame. Nothing of that frame
    /// was written; every frame before it is kept, and `finish` still closes the output.
    #[error(
        "disk full: no space left on the device for {path} (the next frame and closing the file need {needed} \
         more bytes): {source}; every frame written so far is kept: free space or write to another disk"
    )]
    DiskFull {
        /// The output file.
        path: PathBuf,
        /// Bytes the next frame and `finish` needed.
        needed: u64,
        /// The operating system's error (ENOSPC, EDQUOT).
        source: std::io::Error,
    },
    /// An output laid out whole when it begins (uncompressed HDF5 with every stream's frame
    /// count known), whose length would pass the process's file size limit. Nothing was
    /// written (a new file is not left behind; a file resumed is as it was).
    #[error(
        "{why}: {path} needs {needed} more bytes for every frame of the run (uncompressed HDF5 outputs are laid \
         out whole when the run starts, so that a kill never loses a frame); nothing was written: raise the limit \
         (ulimit -f unlimited), run fewer frames, or compress them (output.compression)"
    )]
    OutputDoesNotFit {
        /// The output file.
        path: PathBuf,
        /// Bytes the output still needs, at most.
        needed: u64,
        /// What refused them ("file size limit reached (...)").
        why: String,
    },
    /// No room on the disk for the copy of an HDF5 file that an append changing its structure
    /// is made on (so that a kill cannot damage the file). The file is unchanged.
    #[error(
        "disk full: no space left on the device for a copy of {path} (up to {needed} bytes: appending to it changes its \
         structure, which is done on a copy so that a kill cannot damage it): {source}; the file is unchanged: free \
         space or write to another disk"
    )]
    NoRoomToAppend {
        /// The output file.
        path: PathBuf,
        /// The file's length (its holes are not copied: the copy may need less).
        needed: u64,
        /// The operating system's error (ENOSPC, EDQUOT).
        source: std::io::Error,
    },
    /// The next frame could take the output past the process's file size limit
    /// (`RLIMIT_FSIZE`). Nothing of that frame was written; every frame before it is kept.
    #[error(
        "file size limit reached: {path} could grow to {needed} bytes with the next frame, past this process's \
         limit of {limit} bytes (ulimit -f); every frame written so far is kept: raise the limit (ulimit -f \
         unlimited) or write fewer frames per file"
    )]
    FileSizeLimit {
        /// The output file.
        path: PathBuf,
        /// Size the file could reach with the next frame and `finish`.
        needed: u64,
        /// The soft limit, in bytes.
        limit: u64,
    },
    /// The HDF5 library reported an error for a file.
    #[error("{action} {path}: {message}")]
    Hdf5 {
        /// What was being done, e.g. "cannot write frame to".
        action: String,
        /// The HDF5 file.
        path: PathBuf,
        /// The library's message.
        message: String,
    },
    /// ADIOS2 reported an error, or its library could not be loaded.
    #[error("ADIOS2 {engine} engine, {path}: {message}")]
    Adios2 {
        /// The engine (`BP5`, `SST`).
        engine: &'static str,
        /// The BP5 directory or the SST stream's name.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// The Zarr library reported an error for a group or array of a store.
    #[error("{action} {path}: {message}")]
    Zarr {
        /// What was being done, e.g. "cannot write frame to".
        action: String,
        /// The group's or array's directory.
        path: PathBuf,
        /// The library's message.
        message: String,
    },
    /// A metadata file or an output is not in the expected format.
    #[error("cannot read {path}: {reason}; was it written by wgpipe?")]
    BadOutput {
        /// The file or directory.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
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
    /// A stream or field name that no sink can store (see [`crate::check_stream_name`]).
    #[error("{kind} name {name:?} is not allowed: {rule}")]
    InvalidName {
        /// `stream` or `field`.
        kind: &'static str,
        /// The name given.
        name: String,
        /// The rule it breaks, and what to do.
        rule: &'static str,
    },
    /// The layout itself is unusable.
    #[error("invalid stream layout: {0}")]
    InvalidLayout(String),
    /// `chunk_frames` frames of one field are too large for one HDF5 chunk.
    #[error("field {field}: {message}")]
    ChunkTooLarge {
        /// The field, with its type and shape.
        field: String,
        /// Frames per chunk.
        chunk_frames: usize,
        /// The sizes, the limit and what to change.
        message: String,
    },
    /// The sink options are unusable.
    #[error("invalid sink options: {0}")]
    InvalidOptions(String),
    /// A sink was called out of order (write before begin, ...).
    #[error("sink used out of order: {0}")]
    Usage(&'static str),
    /// No sink has this name.
    #[error("unknown sink {0:?}: choose one of {1}")]
    UnknownSink(String, String),
    /// The sink or format exists but was left out of this build.
    #[error("{what} needs cargo feature `{feature}` of wgpipe-storage: rebuild with it enabled")]
    FeatureDisabled {
        /// The sink or format asked for.
        what: &'static str,
        /// The cargo feature that provides it.
        feature: &'static str,
    },
    /// Appending to an output would replace a stream that is already complete.
    #[error(
        "stream {stream:?} is already complete in {path}: leave it out of the run (wgpipe run --resume skips it) or write to a new output"
    )]
    StreamComplete {
        /// The output.
        path: PathBuf,
        /// The stream.
        stream: String,
    },
    /// Appending to an output whose fields, shape or dtype differ from the run's.
    #[error("cannot add to {path}: {reason}; resume with the config that wrote it, or write to a new output")]
    AppendMismatch {
        /// The output.
        path: PathBuf,
        /// What differs.
        reason: String,
    },
    /// A float view was asked of a field holding integers.
    #[error("field {field:?} holds {dtype} values, not floats: read it with Output::read_field")]
    NotFloat {
        /// The field.
        field: String,
        /// Its element type.
        dtype: DType,
    },
    /// Another MPI rank failed a step every rank takes together (feature `mpi`); that rank
    /// reports its own error.
    #[error("{action}: MPI rank(s) {ranks:?} failed (their error is reported by them)")]
    OtherRank {
        /// The step, with the file.
        action: String,
        /// The ranks that failed.
        ranks: Vec<usize>,
    },
    /// MPI ranks sharing a sink were given different bytes of what must be the same on every
    /// rank (feature `mpi`): the fields whole on every rank of a frame split into blocks (the
    /// whole grid's reductions), which rank 0 alone writes.
    #[error(
        "{action}: MPI rank(s) {ranks:?} hold other values than rank 0 of the fields every rank passes whole (the \
         whole grid's reductions); they must be the same bits on every rank (combined in the same order), or \
         the ranks would keep different frames: report it as a bug"
    )]
    RanksDisagree {
        /// The step, with the file.
        action: String,
        /// The ranks whose copy differs from rank 0's.
        ranks: Vec<usize>,
    },
    /// A stream, field or frame asked of a reader does not exist.
    #[error("{0} not found in the output: list what it holds with open_output")]
    NotFound(String),
    /// A sink of the caller's own (a backend outside this crate, a Python object) failed.
    #[error("sink {sink}: {message}")]
    Sink {
        /// The sink, as its caller names it (a Python class's name).
        sink: String,
        /// What failed (a Python exception's traceback).
        message: String,
    },
}

impl Error {
    /// The output that did not fit, when the error is a full disk (or quota): a
    /// [`Error::DiskFull`], [`Error::NoRoomToAppend`], or an I/O error the operating system
    /// reported as ENOSPC or EDQUOT. What a caller that reacts to a full disk asks.
    pub fn disk_full_path(&self) -> Option<&std::path::Path> {
        match self {
            Error::DiskFull { path, .. } | Error::NoRoomToAppend { path, .. } => Some(path),
            Error::Io { path, source, .. } if is_disk_full(source) => Some(path),
            _ => None,
        }
    }

    /// An [`Error::Io`] for `path`.
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { action, path: path.into(), source }
    }
}

/// Whether the operating system said the disk (ENOSPC) or the user's quota (EDQUOT) is full.
pub(crate) fn is_disk_full(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded)
}

/// Parses any of the three spellings: `f32`, `float32` or `<f4` (likewise for every type).
///
/// Here rather than beside [`DType`] because its error is this crate's [`Error`], which names
/// `DType` itself ([`Error::NotFloat`]): `frame.rs` stays below this module.
impl FromStr for DType {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        DType::ALL.into_iter().find(|d| s == d.short_name() || s == d.name() || s == d.numpy_str()).ok_or_else(|| {
            let names: Vec<&str> = DType::ALL.iter().map(|d| d.short_name()).collect();
            Error::InvalidLayout(format!(
                "element type {s:?} is unknown: use one of {} (or numpy's spelling, e.g. float32 or <f4)",
                names.join(", ")
            ))
        })
    }
}
