//! The sink protocol, enforced in one place: [`Checked`] drives a [`Backend`] through it.
//!
//! Every sink obeys the same rules: `begin` once with a usable layout, then `write` for each
//! frame of the layout (each stream's frames in index order, each frame the layout's bytes),
//! then `finish`, which marks a stream complete only when every expected frame of it was
//! stored and nothing failed. Written once here rather than in every backend, the rules cannot
//! drift apart between backends, and a sink of yours obeys them by implementing [`Backend`]
//! (only the storing) and wrapping it in [`Checked`], as the built-in sinks are.

use std::ops::Range;
use std::time::Instant;

use crate::checksum::frame_checksum;
use crate::error::{Error, Result};
use crate::frame::{Fields, Frame};
use crate::pooled::PooledFrame;
use crate::schema::StreamLayout;
use crate::sink::{Sink, SinkSummary};
use crate::validate::Validator;

/// What a storage backend implements: storing, nothing of the protocol, which [`Checked`]
/// enforces before every call.
///
/// A backend is called in the protocol's order only: `begin` once, with a layout every
/// sink can store; `write` with frames that fit the layout, each the next of its stream, and
/// never after a write failed; `finish` once, after a successful `begin`, told what was
/// stored ([`Outcome`]).
pub trait Backend: Send {
    /// Checks, creating nothing, what this backend cannot store beyond what every sink
    /// refuses (which [`Checked`] checks first): an HDF5 chunk limit, a file-name clash.
    fn check_layout(&self, layout: &StreamLayout) -> Result<()> {
        let _ = layout;
        Ok(())
    }

    /// The layout of the frames `write` receives, when it is not the stored layout: a
    /// backend that stores one block of every frame (an MPI rank's part of a grid) takes
    /// frames of the block's shape. `None` (the default): frames of `layout` itself.
    fn frame_layout(&self, layout: &StreamLayout) -> Option<StreamLayout> {
        let _ = layout;
        None
    }

    /// Whether `begin` keeps the frames of streams that continue ([`crate::StreamInfo::kept_frames`]):
    /// an appending file backend cuts such a stream to its kept frames and takes the next
    /// frame after them. `false` (the default) makes [`Checked`] refuse a layout with kept
    /// frames before `begin`.
    fn continues_streams(&self) -> bool {
        false
    }

    /// Creates the output for `layout` (already checked by [`Checked`]; the backend checks
    /// its own limits again here). Creates nothing when it fails.
    fn begin(&mut self, layout: &StreamLayout) -> Result<()>;

    /// Stores `frame`, whose fields' bytes are `fields`: it is the next frame of its stream
    /// (`frame.index` frames of the stream are stored) and holds the frame layout's bytes.
    /// Returns the frame's checksum ([`crate::frame_checksum`]) when the backend computed
    /// it while writing, `None` to let [`Checked`] compute it. After an error no more
    /// frames come: `finish` follows, and must leave every frame stored before readable.
    fn write(&mut self, frame: &Frame, fields: Fields<'_>) -> Result<Option<u64>>;

    /// Stores `frame` as [`Backend::write`] does, given the frame itself, whose fields lie at
    /// `fields` (byte ranges of its data, in layout order): a backend that keeps the frame's
    /// bytes after returning keeps the [`PooledFrame`] (see [`Sink::write_pooled`]). Returns
    /// the frame's checksum ([`crate::frame_checksum`]), which it must compute before letting
    /// the frame go. The default calls `write` and drops the frame.
    fn write_pooled(&mut self, frame: PooledFrame, fields: &[Range<usize>]) -> Result<u64> {
        let checksum = self.write(&frame, Fields::new(&frame.data, fields))?;
        Ok(checksum.unwrap_or_else(|| frame_checksum(&frame)))
    }

    /// Told that the protocol refused a frame (`error`, returned to the caller) instead of
    /// calling `write`. A backend whose writes are collective over MPI ranks joins its ranks'
    /// agreement here, so that ranks whose frames were accepted learn of the refusal in
    /// their own `write` instead of waiting for this rank. Returns whether the sink goes on
    /// taking frames (the default: a refused frame is not a write); `false` makes it
    /// failed, like an error from `write`.
    fn refused(&mut self, error: &Error) -> bool {
        let _ = error;
        true
    }

    /// Flushes, marks what is complete ([`Outcome`]) and closes.
    fn finish(&mut self, outcome: &Outcome<'_>) -> Result<()>;
}

/// What the protocol knows when a sink finishes: frames stored per stream, and whether the
/// run failed. The one definition of `complete`, so every backend marks the same.
#[derive(Debug, Clone, Copy)]
pub struct Outcome<'a> {
    layout: &'a StreamLayout,
    frames: &'a [u64],
    failed: bool,
    /// Streams the caller said ended short ([`crate::Sink::leave_incomplete`]), by index.
    short: &'a [usize],
}

impl<'a> Outcome<'a> {
    /// The outcome of `frames` stored per stream of `layout`, failed or not: what
    /// [`Checked`] tells its backend, or what MPI ranks agreed on (frames and failures of
    /// every rank).
    pub(crate) fn new(layout: &'a StreamLayout, frames: &'a [u64], failed: bool) -> Self {
        Outcome { layout, frames, failed, short: &[] }
    }

