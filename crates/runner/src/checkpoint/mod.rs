//! Checkpoints: each stream's complete state, saved beside the output with some of its
//! frames, so that a resumed run restarts an incomplete stream from its newest checkpoint
//! instead of from frame 0.
//!
//! **What.** Every field of the kernel, stored or not, at full precision (f32), and the
//! frame and step it was taken at: with the kernel's seed (the noise is keyed by seed and
//! step) that is everything the next step depends on. A frame source saves what its
//! [`wgpipe_compute::FrameSource::state_bytes`] says; one that saves nothing restarts from 0.
//!
//! **Where.** A directory beside the output ([`dir_beside`]: `OUTPUT.checkpoints/`), a file
//! per stream. Beside rather than inside, because then one mechanism serves every backend:
//! a checkpoint is replaced by a single rename (temporary file, then `rename`), which HDF5
//! cannot do for a dataset; readers of the output never see it; and a run that completes
//! deletes it without touching the output.
//!
//! **When.** The device thread copies the state in the frame's own command buffer, after
//! the frame's steps ([`wgpipe_compute::FrameProducer::save_state_every`]); it travels with
//! the frame through the channel, and the writer thread writes it right *after* the sink
//! stored that frame. So a checkpoint of frame k exists only once frames 0 to k are in the
//! output, and saving it overlaps compute as writing frames does. A kill at any moment
//! leaves the previous checkpoint or the new one, never a mix.
//!
//! **Resuming.** The output is first cut back to the checkpoint's frames
//! ([`wgpipe_storage::StreamInfo::kept_frames`]), so no frame is stored twice; the stream
//! then continues from the saved state, bit for bit as if uninterrupted.

mod file;
mod interval;

use std::path::{Path, PathBuf};

pub(crate) use file::checksum;
pub use file::{SavedState, read, remove, write};
pub use interval::young_daly_frames;
pub(crate) use interval::{AutoInterval, Schedule};

/// How often a run saves its streams' state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Interval {
    /// With every N-th frame (frames N-1, 2N-1, ...; not the last, which ends the stream).
    Every(u64),
    /// Young/Daly's interval sqrt(2 × cost × MTBF), from the cost of a checkpoint measured
    /// with the first frame and the measured time per frame, for this mean time between
    /// failures in seconds.
    Auto {
        /// Mean time between failures, seconds.
        mtbf_seconds: f64,
    },
}

/// Where and how often a run checkpoints ([`crate::PipelineBuilder::checkpoints`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoints {
    /// The directory the checkpoint files go to (created when the first one is written).
    pub dir: PathBuf,
    /// How often.
    pub interval: Interval,
    /// Sync each checkpoint file and the directory to the disk before it counts (what
    /// survives a power loss, not only a killed process).
    pub fsync: bool,
}

impl Checkpoints {
    /// Checkpoints in `dir` at `interval`, without fsync.
    pub fn new(dir: impl Into<PathBuf>, interval: Interval) -> Self {
        Checkpoints { dir: dir.into(), interval, fsync: false }
    }

    /// The same with fsync on or off.
    pub fn with_fsync(mut self, fsync: bool) -> Self {
        self.fsync = fsync;
        self
    }
}

/// Where the writer puts a saved state: by default its stream's file ([`write`]); a split
/// domain gathers every rank's block into the whole grid's state, which rank 0 writes.
pub(crate) trait Saver: Send {
    /// Saves `saved` (taken with a frame the sink has stored) as its stream's checkpoint.
    fn save(&mut self, saved: SavedState, checkpoints: &Checkpoints) -> Result<(), wgpipe_storage::Error>;
}

/// The checkpoint directory of the output at `output`: `OUTPUT.checkpoints` beside it (the
/// one naming rule; the CLI and the guide use it).
pub fn dir_beside(output: &Path) -> PathBuf {
    let mut name = output.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".checkpoints");
    output.with_file_name(name)
}
