//! `io.mode = "auto"` (the default): the choice follows what the first frames measured, it
//! changes when a later write is slower, and no stream's frames ever arrive out of order,
//! whichever thread writes them.
//!
//! Compute time is set by a frame source that sleeps (so a loaded machine can only make it
//! longer, never shorter) and write time by a sink that sleeps on a schedule.
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wgpipe::compute::{DeviceSelector, GpuDevice, wgpu};
use wgpipe::storage::{self, DType, FieldSpec, Frame, NullSink, Sink, SinkSummary, StreamLayout};
use wgpipe::tuning::AUTO_IO_BUFFER;
use wgpipe::{BoxError, FrameSource, Job, Pipeline, RunReport};

/// Frames of every stream.
const FRAMES: u64 = 40;

/// A producer that takes `compute` per frame (the GPU does nothing).
struct Paced {
    compute: Duration,
}

impl FrameSource for Paced {
    fn frame_bytes(&self) -> u64 {
        256
    }

    fn encode_frame(
        &mut self,
        index: u64,
        _encoder: &mut wgpu::CommandEncoder,
        _staging: &wgpu::Buffer,
    ) -> Result<u64, BoxError> {
        std::thread::sleep(self.compute);
        Ok(index)
    }
}

/// A sink whose `write` of the `n`-th frame (over all streams) takes `delay(n)`, and which
/// fails the run if a stream's frames arrive out of order.
struct Scheduled {
    inner: NullSink,
    delay: fn(u64) -> Duration,
    written: u64,
    next: Arc<Mutex<HashMap<usize, u64>>>,
}

impl Sink for Scheduled {
    fn begin(&mut self, layout: &StreamLayout) -> storage::Result<()> {
        self.inner.begin(layout)
    }

    fn write(&mut self, frame: &Frame) -> storage::Result<()> {
        std::thread::sleep((self.delay)(self.written));
        self.written += 1;
        let mut next = self.next.lock().unwrap();
        let expected = next.entry(frame.stream).or_insert(0);
        if frame.index != *expected {
            return Err(storage::Error::InvalidLayout(format!(
                "stream {}: frame {} arrived where frame {expected} was due",
                frame.stream, frame.index
            )));
        }
        *expected += 1;
        self.inner.write(frame)
    }

    fn finish(&mut self) -> storage::Result<SinkSummary> {
        self.inner.finish()
    }
}

/// Two streams on two device threads (lavapipe opened twice), each frame computed in
/// `compute`, written in `delay(n)`, with `io.mode` left at its default.
fn run(compute: Duration, delay: fn(u64) -> Duration) -> RunReport {
    let jobs: Vec<Job> = ["a", "b"]
        .into_iter()
        .map(|name| {
            Job::from_source(name, move |_: &GpuDevice| Ok(Box::new(Paced { compute }) as Box<dyn FrameSource>))
        })
        .collect();
    let next = Arc::new(Mutex::new(HashMap::new()));
    let report = Pipeline::builder()
        .devices(DeviceSelector::Indices(vec![0]), 2)
        .frames(FRAMES)
        .frame_layout(vec![FieldSpec::new("x", DType::U8, vec![256])])
        .jobs(jobs)
        .sink(Scheduled { inner: NullSink::default(), delay, written: 0, next: Arc::clone(&next) })
        .run()
        .unwrap();
    assert_eq!(report.written_frames(), 2 * FRAMES, "{report}");
    assert_eq!(next.lock().unwrap().values().copied().collect::<Vec<_>>(), [FRAMES, FRAMES]);
    report
}

#[test]
fn writes_far_shorter_than_compute_are_made_by_the_devices_in_order() {
    let report = run(Duration::from_millis(10), |_| Duration::ZERO);
    let t = report.tuning.clone().unwrap();
    assert!(t.decided_after_frames.is_some(), "{t:?}");
    assert!(t.reason.starts_with("inline"), "{t:?}");
    assert_eq!(t.changes, Vec::<String>::new(), "nothing slowed down: {t:?}");
    // The writer thread wrote the frames before the choice, the devices all the others.
    let inline: u64 = report.devices.iter().map(|d| d.frames).sum::<u64>() - report.writer.frames;
    assert!(report.writer.frames <= t.decided_after_frames.unwrap() + 4, "{report}");
    assert!(inline >= 2 * FRAMES - 12, "{report}");
    assert!(report.to_string().contains("io.mode auto: inline:"), "{report}");
}

#[test]
fn a_sink_slower_than_compute_gets_the_whole_channel() {
    let report = run(Duration::from_millis(1), |_| Duration::from_millis(8));
    let t = report.tuning.clone().unwrap();
    assert!(t.reason.contains("I/O-bound"), "{t:?}");
    assert!(!t.inline);
    assert_eq!((t.io_buffer, t.capacity), (AUTO_IO_BUFFER, AUTO_IO_BUFFER));
    assert!(t.write_mean_seconds >= 0.008 && t.compute_per_frame_seconds < t.write_mean_seconds, "{t:?}");
}

#[test]
fn a_write_stall_after_the_choice_deepens_the_channel() {
    // Writes of 3 ms against 20 ms per frame and device (10 ms between frames): one frame
    // arrives during a write, the fixed modes' two frames of slack are kept; then frame 30
    // takes 45 ms, during which 5 frames arrive. (A loaded machine may stretch a 3 ms write
    // past 20 ms and deepen the queue once before: the last change counts.)
    let report = run(Duration::from_millis(20), |n| Duration::from_millis(if n == 30 { 45 } else { 3 }));
    let t = report.tuning.clone().unwrap();
    assert!(t.reason.starts_with("async, io_buffer 2"), "{t:?}");
    let last = t.changes.last().map_or("", String::as_str);
    assert!(last.starts_with("io_buffer ") && last.contains(" → 5 at frame 31:"), "{t:?}");
    assert_eq!(t.io_buffer, 5);
}

#[test]
fn inline_writes_go_back_to_the_writer_thread_when_the_sink_slows_down() {
    // Instant writes until frame 30, then 15 ms each: more than half the 5 ms between frames
    // (two devices, 10 ms each).
    let report = run(Duration::from_millis(10), |n| if n < 30 { Duration::ZERO } else { Duration::from_millis(15) });
    let t = report.tuning.clone().unwrap();
    assert!(t.reason.starts_with("inline"), "{t:?}");
    assert!(!t.inline, "{t:?}");
    assert!(t.changes[0].starts_with("back to async at frame 31"), "{t:?}");
    assert!(report.writer.frames >= 2 * FRAMES - 36, "the writer thread took over: {report}");
}
