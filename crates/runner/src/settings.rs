//! The plain values a `PipelineBuilder` collects: what a run's plan checks and then
//! keeps. (The devices, the work and the sink stay the builder's until `build`.)

use wgpipe_compute::zfp::ZfpRate;
use wgpipe_compute::{FieldEncoding, OutputDType};
use wgpipe_storage::{Attributes, FieldSpec};

use crate::analysis::Analysis;
use crate::checkpoint::{Checkpoints, Interval};
use crate::error::{Error, Result};
use crate::report::IoMode;
use crate::run_state::StopHandle;
use crate::tuning::{AUTO_IO_BUFFER, DEFAULT_IO_BUFFER};

/// Each field is set by the `PipelineBuilder` method of the same name, whose doc
/// says what it means.
pub(crate) struct Settings {
    /// The grid's shape, slowest axis first.
    pub shape: Vec<usize>,
    pub frames: u64,
    pub steps_per_frame: u32,
    pub staging_buffers: usize,
    /// Threads a device copies frames on; `None`: `worker::copy_threads` on a GPU, one on a
    /// CPU adapter.
    pub copy_threads: Option<usize>,
    /// `None`: the mode's default ([`Settings::io_buffer_default`]).
    pub io_buffer: Option<usize>,
    pub mode: IoMode,
    pub fields: Option<Vec<String>>,
    pub output_dtype: OutputDType,
    /// Encode the kernels' fields on the device as ZFP fixed-rate streams at this rate.
    pub zfp_on_device: Option<ZfpRate>,
    pub gpu_timestamps: bool,
    /// The fields of frames from frame sources.
    pub frame_layout: Option<Vec<FieldSpec>>,
    /// Run-level metadata.
    pub attributes: Attributes,
    pub stop: StopHandle,
    pub trace: bool,
    /// `(index, count)`: run only the jobs `i` with `i % count == index`.
    pub shard: (usize, usize),
    /// Where and how often streams save their state; `None`: never.
    pub checkpoints: Option<Checkpoints>,
    /// Reductions of the kernels' fields computed on the device; empty: none.
    pub analysis: Analysis,
    /// One grid split over MPI ranks: this rank's block and its communicator.
    #[cfg(feature = "mpi")]
    pub split: Option<crate::split::SplitDomain>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            shape: vec![256, 256],
            frames: 10,
            steps_per_frame: 32,
            staging_buffers: 2,
            copy_threads: None,
            io_buffer: None,
            mode: IoMode::Auto,
            fields: None,
            output_dtype: OutputDType::F32,
            zfp_on_device: None,
            gpu_timestamps: true,
            frame_layout: None,
            attributes: Attributes::new(),
            stop: StopHandle::default(),
            trace: false,
            shard: (0, 1),
            checkpoints: None,
            analysis: Analysis::default(),
            #[cfg(feature = "mpi")]
            split: None,
        }
    }
}

impl Settings {
    /// How the kernels' fields leave the device: ZFP streams where `zfp_on_device` says so,
    /// else their values as `output_dtype`.
    pub(crate) fn field_encoding(&self) -> FieldEncoding {
        self.zfp_on_device.map_or(FieldEncoding::Values(self.output_dtype), FieldEncoding::Zfp)
    }

    /// The channel's capacity when `io_buffer` was not given: `auto` may queue up to
    /// [`AUTO_IO_BUFFER`] frames (fewer where host memory is short: the plan lowers it), the
    /// fixed modes [`DEFAULT_IO_BUFFER`].
    pub(crate) fn io_buffer_default(&self) -> usize {
        match self.mode {
            IoMode::Auto => AUTO_IO_BUFFER,
            IoMode::Async | IoMode::Sync => DEFAULT_IO_BUFFER,
        }
    }

    /// Errors on the first count out of range: frames, steps and staging buffers must be at
    /// least 1, a shard's index below its count.
    pub(crate) fn check(&self) -> Result<()> {
        let invalid = |m: &str| Err(Error::Invalid(m.to_owned()));
        if self.frames == 0 {
            return invalid("frames must be at least 1");
        }
        if self.steps_per_frame == 0 {
            return invalid("steps_per_frame must be at least 1");
        }
        if self.copy_threads == Some(0) {
            return invalid("copy_threads must be at least 1");
        }
        if self.staging_buffers == 0 {
            return invalid("staging_buffers must be at least 1");
        }
        match self.checkpoints.as_ref().map(|c| c.interval) {
            Some(Interval::Every(0)) => {
                return invalid("checkpoints every 0 frames: give 1 or more, or no checkpoints");
            }
            Some(Interval::Auto { mtbf_seconds }) if !(mtbf_seconds.is_finite() && mtbf_seconds > 0.0) => {
                return Err(Error::Invalid(format!(
                    "checkpoints for a mean time between failures of {mtbf_seconds} s: give a number of seconds above 0"
                )));
            }
            _ => {}
        }
        let (index, count) = self.shard;
        if index >= count {
            return Err(Error::Invalid(format!("shard({index}, {count}): the index must be below the count")));
        }
        Ok(())
    }
}
