//! The overlapped pipeline end to end, on lavapipe.
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{lavapipe, max_abs_diff, read_all, twin_v};
use wgpipe::compute::{DeviceSelector, gray_scott::GrayScottParams};
use wgpipe::storage::{self, Frame, NullSink, RawSink, Sink, SinkOptions, SinkSummary, StreamLayout, open_output};
use wgpipe::{Analysis, Error, FailureKind, IoMode, Job, Pipeline, StopHandle};

const ROWS: usize = 32;
const COLS: usize = 40;

fn raw(dir: &tempfile::TempDir) -> RawSink {
    RawSink::new(SinkOptions::new(dir.path().join("out")))
}

#[test]
fn async_and_sync_write_the_frames_the_cpu_twin_computes() {
    let mut outputs = Vec::new();
    for (mode, io_buffer) in [(IoMode::Async, 2), (IoMode::Sync, 2), (IoMode::Async, 0)] {
        let dir = tempfile::tempdir().unwrap();
        let report = Pipeline::builder()
            .gpus(lavapipe(1))
            .grid(ROWS, COLS)
            .frames(5)
            .steps_per_frame(9)
            .io_buffer(io_buffer)
            .mode(mode)
            .gray_scott(GrayScottParams::default(), 11, 0.03)
            .sink(raw(&dir))
            .run()
            .unwrap();
        assert_eq!(report.written_frames(), 5, "{mode:?}");
        assert_eq!(report.devices[0].frames, 5);
        assert_eq!(report.cell_steps, 5 * 9 * (ROWS * COLS) as u64);
        let streams = read_all(&dir.path().join("out"));
        assert_eq!(streams.len(), 1);
        assert_eq!(open_output(dir.path().join("out")).unwrap().steps(0).unwrap(), vec![9, 18, 27, 36, 45]);
        let last = &streams[0][4];
        let diff = max_abs_diff(last, &twin_v(ROWS, COLS, 11, 0.03, 45));
        assert!(diff <= 1e-4, "{mode:?}: frame 4 differs from the CPU twin by {diff}");
        outputs.push(streams);
    }
    assert_eq!(outputs[0], outputs[1], "sync and async write the same bytes");
    assert_eq!(outputs[0], outputs[2], "a rendezvous channel changes nothing but timing");
}

/// The run checksum the sink reports is the checksum of the bytes stored, although the
/// runner hashes each frame block by block while copying it out of the GPU's staging buffer:
/// a frame of several blocks (300 × 301 f32 is more than `HASH_BLOCK`) followed by its
/// analysis results (copied behind the fields), each mode. (A block missed panics in this
/// debug build: `Frame::with_block_hashes`.)
#[test]
fn the_run_checksum_is_that_of_the_frames_stored() {
    let (rows, cols) = (300, 301);
    assert!(rows * cols * 4 > storage::HASH_BLOCK);
    for mode in [IoMode::Async, IoMode::Sync] {
        let dir = tempfile::tempdir().unwrap();
        let report = Pipeline::builder()
            .gpus(lavapipe(1))
            .grid(rows, cols)
            .frames(3)
            .steps_per_frame(2)
            .mode(mode)
            .gray_scott(GrayScottParams::default(), 5, 0.02)
            .analysis(Analysis::of(["u", "v"]).with_pdf(10))
            .sink(raw(&dir))
            .run()
            .unwrap();
        let out = open_output(dir.path().join("out")).unwrap();
        assert!(out.fields().len() > 1, "the frames carry their reductions");
        assert_eq!(out.steps(0).unwrap().len(), 3);
        assert_eq!(report.sink.checksum, stored_checksum(&out), "{mode:?}");
    }
}

