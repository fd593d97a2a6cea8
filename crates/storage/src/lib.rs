//! # wgpipe-storage
//!
//! The storage half of wgpipe: it knows frames, stream layouts and files, and nothing of GPUs.
//!
//! ```
//! use wgpipe_storage::{DType, FieldSpec, Frame, SinkOptions, StreamInfo, StreamLayout, open_output, open_sink};
//!
//! // Per frame: a 2 x 3 float32 field `u` and a 4-bin uint32 histogram `h`.
//! let layout = StreamLayout::new(vec![FieldSpec::new("u", DType::F32, [2, 3]), FieldSpec::new("h", DType::U32, [4])])
//!     .with_stream(StreamInfo::new("run0").with_expected_frames(1));
//! let tmp = tempfile::tempdir()?;
//! let dir = tmp.path().join("out");
//! let mut sink = open_sink("raw", &SinkOptions::new(&dir))?;
//! sink.begin(&layout)?;
//! let u = [0.5f32, 1.0, 1.5, 2.0, 2.5, 3.0].iter().flat_map(|x| x.to_le_bytes());
//! let h = [7u32, 0, 1, 2].iter().flat_map(|x| x.to_le_bytes());
//! sink.write(&Frame::new(0, 0, 100, u.chain(h).collect()))?;
//! assert_eq!(sink.finish()?.frames, 1);
//!
//! let out = open_output(&dir)?;
//! assert_eq!(out.read_f32(0, 0, 0)?, [0.5, 1.0, 1.5, 2.0, 2.5, 3.0]);
//! assert_eq!(out.read_field(0, 1, 0)?.to_f64(), [7.0, 0.0, 1.0, 2.0]);
//! assert_eq!(out.steps(0)?, [100]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A frame is a set of named arrays: the [`StreamLayout`] declares each field once, with its
//! element type ([`DType`]: `u8 u16 u32 i32 f16 f32 f64`) and shape of rank 0 to 3, and every
//! [`Frame`] carries the fields' bytes back to back in that order (C order, last axis
//! fastest, little-endian). Sinks store each field as `[frames, *shape]`.
//!
//! A [`Sink`] is driven in push mode: [`Sink::begin`] once with the layout, then
//! [`Sink::write`] for every frame (in production order within each stream; streams may
//! interleave), then [`Sink::finish`], which flushes, closes and returns a [`SinkSummary`].
//! That protocol is enforced in one place, [`Checked`]: a storage backend implements
//! [`Backend`] (creating, storing, closing) and every call reaches it checked: call order,
//! the layout, each frame's stream, index and size; [`Checked`] counts and checksums what was
//! stored and tells the backend at `finish` which streams are complete ([`Outcome`]). The
//! built-in sinks are backends wrapped this way, and yours gets the same with
//! `Checked::from(your_backend)`.
//!
//! Five sinks ship with the crate, chosen by name with [`open_sink`]: `null` (counts and
//! checksums), `raw` (little-endian files readable by `numpy.fromfile`), `hdf5` (one
//! self-describing file; cargo feature `hdf5`, on by default), `zarr` (a Zarr v3 directory
//! store; cargo feature `zarr`, on by default) and `adios2` (BP5 files and SST streams through
//! ADIOS2's C library, loaded at run time; cargo feature `adios2`); with feature `mpi`, the
//! HDF5 file can also be shared by MPI ranks (`MpiHdf5Sink`: each rank its own streams;
//! `MpiBlockSink`: each rank its block of every frame). [`open_output`] reads back what `raw`,
//! `hdf5`, `zarr` and `adios2` (BP5) stored, and [`conformance`] is the suite every sink
//! passes. A new backend is a folder under `src/` and one line in `open.rs`.

#[cfg(feature = "adios2")]
mod adios2;
mod append;
mod bp5;
mod checksum;
pub mod conformance;
#[cfg(any(feature = "hdf5", feature = "zarr"))]
mod dimensions;
mod error;
mod frame;
#[cfg(feature = "hdf5")]
mod hdf5;
mod json_meta;
mod null;
mod open;
mod options;
mod pooled;
mod prepare;
mod protocol;
#[cfg(feature = "mpi")]
mod ranks;
mod raw;
mod read;
mod schema;
mod sink;
mod time;
mod validate;
#[cfg(feature = "zarr")]
mod zarr;
mod zfp;

#[cfg(feature = "adios2")]
pub use adios2::{Adios2Backend, Adios2Sink};
pub use checksum::{BlockHasher, DataHasher, HASH_BLOCK, frame_checksum};
pub use error::{Error, Result};
pub use frame::{DType, Fields, Frame};
#[cfg(feature = "hdf5")]
pub use hdf5::{Hdf5Backend, Hdf5Sink};
#[cfg(feature = "mpi")]
pub use hdf5::{MpiBlockBackend, MpiBlockSink, MpiHdf5Backend, MpiHdf5Sink};
/// The MPI crate the `mpi` feature links, so that callers pass communicators of the same version.
#[cfg(feature = "mpi")]
pub use mpi;
pub use null::{NullBackend, NullSink};
#[cfg(feature = "mpi")]
pub use null::{NullBlockBackend, NullBlockSink};
pub use open::{SINK_NAMES, check_output, open_output, open_sink};
pub use options::{Adios2Engine, Compression, QueueFullPolicy, SinkOptions, Tolerance, default_compression_threads};
pub use pooled::{PooledFrame, Recycle};
pub use protocol::{Backend, Checked, Outcome};
#[cfg(feature = "mpi")]
pub use ranks::failed_ranks;
pub use raw::{RawBackend, RawSink};
pub use read::{FieldData, Output, OutputFormat, StreamSummary};
pub use schema::{AXIS_ORDER, AttrValue, Attributes, FieldSpec, MAX_RANK, StreamInfo, StreamLayout};
pub use sink::{Sink, SinkSummary};
pub use validate::{check_field_name, check_stream_name};
#[cfg(feature = "zarr")]
pub use zarr::{ZarrBackend, ZarrSink};
#[cfg(all(feature = "zarr", feature = "mpi"))]
pub use zarr::{ZarrBlockBackend, ZarrBlockSink};
pub use zfp::{Encoding, ZfpRate};
