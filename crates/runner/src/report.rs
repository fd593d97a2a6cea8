//! What a run did and how long each part took.

use std::fmt;

use wgpipe_storage::SinkSummary;

use crate::trace::Span;

/// Whether frames are written by a separate writer thread or by the device threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoMode {
    /// The pipeline measures its first frames and chooses (the default): a writer thread and
    /// how many frames may wait for it, or each device writing its own frames while the GPU
    /// computes the next; [`RunReport::tuning`] says what and why (see [`crate::tuning`]).
    #[default]
    Auto,
    /// A writer thread stores frames while the devices keep computing.
    Async,
    /// Each device thread stores its own frames, the GPU idle meanwhile: the baseline overlap
    /// is measured against.
    Sync,
}

impl IoMode {
    /// `"auto"`, `"async"` or `"sync"`.
    pub fn name(self) -> &'static str {
        match self {
            IoMode::Auto => "auto",
            IoMode::Async => "async",
            IoMode::Sync => "sync",
        }
    }
}

/// What `io.mode = "auto"` chose, and from what.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TuningReport {
    /// The device threads wrote their own frames at the end (no writer thread).
    pub inline: bool,
    /// Frames that could wait for the writer thread at the end (0 when inline).
    pub io_buffer: usize,
    /// The channel's capacity: the deepest `io_buffer` the run could choose.
    pub capacity: usize,
    /// Frames written when the choice was made; `None`: the run ended first, or nothing was
    /// measured (a split domain): async throughout.
    pub decided_after_frames: Option<u64>,
    /// The choice and its reason, in numbers.
    pub reason: String,
    /// Changes after the choice (a slower write deepened the queue, or ended inline writes).
    pub changes: Vec<String>,
    /// Measured compute seconds between frames (per frame, over the devices).
    pub compute_per_frame_seconds: f64,
    /// Measured seconds per write, on average (the first write not counted).
    pub write_mean_seconds: f64,
    /// The slowest measured write (seconds).
    pub write_max_seconds: f64,
}

/// Where the report's compute time comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComputeSource {
    /// GPU timestamp queries around each frame's commands: the time the GPU worked, whether
    /// or not the host was waiting for it. Used when every device that produced frames
    /// timed all of them (devices with `TIMESTAMP_QUERY`).
    GpuTimestamps,
    /// The host's time inside each frame's production (submitting, waiting for the GPU,
    /// copying out): in async mode the GPU may finish during time the device thread spends
    /// blocked on the channel, so this understates the GPU's work when I/O-bound.
    HostMeasured,
}

impl ComputeSource {
    /// `"GPU timestamps"` or `"host-measured"`, as the summary and JSON name it.
    pub fn name(self) -> &'static str {
        match self {
            ComputeSource::GpuTimestamps => "GPU timestamps",
            ComputeSource::HostMeasured => "host-measured",
        }
    }
}

/// One device thread's share of the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceReport {
    /// Device label.
    pub device: String,
    /// Streams (jobs) it ran.
    pub jobs: Vec<String>,
    /// Frames it produced.
    pub frames: u64,
    /// Seconds spent producing frames: GPU steps, waiting for them, copying out (host clock).
    pub compute_seconds: f64,
    /// Seconds the GPU spent on this device's frames, from timestamp queries; `None` when the
    /// device has no `TIMESTAMP_QUERY`, timestamps were off, or a frame came without one.
    pub gpu_seconds: Option<f64>,
    /// Seconds blocked handing frames to a full channel (async mode): backpressure.
    pub blocked_seconds: f64,
    /// Seconds spent writing its own frames (sync mode).
    pub write_seconds: f64,
    /// Frames between checkpoints that `run.checkpoint = "auto"` chose on this device (for
    /// its last stream), from the measured checkpoint cost and time per frame.
    pub checkpoint_interval: Option<u64>,
    /// Threads it copied each frame out of staging on (its last stream's; `io.copy_threads`,
    /// fewer for frames under 4 MiB a thread, one on a CPU adapter); 0 before any stream.
    pub copy_threads: usize,
    /// Timeline of this thread, when tracing was on.
    pub spans: Vec<Span>,
}

/// The checkpoints a run wrote (see [`crate::checkpoint`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CheckpointReport {
    /// Checkpoints written.
    pub written: u64,
    /// Their bytes (states; headers not counted).
    pub bytes: u64,
    /// Seconds the writer spent writing them (after the frames they were taken with).
    pub seconds: f64,
}

