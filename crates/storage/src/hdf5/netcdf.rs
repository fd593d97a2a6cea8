//! The netCDF-4 data model on top of the HDF5 layout, so that netCDF tools (`ncdump`,
//! xarray with h5netcdf or netCDF4, ParaView's netCDF reader) see named dimensions instead
//! of anonymous `phony_dim_*` axes.
//!
//! netCDF-4 files are HDF5 files whose dimensions are HDF5 *dimension scales*: a dataset
//! marked as a scale (attribute `CLASS = "DIMENSION_SCALE"`), whose name is the dimension's
//! name, attached to every axis of every dataset that runs along it (`DIMENSION_LIST` on the
//! dataset, `REFERENCE_LIST` on the scale). A dimension with no coordinate values is a scale
//! whose `NAME` attribute starts with "This is a netCDF dimension but not a netCDF variable."
//! Both attribute sets are written by the HDF5 high-level library (`H5DSset_scale`,
//! `H5DSattach_scale`), the reference implementation that netCDF-C reads, rather than by
//! hand here: their exact types (a null-terminated fixed-length `CLASS`, variable-length
//! arrays of object references) are what readers check.
//!
//! In every stream group:
//! - `time`, an unlimited dimension for the frame axis. Its scale holds no data and never
//!   grows: netCDF-C and h5netcdf take an unlimited dimension's length from the longest
//!   dataset attached to it, so the frame write path has nothing more to do per frame.
//! - one dimension per axis name of the fields (`x`; `y, x`; `z, y, x`), the length of the
//!   axis, also without data. All fields share a dimension when they agree on its length.
//! - `steps`, attached to `time`, and named by each field's `coordinates` attribute (CF
//!   convention), so that xarray shows it as the stream's step coordinate.
//! - `units` and `long_name` on a field when its [`FieldSpec`] has them.
//!
//! The dimensions' names follow [`crate::dimensions`], the rule the Zarr sink names its
//! arrays' axes by too.

use std::ffi::{CString, c_uint};

use hdf5::types::VarLenUnicode;
use hdf5::{Dataset, Group, Location};

use crate::dimensions::Dimensions;
use crate::schema::{FieldSpec, StreamLayout};
use crate::validate::STEPS_NAME;

/// Start of the `NAME` of a dimension scale that is not also a variable (netCDF-C's text).
const NOT_A_VARIABLE: &str = "This is a netCDF dimension but not a netCDF variable.";

/// Bytes [`describe_stream`] can add to the file for one stream, at most: per dimension a
/// dataset (object header, 4 KiB is ample) and per attachment a reference on each side
/// (generously 256 bytes), plus the fields' text attributes. Counted by the HDF5 sink's
/// space reservation for `begin`.
pub(crate) fn stream_bytes_bound(layout: &StreamLayout) -> u64 {
    let dims = Dimensions::of(layout);
    let scales = dims.axes.len() as u64 + 1;
    let attachments: u64 = layout.fields.iter().map(|f| f.shape.len() as u64 + 1).sum::<u64>() + 1;
    let text: u64 = layout
        .fields
        .iter()
        .map(|f| {
            let len = |s: &Option<String>| s.as_ref().map_or(0, |s| s.len() as u64 + 128);
            len(&f.units) + len(&f.long_name) + STEPS_NAME.len() as u64 + 128
        })
        .sum();
    scales * 4096 + attachments * 256 + text
}

/// Adds the netCDF-4 description to one stream group: dimension scales attached to its
/// field datasets (layout order) and `steps`, the `coordinates`, `units` and `long_name`
/// attributes.
pub(crate) fn describe_stream(
    group: &Group,
    layout: &StreamLayout,
    dims: &Dimensions,
    fields: &[Dataset],
    steps: &Dataset,
) -> hdf5::Result<()> {
    let time = group.new_dataset::<f32>().chunk(1).shape(0..).create(dims.time.as_str())?;
    set_scale(&time, &format!("{NOT_A_VARIABLE}{:>10}", 0))?;
    let mut axes = Vec::with_capacity(dims.axes.len());
    for (name, len) in &dims.axes {
        let ds = group.new_dataset::<f32>().shape(*len).create(name.as_str())?;
        set_scale(&ds, &format!("{NOT_A_VARIABLE}{len:>10}"))?;
        axes.push(ds);
    }
    attach_scale(steps, &time, 0)?;
    for (i, (ds, spec)) in fields.iter().zip(&layout.fields).enumerate() {
        attach_scale(ds, &time, 0)?;
        for (axis, &a) in dims.of_field[i].iter().enumerate() {
            attach_scale(ds, &axes[a], axis + 1)?;
        }
        text_attrs(ds, spec)?;
    }
    Ok(())
}

