//! A pipeline from Python while it runs: on a thread of its own, while Python waits for it,
//! iterates its frames or does other work (the GIL is released whenever Python waits). Every
//! method takes `&self`, so that any Python thread may ask for progress or stop the run
//! while another waits for it.

use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, bounded};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use wgpipe::{Error as RunnerError, Pipeline, Progress, RunReport, StopHandle};

use crate::errors::to_py;
use crate::frame::PyFrame;
use crate::layout::{FrameLayout, Layout};
use crate::report::Report;
use crate::sink::{Raised, take_raised};
use crate::tap::{Next, Tap};

/// How long one wait lasts before it looks again (at the result another thread received, at
/// Python's signal handlers: Ctrl-C).
const STEP: Duration = Duration::from_millis(50);

/// How a run ended: its report, or its error as the Python exception (made once, so that
/// asking twice raises the same).
enum Ended {
    Done(RunReport),
    /// Stopped by `stop()` or Ctrl-C: the report, and the `Interrupted` it raises.
    Stopped(RunReport, PyErr),
    Failed(PyErr),
}

/// A running pipeline: progress, stop, the frames as they are stored, and the result.
#[pyclass(module = "wgpipe")]
pub struct Run {
    /// Where the run's thread sends its result; `None` for a run that had nothing to do.
    result: Option<Receiver<wgpipe::Result<RunReport>>>,
    ended: Mutex<Option<Ended>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    progress: Arc<Progress>,
    stop: StopHandle,
    tap: Option<Arc<Tap>>,
    layout: Arc<FrameLayout>,
    python_layout: Option<Py<Layout>>,
    labels: Vec<String>,
    streams: Vec<String>,
    io_buffer: usize,
    raised: Raised,
    outputs: String,
}

impl Run {
    /// Starts `pipeline` (whose layout Python sees as `python_layout`) on a thread of its
    /// own; its stored frames go to `tap`, if given.
    pub fn start(
        pipeline: Pipeline,
        python_layout: Option<Py<Layout>>,
        tap: Option<Arc<Tap>>,
        raised: Raised,
        outputs: String,
    ) -> PyResult<Self> {
        let labels = pipeline.gpus().iter().map(|g| g.label().to_owned()).collect();
        let streams = pipeline.layout().streams.iter().map(|s| s.name.clone()).collect();
        let (layout, progress) = (FrameLayout::of(pipeline.layout()), pipeline.progress());
        let (stop, io_buffer) = (pipeline.stop_handle(), pipeline.io_buffer());
        let (done_tx, done_rx) = bounded(1);
        let thread = std::thread::Builder::new()
            .name("wgpipe-run".to_owned())
            .spawn(move || {
                // The receiver lives as long as the Run: a send cannot fail while anyone waits.
                let _ = done_tx.send(pipeline.run());
            })
            .map_err(|e| PyRuntimeError::new_err(format!("cannot start the run's thread: {e}")))?;
        Ok(Run {
            result: Some(done_rx),
            ended: Mutex::new(None),
            thread: Mutex::new(Some(thread)),
            progress,
            stop,
            tap,
            layout,
            python_layout,
            labels,
            streams,
            io_buffer,
            raised,
            outputs,
        })
    }

    /// A run that had nothing to do: ended at once with an empty report.
    pub fn finished(outputs: String) -> Self {
        Run {
            result: None,
            ended: Mutex::new(Some(Ended::Done(RunReport::default()))),
            thread: Mutex::new(None),
            progress: Arc::new(Progress::new(0, 0)),
            stop: StopHandle::default(),
            tap: None,
            layout: Arc::new(FrameLayout { fields: Vec::new(), streams: Vec::new() }),
            python_layout: None,
            labels: Vec::new(),
            streams: Vec::new(),
            io_buffer: 0,
            raised: Raised::default(),
            outputs,
        }
    }

    fn is_ended(&self) -> bool {
        self.ended.lock().unwrap_or_else(PoisonError::into_inner).is_some()
    }

    /// Waits up to `timeout` (forever with `None`) for the run to end, the GIL released, in
    /// steps, so that a result another thread received is seen. Whether it ended.
    fn wait_ended(&self, py: Python<'_>, timeout: Option<Duration>) -> bool {
        let Some(rx) = &self.result else { return true };
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            if self.is_ended() {
                return true;
            }
            let step = deadline.map_or(STEP, |d| d.saturating_duration_since(Instant::now()).min(STEP));
            match py.detach(|| rx.recv_timeout(step)) {
                Ok(result) => {
                    self.end(py, result);
                    return true;
                }
                Err(RecvTimeoutError::Disconnected) if !self.is_ended() => {
                    let lost = RunnerError::Invalid("the run's thread ended without a result".to_owned());
                    self.end(py, Err(lost));
                    return true;
                }
                Err(_) if deadline.is_some_and(|d| Instant::now() >= d) => return self.is_ended(),
                Err(_) => {}
            }
        }
    }

    /// Records how the run ended, once its thread is joined.
    fn end(&self, py: Python<'_>, result: wgpipe::Result<RunReport>) {
        if let Some(t) = self.thread.lock().unwrap_or_else(PoisonError::into_inner).take() {
            // The thread sent its result as its last act.
            let _ = py.detach(|| t.join());
        }
        let ended = match result {
            Ok(report) => Ended::Done(report),
            Err(RunnerError::Interrupted { report }) => {
                let err = to_py(py, RunnerError::Interrupted { report: report.clone() }, None);
                Ended::Stopped(*report, err)
            }
            Err(e) => Ended::Failed(to_py(py, e, take_raised(&self.raised))),
        };
        *self.ended.lock().unwrap_or_else(PoisonError::into_inner) = Some(ended);
    }

    /// The run's report once it ended, or its error as a Python exception; a run stopped by
    /// [`Run::stop`] gives its report when `stopped_ok`.
    fn outcome(&self, py: Python<'_>, stopped_ok: bool) -> PyResult<Report> {
        self.wait_ended(py, None);
        match &*self.ended.lock().unwrap_or_else(PoisonError::into_inner) {
            Some(Ended::Done(report)) => Ok(Report::from(report.clone())),
            Some(Ended::Stopped(report, _)) if stopped_ok => Ok(Report::from(report.clone())),
            Some(Ended::Stopped(_, err) | Ended::Failed(err)) => Err(err.clone_ref(py)),
            None => Err(PyRuntimeError::new_err("the run has no result yet")),
        }
    }
}

