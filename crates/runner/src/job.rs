//! Jobs: the unit of work a device pulls from the queue. Each job is one output stream,
//! produced either by a field-stencil kernel or by an application's own [`FrameSource`].

use std::sync::Arc;

use wgpipe_compute::{FrameSource, GpuDevice, Grid, KernelSpec};
use wgpipe_storage::{AttrValue, Attributes};

use crate::checkpoint::SavedState;

/// Builds a job's initial state for the run's grid: every field of the kernel, field after
/// field, each in C order (last axis fastest). Called on the device thread that runs the job.
pub type InitFn = Box<dyn FnOnce(&Grid) -> Vec<f32> + Send>;

/// An error an application's code returns to the pipeline.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Opens a job's frame source on the device that runs it (called on that device's thread,
/// so the source creates its buffers and pipelines there).
pub type SourceFn = Box<dyn FnOnce(&GpuDevice) -> Result<Box<dyn FrameSource>, BoxError> + Send>;

/// What produces a job's frames.
pub enum Producer {
    /// A field-stencil kernel from an initial state, on the run's grid.
    Kernel {
        /// The kernel and its parameters for this run.
        kernel: KernelSpec,
        /// The initial state.
        init: InitFn,
    },
    /// An application's own GPU code; its frames have the layout given to
    /// [`crate::PipelineBuilder::frame_layout`].
    Source(SourceFn),
}

/// One run, written as one stream of the output.
pub struct Job {
    /// Stream name (HDF5 group, raw file prefix): letters, digits, `-`, `_`, `.`.
    pub name: String,
    /// What produces the frames.
    pub producer: Producer,
    /// Metadata stored with the stream (parameters, seed, ...).
    pub attributes: Attributes,
    /// The state to continue from: the stream's newest checkpoint (see [`crate::checkpoint`]);
    /// `None` starts it from frame 0.
    pub resume: Option<SavedState>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let producer = self.kernel().map_or("frame source", |k| k.name.as_str());
        f.debug_struct("Job").field("name", &self.name).field("producer", &producer).finish()
    }
}

impl Job {
    /// A job running `kernel` from the state `init` builds.
    pub fn new(
        name: impl Into<String>,
        kernel: KernelSpec,
        init: impl FnOnce(&Grid) -> Vec<f32> + Send + 'static,
    ) -> Self {
        Job {
            name: name.into(),
            producer: Producer::Kernel { kernel, init: Box::new(init) },
            attributes: Attributes::new(),
            resume: None,
        }
    }

    /// A job whose frames come from the [`FrameSource`] that `open` creates on its device.
    pub fn from_source(
        name: impl Into<String>,
        open: impl FnOnce(&GpuDevice) -> Result<Box<dyn FrameSource>, BoxError> + Send + 'static,
    ) -> Self {
        Job {
            name: name.into(),
            producer: Producer::Source(Box::new(open)),
            attributes: Attributes::new(),
            resume: None,
        }
    }

    /// The job's kernel, unless its frames come from a frame source.
    pub fn kernel(&self) -> Option<&KernelSpec> {
        match &self.producer {
            Producer::Kernel { kernel, .. } => Some(kernel),
            Producer::Source(_) => None,
        }
    }

    /// Continues the stream from `saved` (its checkpoint, [`crate::checkpoint::read`]): the
    /// output keeps its first `saved.frames` frames, cut after them, and the stream goes on
    /// from the saved state. The run checks that the checkpoint is this stream's (same
    /// kernel, parameters, seed, grid, steps per frame).
    pub fn resuming(mut self, saved: SavedState) -> Self {
        self.resume = Some(saved);
        self
    }

    /// Frames of the stream the output keeps when it resumes (its checkpoint's), 0 otherwise.
    pub fn kept_frames(&self) -> u64 {
        self.resume.as_ref().map_or(0, |r| r.frames)
    }

    /// What the stream's state depends on besides its frame: a checkpoint saved by a stream
    /// of another fingerprint cannot continue this one. Kernels: name, fields, parameters,
    /// seed, rank, boundary, shader (checksummed), grid and steps per frame; frame sources:
    /// the stream's name only (the source's own state is its business).
    pub fn fingerprint(&self, grid: Option<&Grid>, steps_per_frame: u32) -> String {
        match &self.producer {
            Producer::Kernel { kernel: k, .. } => {
                let shader = crate::checkpoint::checksum(k.wgsl.code.as_bytes());
                format!(
                    "kernel {}, fields {:?}, params {:?}, seed {}, rank {}, boundary {}, shader {shader:016x}, grid {:?}, \
                     steps_per_frame {steps_per_frame}",
                    k.name,
                    k.fields,
                    k.params,
                    k.seed,
                    k.rank,
                    k.boundary,
                    grid.map(Grid::shape)
                )
            }
            Producer::Source(_) => format!("frame source, stream {}", self.name),
        }
    }

    /// Adds one metadata entry to the stream.
    pub fn with_attribute(mut self, key: impl Into<String>, value: impl Into<AttrValue>) -> Self {
        self.attributes.insert(key.into(), value.into());
        self
    }
}

/// Builds a stream's initial state from (stream index, grid).
pub type PerStreamInit = Arc<dyn Fn(usize, &Grid) -> Vec<f32> + Send + Sync>;

/// Where a run's jobs come from.
pub(crate) enum Work {
    /// One stream per device, each running `kernel` from `init(stream, grid)`.
    PerDevice { kernel: KernelSpec, init: PerStreamInit, attributes: Arc<dyn Fn(usize) -> Attributes + Send + Sync> },
    /// A batch of jobs that the devices pull from a shared queue.
    Jobs(Vec<Job>),
}

impl Work {
    /// The kernels of the jobs (none when frame sources produce the frames), known before any
    /// device opens.
    pub(crate) fn kernels(&self) -> Vec<&KernelSpec> {
        match self {
            Work::PerDevice { kernel, .. } => vec![kernel],
            Work::Jobs(jobs) => jobs.iter().filter_map(Job::kernel).collect(),
        }
    }

    /// The jobs, on the devices `labels` names: per-device work makes stream `d` for device
    /// `d`, its noise keyed with the kernel's seed + d so that the streams differ.
    pub(crate) fn into_jobs(self, labels: &[&str]) -> Vec<Job> {
        match self {
            Work::PerDevice { kernel, init, attributes } => labels
                .iter()
                .enumerate()
                .map(|(d, label)| {
                    let init = Arc::clone(&init);
                    let kernel = kernel.clone().with_seed(kernel.seed.wrapping_add(d as u64));
                    let mut job = Job::new(format!("stream{d}"), kernel, move |grid: &Grid| init(d, grid));
                    job.attributes = attributes(d);
                    job.attributes.insert("device".to_owned(), (*label).into());
                    job
                })
                .collect(),
            Work::Jobs(jobs) => jobs,
        }
    }
}
