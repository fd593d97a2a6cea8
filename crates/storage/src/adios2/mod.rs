//! The ADIOS2 backend (cargo feature `adios2`): BP5 files and SST streams through ADIOS2's C
//! library, loaded at run time ([`ffi`]); BP5 files read back by [`read`].

mod ffi;
pub(crate) mod read;
mod sink;

pub use sink::{Adios2Backend, Adios2Sink};
