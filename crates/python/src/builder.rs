//! `wgpipe.Pipeline.builder()`: the Rust builder's calls from Python, chained. It keeps what
//! it is told and hands it to [`wgpipe::PipelineBuilder`] at `build()`, where every check runs
//! once (the kernel against the final grid, the initial state against the kernel's fields).

use std::path::PathBuf;

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use wgpipe::compute::gray_scott::GrayScottParams;
use wgpipe::compute::gray_scott_3d::GrayScott3dParams;
use wgpipe::compute::{DeviceSelector, OutputDType};
use wgpipe::storage::{AttrValue, Checked, Compression, Sink, SinkOptions, open_sink};
use wgpipe::{Analysis, IoMode, Pipeline, PipelineBuilder};

use crate::errors::{compute_error, storage_error};
use crate::kernel::KernelParts;
use crate::layout::attr_value;
use crate::prepared::{Prepared, prepare};
use crate::sink::{PySink, Raised};

/// What the pipeline runs.
enum Work {
    GrayScott { params: GrayScottParams, seed: u64, noise: f32 },
    GrayScott3d { params: GrayScott3dParams, seed: u64 },
    Kernel(KernelParts),
}

/// Where the frames go: a sink by name with its options, or a Python object.
enum Output {
    Named { name: String, options: SinkOptions },
    Python { sink: Checked<PySink>, raised: Raised, name: String },
}

/// Configures a pipeline, as `wgpipe::Pipeline::builder()` does in Rust: every method returns
/// the builder, `build()` checks everything and opens the devices.
#[pyclass(module = "wgpipe", name = "Builder", subclass)]
pub struct Builder {
    shape: Vec<usize>,
    frames: u64,
    steps_per_frame: u32,
    staging_buffers: Option<usize>,
    copy_threads: Option<usize>,
    io_buffer: Option<usize>,
    mode: IoMode,
    fields: Option<Vec<String>>,
    output_dtype: OutputDType,
    analysis: Analysis,
    gpu_timestamps: bool,
    attributes: Vec<(String, AttrValue)>,
    devices: (DeviceSelector, usize),
    work: Option<Work>,
    output: Option<Output>,
}

/// `text` as one of `choices`' values, or `ValueError` naming `what` and the choices.
fn choose<T: Copy>(what: &str, text: &str, choices: &[(&str, T)]) -> PyResult<T> {
    choices.iter().find(|(name, _)| *name == text).map(|(_, v)| *v).ok_or_else(|| {
        let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
        PyValueError::new_err(format!("{what} {text:?} is unknown: use one of {}", names.join(", ")))
    })
}

/// Model parameters `params` (name → number) set on `set`, which names the valid ones.
fn set_params(
    py: Python<'_>,
    params: Option<&Bound<'_, PyDict>>,
    mut set: impl FnMut(&str, f32) -> wgpipe::compute::Result<()>,
) -> PyResult<()> {
    for (k, v) in params.into_iter().flat_map(|d| d.iter()) {
        let (name, value): (String, f32) = (k.extract()?, v.extract()?);
        set(&name, value).map_err(|e| compute_error(py, &e, e.to_string()))?;
    }
    Ok(())
}

#[pymethods]
impl Builder {
    #[new]
    fn new() -> Self {
        Builder {
            shape: vec![256, 256],
            frames: 10,
            steps_per_frame: 32,
            staging_buffers: None,
            copy_threads: None,
            io_buffer: None,
            mode: IoMode::Auto,
            fields: None,
            output_dtype: OutputDType::F32,
            analysis: Analysis::default(),
            gpu_timestamps: true,
            attributes: Vec::new(),
            devices: (DeviceSelector::All, 1),
            work: None,
            output: None,
        }
    }