/// Frames copied out of staging on several threads are hashed block by block on those
/// threads: the run checksum is still that of the bytes stored, and the summary says how
/// many threads copied (a 2048 × 1024 frame of v is 8 MiB: two threads' worth).
#[test]
fn frames_copied_on_several_threads_checksum_as_the_bytes_stored() {
    let dir = tempfile::tempdir().unwrap();
    let report = Pipeline::builder()
        .gpus(lavapipe(1))
        .grid(2048, 1024)
        .frames(2)
        .steps_per_frame(1)
        .copy_threads(4)
        .gray_scott(GrayScottParams::default(), 5, 0.02)
        .sink(raw(&dir))
        .run()
        .unwrap();
    assert_eq!(report.devices[0].copy_threads, 2, "one thread per 4 MiB of frame");
    assert!(report.to_string().contains("copied out of staging on 2 threads"), "{report}");
    let out = open_output(dir.path().join("out")).unwrap();
    assert_eq!(out.steps(0).unwrap().len(), 2);
    assert_eq!(report.sink.checksum, stored_checksum(&out));
}

/// The run checksum of the frames stream 0 of `out` holds, read back from it.
fn stored_checksum(out: &storage::Output) -> u64 {
    let steps = out.steps(0).unwrap();
    steps.iter().enumerate().fold(0u64, |sum, (i, step)| {
        let bytes: Vec<u8> =
            (0..out.fields().len()).flat_map(|f| out.read_field(0, f, i as u64).unwrap().bytes).collect();
        sum.wrapping_add(storage::frame_checksum(&Frame::new(0, i as u64, *step, bytes)))
    })
}

/// Several devices each write their own stream, with their own seed, in order: one adapter
/// opened twice, and every adapter wgpu sees plus the first one again (so that there are two
/// streams with a single adapter too).
#[test]
fn many_devices_write_their_own_streams_in_order() {
    let mut every = wgpipe::compute::open_devices(&DeviceSelector::AllBackends, 1).unwrap();
    every.extend(lavapipe(1));
    for gpus in [lavapipe(2), every] {
        let n = gpus.len();
        let dir = tempfile::tempdir().unwrap();
        let report = Pipeline::builder()
            .gpus(gpus)
            .grid(ROWS, COLS)
            .frames(4)
            .steps_per_frame(5)
            .io_buffer(1)
            .gray_scott(GrayScottParams::default(), 100, 0.05)
            .sink(raw(&dir))
            .run()
            .unwrap();
        assert_eq!(report.written_frames(), 4 * n as u64);
        assert_eq!(report.devices.len(), n);
        let out = open_output(dir.path().join("out")).unwrap();
        let streams = read_all(&dir.path().join("out"));
        for (d, frames) in streams.iter().enumerate() {
            assert_eq!(frames.len(), 4);
            assert_eq!(out.streams()[d].attributes.get("seed"), Some(&storage::AttrValue::Int(100 + d as i64)));
            for (i, frame) in frames.iter().enumerate() {
                let twin = twin_v(ROWS, COLS, 100 + d as u64, 0.05, 5 * (i as u64 + 1));
                assert!(max_abs_diff(frame, &twin) <= 1e-4, "device {d} frame {i}");
            }
        }
        assert_ne!(streams[0], streams[1], "different seeds give different streams");
        let p = report.devices.iter().map(|d| d.frames).sum::<u64>();
        assert_eq!(p, 4 * n as u64);
    }
}

#[test]
fn batch_jobs_are_shared_by_the_devices() {
    let dir = tempfile::tempdir().unwrap();
    let kills = [0.05f32, 0.055, 0.06, 0.062, 0.065];
    let jobs = kills
        .iter()
        .enumerate()
        .map(|(i, &kill)| {
            let params = GrayScottParams { kill, ..Default::default() };
            let mut job = Job::new(format!("run{i}"), params.kernel(), |g| {
                wgpipe::compute::gray_scott::initial_state(g.ny(), g.nx(), 0, 0.0)
            });
            job.attributes = wgpipe::gray_scott_attributes(&params, 0, 0.0);
            job
        })
        .collect();
    let report = Pipeline::builder()
        .gpus(lavapipe(2))
        .grid(ROWS, COLS)
        .frames(3)
        .steps_per_frame(4)
        .fields(["v"])
        .jobs(jobs)
        .sink(raw(&dir))
        .run()
        .unwrap();
    assert_eq!(report.written_frames(), 15);
    assert_eq!(report.devices.iter().map(|d| d.jobs.len()).sum::<usize>(), 5);
    let out = open_output(dir.path().join("out")).unwrap();
    for (i, s) in out.streams().iter().enumerate() {
        assert_eq!(s.name, format!("run{i}"));
        assert_eq!((s.frames, s.complete), (3, true));
        // The raw sink's JSON has no f32: it holds the decimal the kernel's f32 prints as.
        let decimal = [0.05, 0.055, 0.06, 0.062, 0.065][i];
        assert_eq!(s.attributes.get("kill"), Some(&storage::AttrValue::Float(decimal)));
    }
}

