//! Sink options and choosing a sink by name (what a config file or command line gives).

use std::fmt;
use std::fs;
use std::path::PathBuf;
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::null::NullSink;
use crate::output::{self, OutputKind};
use crate::raw::RawSink;
use crate::sink::Sink;

/// Names accepted by [`open_sink`], in the order they are listed to users.
pub const SINK_NAMES: &[&str] = &["null", "raw", "hdf5"];

/// Compression of stored frames (HDF5 only; the raw sink stores bytes as they are, so that
/// `numpy.fromfile` can read them).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// Store frames uncompressed: fastest, and what streaming at GPU rates usually needs.
    #[default]
    None,
    /// zlib deflate at this level (1 fastest … 9 smallest), after HDF5's byte shuffle,
    /// which makes float data compress much better. Readable by every HDF5 tool.
    Deflate(u8),
    /// Blosc with LZ4 at this level (1 … 9), after blosc's byte shuffle: fast enough for
    /// streaming, a smaller gain than deflate. Needs cargo feature `blosc`, and other tools
    /// need the blosc filter plugin (HDF5 filter 32001, e.g. `hdf5plugin` for h5py).
    BloscLz4(u8),
    /// Blosc with Zstd at this level (1 … 9), after blosc's byte shuffle: smaller than
    /// LZ4, slower. Needs cargo feature `blosc` and, elsewhere, the blosc filter plugin.
    BloscZstd(u8),
}

/// The valid compression values, as listed in error messages.
const COMPRESSION_VALUES: &str =
    "none, deflate, deflate:LEVEL, blosc-lz4, blosc-lz4:LEVEL, blosc-zstd or blosc-zstd:LEVEL (LEVEL 1-9)";

impl Compression {
    /// Level used by `blosc-lz4` without `:LEVEL`.
    pub const DEFAULT_BLOSC_LZ4_LEVEL: u8 = 5;
    /// Level used by `blosc-zstd` without `:LEVEL`.
    pub const DEFAULT_BLOSC_ZSTD_LEVEL: u8 = 3;

    /// Whether this compression uses the blosc HDF5 filter (cargo feature `blosc`).
    pub fn is_blosc(&self) -> bool {
        matches!(self, Compression::BloscLz4(_) | Compression::BloscZstd(_))
    }

    /// Errors if this build cannot write this compression (blosc without feature `blosc`),
    /// so that a config can refuse the value itself before anything starts.
    pub fn check_available(&self) -> Result<()> {
        if self.is_blosc() && !cfg!(feature = "blosc") {
            return Err(Error::InvalidOptions(format!(
                "compression {self} needs the blosc filter, but wgpipe-storage was built without the \
                 `blosc` feature: rebuild with `--features blosc`, or use none or deflate"
            )));
        }
        Ok(())
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Compression::None => f.write_str("none"),
            Compression::Deflate(level) => write!(f, "deflate:{level}"),
            Compression::BloscLz4(level) => write!(f, "blosc-lz4:{level}"),
            Compression::BloscZstd(level) => write!(f, "blosc-zstd:{level}"),
        }
    }
}

/// Parses `none`, `deflate` (level 4), `deflate:LEVEL`, `blosc-lz4` (level 5),
/// `blosc-lz4:LEVEL`, `blosc-zstd` (level 3) or `blosc-zstd:LEVEL`, as written in config files.
/// Blosc values parse in every build; a build without feature `blosc` refuses them when the
/// HDF5 sink is opened.
impl FromStr for Compression {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let bad = || Error::InvalidOptions(format!("compression {s:?} is unknown: use {COMPRESSION_VALUES}"));
        let (name, level) = match s.split_once(':') {
            None => (s, None),
            Some((name, level)) => match level.parse::<u8>() {
                Ok(l @ 1..=9) => (name, Some(l)),
                _ => return Err(bad()),
            },
        };
        match (name, level) {
            ("none", None) => Ok(Compression::None),
            ("deflate", l) => Ok(Compression::Deflate(l.unwrap_or(4))),
            ("blosc-lz4", l) => Ok(Compression::BloscLz4(l.unwrap_or(Self::DEFAULT_BLOSC_LZ4_LEVEL))),
            ("blosc-zstd", l) => Ok(Compression::BloscZstd(l.unwrap_or(Self::DEFAULT_BLOSC_ZSTD_LEVEL))),
            _ => Err(bad()),
        }
    }
}

