//! The one module that names backends: a sink name and options to a [`Sink`], an output
//! path to a reader. Everything else in the crate is backend-neutral or one backend's own.

use std::path::Path;

use crate::error::{Error, Result};
use crate::null::NullSink;
use crate::options::SinkOptions;
use crate::prepare::OutputKind;
use crate::raw::RawSink;
use crate::read::Output;
use crate::sink::Sink;

/// Names accepted by [`open_sink`], in the order they are listed to users.
pub const SINK_NAMES: &[&str] = &["null", "raw", "hdf5"];

/// Creates the sink called `kind` (one of [`SINK_NAMES`]) with `options`.
///
/// Nothing is created on disk until [`Sink::begin`]; this only checks the name and options,
/// so a bad config fails before any GPU work starts.
pub fn open_sink(kind: &str, options: &SinkOptions) -> Result<Box<dyn Sink>> {
    options.check()?;
    match kind {
        "null" => Ok(Box::new(NullSink::new())),
        "raw" => Ok(Box::new(RawSink::new(options.clone()))),
        "hdf5" => hdf5_sink(options),
        other => Err(Error::UnknownSink(other.to_owned(), SINK_NAMES.join(", "))),
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
    if options.append && std::fs::symlink_metadata(&options.path).is_ok() {
        return Ok(()); // `begin` checks that the existing output matches the layout
    }
    crate::prepare::check(&options.path, options.overwrite, kind).map(|_| ())
}

#[cfg(feature = "hdf5")]
fn hdf5_sink(options: &SinkOptions) -> Result<Box<dyn Sink>> {
    options.compression.check_available()?;
    Ok(Box::new(crate::hdf5::Hdf5Sink::new(options.clone())))
}

#[cfg(not(feature = "hdf5"))]
fn hdf5_sink(_options: &SinkOptions) -> Result<Box<dyn Sink>> {
    Err(Error::FeatureDisabled { what: "the hdf5 sink", feature: "hdf5" })
}

/// Opens what a sink wrote at `path`: a raw directory or an HDF5 file.
///
/// Counts the frames every stream holds completely, so an output left by a killed run opens
/// too and reports what survived.
pub fn open_output(path: impl AsRef<Path>) -> Result<Output> {
    let path = path.as_ref();
    let meta = std::fs::metadata(path).map_err(|e| Error::io("cannot open output", path, e))?;
    if meta.is_dir() {
        return crate::raw::read::open(path);
    }
    hdf5_output(path)
}

#[cfg(feature = "hdf5")]
fn hdf5_output(path: &Path) -> Result<Output> {
    crate::hdf5::read::open(path)
}

#[cfg(not(feature = "hdf5"))]
fn hdf5_output(_path: &Path) -> Result<Output> {
    Err(Error::FeatureDisabled { what: "reading a file (only HDF5 outputs are files)", feature: "hdf5" })
}
