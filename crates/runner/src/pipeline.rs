//! A configured run: devices opened, jobs queued, sink ready; `run` wires the threads.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use crossbeam_channel::bounded;
use wgpipe_compute::GpuDevice;
use wgpipe_storage::{Sink, StreamLayout};

use crate::checkpoint::AutoInterval;
use crate::error::{Error, Failure, Result};
use crate::plan::Plan;
use crate::pool::BufferPool;
use crate::progress::Progress;
use crate::report::CheckpointReport;
use crate::report::{IoMode, RunReport, TuningReport};
use crate::run_state::{RunState, StopHandle};
use crate::settings::Settings;
use crate::trace::Recorder;
use crate::tuning::Tuner;
use crate::worker::{CopyThreads, Handoff, WorkerContext, device_thread};
use crate::writer::{CheckpointWriter, FrameWriter, lock, writer_thread};

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
        let Pipeline { plan, gpus, mut sink, progress } = self;
        let Plan {
            settings,
            grid,
            jobs,
            layout,
            readback,
            pool_frames,
            io_buffer,
            total_frames: _,
            lockstep,
            fingerprints,
            grid_fields,
            saver,
        } = plan;
        let Settings {
            output_dtype,
            gpu_timestamps,
            copy_threads,
            mode,
            stop,
            trace,
            shard: (shard, shards),
            checkpoints,
            frames,
            analysis: settings_analysis,
            ..
        } = settings;
        let local = |i: &usize| i % shards == shard;
        // A stream starting from frame 0 must not leave an older run's checkpoint behind.
        if let Some(c) = &checkpoints {
            for (_, job) in jobs.iter().enumerate().filter(|(i, j)| local(i) && j.resume.is_none()) {
                crate::checkpoint::remove(&c.dir, &job.name)?;
            }
        }
        // This process's streams: (index, name, frames this run writes).
        let streams: Vec<(usize, String, u64)> = jobs
            .iter()
            .enumerate()
            .filter(|(i, _)| local(i))
            .map(|(i, j)| (i, j.name.clone(), frames - j.kept_frames()))
            .collect();
        sink.begin(&layout)?;
        let start = Instant::now();
        let state = Arc::new(RunState::new(stop));
        // A split domain's frames are its block's; cell-steps mean something for field kernels only.
        let (frame_bytes, cells) = match &lockstep {
            Some(l) => (l.frame_bytes, l.cells),
            None => (layout.frame_bytes()?, grid.map_or(0, |g| g.cells() as u64)),
        };
        let pool = BufferPool::new(frame_bytes, pool_frames);
        let auto = Arc::new(AutoInterval::default());
        let checkpoint_writer = checkpoints.as_ref().map(|c| CheckpointWriter {
            checkpoints: c.clone(),
            auto: Arc::clone(&auto),
            report: CheckpointReport::default(),
            saver,
        });
        let writer = Arc::new(Mutex::new(FrameWriter {
            sink,
            pool: Arc::new(pool.clone()),
            progress: Arc::clone(&progress),
            checkpoints: checkpoint_writer,
        }));

        let (job_tx, job_rx) = bounded(jobs.len());
        for (stream, job) in jobs.into_iter().enumerate().filter(|(i, _)| i % shards == shard) {
            // Cannot fail: the channel holds every job and its receiver is alive.
            let _ = job_tx.send((stream, job));
        }
        drop(job_tx);
        let (frame_tx, frame_rx) = bounded(io_buffer);
        // A split domain's ranks step together: its frames go to the writer thread as in
        // async mode, unmeasured.
        let tuner = (mode == IoMode::Auto && lockstep.is_none()).then(|| Arc::new(Tuner::new(gpus.len(), io_buffer)));
        let handoff = match (mode, &tuner) {
            (IoMode::Sync, _) => {
                drop(frame_tx);
                Handoff::Direct(Arc::clone(&writer))
            }
            (_, Some(tuner)) => Handoff::Tuned { tx: frame_tx, writer: Arc::clone(&writer), tuner: Arc::clone(tuner) },
            (_, None) => Handoff::Channel(frame_tx),
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
            fields: layout.fields.iter().take(grid_fields).map(|f| f.name.clone()).collect(),
            analysis: settings_analysis,
            lockstep,
            checkpoints: checkpoints.as_ref().map(|c| (c.interval, Arc::clone(&auto))),
            fingerprints,
            copy_threads: copy_threads
                .map_or(CopyThreads::Auto(crate::worker::copy_threads(gpus.len())), CopyThreads::Set),
        };

        let mut report = RunReport { mode, ..Default::default() };
        std::thread::scope(|scope| {
            let writer_handle = (mode != IoMode::Sync).then(|| {
                let (writer, state, tuner) = (&writer, &state, tuner.as_deref());
                std::thread::Builder::new().name("wgpipe-writer".to_owned()).spawn_scoped(scope, move || {
                    writer_thread(writer, frame_rx, state, tuner, Recorder::new(start, trace))
                })
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
        let mut w = lock(&writer);
        match w.sink.finish() {
            Ok(summary) => report.sink = summary,
            Err(e) => state.fail_storing("writer", Some("finishing the output"), &e),
        }
        if let Some(c) = w.checkpoints.take() {
            report.checkpoints = c.report;
            // A complete stream's checkpoint has nothing left to restart (an incomplete one's
            // is what --resume needs).
            let written = progress.snapshot().streams;
            let failed = state.has_failed();
            for (_, name, _) in streams.iter().filter(|(i, _, n)| !failed && written.get(*i) == Some(n)) {
                if let Err(e) = crate::checkpoint::remove(&c.checkpoints.dir, name) {
                    state.fail("writer", format!("removing the checkpoint of a complete stream: {e}"));
                }
            }
        }
        drop(w);
        report.tuning = match (&tuner, mode) {
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
        };
        report.finish_seconds = finishing.elapsed().as_secs_f64();
        report.wall_seconds = start.elapsed().as_secs_f64();
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
