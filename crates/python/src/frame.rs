//! A frame in Python: a mapping of field name to numpy array that views the pipeline's pooled
//! buffer without a copy. The buffer goes back to the pool when the frame and every array
//! taken from it are gone; a released frame refuses to give arrays, and arrays taken before
//! keep the buffer alive, so no array ever reads memory the pipeline reuses.

use std::sync::Arc;

use numpy::PyArray1;
use numpy::ndarray::ArrayView1;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use wgpipe::storage::{Frame as RustFrame, PooledFrame};

use crate::errors::ReleasedFrameError;
use crate::layout::{Field, FrameLayout, py_list};

/// The bytes of one frame, held for as long as Python holds the frame or an array viewing
/// it. Frozen: the bytes never move or change while numpy arrays point into them.
#[pyclass(module = "wgpipe", frozen)]
pub struct FrameBuffer {
    frame: PooledFrame,
}

/// One frame of a run: a read-only mapping of field name to numpy array, with the frame's
/// `index`, `step` and `stream`. The arrays view the pipeline's buffer (no copy) and are
/// read-only; `copy()` gives a frame of your own. Release a frame with `release()` (or
/// `with frame:`) to give its buffer back before Python drops it.
#[pyclass(module = "wgpipe", name = "Frame")]
pub struct PyFrame {
    buffer: Option<Py<FrameBuffer>>,
    layout: Arc<FrameLayout>,
    stream: usize,
    index: u64,
    step: u64,
}

impl PyFrame {
    /// A Python frame owning `frame` (its buffer goes back to the pool when dropped).
    pub fn new(py: Python<'_>, frame: PooledFrame, layout: Arc<FrameLayout>) -> PyResult<Self> {
        let (stream, index, step) = (frame.stream, frame.index, frame.step);
        let buffer = Py::new(py, FrameBuffer { frame })?;
        Ok(PyFrame { buffer: Some(buffer), layout, stream, index, step })
    }

    /// The buffer, or [`ReleasedFrameError`] once released.
    fn buffer(&self) -> PyResult<&Py<FrameBuffer>> {
        self.buffer.as_ref().ok_or_else(|| {
            ReleasedFrameError::new_err(format!(
                "frame {} of stream {} was released: its buffer went back to the pipeline; keep a frame with \
                 frame.copy() before releasing it",
                self.index,
                self.layout.stream(self.stream)
            ))
        })
    }

    /// The array of `field`, viewing the buffer.
    fn array<'py>(&self, py: Python<'py>, field: &(Field, std::ops::Range<usize>)) -> PyResult<Bound<'py, PyAny>> {
        let owner = self.buffer()?.bind(py);
        let (spec, range) = field;
        let bytes = owner.get().frame.data.get(range.clone()).unwrap_or_default();
        let view = ArrayView1::from(bytes);
        // SAFETY: `owner` is a frozen FrameBuffer that owns these bytes and never changes or
        // moves them (its PooledFrame is not mutated after construction); numpy keeps `owner`
        // alive as the array's base for as long as the array (or any view of it) exists, and
        // the bytes go back to the pool only when `owner` is dropped.
        #[expect(unsafe_code, reason = "a numpy array viewing the frame's buffer, without a copy")]
        let raw = unsafe { PyArray1::<u8>::borrow_from_array(&view, owner.clone().into_any()) };
        let kwargs = PyDict::new(py);
        kwargs.set_item("write", false)?;
        raw.call_method("setflags", (), Some(&kwargs))?;
        // A field encoded on the device is its stream of bytes.
        if spec.encoded() {
            return Ok(raw.into_any());
        }
        let shape = PyTuple::new(py, spec.shape())?;
        raw.call_method1("view", (spec.dtype(),))?.call_method1("reshape", (shape,))
    }

    /// The field called `key`, or `KeyError` naming the fields there are.
    fn field(&self, key: &str) -> PyResult<&(Field, std::ops::Range<usize>)> {
        self.layout.field(key).ok_or_else(|| {
            pyo3::exceptions::PyKeyError::new_err(format!(
                "{key:?}: the frame has fields {}",
                self.layout.names().join(", ")
            ))
        })
    }
}

#[pymethods]
impl PyFrame {
    /// The array of field `key` (read-only, viewing the frame's buffer).
    fn __getitem__<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Bound<'py, PyAny>> {
        let field = self.field(key)?;
        self.array(py, field)
    }

    fn __contains__(&self, key: &str) -> bool {
        self.layout.field(key).is_some()
    }

    fn __len__(&self) -> usize {
        self.layout.fields.len()
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        PyTuple::new(py, self.layout.names())?.try_iter().map(Bound::into_any)
    }

    /// The field names, in the order of the frame's bytes.
    fn keys(&self) -> Vec<String> {
        self.layout.names()
    }

    /// The arrays, in field order.
    fn values<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.layout.fields.iter().map(|f| self.array(py, f)).collect()
    }

    /// (name, array) pairs, in field order.
    fn items<'py>(&self, py: Python<'py>) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
        self.layout.fields.iter().map(|f| Ok((f.0.name().to_owned(), self.array(py, f)?))).collect()
    }

    /// The array of field `key`, or `default` when the frame has no such field.
    #[pyo3(signature = (key, default = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &str,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.layout.field(key) {
            Some(f) => self.array(py, f).map(Some),
            None => Ok(default),
        }
    }

    /// The fields (name, dtype, shape), in the order of the frame's bytes.
    #[getter]
    fn fields(&self) -> Vec<Field> {
        self.layout.fields.iter().map(|(f, _)| f.clone()).collect()
    }

    /// Frame number within its stream, from 0.
    #[getter]
    fn index(&self) -> u64 {
        self.index
    }

    /// Simulation step the frame was taken after.
    #[getter]
    fn step(&self) -> u64 {
        self.step
    }

    /// The stream's name (`stream0`, a batch run's name).
    #[getter]
    fn stream(&self) -> String {
        self.layout.stream(self.stream)
    }

    /// The stream's index in the run's layout.
    #[getter]
    fn stream_index(&self) -> usize {
        self.stream
    }

    /// Bytes of every field together.
    #[getter]
    fn nbytes(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.buffer()?.bind(py).get().frame.data.len())
    }

    /// Whether the frame was released (its arrays can no longer be taken).
    #[getter]
    fn released(&self) -> bool {
        self.buffer.is_none()
    }

    /// A frame of your own: the same fields, copied out of the pipeline's buffer (writable
    /// arrays come from `frame["v"].copy()`).
    fn copy(&self, py: Python<'_>) -> PyResult<PyFrame> {
        let frame = &self.buffer()?.bind(py).get().frame;
        let owned = RustFrame::new(frame.stream, frame.index, frame.step, frame.data.clone());
        PyFrame::new(py, PooledFrame::unpooled(owned), Arc::clone(&self.layout))
    }

    /// Gives the buffer back to the pipeline now (arrays taken before keep it until they go).
    fn release(&mut self) {
        self.buffer = None;
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __exit__(
        &mut self,
        _kind: Option<Bound<'_, PyAny>>,
        _value: Option<Bound<'_, PyAny>>,
        _traceback: Option<Bound<'_, PyAny>>,
    ) {
        self.release();
    }

    fn __repr__(&self) -> String {
        let state = if self.buffer.is_none() { ", released" } else { "" };
        format!(
            "Frame(stream='{}', index={}, step={}, fields={}{state})",
            self.layout.stream(self.stream),
            self.index,
            self.step,
            py_list(&self.layout.names())
        )
    }
}
