//! The ADIOS2 backend (cargo feature `adios2`): BP5 files and SST streams through ADIOS2's C
//! library, loaded at run time ([`ffi`]).

mod ffi;
mod sink;

pub use sink::{Adios2Backend, Adios2Sink};