    /// This outcome with the streams `short` left incomplete whatever their frames.
    pub(crate) fn with_short(mut self, short: &'a [usize]) -> Self {
        self.short = short;
        self
    }

    /// The layout given to `begin`.
    pub fn layout(&self) -> &'a StreamLayout {
        self.layout
    }

    /// Frames stored, per stream (this process's, for a sink shared by MPI ranks).
    pub fn frames(&self) -> &'a [u64] {
        self.frames
    }

    /// Streams the caller said ended short ([`crate::Sink::leave_incomplete`]), by index
    /// (this process's, for a sink shared by MPI ranks).
    pub fn short(&self) -> &'a [usize] {
        self.short
    }

    /// Whether a write failed, or the caller marked the run failed ([`Checked::fail`]).
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// Whether stream `i` holding `frames` frames is complete: nothing failed, and it holds
    /// its expected frames (any number, when none were given). A run stopped early leaves
    /// its short streams incomplete, which `--resume` continues.
    pub fn stream_complete(&self, i: usize, frames: u64) -> bool {
        !self.failed
            && !self.short.contains(&i)
            && self.layout.streams.get(i).is_some_and(|s| s.expected_frames.is_none_or(|e| e == frames))
    }

    /// Whether every stream of this run is complete with the frames stored: the output's
    /// own `complete` (a backend appending to an output also requires the streams it kept).
    pub fn complete(&self) -> bool {
        self.frames.iter().enumerate().all(|(i, &n)| self.stream_complete(i, n))
    }
}

/// A begun sink's state.
#[derive(Debug)]
struct Begun {
    /// The layout given to `begin`.
    layout: StreamLayout,
    /// Checks frames against the frame layout and counts them.
    validator: Validator,
    /// A write failed or the caller said the run failed: no more writes.
    failed: bool,
    /// Streams the caller said ended short ([`Sink::leave_incomplete`]).
    short: Vec<usize>,
}

/// Where a sink is in its lifecycle.
#[derive(Debug)]
enum Stage {
    /// Created; `begin` not yet succeeded.
    New,
    /// Begun.
    Open(Box<Begun>),
    /// Finished (successfully or not): nothing more is accepted.
    Finished,
}

/// A [`Backend`] driven through the sink protocol: the [`Sink`] every built-in backend is
/// ([`crate::open_sink`] returns them wrapped) and yours becomes with `Checked::from`.
///
/// It refuses calls out of order ([`Error::Usage`]), layouts no sink can store, frames of an
/// unknown stream, out of index order or of the wrong size ([`Error::FrameMismatch`], nothing
/// written), writes after a failed one; it counts, checksums and times what was stored
/// ([`SinkSummary`]), and tells the backend at `finish` which streams are complete.
#[derive(Debug)]
pub struct Checked<B> {
    backend: B,
    stage: Stage,
    summary: SinkSummary,
}

impl<B: Backend> From<B> for Checked<B> {
    fn from(backend: B) -> Self {
        Checked { backend, stage: Stage::New, summary: SinkSummary::default() }
    }
}

impl<B: Backend + Default> Default for Checked<B> {
    fn default() -> Self {
        Checked::from(B::default())
    }
}

