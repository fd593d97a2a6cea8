//! The HDF5 backend (cargo feature `hdf5`): the sink, its reader, the file format they share,
//! the disk-space reservation that keeps a file openable when the disk fills up, and
//! close-on-exec for the descriptors HDF5 opens.

mod cloexec;
mod copy;
mod direct;
mod eoa;
mod format;
#[cfg(feature = "mpi")]
mod mpi;
#[cfg(feature = "mpi")]
mod mpi_block;
mod netcdf;
mod preallocate;
pub(crate) mod read;
mod reserve;
mod schema;
mod sink;
mod swmr;
mod write_path;
mod xdmf;

#[cfg(feature = "mpi")]
pub use mpi::{MpiHdf5Backend, MpiHdf5Sink};
#[cfg(feature = "mpi")]
pub use mpi_block::{MpiBlockBackend, MpiBlockSink};
pub use sink::{Hdf5Backend, Hdf5Sink};