/// The writer thread's share of the run (async mode).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WriterReport {
    /// Frames written.
    pub frames: u64,
    /// Payload bytes written.
    pub bytes: u64,
    /// Seconds inside the sink's `write`.
    pub write_seconds: f64,
    /// Seconds waiting for the next frame: the writer idles, I/O is hidden.
    pub wait_seconds: f64,
    /// Timeline of this thread, when tracing was on.
    pub spans: Vec<Span>,
}

/// Above this `overlap_ratio` (the run took more than twice its compute and writes one after
/// the other) overlap is not what decides the run, and the verdict says what else does.
const NEITHER_BOUND: f64 = 2.0;

/// The result of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunReport {
    /// Async or sync.
    pub mode: IoMode,
    /// Wall-clock seconds from the first frame's submission to the closed output.
    pub wall_seconds: f64,
    /// Seconds spent in the sink's `finish` (flush, close, fsync).
    pub finish_seconds: f64,
    /// Per device thread.
    pub devices: Vec<DeviceReport>,
    /// The writer thread (zero in sync mode).
    pub writer: WriterReport,
    /// What the sink reported.
    pub sink: SinkSummary,
    /// Cells × steps computed, for cell-steps/s.
    pub cell_steps: u64,
    /// Checkpoints written.
    pub checkpoints: CheckpointReport,
    /// What `io.mode = "auto"` chose; `None` in the other modes.
    pub tuning: Option<TuningReport>,
}

impl RunReport {
    /// Frames the sink accepted.
    pub fn written_frames(&self) -> u64 {
        self.sink.frames
    }

    /// Where [`RunReport::compute_seconds`] comes from: GPU timestamps when every device
    /// that produced frames has GPU time for all of them, else the host's clock (for all).
    pub fn compute_source(&self) -> ComputeSource {
        let mut producing = self.devices.iter().filter(|d| d.frames > 0).peekable();
        if producing.peek().is_some() && producing.all(|d| d.gpu_seconds.is_some()) {
            ComputeSource::GpuTimestamps
        } else {
            ComputeSource::HostMeasured
        }
    }

    /// Seconds the slowest device spent computing, by [`RunReport::compute_source`].
    pub fn compute_seconds(&self) -> f64 {
        let gpu = self.compute_source() == ComputeSource::GpuTimestamps;
        let of = |d: &DeviceReport| if gpu { d.gpu_seconds.unwrap_or(0.0) } else { d.compute_seconds };
        self.devices.iter().map(of).fold(0.0, f64::max)
    }

    /// Seconds spent writing, by the writer thread or by all device threads together.
    pub fn write_seconds(&self) -> f64 {
        self.writer.write_seconds + self.devices.iter().map(|d| d.write_seconds).sum::<f64>() + self.finish_seconds
    }

    /// Wall time against compute and write done one after the other:
    /// `wall / (compute + write)`. 1.0 means no overlap; 0.5 is perfect overlap when compute
    /// and I/O take equally long (the best non-blocking I/O can do).
    pub fn overlap_ratio(&self) -> f64 {
        let serial = self.compute_seconds() + self.write_seconds();
        if serial > 0.0 { self.wall_seconds / serial } else { 1.0 }
    }

    /// The best `overlap_ratio` any overlap can reach for these compute and write times:
    /// `max(compute, write) / (compute + write)` (0.5 when they are equal, near 1 when one
    /// side dominates).
    pub fn best_overlap_ratio(&self) -> f64 {
        let (c, w) = (self.compute_seconds(), self.write_seconds());
        if c + w > 0.0 { c.max(w) / (c + w) } else { 1.0 }
    }

    /// How close the run came to what overlap can do at best: `max(compute, write) / wall`,
    /// which is [`RunReport::best_overlap_ratio`] over [`RunReport::overlap_ratio`]. 1.0: the
    /// run took no longer than its slower half (compute and writes fully overlapped); lower:
    /// time went to neither, or to one waiting for the other. 0 when nothing ran.
    pub fn efficiency(&self) -> f64 {
        if self.wall_seconds > 0.0 { self.compute_seconds().max(self.write_seconds()) / self.wall_seconds } else { 0.0 }
    }

