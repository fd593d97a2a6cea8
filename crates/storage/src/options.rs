//! Sink options: what a config file or command line asks of storage, whichever backend serves it.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::zfp::ZfpRate;

/// Compression of stored frames (HDF5 and Zarr; the raw sink stores bytes as they are, so
/// that `numpy.fromfile` can read them).
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
    /// Zstandard at this level (1 … 9): Zarr only (its `zstd` codec), where it is the
    /// common choice; the HDF5 sink refuses it (use `blosc-zstd` there).
    Zstd(u8),
    /// ZFP in fixed-accuracy mode, lossy: every float value read back lies within this
    /// absolute error of the value written, for finite values whose magnitude the bound does
    /// not undercut by more than the type's precision (a bound of 1e-9 on values near 1e3
    /// cannot hold in f32); a block holding Inf or NaN is not bounded at all. HDF5 through the H5Z-ZFP filter plugin (HDF5
    /// filter 32013; Debian: `hdf5-filter-plugin-zfp-serial`), which other readers need too
    /// (h5py finds it in HDF5's plugin directory); Zarr through the `zfpy` codec (numcodecs'
    /// layout: zarr-python reads it with `zfpy` installed). Fields of other element types
    /// (integers, f16) are stored without it.
    Zfp(Tolerance),
    /// ZFP in fixed-rate mode, lossy: every f32 value takes this many bits (1 to 32; a
    /// quarter of the bytes at 8), whatever the data, so the size is known and the error is
    /// not bounded (smooth fields lose least). Stored as `Zfp` is (the H5Z-ZFP plugin for
    /// HDF5; Zarr's `zfpy` codec). Fields encoded before the sink
    /// ([`crate::Encoding::Zfp`], wgpipe's `output.compress_on = "device"`) arrive in this
    /// format; the HDF5 sink stores their streams as they are.
    ZfpRate(ZfpRate),
}

/// A ZFP error bound: a finite number above 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance(f64);

/// Equal bounds are equal numbers: no NaN is ever a tolerance.
impl Eq for Tolerance {}

impl Tolerance {
    /// `bound` as a tolerance, if it is finite and above 0.
    pub fn new(bound: f64) -> Option<Self> {
        (bound.is_finite() && bound > 0.0).then_some(Tolerance(bound))
    }

    /// The largest absolute error allowed.
    pub fn get(self) -> f64 {
        self.0
    }
}

/// The valid compression values, as listed in error messages.
const COMPRESSION_VALUES: &str = "none, deflate, deflate:LEVEL (also spelled gzip), blosc-lz4, blosc-lz4:LEVEL, blosc-zstd, blosc-zstd:LEVEL, \
     zstd or zstd:LEVEL (LEVEL 1-9), zfp:accuracy=E (E > 0, the largest absolute error) or zfp:rate=R (R bits per \
     value, 1-32)";

impl Compression {
    /// Level used by `blosc-lz4` without `:LEVEL`.
    pub const DEFAULT_BLOSC_LZ4_LEVEL: u8 = 5;
    /// Level used by `blosc-zstd` without `:LEVEL`.
    pub const DEFAULT_BLOSC_ZSTD_LEVEL: u8 = 3;
    /// Level used by `zstd` without `:LEVEL` (zstd's own default).
    pub const DEFAULT_ZSTD_LEVEL: u8 = 3;

    /// Whether this is ZFP, in either mode (HDF5's ZFP filter plugin, Zarr's `zfpy` codec).
    pub fn is_zfp(&self) -> bool {
        matches!(self, Compression::Zfp(_) | Compression::ZfpRate(_))
    }

    /// Whether this compression uses the blosc HDF5 filter (cargo feature `blosc`).
    pub fn is_blosc(&self) -> bool {
        matches!(self, Compression::BloscLz4(_) | Compression::BloscZstd(_))
    }

    /// Errors if the Zarr sink of this build cannot write this compression: ZFP without the
    /// cargo feature `zarr-zfp` (the codec's ZFP library is built from source, with cmake).
    pub fn check_available_in_zarr(&self) -> Result<()> {
        if self.is_zfp() && !cfg!(feature = "zarr-zfp") {
            return Err(Error::InvalidOptions(format!(
                "compression {self} needs the Zarr ZFP codec, which this build of wgpipe-storage leaves out: \
                 rebuild with the `zarr-zfp` cargo feature (the default; it needs cmake), or use the hdf5 sink \
                 (HDF5's ZFP filter plugin needs no build feature)"
            )));
        }
        Ok(())
    }

