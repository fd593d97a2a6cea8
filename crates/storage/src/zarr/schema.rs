//! The one writer of a Zarr output's structure, and the names the reader looks for.
//!
//! ```text
//! OUT/zarr.json                  root group: run attributes, format, fields, streams, complete
//! OUT/STREAM/zarr.json           one group per stream: its attributes, frames, complete
//! OUT/STREAM/FIELD/zarr.json     one array per field, [frame, *dims], one frame per chunk
//! OUT/STREAM/steps/zarr.json     the simulation step of every frame, uint64 [frame]
//! ```
//!
//! Every array names its axes (`dimension_names`), so xarray opens a stream's group as a
//! dataset with `frame`, `z`, `y`, `x` dimensions; the attributes the HDF5 sink writes are
//! here too (a stream's parameters, with their types in `attribute_types`; a field's `units`
//! and `long_name`; `complete`).

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value};
#[cfg(feature = "zarr-zfp")]
use zarrs::array::codec::array_to_bytes::zfpy::ZfpyCodec;
use zarrs::array::codec::{BloscCodec, BloscCompressionLevel, BloscCompressor, BloscShuffleMode, GzipCodec, ZstdCodec};
use zarrs::array::{Array, ArrayBuilder, BytesToBytesCodecTraits, FillValue};
use zarrs::group::GroupBuilder;
use zarrs::storage::WritableStorageTraits;

use super::store::AtomicDirStore;

use crate::error::{Error, Result, is_disk_full};
use crate::frame::DType;
use crate::json_meta::{FieldEntry, attr_types, attrs_to_json};
use crate::options::Compression;
use crate::schema::{AXIS_ORDER, Attributes, FieldSpec, StreamInfo};
use crate::validate::{RESERVED_RUN_ATTRS, RESERVED_STREAM_ATTRS, STEPS_NAME};
use crate::zfp::Encoding;

/// Value of the root `format` attribute, which marks a store as written by this sink.
pub(crate) const FORMAT: &str = "wgpipe-zarr";
/// Version of the structure described here; bumped on incompatible changes.
pub(crate) const FORMAT_VERSION: u64 = 1;
/// Steps per chunk of the steps array: one small file rewritten per frame.
pub(crate) const STEPS_CHUNK: u64 = 1024;
/// The metadata document of every group and array.
pub(crate) const METADATA_FILE: &str = "zarr.json";

/// Attributes only this sink writes, beyond those every sink writes and every layout is
/// refused ([`RESERVED_RUN_ATTRS`], [`RESERVED_STREAM_ATTRS`]).
const ZARR_KEYS: [&str; 3] = ["format_version", "streams", "attribute_types"];

/// Whether `key` is one of the attributes this sink writes itself (a user attribute of that
/// name is not stored, and not read back as one).
pub(crate) fn reserved(key: &str) -> bool {
    RESERVED_RUN_ATTRS.contains(&key) || RESERVED_STREAM_ATTRS.contains(&key) || ZARR_KEYS.contains(&key)
}

/// The Zarr path of a stream's group, a field's array, the steps array.
pub(crate) fn group_path(stream: &str) -> String {
    format!("/{stream}")
}
pub(crate) fn array_path(stream: &str, array: &str) -> String {
    format!("/{stream}/{array}")
}

/// What the root group records.
#[derive(Debug, Clone)]
pub(crate) struct Root {
    pub created: String,
    pub fields: Vec<FieldEntry>,
    /// Stream names, in stream order (a frame's `stream` indexes the run's part of it).
    pub streams: Vec<String>,
    pub attributes: Attributes,
    pub complete: bool,
}

/// `attributes` as JSON, with their types, leaving out the names this sink owns.
fn user_attributes(attributes: &Attributes) -> Map<String, Value> {
    let mut map: Map<String, Value> = attrs_to_json(attributes).into_iter().filter(|(k, _)| !reserved(k)).collect();
    let types: Map<String, Value> = attr_types(attributes).into_iter().filter(|(k, _)| !reserved(k)).collect();
    map.insert("attribute_types".into(), Value::Object(types));
    map
}

/// Writes the root group's metadata (replacing it atomically).
pub(crate) fn write_root(store: &Arc<AtomicDirStore>, root: &Root) -> Result<()> {
    let mut attrs = user_attributes(&root.attributes);
    attrs.insert("format".into(), FORMAT.into());
    attrs.insert("format_version".into(), FORMAT_VERSION.into());
    attrs.insert("wgpipe_storage_version".into(), env!("CARGO_PKG_VERSION").into());
    attrs.insert("created".into(), root.created.clone().into());
    attrs.insert("axis_order".into(), AXIS_ORDER.into());
    let fields = serde_json::to_value(&root.fields).map_err(|e| zerr(store, "cannot encode the fields of", "/", e))?;
    attrs.insert("fields".into(), fields);
    attrs.insert("streams".into(), root.streams.clone().into());
    attrs.insert("complete".into(), root.complete.into());
    write_group(store, "/", attrs)
}

