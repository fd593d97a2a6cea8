//! A configured run: devices opened, jobs queued, sink ready; `run` wires the threads.

use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, bounded};
use wgpipe_compute::{GpuDevice, Grid};
use wgpipe_storage::{Sink, SinkSummary, StreamLayout};

use crate::checkpoint::AutoInterval;
use crate::error::{Error, Result};
use crate::failure::Failure;
use crate::handoff::{Handoff, Tuned};
use crate::lockstep::Lockstep;
use crate::plan::Plan;
use crate::pool::BufferPool;
use crate::progress::Progress;
use crate::report::{CheckpointReport, DeviceReport, IoMode, RunReport, TuningReport, WriterReport};
use crate::run_state::{RunState, StopHandle};
use crate::settings::Settings;
use crate::trace::Recorder;
use crate::tuning::Tuner;
use crate::worker::{CopyThreads, WorkerContext, device_thread};
use crate::writer::{CheckpointWriter, Envelope, FrameWriter, SharedWriter, lock, writer_thread};

/// A run ready to start: see [`Pipeline::builder`].
pub struct Pipeline {
    /// What `build` checked: the pipeline only reads it.
    plan: Plan,
    gpus: Vec<GpuDevice>,
    sink: Box<dyn Sink>,
    progress: Arc<Progress>,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("gpus", &self.gpus)
            .field("jobs", &self.plan.jobs)
            .field("layout", &self.plan.layout)
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
    /// The run `plan` describes, on `gpus` (the devices it was planned on), writing to `sink`.
    pub(crate) fn new(plan: Plan, gpus: Vec<GpuDevice>, sink: Box<dyn Sink>) -> Self {
        let progress = Arc::new(Progress::new(gpus.len(), plan.total_frames).with_streams(plan.layout.streams.len()));
        Pipeline { plan, gpus, sink, progress }
    }

    /// Live progress, for a reporter thread.
    pub fn progress(&self) -> Arc<Progress> {
        Arc::clone(&self.progress)
    }

    /// A handle that stops the run from another thread.
    pub fn stop_handle(&self) -> StopHandle {
        self.plan.settings.stop.clone()
    }

    /// The devices the run uses.
    pub fn gpus(&self) -> &[GpuDevice] {
        &self.gpus
    }

    /// The capacity of the channel between the devices and the writer thread (frames):
    /// `io_buffer` as given, else the mode's default, which `auto` lowers to what host memory
    /// holds.
    pub fn io_buffer(&self) -> usize {
        self.plan.io_buffer
    }

    /// What the sink will receive.
    pub fn layout(&self) -> &StreamLayout {
        &self.plan.layout
    }

    /// Runs every job to the end and closes the output.
    ///
    /// Returns [`Error::Failed`] if any thread failed (the other devices finish their jobs
    /// when only a device failed; everything stops promptly when the sink failed), and
    /// [`Error::Interrupted`] after a stop; in both cases the output holds every frame
    /// written and was closed properly.
    pub fn run(self) -> Result<RunReport> {
        let Pipeline { mut plan, gpus, mut sink, progress } = self;
        let shard = plan.settings.shard;
        let local = move |i: usize| i % shard.1 == shard.0;
        remove_stale_checkpoints(plan.settings.checkpoints.as_ref(), &plan.jobs, local)?;
        let streams = local_streams(&plan.jobs, plan.settings.frames, local);
        sink.begin(&plan.layout)?;
        let start = Instant::now();
        let (frame_bytes, cells) = frame_size(plan.lockstep.as_ref(), &plan.layout, plan.grid.as_ref())?;
        let (mode, io_buffer, trace) = (plan.settings.mode, plan.io_buffer, plan.settings.trace);
        let steps_per_frame = plan.readback.steps_per_frame;
        let auto = Arc::new(AutoInterval::default());
        let saver = plan.saver.take();
        let checkpoint_writer =
            plan.settings.checkpoints.clone().map(|c| CheckpointWriter::new(c, Arc::clone(&auto), saver));
        let writer = FrameWriter::shared(sink, Arc::clone(&progress), checkpoint_writer);
        // A split domain's ranks step together: its frames go to the writer thread as in
        // async mode, unmeasured.
        let tuner =
            (mode == IoMode::Auto && plan.lockstep.is_none()).then(|| Arc::new(Tuner::new(gpus.len(), io_buffer)));
        let (handoff, frames_rx) = handoff(mode, io_buffer, &writer, tuner.as_ref());
        let pool = Arc::new(BufferPool::new(frame_bytes, plan.pool_frames));
        let ctx = worker_context(plan, pool, &progress, &auto, gpus.len(), local);
        let to_writer = frames_rx.map(|frames| WriterSide { writer: &writer, frames, tuner: tuner.as_deref() });
        let (devices, writer_report) = run_threads(&gpus, &ctx, handoff, to_writer, Recorder::new(start, trace));
        let finishing = Instant::now();
        let (sink, checkpoints) = finish_output(&writer, &ctx.state, &progress, &streams);
        let frames: u64 = devices.iter().map(|d| d.frames).sum();
        let report = RunReport {
            mode,
            devices,
            writer: writer_report,
            sink,
            checkpoints,
            tuning: tuning_report(tuner.as_deref(), mode, io_buffer),
            cell_steps: frames * u64::from(steps_per_frame) * cells,
            finish_seconds: finishing.elapsed().as_secs_f64(),
            wall_seconds: start.elapsed().as_secs_f64(),
        };
        conclude(report, &ctx.state, &progress)
    }
}

