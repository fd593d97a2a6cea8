//! What a run's frames hold, as Python sees it: the fields (name, numpy dtype, shape, axis
//! names), the streams, the attributes. Frames, sinks and outputs all describe their fields
//! with [`Field`].

use std::ops::Range;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use wgpipe::storage::{AttrValue, Attributes, Encoding, FieldSpec, StreamInfo, StreamLayout};

/// One array of every frame: name, numpy dtype (`"<f4"`, ...), shape of one frame, axis
/// names, units and long name where known, and `encoding` (`"zfp:rate=8"`) when the field
/// arrives encoded on the device (`output.compress_on = "device"`): frames then give its
/// stream as a 1-D uint8 array, not its values.
#[pyclass(module = "wgpipe", frozen, get_all)]
#[derive(Debug, Clone)]
pub struct Field {
    name: String,
    dtype: String,
    shape: Vec<usize>,
    dims: Vec<String>,
    units: Option<String>,
    long_name: Option<String>,
    encoding: Option<String>,
}

impl Field {
    /// Whether frames hold this field encoded (a byte stream), not as values.
    pub fn encoded(&self) -> bool {
        self.encoding.is_some()
    }
}

impl From<&FieldSpec> for Field {
    fn from(f: &FieldSpec) -> Self {
        Field {
            name: f.name.clone(),
            dtype: f.dtype.numpy_str().to_owned(),
            shape: f.shape.clone(),
            dims: f.dims.clone(),
            units: f.units.clone(),
            long_name: f.long_name.clone(),
            encoding: match f.encoding {
                Encoding::Zfp(rate) => Some(format!("zfp:rate={rate}")),
                _ => None,
            },
        }
    }
}

#[pymethods]
impl Field {
    fn __repr__(&self) -> String {
        format!("Field('{}', dtype='{}', shape={:?})", self.name, self.dtype, self.shape)
    }
}

/// One stream of a run (a device's simulation, or one run of a batch).
#[pyclass(module = "wgpipe", frozen)]
pub struct Stream {
    info: StreamInfo,
}

#[pymethods]
impl Stream {
    /// The stream's name (an HDF5 group, a raw file prefix).
    #[getter]
    fn name(&self) -> &str {
        &self.info.name
    }

    /// Frames the stream will hold, when known.
    #[getter]
    fn expected_frames(&self) -> Option<u64> {
        self.info.expected_frames
    }

    /// Frames an output being resumed already holds of it (0 for a new stream).
    #[getter]
    fn kept_frames(&self) -> u64 {
        self.info.kept_frames
    }

    /// Its metadata (kernel parameters, seed, ...).
    #[getter]
    fn attributes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        attributes(py, &self.info.attributes)
    }

    fn __repr__(&self) -> String {
        let expected = self.info.expected_frames.map_or("None".to_owned(), |n| n.to_string());
        format!("Stream('{}', expected_frames={expected})", self.info.name)
    }
}

/// What a sink's `begin` receives: the fields of every frame, the streams, the run's
/// attributes.
#[pyclass(module = "wgpipe", frozen)]
pub struct Layout {
    layout: StreamLayout,
}

impl From<&StreamLayout> for Layout {
    fn from(layout: &StreamLayout) -> Self {
        Layout { layout: layout.clone() }
    }
}

#[pymethods]
impl Layout {
    /// Every array of a frame, in the order of the frame's bytes.
    #[getter]
    fn fields(&self) -> Vec<Field> {
        self.layout.fields.iter().map(Field::from).collect()
    }

    /// The streams; a frame's `stream_index` indexes this list.
    #[getter]
    fn streams(&self) -> Vec<Stream> {
        self.layout.streams.iter().map(|s| Stream { info: s.clone() }).collect()
    }

    /// Run-level metadata (the config, adapters, wgpipe's version, ...).
    #[getter]
    fn attributes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        attributes(py, &self.layout.attributes)
    }

    fn __repr__(&self) -> String {
        let fields: Vec<&str> = self.layout.fields.iter().map(|f| f.name.as_str()).collect();
        let streams: Vec<&str> = self.layout.streams.iter().map(|s| s.name.as_str()).collect();
        format!("Layout(fields={}, streams={})", py_list(&fields), py_list(&streams))
    }
}

/// `names` as Python prints a list of str: `['u', 'v']` (stream and field names need no
/// escaping: letters, digits, `-`, `_` and `.` only).
pub fn py_list(names: &[impl AsRef<str>]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("'{}'", n.as_ref())).collect();
    format!("[{}]", quoted.join(", "))
}

/// Attributes as a Python dict (ints, floats, strings).
pub fn attributes<'py>(py: Python<'py>, attributes: &Attributes) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in attributes {
        match v {
            AttrValue::Int(i) => d.set_item(k, i)?,
            AttrValue::UInt(u) => d.set_item(k, u)?,
            AttrValue::Float(f) => d.set_item(k, f)?,
            AttrValue::Float32(f) => d.set_item(k, f)?,
            AttrValue::Text(t) => d.set_item(k, t)?,
            // AttrValue is non-exhaustive: a kind added later shows as its debug text.
            #[allow(unreachable_patterns, reason = "AttrValue is non_exhaustive")]
            other => d.set_item(k, format!("{other:?}"))?,
        }
    }
    Ok(d)
}

/// Where each field lies in a frame's bytes, and the names of the streams: what turns a
/// frame's bytes into numpy arrays. Shared by every frame of a run.
#[derive(Debug)]
pub struct FrameLayout {
    /// Per field: its description and its byte range in a frame.
    pub fields: Vec<(Field, Range<usize>)>,
    /// Stream names, by index.
    pub streams: Vec<String>,
}

impl FrameLayout {
    /// The frame layout of `layout`.
    pub fn of(layout: &StreamLayout) -> Arc<Self> {
        let fields = layout
            .fields
            .iter()
            .enumerate()
            .map(|(i, f)| (Field::from(f), layout.field_range(i).unwrap_or(0..0)))
            .collect();
        Arc::new(FrameLayout { fields, streams: layout.streams.iter().map(|s| s.name.clone()).collect() })
    }

    /// The field called `name`, with its byte range.
    pub fn field(&self, name: &str) -> Option<&(Field, Range<usize>)> {
        self.fields.iter().find(|(f, _)| f.name == name)
    }

    /// The field names, in layout order.
    pub fn names(&self) -> Vec<String> {
        self.fields.iter().map(|(f, _)| f.name.clone()).collect()
    }

    /// The name of stream `i`.
    pub fn stream(&self, i: usize) -> String {
        self.streams.get(i).cloned().unwrap_or_default()
    }
}

impl Field {
    /// The field's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// numpy's type string (`"<f4"`).
    pub fn dtype(&self) -> &str {
        &self.dtype
    }

    /// Shape of one frame's array.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
}

/// An attribute's value from a Python int, float or str (a bool as an int).
pub fn attr_value(key: &str, v: &Bound<'_, PyAny>) -> PyResult<AttrValue> {
    if let Ok(i) = v.extract::<i64>() {
        Ok(AttrValue::Int(i))
    } else if let Ok(u) = v.extract::<u64>() {
        Ok(AttrValue::UInt(u))
    } else if let Ok(f) = v.extract::<f64>() {
        Ok(AttrValue::Float(f))
    } else if let Ok(s) = v.extract::<String>() {
        Ok(AttrValue::Text(s))
    } else {
        Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "attribute {key:?}: {} is not an int, float or str",
            v.get_type().name()?
        )))
    }
}