    /// Errors if the HDF5 sink of this build cannot write this compression (blosc without
    /// feature `blosc`, ZFP without HDF5's ZFP filter plugin), so that a config can refuse the
    /// value itself before anything starts. (The Zarr sink's: [`Compression::check_available_in_zarr`].)
    pub fn check_available(&self) -> Result<()> {
        #[cfg(feature = "hdf5")]
        if self.is_zfp() && !hdf5::filters::zfp_available() {
            return Err(Error::InvalidOptions(format!(
                "compression {self} needs HDF5's ZFP filter plugin (H5Z-ZFP, filter 32013), which HDF5 cannot \
                 load: install it (Debian: apt-get install hdf5-filter-plugin-zfp-serial) or point \
                 HDF5_PLUGIN_PATH at the directory holding libh5zzfp.so"
            )));
        }
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
            Compression::Zstd(level) => write!(f, "zstd:{level}"),
            Compression::Zfp(t) => write!(f, "zfp:accuracy={}", t.get()),
            Compression::ZfpRate(rate) => write!(f, "zfp:rate={rate}"),
        }
    }
}

/// Parses `none`, `deflate` (level 4), `deflate:LEVEL`, `blosc-lz4` (level 5),
/// `blosc-lz4:LEVEL`, `blosc-zstd` (level 3), `blosc-zstd:LEVEL`, `zstd` (level 3) or
/// `zstd:LEVEL`, as written in config files; `gzip` is another name of `deflate` (the same
/// zlib stream: Zarr calls its codec `gzip`).
/// Blosc values parse in every build; a build without feature `blosc` refuses them when the
/// HDF5 sink is opened.
impl FromStr for Compression {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let bad = || Error::InvalidOptions(format!("compression {s:?} is unknown: use {COMPRESSION_VALUES}"));
        if let Some(bound) = s.strip_prefix("zfp:accuracy=") {
            return bound.parse::<f64>().ok().and_then(Tolerance::new).map(Compression::Zfp).ok_or_else(|| {
                Error::InvalidOptions(format!(
                    "compression {s:?}: the accuracy must be a number above 0 (the largest absolute error), e.g. \
                     zfp:accuracy=1e-4"
                ))
            });
        }
        if let Some(rate) = s.strip_prefix("zfp:rate=") {
            let rate = rate.parse::<u32>().map_err(|_| {
                Error::InvalidOptions(format!(
                    "compression {s:?}: the rate must be a whole number of bits per value, 1 to 32, e.g. zfp:rate=8"
                ))
            })?;
            return ZfpRate::new(rate).map(Compression::ZfpRate);
        }
        if s == "zfp" || s.starts_with("zfp:") {
            return Err(Error::InvalidOptions(format!(
                "compression {s:?}: ZFP needs its mode, e.g. zfp:accuracy=1e-4 (the largest absolute error) or \
                 zfp:rate=8 (bits per value)"
            )));
        }
        let (name, level) = match s.split_once(':') {
            None => (s, None),
            Some((name, level)) => match level.parse::<u8>() {
                Ok(l @ 1..=9) => (name, Some(l)),
                _ => return Err(bad()),
            },
        };
        match (name, level) {
            ("none", None) => Ok(Compression::None),
            ("deflate" | "gzip", l) => Ok(Compression::Deflate(l.unwrap_or(4))),
            ("blosc-lz4", l) => Ok(Compression::BloscLz4(l.unwrap_or(Self::DEFAULT_BLOSC_LZ4_LEVEL))),
            ("blosc-zstd", l) => Ok(Compression::BloscZstd(l.unwrap_or(Self::DEFAULT_BLOSC_ZSTD_LEVEL))),
            ("zstd", l) => Ok(Compression::Zstd(l.unwrap_or(Self::DEFAULT_ZSTD_LEVEL))),
            _ => Err(bad()),
        }
    }
}

/// The ADIOS2 engine the `adios2` sink writes with.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Adios2Engine {
    /// BP5 files: a directory read by `bpls`, the `adios2` Python API and ParaView.
    #[default]
    Bp5,
    /// SST: a stream to readers running at the same time (the path names the stream; the
    /// writer publishes `PATH.sst`, the contact file readers open).
    Sst,
}

impl FromStr for Adios2Engine {
    type Err = Error;

    /// `BP5` or `SST` (any case).
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_uppercase().as_str() {
            "BP5" => Ok(Adios2Engine::Bp5),
            "SST" => Ok(Adios2Engine::Sst),
            _ => Err(Error::InvalidOptions(format!("ADIOS2 engine {s:?} is unknown: use BP5 or SST"))),
        }
    }
}

