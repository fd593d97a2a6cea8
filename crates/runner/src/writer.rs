//! Writing frames: the one code path both I/O modes share, and the async writer thread.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use wgpipe_storage::{PooledFrame, Sink};

use crate::checkpoint::{AutoInterval, Checkpoints, SavedState, Saver};
use crate::progress::Progress;
use crate::report::{CheckpointReport, WriterReport};
use crate::run_state::RunState;
use crate::trace::{Recorder, SpanKind};
use crate::tuning::Tuner;

/// A frame on its way to the sink, tagged with the device that produced it (for progress),
/// with the state saved with it, if any. Its buffer goes back to the run's pool whenever it
/// is dropped: written, or not (a stop, a failed send).
pub(crate) struct Envelope {
    pub device: usize,
    pub frame: PooledFrame,
    /// Written as the stream's checkpoint once the frame is stored.
    pub checkpoint: Option<SavedState>,
}

/// Where checkpoints go, and what the writer measured of them.
pub(crate) struct CheckpointWriter {
    pub checkpoints: Checkpoints,
    /// Told the cost of the first checkpoint, for `Interval::Auto`.
    pub auto: Arc<AutoInterval>,
    pub report: CheckpointReport,
    /// How a state is saved when not as its stream's file (a split domain's gather).
    pub saver: Option<Box<dyn Saver>>,
}

impl CheckpointWriter {
    /// Writes checkpoints into `checkpoints`, telling `auto` what they cost; through `saver`
    /// where a state is not saved as its stream's file.
    pub fn new(checkpoints: Checkpoints, auto: Arc<AutoInterval>, saver: Option<Box<dyn Saver>>) -> Self {
        CheckpointWriter { checkpoints, auto, report: CheckpointReport::default(), saver }
    }
}

/// The sink, plus what every write does besides writing: count progress, time the write,
/// lend the frame to the sink (its buffer comes back to the pool when the sink is done with
/// it: at once, or later for a sink that keeps it), write the checkpoint that came with the
/// frame.
pub(crate) struct FrameWriter {
    pub sink: Box<dyn Sink>,
    pub progress: Arc<Progress>,
    pub checkpoints: Option<CheckpointWriter>,
}

impl FrameWriter {
    /// The writer of `sink`, shared by the threads that write: every write is counted in
    /// `progress`.
    pub fn shared(sink: Box<dyn Sink>, progress: Arc<Progress>, checkpoints: Option<CheckpointWriter>) -> SharedWriter {
        Arc::new(Mutex::new(FrameWriter { sink, progress, checkpoints }))
    }

    /// Writes one frame, then its checkpoint (so that a checkpoint never gets ahead of the
    /// frames stored); returns how long the sink took.
    pub fn write(&mut self, env: Envelope) -> Result<Duration, wgpipe_storage::Error> {
        let (bytes, stream) = (env.frame.data.len() as u64, env.frame.stream);
        let start = Instant::now();
        let result = self.sink.write_pooled(env.frame);
        let took = start.elapsed();
        result?;
        self.progress.frame_written(env.device, bytes);
        self.progress.stream_written(stream);
        if let (Some(saved), Some(c)) = (env.checkpoint, self.checkpoints.as_mut()) {
            let start = Instant::now();
            let bytes = saved.state.len() as u64;
            match c.saver.as_mut() {
                Some(saver) => saver.save(saved, &c.checkpoints)?,
                None => crate::checkpoint::write(&c.checkpoints.dir, &saved, c.checkpoints.fsync)?,
            }
            let took = start.elapsed();
            c.auto.measured(took);
            c.report.written += 1;
            c.report.bytes += bytes;
            c.report.seconds += took.as_secs_f64();
        }
        Ok(took)
    }
}

/// The shared writer; in sync mode every device thread locks it for its own frames.
pub(crate) type SharedWriter = Arc<Mutex<FrameWriter>>;

/// Locks the writer even if a thread panicked while holding it: the sink must still be
/// finished so that the frames written before stay readable.
pub(crate) fn lock(writer: &SharedWriter) -> std::sync::MutexGuard<'_, FrameWriter> {
    writer.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The async writer thread: stores frames until every device has hung up, or until the
/// sink fails, in which case it drops the receiver so blocked devices wake up and stop.
/// It locks the writer for each frame only: in auto mode the device threads may take over.
pub(crate) fn writer_thread(
    writer: &SharedWriter,
    frames: Receiver<Envelope>,
    state: &RunState,
    tuner: Option<&Tuner>,
    mut recorder: Recorder,
) -> WriterReport {
    /// Closes the tuner however the thread ends: a panicking sink must not leave devices
    /// waiting for room in a channel nobody reads.
    struct CloseOnExit<'a>(Option<&'a Tuner>);
    impl Drop for CloseOnExit<'_> {
        fn drop(&mut self) {
            if let Some(t) = self.0 {
                t.close();
            }
        }
    }
    let _close = CloseOnExit(tuner);
    let mut report = WriterReport::default();
    loop {
        let waiting = Instant::now();
        let Ok(env) = frames.recv() else { break };
        let waited = waiting.elapsed();
        report.wait_seconds += waited.as_secs_f64();
        recorder.at(SpanKind::Wait, waiting, waited);
        if let Some(t) = tuner {
            t.taken();
        }
        let bytes = env.frame.data.len() as u64;
        let written = lock(writer).write(env);
        match written {
            Ok(took) => {
                if let Some(t) = tuner {
                    t.wrote(took, false);
                }
                recorder.ended_now(SpanKind::Write, took);
                report.write_seconds += took.as_secs_f64();
                report.frames += 1;
                report.bytes += bytes;
            }
            Err(e) => {
                state.fail_storing("writer", None, e);
                break;
            }
        }
    }
    drop(frames);
    report.spans = recorder.into_spans();
    report
}
