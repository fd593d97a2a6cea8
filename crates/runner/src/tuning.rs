//! `io.mode = "auto"`: the pipeline measures its first frames and chooses how they travel.
//!
//! Why measure instead of asking: whether a writer thread helps, and how many frames it must
//! be allowed to fall behind, depend on the kernel, the grid, the sink, the disk and the
//! adapter, which a config cannot know ahead. The run starts as async with a channel of at
//! most [`AUTO_IO_BUFFER`] frames (fewer where host memory is short) of which two may wait;
//! after [`PROBE_FRAMES`] frames, once every device has produced one, it knows the time
//! between frames (`interval`: the inverse of the devices' summed frame rates, each job's
//! first frame left out) and each write's time (the run's first write left out: the page
//! cache and the sink's buffers warm up), and [`choose`]s:
//!
//! - **inline**: writes took under [`INLINE_SHARE`] of the interval on average, so a writer
//!   thread could hide at most that much, and handing each frame to it (a channel send, a
//!   wake-up, the frame's bytes moving to another core) costs as much; and none took more
//!   than [`BACK_TO_ASYNC_SHARE`] of it (a single slow write, not the mean, says the sink can
//!   stall: one preempted write on a loaded machine does not decide alone). The device threads
//!   write their own frames while the GPU computes the next ones (unlike `sync`, which stops
//!   the GPU while it writes). A later write slower than [`BACK_TO_ASYNC_SHARE`] of the
//!   interval sends the run back to the writer thread for good.
//! - **async, depth N**: N = the slowest write over the interval, rounded up (a write that
//!   takes N intervals lets N frames arrive meanwhile), at least [`DEFAULT_IO_BUFFER`] (the
//!   fixed modes' depth: frames do not arrive at a steady interval, least of all from a CPU
//!   adapter sharing its cores with the writer, and one frame of slack was measured no better
//!   than two, while every cell of `cargo xtask bench overlap ... --sweep` where auto fell
//!   behind had it), at most
//!   the channel.
//!   I/O-bound runs (writes slower than the interval on average) get the whole channel: the
//!   writer sets the pace either way, but devices that finish early leave the cores to the
//!   writer, which matters where they are the same cores (a CPU adapter; the sweep's
//!   I/O-bound row on lavapipe). A later write slower than the depth allows deepens it (never
//!   shallower: a burst that happened once happens again).
//!
//! Frames keep their order within each stream: a device switching to inline writes first
//! waits until the writer has stored every frame it sent.
//!
//! What it leaves alone: the compression threads (`output.compression_threads`, default the
//! cores up to 4). Fewer threads beside a CPU adapter, which computes on the same cores,
//! looked like a gain by the efficiency ratio, but wall times say otherwise: on 2 cores with
//! lavapipe on both, one deflate thread made the async run slower, at balance and
//! compute-bound (`cargo xtask bench compression-threads 1,2`; the guide's benchmark page,
//! "Compression threads beside a CPU adapter"): the writer's threads fill the gaps lavapipe
//! leaves between dispatches.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::report::TuningReport;

/// The deepest channel `auto` may use (frames), where host memory allows.
pub const AUTO_IO_BUFFER: usize = 8;
/// Frames measured before choosing: written, and computed over all the devices (each of
/// which must have produced one), besides the frames left out as warm-up (the run's first
/// write, each job's first frame).
pub const PROBE_FRAMES: u64 = 6;
/// Inline writes when the measured writes took under this share of the interval on average.
pub const INLINE_SHARE: f64 = 0.02;
/// An inline write slower than this share of the interval sends the run back to async: the
/// GPU works ahead while a device writes, but a staging ring of two frames hides no more
/// than about one frame's compute, and a single write of this length says the sink can stall.
pub const BACK_TO_ASYNC_SHARE: f64 = 0.5;
/// The channel of the fixed modes (`sync`, `async`) when `io.io_buffer` is not given.
pub const DEFAULT_IO_BUFFER: usize = 2;
/// Frames that may wait in the channel before the choice (as `io.io_buffer`'s default), and
/// the least `auto` keeps after it where the channel holds that many.
const START_DEPTH: usize = DEFAULT_IO_BUFFER;

