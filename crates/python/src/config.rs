//! Runs from TOML configs, prepared exactly as `wgpipe run` prepares them
//! ([`Config::launch`]): the same checks, the same output, the same resume.

use std::path::PathBuf;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use wgpipe::StopHandle;
use wgpipe::config::Config;

use crate::errors::to_py;
use crate::prepared::{Prepared, prepare};
use crate::sink::Raised;

/// Loads `config` (a TOML file; None: the built-in default run) with `overrides` applied
/// (dotted keys to values, as `--set` gives them), and prepares its run as `wgpipe run`
/// does: every check, the devices opened, with `resume` the streams still to run.
#[pyfunction]
#[pyo3(signature = (config = None, overrides = None, resume = false))]
pub fn launch_config(
    py: Python<'_>,
    config: Option<PathBuf>,
    overrides: Option<&Bound<'_, PyDict>>,
    resume: bool,
) -> PyResult<Prepared> {
    let sets = match overrides {
        Some(d) => sets(d)?,
        None => Vec::new(),
    };
    let launched = py.detach(|| {
        Config::load(config.as_deref(), &sets).map_err(wgpipe::Error::from).and_then(|c| c.launch(resume, 1))
    });
    let launch = launched.map_err(|e| to_py(py, e, None))?;
    let outputs = launch.config.shown_outputs();
    let notes = launch.notes.clone();
    if launch.jobs.is_empty() {
        return Ok(Prepared::nothing(outputs, notes));
    }
    let sink = launch.open_sink().map_err(|e| to_py(py, e, None))?;
    let build = move |sink| launch.pipeline(sink, StopHandle::default()).map(|(_, pipeline)| pipeline);
    Ok(prepare(py, sink, Raised::default(), outputs, build)?.with_notes(notes))
}

/// `overrides` as `--set` arguments: `key=value` with the value in TOML.
fn sets(overrides: &Bound<'_, PyDict>) -> PyResult<Vec<String>> {
    overrides
        .iter()
        .map(|(k, v)| {
            let key: String =
                k.extract().map_err(|_| PyTypeError::new_err("overrides: keys are dotted names (str)"))?;
            let value = toml_value(&v).map_err(|e| PyTypeError::new_err(format!("overrides[{key:?}]: {e}")))?;
            Ok(format!("{key}={value}"))
        })
        .collect()
}

/// A Python value as a TOML value: bool, int, float, str, and lists and dicts of them.
fn toml_value(v: &Bound<'_, PyAny>) -> Result<toml::Value, String> {
    if v.is_instance_of::<PyBool>() {
        return v.extract::<bool>().map(toml::Value::Boolean).map_err(|e| e.to_string());
    }
    if v.is_instance_of::<PyInt>() {
        return v.extract::<i64>().map(toml::Value::Integer).map_err(|_| format!("{v} does not fit a 64-bit integer"));
    }
    if v.is_instance_of::<PyFloat>() {
        return v.extract::<f64>().map(toml::Value::Float).map_err(|e| e.to_string());
    }
    if v.is_instance_of::<PyString>() {
        return v.extract::<String>().map(toml::Value::String).map_err(|e| e.to_string());
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let items: Vec<Bound<'_, PyAny>> =
            v.try_iter().map_err(|e| e.to_string())?.collect::<PyResult<_>>().map_err(|e| e.to_string())?;
        return items.iter().map(toml_value).collect::<Result<_, _>>().map(toml::Value::Array);
    }
    if let Ok(d) = v.cast::<PyDict>() {
        let mut table = toml::Table::new();
        for (k, item) in d.iter() {
            let key: String = k.extract().map_err(|_| "table keys are str".to_owned())?;
            table.insert(key, toml_value(&item)?);
        }
        return Ok(toml::Value::Table(table));
    }
    let kind = v.get_type().name().map(|n| n.to_string()).unwrap_or_default();
    Err(format!("{kind} values have no TOML form: give a bool, int, float, str, or a list or dict of them"))
}
