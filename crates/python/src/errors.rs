//! The exception classes Python users catch, and the one mapping from wgpipe's errors to
//! them: every error a call can raise goes through [`to_py`], so a kind of failure always
//! becomes the same class, with the same attributes.

use pyo3::IntoPyObjectExt;
use pyo3::exceptions::{PyException, PyKeyboardInterrupt};
use pyo3::prelude::*;
use pyo3::types::PyList;
use wgpipe::compute::Error as ComputeError;
use wgpipe::config::{ConfigError as RustConfigError, Origin};
use wgpipe::storage::Error as StoreError;
use wgpipe::{Error as RunnerError, RunReport};

use crate::report::Report;

pyo3::create_exception!(wgpipe, Error, PyException, "Every error wgpipe raises derives from this class.");
pyo3::create_exception!(
    wgpipe,
    ConfigError,
    Error,
    "A bad run configuration. `key` names the setting, `file` and `line` where it was set (None when it \
     came from an override or a default); the message says what to do."
);
pyo3::create_exception!(
    wgpipe,
    KernelError,
    Error,
    "A WGSL kernel that cannot be read or does not validate: `file`, `line` and `column` locate the problem \
     (None where naga could not)."
);
pyo3::create_exception!(
    wgpipe,
    DeviceError,
    Error,
    "No GPU adapter, none matching the selection, or a device that failed (lost, out of memory)."
);
pyo3::create_exception!(
    wgpipe,
    StorageError,
    Error,
    "The output cannot be written: it exists, its directory is missing, the sink failed."
);
pyo3::create_exception!(
    wgpipe,
    DiskFullError,
    StorageError,
    "The disk had no room for the next frame. `path` is the output, `frames_kept` the frames written before, \
     every one of them kept and readable; `report` what the run did."
);
pyo3::create_exception!(
    wgpipe,
    SinkError,
    Error,
    "A Python sink raised: the run stopped, every frame it had accepted kept. The sink's own exception is \
     `__cause__`, with its traceback; `report` says what the run did."
);
pyo3::create_exception!(
    wgpipe,
    RunError,
    Error,
    "A run failed after it started (a device, the writer). `failures` lists (thread, message) pairs; `report` \
     says what the run did, every frame it counts as written kept."
);
pyo3::create_exception!(
    wgpipe,
    ReleasedFrameError,
    Error,
    "A frame was used after it was released (its buffer went back to the pipeline): keep frames with \
     frame.copy()."
);
pyo3::create_exception!(
    wgpipe,
    Interrupted,
    PyKeyboardInterrupt,
    "A KeyboardInterrupt (Ctrl-C) raised after the run stopped cleanly: every frame written was kept and the \
     output closed. `report` says what the run did."
);

/// Adds every exception class to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("KernelError", py.get_type::<KernelError>())?;
    m.add("DeviceError", py.get_type::<DeviceError>())?;
    m.add("StorageError", py.get_type::<StorageError>())?;
    m.add("DiskFullError", py.get_type::<DiskFullError>())?;
    m.add("SinkError", py.get_type::<SinkError>())?;
    m.add("RunError", py.get_type::<RunError>())?;
    m.add("ReleasedFrameError", py.get_type::<ReleasedFrameError>())?;
    m.add("Interrupted", py.get_type::<Interrupted>())?;
    Ok(())
}

