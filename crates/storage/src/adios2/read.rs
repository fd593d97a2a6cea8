//! The ADIOS2 half of [`crate::open_output`]: a BP5 directory written by the ADIOS2 sink,
//! read through ADIOS2's C library (the schema is the sink's, see `super::sink`).
//!
//! The file is opened in random access, which reads every step's metadata at once: each
//! variable `STREAM/FIELD` offers its stream's frames as its own steps, and a directory left
//! by a killed or failed run opens with every step ADIOS2 completed. The fields (order, types,
//! axis names) come from the `fields` attribute; what a stream's last frame records
//! (`STREAM/frames`, `STREAM/complete`, and the run's `complete`) is absent for a stream short
//! of its frames (a run stopped, failed or killed), which reads as incomplete, and a stream
//! holds the frames its variables' step counts agree on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::ffi::{self, BpReader, Type, VarInfo};
use super::sink::{FIELDS_ATTR, FORMAT, SINK_RUN_ATTRS, adios2_type};
use crate::bp5::INDEX as BP5_INDEX;
use crate::error::{Error, Result};
use crate::json_meta::FieldEntry;
use crate::read::{Output, OutputFormat, Reader, StreamSummary};
use crate::schema::{AttrValue, Attributes, FieldSpec};
use crate::validate::{RESERVED_RUN_ATTRS, RESERVED_STREAM_ATTRS};

/// Length of the header of BP5's metadata index (`md.idx`): an index no longer holds no step.
/// ADIOS2 (2.12.1) crashes the process (SIGSEGV) opening an empty index, which a writer
/// killed before its first step leaves, so it is not asked to.
const INDEX_HEADER: u64 = 64;

/// The variables of one stream: its fields' (layout order) and its step variable; `None`
/// where no step holds one (a stream without frames).
#[derive(Debug)]
struct StreamVars {
    fields: Vec<Option<VarInfo>>,
    step: Option<VarInfo>,
}

/// The open file and its variables, used by one call at a time: a read sets the variable's
/// selection, then gets it.
#[derive(Debug)]
struct Open {
    file: BpReader,
    streams: Vec<StreamVars>,
}

/// Reads frames back through ADIOS2.
#[derive(Debug)]
struct Bp5Reader {
    path: PathBuf,
    open: Mutex<Open>,
}

fn bad(path: &Path, reason: String) -> Error {
    Error::BadOutput { path: path.to_path_buf(), reason }
}

/// An ADIOS2 failure reading `path` (the library not loading among them, which names
/// `WGPIPE_ADIOS2_LIB` and what to do).
fn adios2_err(path: &Path, message: String) -> Error {
    Error::Adios2 { engine: "BP5", path: path.to_path_buf(), message }
}

/// Errors unless ADIOS2 can open the directory: its index holds at least one step.
fn check_index(dir: &Path) -> Result<()> {
    let index = dir.join(BP5_INDEX);
    let len = std::fs::metadata(&index).map_err(|e| Error::io("cannot open", &index, e))?.len();
    if len <= INDEX_HEADER {
        return Err(bad(
            dir,
            format!(
                "its {BP5_INDEX} holds no step ({len} bytes): the run stopped before ADIOS2 stored its first frame, \
                 so there is nothing to read; run it again"
            ),
        ));
    }
    Ok(())
}

/// The text attribute `name`, or a [`Error::BadOutput`] saying it is missing.
fn text<'a>(dir: &Path, attrs: &'a BTreeMap<String, AttrValue>, name: &str) -> Result<&'a str> {
    match attrs.get(name) {
        Some(AttrValue::Text(t)) => Ok(t),
        _ => Err(bad(dir, format!("a BP5 output without the text attribute {name:?}"))),
    }
}

/// An integer attribute's value, if it has one.
fn unsigned(v: Option<&AttrValue>) -> Option<u64> {
    match v {
        Some(&AttrValue::Int(i)) => u64::try_from(i).ok(),
        Some(&AttrValue::UInt(u)) => Some(u),
        _ => None,
    }
}

/// The fields the `fields` attribute lists, checked.
fn fields(dir: &Path, attrs: &BTreeMap<String, AttrValue>) -> Result<Vec<FieldSpec>> {
    let json = text(dir, attrs, FIELDS_ATTR)?;
    let entries: Vec<FieldEntry> = serde_json::from_str(json)
        .map_err(|e| bad(dir, format!("its {FIELDS_ATTR} attribute is not a field list: {e}")))?;
    entries.iter().map(|f| f.to_spec(dir)).collect()
}

/// The user attributes of stream `name`: those named `name/KEY`, but for the sink's own
/// (`frames`, `complete`, ...) and a field's `FIELD/units` and `FIELD/long_name`.
fn stream_attributes(attrs: &BTreeMap<String, AttrValue>, name: &str, fields: &[FieldSpec]) -> Attributes {
    let prefix = format!("{name}/");
    let field_attr = |key: &str| {
        key.split_once('/')
            .is_some_and(|(f, a)| fields.iter().any(|spec| spec.name == f) && (a == "units" || a == "long_name"))
    };
    attrs
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix(&prefix)?, v)))
        .filter(|(k, _)| !RESERVED_STREAM_ATTRS.contains(k) && !field_attr(k))
        .map(|(k, v)| (k.to_owned(), v.clone()))
        .collect()
}

