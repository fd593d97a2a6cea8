//! Reading an output back from Python, whatever sink wrote it (HDF5, Zarr, raw, ADIOS2 BP5),
//! through the same reader `wgpipe info` and `--resume` use: numpy arrays per stream and
//! field, as many frames as were stored completely (a killed run's file included).

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use numpy::PyArray1;
use pyo3::exceptions::{PyIndexError, PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PySlice, PyTuple};
use wgpipe::storage::{Output as RustOutput, StreamSummary, open_output};

use crate::errors::storage_error;
use crate::layout::{Field, attributes};

/// One stream of an output, as far as it was written.
#[pyclass(module = "wgpipe", frozen, get_all)]
pub struct StoredStream {
    /// The stream's name.
    name: String,
    /// Frames stored completely (after a crash: what survived).
    frames: u64,
    /// Frames it was meant to hold, when known.
    expected_frames: Option<u64>,
    /// Whether the run finished it with every expected frame.
    complete: bool,
}

impl From<&StreamSummary> for StoredStream {
    fn from(s: &StreamSummary) -> Self {
        StoredStream {
            name: s.name.clone(),
            frames: s.frames,
            expected_frames: s.expected_frames,
            complete: s.complete,
        }
    }
}

#[pymethods]
impl StoredStream {
    fn __repr__(&self) -> String {
        format!(
            "StoredStream('{}', frames={}, expected_frames={}, complete={})",
            self.name,
            self.frames,
            self.expected_frames.map_or("None".to_owned(), |n| n.to_string()),
            if self.complete { "True" } else { "False" }
        )
    }
}

/// An output opened for reading (the native half of `wgpipe.open`).
#[pyclass(module = "wgpipe", name = "NativeOutput")]
pub struct NativeOutput {
    /// `None` once closed. (In a mutex: the reader's files are used by one thread at a time.)
    output: Mutex<Option<RustOutput>>,
}

/// Opens the output at `path`: an HDF5 file, a Zarr store, a raw or an ADIOS2 BP5 directory.
#[pyfunction]
pub fn open_native(py: Python<'_>, path: PathBuf) -> PyResult<NativeOutput> {
    let output = py.detach(|| open_output(&path)).map_err(|e| storage_error(py, &e))?;
    Ok(NativeOutput { output: Mutex::new(Some(output)) })
}

impl NativeOutput {
    /// Calls `f` with the output, or raises `ValueError` once it was closed.
    fn with<T>(&self, f: impl FnOnce(&RustOutput) -> PyResult<T>) -> PyResult<T> {
        self.locked(f).unwrap_or_else(|| Err(closed()))
    }

    /// Calls `f` with the output; `None` once it was closed. Callable without the GIL.
    fn locked<T>(&self, f: impl FnOnce(&RustOutput) -> T) -> Option<T> {
        self.output.lock().unwrap_or_else(PoisonError::into_inner).as_ref().map(f)
    }
}

/// The error of a closed output.
fn closed() -> PyErr {
    PyValueError::new_err("the output was closed: open it again with wgpipe.open(path)")
}

/// The stream called `stream`, or `KeyError` naming those there are.
fn stream_index(out: &RustOutput, stream: &str) -> PyResult<usize> {
    out.stream_index(stream).ok_or_else(|| {
        let names: Vec<&str> = out.streams().iter().map(|s| s.name.as_str()).collect();
        PyKeyError::new_err(format!("no stream {stream:?}: the output holds {}", names.join(", ")))
    })
}

/// The field called `field`, or `KeyError` naming those there are.
fn field_index(out: &RustOutput, field: &str) -> PyResult<usize> {
    out.field_index(field).ok_or_else(|| {
        let names: Vec<&str> = out.fields().iter().map(|f| f.name.as_str()).collect();
        PyKeyError::new_err(format!("no field {field:?}: the output holds {}", names.join(", ")))
    })
}

