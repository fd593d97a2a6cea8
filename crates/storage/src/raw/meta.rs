//! The raw sink's metadata files: what they hold and how they are (re)written.
//!
//! Shared by the writer ([`crate::RawSink`]) and the reader ([`crate::open_output`]) so the
//! two cannot drift apart. Key names are documented in the crate README.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::schema::{AttrValue, Attributes};

/// Value of the `format` key, which marks a directory as a raw output.
pub(crate) const FORMAT: &str = "wgpipe-raw";
/// Version of the layout described here; bumped on incompatible changes.
pub(crate) const FORMAT_VERSION: u32 = 1;
/// Name of the run-level metadata file in the output directory.
pub(crate) const RUN_FILE: &str = "run.json";

/// File names of one stream's data and metadata.
pub(crate) fn data_file(stream: &str, field: &str) -> String {
    format!("{stream}.{field}.bin")
}
/// Per-field metadata file, beside its data file.
pub(crate) fn meta_file(stream: &str, field: &str) -> String {
    format!("{stream}.{field}.json")
}
/// Little-endian u64 simulation steps, one per frame.
pub(crate) fn steps_file(stream: &str) -> String {
    format!("{stream}.steps.bin")
}

/// One stream as listed in `run.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RunStream {
    pub name: String,
    pub data_files: Vec<String>,
    pub steps_file: String,
    pub expected_frames: Option<u64>,
    pub frames: u64,
    pub complete: bool,
    pub attributes: BTreeMap<String, Value>,
}

/// `run.json`: everything needed to read the directory back.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RunMeta {
    pub format: String,
    pub format_version: u32,
    pub wgpipe_storage_version: String,
    pub created: String,
    pub dtype: String,
    pub numpy_dtype: String,
    pub byte_order: String,
    pub shape: [usize; 2],
    pub fields: Vec<String>,
    pub streams: Vec<RunStream>,
    pub attributes: BTreeMap<String, Value>,
    pub complete: bool,
}

/// `<stream>.<field>.json`: self-contained description of one data file, so a single file
/// can be copied away and still be understood.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct FieldMeta {
    pub format: String,
    pub format_version: u32,
    pub data_file: String,
    pub steps_file: String,
    pub dtype: String,
    pub numpy_dtype: String,
    pub byte_order: String,
    pub shape: [usize; 2],
    pub frame_bytes: usize,
    pub field: String,
    pub field_index: usize,
    pub stream: String,
    pub stream_index: usize,
    pub stream_attributes: BTreeMap<String, Value>,
    pub run_attributes: BTreeMap<String, Value>,
    pub expected_frames: Option<u64>,
    pub frames: u64,
    pub complete: bool,
}

/// Attributes as JSON values (non-finite floats become `null`, JSON has no NaN).
pub(crate) fn attrs_to_json(attrs: &Attributes) -> BTreeMap<String, Value> {
    attrs
        .iter()
        .map(|(k, v)| {
            let v = match v {
                AttrValue::Int(i) => Value::from(*i),
                AttrValue::Float(f) => Value::from(*f),
                AttrValue::Text(t) => Value::from(t.as_str()),
            };
            (k.clone(), v)
        })
        .collect()
}

/// JSON values back to attributes; anything but numbers and strings becomes its JSON text.
pub(crate) fn attrs_from_json(map: &BTreeMap<String, Value>) -> Attributes {
    map.iter()
        .map(|(k, v)| {
            let v = match v {
                Value::Number(n) if n.is_i64() => AttrValue::Int(n.as_i64().unwrap_or_default()),
                Value::Number(n) => AttrValue::Float(n.as_f64().unwrap_or(f64::NAN)),
                Value::String(s) => AttrValue::Text(s.clone()),
                Value::Null => AttrValue::Float(f64::NAN),
                other => AttrValue::Text(other.to_string()),
            };
            (k.clone(), v)
        })
        .collect()
}

/// Writes `value` as pretty JSON to `path` atomically (temporary file, then rename), so a
/// crash leaves either the old or the new metadata, never half of one.
pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T, fsync: bool) -> Result<()> {
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_vec_pretty(value)
        .map_err(|e| Error::BadOutput { path: path.to_path_buf(), reason: format!("cannot encode metadata: {e}") })?;
    let mut f = fs::File::create(&tmp).map_err(|e| Error::io("cannot create", &tmp, e))?;
    f.write_all(&text)
        .and_then(|()| f.write_all(b"\n"))
        .and_then(|()| if fsync { f.sync_all() } else { Ok(()) })
        .map_err(|e| Error::io("cannot write", &tmp, e))?;
    drop(f);
    fs::rename(&tmp, path).map_err(|e| Error::io("cannot replace", path, e))
}

/// Reads `path` as JSON metadata of type `T`.
pub(crate) fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T> {
    let text = fs::read(path).map_err(|e| Error::io("cannot read", path, e))?;
    serde_json::from_slice(&text)
        .map_err(|e| Error::BadOutput { path: path.to_path_buf(), reason: format!("invalid metadata: {e}") })
}