/// Sets `name = value` on the exception `err`.
fn with<'py>(py: Python<'py>, err: PyErr, attributes: &[(&str, Bound<'py, PyAny>)]) -> PyErr {
    for (name, value) in attributes {
        // Setting an attribute on an exception instance cannot fail for these names.
        let _ = err.value(py).setattr(*name, value);
    }
    err
}

/// Python's value of an optional Rust value (`None` when absent).
fn opt<'py, T: IntoPyObject<'py>>(py: Python<'py>, v: Option<T>) -> Bound<'py, PyAny> {
    v.and_then(|v| v.into_bound_py_any(py).ok()).unwrap_or_else(|| py.None().into_bound(py))
}

/// The file and line of a config value's origin (`None`s for an override or a default).
fn place(origin: Option<&Origin>) -> (Option<String>, Option<usize>) {
    match origin {
        Some(Origin::Line { file, line }) => (Some(file.clone()), Some(*line)),
        Some(Origin::File(file)) => (Some(file.clone()), None),
        Some(Origin::Set(_)) | None => (None, None),
    }
}

/// A [`ConfigError`] (or the class its cause calls for) for a config error, with the key and
/// the place where it is known.
pub fn config_error(py: Python<'_>, e: &RustConfigError) -> PyErr {
    let message = e.to_string();
    let (key, origin) = match e {
        RustConfigError::Kernel { source, .. } => return compute_error(py, source, message),
        RustConfigError::Devices { .. } => return DeviceError::new_err(message),
        RustConfigError::Invalid { origin, key, .. } => (Some(key.as_str()), Some(origin)),
        RustConfigError::Syntax { origin, .. } => (None, Some(origin)),
        _ => (None, None),
    };
    let (file, line) = place(origin);
    with(py, ConfigError::new_err(message), &[("key", opt(py, key)), ("file", opt(py, file)), ("line", opt(py, line))])
}

/// The class of a GPU-side error, with `message` (which may say more than `e` alone): a
/// kernel's problem located in its file where it can be.
pub fn compute_error(py: Python<'_>, e: &ComputeError, message: String) -> PyErr {
    let (file, line, column) = match e {
        ComputeError::Wgsl(w) => (Some(w.file.clone()), w.line, w.column),
        ComputeError::ReadShader { path, .. } => (Some(path.display().to_string()), None, None),
        ComputeError::InvalidKernel { .. } => (None, None, None),
        ComputeError::NoAdapter
        | ComputeError::NoMatchingAdapter { .. }
        | ComputeError::InvalidSelector(_)
        | ComputeError::RequestDevice { .. }
        | ComputeError::Gpu { .. }
        | ComputeError::DeviceLost { .. }
        | ComputeError::Timeout { .. } => return DeviceError::new_err(message),
        _ => return Error::new_err(message),
    };
    let attributes = [("file", opt(py, file)), ("line", opt(py, line)), ("column", opt(py, column))];
    with(py, KernelError::new_err(message), &attributes)
}

/// The class of a storage error met before or outside a run.
pub fn storage_error(py: Python<'_>, e: &StoreError) -> PyErr {
    match e.disk_full_path() {
        Some(path) => with(
            py,
            DiskFullError::new_err(e.to_string()),
            &[
                ("path", opt(py, Some(path.display().to_string()))),
                ("frames_kept", opt(py, Some(0u64))),
                ("report", py.None().into_bound(py)),
            ],
        ),
        None => StorageError::new_err(e.to_string()),
    }
}

/// The exception for a runner error: its class by kind, and for a run that started, the
/// report of what it did. `sink_error` is a Python sink's own exception, if one raised: it
/// becomes the `__cause__` of a [`SinkError`].
pub fn to_py(py: Python<'_>, e: RunnerError, sink_error: Option<PyErr>) -> PyErr {
    match e {
        RunnerError::Config(c) => config_error(py, &c),
        RunnerError::Compute(c) => {
            let message = c.to_string();
            compute_error(py, &c, message)
        }
        RunnerError::Storage(s) => match sink_error {
            Some(cause) => sink_failed(py, s.to_string(), cause, None),
            None => storage_error(py, &s),
        },
        RunnerError::Failed { failures, report } => failed(py, &failures, *report, sink_error),
        RunnerError::Interrupted { report } => {
            let message = format!("{}", RunnerError::Interrupted { report: report.clone() });
            with(py, Interrupted::new_err(message), &[("report", report_object(py, *report))])
        }
        other => Error::new_err(other.to_string()),
    }
}

/// The exception of a run that failed after it started: a [`SinkError`] when a Python sink
/// raised, a [`DiskFullError`] when the disk filled, else a [`RunError`]; each with the report.
fn failed(py: Python<'_>, failures: &[wgpipe::Failure], report: RunReport, sink_error: Option<PyErr>) -> PyErr {
    let message = RunnerError::Failed { failures: failures.to_vec(), report: Box::new(report.clone()) }.to_string();
    let kept = report.written_frames();
    let report = report_object(py, report);
    if let Some(cause) = sink_error {
        return sink_failed(py, message, cause, Some(report));
    }
    let disk_full = failures.iter().find_map(|f| f.disk_full_path().map(|path| path.display().to_string()));
    if let Some(path) = disk_full {
        let attributes = [("path", opt(py, Some(path))), ("frames_kept", opt(py, Some(kept))), ("report", report)];
        return with(py, DiskFullError::new_err(message), &attributes);
    }
    let pairs: Vec<(String, String)> = failures.iter().map(|f| (f.thread.clone(), f.message.clone())).collect();
    let failures = PyList::new(py, pairs).map(Bound::into_any).unwrap_or_else(|_| py.None().into_bound(py));
    with(py, RunError::new_err(message), &[("failures", failures), ("report", report)])
}

/// A [`SinkError`] whose cause is the Python sink's own exception.
fn sink_failed<'py>(py: Python<'py>, message: String, cause: PyErr, report: Option<Bound<'py, PyAny>>) -> PyErr {
    let err = SinkError::new_err(message);
    err.set_cause(py, Some(cause));
    with(py, err, &[("report", report.unwrap_or_else(|| py.None().into_bound(py)))])
}

/// The Python [`Report`] of `report` (`None` if it cannot be made).
fn report_object(py: Python<'_>, report: RunReport) -> Bound<'_, PyAny> {
    Bound::new(py, Report::from(report)).map(Bound::into_any).unwrap_or_else(|_| py.None().into_bound(py))
}