/// A sink that fails (or panics) at frame `fail_at`, recording when.
struct FailingSink {
    inner: RawSink,
    fail_at: u64,
    panic: bool,
    written: u64,
    failed_at: Arc<Mutex<Option<Instant>>>,
}

impl Sink for FailingSink {
    fn begin(&mut self, layout: &StreamLayout) -> storage::Result<()> {
        self.inner.begin(layout)
    }
    fn write(&mut self, frame: &Frame) -> storage::Result<()> {
        if self.written == self.fail_at {
            *self.failed_at.lock().unwrap() = Some(Instant::now());
            if self.panic {
                panic!("sink exploded at frame {}", self.fail_at);
            }
            return Err(storage::Error::Usage("injected failure"));
        }
        self.written += 1;
        self.inner.write(frame)
    }
    fn finish(&mut self) -> storage::Result<SinkSummary> {
        self.inner.finish()
    }
}

#[test]
fn a_failing_sink_stops_the_run_promptly_and_keeps_earlier_frames() {
    let cases =
        [false, true].into_iter().flat_map(|panic| [IoMode::Auto, IoMode::Async, IoMode::Sync].map(|m| (m, panic)));
    for (mode, panic) in cases {
        let dir = tempfile::tempdir().unwrap();
        let failed_at = Arc::new(Mutex::new(None));
        let sink = FailingSink { inner: raw(&dir), fail_at: 3, panic, written: 0, failed_at: Arc::clone(&failed_at) };
        // 100 000 frames would take minutes: only a prompt stop ends this quickly.
        let result = Pipeline::builder()
            .gpus(lavapipe(2))
            .grid(ROWS, COLS)
            .frames(100_000)
            .steps_per_frame(1)
            .mode(mode)
            .gray_scott(GrayScottParams::default(), 0, 0.0)
            .sink(sink)
            .run();
        let returned = Instant::now();
        let Err(Error::Failed { failures, report }) = result else {
            panic!("{mode:?}: expected a failure, got {result:?}")
        };
        let failed_at = failed_at.lock().unwrap().unwrap();
        assert!(returned - failed_at < Duration::from_secs(1), "{mode:?}: took {:?} to stop", returned - failed_at);
        let text = failures.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ");
        if panic {
            assert!(text.contains("panicked: sink exploded at frame 3"), "{text}");
        } else {
            assert!(text.contains("injected failure"), "{text}");
        }
        // Auto fails within its first frames, which the writer thread writes.
        let expected_thread = if mode == IoMode::Sync { "device " } else { "writer" };
        assert!(failures.iter().any(|f| f.thread.starts_with(expected_thread)), "{mode:?}: {text}");
        assert_eq!(report.written_frames(), 3, "{mode:?}");
        let streams = read_all(&dir.path().join("out"));
        assert_eq!(
            streams.iter().map(Vec::len).sum::<usize>(),
            3,
            "{mode:?}: the 3 frames before the failure are in the output"
        );
    }
}

/// A sink that fails its write of frame `fail_at` with the error `make` builds, as a full
/// disk or a file size limit would.
struct TypedFailingSink {
    inner: RawSink,
    fail_at: u64,
    written: u64,
    make: fn() -> storage::Error,
}