/// What an SST writer does when its queue of steps no reader has taken is full.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueFullPolicy {
    /// Wait for the readers: the wait reaches the pipeline's bounded channel, which slows the
    /// devices (backpressure). Nothing is lost.
    #[default]
    Block,
    /// Drop the oldest step not yet taken: the run never waits, readers miss steps.
    Discard,
}

impl FromStr for QueueFullPolicy {
    type Err = Error;

    /// `block` or `discard` (any case).
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "block" => Ok(QueueFullPolicy::Block),
            "discard" => Ok(QueueFullPolicy::Discard),
            _ => Err(Error::InvalidOptions(format!("queue full policy {s:?} is unknown: use block or discard"))),
        }
    }
}

/// Where and how a sink stores frames; one struct for every sink so a config can switch
/// sinks by name alone. Options a sink has no use for are ignored by it.
#[derive(Debug, Clone, PartialEq)]
pub struct SinkOptions {
    /// Output: a directory for `raw` and `zarr` (a Zarr v3 directory store), a file for
    /// `hdf5`, unused by `null`.
    pub path: PathBuf,
    /// Replace an existing output instead of refusing to start.
    pub overwrite: bool,
    /// Compression (HDF5 and Zarr; blosc in HDF5 needs cargo feature `blosc`, zstd is Zarr's).
    pub compression: Compression,
    /// Frames per HDF5 chunk. 1 (the default) lets each frame go to disk as whole chunks,
    /// the fastest and most crash-proof. Compressed, larger values make the file larger: each
    /// earlier version of a filling chunk stays in it (see the reliability guide). A frame of a field
    /// over 4 MiB is cut into several chunks along its leading axes (see the crate README);
    /// `chunk_frames` multiplies that part, up to HDF5's 4 GiB per chunk. An uncompressed
    /// file whose frame counts are known packs the frames of a field smaller than 4 KiB a
    /// frame into chunks of about 4 KiB (it lays every chunk out at `begin`).
    pub chunk_frames: usize,
    /// Force the data to stable storage (fsync) in `finish`, so a finished run survives a
    /// power cut; costs the time the disk needs to absorb the page cache.
    pub fsync: bool,
    /// Add streams to an existing output instead of refusing it (what `--resume` uses):
    /// the output's fields (names, element types, shapes, axis names) must match the
    /// layout's; a stream of the layout that exists incomplete is deleted and rewritten, one
    /// that exists complete is an error (`Error::StreamComplete`), and streams the layout
    /// does not name are left untouched.
    /// Without an existing output this creates one as usual. Ignored by `null`.
    pub append: bool,
    /// HDF5 only: reserve disk space ahead of every frame (fallocate) and respect the file
    /// size limit, so that a full disk or `ulimit -f` stops the run between two frames and
    /// leaves a file holding every frame written, never a damaged one (the guide,
    /// "Reliability"). On by default; turning it off only makes sense to measure its cost.
    pub reserve_space: bool,
    /// HDF5 only: write an XDMF sidecar (`OUT.xdmf` beside `OUT.h5`) when the sink finishes,
    /// describing every stream as a time series on a uniform grid, so that ParaView and
    /// VisIt open the run with no code (the guide, "Output formats and reading them").
    pub xdmf: bool,
    /// HDF5 only: open the file in single-writer/multiple-reader mode once its streams are
    /// created, so that readers (h5py `File(path, "r", swmr=True)`) can follow frames while
    /// the run goes. Writes the HDF5 1.10 file format (older HDF5 libraries cannot read it);
    /// cannot append to an existing file.
    pub swmr: bool,
    /// HDF5 with deflate: threads that compress a frame's chunks at once (the writer's own
    /// thread included), which then go to the file through HDF5's direct chunk write. 1
    /// compresses on the writer thread alone. Default: [`default_compression_threads`].
    /// Blosc: the threads of c-blosc's pool, which compresses each chunk's blocks in
    /// parallel inside HDF5's filter (a process-wide setting of c-blosc).
    pub compression_threads: usize,
    /// Zarr only: frames per shard. 1 (the default) stores each frame of each field as its
    /// own chunk file; more puts that many frames' chunks into one shard file (Zarr's
    /// sharding codec: fewer files, one frame per inner chunk), rewritten whole, atomically,
    /// with every frame, so a frame costs up to this many frames of writing.
    pub shard_frames: usize,
    /// ADIOS2 only: the engine, BP5 files (the default) or an SST stream.
    pub adios2_engine: Adios2Engine,
    /// ADIOS2 SST only: steps an SST writer keeps for its readers; 0 means no limit.
    pub queue_limit: usize,
    /// ADIOS2 SST only: what the writer does when `queue_limit` steps wait.
    pub queue_full_policy: QueueFullPolicy,
    /// ADIOS2 SST only: how long the writer waits for a reader to connect before it fails.
    pub open_timeout: std::time::Duration,
}

