//! The push-model sink trait every storage backend implements.

use std::time::Instant;

use crate::checksum::combine;
use crate::error::Result;
use crate::frame::Frame;
use crate::pooled::PooledFrame;
use crate::schema::StreamLayout;

/// What a sink did, returned by [`Sink::finish`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SinkSummary {
    /// Frames written.
    pub frames: u64,
    /// Payload bytes written (frame data, not metadata).
    pub bytes: u64,
    /// Seconds spent inside `begin`, `write` and `finish`.
    pub write_seconds: f64,
    /// Order-independent checksum of every frame written (see [`crate::frame_checksum`]),
    /// equal across sinks for the same frames.
    pub checksum: u64,
    /// Frames whose fields a decorating sink chose not to store (a run's `output.every` and
    /// `output.when`): they are counted in `frames` for what was stored of them (their
    /// reductions), their fields are not.
    pub skipped_frames: u64,
    /// Payload bytes of the fields not stored (`skipped_frames`'), not counted in `bytes`.
    pub skipped_bytes: u64,
}

impl SinkSummary {
    /// Counts one stored frame whose `write` began at `start`: frames, bytes, checksum and
    /// time, the same way for every sink (yours too), so summaries compare across sinks.
    pub fn record(&mut self, frame: &Frame, start: Instant) {
        self.frames += 1;
        self.bytes += frame.data.len() as u64;
        self.checksum = combine(self.checksum, frame);
        self.write_seconds += start.elapsed().as_secs_f64();
    }

    /// [`SinkSummary::record`] for a sink that computed the frame's checksum itself while
    /// writing it (`crate::checksum::Running`).
    pub(crate) fn record_checksummed(&mut self, bytes: usize, checksum: u64, start: Instant) {
        self.frames += 1;
        self.bytes += bytes as u64;
        self.checksum = crate::checksum::add(self.checksum, checksum);
        self.write_seconds += start.elapsed().as_secs_f64();
    }
}

/// What a pipeline drives: a sink in push mode, called by one writer thread.
///
/// Call order: `begin` once, `write` for each frame (frames of one stream arrive in index
/// order; streams interleave), `finish` once. After an error from `write` the sink must still
/// accept `finish`, which leaves every frame written before the error readable.
///
/// Every built-in sink is a [`crate::Backend`] driven through [`crate::Checked`], which
/// enforces these rules, checks every frame against the layout and defines `complete` once
/// for all of them. Write your own sink the same way (implement `Backend`, pass
/// `Checked::from(yours)`) and it gets the same checks; implement `Sink` directly only to
/// wrap another sink (a decorator), and then check it with [`crate::conformance`].
pub trait Sink: Send {
    /// Checks, without creating or allocating anything, that `begin` would accept `layout`:
    /// names, reserved attributes, and this sink's own size limits (an HDF5 chunk). A runner
    /// calls it before it opens devices or allocates frames, so a layout the sink cannot
    /// store fails first and cheaply. The default checks what every sink requires.
    fn check_layout(&self, layout: &StreamLayout) -> Result<()> {
        crate::validate::check_layout(layout)
    }
    /// The layout of the frames `write` takes, when it is not `layout` itself: a sink storing
    /// one block of every frame (an MPI rank's part of a split grid) takes frames of the
    /// block's shape. A decorator that cuts frames into parts for the sinks it wraps asks them
    /// (so it finds each part's bytes). `None` (the default): frames of `layout`.
    fn frame_layout(&self, layout: &StreamLayout) -> Option<StreamLayout> {
        let _ = layout;
        None
    }
    /// Creates files and datasets for `layout`. Creates nothing when it fails.
    fn begin(&mut self, layout: &StreamLayout) -> Result<()>;
    /// Stores one frame. A frame that does not match the layout is an error, not a write.
    fn write(&mut self, frame: &Frame) -> Result<()>;
    /// Stores one frame as [`Sink::write`] does, given the frame itself: what a runner calls.
    /// A sink that keeps a frame's bytes after returning (hands them to another thread, or to
    /// Python as arrays without a copy) keeps the [`PooledFrame`]; its buffer goes back to the
    /// runner's pool when the sink drops it. The default writes the frame borrowed and drops
    /// it at once; a decorator forwards it to the sink it wraps.
    fn write_pooled(&mut self, frame: PooledFrame) -> Result<()> {
        self.write(&frame)
    }
    /// Flushes and closes; reports what was written.
    fn finish(&mut self) -> Result<SinkSummary>;
    /// Marks the run failed before `finish`: `finish` then marks no stream complete, keeping
    /// every frame stored readable. For a decorator that knows more than the sink it wraps (a
    /// stream that ended short where the wrapped sink expected no count). The default does
    /// nothing, for sinks with no notion of complete.
    fn fail(&mut self) {}
    /// Tells the sink before `finish` that stream `stream` ended short even if it holds the
    /// frames its layout expected (a decorator storing some frames of a longer stream), so
    /// `finish` does not mark it complete. The default does nothing. Through [`crate::Checked`]
    /// a backend finds the streams in [`crate::Outcome::short`]; the MPI HDF5 sink shared by a
    /// batch's ranks agrees on them over the ranks (a stream is written by one rank).
    fn leave_incomplete(&mut self, stream: usize) {
        let _ = stream;
    }
}

impl<S: Sink + ?Sized> Sink for Box<S> {
    fn check_layout(&self, layout: &StreamLayout) -> Result<()> {
        (**self).check_layout(layout)
    }
    fn frame_layout(&self, layout: &StreamLayout) -> Option<StreamLayout> {
        (**self).frame_layout(layout)
    }
    fn begin(&mut self, layout: &StreamLayout) -> Result<()> {
        (**self).begin(layout)
    }
    fn write(&mut self, frame: &Frame) -> Result<()> {
        (**self).write(frame)
    }
    fn write_pooled(&mut self, frame: PooledFrame) -> Result<()> {
        (**self).write_pooled(frame)
    }
    fn finish(&mut self) -> Result<SinkSummary> {
        (**self).finish()
    }
    fn fail(&mut self) {
        (**self).fail()
    }
    fn leave_incomplete(&mut self, stream: usize) {
        (**self).leave_incomplete(stream)
    }
}