impl Sink for TypedFailingSink {
    fn begin(&mut self, layout: &StreamLayout) -> storage::Result<()> {
        self.inner.begin(layout)
    }
    fn write(&mut self, frame: &Frame) -> storage::Result<()> {
        if self.written == self.fail_at {
            return Err((self.make)());
        }
        self.written += 1;
        self.inner.write(frame)
    }
    fn finish(&mut self) -> storage::Result<SinkSummary> {
        self.inner.finish()
    }
}

fn disk_full() -> storage::Error {
    let source = std::io::Error::from(std::io::ErrorKind::StorageFull);
    storage::Error::DiskFull { path: "full.h5".into(), needed: 4096, source }
}

fn file_size_limit() -> storage::Error {
    storage::Error::FileSizeLimit { path: "big.h5".into(), needed: 2048, limit: 1024 }
}

/// A one-device run in `mode` whose sink fails at frame 2 with `make`'s error: its one
/// failure (the writer's, or the device thread's in sync mode) says what the error says.
fn failed_mid_run(mode: IoMode, make: fn() -> storage::Error) -> Error {
    let dir = tempfile::tempdir().unwrap();
    let result = Pipeline::builder()
        .gpus(lavapipe(1))
        .grid(ROWS, COLS)
        .frames(6)
        .steps_per_frame(1)
        .mode(mode)
        .gray_scott(GrayScottParams::default(), 0, 0.0)
        .sink(TypedFailingSink { inner: raw(&dir), fail_at: 2, written: 0, make })
        .run();
    let Err(error) = result else { panic!("{mode:?}: expected a failure, got {result:?}") };
    let Error::Failed { failures, report } = &error else { panic!("{mode:?}: expected Error::Failed, got {error:?}") };
    assert_eq!(failures.len(), 1, "{mode:?}: {failures:?}");
    assert_eq!(failures[0].message, make().to_string(), "{mode:?}: the message is the sink's error's text");
    assert_eq!(report.written_frames(), 2, "{mode:?}");
    error
}

/// The sink's error as `std::error::Error::source` of the run's error, downcast.
fn storage_source(error: &Error) -> Option<&storage::Error> {
    std::error::Error::source(error).and_then(|s| s.downcast_ref::<storage::Error>())
}

/// A sink's error during the run comes back whole: a program matches its variant through
/// the failure (`kind`, `storage_error`) and through the run error's `source` (what `anyhow`
/// and `downcast_ref` walk), in the writer thread and in a device thread writing itself.
#[test]
fn a_sinks_error_mid_run_comes_back_typed_as_the_failures_kind_and_the_errors_source() {
    for mode in [IoMode::Async, IoMode::Sync] {
        let error = failed_mid_run(mode, disk_full);
        let Error::Failed { failures, .. } = &error else { unreachable!() };
        let failure = &failures[0];
        assert!(
            matches!(&failure.kind, FailureKind::DiskFull { path, .. } if path.as_path() == Path::new("full.h5")),
            "{mode:?}: {failure:?}"
        );
        assert_eq!(failure.disk_full_path(), Some(Path::new("full.h5")), "{mode:?}");
        assert!(matches!(failure.storage_error(), Some(storage::Error::DiskFull { needed: 4096, .. })), "{mode:?}");
        assert!(failure.device_error().is_none(), "{mode:?}");
        assert!(matches!(storage_source(&error), Some(storage::Error::DiskFull { needed: 4096, .. })), "{mode:?}");

        let error = failed_mid_run(mode, file_size_limit);
        let Error::Failed { failures, .. } = &error else { unreachable!() };
        let failure = &failures[0];
        assert!(
            matches!(&failure.kind, FailureKind::Storage(e) if matches!(**e, storage::Error::FileSizeLimit { .. }))
        );
        assert_eq!(failure.disk_full_path(), None, "{mode:?}");
        let limit = |e: Option<&storage::Error>| match e {
            Some(storage::Error::FileSizeLimit { limit, needed, .. }) => Some((*limit, *needed)),
            _ => None,
        };
        assert_eq!(limit(failure.storage_error()), Some((1024, 2048)), "{mode:?}");
        assert_eq!(limit(storage_source(&error)), Some((1024, 2048)), "{mode:?}");
        let chained = anyhow::Error::from(error);
        let found = chained.chain().find_map(|c| c.downcast_ref::<storage::Error>());
        assert_eq!(limit(found), Some((1024, 2048)), "{mode:?}: through anyhow's chain");
    }
}

