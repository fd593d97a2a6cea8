//! A pipeline from Python before it starts: built, every check passed, the devices open,
//! nothing computed or created yet. Starting it gives a [`Run`].

use std::sync::{Arc, Mutex, PoisonError};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use wgpipe::Pipeline;
use wgpipe::storage::Sink;

use crate::errors::to_py;
use crate::layout::Layout;
use crate::run::Run;
use crate::sink::{Raised, take_raised};
use crate::tap::{TapSink, TapSlot};

/// Frames that may wait for `frames()` beyond the one Python holds: a small number, since
/// each is a frame of memory and the channel before the writer already buffers.
const TAP_DEPTH: usize = 2;

/// Where a prepared pipeline is.
enum Stage {
    Ready(Box<Pipeline>),
    Started,
    /// A resume found every stream complete: starting gives an empty report.
    NothingToDo,
}

/// A pipeline ready to start: checked, devices open, nothing computed or created yet.
#[pyclass(module = "wgpipe")]
pub struct Prepared {
    /// In a mutex: a pipeline moves between threads but is not shared by them, and Python
    /// objects may be.
    stage: Mutex<Stage>,
    /// Where the sink finds the channel to `frames()`, if one is opened before the start.
    slot: Arc<TapSlot>,
    /// The exception a Python sink raised.
    raised: Raised,
    /// Where the frames go, as the run's summary names it.
    outputs: String,
    /// What preparing found (a resume's streams), for Python to show.
    notes: Vec<String>,
    layout: Option<Py<Layout>>,
    labels: Vec<String>,
}

/// Builds a pipeline around `sink` decorated with the frame tap: `build` gets the decorated
/// sink and builds (every check of the pipeline runs here).
pub fn prepare(
    py: Python<'_>,
    sink: Box<dyn Sink>,
    raised: Raised,
    outputs: String,
    build: impl FnOnce(Box<dyn Sink>) -> wgpipe::Result<Pipeline> + Send,
) -> PyResult<Prepared> {
    let (sink, slot) = TapSink::new(sink);
    let pipeline = py.detach(|| build(Box::new(sink))).map_err(|e| to_py(py, e, take_raised(&raised)))?;
    let layout = Some(Py::new(py, Layout::from(pipeline.layout()))?);
    let labels = pipeline.gpus().iter().map(|g| g.label().to_owned()).collect();
    let stage = Mutex::new(Stage::Ready(Box::new(pipeline)));
    Ok(Prepared { stage, slot, raised, outputs, notes: Vec::new(), layout, labels })
}

impl Prepared {
    /// Nothing to run (a resume found every stream complete): starting gives an empty report.
    pub fn nothing(outputs: String, notes: Vec<String>) -> Self {
        let (slot, raised) = (Arc::default(), Raised::default());
        let stage = Mutex::new(Stage::NothingToDo);
        Prepared { stage, slot, raised, outputs, notes, layout: None, labels: Vec::new() }
    }

    /// The same, with `notes` to show.
    pub fn with_notes(mut self, notes: Vec<String>) -> Self {
        self.notes = notes;
        self
    }
}

#[pymethods]
impl Prepared {
    /// Starts the run on a thread of its own; with `frames`, every stored frame is also
    /// handed to the returned run (`Run.next_frame`).
    #[pyo3(signature = (frames = false))]
    fn start(&self, py: Python<'_>, frames: bool) -> PyResult<Run> {
        let stage = std::mem::replace(&mut *self.stage.lock().unwrap_or_else(PoisonError::into_inner), Stage::Started);
        let pipeline = match stage {
            Stage::Ready(pipeline) => *pipeline,
            Stage::NothingToDo => return Ok(Run::finished(self.outputs.clone())),
            Stage::Started => {
                return Err(PyRuntimeError::new_err("this pipeline was started already: build another one"));
            }
        };
        let tap = frames.then(|| self.slot.open(TAP_DEPTH));
        let layout = self.layout.as_ref().map(|l| l.clone_ref(py));
        Run::start(pipeline, layout, tap, Arc::clone(&self.raised), self.outputs.clone())
    }

    /// Where the frames go (the output's path, or the null sink).
    #[getter]
    fn outputs(&self) -> &str {
        &self.outputs
    }

    /// What preparing found, one sentence each (a resume's streams).
    #[getter]
    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }

    /// What every frame holds (None when there is nothing to run).
    #[getter]
    fn layout(&self, py: Python<'_>) -> Option<Py<Layout>> {
        self.layout.as_ref().map(|l| l.clone_ref(py))
    }

    /// The devices' labels.
    #[getter]
    fn devices(&self) -> Vec<String> {
        self.labels.clone()
    }
}
