//! What makes an HDF5 file a wgpipe output: its marker, attribute writing, error wrapping.
//!
//! Shared by the sink and the reader so the two cannot drift apart.

use std::path::Path;

use hdf5::Location;
use hdf5::types::VarLenUnicode;

use crate::error::Error;
use crate::schema::AttrValue;

/// Value of the root `format` attribute, which marks a file as written by this sink.
pub(crate) const FORMAT: &str = "wgpipe-hdf5";

/// Wraps an HDF5 error with what was done to which file.
pub(crate) fn h5err(action: impl Into<String>, path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Hdf5 { action: action.into(), path: path.to_path_buf(), message: e.to_string() }
}

/// Writes (or replaces) one scalar attribute.
pub(crate) fn set_attr(loc: &Location, name: &str, value: &AttrValue) -> hdf5::Result<()> {
    if loc.attr_names()?.iter().any(|n| n == name) {
        loc.delete_attr(name)?;
    }
    match value {
        AttrValue::Int(i) => loc.new_attr::<i64>().create(name)?.write_scalar(i),
        AttrValue::Float(f) => loc.new_attr::<f64>().create(name)?.write_scalar(f),
        AttrValue::Text(t) => {
            // HDF5 strings end at NUL; drop any so the rest of the text survives.
            let s: VarLenUnicode = t.replace('\0', "").parse().map_err(|e| format!("{e}"))?;
            loc.new_attr::<VarLenUnicode>().create(name)?.write_scalar(&s)
        }
    }
}

/// Writes (or replaces) a boolean attribute (read by h5py as a numpy bool).
pub(crate) fn set_bool(loc: &Location, name: &str, value: bool) -> hdf5::Result<()> {
    if loc.attr_names()?.iter().any(|n| n == name) {
        loc.delete_attr(name)?;
    }
    loc.new_attr::<bool>().create(name)?.write_scalar(&value)
}
