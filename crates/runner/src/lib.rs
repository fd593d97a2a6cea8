//! # wgpipe
//!
//! Cross-vendor GPU pipelines on wgpu that stream every frame to storage while the GPUs keep
//! computing. Each selected device runs in its own thread and hands each frame, by ownership,
//! to a writer thread through a bounded channel: a full channel blocks the device
//! (backpressure), buffers are recycled through a pool, and progress is kept in sharded
//! per-device counters. Storage is pluggable through [`storage::Sink`].
//!
//! This crate wires [`compute`] (GPUs, kernels, readback) to [`storage`] (sinks) and
//! re-exports both.
//!
//! ```
//! use wgpipe::{Pipeline, compute::gray_scott::GrayScottParams, storage::NullSink};
//!
//! let report = Pipeline::builder()
//!     .grid(32, 32)
//!     .frames(3)
//!     .steps_per_frame(8)
//!     .gray_scott(GrayScottParams::default(), 0, 0.0)
//!     .sink(NullSink::default())
//!     .run()?;
//! assert_eq!(report.written_frames(), 3 * report.devices.len() as u64);
//! println!("{report}");
//! # Ok::<(), wgpipe::Error>(())
//! ```

pub mod analysis;
mod builder;
pub mod checkpoint;
mod chrome_trace;
pub mod config;
mod config_error;
mod error;
mod failure;
mod handoff;
mod job;
mod layout;
mod lockstep;
mod pipeline;
mod plan;
mod pool;
mod preflight;
mod progress;
#[cfg(feature = "mpi")]
pub mod ranks;
mod report;
mod run_state;
mod settings;
mod sizes;
#[cfg(feature = "mpi")]
pub mod split;
pub mod thinning;
mod trace;
pub mod tuning;
mod worker;
mod writer;

pub use analysis::Analysis;
pub use builder::{MAX_DEVICE_COPIES, PipelineBuilder, gray_scott_3d_attributes, gray_scott_attributes};
pub use chrome_trace::chrome_trace;
pub use error::{Error, Result};
pub use failure::{Failure, FailureKind};
pub use job::{BoxError, InitFn, Job, PerStreamInit, Producer, SourceFn};
pub use layout::stored_dtype;
pub use pipeline::Pipeline;
pub use pool::BufferPool;
pub use progress::{DeviceProgress, Progress, ProgressSnapshot};
pub use report::{CheckpointReport, ComputeSource, DeviceReport, IoMode, RunReport, TuningReport, WriterReport};
pub use run_state::StopHandle;
pub use thinning::{ThinnedSink, Thinning, Trigger, TriggerError};
pub use trace::{Span, SpanKind};
pub use wgpipe_compute::FrameSource;

/// The GPU half: adapters, devices, kernels, readback (crate `wgpipe-compute`).
pub use wgpipe_compute as compute;
/// The storage half: frames, layouts, sinks (crate `wgpipe-storage`).
pub use wgpipe_storage as storage;
