//! The device thread: pulls jobs, produces their frames, hands each frame off.

use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::Receiver;
use wgpipe_compute::{
    BlockObserver, FieldEncoding, FieldSim, FrameInfo, FrameProducer, GpuDevice, Grid, ReadbackConfig,
};
use wgpipe_storage::{BlockHasher, Frame, HASH_BLOCK};

use crate::analysis::Analysis;
use crate::checkpoint::{AutoInterval, Interval, SavedState, Schedule};
use crate::failure::FailureKind;
use crate::handoff::{Handoff, Origin, Produced, Stopping};
use crate::job::{Job, Producer};
use crate::lockstep::{Lockstep, Verdict};
use crate::pool::{BufferPool, LentBuffer};
use crate::progress::Progress;
use crate::report::DeviceReport;
use crate::run_state::RunState;
use crate::trace::{Recorder, SpanKind};
use crate::writer::Envelope;

/// What the device threads share besides their own device.
pub(crate) struct WorkerContext {
    pub jobs: Receiver<(usize, Job)>,
    pub pool: Arc<BufferPool>,
    pub progress: Arc<Progress>,
    pub state: Arc<RunState>,
    /// The kernels' grid; `None` when frame sources produce the frames.
    pub grid: Option<Grid>,
    pub readback: ReadbackConfig,
    /// How the kernels' fields leave the device.
    pub field_encoding: FieldEncoding,
    /// Whether frames are timed with GPU timestamp queries where the device has them.
    pub gpu_timestamps: bool,
    pub fields: Vec<String>,
    /// A run in step with other processes (a split domain): votes at each frame boundary.
    pub lockstep: Option<Lockstep>,
    /// How often streams save their state, and the cost the writer measured (`Auto`).
    pub checkpoints: Option<(Interval, Arc<AutoInterval>)>,
    /// Each stream's fingerprint, carried by its checkpoints.
    pub fingerprints: Vec<String>,
    /// The reductions each frame carries behind its fields.
    pub analysis: Analysis,
    /// Threads a device copies each frame out of staging on.
    pub copy_threads: CopyThreads,
}

/// How many threads a device copies its frames out of staging on.
#[derive(Debug, Clone, Copy)]
pub(crate) enum CopyThreads {
    /// The user's (`io.copy_threads`): on every adapter.
    Set(usize),
    /// The default: this many on a GPU ([`copy_threads`]), one on a CPU adapter.
    Auto(usize),
}

/// Threads each device thread copies (and hashes) its frames on, when its adapter is a GPU:
/// the cores this process may run on shared among the devices and the writer, 8 at most
/// (on a fast GPU one thread copying out of mapped memory is what the run waits for: the
/// guide's benchmark page, "Copying frames out of staging"). A CPU adapter copies on its
/// device thread alone: its
/// compute runs on the same cores.
pub(crate) fn copy_threads(devices: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    (cores / (devices + 1)).clamp(1, 8)
}

/// The runner's hash of a frame ([`BlockHasher`]) fed by the copy out of staging, block by
/// block on whichever thread copied the block.
struct HashWhileCopying(BlockHasher);

impl BlockObserver for HashWhileCopying {
    fn block_bytes(&self) -> usize {
        HASH_BLOCK
    }
    fn observe(&self, index: usize, block: &[u8]) {
        self.0.hash_block(index, block);
    }
}

/// Why a job ended early.
enum Stop {
    /// The run is stopping (user stop, sink failure): not this device's fault.
    Run,
    /// This device failed: what to report, and the device's error where there is one.
    Device {
        /// The failure's message, naming the stream.
        message: String,
        /// [`FailureKind::Device`] with the device's error, or [`FailureKind::Other`].
        kind: FailureKind,
    },
}

impl Stop {
    /// A device failure without a device error (a job the device cannot run).
    fn device(message: String) -> Self {
        Stop::Device { message, kind: FailureKind::Other }
    }
}

/// One device thread's own state: what it works on and what it has measured.
struct DeviceWorker<'a> {
    d: usize,
    gpu: &'a GpuDevice,
    ctx: &'a WorkerContext,
    handoff: Handoff,
    report: DeviceReport,
    recorder: Recorder,
}