/// The default of [`SinkOptions::compression_threads`]: the machine's cores, up to 4
/// (beyond that HDF5's writes, which the library serialises, dominate a frame), and at least 1.
pub fn default_compression_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
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
            reserve_space: true,
            compression_threads: default_compression_threads(),
            xdmf: false,
            swmr: false,
            shard_frames: 1,
            adios2_engine: Adios2Engine::Bp5,
            queue_limit: 0,
            queue_full_policy: QueueFullPolicy::Block,
            open_timeout: std::time::Duration::from_secs(60),
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

    /// Sets [`SinkOptions::reserve_space`].
    pub fn with_reserve_space(mut self, reserve_space: bool) -> Self {
        self.reserve_space = reserve_space;
        self
    }

    /// Sets [`SinkOptions::compression_threads`].
    pub fn with_compression_threads(mut self, threads: usize) -> Self {
        self.compression_threads = threads;
        self
    }

    /// Sets [`SinkOptions::xdmf`].
    pub fn with_xdmf(mut self, xdmf: bool) -> Self {
        self.xdmf = xdmf;
        self
    }

    /// Sets [`SinkOptions::shard_frames`].
    pub fn with_shard_frames(mut self, shard_frames: usize) -> Self {
        self.shard_frames = shard_frames;
        self
    }

    /// Sets [`SinkOptions::adios2_engine`].
    pub fn with_adios2_engine(mut self, engine: Adios2Engine) -> Self {
        self.adios2_engine = engine;
        self
    }

    /// Sets [`SinkOptions::queue_limit`] and [`SinkOptions::queue_full_policy`].
    pub fn with_queue(mut self, limit: usize, policy: QueueFullPolicy) -> Self {
        self.queue_limit = limit;
        self.queue_full_policy = policy;
        self
    }

    /// Sets [`SinkOptions::open_timeout`].
    pub fn with_open_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.open_timeout = timeout;
        self
    }

    /// Sets [`SinkOptions::swmr`].
    pub fn with_swmr(mut self, swmr: bool) -> Self {
        self.swmr = swmr;
        self
    }

    /// Errors on values no sink accepts.
    pub(crate) fn check(&self) -> Result<()> {
        if self.swmr && self.append {
            return Err(Error::InvalidOptions(
                "swmr cannot append to an existing output (resume): a file only enters \
                 single-writer/multiple-reader mode when it is created; run without swmr to resume"
                    .into(),
            ));
        }
        if self.chunk_frames == 0 {
            return Err(Error::InvalidOptions("chunk_frames is 0: use 1 or more frames per chunk".into()));
        }
        if self.shard_frames == 0 {
            return Err(Error::InvalidOptions(
                "shard_frames is 0: use 1 (no sharding) or more frames per shard".into(),
            ));
        }
        if self.compression_threads == 0 {
            return Err(Error::InvalidOptions(
                "compression_threads is 0: use 1 (compress on the writer thread) or more".into(),
            ));
        }
        let level = match self.compression {
            Compression::None => None,
            Compression::Deflate(l) => Some(("deflate", l)),
            Compression::BloscLz4(l) => Some(("blosc-lz4", l)),
            Compression::BloscZstd(l) => Some(("blosc-zstd", l)),
            Compression::Zstd(l) => Some(("zstd", l)),
            // A Tolerance is above 0 and a ZfpRate 1 to 32 by construction.
            Compression::Zfp(_) | Compression::ZfpRate(_) => None,
        };
        if let Some((name, l)) = level
            && !(1..=9).contains(&l)
        {
            return Err(Error::InvalidOptions(format!("{name} level {l} is out of range: use 1 to 9")));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ZFP in the Zarr sink needs the `zarr-zfp` feature: with it the check passes, without it
    /// the error names the feature (`.ci/run` runs this test in a build without it too).
    #[test]
    fn zfp_in_zarr_needs_the_feature() {
        let zfp = Compression::Zfp(Tolerance::new(1e-3).unwrap_or_else(|| panic!("a valid bound")));
        let with_feature = cfg!(feature = "zarr-zfp");
        match zfp.check_available_in_zarr() {
            Ok(()) => assert!(with_feature, "ZFP accepted without the feature"),
            Err(e) => {
                assert!(!with_feature, "{e}");
                assert!(e.to_string().contains("`zarr-zfp` cargo feature"), "{e}");
            }
        }
        assert!(Compression::Deflate(4).check_available_in_zarr().is_ok());
    }
}