/// Which frames `frames` selects of `stored`: all of them without a slice.
fn selected(frames: Option<&Bound<'_, PySlice>>, stored: u64) -> PyResult<Vec<u64>> {
    let Some(slice) = frames else { return Ok((0..stored).collect()) };
    let len = isize::try_from(stored).map_err(|_| PyIndexError::new_err("more frames than a slice can index"))?;
    let i = slice.indices(len)?;
    Ok((0..i.slicelength).map(|k| (i.start + k as isize * i.step) as u64).collect())
}

/// Each of `indices`' frames of field `f` of stream `s`, one after the other.
fn read_frames(out: &RustOutput, s: usize, f: usize, indices: &[u64]) -> wgpipe::storage::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(indices.len() * out.fields()[f].bytes().unwrap_or(0));
    for &i in indices {
        bytes.extend_from_slice(&out.read_field(s, f, i)?.bytes);
    }
    Ok(bytes)
}

#[pymethods]
impl NativeOutput {
    /// Where the output is.
    #[getter]
    fn path(&self) -> PyResult<PathBuf> {
        self.with(|out| Ok(out.path().to_owned()))
    }

    /// Which sink wrote it: `"hdf5"`, `"zarr"`, `"raw"` or `"adios2"`.
    #[getter]
    fn format(&self) -> PyResult<&'static str> {
        self.with(|out| Ok(out.format().sink_name()))
    }

    /// The fields of every frame.
    #[getter]
    fn fields(&self) -> PyResult<Vec<Field>> {
        self.with(|out| Ok(out.fields().iter().map(Field::from).collect()))
    }

    /// The streams, as far as they were written.
    #[getter]
    fn streams(&self) -> PyResult<Vec<StoredStream>> {
        self.with(|out| Ok(out.streams().iter().map(StoredStream::from).collect()))
    }

    /// Whether the run finished with every stream complete.
    #[getter]
    fn complete(&self) -> PyResult<bool> {
        self.with(|out| Ok(out.complete()))
    }

    /// Run-level metadata.
    #[getter]
    fn attributes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.with(|out| attributes(py, out.attributes()))
    }

    /// A stream's metadata (kernel parameters, seed, ...).
    fn stream_attributes<'py>(&self, py: Python<'py>, stream: &str) -> PyResult<Bound<'py, PyDict>> {
        self.with(|out| attributes(py, &out.streams()[stream_index(out, stream)?].attributes))
    }

    /// Frames `frames` (a slice; all by default) of `field` in `stream`, as one array shaped
    /// `(frames, *field_shape)`.
    #[pyo3(signature = (stream, field, frames = None))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        stream: &str,
        field: &str,
        frames: Option<&Bound<'py, PySlice>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (s, f, indices, dtype, shape) = self.with(|out| {
            let (s, f) = (stream_index(out, stream)?, field_index(out, field)?);
            let indices = selected(frames, out.streams()[s].frames)?;
            let spec = &out.fields()[f];
            let shape = [vec![indices.len()], spec.shape.clone()].concat();
            Ok((s, f, indices, spec.dtype.numpy_str(), shape))
        })?;
        let read = py.detach(|| self.locked(|out| read_frames(out, s, f, &indices)));
        let bytes = read.ok_or_else(closed)?.map_err(|e| storage_error(py, &e))?;
        // The bytes move into numpy without a copy, then are viewed with the field's type.
        let raw = PyArray1::from_vec(py, bytes);
        raw.call_method1("view", (dtype,))?.call_method1("reshape", (PyTuple::new(py, shape)?,))
    }

    /// The simulation step of every stored frame of `stream`.
    fn steps(&self, py: Python<'_>, stream: &str) -> PyResult<Vec<u64>> {
        let s = self.with(|out| stream_index(out, stream))?;
        let steps = py.detach(|| self.locked(|out| out.steps(s)));
        steps.ok_or_else(closed)?.map_err(|e| storage_error(py, &e))
    }

    /// Closes the output's files.
    fn close(&self) {
        drop(self.output.lock().unwrap_or_else(PoisonError::into_inner).take());
    }
}