#[pymethods]
impl Run {
    /// Waits up to `timeout` seconds (forever with None) for the run to end, the GIL released;
    /// whether it ended.
    #[pyo3(signature = (timeout = None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let timeout = timeout
            .map(Duration::try_from_secs_f64)
            .transpose()
            .map_err(|e| PyValueError::new_err(format!("timeout: {e}: give seconds >= 0, or None")))?;
        Ok(self.wait_ended(py, timeout))
    }

    /// Asks the run to stop: the devices finish the frame in hand, every frame produced is
    /// written, the output closed.
    fn stop(&self) {
        self.stop.stop();
    }

    /// Stops handing frames to the iterator (the run goes on storing every frame).
    fn close_frames(&self) {
        if let Some(tap) = &self.tap {
            tap.close();
        }
    }

    /// The report; raises the run's error (a Python sink's exception as its cause). With
    /// `stopped_ok`, a run ended by `stop()` gives its report instead of raising.
    #[pyo3(signature = (stopped_ok = false))]
    fn report(&self, py: Python<'_>, stopped_ok: bool) -> PyResult<Report> {
        self.outcome(py, stopped_ok)
    }

    /// The report if the run ended with one (finished or stopped), None if it failed; waits
    /// for the end. For cleaning up after another exception without raising this one.
    fn report_if_any(&self, py: Python<'_>) -> Option<Report> {
        self.outcome(py, true).ok()
    }

    /// The next stored frame: waits for it with the GIL released, running Python's signal
    /// handlers every 50 ms (Ctrl-C raises KeyboardInterrupt here). None when no more will
    /// come: the run ended (its error, if it failed, is raised then) or frames were closed.
    fn next_frame(&self, py: Python<'_>) -> PyResult<Option<PyFrame>> {
        let Some(tap) = &self.tap else {
            return Err(PyRuntimeError::new_err("this run was started without frames: start it with frames=True"));
        };
        loop {
            match py.detach(|| tap.next(STEP)) {
                Next::Frame(frame) => return PyFrame::new(py, frame, Arc::clone(&self.layout)).map(Some),
                Next::Waiting => py.check_signals()?,
                Next::Ended => {
                    self.outcome(py, true)?;
                    return Ok(None);
                }
            }
        }
    }

    /// Counts so far: frames computed and written, bytes, per device and per stream.
    fn progress<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let p = self.progress.snapshot();
        let d = PyDict::new(py);
        d.set_item("computed", p.computed)?;
        d.set_item("written", p.written)?;
        d.set_item("bytes", p.bytes)?;
        d.set_item("total", p.total_frames)?;
        d.set_item("finished_devices", p.finished_devices)?;
        d.set_item("devices", p.devices.iter().map(|d| (d.computed, d.written, d.bytes)).collect::<Vec<_>>())?;
        d.set_item("streams", p.streams)?;
        Ok(d)
    }

    /// What every frame holds, as a sink's `begin` receives it (None when nothing ran).
    #[getter]
    fn layout(&self, py: Python<'_>) -> Option<Py<Layout>> {
        self.python_layout.as_ref().map(|l| l.clone_ref(py))
    }

    /// The devices' labels.
    #[getter]
    fn devices(&self) -> Vec<String> {
        self.labels.clone()
    }

    /// The streams' names.
    #[getter]
    fn streams(&self) -> Vec<String> {
        self.streams.clone()
    }

    /// The channel's capacity between the devices and the writer (frames).
    #[getter]
    fn io_buffer(&self) -> usize {
        self.io_buffer
    }

    /// Where the frames go.
    #[getter]
    fn outputs(&self) -> &str {
        &self.outputs
    }

    /// Whether the run ended.
    #[getter]
    fn done(&self, py: Python<'_>) -> bool {
        self.wait_ended(py, Some(Duration::ZERO))
    }
}

impl Drop for Run {
    /// A run dropped while running (its Python object collected) is stopped and waited for,
    /// so that the output is closed before the interpreter goes on.
    fn drop(&mut self) {
        let thread = self.thread.get_mut().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(t) = thread {
            self.stop.stop();
            if let Some(tap) = &self.tap {
                tap.close();
            }
            // Without the GIL: a Python sink on the run's thread may be waiting for it. (While
            // the interpreter shuts down, the thread is left to end on its own.)
            let _ = Python::try_attach(|py| py.detach(|| t.join()));
        }
    }
}