/// What the measurements chose.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// Device threads write their own frames (no writer thread).
    pub inline: bool,
    /// Frames that may wait for the writer thread (async only).
    pub depth: usize,
    /// Why, in numbers: printed in the run's summary.
    pub reason: String,
}

/// Milliseconds (microseconds below one), for reasons.
fn ms(seconds: f64) -> String {
    if seconds < 1e-3 { format!("{:.1} µs", seconds * 1e6) } else { format!("{:.2} ms", seconds * 1e3) }
}

/// The choice for frames arriving every `interval` seconds, written in `write_mean` seconds
/// on average and `write_max` at most, with a channel of `capacity` frames.
pub fn choose(interval: f64, write_mean: f64, write_max: f64, capacity: usize) -> Choice {
    let measured = format!(
        "writes took {} on average, {} at most, against {} of compute between frames",
        ms(write_mean),
        ms(write_max),
        ms(interval)
    );
    if write_mean < INLINE_SHARE * interval && write_max < BACK_TO_ASYNC_SHARE * interval {
        return Choice {
            inline: true,
            depth: 0,
            reason: format!(
                "inline: {measured}: a writer thread could hide under {:.0} %, so each device writes its own \
                 frames while the GPU computes the next",
                INLINE_SHARE * 100.0
            ),
        };
    }
    if write_mean >= interval {
        return Choice {
            inline: false,
            depth: capacity,
            reason: format!(
                "async, io_buffer {capacity}: {measured}: I/O-bound, the writer sets the pace; the whole channel \
                 lets the devices finish early and leave the cores to the writer"
            ),
        };
    }
    // Frames arriving during the slowest write; at least the fixed modes' slack, at most the
    // channel (0: a rendezvous, still one at a time).
    let arriving = (write_max / interval).ceil() as usize;
    let depth = arriving.clamp(START_DEPTH.min(capacity), capacity);
    let bound = if arriving > capacity {
        format!(" (the most the channel holds; {arriving} would absorb the slowest)")
    } else if arriving < depth {
        format!(" (at least {START_DEPTH}, as frames do not arrive at a steady interval)")
    } else {
        String::new()
    };
    Choice {
        inline: false,
        depth,
        reason: format!(
            "async, io_buffer {depth}{bound}: {measured}: {} frame(s) arrive during the slowest write",
            arriving
        ),
    }
}

/// One device's compute samples.
#[derive(Debug, Default, Clone, Copy)]
struct Device {
    /// Frames measured (each job's first frame is not: it pays for the job's start).
    n: u64,
    seconds: f64,
    /// Its thread has ended: its frames no longer arrive.
    finished: bool,
}

/// Sums of what was measured.
#[derive(Debug, Default)]
struct Measured {
    devices: Vec<Device>,
    writes: u64,
    write_sum: f64,
    write_n: u64,
    write_max: f64,
}

impl Measured {
    /// Compute seconds between frames arriving at the writer: the inverse of the devices'
    /// summed frame rates (each device's measured frames over their compute time), over the
    /// devices still running, or over all that were measured (`finished_too`, for the report
    /// at the end).
    fn interval(&self, finished_too: bool) -> f64 {
        let rate: f64 = self
            .devices
            .iter()
            .filter(|d| d.n > 0 && d.seconds > 0.0 && (finished_too || !d.finished))
            .map(|d| d.n as f64 / d.seconds)
            .sum();
        if rate > 0.0 { 1.0 / rate } else { 0.0 }
    }

