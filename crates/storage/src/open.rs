//! The one module that names backends: a sink name and options to a [`Sink`], an output
//! path to a reader. Everything else in the crate is backend-neutral or one backend's own.
//!
//! A backend is one folder under `src/` and one line of [`BACKENDS`]; its name is then a
//! valid `output.sink` in the runner's config (which checks names against [`SINK_NAMES`]).

use std::path::Path;

use crate::error::{Error, Result};
use crate::options::SinkOptions;
use crate::prepare::OutputKind;
use crate::read::Output;
use crate::sink::Sink;

/// What this module knows of a backend.
struct Registered {
    /// The name users choose it by (`output.sink`).
    name: &'static str,
    /// Makes its sink (options already checked), wrapped in the protocol.
    open: fn(&SinkOptions) -> Result<Box<dyn Sink>>,
    /// What it writes at `SinkOptions::path`, checked by [`check_output`]; `None`: nothing.
    output: Option<OutputKind>,
    /// Whether a path holds its output, and how to read it; `None`: it stores nothing
    /// [`open_output`] reads.
    read: Option<Reads>,
}

/// How [`open_output`] reads a backend's output: whether a path holds one, and opening it.
type Reads = (fn(&Path) -> bool, fn(&Path) -> Result<Output>);

/// Every backend, in the order they are listed to users (and their outputs recognised).
const BACKENDS: [Registered; 5] = [
    Registered { name: "null", open: |_| Ok(Box::new(crate::null::NullSink::new())), output: None, read: None },
    Registered {
        name: "raw",
        open: |o| Ok(Box::new(crate::raw::RawSink::new(o.clone()))),
        output: Some(OutputKind::RawDir),
        read: Some((|p| p.join(crate::raw::meta::RUN_FILE).is_file(), crate::raw::read::open)),
    },
    Registered {
        name: "hdf5",
        open: hdf5_sink,
        output: Some(OutputKind::File),
        read: Some((|p| !p.is_dir(), hdf5_output)),
    },
    Registered {
        name: "zarr",
        open: zarr_sink,
        output: Some(OutputKind::ZarrStore),
        read: Some((zarr_holds, zarr_output)),
    },
    // A BP5 directory (an SST stream leaves nothing to read): BP5's metadata index and
    // meta-metadata file (BP4, which wgpipe does not write, has no mmd.0).
    Registered {
        name: "adios2",
        open: adios2_sink,
        output: Some(OutputKind::BpDir),
        read: Some((crate::bp5::holds_bp5, adios2_output)),
    },
];

/// Names accepted by [`open_sink`], in the order they are listed to users.
pub const SINK_NAMES: &[&str] = &names();

/// The names of [`BACKENDS`].
const fn names() -> [&'static str; BACKENDS.len()] {
    let mut out = [""; BACKENDS.len()];
    let mut i = 0;
    while i < BACKENDS.len() {
        out[i] = BACKENDS[i].name;
        i += 1;
    }
    out
}

/// The backend called `kind`.
fn backend(kind: &str) -> Result<&'static Registered> {
    BACKENDS.iter().find(|b| b.name == kind).ok_or_else(|| Error::UnknownSink(kind.to_owned(), SINK_NAMES.join(", ")))
}

/// Creates the sink called `kind` (one of [`SINK_NAMES`]) with `options`, driven through the
/// sink protocol ([`crate::Checked`]).
///
/// Nothing is created on disk until [`Sink::begin`]; this only checks the name and options,
/// so a bad config fails before any GPU work starts.
pub fn open_sink(kind: &str, options: &SinkOptions) -> Result<Box<dyn Sink>> {
    options.check()?;
    (backend(kind)?.open)(options)
}

/// Checks, changing nothing on disk, that the sink called `kind` can write its output at
/// `options.path`: the parent directory exists, and an existing output is refused unless
/// `overwrite` may replace it (same kind) or `append` adds to it. `begin` makes the same
/// checks; call this to refuse a bad path before opening devices.
pub fn check_output(kind: &str, options: &SinkOptions) -> Result<()> {
    let Some(kind) = backend(kind).ok().and_then(|b| b.output) else { return Ok(()) };
    if options.append && std::fs::symlink_metadata(&options.path).is_ok() {
        return Ok(()); // `begin` checks that the existing output matches the layout
    }
    crate::prepare::check(&options.path, options.overwrite, kind).map(|_| ())
}

