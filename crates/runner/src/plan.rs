//! A run's plan: everything `PipelineBuilder::build` checks, checked once and kept as
//! the fixed configuration that the pipeline only reads (nothing in it points back to the
//! builder).
//!
//! Planning takes two steps because devices are slow to open and may not exist: a [`Draft`]
//! is checked before any device opens (counts, the grid, the kernels' WGSL, stream names),
//! and becomes a [`Plan`] on the devices (their jobs, the sink's layout, every size against
//! the devices, the sink and the host: `sizes.rs`). The config module plans a config the
//! same way on devices not opened yet, so that a config is refused before a GPU is touched.

use wgpipe_compute::{Grid, ReadbackConfig};
use wgpipe_storage::{Sink, StreamLayout};

#[cfg(feature = "mpi")]
use crate::checkpoint::Interval;
use crate::checkpoint::Saver;
use crate::error::{Error, Result};
use crate::job::{Job, Work};
use crate::layout::stream_layout;
use crate::lockstep::Lockstep;
use crate::preflight::{check_grid, check_job_names, kernel_workgroup_sizes};
use crate::report::IoMode;
use crate::settings::Settings;
use crate::sizes::{self, DeviceSize, HostMemory, RunShape};

/// A run checked as far as it can be before any device opens.
pub(crate) struct Draft {
    settings: Settings,
    work: Work,
    /// The kernels' grid; `None` when frame sources produce the frames.
    grid: Option<Grid>,
    /// Distinct cells per workgroup of the kernels (what each dispatch divides the grid into).
    workgroup_sizes: Vec<[u32; 3]>,
}

/// A checked run on known devices: what the pipeline allocates, starts and writes.
pub(crate) struct Plan {
    pub settings: Settings,
    /// The kernels' grid (every field of `layout` has its shape); `None` for frame sources.
    pub grid: Option<Grid>,
    /// Every job of the run, in stream order (a shard runs some of them).
    pub jobs: Vec<Job>,
    /// What the sink receives.
    pub layout: StreamLayout,
    /// Each device's readback (the fields are per job, from its kernel's field order).
    pub readback: ReadbackConfig,
    /// Frames the buffer pool holds: the count the host-memory check allowed for.
    pub pool_frames: usize,
    /// The channel's capacity: `io_buffer` as given, else its default, lowered under `auto`
    /// until host memory holds it.
    pub io_buffer: usize,
    /// Frames this process runs (its shard's jobs × frames).
    pub total_frames: u64,
    /// A split domain's rank: votes with the other ranks at each frame boundary.
    pub lockstep: Option<Lockstep>,
    /// What each job's state depends on ([`Job::fingerprint`]), by stream: checkpoints carry it.
    pub fingerprints: Vec<String>,
    /// How many of the layout's fields, from the first, are the kernels' fields on the grid
    /// (the rest are the analysis's reductions of them).
    pub grid_fields: usize,
    /// How checkpoints are saved when not as one file per stream (a split domain's gather).
    pub saver: Option<Box<dyn Saver>>,
}

/// Errors unless every job that resumes continues from a checkpoint of its own stream (same
/// fingerprint) within its frames, and unless checkpoints fit the run's shape (a split
/// domain's interval is fixed: its ranks save together).
fn check_resumes(settings: &Settings, grid: Option<&Grid>, jobs: &[Job]) -> Result<()> {
    #[cfg(feature = "mpi")]
    if settings.split.is_some()
        && settings.checkpoints.as_ref().is_some_and(|c| matches!(c.interval, Interval::Auto { .. }))
    {
        return Err(Error::Invalid(
            "a split domain checkpoints collectively, at an interval every rank knows: give a fixed one \
             (run.checkpoint_every, Interval::Every) instead of \"auto\""
                .to_owned(),
        ));
    }
    for job in jobs {
        let Some(saved) = &job.resume else { continue };
        let own = job.fingerprint(grid, settings.steps_per_frame);
        if saved.stream != job.name || saved.fingerprint != own {
            return Err(Error::Invalid(format!(
                "the checkpoint of stream {:?} was saved by another run ({}), not by this one ({own}): resume with \
                 the config that wrote it, or delete the checkpoint to restart the stream from frame 0",
                job.name, saved.fingerprint
            )));
        }
        if saved.frames == 0 || saved.frames >= settings.frames {
            return Err(Error::Invalid(format!(
                "the checkpoint of stream {:?} was taken after {} frames of a stream of {}: a stream continues \
                 after 1 to {} frames; delete the checkpoint to restart the stream from frame 0",
                job.name,
                saved.frames,
                settings.frames,
                settings.frames.saturating_sub(1)
            )));
        }
    }
    Ok(())
}

