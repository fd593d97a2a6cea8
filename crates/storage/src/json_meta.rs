//! The JSON spelling of fields and attributes, shared by the backends whose metadata is JSON
//! (raw's `run.json`, Zarr's `zarr.json` attributes), so that both describe a field and carry
//! a stream's parameters the same way.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::frame::DType;
use crate::schema::{AttrValue, Attributes, FieldSpec, MAX_RANK};
use crate::zfp::{Encoding, ZfpRate};

/// One field as listed in `run.json` and its own `<stream>.<field>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct FieldEntry {
    pub name: String,
    /// numpy's name, e.g. `float32`.
    pub dtype: String,
    /// numpy's type string, e.g. `<f4`: what `numpy.fromfile` takes.
    pub numpy_dtype: String,
    /// One frame's shape, C order; the data file is `[frames, *shape]`.
    pub shape: Vec<usize>,
    pub dims: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub units: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_name: Option<String>,
    pub frame_bytes: usize,
    /// `zfp:rate=R` when each frame of the field is stored as its ZFP fixed-rate stream
    /// (`frame_bytes` long, whole 64-bit words, the array without its axes of 1) instead of
    /// its values: `numpy.fromfile` does not read such a file, `zfpy` or wgpipe's reader do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
}

impl FieldEntry {
    /// The entry of a field of a checked layout.
    pub(crate) fn from_spec(spec: &FieldSpec) -> Self {
        FieldEntry {
            name: spec.name.clone(),
            dtype: spec.dtype.name().into(),
            numpy_dtype: spec.dtype.numpy_str().into(),
            shape: spec.shape.clone(),
            dims: spec.dims.clone(),
            units: spec.units.clone(),
            long_name: spec.long_name.clone(),
            frame_bytes: spec.bytes().unwrap_or_default(),
            encoding: match spec.encoding {
                Encoding::Zfp(rate) => Some(format!("zfp:rate={rate}")),
                _ => None,
            },
        }
    }

    /// The field this entry describes, checked: a known type, 0 to 3 axes with their names,
    /// and a byte count that matches (metadata is user-editable text).
    pub(crate) fn to_spec(&self, path: &Path) -> Result<FieldSpec> {
        let bad = |reason: String| Error::BadOutput { path: path.to_path_buf(), reason };
        let dtype: DType = self.numpy_dtype.parse().map_err(|_| {
            bad(format!("field {:?} has numpy_dtype {:?}, not one wgpipe writes", self.name, self.numpy_dtype))
        })?;
        let mut spec = FieldSpec::new(self.name.clone(), dtype, self.shape.clone()).with_dims(self.dims.clone());
        spec.units.clone_from(&self.units);
        spec.long_name.clone_from(&self.long_name);
        spec.encoding = match &self.encoding {
            None => Encoding::Values,
            Some(e) => match e.strip_prefix("zfp:rate=").and_then(|r| r.parse::<u32>().ok()).map(ZfpRate::new) {
                Some(Ok(rate)) => Encoding::Zfp(rate),
                _ => {
                    return Err(bad(format!(
                        "field {:?} has encoding {e:?}, not one wgpipe writes (zfp:rate=R)",
                        self.name
                    )));
                }
            },
        };
        if spec.shape.len() > MAX_RANK || spec.dims.len() != spec.shape.len() {
            return Err(bad(format!(
                "field {:?} has shape {:?} with axes {:?}: expected 0 to {MAX_RANK} axes, one name each",
                self.name, self.shape, self.dims
            )));
        }
        match spec.bytes() {
            Some(b) if b == self.frame_bytes && b > 0 => Ok(spec),
            _ => Err(bad(format!(
                "field {:?}: frame_bytes {} does not match {} (or the size overflows)",
                self.name,
                self.frame_bytes,
                spec.describe()
            ))),
        }
    }
}

/// Attributes as JSON values (non-finite floats become `null`, JSON has no NaN).
pub(crate) fn attrs_to_json(attrs: &Attributes) -> BTreeMap<String, Value> {
    attrs
        .iter()
        .map(|(k, v)| {
            let v = match v {
                AttrValue::Int(i) => Value::from(*i),
                AttrValue::UInt(u) => Value::from(*u),
                AttrValue::Float(f) => Value::from(*f),
                // JSON has no single precision: write the shortest decimal that reads back as
                // this f32 (`0.1`), not the widened f64 (`0.10000000149011612`).
                AttrValue::Float32(f) => f.to_string().parse::<f64>().map_or(Value::Null, Value::from),
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
                Value::Number(n) if n.is_u64() => AttrValue::UInt(n.as_u64().unwrap_or_default()),
                Value::Number(n) => AttrValue::Float(n.as_f64().unwrap_or(f64::NAN)),
                Value::String(s) => AttrValue::Text(s.clone()),
                Value::Null => AttrValue::Float(f64::NAN),
                other => AttrValue::Text(other.to_string()),
            };
            (k.clone(), v)
        })
        .collect()
}

/// The type of each attribute (`int64`, `uint64`, `float64`, `float32`, `string`), stored
/// beside [`attrs_to_json`]'s values where JSON's one number type would lose it: a kernel
/// parameter the GPU used as `f32` reads back as `f32`.
#[cfg(feature = "zarr")]
pub(crate) fn attr_types(attrs: &Attributes) -> BTreeMap<String, Value> {
    attrs
        .iter()
        .map(|(k, v)| {
            let t = match v {
                AttrValue::Int(_) => "int64",
                AttrValue::UInt(_) => "uint64",
                AttrValue::Float(_) => "float64",
                AttrValue::Float32(_) => "float32",
                AttrValue::Text(_) => "string",
            };
            (k.clone(), Value::from(t))
        })
        .collect()
}

/// [`attrs_from_json`] with the types [`attr_types`] recorded: `float32` values become
/// [`AttrValue::Float32`] again.
#[cfg(feature = "zarr")]
pub(crate) fn attrs_from_typed_json(map: &BTreeMap<String, Value>, types: &BTreeMap<String, Value>) -> Attributes {
    let mut attrs = attrs_from_json(map);
    for (k, v) in &mut attrs {
        let widened = match v {
            AttrValue::Float(f) => Some(*f),
            AttrValue::Int(i) => Some(*i as f64),
            _ => None,
        };
        if let Some(f) = widened
            && types.get(k).and_then(Value::as_str) == Some("float32")
        {
            *v = AttrValue::Float32(f as f32);
        }
    }
    attrs
}
