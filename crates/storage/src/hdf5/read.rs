//! The HDF5 half of [`crate::open_output`]: a file written by [`crate::Hdf5Sink`].

use std::path::{Path, PathBuf};

use hdf5::types::{TypeDescriptor, VarLenAscii, VarLenUnicode};
use hdf5::{Attribute, Dataset, File, Location};
use ndarray::Ix3;

use super::format::{FORMAT, h5err};
use crate::error::{Error, Result};
use crate::frame::DType;
use crate::read::{Output, OutputFormat, Reader, StreamSummary};
use crate::schema::{AttrValue, Attributes};
use crate::validate::{RESERVED_RUN_ATTRS, RESERVED_STREAM_ATTRS, STEPS_NAME};

/// An open HDF5 output.
#[derive(Debug)]
struct Hdf5Reader {
    path: PathBuf,
    _file: File,
    /// Per stream: field datasets (layout order) and steps.
    sets: Vec<(Vec<Dataset>, Dataset)>,
}

/// A scalar attribute as an [`AttrValue`]; `None` for kinds wgpipe does not write.
fn attr_value(a: &Attribute) -> Option<AttrValue> {
    if !a.is_scalar() {
        return None;
    }
    match a.dtype().ok()?.to_descriptor().ok()? {
        TypeDescriptor::Integer(_) => a.read_scalar::<i64>().ok().map(AttrValue::Int),
        TypeDescriptor::Unsigned(_) => a.read_scalar::<u64>().ok().map(AttrValue::from),
        TypeDescriptor::Boolean => a.read_scalar::<bool>().ok().map(|b| AttrValue::Int(b.into())),
        TypeDescriptor::Float(_) => a.read_scalar::<f64>().ok().map(AttrValue::Float),
        TypeDescriptor::VarLenUnicode => {
            a.read_scalar::<VarLenUnicode>().ok().map(|s| AttrValue::Text(s.as_str().to_owned()))
        }
        TypeDescriptor::VarLenAscii => {
            a.read_scalar::<VarLenAscii>().ok().map(|s| AttrValue::Text(s.as_str().to_owned()))
        }
        _ => None,
    }
}

/// Every readable scalar attribute of `loc` except the `reserved` ones.
fn user_attrs(loc: &Location, reserved: &[&str]) -> hdf5::Result<Attributes> {
    let mut out = Attributes::new();
    for name in loc.attr_names()? {
        if reserved.contains(&name.as_str()) {
            continue;
        }
        if let Some(v) = attr_value(&loc.attr(&name)?) {
            out.insert(name, v);
        }
    }
    Ok(out)
}

/// A boolean attribute, `false` when absent.
fn bool_attr(loc: &Location, name: &str) -> bool {
    loc.attr(name).ok().and_then(|a| attr_value(&a)).is_some_and(|v| v == AttrValue::Int(1))
}

/// An integer attribute, `None` when absent or negative.
pub(crate) fn u64_attr(loc: &Location, name: &str) -> Option<u64> {
    match loc.attr(name).ok().and_then(|a| attr_value(&a)) {
        Some(AttrValue::Int(i)) => u64::try_from(i).ok(),
        _ => None,
    }
}

/// Opens the HDF5 output `path`.
pub(crate) fn open(path: &Path) -> Result<Output> {
    Hdf5Reader::open(path)
}

impl Hdf5Reader {
    fn open(path: &Path) -> Result<Output> {
        let err = |what: &'static str| move |e: hdf5::Error| h5err(what, path, e);
        let bad = |reason: String| Error::BadOutput { path: path.to_path_buf(), reason };
        let file = File::open(path).map_err(err("cannot open HDF5 file"))?;
        let root: &Location = &file;
        match root.attr("format").ok().and_then(|a| attr_value(&a)) {
            Some(AttrValue::Text(f)) if f == FORMAT => {}
            _ => return Err(bad(format!("no root attribute format = {FORMAT:?}"))),
        }
        let fields: Vec<String> = root
            .attr("fields")
            .and_then(|a| a.read_raw::<VarLenUnicode>())
            .map_err(err("cannot read attribute \"fields\" of"))?
            .iter()
            .map(|s| s.as_str().to_owned())
            .collect();
        let attributes = user_attrs(root, RESERVED_RUN_ATTRS).map_err(err("cannot read attributes of"))?;
        let complete = bool_attr(root, "complete");
        let mut groups = file.groups().map_err(err("cannot list groups of"))?;
        groups.sort_by_key(|g| u64_attr(g, "stream_index").unwrap_or(u64::MAX));
        let mut shape = [0, 0];
        let mut streams = Vec::new();
        let mut sets = Vec::new();
        for g in groups {
            let name = g.name().trim_start_matches('/').to_owned();
            let mut frames = u64::MAX;
            let mut datasets = Vec::new();
            for f in &fields {
                let ds = g.dataset(f).map_err(|e| h5err(format!("cannot open dataset {name}/{f} in"), path, e))?;
                let s = ds.shape();
                if s.len() != 3 {
                    return Err(bad(format!("dataset {name}/{f} has shape {s:?}, not 3-D")));
                }
                shape = [s[1], s[2]];
                frames = frames.min(s[0] as u64);
                datasets.push(ds);
            }
            let steps =
                g.dataset(STEPS_NAME).map_err(|e| h5err(format!("cannot open dataset {name}/steps in"), path, e))?;
            frames = frames.min(steps.size() as u64);
            streams.push(StreamSummary {
                attributes: user_attrs(&g, RESERVED_STREAM_ATTRS).map_err(err("cannot read attributes of"))?,
                expected_frames: u64_attr(&g, "expected_frames"),
                complete: bool_attr(&g, "complete"),
                frames,
                name,
            });
            sets.push((datasets, steps));
        }
        Ok(Output {
            path: path.to_path_buf(),
            format: OutputFormat::Hdf5,
            fields,
            shape,
            dtype: DType::F32,
            attributes,
            complete,
            streams,
            reader: Box::new(Hdf5Reader { path: path.to_path_buf(), _file: file, sets }),
        })
    }
}

impl Reader for Hdf5Reader {
    fn read_frame(&self, stream: usize, field: usize, index: u64) -> Result<Vec<f32>> {
        let i = index as usize;
        let arr = self.sets[stream].0[field]
            .read_slice::<f32, _, Ix3>((i..i + 1, .., ..))
            .map_err(|e| h5err(format!("cannot read frame {index} from"), &self.path, e))?;
        Ok(arr.iter().copied().collect())
    }

    fn steps(&self, stream: usize, frames: u64) -> Result<Vec<u64>> {
        if frames == 0 {
            return Ok(Vec::new());
        }
        let arr = self.sets[stream]
            .1
            .read_slice_1d::<u64, _>(0..frames as usize)
            .map_err(|e| h5err("cannot read steps from", &self.path, e))?;
        Ok(arr.to_vec())
    }
}