#[test]
fn a_failing_device_stops_alone_and_the_others_finish_the_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let params = GrayScottParams::default();
    let good = |i: usize| {
        Job::new(format!("good{i}"), params.kernel(), |g| {
            wgpipe::compute::gray_scott::initial_state(g.ny(), g.nx(), 0, 0.0)
        })
    };
    // The bad job's initial state has the wrong size: the device running it reports and stops.
    let bad = Job::new("bad", params.kernel(), |_| vec![0.0; 7]);
    let jobs = vec![bad, good(0), good(1), good(2)];
    let result = Pipeline::builder()
        .gpus(lavapipe(2))
        .grid(ROWS, COLS)
        .frames(3)
        .steps_per_frame(2)
        .jobs(jobs)
        .sink(raw(&dir))
        .run();
    let Err(error) = result else { panic!("expected a failure, got {result:?}") };
    let Error::Failed { failures, report } = &error else { panic!("expected Error::Failed, got {error:?}") };
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].thread.starts_with("device ") && failures[0].message.contains("stream bad"), "{failures:?}");
    // The device's own error, typed: through the failure and as the run error's source.
    let invalid = |e: Option<&wgpipe::compute::Error>| matches!(e, Some(wgpipe::compute::Error::InvalidKernel { message, .. }) if message.contains("initial state holds 7 values"));
    assert!(invalid(failures[0].device_error()), "{failures:?}");
    assert!(matches!(failures[0].kind, FailureKind::Device(_)), "{failures:?}");
    assert!(invalid(std::error::Error::source(&error).and_then(|s| s.downcast_ref())), "{error:?}");
    assert_eq!(report.written_frames(), 9, "the other device ran the three good jobs");
    let out = open_output(dir.path().join("out")).unwrap();
    let complete: Vec<_> = out.streams().iter().filter(|s| s.complete).map(|s| s.name.clone()).collect();
    assert_eq!(complete, ["good0", "good1", "good2"]);
}

/// A sink that destroys one device (as a driver reset or a lost GPU would) once it has
/// written frame `at` of any stream.
struct DeviceKillingSink {
    inner: RawSink,
    at: u64,
    device: wgpipe::compute::wgpu::Device,
}

impl Sink for DeviceKillingSink {
    fn begin(&mut self, layout: &StreamLayout) -> storage::Result<()> {
        self.inner.begin(layout)
    }
    fn write(&mut self, frame: &Frame) -> storage::Result<()> {
        self.inner.write(frame)?;
        if frame.index == self.at {
            self.device.destroy();
        }
        Ok(())
    }
    fn finish(&mut self) -> storage::Result<SinkSummary> {
        self.inner.finish()
    }
}

