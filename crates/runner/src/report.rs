//! What a run did and how long each part took.

use std::fmt;

use wgpipe_storage::SinkSummary;

use crate::trace::Span;

/// Whether frames are written by a separate writer thread or by the device threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoMode {
    /// A writer thread stores frames while the devices keep computing (the default).
    #[default]
    Async,
    /// Each device thread stores its own frames: the baseline overlap is measured against.
    Sync,
}

impl IoMode {
    /// `"async"` or `"sync"`.
    pub fn name(self) -> &'static str {
        match self {
            IoMode::Async => "async",
            IoMode::Sync => "sync",
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
    /// Seconds spent producing frames: GPU steps, waiting for them, copying out.
    pub compute_seconds: f64,
    /// Seconds blocked handing frames to a full channel (async mode): backpressure.
    pub blocked_seconds: f64,
    /// Seconds spent writing its own frames (sync mode).
    pub write_seconds: f64,
    /// Timeline of this thread, when tracing was on.
    pub spans: Vec<Span>,
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
}

impl RunReport {
    /// Frames the sink accepted.
    pub fn written_frames(&self) -> u64 {
        self.sink.frames
    }

    /// Seconds the slowest device spent computing.
    pub fn compute_seconds(&self) -> f64 {
        self.devices.iter().map(|d| d.compute_seconds).fold(0.0, f64::max)
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
        writeln!(f, "{:<w$} {:>7} {:>10} {:>10} {:>10}", "device", "frames", "compute s", "blocked s", "write s")?;
        for d in &self.devices {
            writeln!(
                f,
                "{:<w$} {:>7} {:>10.3} {:>10.3} {:>10.3}",
                d.device, d.frames, d.compute_seconds, d.blocked_seconds, d.write_seconds
            )?;
        }
        if self.mode == IoMode::Async {
            writeln!(
                f,
                "{:<w$} {:>7} {:>10} {:>10} {:>10.3}   (waiting for frames: {:.3} s)",
                "writer", self.writer.frames, "", "", self.writer.write_seconds, self.writer.wait_seconds
            )?;
        }
        write!(
            f,
            "overlap: wall / (compute + write) = {:.3} / ({:.3} + {:.3}) = {:.2}  (1.0 = none, 0.5 = perfect at balance)",
            self.wall_seconds,
            self.compute_seconds(),
            self.write_seconds(),
            self.overlap_ratio()
        )
    }
}
