//! One stream whose every frame is split over the MPI ranks (cargo feature `mpi`): each rank
//! holds a block of the grid and writes it, collectively, as its hyperslab of the frame.
//!
//! The file is the one [`super::MpiHdf5Sink`] creates for the same layout (same groups, datasets,
//! attributes and netCDF-4 dimensions as the serial [`super::Hdf5Sink`]'s), so readers cannot
//! tell how it was written. The collective schedule is:
//!
//! - `begin` (collective): the blocks are checked on every rank (a bad one on any rank fails
//!   them all), then the shared file's creation (`mpi.rs`), the stream empty.
//! - `write` (collective): the ranks agree that every rank's frame fits its block; the
//!   stream's datasets grow by one frame, every rank writes its hyperslab of it for every
//!   field of the grid's rank with `H5Dwrite` in collective mode (`H5Pset_dxpl_mpio(COLLECTIVE)`,
//!   which hdf5-metno does not wrap), rank 0 alone writes the frame's step and the fields of
//!   other ranks (reductions of the whole grid, the same on every rank) independently, and the
//!   file is flushed: a job killed after `write` returned leaves a file that every reader
//!   opens, holding that frame. Then the ranks agree that every rank succeeded, so a failure
//!   on one rank is an error on all of them, at the same frame.
//! - `finish` (collective): the frame count is the least any rank wrote, the `frames` and
//!   `complete` attributes are written, the file closes.
//!
//! It takes offsets, shapes and bytes only: where the blocks come from (GPUs) is the caller's.

use std::path::PathBuf;

use hdf5::{Dataset, Dataspace, H5Type, Hyperslab, SliceOrIndex};
use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives};

use super::format::{h5err, le_elements, with_elem_type, write_frame_slab};
use super::mpi::{MpiHdf5Backend, Shared, close};
use crate::error::{Error, Result};
use crate::frame::Fields;
use crate::frame::Frame;
use crate::options::SinkOptions;
use crate::protocol::{Backend, Checked, Outcome};
use crate::ranks::{Block, agree, agree_on_whole, failed_ranks, short_streams};
use crate::schema::StreamLayout;

/// The backend of [`MpiBlockSink`]: one stream whose frames are split into blocks, one per
/// MPI rank, written into one shared HDF5 file.
pub struct MpiBlockBackend {
    shared: MpiHdf5Backend,
    block: Block,
    open: Option<Shared>,
}

/// Writes one stream whose frames are split into blocks, one per MPI rank, into one shared
/// HDF5 file: [`MpiBlockBackend`] driven through the sink protocol.
///
/// Every rank of the communicator builds one with its own block (`offset` and `shape` per
/// grid axis, C order) and the same options, calls `begin` with the same layout (the whole
/// grid's: one stream, its expected frames given, its fields of the grid's shape, then any
/// fields of another rank, which are whole on every rank and written by rank 0), then
/// `write` once per frame with its own block of every grid field (and the whole others) and
/// `finish` once, all collectively. The blocks should tile the grid: a cell no rank covers is left unwritten.
pub type MpiBlockSink = Checked<MpiBlockBackend>;

impl MpiBlockSink {
    /// A sink writing the block at `offset` of extent `shape` of every frame, into
    /// `options.path` together with the other ranks of `comm` (give it a communicator of its
    /// own: `world.duplicate()`).
    pub fn new(options: SinkOptions, comm: SimpleCommunicator, offset: &[usize], shape: &[usize]) -> Self {
        Checked::from(MpiBlockBackend {
            shared: MpiHdf5Backend::new(options, comm),
            block: Block::new(offset, shape),
            open: None,
        })
    }

    /// This sink, where the layout also holds the grid `grid` downsampled by `factor`
    /// (fields of its shape divided by `factor`, rounded up, like `analysis.downsample`'s):
    /// this rank writes its block's coarse cells of those. The block's offset must be a
    /// multiple of `factor` on every axis (`begin` refuses it otherwise).
    pub fn downsampled(mut self, grid: &[usize], factor: usize) -> Self {
        self.backend_mut().block.downsample(grid, factor);
        self
    }
}

impl std::fmt::Debug for MpiBlockBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiBlockBackend").field("shared", &self.shared).field("block", &self.block).finish()
    }
}

impl MpiBlockBackend {
    /// Whether the layout is one stream of fields this block fits in.
    fn check_block(&self, layout: &StreamLayout) -> Result<()> {
        self.block.check(layout)
    }

