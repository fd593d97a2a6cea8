//! The HDF5 backend (cargo feature `hdf5`): the sink, its reader, the file format they share,
//! and the disk-space reservation that keeps a file openable when the disk fills up.

mod format;
pub(crate) mod read;
mod reserve;
mod sink;

pub use sink::Hdf5Sink;