/// What the device threads share, from the rest of `plan`: this process's (`local`) jobs
/// queued, the buffer pool, the run's state, and every setting a device thread reads.
fn worker_context(
    plan: Plan,
    pool: Arc<BufferPool>,
    progress: &Arc<Progress>,
    auto: &Arc<AutoInterval>,
    devices: usize,
    local: impl Fn(usize) -> bool,
) -> WorkerContext {
    let field_encoding = plan.settings.field_encoding();
    let Plan { settings, grid, jobs, layout, readback, lockstep, fingerprints, grid_fields, .. } = plan;
    let Settings { gpu_timestamps, copy_threads, stop, checkpoints, analysis, .. } = settings;
    WorkerContext {
        jobs: job_queue(jobs, local),
        pool,
        progress: Arc::clone(progress),
        state: Arc::new(RunState::new(stop)),
        grid,
        readback,
        field_encoding,
        gpu_timestamps,
        fields: layout.fields.iter().take(grid_fields).map(|f| f.name.clone()).collect(),
        analysis,
        lockstep,
        checkpoints: checkpoints.map(|c| (c.interval, Arc::clone(auto))),
        fingerprints,
        copy_threads: copy_threads.map_or(CopyThreads::Auto(crate::worker::copy_threads(devices)), CopyThreads::Set),
    }
}

/// Removes the checkpoint of every stream of this process (`local`) that starts from frame 0:
/// an older run's must not be taken for this one's.
fn remove_stale_checkpoints(
    checkpoints: Option<&crate::checkpoint::Checkpoints>,
    jobs: &[crate::job::Job],
    local: impl Fn(usize) -> bool,
) -> Result<()> {
    let Some(c) = checkpoints else { return Ok(()) };
    for (_, job) in jobs.iter().enumerate().filter(|(i, j)| local(*i) && j.resume.is_none()) {
        crate::checkpoint::remove(&c.dir, &job.name)?;
    }
    Ok(())
}

/// Bytes of a frame, and the cells each step updates: a split domain's are its block's;
/// cell-steps mean something for field kernels only (0 for frame sources).
fn frame_size(lockstep: Option<&Lockstep>, layout: &StreamLayout, grid: Option<&Grid>) -> Result<(usize, u64)> {
    Ok(match lockstep {
        Some(l) => (l.frame_bytes, l.cells),
        None => (layout.frame_bytes()?, grid.map_or(0, |g| g.cells() as u64)),
    })
}

/// This process's (`local`) streams: index, name and the frames this run writes of each
/// (`frames` less those a resumed stream keeps).
fn local_streams(jobs: &[crate::job::Job], frames: u64, local: impl Fn(usize) -> bool) -> Vec<(usize, String, u64)> {
    jobs.iter()
        .enumerate()
        .filter(|(i, _)| local(*i))
        .map(|(i, j)| (i, j.name.clone(), frames - j.kept_frames()))
        .collect()
}

/// The queue the devices pull this process's (`local`) jobs from, each with its stream index.
fn job_queue(jobs: Vec<crate::job::Job>, local: impl Fn(usize) -> bool) -> Receiver<(usize, crate::job::Job)> {
    let (job_tx, job_rx) = bounded(jobs.len());
    for (stream, job) in jobs.into_iter().enumerate().filter(|(i, _)| local(*i)) {
        // Cannot fail: the channel holds every job and its receiver is alive.
        let _ = job_tx.send((stream, job));
    }
    job_rx
}

/// How the devices hand frames to `writer` in `mode`, and the receiving end of the channel a
/// writer thread reads (`None` in sync mode, which has no writer thread).
fn handoff(
    mode: IoMode,
    io_buffer: usize,
    writer: &SharedWriter,
    tuner: Option<&Arc<Tuner>>,
) -> (Handoff, Option<Receiver<Envelope>>) {
    let (tx, rx) = bounded(io_buffer);
    match (mode, tuner) {
        (IoMode::Sync, _) => (Handoff::Direct(Arc::clone(writer)), None),
        (_, Some(tuner)) => (Handoff::Tuned(Tuned::new(tx, Arc::clone(writer), Arc::clone(tuner))), Some(rx)),
        (_, None) => (Handoff::Channel(tx), Some(rx)),
    }
}