    /// Where the slowest device thread's time went beyond the GPU's work and the writes:
    /// `(readback, elsewhere)`. `readback`: time in the producer beyond its GPU time (waiting
    /// for frames to come back, copying them out of the staging buffers, hashing them), with
    /// GPU timestamps only. `elsewhere`: wall time that no device thread spent producing,
    /// handing on or writing frames, and that the sink's finish did not take (each stream's
    /// setup: initial state, its kernel compiled, buffers; the writer finishing after the
    /// devices). On a fast GPU these, not overlap, decide the run: a large run's compute can
    /// be a small part of its wall time (the test below holds what an NVIDIA H200 reported).
    pub fn beyond_compute_and_writes(&self) -> (f64, f64) {
        let gpu = self.compute_source() == ComputeSource::GpuTimestamps;
        let slowest = self.devices.iter().max_by(|a, b| a.compute_seconds.total_cmp(&b.compute_seconds));
        let readback = match slowest {
            Some(d) if gpu => (d.compute_seconds - d.gpu_seconds.unwrap_or(0.0)).max(0.0),
            _ => 0.0,
        };
        let busy =
            self.devices.iter().map(|d| d.compute_seconds + d.blocked_seconds + d.write_seconds).fold(0.0, f64::max);
        (readback, (self.wall_seconds - busy - self.finish_seconds).max(0.0))
    }

    /// One sentence telling whether overlapping I/O helps this run, and what would.
    pub fn verdict(&self) -> String {
        let (c, w) = (self.compute_seconds(), self.write_seconds());
        let best = self.best_overlap_ratio();
        let saving = (1.0 - best) * 100.0;
        let blocked: f64 = self.devices.iter().map(|d| d.blocked_seconds).sum();
        // Auto's inline writes: no writer thread waited, no channel filled.
        let inline = self.tuning.as_ref().is_some_and(|t| t.inline);
        let waited = if inline {
            "the devices wrote their own frames (io.mode auto chose inline writes)"
        } else {
            "the writer mostly waited for frames"
        };
        let stalled = if inline {
            "the devices wrote their own frames".to_owned()
        } else {
            format!("devices blocked {blocked:.2} s on a full channel")
        };
        match self.mode {
            IoMode::Sync => format!(
                "sync I/O: compute and writes ran one after the other; async I/O could take {:.0}% of this time at best",
                best * 100.0
            ),
            _ if c + w <= 0.0 => "nothing was computed or written".to_owned(),
            _ if self.overlap_ratio() > NEITHER_BOUND => {
                let (readback, elsewhere) = self.beyond_compute_and_writes();
                let readback = if self.compute_source() == ComputeSource::GpuTimestamps {
                    format!("{readback:.3} s more bringing frames back (readback, the copy out of staging, hashing)")
                } else {
                    "their compute time includes bringing frames back (no GPU timestamps to tell them apart)".to_owned()
                };
                format!(
                    "neither compute- nor I/O-bound: of {:.3} s, the devices computed {c:.3} s and the writes took \
                     {w:.3} s; the device threads spent {readback}, and {elsewhere:.3} s on neither (setting up \
                     each stream: initial state, its kernel compiled, buffers; the writer finishing after them): \
                     more steps per frame or a longer run make overlap matter, fewer stored fields shorten the readback",
                    self.wall_seconds
                )
            }
            _ if w < 0.1 * c => format!(
                "compute-bound: writing took {:.0}% of the compute time, so overlap can save at most {saving:.0}%; \
                 {waited}",
                100.0 * w / c.max(f64::MIN_POSITIVE)
            ),
            _ if c < 0.1 * w => format!(
                "I/O-bound: compute took {:.0}% of the write time, so overlap can save at most {saving:.0}% \
                 ({stalled}); a faster target, a faster sink or lighter compression is what helps",
                100.0 * c / w.max(f64::MIN_POSITIVE)
            ),
            _ => format!(
                "compute and I/O overlap: best possible ratio {best:.2} for these times, achieved {:.2}",
                self.overlap_ratio()
            ),
        }
    }

    /// Cell-steps per second over the wall time.
    pub fn cell_steps_per_second(&self) -> f64 {
        if self.wall_seconds > 0.0 { self.cell_steps as f64 / self.wall_seconds } else { 0.0 }
    }
}

