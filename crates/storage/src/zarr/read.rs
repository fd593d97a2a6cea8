//! The Zarr half of [`crate::open_output`]: a store written by [`crate::ZarrSink`].
//!
//! The structure (groups, shapes, attributes) is read from the `zarr.json` documents
//! directly; the frames through zarrs, which decodes whatever codecs the arrays use.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use zarrs::array::{Array, ArrayBytes, ArraySubset};
use zarrs::filesystem::FilesystemStore;

use super::schema::{FORMAT, METADATA_FILE, Root, reserved};
use crate::error::{Error, Result};
use crate::json_meta::{FieldEntry, attrs_from_typed_json};
use crate::read::{Output, OutputFormat, Reader, StreamSummary};
use crate::validate::STEPS_NAME;
use crate::zfp::Encoding;

/// Whether `path` holds a Zarr store (a directory with a root `zarr.json`).
pub(crate) fn holds(path: &Path) -> bool {
    path.join(METADATA_FILE).is_file()
}

/// The `zarr.json` of the node at `node` (relative to the store `dir`), parsed.
fn metadata(dir: &Path, node: &str) -> Result<serde_json::Map<String, Value>> {
    let path = dir.join(node).join(METADATA_FILE);
    let text = std::fs::read(&path).map_err(|e| Error::io("cannot open", &path, e))?;
    match serde_json::from_slice(&text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(bad(&path, "it is not a JSON object".into())),
        Err(e) => Err(bad(&path, format!("it is not JSON: {e}"))),
    }
}

fn bad(path: &Path, reason: String) -> Error {
    Error::BadOutput { path: path.to_path_buf(), reason }
}

/// The `attributes` of a node's metadata.
fn attributes(meta: &serde_json::Map<String, Value>) -> BTreeMap<String, Value> {
    match meta.get("attributes") {
        Some(Value::Object(a)) => a.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        _ => BTreeMap::new(),
    }
}

/// A node's user attributes (its own keys left out) with their recorded types.
fn user_attributes(attrs: &BTreeMap<String, Value>) -> crate::schema::Attributes {
    let types = match attrs.get("attribute_types") {
        Some(Value::Object(t)) => t.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        _ => BTreeMap::new(),
    };
    let user: BTreeMap<String, Value> =
        attrs.iter().filter(|(k, _)| !reserved(k)).map(|(k, v)| (k.clone(), v.clone())).collect();
    attrs_from_typed_json(&user, &types)
}

/// Reads the root group's record of a store this sink wrote.
pub(crate) fn read_root(dir: &Path) -> Result<Root> {
    let path = dir.join(METADATA_FILE);
    let attrs = attributes(&metadata(dir, "")?);
    if attrs.get("format").and_then(Value::as_str) != Some(FORMAT) {
        return Err(bad(&path, format!("a Zarr store without the root attribute format = {FORMAT:?}")));
    }
    let fields: Vec<FieldEntry> = attrs
        .get("fields")
        .cloned()
        .map(serde_json::from_value)
        .transpose()
        .map_err(|e| bad(&path, format!("its fields attribute is not a field list: {e}")))?
        .unwrap_or_default();
    let streams: Vec<String> = attrs
        .get("streams")
        .cloned()
        .map(serde_json::from_value)
        .transpose()
        .map_err(|e| bad(&path, format!("its streams attribute is not a list of names: {e}")))?
        .unwrap_or_default();
    Ok(Root {
        created: attrs.get("created").and_then(Value::as_str).unwrap_or_default().to_owned(),
        fields,
        streams,
        complete: attrs.get("complete").and_then(Value::as_bool).unwrap_or(false),
        attributes: user_attributes(&attrs),
    })
}

/// Frames an array holds: the first entry of its `shape`.
fn array_frames(dir: &Path, node: &str) -> Result<u64> {
    let meta = metadata(dir, node)?;
    meta.get("shape")
        .and_then(|s| s.get(0))
        .and_then(Value::as_u64)
        .ok_or_else(|| bad(&dir.join(node).join(METADATA_FILE), "an array without a shape along the frame axis".into()))
}

/// One stream's arrays, opened once: its fields (layout order) and its steps.
#[derive(Debug)]
struct StreamArrays {
    fields: Vec<Array<FilesystemStore>>,
    steps: Array<FilesystemStore>,
}

/// Reads frames back through zarrs.
#[derive(Debug)]
struct ZarrReader {
    dir: PathBuf,
    streams: Vec<StreamArrays>,
    /// How each field's chunks were made (the root's field list says): ZFP streams encoded
    /// before the sink, or values; both read back as values.
    encodings: Vec<Encoding>,
}