    /// The grid's shape, slowest axis first: `(nx,)`, `(ny, nx)` or `(nz, ny, nx)`.
    fn shape(mut slf: PyRefMut<'_, Self>, shape: Vec<usize>) -> PyRefMut<'_, Self> {
        slf.shape = shape;
        slf
    }

    /// A 2-D grid of `rows × cols`.
    fn grid(mut slf: PyRefMut<'_, Self>, rows: usize, cols: usize) -> PyRefMut<'_, Self> {
        slf.shape = vec![rows, cols];
        slf
    }

    /// Frames per stream (default 10).
    fn frames(mut slf: PyRefMut<'_, Self>, frames: u64) -> PyRefMut<'_, Self> {
        slf.frames = frames;
        slf
    }

    /// Kernel steps between frames (default 32).
    fn steps_per_frame(mut slf: PyRefMut<'_, Self>, steps: u32) -> PyRefMut<'_, Self> {
        slf.steps_per_frame = steps;
        slf
    }

    /// Staging buffers in each device's readback ring (default 2).
    fn staging_buffers(mut slf: PyRefMut<'_, Self>, n: usize) -> PyRefMut<'_, Self> {
        slf.staging_buffers = Some(n);
        slf
    }

    /// Threads each device copies frames out of staging on.
    fn copy_threads(mut slf: PyRefMut<'_, Self>, n: usize) -> PyRefMut<'_, Self> {
        slf.copy_threads = Some(n);
        slf
    }

    /// Frames that may wait for the writer (0: rendezvous).
    fn io_buffer(mut slf: PyRefMut<'_, Self>, n: usize) -> PyRefMut<'_, Self> {
        slf.io_buffer = Some(n);
        slf
    }

    /// How frames reach the sink: `"auto"` (measured and chosen, the default), `"async"` or
    /// `"sync"`.
    fn mode<'py>(mut slf: PyRefMut<'py, Self>, mode: &str) -> PyResult<PyRefMut<'py, Self>> {
        let modes = [("auto", IoMode::Auto), ("async", IoMode::Async), ("sync", IoMode::Sync)];
        slf.mode = choose("mode", mode, &modes)?;
        Ok(slf)
    }

    /// The fields each frame holds (default: the kernel's; `v` for Gray-Scott).
    fn fields(mut slf: PyRefMut<'_, Self>, fields: Vec<String>) -> PyRefMut<'_, Self> {
        slf.fields = Some(fields);
        slf
    }

    /// The type fields are stored as: `"f32"` (default) or `"f16"` (converted on the GPU).
    fn output_dtype<'py>(mut slf: PyRefMut<'py, Self>, dtype: &str) -> PyResult<PyRefMut<'py, Self>> {
        let dtypes = [
            ("f32", OutputDType::F32),
            ("float32", OutputDType::F32),
            ("f16", OutputDType::F16),
            ("float16", OutputDType::F16),
        ];
        slf.output_dtype = choose("output dtype", dtype, &dtypes)?;
        Ok(slf)
    }

    /// Reductions of `fields` on the device, stored beside them: min, max, mean and sum, a
    /// PDF of `pdf_bins` bins per slice, the field averaged over blocks of `downsample`.
    #[pyo3(signature = (fields, pdf_bins = 0, downsample = 0))]
    fn analysis(
        mut slf: PyRefMut<'_, Self>,
        fields: Vec<String>,
        pdf_bins: u32,
        downsample: u32,
    ) -> PyRefMut<'_, Self> {
        slf.analysis = Analysis::of(fields).with_pdf(pdf_bins).with_downsample(downsample);
        slf
    }

    /// Whether compute time comes from GPU timestamps where the device has them (default True).
    fn gpu_timestamps(mut slf: PyRefMut<'_, Self>, on: bool) -> PyRefMut<'_, Self> {
        slf.gpu_timestamps = on;
        slf
    }

    /// Adds run-level metadata (a file attribute): an int, float or str.
    fn attribute<'py>(
        mut slf: PyRefMut<'py, Self>,
        key: String,
        value: Bound<'py, PyAny>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let value = attr_value(&key, &value)?;
        slf.attributes.push((key, value));
        Ok(slf)
    }

    /// The adapters to run on, each opened `count` times: `"all"` (default), `"all-backends"`,
    /// a backend (`"vulkan"`), indices (`"0,1"`) or a name substring.
    #[pyo3(signature = (select = "all", count = 1))]
    fn devices<'py>(mut slf: PyRefMut<'py, Self>, select: &str, count: usize) -> PyResult<PyRefMut<'py, Self>> {
        let selector = DeviceSelector::parse(select).map_err(|e| compute_error(slf.py(), &e, e.to_string()))?;
        slf.devices = (selector, count);
        Ok(slf)
    }

    /// The 2-D Gray-Scott model, one stream per device (device d seeded `seed + d`), with
    /// its parameters overridden by `params` (feed, kill, du, dv, dt).
    #[pyo3(signature = (seed = 0, noise = 0.0, **params))]
    fn gray_scott<'py>(
        mut slf: PyRefMut<'py, Self>,
        seed: u64,
        noise: f32,
        params: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let mut p = GrayScottParams::default();
        set_params(slf.py(), params, |n, v| p.set(n, v))?;
        slf.work = Some(Work::GrayScott { params: p, seed, noise });
        Ok(slf)
    }

