//! `io.mode = "auto"` (the default): the choice follows what the first frames measured, it
//! changes when a later write is slower, and no stream's frames ever arrive out of order,
//! whichever thread writes them.
//!
//! Compute time is set by a frame source that sleeps (so a loaded machine can only make it
//! longer, never shorter) and write time by a sink that sleeps on a schedule. What auto ran
//! is observed from outside, not taken from its report: the sink records which thread calls
//! it (the writer thread, or a device thread writing inline) and how many frames the sources
//! had produced that it had not yet been given (how deep the pipeline let the devices run
//! ahead, which the channel's depth bounds).
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wgpipe::compute::{DeviceSelector, GpuDevice, wgpu};
use wgpipe::storage::{self, DType, FieldSpec, Frame, NullSink, Sink, SinkSummary, StreamLayout};
use wgpipe::tuning::AUTO_IO_BUFFER;
use wgpipe::{BoxError, FrameSource, IoMode, Job, Pipeline, RunReport};

/// Frames of every stream.
const FRAMES: u64 = 40;

/// What the sink saw, shared with the sources.
#[derive(Debug, Default)]
struct Observed {
    /// Frames the sources produced (encoded), over all streams.
    produced: AtomicU64,
    /// The most frames produced and not yet given to the sink, seen at any write.
    deepest: AtomicU64,
    /// Writes per calling thread's name.
    writers: Mutex<HashMap<String, u64>>,
    /// Per stream, the frame due next.
    next: Mutex<HashMap<usize, u64>>,
}

impl Observed {
    /// Writes made by the writer thread (`wgpipe-writer`); the others were made inline by
    /// device threads.
    fn by_writer_thread(&self) -> u64 {
        self.writers.lock().unwrap().get("wgpipe-writer").copied().unwrap_or(0)
    }
}

/// A producer that takes `compute` per frame (the GPU does nothing).
struct Paced {
    compute: Duration,
    observed: Arc<Observed>,
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
        self.observed.produced.fetch_add(1, Ordering::SeqCst);
        Ok(index)
    }
}

/// A sink whose `write` of the `n`-th frame (over all streams) takes `delay(n)`, which fails
/// the run if a stream's frames arrive out of order, and records what it observes.
struct Scheduled {
    inner: NullSink,
    delay: fn(u64) -> Duration,
    written: u64,
    observed: Arc<Observed>,
}

impl Sink for Scheduled {
    fn begin(&mut self, layout: &StreamLayout) -> storage::Result<()> {
        self.inner.begin(layout)
    }

