//! A configured run: devices opened, jobs queued, sink ready; `run` wires the threads.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use crossbeam_channel::bounded;
use wgpipe_compute::{GpuDevice, Grid, OutputDType, ReadbackConfig, open_devices};
use wgpipe_storage::{Sink, StreamLayout};

use crate::builder::{Devices, PipelineBuilder, Work};
use crate::error::{Error, Failure, Result};
use crate::job::Job;
use crate::lockstep::Lockstep;
use crate::pool::BufferPool;
use crate::preflight::{check_grid, check_job_names, kernel_workgroup_sizes, preflight};
use crate::progress::Progress;
use crate::report::{IoMode, RunReport};
use crate::run_state::{RunState, StopHandle};
use crate::sizes::DeviceSize;
use crate::trace::Recorder;
use crate::worker::{Handoff, WorkerContext, device_thread};
use crate::writer::{FrameWriter, lock, writer_thread};

/// A run ready to start: see [`Pipeline::builder`].
pub struct Pipeline {
    gpus: Vec<GpuDevice>,
    jobs: Vec<Job>,
    sink: Box<dyn Sink>,
    layout: StreamLayout,
    /// The kernels' grid (every field of `layout` has its shape); `None` for frame sources.
    grid: Option<Grid>,
    readback: ReadbackConfig,
    output_dtype: OutputDType,
    gpu_timestamps: bool,
    io_buffer: usize,
    mode: IoMode,
    progress: Arc<Progress>,
    stop: StopHandle,
    trace: bool,
    /// See [`PipelineBuilder::shard`].
    shard: (usize, usize),
    /// A split domain's rank: votes with the other ranks, computes a block.
    lockstep: Option<Lockstep>,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("gpus", &self.gpus)
            .field("jobs", &self.jobs)
            .field("layout", &self.layout)
            .finish()
    }
}

/// The text of a panic payload.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panicked".to_owned())
}

impl Pipeline {
    /// Starts configuring a pipeline.
    pub fn builder() -> PipelineBuilder {
        PipelineBuilder::default()
    }