/// What a stream's group records.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamState {
    /// Its position among the store's streams.
    pub index: usize,
    /// Frames stored, once it finishes; `None` while it runs (a killed run's group then
    /// claims no count: its arrays' shapes say what it holds).
    pub frames: Option<u64>,
    pub complete: bool,
}

/// Writes stream `s`'s group metadata (replacing it atomically).
pub(crate) fn write_stream(store: &Arc<AtomicDirStore>, s: &StreamInfo, state: StreamState) -> Result<()> {
    let mut attrs = user_attributes(&s.attributes);
    attrs.insert("stream_index".into(), (state.index as u64).into());
    if let Some(e) = s.expected_frames {
        attrs.insert("expected_frames".into(), e.into());
    }
    if let Some(n) = state.frames {
        attrs.insert("frames".into(), n.into());
    }
    attrs.insert("complete".into(), state.complete.into());
    write_group(store, &group_path(&s.name), attrs)
}

fn write_group(store: &Arc<AtomicDirStore>, path: &str, attrs: Map<String, Value>) -> Result<()> {
    let group = GroupBuilder::new()
        .attributes(attrs)
        .build(store.clone(), path)
        .map_err(|e| zerr(store, "cannot describe", path, e))?;
    group.store_metadata().map_err(|e| store_err(store, "cannot write the metadata of", path, e))
}

/// Zarr's name of an element type (the same as numpy's).
pub(crate) fn data_type(dtype: DType) -> &'static str {
    dtype.name()
}

/// The fill value (what a reader sees where no chunk was written): zero, in the type's bytes.
fn fill_value(dtype: DType) -> FillValue {
    FillValue::new(vec![0; dtype.size()])
}

/// The bytes-to-bytes codecs of `compression` for elements of `dtype`.
fn codecs(compression: Compression, dtype: DType) -> Result<Vec<Arc<dyn BytesToBytesCodecTraits>>> {
    let invalid = |what: String| Error::InvalidOptions(format!("compression {compression}: {what}"));
    let blosc = |cname: BloscCompressor, level: u8| -> Result<Arc<dyn BytesToBytesCodecTraits>> {
        let clevel =
            BloscCompressionLevel::try_from(level).map_err(|l| invalid(format!("level {l} is out of range")))?;
        let codec = BloscCodec::new(cname, clevel, None, BloscShuffleMode::Shuffle, Some(dtype.size()))
            .map_err(|e| invalid(e.to_string()))?;
        Ok(Arc::new(codec))
    };
    Ok(match compression {
        Compression::None => Vec::new(),
        Compression::Deflate(level) => {
            vec![Arc::new(GzipCodec::new(u32::from(level)).map_err(|e| invalid(e.to_string()))?)]
        }
        Compression::Zstd(level) => vec![Arc::new(ZstdCodec::new(i32::from(level), false))],
        Compression::BloscLz4(level) => vec![blosc(BloscCompressor::LZ4, level)?],
        Compression::BloscZstd(level) => vec![blosc(BloscCompressor::Zstd, level)?],
        // An array-to-bytes codec, not one of these: see `field_array`.
        Compression::Zfp(_) | Compression::ZfpRate(_) => Vec::new(),
    })
}

/// How a stream's field arrays are chunked and compressed.
#[derive(Debug, Clone)]
pub(crate) struct ArrayPlan {
    pub compression: Compression,
    /// Frames per shard; 1: no sharding, one chunk file per frame.
    pub shard_frames: u64,
    /// A chunk's extent within a frame, by field name: an MPI rank's block (the largest
    /// block's part of the field), so that every rank writes whole chunks of its own; a field
    /// not named is one chunk a frame (every field of a serial store, and reductions of the
    /// whole grid in a block store).
    pub frame_chunks: std::collections::BTreeMap<String, Vec<u64>>,
}

