//! The null sink: stores nothing, for measuring compute without storage.

use crate::error::Result;
use crate::frame::Fields;
use crate::frame::Frame;
use crate::protocol::{Backend, Checked, Outcome};
use crate::schema::StreamLayout;

/// The backend that stores nothing.
///
/// Driven through [`Checked`] like every other sink, it validates frames and checksums every
/// byte (or takes the hash the producer computed, [`Frame::data_hash`]), so a run with it
/// measures the full pipeline minus the disk, and its checksum is the reference the other
/// sinks' must equal.
#[derive(Debug, Default)]
pub struct NullBackend;

/// A sink that counts frames and bytes and checksums them, but stores nothing.
pub type NullSink = Checked<NullBackend>;

impl NullSink {
    /// A null sink (same as `NullSink::default()`).
    pub fn new() -> Self {
        Checked::from(NullBackend)
    }
}

impl Backend for NullBackend {
    fn begin(&mut self, _layout: &StreamLayout) -> Result<()> {
        Ok(())
    }

    fn write(&mut self, _frame: &Frame, _fields: Fields<'_>) -> Result<Option<u64>> {
        Ok(None)
    }

    fn finish(&mut self, _outcome: &Outcome<'_>) -> Result<()> {
        Ok(())
    }
}

/// The backend that stores nothing of the frames a rank of a split grid produces: every
/// field of the grid's rank is the rank's block of it, the others (reductions of the whole
/// grid) whole. A split run with `output.sink = "null"` measures compute and the halo
/// exchange without storage, as [`NullBackend`] does for a whole grid.
#[cfg(feature = "mpi")]
#[derive(Debug)]
pub struct NullBlockBackend {
    /// Where the block lies (its offset matters only in downsampled fields).
    block: crate::ranks::Block,
}

/// A sink that counts and checksums a rank's blocks of the frames, but stores nothing.
#[cfg(feature = "mpi")]
pub type NullBlockSink = Checked<NullBlockBackend>;

#[cfg(feature = "mpi")]
impl NullBlockSink {
    /// A null sink taking this rank's block at `offset` of extent `shape` of every field of
    /// the grid.
    pub fn new(offset: &[usize], shape: &[usize]) -> Self {
        Checked::from(NullBlockBackend { block: crate::ranks::Block::new(offset, shape) })
    }

    /// This sink, taking the block's coarse cells of the grid `grid` downsampled by
    /// `factor`, as [`crate::MpiBlockSink::downsampled`].
    pub fn downsampled(mut self, grid: &[usize], factor: usize) -> Self {
        self.backend_mut().block.downsample(grid, factor);
        self
    }
}

#[cfg(feature = "mpi")]
impl Backend for NullBlockBackend {
    fn frame_layout(&self, layout: &StreamLayout) -> Option<StreamLayout> {
        Some(self.block.frame_layout(layout))
    }

    fn begin(&mut self, _layout: &StreamLayout) -> Result<()> {
        Ok(())
    }

    fn write(&mut self, _frame: &Frame, _fields: Fields<'_>) -> Result<Option<u64>> {
        Ok(None)
    }

    fn finish(&mut self, _outcome: &Outcome<'_>) -> Result<()> {
        Ok(())
    }
}