/// What the writer thread works with.
struct WriterSide<'a> {
    writer: &'a SharedWriter,
    frames: Receiver<Envelope>,
    tuner: Option<&'a Tuner>,
}

/// Runs the writer thread (unless sync mode has none) and one thread per device until every
/// job is done; a thread that panics or cannot start fails the run. Returns the devices'
/// reports (in device order) and the writer's.
fn run_threads(
    gpus: &[GpuDevice],
    ctx: &WorkerContext,
    handoff: Handoff,
    to_writer: Option<WriterSide<'_>>,
    recorder: Recorder,
) -> (Vec<DeviceReport>, WriterReport) {
    let state = &ctx.state;
    let (mut devices, mut writer) = (Vec::new(), WriterReport::default());
    std::thread::scope(|scope| {
        let writer_handle = to_writer.map(|w| {
            let (state, recorder) = (&**state, recorder.clone());
            std::thread::Builder::new()
                .name("wgpipe-writer".to_owned())
                .spawn_scoped(scope, move || writer_thread(w.writer, w.frames, state, w.tuner, recorder))
        });
        let mut device_handles = Vec::new();
        for (d, gpu) in gpus.iter().enumerate() {
            let (handoff, recorder) = (handoff.clone(), recorder.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("wgpipe-device-{d}"))
                .spawn_scoped(scope, move || device_thread(d, gpu, ctx, handoff, recorder));
            device_handles.push((gpu.label().to_owned(), spawned));
        }
        // Each device thread holds its own Sender; dropping ours lets the writer see the
        // channel close once they all end.
        drop(handoff);
        for (label, handle) in device_handles {
            let thread = format!("device {label}");
            match handle {
                Ok(h) => match h.join() {
                    Ok(r) => devices.push(r),
                    Err(p) => state.fail(&thread, format!("panicked: {}", panic_message(p.as_ref()))),
                },
                Err(e) => state.fail(&thread, format!("cannot start thread: {e}")),
            }
        }
        match writer_handle {
            None => {}
            Some(Ok(h)) => match h.join() {
                Ok(w) => writer = w,
                Err(p) => state.fail("writer", format!("panicked: {}", panic_message(p.as_ref()))),
            },
            Some(Err(e)) => state.fail("writer", format!("cannot start thread: {e}")),
        }
    });
    (devices, writer)
}

/// Finishes the sink and, for streams that completed (nothing failed, every frame written),
/// removes their checkpoints (an incomplete one's is what `--resume` needs). Returns what the
/// sink and the checkpoints report.
fn finish_output(
    writer: &SharedWriter,
    state: &RunState,
    progress: &Progress,
    streams: &[(usize, String, u64)],
) -> (SinkSummary, CheckpointReport) {
    let mut w = lock(writer);
    let summary = match w.sink.finish() {
        Ok(summary) => summary,
        Err(e) => {
            state.fail_storing("writer", Some("finishing the output"), e);
            SinkSummary::default()
        }
    };
    let Some(c) = w.checkpoints.take() else { return (summary, CheckpointReport::default()) };
    let written = progress.snapshot().streams;
    let failed = state.has_failed();
    for (_, name, _) in streams.iter().filter(|(i, _, n)| !failed && written.get(*i) == Some(n)) {
        if let Err(e) = crate::checkpoint::remove(&c.checkpoints.dir, name) {
            state.fail_storing("writer", Some("removing the checkpoint of a complete stream"), e);
        }
    }
    (summary, c.report)
}

/// What `io.mode = "auto"` chose: the tuner's report, or for a split domain (no tuner) async
/// throughout; `None` in the fixed modes.
fn tuning_report(tuner: Option<&Tuner>, mode: IoMode, io_buffer: usize) -> Option<TuningReport> {
    match (tuner, mode) {
        (Some(t), _) => Some(t.report()),
        (None, IoMode::Auto) => Some(TuningReport {
            io_buffer,
            capacity: io_buffer,
            reason: format!(
                "async, io_buffer {io_buffer}: a split domain's ranks step together, so its frames go to the \
                 writer thread unmeasured"
            ),
            ..Default::default()
        }),
        (None, _) => None,
    }
}

/// The run's result: its failures, a stop before every frame was written, or the report.
fn conclude(mut report: RunReport, state: &RunState, progress: &Progress) -> Result<RunReport> {
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