    /// Whether there is enough to choose: [`PROBE_FRAMES`] writes and computed frames, and
    /// every device measured or ended (a device still starting its first job would make the
    /// frames look further apart than they will be).
    fn ready(&self) -> bool {
        self.write_n >= PROBE_FRAMES
            && self.devices.iter().map(|d| d.n).sum::<u64>() >= PROBE_FRAMES
            && self.devices.iter().all(|d| d.n > 0 || d.finished)
    }
}

/// The state every thread of an `auto` run shares.
#[derive(Debug)]
struct State {
    measured: Measured,
    /// Frames sent and not yet taken by the writer.
    queued: usize,
    depth: usize,
    inline: bool,
    /// Frames written when the choice was made; `None` while measuring.
    decided_after: Option<u64>,
    reason: String,
    /// Later changes, in order.
    changes: Vec<String>,
    /// The writer thread has ended (a panic included): nobody takes frames any more.
    closed: bool,
}

/// The measurements and the choice of an `io.mode = "auto"` run, shared by its threads.
#[derive(Debug)]
pub(crate) struct Tuner {
    capacity: usize,
    state: Mutex<State>,
    room: Condvar,
}

impl Tuner {
    /// A tuner for `devices` device threads and a channel of `capacity` frames.
    pub fn new(devices: usize, capacity: usize) -> Self {
        Tuner {
            capacity,
            state: Mutex::new(State {
                measured: Measured { devices: vec![Device::default(); devices], ..Default::default() },
                queued: 0,
                depth: START_DEPTH.min(capacity),
                inline: false,
                decided_after: None,
                reason: String::new(),
                changes: Vec::new(),
                closed: false,
            }),
            room: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Device `d` produced a frame in `seconds` (the first of its job: not measured);
    /// returns whether it writes its frames itself.
    pub fn computed(&self, d: usize, seconds: f64, first_of_job: bool) -> bool {
        let mut s = self.lock();
        if let Some(device) = s.measured.devices.get_mut(d).filter(|_| !first_of_job) {
            device.n += 1;
            device.seconds += seconds;
        }
        s.inline
    }

    /// Device `d`'s thread ended: the frames between arrivals are the others' from now on.
    pub fn device_finished(&self, d: usize) {
        if let Some(device) = self.lock().measured.devices.get_mut(d) {
            device.finished = true;
        }
    }

    /// Waits until the channel may take one more frame (or `stopping` says to give up
    /// waiting, or the writer thread has ended: the send then fails), then counts it as queued.
    pub fn wait_for_room(&self, stopping: impl Fn() -> bool) {
        let mut s = self.lock();
        while s.queued >= s.depth.max(1) && !s.closed && !stopping() {
            s = self.room.wait_timeout(s, Duration::from_millis(20)).unwrap_or_else(PoisonError::into_inner).0;
        }
        s.queued += 1;
    }

    /// Waits until `done` holds (checked whenever the writer thread has written a frame, and
    /// at least every 20 ms); returns false, without waiting for it, once `stopping` says to
    /// give up or the writer thread has ended.
    pub fn wait_until(&self, done: impl Fn() -> bool, stopping: impl Fn() -> bool) -> bool {
        let mut s = self.lock();
        loop {
            if done() {
                return true;
            }
            if s.closed || stopping() {
                return false;
            }
            s = self.room.wait_timeout(s, Duration::from_millis(20)).unwrap_or_else(PoisonError::into_inner).0;
        }
    }

    /// The writer thread ended, however (called on its way out, unwinding included): devices
    /// waiting for room or for their frames to be stored stop waiting.
    pub fn close(&self) {
        self.lock().closed = true;
        self.room.notify_all();
    }

    /// Whether the writer thread has ended.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// The writer took a frame from the channel (or a send failed: it never arrives).
    pub fn taken(&self) {
        let mut s = self.lock();
        s.queued = s.queued.saturating_sub(1);
        drop(s);
        self.room.notify_all();
    }

    /// A frame was written in `took`, by a device thread itself (`inline`) or by the writer
    /// thread: measured, and the choice made or revised.
    pub fn wrote(&self, took: Duration, inline: bool) {
        let seconds = took.as_secs_f64();
        let mut s = self.lock();
        s.measured.writes += 1;
        if s.measured.writes > 1 {
            s.measured.write_sum += seconds;
            s.measured.write_n += 1;
            s.measured.write_max = s.measured.write_max.max(seconds);
        }
        let interval = s.measured.interval(false);
        match s.decided_after {
            None => {
                if s.measured.ready() {
                    let mean = s.measured.write_sum / s.measured.write_n as f64;
                    let choice = choose(interval, mean, s.measured.write_max, self.capacity);
                    s.inline = choice.inline;
                    s.depth = if choice.inline { s.depth } else { choice.depth };
                    s.reason = choice.reason;
                    s.decided_after = Some(s.measured.writes);
                }
            }
            // The writer thread's last frames after the choice of inline writes do not count.
            Some(_) if inline && s.inline && seconds > BACK_TO_ASYNC_SHARE * interval => {
                s.inline = false;
                // A queue deep enough for the write that ended inline writes.
                let needed = if interval > 0.0 { (seconds / interval).ceil() as usize } else { START_DEPTH };
                s.depth = needed.clamp(START_DEPTH.min(self.capacity), self.capacity);
                let at = s.measured.writes;
                let change = format!(
                    "back to async at frame {at}: a write took {} against {} between frames",
                    ms(seconds),
                    ms(interval)
                );
                s.changes.push(change);
            }
            Some(_) if !s.inline && interval > 0.0 => {
                let needed = ((seconds / interval).ceil() as usize).min(self.capacity);
                if needed > s.depth {
                    let at = s.measured.writes;
                    let change = format!(
                        "io_buffer {} → {needed} at frame {at}: a write took {} against {} between frames",
                        s.depth,
                        ms(seconds),
                        ms(interval)
                    );
                    s.changes.push(change);
                    s.depth = needed;
                }
            }
            Some(_) => {}
        }
        drop(s);
        self.room.notify_all();
    }

    /// What was chosen, for the run's report.
    pub fn report(&self) -> TuningReport {
        let s = self.lock();
        let m = &s.measured;
        TuningReport {
            inline: s.inline,
            io_buffer: if s.inline { 0 } else { s.depth },
            capacity: self.capacity,
            decided_after_frames: s.decided_after,
            reason: if s.decided_after.is_some() {
                s.reason.clone()
            } else {
                format!("async, io_buffer {}: the run ended before {PROBE_FRAMES} frames were measured", s.depth)
            },
            changes: s.changes.clone(),
            compute_per_frame_seconds: m.interval(true),
            write_mean_seconds: if m.write_n > 0 { m.write_sum / m.write_n as f64 } else { 0.0 },
            write_max_seconds: m.write_max,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negligible_writes_go_inline() {
        let c = choose(0.010, 0.00001, 0.004, 8);
        assert!(c.inline, "{c:?}");
        assert!(c.reason.starts_with("inline"));
        assert!(!choose(0.010, 0.00025, 0.0003, 8).inline, "writes of 2.5 % of the interval are worth hiding");
        assert!(!choose(0.010, 0.00001, 0.006, 8).inline, "a write of 60 % of the interval says the sink stalls");
    }

    #[test]
    fn the_depth_absorbs_the_slowest_write() {
        let least = choose(0.010, 0.004, 0.006, 8);
        assert_eq!(least.depth, DEFAULT_IO_BUFFER, "one frame arrives; the fixed modes' slack is the least");
        assert!(
            least.reason.contains("(at least 2, as frames do not arrive at a steady interval)"),
            "{}",
            least.reason
        );
        assert!(least.reason.ends_with(": 1 frame(s) arrive during the slowest write"), "{}", least.reason);
        assert_eq!(choose(0.010, 0.004, 0.031, 8).depth, 4);
        assert_eq!(choose(0.010, 0.004, 0.006, 1).depth, 1, "a channel of 1 holds no more");
        let capped = choose(0.010, 0.004, 0.2, 8);
        assert_eq!(capped.depth, 8);
        assert!(capped.reason.contains("20 would absorb"), "{}", capped.reason);
        assert_eq!(choose(0.010, 0.004, 0.2, 0).depth, 0, "a channel of 0 stays a rendezvous");
    }

    #[test]
    fn io_bound_runs_get_the_whole_channel() {
        let c = choose(0.010, 0.020, 0.080, 8);
        assert!(!c.inline);
        assert_eq!(c.depth, 8);
        assert!(c.reason.contains("I/O-bound"));
    }

    #[test]
    fn the_tuner_decides_after_the_probe_and_deepens_on_a_slow_write() {
        let t = Tuner::new(1, 8);
        for _ in 0..=PROBE_FRAMES {
            assert!(!t.computed(0, 0.010, false));
            t.wrote(Duration::from_millis(5), false);
        }
        let r = t.report();
        assert_eq!(r.decided_after_frames, Some(PROBE_FRAMES + 1));
        assert_eq!((r.inline, r.io_buffer), (false, 2));
        t.wrote(Duration::from_millis(35), false);
        let r = t.report();
        assert_eq!(r.io_buffer, 4, "{r:?}");
        assert_eq!(r.changes.len(), 1);
    }

    #[test]
    fn an_inline_run_goes_back_to_async_after_a_slow_write() {
        let t = Tuner::new(2, 8);
        for _ in 0..=PROBE_FRAMES {
            t.computed(0, 0.020, false);
            t.computed(1, 0.020, false);
            t.wrote(Duration::from_micros(20), false);
        }
        assert!(t.computed(0, 0.020, false), "writes of 0.2 % of the 10 ms between frames go inline");
        t.wrote(Duration::from_millis(4), true);
        assert!(t.computed(0, 0.020, false), "a write of 40 % of the interval is hidden by the GPU working ahead");
        t.wrote(Duration::from_millis(9), false);
        assert!(t.computed(0, 0.020, false), "the writer thread's last frames do not end inline writes");
        t.wrote(Duration::from_millis(6), true);
        assert!(!t.computed(0, 0.020, false));
        let r = t.report();
        assert!(r.changes[0].starts_with("back to async"), "{r:?}");
        assert_eq!(r.io_buffer, 2, "the 6 ms write needs one frame of the 10 ms interval; at least the start's 2");
    }

    #[test]
    fn a_device_still_starting_delays_the_choice_and_an_ended_one_leaves_the_rate() {
        let t = Tuner::new(2, 8);
        for _ in 0..=PROBE_FRAMES {
            t.computed(0, 0.010, false);
            t.wrote(Duration::from_micros(100), false);
        }
        assert_eq!(t.report().decided_after_frames, None, "device 1 has not produced a frame yet");
        t.computed(1, 0.5, true);
        t.computed(1, 0.010, false);
        t.wrote(Duration::from_micros(100), false);
        let r = t.report();
        assert!(r.decided_after_frames.is_some(), "{r:?}");
        assert!((r.compute_per_frame_seconds - 0.005).abs() < 1e-9, "two devices at 10 ms: {r:?}");
        assert!(!r.inline, "100 µs is 2 % of the 5 ms between frames: {r:?}");
        t.device_finished(1);
        assert!((t.lock().measured.interval(false) - 0.010).abs() < 1e-9);
    }

    #[test]
    fn room_is_the_depth_and_a_stop_or_a_closed_writer_ends_the_wait() {
        let t = Tuner::new(1, 8);
        t.wait_for_room(|| false);
        t.wait_for_room(|| false);
        // Full (depth 2): only a stop lets it through.
        t.wait_for_room(|| true);
        t.taken();
        assert_eq!(t.lock().queued, 2);
        t.close();
        t.wait_for_room(|| false);
        assert!(t.is_closed());
    }
}
