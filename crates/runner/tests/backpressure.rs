//! Backpressure: with a sink slower than the devices, the frames computed but not yet written
//! stay within a fixed bound (nothing queues without limit), and the device threads spend the
//! difference blocked on the channel.
//!
//! The bound, from the code (crates/runner/src/worker.rs, writer.rs, pipeline.rs). A device
//! thread counts a frame as computed (`Progress::frame_computed`) once it is copied out of the
//! staging buffer into a host buffer, and then sends it into the channel of capacity
//! `io_buffer`; the writer counts it as written (`frame_written`) once the sink's `write`
//! returned. So a frame counted as computed and not yet as written is in exactly one of:
//!   - the device thread's hand, blocked in `send` (at most 1 per device),
//!   - the channel (at most `io_buffer` for all devices together; 0 = rendezvous),
//!   - the writer, inside `sink.write` (at most 1).
//!
//! Hence, per device, computed − written ≤ io_buffer + 2, and in sync mode (the device thread
//! writes its own frame before computing the next) ≤ 1. The readback ring adds up to
//! `staging_buffers` frames that the GPU has computed and that no counter has seen yet; they
//! are in GPU memory, not in host buffers, and are not part of this count. With an unbounded
//! channel, or a device that did not wait for the channel, the gap would grow with every
//! frame the sink is behind (here up to ~FRAMES): the assertions below would fail.
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::lavapipe;
use wgpipe::compute::gray_scott::GrayScottParams;
use wgpipe::storage::{self, Frame, NullSink, Sink, SinkSummary, StreamLayout};
use wgpipe::{IoMode, Pipeline, RunReport};

/// Frames per stream: enough for the sink to fall far behind a device without backpressure.
const FRAMES: u64 = 24;

/// A sink that takes at least `delay` per frame, like a slow disk.
struct SlowSink {
    inner: NullSink,
    delay: Duration,
}

impl Sink for SlowSink {
    fn begin(&mut self, layout: &StreamLayout) -> storage::Result<()> {
        self.inner.begin(layout)
    }
    fn write(&mut self, frame: &Frame) -> storage::Result<()> {
        std::thread::sleep(self.delay);
        self.inner.write(frame)
    }
    fn finish(&mut self) -> storage::Result<SinkSummary> {
        self.inner.finish()
    }
}

/// Runs `devices` Gray-Scott streams (1 step per frame on a small grid: computing a frame
/// takes far less than `delay`) into a [`SlowSink`], sampling the progress counters while it
/// runs. Returns the report and, per device, the largest computed − written seen.
fn run_sampled(devices: usize, mode: IoMode, io_buffer: usize, delay: Duration) -> (RunReport, Vec<u64>) {
    let pipeline = Pipeline::builder()
        .gpus(lavapipe(devices))
        .grid(32, 40)
        .frames(FRAMES)
        .steps_per_frame(1)
        .mode(mode)
        .io_buffer(io_buffer)
        .gray_scott(GrayScottParams::default(), 0, 0.0)
        .sink(SlowSink { inner: NullSink::default(), delay })
        .build()
        .unwrap();
    let progress = pipeline.progress();
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut max_gap = vec![0u64; devices];
            while !done.load(Ordering::Relaxed) {
                // Each device's `computed` is read before its `written`, so a sample can only
                // under-state the gap at that instant, never over-state it.
                for (max, d) in max_gap.iter_mut().zip(progress.snapshot().devices) {
                    *max = (*max).max(d.computed - d.written.min(d.computed));
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            max_gap
        });
        let report = pipeline.run().unwrap();
        done.store(true, Ordering::Relaxed);
        (report, sampler.join().unwrap())
    })
}

#[test]
fn frames_computed_but_not_written_stay_within_the_channel_and_the_two_hand_offs() {
    let delay = Duration::from_millis(15);
    for io_buffer in [0, 2, 5] {
        let (report, max_gap) = run_sampled(1, IoMode::Async, io_buffer, delay);
        assert_eq!(report.written_frames(), FRAMES);
        let bound = io_buffer as u64 + 2;
        assert!(max_gap[0] <= bound, "io_buffer {io_buffer}: {} frames computed but not written > {bound}", max_gap[0]);
        // The sink is ~10× slower than the device, so the channel fills and the bound is
        // reached: it is the exact limit, not a loose one.
        assert_eq!(max_gap[0], bound, "io_buffer {io_buffer}: the channel never filled");
    }
    // Two devices share the channel: each can still have at most io_buffer + 2 outstanding.
    let (report, max_gap) = run_sampled(2, IoMode::Async, 2, delay);
    assert_eq!(report.written_frames(), 2 * FRAMES);
    assert!(max_gap.iter().all(|g| (1..=4).contains(g)), "per-device gaps {max_gap:?}, bound 4");
    // Sync mode: the device thread writes each frame before it computes the next.
    let (report, max_gap) = run_sampled(1, IoMode::Sync, 2, delay);
    assert_eq!(report.written_frames(), FRAMES);
    assert_eq!(max_gap[0], 1, "sync mode holds one frame at a time");
}

#[test]
fn device_threads_block_on_a_slow_sink_and_not_on_a_fast_one() {
    let io_buffer = 2;
    let blocked = |delay_ms: u64| {
        let delay = Duration::from_millis(delay_ms);
        let (report, _) = run_sampled(1, IoMode::Async, io_buffer, delay);
        let d = &report.devices[0];
        // The device's last send completes only once the writer has taken frame
        // FRAMES − 1 − io_buffer, i.e. after that many writes of at least `delay` each; the
        // device thread spends that time computing or blocked (the rest of its loop takes
        // microseconds; 10 % is left for scheduling on a loaded machine).
        let floor = (FRAMES - 1 - io_buffer as u64) as f64 * delay.as_secs_f64();
        assert!(
            d.blocked_seconds + d.compute_seconds >= 0.9 * floor,
            "delay {delay_ms} ms: blocked {:.3} s + compute {:.3} s < 90 % of {floor:.3} s",
            d.blocked_seconds,
            d.compute_seconds
        );
        d.blocked_seconds
    };
    let fast = blocked(0);
    let slow = blocked(5);
    let slower = blocked(20);
    assert!(slow < slower, "blocked time grows with the sink's delay: {slow:.3} s at 5 ms, {slower:.3} s at 20 ms");
    // At 20 ms per frame the device waits most of the ~0.4 s run; with a sink that takes no
    // time it hardly ever finds the channel full.
    assert!(slower > 0.2, "blocked only {slower:.3} s behind a 20 ms/frame sink");
    assert!(fast < slower / 10.0, "blocked {fast:.3} s behind an instant sink vs {slower:.3} s behind a slow one");
}