impl Draft {
    /// Checks `settings` and `work`: counts, then stream names, the grid against the kernels'
    /// rank and the kernels' WGSL, so that a WGSL error or a bad name costs nothing.
    pub(crate) fn new(settings: Settings, work: Work) -> Result<Self> {
        settings.check()?;
        if let Work::Jobs(jobs) = &work {
            check_job_names(jobs)?;
        }
        let kernels = work.kernels();
        let grid = if kernels.is_empty() { None } else { Some(check_grid(&settings.shape, kernels.iter().copied())?) };
        let workgroup_sizes = kernel_workgroup_sizes(kernels)?;
        Ok(Draft { settings, work, grid, workgroup_sizes })
    }

    /// The plan on `devices` (opened, or not yet, whose limits are then unknown) for `sink`:
    /// the jobs, the layout, and every size checked ([`sizes::check`]); nothing is allocated
    /// or created.
    pub(crate) fn plan(self, devices: &[DeviceSize], sink: &dyn Sink) -> Result<Plan> {
        let Draft { mut settings, work, grid, workgroup_sizes } = self;
        let labels: Vec<&str> = devices.iter().map(DeviceSize::label).collect();
        let jobs = work.into_jobs(&labels);
        check_frame_count(&settings, &jobs)?;
        let sized = sized_grid(&settings, grid)?;
        check_resumes(&settings, grid.as_ref(), &jobs)?;
        let (mut layout, state_fields, grid_fields) = stream_layout(&settings, sized.as_ref(), &jobs)?;
        let shape = RunShape {
            grid: sized,
            state_fields,
            frame_fields: grid_fields,
            staging_buffers: settings.staging_buffers,
            io_buffer: settings.io_buffer.unwrap_or_else(|| settings.io_buffer_default()),
            workgroup_sizes,
        };
        // A shard's adapters are its own: the shards' sinks must write the same attributes.
        if settings.shard.1 == 1 {
            layout.attributes.insert("adapters".to_owned(), labels.join("; ").into());
        }
        let fingerprints: Vec<String> =
            jobs.iter().map(|j| j.fingerprint(grid.as_ref(), settings.steps_per_frame)).collect();
        let split = split_run(&mut settings, jobs, devices.len(), grid_fields, &mut layout)?;
        // A split domain's rank produces its block, and its sink stores the whole grid.
        let produced = split.block.as_ref().unwrap_or(&layout);
        let (memory, shape) = fit_host_memory(shape, &settings, devices, sink, (produced, &layout))?;
        Ok(Plan {
            total_frames: total_frames(&settings, &split.jobs),
            readback: readback(&settings, split.lockstep.is_some()),
            settings,
            grid,
            jobs: split.jobs,
            layout,
            pool_frames: memory.pool_frames,
            io_buffer: shape.io_buffer,
            lockstep: split.lockstep,
            fingerprints,
            grid_fields,
            saver: split.saver,
        })
    }
}

/// Errors unless the frames of every stream together fit a 64-bit count.
fn check_frame_count(settings: &Settings, jobs: &[Job]) -> Result<()> {
    if settings.frames.checked_mul(jobs.len() as u64).is_some() {
        return Ok(());
    }
    Err(Error::TooLarge {
        key: "run.frames",
        message: format!(
            "{} frames × {} streams overflow a 64-bit count: use fewer frames",
            settings.frames,
            jobs.len()
        ),
    })
}

/// The grid the run's sizes are checked on: a split domain's block, else `grid`.
fn sized_grid(settings: &Settings, grid: Option<Grid>) -> Result<Option<Grid>> {
    #[cfg(feature = "mpi")]
    if let Some(split) = &settings.split {
        return Ok(Some(split.sized_grid(&settings.shape)?));
    }
    #[cfg(not(feature = "mpi"))]
    let _ = settings;
    Ok(grid)
}

/// What a split domain makes of the run (or the run as it is, in one process).
struct SplitRun {
    jobs: Vec<Job>,
    lockstep: Option<Lockstep>,
    /// The layout of the frames a rank produces: its block's.
    block: Option<StreamLayout>,
    saver: Option<Box<dyn Saver>>,
}