impl fmt::Display for RunReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mb = self.sink.bytes as f64 / 1e6;
        writeln!(
            f,
            "{} frames, {:.1} MB in {:.2} s ({} I/O): {:.3e} cell-steps/s, {:.1} MB/s",
            self.sink.frames,
            mb,
            self.wall_seconds,
            self.mode.name(),
            self.cell_steps_per_second(),
            if self.wall_seconds > 0.0 { mb / self.wall_seconds } else { 0.0 }
        )?;
        let w = self.devices.iter().map(|d| d.device.chars().count()).max().unwrap_or(0).max(8);
        writeln!(
            f,
            "{:<w$} {:>7} {:>10} {:>10} {:>10} {:>10}",
            "device", "frames", "compute s", "GPU s", "blocked s", "write s"
        )?;
        for d in &self.devices {
            let gpu = d.gpu_seconds.map_or("-".to_owned(), |s| format!("{s:.3}"));
            writeln!(
                f,
                "{:<w$} {:>7} {:>10.3} {:>10} {:>10.3} {:>10.3}",
                d.device, d.frames, d.compute_seconds, gpu, d.blocked_seconds, d.write_seconds
            )?;
        }
        if self.writer.frames > 0 || self.mode == IoMode::Async {
            writeln!(
                f,
                "{:<w$} {:>7} {:>10} {:>10} {:>10} {:>10.3}   (waiting for frames: {:.3} s)",
                "writer", self.writer.frames, "", "", "", self.writer.write_seconds, self.writer.wait_seconds
            )?;
        }
        let copying: Vec<String> =
            self.devices.iter().filter(|d| d.copy_threads > 1).map(|d| d.copy_threads.to_string()).collect();
        if !copying.is_empty() {
            writeln!(f, "frames copied out of staging on {} threads per device (io.copy_threads)", copying.join(", "))?;
        }
        if let Some(t) = &self.tuning {
            writeln!(f, "io.mode auto: {}", t.reason)?;
            for change in &t.changes {
                writeln!(f, "io.mode auto: {change}")?;
            }
        }
        if self.checkpoints.written > 0 {
            let every: Vec<String> =
                self.devices.iter().filter_map(|d| d.checkpoint_interval).map(|n| n.to_string()).collect();
            writeln!(
                f,
                "checkpoints: {} written, {:.1} MB in {:.3} s{}",
                self.checkpoints.written,
                self.checkpoints.bytes as f64 / 1e6,
                self.checkpoints.seconds,
                if every.is_empty() { String::new() } else { format!(" (auto: every {} frames)", every.join(", ")) }
            )?;
        }
        if self.sink.skipped_frames > 0 {
            let stored = self.sink.bytes as f64;
            let skipped = self.sink.skipped_bytes as f64;
            writeln!(
                f,
                "fields not stored (output.every, output.when): {} of {} frames, {:.1} MB saved ({:.1} % of the bytes \
                 storing every frame's fields would have written)",
                self.sink.skipped_frames,
                self.sink.frames,
                skipped / 1e6,
                if stored + skipped > 0.0 { 100.0 * skipped / (stored + skipped) } else { 0.0 }
            )?;
        }
        writeln!(f, "compute {:.2} s ({})", self.compute_seconds(), self.compute_source().name())?;
        write!(
            f,
            "overlap: wall / (compute + write) = {:.3} / ({:.3} + {:.3}) = {:.2}  (1.0 = none, 0.5 = perfect at balance)",
            self.wall_seconds,
            self.compute_seconds(),
            self.write_seconds(),
            self.overlap_ratio()
        )?;
        write!(f, "\n{}", self.verdict())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(mode: IoMode, compute: f64, write: f64, wall: f64) -> RunReport {
        RunReport {
            mode,
            wall_seconds: wall,
            devices: vec![DeviceReport { compute_seconds: compute, ..Default::default() }],
            writer: WriterReport { write_seconds: write, ..Default::default() },
            ..Default::default()
        }
    }

    #[test]
    fn efficiency_is_the_slower_half_over_the_wall_time() {
        let r = report(IoMode::Async, 2.0, 1.0, 2.5);
        assert_eq!(r.efficiency(), 2.0 / 2.5);
        assert!((r.efficiency() - r.best_overlap_ratio() / r.overlap_ratio()).abs() < 1e-12);
        assert_eq!(report(IoMode::Sync, 1.0, 1.0, 2.0).efficiency(), 0.5, "no overlap at balance");
        assert_eq!(RunReport::default().efficiency(), 0.0, "nothing ran");
    }

    #[test]
    fn compute_time_comes_from_the_gpu_only_when_every_producing_device_has_it() {
        let device = |frames, compute_seconds, gpu_seconds| DeviceReport {
            frames,
            compute_seconds,
            gpu_seconds,
            ..Default::default()
        };
        let mut r = report(IoMode::Async, 2.0, 1.0, 2.5);
        r.devices = vec![device(4, 2.0, Some(0.5)), device(4, 1.5, Some(0.75)), device(0, 0.0, None)];
        assert_eq!(r.compute_source(), ComputeSource::GpuTimestamps);
        assert_eq!(r.compute_seconds(), 0.75, "the slowest device's GPU time");
        assert!(r.to_string().contains("compute 0.75 s (GPU timestamps)"), "{r}");
        r.devices[1].gpu_seconds = None;
        assert_eq!(r.compute_source(), ComputeSource::HostMeasured);
        assert_eq!(r.compute_seconds(), 2.0, "host time for every device, not a mix");
        assert!(r.to_string().contains("compute 2.00 s (host-measured)"), "{r}");
        assert_eq!(RunReport::default().compute_source(), ComputeSource::HostMeasured, "no frames, no GPU time");
    }

    #[test]
    fn the_summary_names_the_copy_threads_of_devices_that_used_several() {
        let mut r = report(IoMode::Async, 1.0, 1.0, 1.1);
        r.devices[0].copy_threads = 1;
        assert!(!r.to_string().contains("copied out of staging"), "{r}");
        r.devices.push(DeviceReport { copy_threads: 8, ..Default::default() });
        assert!(
            r.to_string().contains("frames copied out of staging on 8 threads per device (io.copy_threads)"),
            "{r}"
        );
    }

    #[test]
    fn the_verdict_says_when_overlap_can_help() {
        let balanced = report(IoMode::Async, 1.0, 1.0, 1.1);
        assert!((balanced.best_overlap_ratio() - 0.5).abs() < 1e-12);
        assert!((balanced.overlap_ratio() - 0.55).abs() < 1e-12);
        assert!(
            balanced.verdict().contains("best possible ratio 0.50") && balanced.verdict().contains("achieved 0.55")
        );
        let mut compute_bound = report(IoMode::Async, 10.0, 0.5, 10.1);
        assert!(compute_bound.verdict().starts_with("compute-bound: writing took 5%"), "{}", compute_bound.verdict());
        assert!(compute_bound.verdict().contains("save at most 5%"), "{}", compute_bound.verdict());
        assert!(compute_bound.verdict().ends_with("the writer mostly waited for frames"));
        // Auto's inline writes had no writer thread to wait.
        compute_bound.mode = IoMode::Auto;
        compute_bound.tuning = Some(TuningReport { inline: true, ..Default::default() });
        assert!(compute_bound.verdict().ends_with("(io.mode auto chose inline writes)"), "{}", compute_bound.verdict());
        let io_bound = report(IoMode::Async, 0.5, 10.0, 10.2);
        assert!(io_bound.verdict().starts_with("I/O-bound"), "{}", io_bound.verdict());
        let sync = report(IoMode::Sync, 1.0, 3.0, 4.0);
        assert!(sync.verdict().contains("75% of this time"), "{}", sync.verdict());
        assert!(sync.to_string().ends_with(&sync.verdict()), "the summary ends with the verdict");
    }

    /// What an NVIDIA H200 reported for a 256³ run into the null sink (30 frames of 134 MB):
    /// 0.12 s of GPU work in a 1.6 s run. The verdict says where the rest went instead of
    /// calling the run compute-bound.
    #[test]
    fn a_run_neither_compute_nor_io_bound_says_where_its_time_went() {
        let mut r = report(IoMode::Async, 0.744, 0.0, 1.597);
        r.devices[0].frames = 30;
        r.devices[0].gpu_seconds = Some(0.123);
        assert!(r.overlap_ratio() > 12.0);
        let (readback, elsewhere) = r.beyond_compute_and_writes();
        assert!((readback - 0.621).abs() < 1e-9 && (elsewhere - 0.853).abs() < 1e-9, "{readback} {elsewhere}");
        let v = r.verdict();
        assert!(v.starts_with("neither compute- nor I/O-bound: of 1.597 s, the devices computed 0.123 s"), "{v}");
        assert!(v.contains("0.621 s more bringing frames back") && v.contains("0.853 s on neither"), "{v}");
        // Host-measured compute has no readback of its own to tell apart.
        r.devices[0].gpu_seconds = None;
        let v = r.verdict();
        assert!(v.contains("computed 0.744 s") && v.contains("compute time includes bringing frames back"), "{v}");
        // Twice the serial time or less: overlap decides, as before.
        assert!(report(IoMode::Async, 1.0, 0.05, 2.0).verdict().starts_with("compute-bound"));
    }
}