/// Where and how a sink stores frames; one struct for every sink so a config can switch
/// sinks by name alone. Options a sink has no use for are ignored by it.
#[derive(Debug, Clone, PartialEq)]
pub struct SinkOptions {
    /// Output: a directory for `raw`, a file for `hdf5`, unused by `null`.
    pub path: PathBuf,
    /// Replace an existing output instead of refusing to start.
    pub overwrite: bool,
    /// Compression (HDF5 only; blosc needs cargo feature `blosc`).
    pub compression: Compression,
    /// Frames per HDF5 chunk. 1 (the default) lets each frame go to disk as one whole
    /// chunk, the fastest and most crash-proof; larger values help compression.
    pub chunk_frames: usize,
    /// Force the data to stable storage (fsync) in `finish`, so a finished run survives a
    /// power cut; costs the time the disk needs to absorb the page cache.
    pub fsync: bool,
    /// Add streams to an existing output instead of refusing it (what `--resume` uses):
    /// the output's fields, shape and dtype must match the layout; a stream of the layout
    /// that exists incomplete is deleted and rewritten, one that exists complete is an error
    /// (`Error::StreamComplete`), and streams the layout does not name are left untouched.
    /// Without an existing output this creates one as usual. Ignored by `null`.
    pub append: bool,
}

impl Default for SinkOptions {
    fn default() -> Self {
        SinkOptions {
            path: PathBuf::new(),
            overwrite: false,
            compression: Compression::None,
            chunk_frames: 1,
            fsync: false,
            append: false,
        }
    }
}

impl SinkOptions {
    /// Default options writing to `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        SinkOptions { path: path.into(), ..SinkOptions::default() }
    }

    /// Sets [`SinkOptions::overwrite`].
    pub fn with_overwrite(mut self, overwrite: bool) -> Self {
        self.overwrite = overwrite;
        self
    }

    /// Sets [`SinkOptions::compression`].
    pub fn with_compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// Sets [`SinkOptions::chunk_frames`].
    pub fn with_chunk_frames(mut self, chunk_frames: usize) -> Self {
        self.chunk_frames = chunk_frames;
        self
    }

    /// Sets [`SinkOptions::fsync`].
    pub fn with_fsync(mut self, fsync: bool) -> Self {
        self.fsync = fsync;
        self
    }

    /// Sets [`SinkOptions::append`].
    pub fn with_append(mut self, append: bool) -> Self {
        self.append = append;
        self
    }

    /// Errors on values no sink accepts.
    pub(crate) fn check(&self) -> Result<()> {
        if self.chunk_frames == 0 {
            return Err(Error::InvalidOptions("chunk_frames is 0: use 1 or more frames per chunk".into()));
        }
        let level = match self.compression {
            Compression::None => None,
            Compression::Deflate(l) => Some(("deflate", l)),
            Compression::BloscLz4(l) => Some(("blosc-lz4", l)),
            Compression::BloscZstd(l) => Some(("blosc-zstd", l)),
        };
        if let Some((name, l)) = level
            && !(1..=9).contains(&l)
        {
            return Err(Error::InvalidOptions(format!("{name} level {l} is out of range: use 1 to 9")));
        }
        Ok(())
    }
}

/// Checks, changing nothing on disk, that the sink called `kind` can write its output at
/// `options.path`: the parent directory exists, and an existing output is refused unless
/// `overwrite` may replace it (same kind) or `append` adds to it. `begin` makes the same
/// checks; call this to refuse a bad path before opening devices.
pub fn check_output(kind: &str, options: &SinkOptions) -> Result<()> {
    let kind = match kind {
        "raw" => OutputKind::RawDir,
        "hdf5" => OutputKind::File,
        _ => return Ok(()),
    };
    if options.append && fs::symlink_metadata(&options.path).is_ok() {
        return Ok(()); // `begin` checks that the existing output matches the layout
    }
    output::check(&options.path, options.overwrite, kind).map(|_| ())
}

/// Creates the sink called `kind` (one of [`SINK_NAMES`]) with `options`.
///
/// Nothing is created on disk until [`Sink::begin`]; this only checks the name and options,
/// so a bad config fails before any GPU work starts.
pub fn open_sink(kind: &str, options: &SinkOptions) -> Result<Box<dyn Sink>> {
    options.check()?;
    match kind {
        "null" => Ok(Box::new(NullSink::new())),
        "raw" => Ok(Box::new(RawSink::new(options.clone()))),
        "hdf5" => open_hdf5(options),
        other => Err(Error::UnknownSink(other.to_owned(), SINK_NAMES.join(", "))),
    }
}

#[cfg(feature = "hdf5")]
fn open_hdf5(options: &SinkOptions) -> Result<Box<dyn Sink>> {
    options.compression.check_available()?;
    Ok(Box::new(crate::hdf5::Hdf5Sink::new(options.clone())))
}

#[cfg(not(feature = "hdf5"))]
fn open_hdf5(_options: &SinkOptions) -> Result<Box<dyn Sink>> {
    Err(Error::FeatureDisabled { what: "the hdf5 sink", feature: "hdf5" })
}
