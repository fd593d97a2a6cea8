//! A Python object as a sink: anything with `begin(layout)`, `write(frame)` and
//! `finish(outcome)`. wgpipe drives it through the same protocol checks as its own sinks
//! ([`Checked`]), on the writer thread with the GIL held for each call; frames reach it
//! without a copy. An exception fails the run, every frame accepted before kept, and comes
//! back to the caller as the `__cause__` of a `wgpipe.SinkError`.

use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::PyAnyMethods;
use wgpipe::storage::{
    Backend, Checked, Error, Fields, Frame, Outcome, PooledFrame, Result, StreamLayout, frame_checksum,
};

use crate::frame::PyFrame;
use crate::layout::{FrameLayout, Layout};

/// The exception a Python sink raised, kept for the error the run ends with.
pub type Raised = Arc<Mutex<Option<PyErr>>>;

/// Takes the exception kept in `raised`, if any.
pub fn take_raised(raised: &Raised) -> Option<PyErr> {
    raised.lock().unwrap_or_else(PoisonError::into_inner).take()
}

/// The methods a Python sink must have.
const METHODS: [&str; 3] = ["begin", "write", "finish"];

/// A Python sink, driven through wgpipe's protocol checks.
pub struct PySink {
    object: Py<PyAny>,
    /// Its class's name, for messages.
    name: String,
    /// Where frames' fields lie, once begun.
    layout: Option<Arc<FrameLayout>>,
    raised: Raised,
}

impl PySink {
    /// `object` as a sink checked by the protocol, or `TypeError` naming the methods it lacks;
    /// also returns where its exception will be kept.
    pub fn checked(object: &Bound<'_, PyAny>) -> PyResult<(Checked<PySink>, Raised)> {
        let name = object.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "sink".to_owned());
        let missing: Vec<&str> =
            METHODS.into_iter().filter(|m| !object.getattr(*m).is_ok_and(|a| a.is_callable())).collect();
        if !missing.is_empty() {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "{name} is not a sink: it has no method {}; a sink has begin(layout), write(frame) and \
                 finish(outcome)",
                missing.join(", ")
            )));
        }
        let raised = Raised::default();
        let sink = PySink { object: object.clone().unbind(), name, layout: None, raised: Arc::clone(&raised) };
        Ok((Checked::from(sink), raised))
    }

    /// Calls `method(arg)` on the object with the GIL held; an exception is kept and becomes
    /// the run's error.
    fn call(&self, method: &str, arg: impl for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, PyAny>>) -> Result<()> {
        Python::attach(|py| {
            let called = arg(py).and_then(|a| self.object.bind(py).call_method1(method, (a,)));
            called.map(drop).map_err(|e| {
                let message = format!("{method}() raised {}", describe(py, &e));
                *self.raised.lock().unwrap_or_else(PoisonError::into_inner) = Some(e);
                Error::Sink { sink: self.name.clone(), message }
            })
        })
    }

    /// Hands `frame` to the object's `write`.
    fn write_frame(&self, frame: PooledFrame) -> Result<()> {
        let Some(layout) = &self.layout else {
            return Err(Error::Usage("write called before begin"));
        };
        self.call("write", |py| Ok(Bound::new(py, PyFrame::new(py, frame, Arc::clone(layout))?)?.into_any()))
    }
}

/// The exception's type, message and traceback, as Python prints them.
fn describe(py: Python<'_>, e: &PyErr) -> String {
    let formatted = py.import("traceback").and_then(|tb| {
        let lines = tb.call_method1("format_exception", (e.get_type(py), e.value(py), e.traceback(py)))?;
        lines.extract::<Vec<String>>()
    });
    match formatted {
        Ok(lines) => lines.concat().trim_end().to_owned(),
        Err(_) => e.to_string(),
    }
}

/// What a Python sink's `finish` learns: whether the run failed, frames stored per stream,
/// and which streams are complete.
#[pyclass(module = "wgpipe", frozen, get_all)]
pub struct SinkOutcome {
    /// A write failed or the run failed: no stream is complete.
    failed: bool,
    /// Frames stored, per stream in layout order.
    frames: Vec<u64>,
    /// Whether each stream holds every frame it expected and nothing failed.
    complete: Vec<bool>,
}

impl SinkOutcome {
    fn of(outcome: &Outcome<'_>) -> Self {
        let frames = outcome.frames().to_vec();
        let complete = frames.iter().enumerate().map(|(i, &n)| outcome.stream_complete(i, n)).collect();
        SinkOutcome { failed: outcome.failed(), frames, complete }
    }
}

#[pymethods]
impl SinkOutcome {
    fn __repr__(&self) -> String {
        let complete: Vec<&str> = self.complete.iter().map(|&c| if c { "True" } else { "False" }).collect();
        let failed = if self.failed { "True" } else { "False" };
        format!("SinkOutcome(failed={failed}, frames={:?}, complete=[{}])", self.frames, complete.join(", "))
    }
}

impl Backend for PySink {
    fn begin(&mut self, layout: &StreamLayout) -> Result<()> {
        self.call("begin", |py| Ok(Bound::new(py, Layout::from(layout))?.into_any()))?;
        self.layout = Some(FrameLayout::of(layout));
        Ok(())
    }

    /// A borrowed frame (another decorator keeps the frame itself): Python gets a copy.
    fn write(&mut self, frame: &Frame, _fields: Fields<'_>) -> Result<Option<u64>> {
        self.write_frame(PooledFrame::unpooled(frame.clone()))?;
        Ok(None)
    }

    fn write_pooled(&mut self, frame: PooledFrame, _fields: &[Range<usize>]) -> Result<u64> {
        let checksum = frame_checksum(&frame);
        self.write_frame(frame)?;
        Ok(checksum)
    }

    fn finish(&mut self, outcome: &Outcome<'_>) -> Result<()> {
        let outcome = SinkOutcome::of(outcome);
        self.call("finish", |py| Ok(Bound::new(py, outcome)?.into_any()))
    }
}