/// The array of `field` in stream `stream`, holding `frames` frames, its axes named
/// `dimension_names` (the frame axis first; see [`crate::dimensions`]): chunks of one frame,
/// or shards of `plan.shard_frames` frames of one-frame inner chunks. Not yet stored.
pub(crate) fn field_array(
    store: &Arc<AtomicDirStore>,
    stream: &str,
    field: &FieldSpec,
    dimension_names: Vec<String>,
    plan: &ArrayPlan,
    frames: u64,
) -> Result<Array<AtomicDirStore>> {
    let path = array_path(stream, &field.name);
    let frame_shape: Vec<u64> = field.shape.iter().map(|&d| d as u64).collect();
    let shape: Vec<u64> = std::iter::once(frames).chain(frame_shape.iter().copied()).collect();
    // A rank's block is the chunk of the fields split into blocks; others are whole (`ranks.rs`).
    let within = plan.frame_chunks.get(&field.name).cloned().unwrap_or_else(|| frame_shape.clone());
    let chunk: Vec<u64> = std::iter::once(plan.shard_frames).chain(within.iter().copied()).collect();
    let mut b = ArrayBuilder::new(shape, chunk, data_type(field.dtype), fill_value(field.dtype));
    // A field that arrives as ZFP streams is in the `zfpy` chunks they are (`sink.rs`).
    let compression = match field.encoding {
        Encoding::Zfp(rate) => Compression::ZfpRate(rate),
        Encoding::Values => plan.compression,
    };
    match (compression, field.dtype) {
        // ZFP replaces the `bytes` codec (it turns values into bytes itself): the `zfpy` codec,
        // numcodecs' layout, which zarr-python reads with numcodecs' `numcodecs.zfpy`. Floats
        // only; other element types are stored as they are.
        #[cfg(feature = "zarr-zfp")]
        (Compression::Zfp(tolerance), DType::F32 | DType::F64) => {
            b.array_to_bytes_codec(Arc::new(ZfpyCodec::new_fixed_accuracy(tolerance.get())));
        }
        #[cfg(feature = "zarr-zfp")]
        (Compression::ZfpRate(rate), DType::F32 | DType::F64) => {
            b.array_to_bytes_codec(Arc::new(ZfpyCodec::new_fixed_rate(f64::from(rate.bits()))));
        }
        // Refused before any store exists (`Compression::check_available_in_zarr`).
        #[cfg(not(feature = "zarr-zfp"))]
        (Compression::Zfp(_) | Compression::ZfpRate(_), DType::F32 | DType::F64) => {
            return Err(Error::InvalidOptions(
                "the Zarr ZFP codec is not in this build (cargo feature `zarr-zfp`)".into(),
            ));
        }
        (compression, dtype) => {
            b.bytes_to_bytes_codecs(codecs(compression, dtype)?);
        }
    }
    if plan.shard_frames > 1 {
        b.subchunk_shape(std::iter::once(1).chain(within.iter().copied()).collect::<Vec<u64>>());
    }
    b.dimension_names(Some(dimension_names));
    let mut attrs = Map::new();
    if let Some(u) = &field.units {
        attrs.insert("units".into(), u.clone().into());
    }
    if let Some(l) = &field.long_name {
        attrs.insert("long_name".into(), l.clone().into());
    }
    b.attributes(attrs);
    b.build(store.clone(), &path).map_err(|e| zerr(store, "cannot describe", &path, e))
}

/// The steps array of stream `stream`, holding `frames` steps along the frame axis
/// `frame_dim`. Not yet stored.
pub(crate) fn steps_array(
    store: &Arc<AtomicDirStore>,
    stream: &str,
    frame_dim: &str,
    frames: u64,
) -> Result<Array<AtomicDirStore>> {
    let path = array_path(stream, STEPS_NAME);
    ArrayBuilder::new(vec![frames], vec![STEPS_CHUNK], "uint64", FillValue::new(vec![0u8; 8]))
        .dimension_names(Some([frame_dim]))
        .build(store.clone(), &path)
        .map_err(|e| zerr(store, "cannot describe", &path, e))
}

/// Field specs of the root's `fields`, checked.
pub(crate) fn field_entries(fields: &[FieldSpec]) -> Vec<FieldEntry> {
    fields.iter().map(FieldEntry::from_spec).collect()
}

/// Stores the ZFP `stream` of a frame of shape `shape` (the chunk's extent without its frame
/// axis) as chunk `indices` of `array`, at `rate`: the chunk numcodecs' `zfpy` codec holds, zfp's
/// header before the blocks ([`crate::ZfpRate::zfpy_chunk`]), replaced atomically as every chunk.
pub(crate) fn store_zfpy_chunk(
    store: &AtomicDirStore,
    array: &Array<AtomicDirStore>,
    indices: &[u64],
    (rate, shape): (crate::ZfpRate, &[usize]),
    stream: &[u8],
) -> Result<()> {
    let node = array.path().as_str();
    // `check_encoded_fields` refused the shapes zfp's header cannot describe.
    let chunk = rate
        .zfpy_chunk(stream, shape)
        .ok_or_else(|| zerr(store, "cannot write frame to", node, "zfp's header cannot describe its shape"))?;
    store.set(&array.chunk_key(indices), chunk.into()).map_err(|e| store_err(store, "cannot write frame to", node, e))
}

/// The store's path of the node at `node` (a Zarr path, `/` the root).
pub(crate) fn node_path(store: &AtomicDirStore, node: &str) -> PathBuf {
    store.root().join(node.trim_start_matches('/'))
}

/// A zarrs error about the node at `node`, naming its directory.
pub(crate) fn zerr(store: &AtomicDirStore, action: &str, node: &str, e: impl std::fmt::Display) -> Error {
    Error::Zarr { action: action.to_owned(), path: node_path(store, node), message: e.to_string() }
}

/// A failed write to the store: a full disk becomes [`Error::DiskFull`] (needing `needed`
/// bytes: 0 when unknown), anything else names the node.
pub(crate) fn store_err(store: &AtomicDirStore, action: &str, node: &str, e: impl std::fmt::Display) -> Error {
    match store.take_error() {
        Some((path, source)) if is_disk_full(&source) => Error::DiskFull { path, needed: 0, source },
        Some((path, source)) => Error::Io { action: "cannot write", path, source },
        None => zerr(store, action, node, e),
    }
}