    pub(crate) fn from_builder(mut b: PipelineBuilder) -> Result<Self> {
        b.check()?;
        let (Some(work), Some(sink)) = (b.work.take(), b.sink.take()) else {
            return Err(Error::Invalid("no work or no sink".to_owned()));
        };
        // Validate kernels and names before touching any device or file: a WGSL error or a
        // bad stream name costs nothing.
        let (workgroup_sizes, grid) = match &work {
            Work::PerDevice { kernel, .. } => {
                (kernel_workgroup_sizes([kernel])?, Some(check_grid(&b.shape, [kernel])?))
            }
            Work::Jobs(jobs) => {
                check_job_names(jobs)?;
                let kernels = || jobs.iter().filter_map(Job::kernel);
                let grid = if kernels().next().is_some() { Some(check_grid(&b.shape, kernels())?) } else { None };
                (kernel_workgroup_sizes(kernels())?, grid)
            }
        };
        let gpus = match b.devices {
            Devices::Select(ref selector, count) => open_devices(selector, count)?,
            Devices::Opened(ref gpus) if gpus.is_empty() => {
                return Err(Error::Invalid("no devices given".to_owned()));
            }
            Devices::Opened(ref mut gpus) => std::mem::take(gpus),
        };
        let jobs: Vec<Job> = match work {
            Work::PerDevice { kernel, init, attributes } => (0..gpus.len())
                .map(|d| {
                    let init = Arc::clone(&init);
                    // Each stream keys the prelude's noise with its own seed.
                    let kernel = kernel.clone().with_seed(kernel.seed.wrapping_add(d as u64));
                    let mut job = Job::new(format!("stream{d}"), kernel, move |grid: &Grid| init(d, grid));
                    job.attributes = attributes(d);
                    job.attributes.insert("device".to_owned(), gpus[d].label().into());
                    job
                })
                .collect(),
            Work::Jobs(jobs) => jobs,
        };
        // Sizes against the devices, the sink and the host, before anything is allocated.
        let devices: Vec<DeviceSize> = gpus.iter().map(DeviceSize::of).collect();
        // A split domain's sizes are its block's.
        #[cfg(feature = "mpi")]
        let sized = match &b.split {
            Some(split) => Some(split.sized_grid(&b.shape)?),
            None => grid,
        };
        #[cfg(not(feature = "mpi"))]
        let sized = grid;
        let mut layout = preflight(&b, sized.as_ref(), &jobs, workgroup_sizes, sink.as_ref(), &devices)?;
        let (shard, shards) = b.shard;
        // A shard's adapters are its own: the shards' sinks must write the same attributes.
        if shards == 1 {
            layout.attributes.insert(
                "adapters".to_owned(),
                gpus.iter().map(|g| g.label().to_owned()).collect::<Vec<_>>().join("; ").into(),
            );
        }
        #[cfg(feature = "mpi")]
        let (jobs, lockstep) = match b.split.take() {
            Some(split) => split.into_run(&b, jobs, &gpus, &mut layout)?,
            None => (jobs, None),
        };
        #[cfg(not(feature = "mpi"))]
        let lockstep = None;

        // Cannot overflow: preflight checked it.
        let local_jobs = (0..jobs.len()).filter(|i| i % shards == shard).count();
        let total_frames = b.frames.saturating_mul(local_jobs as u64);
        let readback = ReadbackConfig {
            steps_per_frame: b.steps_per_frame,
            frames: b.frames,
            staging_buffers: b.staging_buffers,
            fields: Vec::new(), // per job, from its kernel's field order
            // Sync mode is the blocking baseline: nothing may compute while a frame is written.
            // A split domain's frames exchange halos between steps: one frame in flight.
            work_ahead: b.mode == IoMode::Async && lockstep.is_none(),
        };
        Ok(Pipeline {
            progress: Arc::new(Progress::new(gpus.len(), total_frames)),
            gpus,
            jobs,
            sink,
            layout,
            grid,
            readback,
            output_dtype: b.output_dtype,
            gpu_timestamps: b.gpu_timestamps,
            io_buffer: b.io_buffer,
            mode: b.mode,
            stop: b.stop,
            trace: b.trace,
            shard: b.shard,
            lockstep,
        })
    }

    /// Live progress, for a reporter thread.
    pub fn progress(&self) -> Arc<Progress> {
        Arc::clone(&self.progress)
    }

