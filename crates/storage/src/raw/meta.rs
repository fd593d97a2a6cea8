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
use crate::frame::DType;
use crate::json_meta::FieldEntry;
use crate::schema::{AXIS_ORDER, FieldSpec};

/// Value of the `format` key, which marks a directory as a raw output.
pub(crate) const FORMAT: &str = "wgpipe-raw";
/// Version of the layout described here; bumped on incompatible changes.
pub(crate) const FORMAT_VERSION: u32 = 2;
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
    /// Frames stored, once the run closed; `null` while it runs (a killed run's metadata then
    /// claims no count: the data files' lengths say what they hold).
    pub frames: Option<u64>,
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
    pub byte_order: String,
    pub axis_order: String,
    pub fields: Vec<FieldEntry>,
    pub streams: Vec<RunStream>,
    pub attributes: BTreeMap<String, Value>,
    pub complete: bool,
}

/// `run.json` of format version 1 (before fields had their own type and shape): every field
/// `float32` of one 2-D shape. Still read, and appended to as version 2.
#[derive(Debug, Clone, Deserialize)]
struct RunMetaV1 {
    wgpipe_storage_version: String,
    created: String,
    numpy_dtype: String,
    shape: [usize; 2],
    fields: Vec<String>,
    streams: Vec<RunStream>,
    attributes: BTreeMap<String, Value>,
    complete: bool,
}

impl RunMetaV1 {
    fn upgrade(self, path: &Path) -> Result<RunMeta> {
        if self.numpy_dtype != DType::F32.numpy_str() {
            return Err(Error::BadOutput {
                path: path.to_path_buf(),
                reason: format!("format 1 stores {}, not {:?}", DType::F32.numpy_str(), self.numpy_dtype),
            });
        }
        let fields = self
            .fields
            .iter()
            .map(|name| FieldEntry::from_spec(&FieldSpec::new(name.clone(), DType::F32, self.shape)))
            .collect();
        Ok(RunMeta {
            format: FORMAT.into(),
            format_version: FORMAT_VERSION,
            wgpipe_storage_version: self.wgpipe_storage_version,
            created: self.created,
            byte_order: "little".into(),
            axis_order: AXIS_ORDER.into(),
            fields,
            streams: self.streams,
            attributes: self.attributes,
            complete: self.complete,
        })
    }
}

/// Reads `run.json` of any format version this crate knows (1 and 2), as version 2.
pub(crate) fn read_run(path: &Path) -> Result<RunMeta> {
    let bad = |reason: String| Error::BadOutput { path: path.to_path_buf(), reason };
    let value: Value = read_json(path)?;
    match value.get("format").and_then(Value::as_str) {
        Some(FORMAT) => {}
        other => return Err(bad(format!("format {other:?} is not {FORMAT:?}"))),
    }
    let parse_err = |e: serde_json::Error| bad(format!("invalid metadata: {e}"));
    match value.get("format_version").and_then(Value::as_u64) {
        Some(1) => serde_json::from_value::<RunMetaV1>(value).map_err(parse_err)?.upgrade(path),
        Some(v) if v == u64::from(FORMAT_VERSION) => serde_json::from_value(value).map_err(parse_err),
        other => Err(bad(format!(
            "format_version {other:?} is not one this wgpipe-storage reads (1 to {FORMAT_VERSION}): \
             read it with the wgpipe that wrote it, or update"
        ))),
    }
}

/// `<stream>.<field>.json`: self-contained description of one data file, so a single file
/// can be copied away and still be understood.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct FieldMeta {
    pub format: String,
    pub format_version: u32,
    pub data_file: String,
    pub steps_file: String,
    pub field: String,
    pub field_index: usize,
    pub dtype: String,
    pub numpy_dtype: String,
    pub byte_order: String,
    pub axis_order: String,
    pub shape: Vec<usize>,
    pub dims: Vec<String>,
    pub frame_bytes: usize,
    /// `zfp:rate=R` when the data file holds each frame as its ZFP stream (see `run.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    pub stream: String,
    pub stream_index: usize,
    pub stream_attributes: BTreeMap<String, Value>,
    pub run_attributes: BTreeMap<String, Value>,
    pub expected_frames: Option<u64>,
    /// Frames stored, once the run closed; `null` while it runs (a killed run's metadata then
    /// claims no count: the data files' lengths say what they hold).
    pub frames: Option<u64>,
    pub complete: bool,
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