/// The decoded bytes of chunk `indices` of the array at `node` (relative to the store `dir`).
pub(super) fn chunk_bytes(dir: &Path, node: &str, indices: &[u64]) -> Result<Vec<u8>> {
    let store = Arc::new(FilesystemStore::new(dir).map_err(|e| zarr_err(dir, "cannot open store", node, e))?);
    let array = open_array(dir, &store, node)?;
    let bytes: ArrayBytes<'static> =
        array.retrieve_chunk(indices).map_err(|e| zarr_err(dir, "cannot read a chunk of", node, e))?;
    Ok(bytes.into_fixed().map_err(|e| zarr_err(dir, "cannot read a chunk of", node, e))?.into_owned())
}

/// Opens the array at `node` (relative to the store `dir`).
fn open_array(dir: &Path, store: &Arc<FilesystemStore>, node: &str) -> Result<Array<FilesystemStore>> {
    Array::open(store.clone(), &format!("/{node}")).map_err(|e| zarr_err(dir, "cannot open array", node, e))
}

fn zarr_err(dir: &Path, action: &str, node: &str, e: impl std::fmt::Display) -> Error {
    Error::Zarr { action: action.to_owned(), path: dir.join(node), message: e.to_string() }
}

impl ZarrReader {
    /// The bytes of `frames` frames from `first` of `array`, of a frame shaped `shape`.
    fn read(&self, array: &Array<FilesystemStore>, first: u64, frames: u64, shape: &[usize]) -> Result<Vec<u8>> {
        let node = array.path().as_str().trim_start_matches('/');
        let ranges: Vec<std::ops::Range<u64>> =
            std::iter::once(first..first + frames).chain(shape.iter().map(|&d| 0..d as u64)).collect();
        let bytes: ArrayBytes<'static> = array
            .retrieve_array_subset(&ArraySubset::new_with_ranges(&ranges))
            .map_err(|e| zarr_err(&self.dir, "cannot read", node, e))?;
        let fixed = bytes.into_fixed().map_err(|e| zarr_err(&self.dir, "cannot read", node, e))?;
        Ok(fixed.into_owned())
    }
}

impl Reader for ZarrReader {
    fn read_field(&self, stream: usize, field: usize, index: u64) -> Result<Vec<u8>> {
        let array = &self.streams[stream].fields[field];
        let shape: Vec<usize> = array.shape()[1..].iter().map(|&d| d as usize).collect();
        self.read(array, index, 1, &shape)
    }

    fn stored_encoding(&self, field: usize) -> Encoding {
        self.encodings.get(field).copied().unwrap_or_default()
    }

    fn steps(&self, stream: usize, frames: u64) -> Result<Vec<u64>> {
        let bytes = self.read(&self.streams[stream].steps, 0, frames, &[])?;
        Ok(bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect())
    }
}

/// Opens the Zarr store `dir` written by the Zarr sink.
pub(crate) fn open(dir: &Path) -> Result<Output> {
    let root = read_root(dir)?;
    let root_path = dir.join(METADATA_FILE);
    let mut fields = root.fields.iter().map(|f| f.to_spec(&root_path)).collect::<Result<Vec<_>>>()?;
    let encodings = fields.iter().map(|f| f.encoding).collect();
    for f in &mut fields {
        f.encoding = Encoding::Values;
    }
    let mut streams = Vec::with_capacity(root.streams.len());
    for name in &root.streams {
        let attrs = attributes(&metadata(dir, name)?);
        // A stream holds the frames of its shortest array: steps grows last (see the sink).
        let mut frames = array_frames(dir, &format!("{name}/{STEPS_NAME}"))?;
        for f in &fields {
            frames = frames.min(array_frames(dir, &format!("{name}/{}", f.name))?);
        }
        let recorded = attrs.get("frames").and_then(Value::as_u64);
        streams.push(StreamSummary {
            name: name.clone(),
            attributes: user_attributes(&attrs),
            frames,
            expected_frames: attrs.get("expected_frames").and_then(Value::as_u64),
            complete: attrs.get("complete").and_then(Value::as_bool).unwrap_or(false) && recorded == Some(frames),
        });
    }
    let store = FilesystemStore::new(dir).map_err(|e| Error::Zarr {
        action: "cannot open store".into(),
        path: dir.to_path_buf(),
        message: e.to_string(),
    })?;
    let store = Arc::new(store);
    let arrays = root
        .streams
        .iter()
        .map(|name| {
            let fields = fields
                .iter()
                .map(|f| open_array(dir, &store, &format!("{name}/{}", f.name)))
                .collect::<Result<Vec<_>>>()?;
            Ok(StreamArrays { fields, steps: open_array(dir, &store, &format!("{name}/{STEPS_NAME}"))? })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Output {
        path: dir.to_path_buf(),
        format: OutputFormat::Zarr,
        fields,
        attributes: root.attributes,
        complete: root.complete,
        reader: Box::new(ZarrReader { dir: dir.to_path_buf(), streams: arrays, encodings }),
        streams,
    })
}
