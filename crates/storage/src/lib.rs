//! # wgpipe-storage
//!
//! The storage half of wgpipe: it knows frames, stream layouts and files, and nothing of GPUs.
//!
//! A [`Sink`] is driven in push mode: [`Sink::begin`] once with the [`StreamLayout`], then
//! [`Sink::write`] for every [`Frame`] (in production order within each stream; streams may
//! interleave), then [`Sink::finish`], which flushes, closes and returns a [`SinkSummary`].
//! Three sinks ship with the crate, chosen by name with [`open_sink`]:
//! `null` (counts and checksums), `raw` (little-endian files readable by `numpy.fromfile`) and
//! `hdf5` (one self-describing file; cargo feature `hdf5`, on by default).
//!
//! ```
//! use wgpipe_storage::{DType, Frame, Sink, StreamInfo, StreamLayout, NullSink};
//!
//! let layout = StreamLayout::new(vec!["v".into()], 2, 3, DType::F32)
//!     .with_stream(StreamInfo::new("run0"));
//! let mut sink = NullSink::default();
//! sink.begin(&layout)?;
//! let data: Vec<u8> = [0.5f32; 6].iter().flat_map(|x| x.to_le_bytes()).collect();
//! sink.write(&Frame::new(&layout, 0, 0, 32, data))?;
//! let summary = sink.finish()?;
//! assert_eq!(summary.frames, 1);
//! assert_eq!(summary.bytes, 24);
//! # Ok::<(), wgpipe_storage::Error>(())
//! ```

mod append;
mod checksum;
mod error;
mod frame;
#[cfg(feature = "hdf5")]
mod hdf5;
#[cfg(feature = "hdf5")]
mod hdf5_read;
mod layout;
mod limits;
mod null;
mod options;
mod output;
mod raw;
mod raw_meta;
mod read;
#[cfg(feature = "hdf5")]
mod reserve;
mod sink;
mod time;
mod validate;

pub use checksum::frame_checksum;
pub use error::{Error, Result};
pub use frame::{DType, Frame};
#[cfg(feature = "hdf5")]
pub use hdf5::Hdf5Sink;
pub use layout::{AttrValue, Attributes, StreamInfo, StreamLayout};
pub use limits::{HDF5_MAX_CHUNK_BYTES, HDF5_MAX_CHUNK_ELEMENTS, check_hdf5_chunk};
pub use null::NullSink;
pub use options::{Compression, SINK_NAMES, SinkOptions, check_output, open_sink};
pub use raw::RawSink;
pub use read::{Output, OutputFormat, StreamSummary, open_output};
pub use sink::{Sink, SinkSummary};
pub use validate::{check_field_name, check_stream_name};
