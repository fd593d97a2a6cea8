//! How a device thread hands its frames to the sink: the one difference between the I/O
//! modes, one method per mode. A frame not handed off (a stop, a failed send) goes back to
//! the pool as its [`Envelope`] is dropped.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;

use crate::progress::Progress;
use crate::report::DeviceReport;
use crate::run_state::RunState;
use crate::trace::{Recorder, SpanKind};
use crate::tuning::Tuner;
use crate::writer::{Envelope, SharedWriter, lock};

/// Where a device thread's frames go. Each device thread has its own (cloned from the
/// pipeline's): dropping it when the thread ends is what lets the writer see the channel close.
#[derive(Clone)]
pub(crate) enum Handoff {
    /// Async: to the writer thread through the bounded channel (blocks when full).
    Channel(Sender<Envelope>),
    /// Sync: written by the device thread itself.
    Direct(SharedWriter),
    /// Auto: through the channel, as deep as the tuner allows, or written by the device
    /// thread itself once the tuner chose inline writes.
    Tuned(Tuned),
}

/// Auto's hand-off: the channel and the writer, and the tuner that picks between them.
#[derive(Clone)]
pub(crate) struct Tuned {
    tx: Sender<Envelope>,
    writer: SharedWriter,
    tuner: Arc<Tuner>,
    /// Frames this thread sent through the channel: before writing its own frames it waits
    /// until the writer has stored them all, so that a stream's frames stay in order.
    sent: u64,
}

impl Tuned {
    /// Auto's hand-off through `tx` or to `writer`, as `tuner` decides.
    pub fn new(tx: Sender<Envelope>, writer: SharedWriter, tuner: Arc<Tuner>) -> Self {
        Tuned { tx, writer, tuner, sent: 0 }
    }

    /// Device `d`'s thread ended: the tuner measures the others' frames from now on.
    pub fn device_finished(&self, d: usize) {
        self.tuner.device_finished(d);
    }
}

/// The device thread a frame comes from, and what it counts its hand-offs in.
pub(crate) struct Origin<'a> {
    /// The device's index: progress counts frames per device.
    pub device: usize,
    /// The device's label, which names it in a failure.
    pub label: &'a str,
    pub state: &'a RunState,
    pub progress: &'a Progress,
    /// A run in step with other processes: a failure stops this thread at the next vote,
    /// which tells the other ranks, not here.
    pub lockstep: bool,
    pub report: &'a mut DeviceReport,
    pub recorder: &'a mut Recorder,
}

impl Origin<'_> {
    /// Counts the time since `start` as blocked (backpressure).
    fn blocked_since(&mut self, start: Instant) {
        let blocked = start.elapsed();
        self.report.blocked_seconds += blocked.as_secs_f64();
        self.recorder.at(SpanKind::Blocked, start, blocked);
    }
}

/// How long a frame took to produce, and whether it was its job's first (which auto does
/// not measure: it holds the job's set-up).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Produced {
    pub seconds: f64,
    pub first_of_job: bool,
}

/// The run stops: the writer ended or failed, or a stop was asked for; the reason is
/// recorded where it happened.
#[derive(Debug)]
pub(crate) struct Stopping;

impl Handoff {
    /// Hands `env` off as the run's I/O mode says.
    pub fn hand_off(&mut self, env: Envelope, produced: Produced, from: &mut Origin<'_>) -> Result<(), Stopping> {
        match self {
            Handoff::Channel(tx) => send(tx, env, from),
            Handoff::Direct(writer) => write(writer, env, from).map(drop),
            Handoff::Tuned(tuned) => tuned.hand_off(env, produced, from),
        }
    }
}

impl Tuned {
    /// Writes `env` on this thread once the tuner chose inline writes, else sends it at the
    /// depth the tuner allows.
    fn hand_off(&mut self, env: Envelope, produced: Produced, from: &mut Origin<'_>) -> Result<(), Stopping> {
        // The writer thread ended (a panicking sink): its failure is the run's.
        if self.tuner.is_closed() {
            return Err(Stopping);
        }
        if self.tuner.computed(from.device, produced.seconds, produced.first_of_job) {
            self.write_inline(env, from)
        } else {
            self.send(env, from)
        }
    }

    /// Writes `env` on this thread, after the writer stored every frame this thread sent.
    fn write_inline(&mut self, env: Envelope, from: &mut Origin<'_>) -> Result<(), Stopping> {
        let waiting = Instant::now();
        let (progress, state, sent, d) = (from.progress, from.state, self.sent, from.device);
        if !self.tuner.wait_until(|| progress.written_by(d) >= sent, || state.should_stop()) {
            return Err(Stopping);
        }
        from.blocked_since(waiting);
        let took = write(&self.writer, env, from)?;
        self.tuner.wrote(took, true);
        Ok(())
    }

    /// Sends `env` once the channel has room at the tuner's depth: waiting for it is
    /// backpressure as a full channel is, one blocked span with the send.
    fn send(&mut self, env: Envelope, from: &mut Origin<'_>) -> Result<(), Stopping> {
        let start = Instant::now();
        let state = from.state;
        self.tuner.wait_for_room(|| state.should_stop());
        self.sent += 1;
        let result = self.tx.send(env);
        from.blocked_since(start);
        if result.is_err() {
            // The writer stopped and said why (no lockstep here: see `Pipeline::run`).
            self.tuner.taken();
            return Err(Stopping);
        }
        Ok(())
    }
}

/// Sends `env` to the writer thread, counting the time blocked on a full channel. A writer
/// that stopped said why; in lockstep the next vote tells the other ranks.
fn send(tx: &Sender<Envelope>, env: Envelope, from: &mut Origin<'_>) -> Result<(), Stopping> {
    let start = Instant::now();
    let sent = tx.send(env);
    from.blocked_since(start);
    if sent.is_err() && !from.lockstep { Err(Stopping) } else { Ok(()) }
}

/// Writes `env` on this device's thread; returns the sink's own time (not the wait for
/// another device's write): what the tuner weighs. A failed write fails the run (in
/// lockstep, the next vote tells the other ranks).
fn write(writer: &SharedWriter, env: Envelope, from: &mut Origin<'_>) -> Result<Duration, Stopping> {
    let start = Instant::now();
    let written = lock(writer).write(env);
    let took = start.elapsed();
    from.report.write_seconds += took.as_secs_f64();
    from.recorder.at(SpanKind::Write, start, took);
    match written {
        Err(e) => {
            from.state.fail_storing(&format!("device {} (writing)", from.label), None, e);
            if from.lockstep { Ok(took) } else { Err(Stopping) }
        }
        Ok(sink) => Ok(sink),
    }
}