/// Runs jobs on `gpu` until the queue is empty, the run stops, or the device fails.
pub(crate) fn device_thread(
    d: usize,
    gpu: &GpuDevice,
    ctx: &WorkerContext,
    handoff: Handoff,
    recorder: Recorder,
) -> DeviceReport {
    let report = DeviceReport { device: gpu.label().to_owned(), ..Default::default() };
    let mut worker = DeviceWorker { d, gpu, ctx, handoff, report, recorder };
    let thread = format!("device {}", gpu.label());
    // A run in lockstep takes its job whatever the state: the job's first vote is collective.
    while ctx.lockstep.is_some() || !ctx.state.should_stop() {
        let Ok((stream, job)) = ctx.jobs.try_recv() else { break };
        worker.report.jobs.push(job.name.clone());
        match worker.run_job(stream, job) {
            Ok(()) => {}
            Err(Stop::Run) => break,
            Err(Stop::Device { message, kind }) => {
                // This device stops; the other devices go on with the remaining jobs.
                ctx.state.record(&thread, message, kind);
                break;
            }
        }
    }
    ctx.progress.device_finished();
    if let Handoff::Tuned(tuned) = &worker.handoff {
        tuned.device_finished(d);
    }
    let DeviceWorker { mut report, recorder, .. } = worker;
    report.spans = recorder.into_spans();
    report
}

/// The error of a device failing stream `name`, keeping the device's error.
fn failing(name: &str) -> impl Fn(wgpipe_compute::Error) -> Stop + '_ {
    move |e| Stop::Device { message: format!("stream {name}: {e}"), kind: FailureKind::Device(Arc::new(e)) }
}

/// The producer of a job's frames on `gpu`: its kernel's simulation (from its initial state)
/// or its frame source, continued at the checkpoint `resume` when given.
fn open_producer(
    gpu: &GpuDevice,
    ctx: &WorkerContext,
    name: &str,
    producer: Producer,
    resume: Option<&SavedState>,
) -> Result<FrameProducer, Stop> {
    let fail = failing(name);
    // A device lost while it ran an earlier job takes no more: the error names this stream.
    gpu.check().map_err(&fail)?;
    let mut producer = match producer {
        Producer::Kernel { kernel, init } => {
            let grid = ctx.grid.ok_or_else(|| Stop::device(format!("stream {name}: a kernel job needs a grid")))?;
            let indices = kernel.field_indices(&ctx.fields).map_err(&fail)?;
            let init = init(&grid);
            let sim = FieldSim::new(gpu, &kernel, &grid, &init).map_err(&fail)?;
            drop(init);
            let config = ReadbackConfig { fields: indices, ..ctx.readback.clone() };
            let analysis = ctx.analysis.spec(&kernel).map_err(|e| Stop::device(format!("stream {name}: {e}")))?;
            FrameProducer::with_analysis(sim, config, ctx.field_encoding, &analysis).map_err(&fail)?
        }
        Producer::Source(open) => {
            let source =
                open(gpu).map_err(|e| Stop::device(format!("stream {name}: opening its frame source: {e}")))?;
            let expected = ctx.pool.frame_bytes() as u64;
            if source.frame_bytes() != expected {
                return Err(Stop::device(format!(
                    "stream {name}: its frame source makes frames of {} bytes, but the frame layout holds {expected}",
                    source.frame_bytes()
                )));
            }
            FrameProducer::from_source(gpu, name.to_owned(), source, ctx.readback.clone()).map_err(&fail)?
        }
    };
    if let Some(saved) = resume {
        producer.resume_at(saved.frames, &saved.state).map_err(&fail)?;
    }
    Ok(producer)
}

/// `producer` timed and copying as the run asks: GPU timestamps or not, and its copy threads.
fn configured(producer: FrameProducer, ctx: &WorkerContext, gpu: &GpuDevice) -> FrameProducer {
    let producer = if ctx.gpu_timestamps { producer } else { producer.without_timestamps() };
    producer.with_copy_threads(match ctx.copy_threads {
        CopyThreads::Set(n) => n,
        CopyThreads::Auto(_) if gpu.adapter().is_cpu() => 1,
        CopyThreads::Auto(n) => n,
    })
}

/// When the job saves its state (`None`: never), set on `producer` from frame `first`. A
/// source that saves no state has no checkpoints: it restarts from frame 0.
fn checkpoint_schedule(
    ctx: &WorkerContext,
    producer: &mut FrameProducer,
    first: u64,
) -> wgpipe_compute::Result<Option<Schedule>> {
    match &ctx.checkpoints {
        Some((interval, auto)) if producer.state_bytes() > 0 => {
            let schedule = Schedule::new(*interval, Arc::clone(auto));
            match schedule.initial() {
                Some(every) => producer.save_state_every(every),
                None => producer.save_state_once(first),
            }?;
            Ok(Some(schedule))
        }
        _ => Ok(None),
    }
}