impl<B: Backend> Checked<B> {
    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The backend, to set it up before `begin` (a crate's own builder methods).
    #[cfg_attr(not(feature = "mpi"), expect(dead_code, reason = "used by the MPI block sinks"))]
    pub(crate) fn backend_mut(&mut self) -> &mut B {
        &mut self.backend
    }

    /// Marks the run failed (a producer failed, say): later writes are refused, and
    /// `finish` marks no stream complete, keeping the frames stored so far readable.
    pub fn fail(&mut self) {
        if let Stage::Open(begun) = &mut self.stage {
            begun.failed = true;
        }
    }

    /// Frames stored so far, per stream (empty before `begin`).
    pub fn frames(&self) -> &[u64] {
        match &self.stage {
            Stage::Open(begun) => begun.validator.frames(),
            Stage::New | Stage::Finished => &[],
        }
    }
}

impl<B: Backend> Checked<B> {
    /// The backend and the begun state, once `frame` passed the protocol's checks: the sink
    /// is begun and not failed, and the frame is the next of its stream, of the layout's size.
    /// A refused frame is not written (the backend is told, see [`Backend::refused`]).
    fn admit(&mut self, frame: &Frame) -> Result<(&mut B, &mut Begun)> {
        let begun = match &mut self.stage {
            Stage::Open(begun) => begun,
            Stage::Finished => return Err(Error::Usage("write called after finish")),
            Stage::New => return Err(Error::Usage("write called before begin")),
        };
        if begun.failed {
            return Err(Error::Usage("write called after a failed write: call finish"));
        }
        if let Err(e) = begun.validator.check(frame) {
            begun.failed = !self.backend.refused(&e);
            return Err(e);
        }
        Ok((&mut self.backend, begun))
    }
}

impl Begun {
    /// Counts the next frame of `stream` as stored when the backend stored it; a failed
    /// write fails the sink.
    fn stored<T>(&mut self, stream: usize, stored: Result<T>) -> Result<T> {
        match stored {
            Ok(checksum) => {
                self.validator.commit(stream);
                Ok(checksum)
            }
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }
}

impl<B: Backend> Sink for Checked<B> {
    fn check_layout(&self, layout: &StreamLayout) -> Result<()> {
        crate::validate::check_layout(layout)?;
        self.backend.check_layout(layout)
    }

    fn frame_layout(&self, layout: &StreamLayout) -> Option<StreamLayout> {
        self.backend.frame_layout(layout)
    }

    fn begin(&mut self, layout: &StreamLayout) -> Result<()> {
        let start = Instant::now();
        match self.stage {
            Stage::New => {}
            Stage::Open(_) => return Err(Error::Usage("begin called twice")),
            Stage::Finished => return Err(Error::Usage("begin called after finish: a sink is begun once")),
        }
        // The checks every sink makes, identical on every MPI rank; the backend's own come
        // in its `begin` (agreed between ranks where they differ, like an MPI block's).
        crate::validate::check_layout(layout)?;
        if let Some(s) = layout.streams.iter().find(|s| s.kept_frames > 0)
            && !self.backend.continues_streams()
        {
            return Err(Error::InvalidLayout(format!(
                "stream {:?} continues after {} kept frames, which only a file sink appending to an existing \
                 output does (hdf5, raw or zarr with append): resume into such an output, or start the stream \
                 from frame 0",
                s.name, s.kept_frames
            )));
        }
        self.backend.begin(layout)?;
        let frames = self.backend.frame_layout(layout);
        let validator = Validator::new(frames.as_ref().unwrap_or(layout))?;
        self.stage =
            Stage::Open(Box::new(Begun { layout: layout.clone(), validator, failed: false, short: Vec::new() }));
        self.summary.write_seconds += start.elapsed().as_secs_f64();
        Ok(())
    }

    fn write(&mut self, frame: &Frame) -> Result<()> {
        let start = Instant::now();
        let (backend, begun) = self.admit(frame)?;
        let stored = backend.write(frame, begun.validator.fields(frame));
        let checksum = begun.stored(frame.stream, stored)?.unwrap_or_else(|| frame_checksum(frame));
        self.summary.record_checksummed(frame.data.len(), checksum, start);
        Ok(())
    }

    fn write_pooled(&mut self, frame: PooledFrame) -> Result<()> {
        let start = Instant::now();
        let (backend, begun) = self.admit(&frame)?;
        let (bytes, stream) = (frame.data.len(), frame.stream);
        let stored = backend.write_pooled(frame, begun.validator.ranges());
        let checksum = begun.stored(stream, stored)?;
        self.summary.record_checksummed(bytes, checksum, start);
        Ok(())
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        let start = Instant::now();
        match self.stage {
            Stage::Open(_) => {}
            Stage::New => return Err(Error::Usage("finish called without begin")),
            Stage::Finished => return Err(Error::Usage("finish called twice")),
        }
        let Stage::Open(begun) = std::mem::replace(&mut self.stage, Stage::Finished) else {
            return Err(Error::Usage("finish called without begin"));
        };
        let outcome = Outcome::new(&begun.layout, begun.validator.frames(), begun.failed).with_short(&begun.short);
        self.backend.finish(&outcome)?;
        self.summary.write_seconds += start.elapsed().as_secs_f64();
        Ok(std::mem::take(&mut self.summary))
    }

    fn fail(&mut self) {
        Checked::fail(self);
    }

    fn leave_incomplete(&mut self, stream: usize) {
        if let Stage::Open(begun) = &mut self.stage {
            begun.short.push(stream);
        }
    }
}