    /// Collective: writes this rank's block (`fields`) of frame `n`, taken at `step`.
    fn store(&mut self, n: u64, step: u64, fields: Fields<'_>) -> Result<()> {
        let path = self.shared.path().to_path_buf();
        let root = self.shared.comm().rank() == 0;
        let open = self.open.as_mut().ok_or(Error::Usage("write called before begin"))?;
        let layout = &open.layout;
        let name = &layout.streams[0].name;
        let row = n as usize;
        let sets = &open.streams[0];
        super::schema::resize(sets, layout, row + 1)
            .map_err(|e| h5err(format!("cannot grow stream {name} to {} frames in", row + 1), &path, e))?;
        for ((ds, spec), data) in sets.fields.iter().zip(&layout.fields).zip(fields.iter()) {
            let Some(part) = self.block.part(spec) else {
                // Whole on every rank (a reduction of the whole grid): rank 0 writes it,
                // independently, as it writes the step.
                if root {
                    with_elem_type!(spec.dtype, T => write_frame_slab::<T>(ds, spec, data, row, &mut open.scratch))
                        .map_err(|e| h5err(format!("cannot write frame {n} of {name}/{} to", spec.name), &path, e))?;
                }
                continue;
            };
            let (offset, shape) = (&part.offset, &part.shape);
            with_elem_type!(spec.dtype, T => write_hyperslab::<T>(ds, row, offset, shape, data, &mut open.scratch))
                .map_err(|e| {
                    h5err(format!("cannot write frame {n} of {name}/{} (collectively) to", spec.name), &path, e)
                })?;
        }
        if root {
            super::schema::write_step(sets, row, step)
                .map_err(|e| h5err(format!("cannot write step of frame {n} of {name} to"), &path, e))?;
        }
        // Collective: the frame, the new extent and the steps reach the file before the
        // frame counts as written.
        open.file.flush().map_err(|e| h5err(format!("cannot flush frame {n} of {name} to"), &path, e))
    }
}

impl Backend for MpiBlockBackend {
    /// Local: what [`MpiHdf5Backend`] checks, and that this rank's block lies within every
    /// field.
    fn check_layout(&self, layout: &StreamLayout) -> Result<()> {
        self.shared.check_layout(layout)?;
        self.check_block(layout)
    }

    /// Appending: the stream continues after its kept frames (cut in `begin`, collectively).
    fn continues_streams(&self) -> bool {
        self.shared.appending()
    }

    /// Frames are this rank's block of every field.
    fn frame_layout(&self, layout: &StreamLayout) -> Option<StreamLayout> {
        Some(self.block.frame_layout(layout))
    }

    /// Collective: checks every rank's block, then creates the file (see the module docs),
    /// its stream empty: it grows frame by frame, flushed each time, so a job killed at any
    /// point leaves a file that opens with the frames written so far.
    fn begin(&mut self, layout: &StreamLayout) -> Result<()> {
        // Every rank has the same layout: all refuse it, before any collective call.
        crate::validate::refuse_encoded_fields(layout, "MPI hdf5")?;
        let path = self.shared.path().display().to_string();
        agree(self.shared.comm(), self.check_block(layout), || format!("checking the blocks of {path}"))?;
        let open = self.shared.create(layout, false)?;
        // Before any frame: a continued stream's cut leaves its edge chunks (the steps') dirty
        // in every rank's chunk cache, and written by a later flush they would overwrite the
        // step rank 0 writes meanwhile.
        let flushed = open.file.flush().map_err(|e| h5err("cannot flush", self.shared.path(), e));
        self.open = Some(open);
        agree(self.shared.comm(), flushed, || format!("flushing {path}"))
    }