impl DeviceWorker<'_> {
    /// Produces every frame of one job and hands each one off.
    fn run_job(&mut self, stream: usize, mut job: Job) -> Result<(), Stop> {
        let (gpu, ctx) = (self.gpu, self.ctx);
        let name = job.name.clone();
        let fail = failing(&name);
        let fingerprint = ctx.fingerprints.get(stream).cloned().unwrap_or_default();
        let resume = job.resume.take();
        let thread = format!("device {}", gpu.label());
        let lockstep = ctx.lockstep.as_ref();
        let opened = open_producer(gpu, ctx, &name, job.producer, resume.as_ref());
        if let Some(l) = lockstep
            && l.settle(opened.is_err(), &ctx.state, &thread) != Verdict::Go
        {
            return opened.and(Err(Stop::Run));
        }
        let mut producer = configured(opened?, ctx, gpu);
        self.report.copy_threads = producer.copy_threads();
        let first = resume.map_or(0, |saved| saved.frames);
        let mut schedule = checkpoint_schedule(ctx, &mut producer, first).map_err(&fail)?;
        // `report.frames` once this job's first frame is produced (auto leaves it unmeasured).
        let first_frame_count = self.report.frames + 1;
        loop {
            if lockstep.is_none() && ctx.state.should_stop() {
                return Err(Stop::Run);
            }
            let mut data = LentBuffer::take(&ctx.pool);
            let start = Instant::now();
            // Hashed as it is copied out of the staging buffer, while each block is in the
            // cache (a second pass over a large frame cost as much as the copy on a GPU).
            let hash = HashWhileCopying(BlockHasher::new(data.len()));
            let produced = producer.next_into_observed(&mut data, &hash).map_err(&fail);
            let seconds = start.elapsed().as_secs_f64();
            self.report.compute_seconds += seconds;
            let verdict = lockstep.map_or(Verdict::Go, |l| l.settle(produced.is_err(), &ctx.state, &thread));
            if verdict == Verdict::Abandon {
                return produced.and(Err(Stop::Run));
            }
            let Some(info) = produced? else { return Ok(()) };
            self.count_frame(&info, start);
            let checkpoint = producer.take_state().map(|state| SavedState {
                stream: name.clone(),
                frames: info.index + 1,
                step: info.step,
                fingerprint: fingerprint.clone(),
                state,
            });
            if let Some(every) = schedule.as_mut().and_then(Schedule::after_frame) {
                producer.save_state_every(every).map_err(&fail)?;
                self.report.checkpoint_interval =
                    schedule.as_ref().and_then(Schedule::chosen).or(self.report.checkpoint_interval);
            }
            // Hashed on this thread (while copied, above), not by the sink: the writer's thread is
            // the one an I/O-bound run waits for.
            let frame =
                data.into_frame(|data| Frame::new(stream, info.index, info.step, data).with_block_hashes(&hash.0));
            let produced = Produced { seconds, first_of_job: self.report.frames == first_frame_count };
            self.hand_off(Envelope { device: self.d, frame, checkpoint }, produced)?;
            if verdict == Verdict::Last {
                return Err(Stop::Run);
            }
        }
    }

    /// Counts a frame produced since `start`: its GPU time (counted only while every frame the
    /// device produced had one), its spans, progress.
    fn count_frame(&mut self, info: &FrameInfo, start: Instant) {
        let report = &mut self.report;
        report.gpu_seconds = match (report.frames, report.gpu_seconds, info.gpu_time) {
            (0, _, Some(t)) => Some(t.as_secs_f64()),
            (_, Some(sum), Some(t)) => Some(sum + t.as_secs_f64()),
            _ => None,
        };
        self.recorder.at(SpanKind::Compute, start, info.gpu_wait);
        self.recorder.ended_now(SpanKind::Readback, info.copy);
        self.ctx.progress.frame_computed(self.d);
        report.frames += 1;
    }

    /// Hands `env` off as the run's I/O mode says ([`Handoff`]).
    fn hand_off(&mut self, env: Envelope, produced: Produced) -> Result<(), Stop> {
        let ctx = self.ctx;
        let mut from = Origin {
            device: self.d,
            label: self.gpu.label(),
            state: &ctx.state,
            progress: &ctx.progress,
            lockstep: ctx.lockstep.is_some(),
            report: &mut self.report,
            recorder: &mut self.recorder,
        };
        self.handoff.hand_off(env, produced, &mut from).map_err(|Stopping| Stop::Run)
    }
}