/// A device lost in the middle of its stream, through the whole pipeline: the run reports
/// that device, the other device finishes its stream, and the lost device's stream keeps
/// every frame that reached the sink, readable, and is marked incomplete. Devices pull their
/// streams from a shared queue, so which stream the lost device runs is read from the report.
#[test]
fn a_device_lost_mid_stream_fails_alone_and_leaves_its_stream_incomplete_but_readable() {
    let dir = tempfile::tempdir().unwrap();
    let gpus = lavapipe(2);
    let lost = gpus[1].label().to_owned();
    let sink = DeviceKillingSink { inner: raw(&dir), at: 3, device: gpus[1].device().clone() };
    let result = Pipeline::builder()
        .gpus(gpus)
        .grid(ROWS, COLS)
        .frames(40)
        .steps_per_frame(1)
        .gray_scott(GrayScottParams::default(), 100, 0.05)
        .sink(sink)
        .run();
    let Err(Error::Failed { failures, report }) = result else { panic!("expected a failure, got {result:?}") };
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0].thread, format!("device {lost}"), "{failures:?}");
    let lost_stream = (0..2).find(|s| failures[0].message.contains(&format!("stream stream{s}:")));
    let Some(lost_stream) = lost_stream else { panic!("the failure names no stream: {failures:?}") };
    assert!(failures[0].device_error().is_some(), "the device's own error is kept: {failures:?}");
    let other = 1 - lost_stream;
    let out = open_output(dir.path().join("out")).unwrap();
    let streams = out.streams();
    assert_eq!((streams[other].frames, streams[other].complete), (40, true), "the other device finished");
    let kept = streams[lost_stream].frames;
    // The frames read back before the loss are written; the rest of the 40 cannot be.
    assert!(kept < 40 && !streams[lost_stream].complete, "lost stream: {:?}", streams[lost_stream]);
    assert_eq!(report.written_frames(), 40 + kept);
    for i in 0..kept {
        let frame = out.read_f32(lost_stream, 0, i).unwrap();
        let twin = twin_v(ROWS, COLS, 100 + lost_stream as u64, 0.05, i + 1);
        assert!(max_abs_diff(&frame, &twin) <= 1e-4, "stream{lost_stream} frame {i}");
    }
}

/// A sink that asks the run to stop after `after` frames, as a Ctrl-C handler would.
struct StoppingSink {
    inner: RawSink,
    stop: StopHandle,
    after: u64,
    seen: u64,
}

impl Sink for StoppingSink {
    fn begin(&mut self, layout: &StreamLayout) -> storage::Result<()> {
        self.inner.begin(layout)
    }
    fn write(&mut self, frame: &Frame) -> storage::Result<()> {
        self.seen += 1;
        if self.seen == self.after {
            self.stop.stop();
        }
        self.inner.write(frame)
    }
    fn finish(&mut self) -> storage::Result<SinkSummary> {
        self.inner.finish()
    }
}

#[test]
fn a_stop_writes_the_frames_in_flight_and_reports_an_interruption() {
    let dir = tempfile::tempdir().unwrap();
    let stop = StopHandle::default();
    let sink = StoppingSink { inner: raw(&dir), stop: stop.clone(), after: 5, seen: 0 };
    let result = Pipeline::builder()
        .gpus(lavapipe(1))
        .grid(ROWS, COLS)
        .frames(100_000)
        .steps_per_frame(1)
        .io_buffer(4)
        .gray_scott(GrayScottParams::default(), 0, 0.0)
        .sink(sink)
        .stop_handle(stop)
        .run();
    let Err(Error::Interrupted { report }) = result else { panic!("expected an interruption, got {result:?}") };
    let computed = report.devices[0].frames;
    assert!(report.written_frames() >= 5, "{report:?}");
    assert_eq!(report.written_frames(), computed, "every computed frame was written, none dropped");
    assert!(computed < 100, "the devices stopped promptly, computed {computed}");
    // The output was closed properly: the stream is marked unfinished and holds every
    // written frame, readable, the last one as the CPU twin computes it.
    let out = open_output(dir.path().join("out")).unwrap();
    let stream = &out.streams()[0];
    assert_eq!((stream.frames, stream.expected_frames, stream.complete), (computed, Some(100_000), false));
    let frames = read_all(&dir.path().join("out")).remove(0);
    assert_eq!(frames.len() as u64, computed);
    assert!(max_abs_diff(&frames[frames.len() - 1], &twin_v(ROWS, COLS, 0, 0.0, computed)) <= 1e-4);
}

