//! What a run did, as Python sees it: the Rust [`RunReport`] behind read-only attributes,
//! a one-line `repr` and the binary's summary table as `str`.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use wgpipe::{DeviceReport, RunReport, TuningReport};

use crate::layout::py_list;

/// What a run did: frames and bytes written, wall, compute and write time, how well they
/// overlapped, each device's share, and what `io.mode = "auto"` chose. `str(report)` is the
/// summary `wgpipe run` prints.
#[pyclass(module = "wgpipe", frozen)]
pub struct Report {
    report: RunReport,
}

impl From<RunReport> for Report {
    fn from(report: RunReport) -> Self {
        Report { report }
    }
}

/// One device's share of a run.
#[pyclass(module = "wgpipe", frozen, get_all)]
pub struct DeviceShare {
    /// The adapter's label.
    device: String,
    /// Streams it ran.
    streams: Vec<String>,
    /// Frames it produced.
    frames: u64,
    /// Seconds producing frames (host clock).
    compute_seconds: f64,
    /// Seconds the GPU worked on them (timestamp queries), None without them.
    gpu_seconds: Option<f64>,
    /// Seconds blocked on a full channel: backpressure.
    blocked_seconds: f64,
    /// Seconds writing its own frames (sync or inline writes).
    write_seconds: f64,
}

impl From<&DeviceReport> for DeviceShare {
    fn from(d: &DeviceReport) -> Self {
        DeviceShare {
            device: d.device.clone(),
            streams: d.jobs.clone(),
            frames: d.frames,
            compute_seconds: d.compute_seconds,
            gpu_seconds: d.gpu_seconds,
            blocked_seconds: d.blocked_seconds,
            write_seconds: d.write_seconds,
        }
    }
}

#[pymethods]
impl DeviceShare {
    fn __repr__(&self) -> String {
        format!(
            "DeviceShare(device='{}', frames={}, compute_seconds={:.3}, blocked_seconds={:.3})",
            self.device, self.frames, self.compute_seconds, self.blocked_seconds
        )
    }
}

/// What `io.mode = "auto"` chose, and from what.
#[pyclass(module = "wgpipe", frozen, get_all)]
pub struct AutoChoice {
    /// The devices wrote their own frames at the end (no writer thread).
    inline: bool,
    /// Frames that could wait for the writer at the end (0 when inline).
    io_buffer: usize,
    /// Frames written when the choice was made (None: the run ended first).
    decided_after_frames: Option<u64>,
    /// The choice and its reason, in numbers.
    reason: String,
    /// Changes after the choice.
    changes: Vec<String>,
}

impl From<&TuningReport> for AutoChoice {
    fn from(t: &TuningReport) -> Self {
        AutoChoice {
            inline: t.inline,
            io_buffer: t.io_buffer,
            decided_after_frames: t.decided_after_frames,
            reason: t.reason.clone(),
            changes: t.changes.clone(),
        }
    }
}

#[pymethods]
impl AutoChoice {
    fn __repr__(&self) -> String {
        format!("AutoChoice({:?})", self.reason)
    }
}

#[pymethods]
impl Report {
    /// Frames the sink accepted: every one of them is in the output.
    #[getter]
    fn frames(&self) -> u64 {
        self.report.written_frames()
    }

    /// Payload bytes written.
    #[getter]
    fn bytes(&self) -> u64 {
        self.report.sink.bytes
    }

    /// Seconds from the first frame's submission to the closed output.
    #[getter]
    fn wall_seconds(&self) -> f64 {
        self.report.wall_seconds
    }

    /// Seconds the slowest device computed (GPU timestamps where every device has them).
    #[getter]
    fn compute_seconds(&self) -> f64 {
        self.report.compute_seconds()
    }

    /// `"GPU timestamps"` or `"host-measured"`: where `compute_seconds` comes from.
    #[getter]
    fn compute_source(&self) -> &'static str {
        self.report.compute_source().name()
    }

    /// Seconds spent writing (the writer, the devices' own writes, finishing the output).
    #[getter]
    fn write_seconds(&self) -> f64 {
        self.report.write_seconds()
    }

    /// `max(compute, write) / wall`: 1.0 when the run took no longer than its slower half.
    #[getter]
    fn efficiency(&self) -> f64 {
        self.report.efficiency()
    }

    /// `wall / (compute + write)`: 1.0 no overlap, 0.5 perfect overlap at balance.
    #[getter]
    fn overlap_ratio(&self) -> f64 {
        self.report.overlap_ratio()
    }

    /// Cell-steps per second over the wall time.
    #[getter]
    fn cell_steps_per_second(&self) -> f64 {
        self.report.cell_steps_per_second()
    }

    /// `"auto"`, `"async"` or `"sync"`.
    #[getter]
    fn mode(&self) -> &'static str {
        self.report.mode.name()
    }

    /// What `io.mode = "auto"` chose (None in the other modes).
    #[getter]
    fn auto(&self) -> Option<AutoChoice> {
        self.report.tuning.as_ref().map(AutoChoice::from)
    }

    /// Each device's share.
    #[getter]
    fn devices(&self) -> Vec<DeviceShare> {
        self.report.devices.iter().map(DeviceShare::from).collect()
    }

    /// Order-independent checksum of every frame written, equal across sinks.
    #[getter]
    fn checksum(&self) -> u64 {
        self.report.sink.checksum
    }

    /// One sentence: whether overlapping I/O helped, and what would.
    #[getter]
    fn verdict(&self) -> String {
        self.report.verdict()
    }

    /// Checkpoints written.
    #[getter]
    fn checkpoints(&self) -> u64 {
        self.report.checkpoints.written
    }

    /// The numbers as a dict (for JSON, pandas).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = &self.report;
        let d = PyDict::new(py);
        d.set_item("frames", r.written_frames())?;
        d.set_item("bytes", r.sink.bytes)?;
        d.set_item("wall_seconds", r.wall_seconds)?;
        d.set_item("compute_seconds", r.compute_seconds())?;
        d.set_item("compute_source", r.compute_source().name())?;
        d.set_item("write_seconds", r.write_seconds())?;
        d.set_item("efficiency", r.efficiency())?;
        d.set_item("overlap_ratio", r.overlap_ratio())?;
        d.set_item("cell_steps_per_second", r.cell_steps_per_second())?;
        d.set_item("mode", r.mode.name())?;
        d.set_item("auto", r.tuning.as_ref().map(|t| t.reason.clone()))?;
        d.set_item("devices", r.devices.iter().map(|d| d.device.clone()).collect::<Vec<_>>())?;
        d.set_item("checksum", r.sink.checksum)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        let r = &self.report;
        let auto = r.tuning.as_ref().map_or(String::new(), |t| {
            let chose = if t.inline { "inline writes".to_owned() } else { format!("io_buffer {}", t.io_buffer) };
            format!(" ({chose})")
        });
        format!(
            "Report(frames={}, bytes={}, wall_seconds={:.3}, compute_seconds={:.3}, write_seconds={:.3}, \
             efficiency={:.2}, mode='{}'{auto}, devices={})",
            r.written_frames(),
            r.sink.bytes,
            r.wall_seconds,
            r.compute_seconds(),
            r.write_seconds(),
            r.efficiency(),
            r.mode.name(),
            py_list(&r.devices.iter().map(|d| d.device.as_str()).collect::<Vec<_>>())
        )
    }

    fn __str__(&self) -> String {
        self.report.to_string()
    }
}