    /// Collective: every rank calls it once per frame with its block of every field (checked
    /// against the block by the protocol). The ranks first agree that every rank's frame was
    /// accepted, then write, then agree that every rank succeeded: on a failure anywhere
    /// every rank returns an error (the failing one its own, the others
    /// [`Error::OtherRank`] naming it), so the writers of all ranks stop at the same frame
    /// and none waits in a collective call that another will never make.
    fn write(&mut self, frame: &Frame, fields: Fields<'_>) -> Result<Option<u64>> {
        let path = self.shared.path().display().to_string();
        let n = frame.index;
        let open = self.open.as_ref().ok_or(Error::Usage("write called before begin"))?;
        let stream = &open.layout.streams[0];
        let room = stream.capacity().unwrap_or(0);
        let fits = if n < room {
            Ok(())
        } else {
            let reason = format!("stream {:?} was created for {room} frames", stream.name);
            Err(Error::FrameMismatch { stream: 0, index: n, reason })
        };
        agree(self.shared.comm(), fits, || format!("checking frame {n} of {path}"))?;
        let layout = &open.layout;
        let whole = layout.fields.iter().zip(fields.iter()).filter(|(f, _)| self.block.part(f).is_none());
        agree_on_whole(self.shared.comm(), whole.map(|(_, bytes)| bytes), || format!("checking frame {n} of {path}"))?;
        let stored = self.store(n, frame.step, fields);
        agree(self.shared.comm(), stored, || format!("writing frame {n} of {path}")).map(|()| None)
    }

    /// Collective: a frame this rank was given did not fit its block; the other ranks learn
    /// it in their `write` (the agreement on the frame), and every rank stops taking frames.
    fn refused(&mut self, _error: &Error) -> bool {
        failed_ranks(self.shared.comm(), false);
        false
    }

    /// Collective: every rank calls it, whatever happened to its frames. The stream holds
    /// the frames every rank wrote.
    fn finish(&mut self, outcome: &Outcome<'_>) -> Result<()> {
        let path: PathBuf = self.shared.path().to_path_buf();
        let open = self.open.take().ok_or(Error::Usage("finish called without begin"))?;
        let mine = outcome.frames().first().copied().unwrap_or(0);
        let mut frames = 0u64;
        self.shared.comm().all_reduce_into(&mine, &mut frames, SystemOperation::min());
        // A run stopped early on any rank (a thinned stream whose fields expect no count)
        // leaves the stream incomplete, so that `--resume` continues it.
        let short = short_streams(self.shared.comm(), 1, outcome.short());
        close(self.shared.comm(), open, &[frames], &short, outcome.failed(), &path)
    }
}

/// Writes `data` (the block's elements, little-endian) as the block at `offset` of extent
/// `shape` in frame `row` of `ds`, collectively: every rank of the file's communicator calls
/// it for the same frame.
#[expect(
    unsafe_code,
    reason = "hdf5-metno 0.15 has no transfer property list: collective H5Dwrite goes through hdf5-sys"
)]
fn write_hyperslab<T: H5Type + bytemuck::Pod>(
    ds: &Dataset,
    row: usize,
    offset: &[usize],
    shape: &[usize],
    data: &[u8],
    scratch: &mut Vec<u64>,
) -> hdf5::Result<()> {
    use hdf5_sys::h5d::H5Dwrite;
    use hdf5_sys::h5p::H5FD_mpio_xfer_t::H5FD_MPIO_COLLECTIVE;
    use hdf5_sys::h5p::{H5P_CLS_DATASET_XFER, H5Pclose, H5Pcreate, H5Pset_dxpl_mpio};

    let values = le_elements::<T>(data, scratch).map_err(|e| format!("cannot view the block as elements: {e}"))?;
    let slab: Vec<SliceOrIndex> = std::iter::once(SliceOrIndex::from(row..row + 1))
        .chain(offset.iter().zip(shape).map(|(&o, &s)| SliceOrIndex::from(o..o + s)))
        .collect();
    let file_space = ds.space()?.select(Hyperslab::from(slab))?;
    let mem_space = Dataspace::try_new(std::iter::once(1).chain(shape.iter().copied()).collect::<Vec<_>>())?;
    let mem_type = hdf5::Datatype::from_type::<T>()?;
    hdf5::sync::sync(|| {
        // SAFETY: the property list is created, used and closed here; `ds`, the two dataspaces
        // and the datatype are open objects borrowed for the call; the memory space holds
        // exactly `values.len()` elements of `T` (checked by the caller: cells × size), which
        // H5Dwrite only reads; the HDF5 lock is held (`sync`).
        unsafe {
            let dxpl = hdf5::h5check(H5Pcreate(*H5P_CLS_DATASET_XFER))?;
            let written = hdf5::h5check(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE)).and_then(|_| {
                hdf5::h5check(H5Dwrite(
                    ds.id(),
                    mem_type.id(),
                    mem_space.id(),
                    file_space.id(),
                    dxpl,
                    values.as_ptr().cast(),
                ))
            });
            H5Pclose(dxpl);
            written.map(drop)
        }
    })
}
