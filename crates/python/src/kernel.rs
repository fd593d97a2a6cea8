//! A WGSL kernel given from Python: its source (text or a file), fields, parameters by name
//! and initial state as numpy arrays, checked against the grid when the pipeline is built.

use std::path::PathBuf;

use numpy::{PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use wgpipe::compute::{Boundary, Grid, KernelSpec, WgslSource};
use wgpipe::config::ResolvedKernel;

use crate::errors::compute_error;

/// One stream's initial state: per field given, its name, values (C order) and shape.
type State = Vec<(String, Vec<f32>, Vec<usize>)>;

/// A kernel as the builder was told it, made into a [`KernelSpec`] at build.
pub struct KernelParts {
    wgsl: WgslSource,
    fields: Vec<String>,
    params: Vec<(String, f64)>,
    /// One state per stream (streams beyond the list take them round-robin); `None`: the
    /// default state custom kernels of configs start from.
    init: Option<Vec<State>>,
    name: String,
    boundary: Boundary,
    seed: u64,
}

/// The WGSL of `source`: a path-like object or a str naming a `.wgsl` file is read; any
/// other str is the kernel's text.
fn wgsl(py: Python<'_>, source: &Bound<'_, PyAny>) -> PyResult<(WgslSource, Option<String>)> {
    let path: Option<PathBuf> = match source.cast::<PyString>() {
        Ok(text) => {
            let text = text.to_cow()?;
            (!text.contains('\n') && text.trim_end().ends_with(".wgsl")).then(|| PathBuf::from(text.trim()))
        }
        Err(_) => Some(source.extract::<PathBuf>()?),
    };
    match path {
        Some(p) => {
            let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned());
            let read = WgslSource::from_file(&p).map_err(|e| compute_error(py, &e, e.to_string()))?;
            Ok((read, stem))
        }
        None => Ok((WgslSource::new("<kernel text>", source.extract::<String>()?), None)),
    }
}

/// One stream's state from a dict of field name → array-like (converted to float32).
fn state(dict: &Bound<'_, PyDict>) -> PyResult<State> {
    let numpy = dict.py().import("numpy")?;
    let mut out = Vec::new();
    for (k, v) in dict.iter() {
        let name: String = k.extract()?;
        let array = numpy.call_method1("ascontiguousarray", (v, "float32"))?;
        let array: PyReadonlyArrayDyn<'_, f32> = array.extract()?;
        let values = array.as_slice().map_err(|e| PyValueError::new_err(format!("init[{name:?}]: {e}")))?.to_vec();
        out.push((name, values, array.shape().to_vec()));
    }
    Ok(out)
}

impl KernelParts {
    /// The builder's `.kernel(...)` arguments, read (the file, the arrays) but not yet checked.
    pub fn new(
        source: &Bound<'_, PyAny>,
        fields: Vec<String>,
        params: Option<&Bound<'_, PyDict>>,
        init: Option<&Bound<'_, PyAny>>,
        name: Option<String>,
        boundary: &str,
        seed: u64,
    ) -> PyResult<Self> {
        let py = source.py();
        let (wgsl, stem) = wgsl(py, source)?;
        let boundary = boundary.parse::<Boundary>().map_err(|e| PyValueError::new_err(e.to_string()))?;
        let mut named = Vec::new();
        for (k, v) in params.into_iter().flat_map(|d| d.iter()) {
            named.push((k.extract::<String>()?, v.extract::<f64>()?));
        }
        let init = match init {
            None => None,
            Some(i) => match i.cast::<PyDict>() {
                Ok(d) => Some(vec![state(d)?]),
                Err(_) => {
                    let not_states = || {
                        pyo3::exceptions::PyTypeError::new_err(
                            "init: give a dict of one array per field, or a list of such dicts (one per stream)",
                        )
                    };
                    let items = i.try_iter().map_err(|_| not_states())?;
                    let dicts = items.map(|s| s.and_then(|s| s.cast_into::<PyDict>().map_err(|_| not_states())));
                    let states = dicts.map(|d| state(&d?)).collect::<PyResult<Vec<_>>>()?;
                    if states.is_empty() {
                        return Err(PyValueError::new_err(
                            "init: an empty list; give a dict of arrays, or one per stream",
                        ));
                    }
                    Some(states)
                }
            },
        };
        let name = name.or(stem).unwrap_or_else(|| "custom".to_owned());
        Ok(KernelParts { wgsl, fields, params: named, init, name, boundary, seed })
    }