    fn write(&mut self, frame: &Frame) -> storage::Result<()> {
        let o = &self.observed;
        let waiting = o.produced.load(Ordering::SeqCst).saturating_sub(self.written);
        o.deepest.fetch_max(waiting, Ordering::SeqCst);
        let thread = std::thread::current().name().unwrap_or("unnamed").to_owned();
        *o.writers.lock().unwrap().entry(thread).or_insert(0) += 1;
        std::thread::sleep((self.delay)(self.written));
        self.written += 1;
        let mut next = o.next.lock().unwrap();
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
fn run(compute: Duration, delay: fn(u64) -> Duration) -> (RunReport, Arc<Observed>) {
    run_in(IoMode::Auto, compute, delay)
}

/// [`run`] with `mode` (`Async` at the fixed modes' default depth, 2).
fn run_in(mode: IoMode, compute: Duration, delay: fn(u64) -> Duration) -> (RunReport, Arc<Observed>) {
    let observed = Arc::new(Observed::default());
    let jobs: Vec<Job> = ["a", "b"]
        .into_iter()
        .map(|name| {
            let observed = Arc::clone(&observed);
            Job::from_source(name, move |_: &GpuDevice| {
                Ok(Box::new(Paced { compute, observed: Arc::clone(&observed) }) as Box<dyn FrameSource>)
            })
        })
        .collect();
    let mut builder = Pipeline::builder()
        .devices(DeviceSelector::Indices(vec![0]), 2)
        .frames(FRAMES)
        .frame_layout(vec![FieldSpec::new("x", DType::U8, vec![256])])
        .jobs(jobs)
        .sink(Scheduled { inner: NullSink::default(), delay, written: 0, observed: Arc::clone(&observed) });
    if mode != IoMode::Auto {
        builder = builder.mode(mode).io_buffer(2);
    }
    let report = builder.run().unwrap();
    assert_eq!(report.written_frames(), 2 * FRAMES, "{report}");
    assert_eq!(observed.next.lock().unwrap().values().copied().collect::<Vec<_>>(), [FRAMES, FRAMES]);
    (report, observed)
}

#[test]
fn writes_far_shorter_than_compute_are_made_by_the_devices_in_order() {
    let (report, observed) = run(Duration::from_millis(10), |_| Duration::ZERO);
    let t = report.tuning.clone().unwrap();
    assert!(t.decided_after_frames.is_some(), "{t:?}");
    assert!(t.reason.starts_with("inline"), "{t:?}");
    assert_eq!(t.changes, Vec::<String>::new(), "nothing slowed down: {t:?}");
    // The writer thread wrote the frames before the choice, the device threads all the
    // others: as the sink saw its callers.
    let by_writer = observed.by_writer_thread();
    assert!(by_writer <= t.decided_after_frames.unwrap() + 4, "{:?}", observed.writers);
    assert!(2 * FRAMES - by_writer >= 2 * FRAMES - 12, "{:?}", observed.writers);
    assert_eq!(by_writer, report.writer.frames, "the report counts what the sink saw");
    assert!(report.to_string().contains("io.mode auto: inline:"), "{report}");
}

#[test]
fn a_sink_slower_than_compute_gets_the_whole_channel() {
    let slow = |_| Duration::from_millis(8);
    let (report, auto) = run(Duration::from_millis(1), slow);
    let t = report.tuning.clone().unwrap();
    assert!(t.reason.contains("I/O-bound"), "{t:?}");
    assert!(!t.inline);
    assert_eq!((t.io_buffer, t.capacity), (AUTO_IO_BUFFER, AUTO_IO_BUFFER));
    assert!(t.write_mean_seconds >= 0.008 && t.compute_per_frame_seconds < t.write_mean_seconds, "{t:?}");
    // Observed: every frame written by the writer thread, and the devices let run further
    // ahead of the sink than at the fixed depth of 2, by about the channel's 6 extra places
    // (the same staging buffers and device threads hold frames in both runs; when a frame is
    // counted produced moves either count by a frame: 14 or 15 against 8 or 9 here), and no
    // further: the channel bounds it.
    assert_eq!(auto.by_writer_thread(), 2 * FRAMES, "{:?}", auto.writers);
    let (_, fixed) = run_in(IoMode::Async, Duration::from_millis(1), slow);
    let (deep, shallow) = (auto.deepest.load(Ordering::SeqCst), fixed.deepest.load(Ordering::SeqCst));
    let extra = AUTO_IO_BUFFER as u64 - 2;
    assert!(
        deep >= shallow + extra / 2 && deep <= shallow + extra + 2,
        "frames waiting for the sink: at most {deep} with auto, {shallow} at io_buffer 2 ({extra} more places)"
    );
}

#[test]
fn a_write_stall_after_the_choice_deepens_the_channel() {
    // Writes of 3 ms against 20 ms per frame and device (10 ms between frames): one frame
    // arrives during a write, the fixed modes' two frames of slack are kept; then frame 30
    // takes 45 ms, during which 5 frames arrive. (A loaded machine may stretch a 3 ms write
    // past 20 ms and deepen the queue once before: the last change counts.)
    let (report, _) = run(Duration::from_millis(20), |n| Duration::from_millis(if n == 30 { 45 } else { 3 }));
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
    let (report, observed) =
        run(Duration::from_millis(10), |n| if n < 30 { Duration::ZERO } else { Duration::from_millis(15) });
    let t = report.tuning.clone().unwrap();
    assert!(t.reason.starts_with("inline"), "{t:?}");
    assert!(!t.inline, "{t:?}");
    assert!(t.changes[0].starts_with("back to async at frame 31"), "{t:?}");
    // Observed: the writer thread took over the frames from the slowdown on.
    assert!(observed.by_writer_thread() >= 2 * FRAMES - 36, "the writer thread took over: {:?}", observed.writers);
}