/// The `coordinates`, `units` and `long_name` attributes of a field dataset.
fn text_attrs(ds: &Location, spec: &FieldSpec) -> hdf5::Result<()> {
    let write = |name: &str, value: &str| -> hdf5::Result<()> {
        let v: VarLenUnicode = value.replace('\0', "").parse().map_err(|e| format!("{e}"))?;
        ds.new_attr::<VarLenUnicode>().create(name)?.write_scalar(&v)
    };
    write("coordinates", STEPS_NAME)?;
    if let Some(u) = &spec.units {
        write("units", u)?;
    }
    if let Some(l) = &spec.long_name {
        write("long_name", l)?;
    }
    Ok(())
}

/// Marks `ds` as a dimension scale called `name` (`H5DSset_scale`).
fn set_scale(ds: &Dataset, name: &str) -> hdf5::Result<()> {
    let name = CString::new(name).map_err(|e| format!("dimension name {name:?}: {e}"))?;
    let id = ds.id();
    let status = hdf5::sync::sync(|| ffi::set_scale(id, &name));
    if status < 0 {
        return Err(format!("H5DSset_scale failed on {}", ds.name()).into());
    }
    Ok(())
}

/// Attaches the scale `scale` to axis `axis` of `ds` (`H5DSattach_scale`).
fn attach_scale(ds: &Dataset, scale: &Dataset, axis: usize) -> hdf5::Result<()> {
    let idx = c_uint::try_from(axis).map_err(|_| format!("axis {axis} is out of range"))?;
    let (did, sid) = (ds.id(), scale.id());
    let status = hdf5::sync::sync(|| ffi::attach_scale(did, sid, idx));
    if status < 0 {
        return Err(
            format!("H5DSattach_scale failed attaching {} to axis {axis} of {}", scale.name(), ds.name()).into()
        );
    }
    Ok(())
}

/// The two functions of the HDF5 high-level library (`libhdf5_hl`, linked through
/// hdf5-metno-sys's `hl` feature) this module needs: hdf5-metno-sys 0.12 declares no
/// bindings for them.
#[expect(unsafe_code, reason = "calls into the HDF5 high-level library, which has no safe binding")]
mod ffi {
    use std::ffi::{CStr, c_char, c_uint};

    use hdf5_sys::h5::herr_t;
    use hdf5_sys::h5i::hid_t;

    unsafe extern "C" {
        fn H5DSset_scale(dsid: hid_t, dimname: *const c_char) -> herr_t;
        fn H5DSattach_scale(did: hid_t, dsid: hid_t, idx: c_uint) -> herr_t;
    }

    /// `H5DSset_scale`; call under `hdf5::sync::sync` (the library is not thread-safe).
    pub(super) fn set_scale(dsid: hid_t, name: &CStr) -> herr_t {
        // SAFETY: `name` is a NUL-terminated string alive for the call; the function copies
        // it into an attribute and keeps no pointer. An id that is not an open dataset makes
        // the library return -1, nothing worse.
        unsafe { H5DSset_scale(dsid, name.as_ptr()) }
    }

    /// `H5DSattach_scale`; call under `hdf5::sync::sync`.
    pub(super) fn attach_scale(did: hid_t, dsid: hid_t, idx: c_uint) -> herr_t {
        // SAFETY: plain integers in; the library checks that both ids are open datasets,
        // that `idx` is an axis of `did` and that the two differ, and returns -1 otherwise.
        unsafe { H5DSattach_scale(did, dsid, idx) }
    }
}