#[test]
fn bad_configurations_are_refused_before_anything_runs() {
    let cases: Vec<(wgpipe::PipelineBuilder, &str)> = vec![
        (Pipeline::builder().grid(0, 4), "axis 0 has size 0"),
        (Pipeline::builder().frames(0), "frames must be at least 1"),
        (Pipeline::builder().steps_per_frame(0), "steps_per_frame"),
        (Pipeline::builder().staging_buffers(0), "staging_buffers"),
    ];
    for (b, needle) in cases {
        let err = b.gray_scott(GrayScottParams::default(), 0, 0.0).sink(NullSink::default()).run().unwrap_err();
        assert!(err.to_string().contains(needle), "{err}");
    }
    let err = Pipeline::builder().gray_scott(GrayScottParams::default(), 0, 0.0).run().unwrap_err();
    assert!(err.to_string().contains("no sink"), "{err}");
    let err = Pipeline::builder()
        .gpus(lavapipe(1))
        .gray_scott(GrayScottParams::default(), 0, 0.0)
        .fields(["w"])
        .sink(NullSink::default())
        .run()
        .unwrap_err();
    assert!(err.to_string().contains("no field \"w\""), "{err}");
}

#[test]
fn progress_counts_every_frame() {
    let pipeline = Pipeline::builder()
        .gpus(lavapipe(2))
        .grid(ROWS, COLS)
        .frames(6)
        .gray_scott(GrayScottParams::default(), 0, 0.0)
        .sink(NullSink::default())
        .build()
        .unwrap();
    let progress = pipeline.progress();
    assert_eq!(progress.snapshot().total_frames, 12);
    let report = pipeline.run().unwrap();
    let snap = progress.snapshot();
    assert_eq!((snap.computed, snap.written, snap.finished_devices), (12, 12, 2));
    // 12 frames of one f32 field: counted by the progress shards and by the sink separately.
    let bytes = 12 * (ROWS * COLS * 4) as u64;
    assert_eq!((snap.bytes, report.sink.bytes), (bytes, bytes));
    assert!(snap.devices.iter().all(|d| d.computed == 6 && d.written == 6));
}

#[test]
fn traces_show_every_thread_and_open_as_chrome_trace_json() {
    let report = Pipeline::builder()
        .gpus(lavapipe(1))
        .grid(ROWS, COLS)
        .frames(6)
        .gray_scott(GrayScottParams::default(), 0, 0.0)
        .sink(NullSink::default())
        .trace(true)
        .run()
        .unwrap();
    use wgpipe::SpanKind::{Blocked, Compute, Readback, Wait, Write};
    let kinds = |spans: &[wgpipe::Span]| spans.iter().map(|s| s.kind).collect::<Vec<_>>();
    // Per frame, in this order: the GPU wait, the copy out, the hand-off (however short).
    assert_eq!(kinds(&report.devices[0].spans), [Compute, Readback, Blocked].repeat(6));
    assert_eq!(kinds(&report.writer.spans), [Wait, Write].repeat(6));
    // Each thread's spans follow one another on the run's clock without overlapping, and
    // end within the run.
    let wall = Duration::from_secs_f64(report.wall_seconds);
    for spans in [&report.devices[0].spans, &report.writer.spans] {
        for pair in spans.windows(2) {
            assert!(pair[0].start + pair[0].duration <= pair[1].start, "overlapping spans {pair:?}");
        }
        assert!(spans.last().is_some_and(|s| s.start + s.duration <= wall), "a span ends after the run");
    }
    // The trace holds every span, in order, under its thread's name.
    let json: serde_json::Value = serde_json::from_str(&wgpipe::chrome_trace(&report)).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    for (tid, spans) in [&report.devices[0].spans, &report.writer.spans].into_iter().enumerate() {
        let names: Vec<&str> =
            events.iter().filter(|e| e["tid"] == tid && e["ph"] == "X").map(|e| e["name"].as_str().unwrap()).collect();
        assert_eq!(names, spans.iter().map(|s| s.kind.name()).collect::<Vec<_>>(), "thread {tid}");
    }
    assert_eq!(events.len(), 6 * 3 + 6 * 2 + 2, "one event per span plus two thread names");

    let untraced = Pipeline::builder()
        .gpus(lavapipe(1))
        .grid(ROWS, COLS)
        .frames(2)
        .gray_scott(GrayScottParams::default(), 0, 0.0)
        .sink(NullSink::default())
        .run()
        .unwrap();
    assert!(untraced.devices[0].spans.is_empty() && untraced.writer.spans.is_empty(), "tracing is off by default");
}