/// Opens what a sink wrote at `path`: a raw directory, an HDF5 file, a Zarr store or an
/// ADIOS2 BP5 directory.
///
/// Counts the frames every stream holds completely, so an output left by a killed run opens
/// too and reports what survived.
pub fn open_output(path: impl AsRef<Path>) -> Result<Output> {
    let path = path.as_ref();
    std::fs::metadata(path).map_err(|e| Error::io("cannot open output", path, e))?;
    let readers = BACKENDS.iter().filter_map(|b| b.read);
    match readers.into_iter().find(|(holds, _)| holds(path)) {
        Some((_, read)) => read(path),
        None => Err(Error::BadOutput {
            path: path.to_path_buf(),
            reason: format!(
                "a directory with neither run.json (raw) nor zarr.json (zarr) nor {} and {} (adios2 BP5)",
                crate::bp5::INDEX,
                crate::bp5::META_META
            ),
        }),
    }
}

#[cfg(feature = "hdf5")]
fn hdf5_sink(options: &SinkOptions) -> Result<Box<dyn Sink>> {
    options.compression.check_available()?;
    if let crate::Compression::Zstd(_) = options.compression {
        return Err(Error::InvalidOptions(format!(
            "compression {} is a Zarr codec, which the hdf5 sink does not write: use blosc-zstd (with cargo \
             feature `blosc`) or deflate, or output.sink = \"zarr\"",
            options.compression
        )));
    }
    Ok(Box::new(crate::hdf5::Hdf5Sink::new(options.clone())))
}

#[cfg(not(feature = "hdf5"))]
fn hdf5_sink(_options: &SinkOptions) -> Result<Box<dyn Sink>> {
    Err(Error::FeatureDisabled { what: "the hdf5 sink", feature: "hdf5" })
}

#[cfg(feature = "hdf5")]
fn hdf5_output(path: &Path) -> Result<Output> {
    crate::hdf5::read::open(path)
}

#[cfg(not(feature = "hdf5"))]
fn hdf5_output(_path: &Path) -> Result<Output> {
    Err(Error::FeatureDisabled { what: "reading a file (only HDF5 outputs are files)", feature: "hdf5" })
}

#[cfg(feature = "zarr")]
fn zarr_sink(options: &SinkOptions) -> Result<Box<dyn Sink>> {
    options.compression.check_available_in_zarr()?;
    Ok(Box::new(crate::zarr::ZarrSink::new(options.clone())))
}

#[cfg(not(feature = "zarr"))]
fn zarr_sink(_options: &SinkOptions) -> Result<Box<dyn Sink>> {
    Err(Error::FeatureDisabled { what: "the zarr sink", feature: "zarr" })
}

#[cfg(feature = "zarr")]
fn zarr_holds(path: &Path) -> bool {
    crate::zarr::read::holds(path)
}

#[cfg(not(feature = "zarr"))]
fn zarr_holds(path: &Path) -> bool {
    path.join("zarr.json").is_file()
}

#[cfg(feature = "zarr")]
fn zarr_output(path: &Path) -> Result<Output> {
    crate::zarr::read::open(path)
}

#[cfg(not(feature = "zarr"))]
fn zarr_output(_path: &Path) -> Result<Output> {
    Err(Error::FeatureDisabled { what: "reading a Zarr store", feature: "zarr" })
}

#[cfg(feature = "adios2")]
fn adios2_sink(options: &SinkOptions) -> Result<Box<dyn Sink>> {
    Ok(Box::new(crate::adios2::Adios2Sink::new(options.clone())))
}

#[cfg(not(feature = "adios2"))]
fn adios2_sink(_options: &SinkOptions) -> Result<Box<dyn Sink>> {
    Err(Error::FeatureDisabled { what: "the adios2 sink", feature: "adios2" })
}

#[cfg(feature = "adios2")]
fn adios2_output(path: &Path) -> Result<Output> {
    crate::adios2::read::open(path)
}

#[cfg(not(feature = "adios2"))]
fn adios2_output(_path: &Path) -> Result<Output> {
    Err(Error::FeatureDisabled { what: "reading an ADIOS2 BP5 directory", feature: "adios2" })
}

#[cfg(test)]
mod tests {
    use super::open_output;
    use crate::error::Error;

    /// A directory holding BP5's files is taken for an ADIOS2 output in every build: read with
    /// feature `adios2` (this one, whose index holds no step, refused before ADIOS2 is asked:
    /// it crashes on an empty index), refused naming that feature without it.
    #[test]
    fn a_bp5_directory_is_recognised_with_or_without_the_adios2_feature() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        for file in ["md.idx", "mmd.0", "md.0", "data.0"] {
            std::fs::write(dir.path().join(file), b"")?;
        }
        let err = open_output(dir.path()).err().ok_or("an empty BP5 directory opened")?;
        if cfg!(feature = "adios2") {
            assert!(matches!(err, Error::BadOutput { .. }), "{err}");
            assert!(err.to_string().contains("md.idx holds no step"), "{err}");
        } else {
            assert!(matches!(err, Error::FeatureDisabled { feature: "adios2", .. }), "{err}");
        }
        Ok(())
    }
}
