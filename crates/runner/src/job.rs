//! Jobs: the unit of work a device pulls from the queue. Each job is one output stream.

use wgpipe_compute::{Grid, KernelSpec};
use wgpipe_storage::{AttrValue, Attributes};

/// Builds a job's initial state for the run's grid: every field of the kernel, field after
/// field, each in C order (last axis fastest). Called on the device thread that runs the job.
pub type InitFn = Box<dyn FnOnce(&Grid) -> Vec<f32> + Send>;

/// One simulation run, written as one stream of the output.
pub struct Job {
    /// Stream name (HDF5 group, raw file prefix): letters, digits, `-`, `_`, `.`.
    pub name: String,
    /// The kernel and its parameters for this run.
    pub kernel: KernelSpec,
    /// The initial state.
    pub init: InitFn,
    /// Metadata stored with the stream (parameters, seed, ...).
    pub attributes: Attributes,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job").field("name", &self.name).field("kernel", &self.kernel.name).finish()
    }
}

impl Job {
    /// A job running `kernel` from the state `init` builds.
    pub fn new(
        name: impl Into<String>,
        kernel: KernelSpec,
        init: impl FnOnce(&Grid) -> Vec<f32> + Send + 'static,
    ) -> Self {
        Job { name: name.into(), kernel, init: Box::new(init), attributes: Attributes::new() }
    }

    /// Adds one metadata entry to the stream.
    pub fn with_attribute(mut self, key: impl Into<String>, value: impl Into<AttrValue>) -> Self {
        self.attributes.insert(key.into(), value.into());
        self
    }
}
