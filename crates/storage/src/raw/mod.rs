//! The raw backend: one little-endian file per stream and field plus JSON metadata, readable
//! with `numpy.fromfile`.

pub(crate) mod meta;
pub(crate) mod read;
mod sink;

pub use sink::{RawBackend, RawSink};