    /// A handle that stops the run from another thread.
    pub fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }

    /// The devices the run uses.
    pub fn gpus(&self) -> &[GpuDevice] {
        &self.gpus
    }

    /// What the sink will receive.
    pub fn layout(&self) -> &StreamLayout {
        &self.layout
    }

    /// Runs every job to the end and closes the output.
    ///
    /// Returns [`Error::Failed`] if any thread failed (the other devices finish their jobs
    /// when only a device failed; everything stops promptly when the sink failed), and
    /// [`Error::Interrupted`] after a stop; in both cases the output holds every frame
    /// written and was closed properly.
    pub fn run(self) -> Result<RunReport> {
        let Pipeline {
            gpus,
            jobs,
            mut sink,
            layout,
            grid,
            readback,
            output_dtype,
            gpu_timestamps,
            io_buffer,
            mode,
            progress,
            stop,
            trace,
            shard: (shard, shards),
            lockstep,
        } = self;
        sink.begin(&layout)?;
        let start = Instant::now();
        let state = Arc::new(RunState::new(stop));
        let frame_bytes = match &lockstep {
            Some(l) => l.frame_bytes,
            None => layout.frame_bytes()?,
        };
        let cells = lockstep.as_ref().map_or(grid.map_or(0, |g| g.cells() as u64), |l| l.cells);
        let pool = BufferPool::new(frame_bytes, gpus.len() * 2 + io_buffer + 1);
        let writer = Arc::new(Mutex::new(FrameWriter { sink, pool: pool.clone(), progress: Arc::clone(&progress) }));

        let (job_tx, job_rx) = bounded(jobs.len());
        for (stream, job) in jobs.into_iter().enumerate().filter(|(i, _)| i % shards == shard) {
            // Cannot fail: the channel holds every job and its receiver is alive.
            let _ = job_tx.send((stream, job));
        }
        drop(job_tx);
        let (frame_tx, frame_rx) = bounded(io_buffer);
        let handoff = match mode {
            IoMode::Async => Handoff::Channel(frame_tx),
            IoMode::Sync => {
                drop(frame_tx);
                Handoff::Direct(Arc::clone(&writer))
            }
        };
        let ctx = WorkerContext {
            jobs: job_rx,
            pool,
            progress: Arc::clone(&progress),
            state: Arc::clone(&state),
            grid,
            readback: readback.clone(),
            output_dtype,
            gpu_timestamps,
            fields: layout.fields.iter().map(|f| f.name.clone()).collect(),
            lockstep,
        };

        let mut report = RunReport { mode, ..Default::default() };
        std::thread::scope(|scope| {
            let writer_handle = (mode == IoMode::Async).then(|| {
                let (writer, state) = (&writer, &state);
                std::thread::Builder::new()
                    .name("wgpipe-writer".to_owned())
                    .spawn_scoped(scope, move || writer_thread(writer, frame_rx, state, Recorder::new(start, trace)))
            });
            let mut device_handles = Vec::new();
            for (d, gpu) in gpus.iter().enumerate() {
                let (ctx, handoff) = (&ctx, handoff.clone());
                let spawned = std::thread::Builder::new()
                    .name(format!("wgpipe-device-{d}"))
                    .spawn_scoped(scope, move || device_thread(d, gpu, ctx, handoff, Recorder::new(start, trace)));
                device_handles.push((gpu.label().to_owned(), spawned));
            }
            // Each device thread holds its own Sender; dropping ours lets the writer see the
            // channel close once they all end.
            drop(handoff);
            for (label, handle) in device_handles {
                let thread = format!("device {label}");
                match handle {
                    Ok(h) => match h.join() {
                        Ok(r) => report.devices.push(r),
                        Err(p) => state.fail(&thread, format!("panicked: {}", panic_message(p.as_ref()))),
                    },
                    Err(e) => state.fail(&thread, format!("cannot start thread: {e}")),
                }
            }
            match writer_handle {
                None => {}
                Some(Ok(h)) => match h.join() {
                    Ok(w) => report.writer = w,
                    Err(p) => state.fail("writer", format!("panicked: {}", panic_message(p.as_ref()))),
                },
                Some(Err(e)) => state.fail("writer", format!("cannot start thread: {e}")),
            }
        });

        let finishing = Instant::now();
        match lock(&writer).sink.finish() {
            Ok(summary) => report.sink = summary,
            Err(e) => state.fail("writer", format!("finishing the output: {e}")),
        }
        report.finish_seconds = finishing.elapsed().as_secs_f64();
        report.wall_seconds = start.elapsed().as_secs_f64();
        // Cell-steps mean something for field kernels only (`cells`: 0 for frame sources).
        report.cell_steps =
            report.devices.iter().map(|d| d.frames).sum::<u64>() * u64::from(readback.steps_per_frame) * cells;
        if report.sink.frames == 0 {
            // `finish` failed (or the sink reports nothing): the counters still know what the
            // sink accepted, which is what `written_frames` and the error messages report.
            let snap = progress.snapshot();
            report.sink.frames = snap.written;
            report.sink.bytes = snap.bytes;
        }

        let failures: Vec<Failure> = state.take_failures();
        if !failures.is_empty() {
            return Err(Error::Failed { failures, report: Box::new(report) });
        }
        if state.user_stop.is_stopped() && progress.snapshot().written < progress.snapshot().total_frames {
            return Err(Error::Interrupted { report: Box::new(report) });
        }
        Ok(report)
    }
}