/// The run's user attributes: those not of a stream (`STREAM/...`) nor the sink's own.
fn run_attributes(attrs: &BTreeMap<String, AttrValue>, streams: &[&str]) -> Attributes {
    let of_stream = |k: &str| k.split_once('/').is_some_and(|(s, _)| streams.contains(&s));
    attrs
        .iter()
        .filter(|(k, _)| {
            !RESERVED_RUN_ATTRS.contains(&k.as_str()) && !SINK_RUN_ATTRS.contains(&k.as_str()) && !of_stream(k)
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The variable `name`, checked against what the layout says it holds: the ADIOS2 type of
/// `dtype` and `shape` (none for the step variable's value).
fn variable(dir: &Path, file: &BpReader, name: &str, ty: Type, shape: &[usize]) -> Result<Option<VarInfo>> {
    let Some(v) = file.variable(name).map_err(|m| adios2_err(dir, m))? else { return Ok(None) };
    if v.ty != ty || v.shape != shape {
        return Err(bad(
            dir,
            format!(
                "variable {name:?} is of ADIOS2 type {} and shape {:?}, its field is type {ty} and shape {shape:?}",
                v.ty, v.shape
            ),
        ));
    }
    Ok(Some(v))
}

/// A stream's variables and summary: the frames are the steps every variable holds (all of
/// a frame's variables are in one step, so they agree unless the file is damaged).
fn stream(
    dir: &Path,
    file: &BpReader,
    attrs: &BTreeMap<String, AttrValue>,
    name: &str,
    fields: &[FieldSpec],
) -> Result<(StreamVars, StreamSummary)> {
    let vars = fields
        .iter()
        .map(|f| variable(dir, file, &format!("{name}/{}", f.name), adios2_type(f.dtype), &f.shape))
        .collect::<Result<Vec<_>>>()?;
    let step = variable(dir, file, &format!("{name}/step"), ffi::TYPE_UINT64, &[])?;
    let steps = |v: &Option<VarInfo>| v.as_ref().map_or(0, |v| v.steps);
    let frames = vars.iter().map(steps).min().unwrap_or(0).min(steps(&step));
    let recorded = unsigned(attrs.get(&format!("{name}/frames")));
    let complete = unsigned(attrs.get(&format!("{name}/complete"))) == Some(1) && recorded == Some(frames);
    let summary = StreamSummary {
        name: name.to_owned(),
        attributes: stream_attributes(attrs, name, fields),
        frames,
        expected_frames: unsigned(attrs.get(&format!("{name}/expected_frames"))),
        complete,
    };
    Ok((StreamVars { fields: vars, step }, summary))
}

/// Opens the BP5 directory `dir` written by the ADIOS2 sink.
pub(crate) fn open(dir: &Path) -> Result<Output> {
    check_index(dir)?;
    let file = BpReader::open(&dir.to_string_lossy()).map_err(|m| adios2_err(dir, m))?;
    let attrs: BTreeMap<String, AttrValue> = file.attributes().map_err(|m| adios2_err(dir, m))?.into_iter().collect();
    if !matches!(attrs.get("format"), Some(AttrValue::Text(f)) if f == FORMAT) {
        return Err(bad(dir, format!("a BP5 output without the attribute format = {FORMAT:?}")));
    }
    let fields = fields(dir, &attrs)?;
    let names: Vec<&str> = text(dir, &attrs, "streams")?.split(',').filter(|s| !s.is_empty()).collect();
    let mut streams = Vec::with_capacity(names.len());
    let mut vars = Vec::with_capacity(names.len());
    for name in &names {
        let (v, s) = stream(dir, &file, &attrs, name, &fields)?;
        vars.push(v);
        streams.push(s);
    }
    Ok(Output {
        path: dir.to_path_buf(),
        format: OutputFormat::Adios2,
        attributes: run_attributes(&attrs, &names),
        complete: unsigned(attrs.get("complete")) == Some(1),
        reader: Box::new(Bp5Reader { path: dir.to_path_buf(), open: Mutex::new(Open { file, streams: vars }) }),
        fields,
        streams,
    })
}

impl Bp5Reader {
    /// Steps `first .. first + steps` of a variable, under the lock.
    fn read(
        &self,
        pick: impl FnOnce(&StreamVars) -> Option<&VarInfo>,
        stream: usize,
        first: u64,
        steps: u64,
    ) -> Result<Vec<u8>> {
        let mut open = self.open.lock().map_err(|_| adios2_err(&self.path, "an earlier read panicked".into()))?;
        let Open { file, streams } = &mut *open;
        let var = streams
            .get(stream)
            .and_then(pick)
            .ok_or_else(|| Error::NotFound(format!("a variable of stream {stream} in {}", self.path.display())))?;
        file.read(var, first, steps).map_err(|m| adios2_err(&self.path, m))
    }
}

impl Reader for Bp5Reader {
    fn read_field(&self, stream: usize, field: usize, index: u64) -> Result<Vec<u8>> {
        self.read(|s| s.fields.get(field)?.as_ref(), stream, index, 1)
    }

    fn steps(&self, stream: usize, frames: u64) -> Result<Vec<u64>> {
        if frames == 0 {
            return Ok(Vec::new());
        }
        let bytes = self.read(|s| s.step.as_ref(), stream, 0, frames)?;
        Ok(bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect())
    }
}