/// The run's jobs as a split domain runs them (taking `settings.split`), with `layout`
/// made the whole grid's, or the jobs as they are.
fn split_run(
    settings: &mut Settings,
    jobs: Vec<Job>,
    devices: usize,
    grid_fields: usize,
    layout: &mut StreamLayout,
) -> Result<SplitRun> {
    #[cfg(feature = "mpi")]
    if let Some(split) = settings.split.take() {
        let (encoding, steps) = (settings.field_encoding(), settings.steps_per_frame);
        let run = split.into_run(encoding, steps, jobs, devices, (&settings.analysis, grid_fields), layout)?;
        return Ok(SplitRun {
            jobs: run.jobs,
            lockstep: Some(run.lockstep),
            block: Some(run.produced),
            saver: Some(run.saver),
        });
    }
    #[cfg(not(feature = "mpi"))]
    let _ = (settings, devices, grid_fields, layout);
    Ok(SplitRun { jobs, lockstep: None, block: None, saver: None })
}

/// Checks every size ([`sizes::check`]) of frames `produced` and `stored` (a split domain's
/// differ); returns the host memory the run holds and the run's shape. Where `auto` chose
/// the channel's capacity itself, a shallower channel that fits is no error.
fn fit_host_memory(
    mut shape: RunShape,
    settings: &Settings,
    devices: &[DeviceSize],
    sink: &dyn Sink,
    (produced, stored): (&StreamLayout, &StreamLayout),
) -> Result<(HostMemory, RunShape)> {
    let mut memory = sizes::check(&shape, devices, sink, produced, stored);
    while matches!(memory, Err(Error::TooLarge { .. }))
        && settings.mode == IoMode::Auto
        && settings.io_buffer.is_none()
        && shape.io_buffer > 0
    {
        shape.io_buffer -= 1;
        memory = sizes::check(&shape, devices, sink, produced, stored);
    }
    Ok((memory?, shape))
}

/// Frames this process runs: its shard's streams', less those resumed streams keep (cannot
/// overflow: [`check_frame_count`]).
fn total_frames(settings: &Settings, jobs: &[Job]) -> u64 {
    let (shard, shards) = settings.shard;
    jobs.iter().enumerate().filter(|(i, _)| i % shards == shard).map(|(_, j)| settings.frames - j.kept_frames()).sum()
}

/// How each device reads its frames back.
fn readback(settings: &Settings, lockstep: bool) -> ReadbackConfig {
    ReadbackConfig {
        steps_per_frame: settings.steps_per_frame,
        frames: settings.frames,
        staging_buffers: settings.staging_buffers,
        fields: Vec::new(),
        // Sync mode is the blocking baseline: nothing may compute while a frame is written
        // (auto's inline writes let the GPU work ahead). A split domain's frames exchange
        // halos between steps: one frame in flight.
        work_ahead: settings.mode != IoMode::Sync && !lockstep,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use wgpipe_compute::gray_scott::GrayScottParams;
    use wgpipe_storage::{Attributes, NullSink};

    use super::*;
    use crate::pool::BufferPool;

    fn per_device(settings: Settings, devices: usize) -> Result<Plan> {
        let work = Work::PerDevice {
            kernel: GrayScottParams::default().kernel(),
            init: Arc::new(|_, grid: &Grid| vec![0.0; 2 * grid.cells()]),
            attributes: Arc::new(|_| Attributes::new()),
        };
        Draft::new(settings, work)?.plan(&vec![DeviceSize::unopened(); devices], &NullSink::default())
    }

    #[test]
    fn the_pool_holds_the_frames_the_memory_check_counted() -> Result<()> {
        let plan = per_device(Settings { shape: vec![16, 16], io_buffer: Some(5), ..Settings::default() }, 3)?;
        assert_eq!(Some(plan.pool_frames), BufferPool::capacity_for(3, 5));
        assert_eq!(plan.pool_frames, 3 * 2 + 5 + 1);
        let streams: Vec<&str> = plan.layout.streams.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(streams, ["stream0", "stream1", "stream2"], "one stream per device");
        assert_eq!(plan.total_frames, 3 * 10);
        assert!(plan.layout.attributes.contains_key("adapters"));
        Ok(())
    }

    #[test]
    fn a_shard_plans_every_stream_and_counts_its_own_frames() -> Result<()> {
        let plan = per_device(Settings { shape: vec![16, 16], shard: (1, 2), ..Settings::default() }, 3)?;
        assert_eq!(plan.layout.streams.len(), 3, "the sink receives every stream of the batch");
        assert_eq!(plan.total_frames, 10, "stream 1 is the only one of shard 1 of 2");
        assert!(!plan.layout.attributes.contains_key("adapters"), "each shard has its own adapters");
        Ok(())
    }
}