    /// The 3-D Gray-Scott model of the ADIOS2 tutorial, with its parameters overridden by
    /// `params`; give it a 3-D `shape`.
    #[pyo3(signature = (seed = 0, **params))]
    fn gray_scott_3d<'py>(
        mut slf: PyRefMut<'py, Self>,
        seed: u64,
        params: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let mut p = GrayScott3dParams::default();
        set_params(slf.py(), params, |n, v| p.set(n, v))?;
        slf.work = Some(Work::GrayScott3d { params: p, seed });
        Ok(slf)
    }

    /// A WGSL kernel of your own: `source` is its text, or a path (`pathlib.Path`, or a str
    /// naming a `.wgsl` file) to read it from. `fields` names its fields in binding order,
    /// `params` fills its `struct Params` by member name, `init` is the initial state: a dict
    /// of one array per field (grid-shaped, converted to float32), or a list of such dicts,
    /// one per stream (device); without it, every field 0 but the last, which holds the
    /// Gray-Scott pattern.
    #[pyo3(signature = (source, *, fields, params = None, init = None, name = None, boundary = "periodic", seed = 0))]
    #[expect(clippy::too_many_arguments, reason = "keyword arguments of one Python call")]
    fn kernel<'py>(
        mut slf: PyRefMut<'py, Self>,
        source: &Bound<'py, PyAny>,
        fields: Vec<String>,
        params: Option<&Bound<'py, PyDict>>,
        init: Option<&Bound<'py, PyAny>>,
        name: Option<String>,
        boundary: &str,
        seed: u64,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let parts = KernelParts::new(source, fields, params, init, name, boundary, seed)?;
        slf.work = Some(Work::Kernel(parts));
        Ok(slf)
    }

    /// Where frames go: a sink by name (`"hdf5"`, `"zarr"`, `"adios2"`, `"raw"`, `"null"`)
    /// writing to `path` with `compression` (e.g. `"deflate:6"`), or a Python object with
    /// `begin(layout)`, `write(frame)` and `finish(outcome)`.
    #[pyo3(signature = (sink, *, path = None, compression = None, overwrite = false, chunk_frames = None))]
    fn sink<'py>(
        mut slf: PyRefMut<'py, Self>,
        sink: &Bound<'py, PyAny>,
        path: Option<PathBuf>,
        compression: Option<&str>,
        overwrite: bool,
        chunk_frames: Option<usize>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let py = slf.py();
        let Ok(name) = sink.extract::<String>() else {
            let (checked, raised) = PySink::checked(sink)?;
            let name = sink.get_type().name().map(|n| format!("Python sink {n}")).unwrap_or_default();
            slf.output = Some(Output::Python { sink: checked, raised, name });
            return Ok(slf);
        };
        let path = match (path, name.as_str()) {
            (Some(p), _) => p,
            (None, "null") => PathBuf::new(),
            (None, _) => return Err(PyTypeError::new_err(format!("sink {name:?} needs path=..., where it writes"))),
        };
        let mut options = SinkOptions::new(path).with_overwrite(overwrite);
        if let Some(c) = compression {
            options = options.with_compression(c.parse::<Compression>().map_err(|e| storage_error(py, &e))?);
        }
        if let Some(n) = chunk_frames {
            options = options.with_chunk_frames(n);
        }
        slf.output = Some(Output::Named { name, options });
        Ok(slf)
    }

    /// Checks everything and opens the devices: a pipeline ready to start.
    fn build(&mut self, py: Python<'_>) -> PyResult<Prepared> {
        let builder = self.configured(py)?;
        let (sink, raised, outputs) = match self.output.take() {
            None => (
                open_sink("null", &SinkOptions::new("")).map_err(|e| storage_error(py, &e))?,
                Raised::default(),
                "null sink (nothing stored)".to_owned(),
            ),
            Some(Output::Named { name, options }) => {
                let outputs = if name == "null" {
                    "null sink (nothing stored)".to_owned()
                } else {
                    options.path.display().to_string()
                };
                (open_sink(&name, &options).map_err(|e| storage_error(py, &e))?, Raised::default(), outputs)
            }
            Some(Output::Python { sink, raised, name }) => (Box::new(sink) as Box<dyn Sink>, raised, name),
        };
        prepare(py, sink, raised, outputs, move |sink| builder.sink(sink).build())
    }
}

impl Builder {
    /// The Rust builder with everything but the sink.
    fn configured(&mut self, py: Python<'_>) -> PyResult<PipelineBuilder> {
        let Some(work) = self.work.take() else {
            return Err(PyRuntimeError::new_err(
                "no work: call .gray_scott(), .gray_scott_3d() or .kernel(...) before .build() (a builder builds once)",
            ));
        };
        let (selector, count) = self.devices.clone();
        let mut b = Pipeline::builder()
            .devices(selector, count)
            .shape(self.shape.clone())
            .frames(self.frames)
            .steps_per_frame(self.steps_per_frame)
            .mode(self.mode)
            .output_dtype(self.output_dtype)
            .analysis(self.analysis.clone())
            .gpu_timestamps(self.gpu_timestamps);
        b = match work {
            Work::GrayScott { params, seed, noise } => b.gray_scott(params, seed, noise),
            Work::GrayScott3d { params, seed } => b.gray_scott_3d(params, seed),
            Work::Kernel(parts) => {
                let (spec, init) = parts.into_kernel(py, &self.shape)?;
                b.kernel(spec, move |stream, _| init[stream % init.len()].clone())
            }
        };
        if let Some(n) = self.staging_buffers {
            b = b.staging_buffers(n);
        }
        if let Some(n) = self.copy_threads {
            b = b.copy_threads(n);
        }
        if let Some(n) = self.io_buffer {
            b = b.io_buffer(n);
        }
        if let Some(fields) = self.fields.clone() {
            b = b.fields(fields);
        }
        for (k, v) in &self.attributes {
            b = b.attribute(k.clone(), v.clone());
        }
        Ok(b)
    }
}