    /// The kernel for a grid of `shape`, checked (its WGSL, its parameters), with each
    /// stream's initial state (every field, field after field).
    pub fn into_kernel(self, py: Python<'_>, shape: &[usize]) -> PyResult<(KernelSpec, Vec<Vec<f32>>)> {
        let spec = KernelSpec::new(self.name, self.wgsl, self.fields, Vec::new())
            .with_rank(shape.len())
            .with_boundary(self.boundary)
            .with_seed(self.seed);
        let checked = spec.check().map_err(|e| compute_error(py, &e, e.to_string()))?;
        let members = checked.params_members();
        let resolved = ResolvedKernel::Custom { spec, params: members.clone() };
        let params = ordered_params(&members, &self.params)?;
        let spec = resolved.spec(&params, self.seed);
        let init = match self.init {
            None => {
                let grid = Grid::new(shape).map_err(|e| compute_error(py, &e, e.to_string()))?;
                vec![resolved.initial_state(&grid, self.seed, 0.0)]
            }
            Some(states) => {
                states.into_iter().map(|s| concatenated(&spec.fields, s, shape)).collect::<PyResult<_>>()?
            }
        };
        Ok((spec, init))
    }
}

/// The parameters by name, checked against the shader's `struct Params` members: every member
/// given, nothing else.
fn ordered_params(members: &[String], given: &[(String, f64)]) -> PyResult<std::collections::BTreeMap<String, f64>> {
    let valid =
        if members.is_empty() { "none (the shader has no struct Params)".to_owned() } else { members.join(", ") };
    if let Some((k, _)) = given.iter().find(|(k, _)| !members.contains(k)) {
        return Err(PyValueError::new_err(format!("params[{k:?}]: unknown parameter; valid parameters: {valid}")));
    }
    if let Some((k, _)) = given.iter().find(|(_, v)| !v.is_finite()) {
        return Err(PyValueError::new_err(format!("params[{k:?}]: must be a finite number")));
    }
    if let Some(missing) = members.iter().find(|m| !given.iter().any(|(k, _)| k == *m)) {
        return Err(PyValueError::new_err(format!(
            "params: {missing} of the shader's struct Params is missing: give every one of {valid}"
        )));
    }
    Ok(given.iter().cloned().collect())
}

/// One stream's initial state: each of `fields`' arrays, grid-shaped, one after the other.
fn concatenated(fields: &[String], state: State, shape: &[usize]) -> PyResult<Vec<f32>> {
    if let Some((name, _, _)) = state.iter().find(|(n, _, _)| !fields.contains(n)) {
        return Err(PyValueError::new_err(format!(
            "init[{name:?}]: the kernel has no such field; its fields are {}",
            fields.join(", ")
        )));
    }
    let mut out = Vec::with_capacity(fields.len() * shape.iter().product::<usize>());
    for f in fields {
        let Some((_, values, got)) = state.iter().find(|(n, _, _)| n == f) else {
            return Err(PyValueError::new_err(format!(
                "init: no array for field {f:?}: give one array of shape {shape:?} for each of {}",
                fields.join(", ")
            )));
        };
        if got != shape {
            return Err(PyValueError::new_err(format!("init[{f:?}]: shape {got:?} is not the grid's {shape:?}")));
        }
        out.extend_from_slice(values);
    }
    Ok(out)
}
