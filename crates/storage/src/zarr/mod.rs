//! The Zarr backend: a Zarr v3 directory store (cargo feature `zarr`, on by default), one
//! group per stream and one array per field, written through the zarrs crate and read by
//! zarr-python, xarray and every Zarr v3 reader.

#[cfg(feature = "mpi")]
mod mpi_block;
pub(crate) mod read;
mod schema;
mod sink;
mod store;

#[cfg(feature = "mpi")]
pub use mpi_block::{ZarrBlockBackend, ZarrBlockSink};
pub use sink::{ZarrBackend, ZarrSink};
