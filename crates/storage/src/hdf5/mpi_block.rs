//! One stream whose every frame is split over the MPI ranks (cargo feature `mpi`): each rank
//! holds a block of the grid and writes it, collectively, as its hyperslab of the frame.
//!
//! The file is the one [`MpiHdf5Sink`] creates for the same layout (same groups, datasets,
//! attributes and netCDF-4 dimensions as the serial [`super::Hdf5Sink`]'s), so readers cannot
//! tell how it was written. The collective schedule is:
//!
//! - `begin` (collective): the blocks are checked on every rank (a bad one on any rank fails
//!   them all), then [`MpiHdf5Sink`]'s creation of the whole file.
//! - `write` (collective): the ranks agree that every rank's frame fits its block; the
//!   stream's datasets grow by one frame, every rank writes its hyperslab of it for every
//!   field with `H5Dwrite` in collective mode (`H5Pset_dxpl_mpio(COLLECTIVE)`, which
//!   hdf5-metno does not wrap), rank 0 alone writes the frame's step (independently), and the
//!   file is flushed: a job killed after `write` returned leaves a file that every reader
//!   opens, holding that frame. Then the ranks agree that every rank succeeded, so a failure
//!   on one rank is an error on all of them, at the same frame.
//! - `finish` (collective): the frame count is the least any rank wrote, the `frames` and
//!   `complete` attributes are written, the file closes.
//!
//! It takes offsets, shapes and bytes only: where the blocks come from (GPUs) is the caller's.

use std::ops::Range;
use std::path::PathBuf;
use std::time::Instant;

use hdf5::{Dataset, Dataspace, H5Type, Hyperslab, SliceOrIndex};
use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives};
use ndarray::ArrayView1;

use super::format::{h5err, le_elements, with_elem_type, with_frames};
use super::mpi::{MpiHdf5Sink, Shared, agree, close};
use crate::error::{Error, Result};
use crate::frame::Frame;
use crate::options::SinkOptions;
use crate::schema::StreamLayout;
use crate::sink::{Sink, SinkSummary};

/// Writes one stream whose frames are split into blocks, one per MPI rank, into one shared
/// HDF5 file.
///
/// Every rank of the communicator builds one with its own block (`offset` and `shape` per
/// grid axis, C order) and the same options, calls [`MpiBlockSink::begin`] with the same
/// layout (one stream, its expected frames given, every field of the grid's shape), then
/// [`MpiBlockSink::write`] once per frame with its own block and [`MpiBlockSink::finish`]
/// once, all collectively: a [`Sink`] whose frames are blocks. The blocks should tile the
/// grid: a cell no rank covers is left unwritten.
pub struct MpiBlockSink {
    sink: MpiHdf5Sink,
    offset: Vec<usize>,
    shape: Vec<usize>,
    open: Option<Shared>,
    /// Frames this rank has written.
    written: u64,
    summary: SinkSummary,
}

impl std::fmt::Debug for MpiBlockSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiBlockSink")
            .field("sink", &self.sink)
            .field("offset", &self.offset)
            .field("shape", &self.shape)
            .finish()
    }
}

impl MpiBlockSink {
    /// A sink writing the block at `offset` of extent `shape` of every frame, into
    /// `options.path` together with the other ranks of `comm` (give it a communicator of its
    /// own: `world.duplicate()`).
    pub fn new(options: SinkOptions, comm: SimpleCommunicator, offset: &[usize], shape: &[usize]) -> Self {
        MpiBlockSink {
            sink: MpiHdf5Sink::new(options, comm),
            offset: offset.to_vec(),
            shape: shape.to_vec(),
            open: None,
            written: 0,
            summary: SinkSummary::default(),
        }
    }

    /// Cells of this rank's block.
    fn cells(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the layout is one stream of fields this block fits in.
    fn check_block(&self, layout: &StreamLayout) -> Result<()> {
        if layout.streams.len() != 1 {
            return Err(Error::InvalidLayout(format!(
                "a frame split into blocks is written as one stream, the layout has {}",
                layout.streams.len()
            )));
        }
        for f in &layout.fields {
            let fits = f.shape.len() == self.shape.len()
                && self.offset.len() == self.shape.len()
                && f.shape.iter().zip(&self.offset).zip(&self.shape).all(|((&n, &o), &s)| s >= 1 && o + s <= n);
            if !fits {
                return Err(Error::InvalidLayout(format!(
                    "the block at offset {:?} of shape {:?} does not lie within field {} of shape {:?}",
                    self.offset, self.shape, f.name, f.shape
                )));
            }
        }
        Ok(())
    }

    /// Bytes of this rank's block of each field, in layout order: where each field lies in a
    /// frame given to `write`.
    fn block_ranges(&self, layout: &StreamLayout) -> Vec<Range<usize>> {
        let cells = self.cells();
        let mut at = 0;
        layout
            .fields
            .iter()
            .map(|f| {
                let r = at..at + cells * f.dtype.size();
                at = r.end;
                r
            })
            .collect()
    }

    /// Errors unless `frame` is this rank's block of the stream's next frame: stream 0, the
    /// next index, and the block's bytes of every field. Local: the caller agrees on it.
    fn check_frame(&self, open: &Shared, frame: &Frame) -> Result<Vec<Range<usize>>> {
        let layout = open.validator.layout();
        let name = &layout.streams[0].name;
        let mismatch = |reason: String| Err(Error::FrameMismatch { stream: frame.stream, index: frame.index, reason });
        if frame.stream != 0 {
            return mismatch(format!("a frame split into blocks has one stream, {name:?} (stream id 0)"));
        }
        if frame.index != self.written {
            return mismatch(format!(
                "index {} is not the next one of stream {name:?}: expected {}",
                frame.index, self.written
            ));
        }
        if self.written >= open.expected[0] {
            return mismatch(format!("stream {name:?} was created for {} frames", open.expected[0]));
        }
        let ranges = self.block_ranges(layout);
        let want = ranges.last().map_or(0, |r| r.end);
        if frame.data.len() != want {
            let fields: Vec<String> = layout.fields.iter().map(|f| format!("{} {}", f.name, f.dtype)).collect();
            return mismatch(format!(
                "{} data bytes differ from this rank's block of every field: {want} bytes ({} cells of shape {:?} at \
                 offset {:?}, for {})",
                frame.data.len(),
                self.cells(),
                self.shape,
                self.offset,
                fields.join(", ")
            ));
        }
        Ok(ranges)
    }

    /// Collective: writes this rank's block of the next frame, taken at `step`, `fields[i]`
    /// holding field `i`'s bytes (checked). Every rank makes the same collective calls.
    fn store(&mut self, step: u64, fields: &[&[u8]]) -> Result<()> {
        let path = self.sink.path().to_path_buf();
        let (offset, shape) = (&self.offset, &self.shape);
        let root = self.sink.comm().rank() == 0;
        let open = self.open.as_mut().ok_or(Error::Usage("write called before begin"))?;
        let n = self.written;
        let layout = open.validator.layout();
        let name = &layout.streams[0].name;
        let row = n as usize;
        set_frames(open, row + 1)
            .map_err(|e| h5err(format!("cannot grow stream {name} to {} frames in", row + 1), &path, e))?;
        for ((ds, spec), data) in open.streams[0].fields.iter().zip(&layout.fields).zip(fields) {
            with_elem_type!(spec.dtype, T => write_hyperslab::<T>(ds, row, offset, shape, data, &mut open.scratch))
                .map_err(|e| {
                    h5err(format!("cannot write frame {n} of {name}/{} (collectively) to", spec.name), &path, e)
                })?;
        }
        if root {
            open.streams[0]
                .steps
                .write_slice(ArrayView1::from(&[step][..]), row..row + 1)
                .map_err(|e| h5err(format!("cannot write step of frame {n} of {name} to"), &path, e))?;
        }
        // Collective: the frame, the new extent and the steps reach the file before the
        // frame counts as written.
        open.file.flush().map_err(|e| h5err(format!("cannot flush frame {n} of {name} to"), &path, e))
    }

    /// Collective: [`Sink::write`] for `float32` fields given as values (`fields[i]`: the
    /// block's cells of field `i`, C order), taken at `step`.
    pub fn write_block_f32(&mut self, step: u64, fields: &[&[f32]]) -> Result<()> {
        let data: Vec<u8> = fields.iter().flat_map(|f| f.iter().flat_map(|v| v.to_le_bytes())).collect();
        self.write(&Frame::new(0, self.written, step, data))
    }

    /// Marks the run failed on this rank: the file will not be marked complete.
    pub fn fail(&mut self) {
        if let Some(open) = &mut self.open {
            open.failed = true;
        }
    }
}

impl Sink for MpiBlockSink {
    /// Local: what [`MpiHdf5Sink`] checks, and that this rank's block lies within every field.
    fn check_layout(&self, layout: &StreamLayout) -> Result<()> {
        self.sink.check_layout(layout)?;
        self.check_block(layout)
    }

    /// Collective: checks every rank's block, then creates the file (see the module docs).
    /// `layout` is the whole grid's: one stream, every field of the grid's shape.
    fn begin(&mut self, layout: &StreamLayout) -> Result<()> {
        let start = Instant::now();
        if self.open.is_some() {
            return Err(Error::Usage("begin called twice"));
        }
        let path = self.sink.path().display().to_string();
        agree(self.sink.comm(), self.check_block(layout), || format!("checking the blocks of {path}"))?;
        let open = self.sink.create(layout)?;
        // The stream starts empty and grows frame by frame, flushed each time, so a job killed
        // at any point leaves a file that opens with the frames written so far (created at
        // full length, a killed job left a file with no superblock, or unwritten frames).
        set_frames(&open, 0)
            .and_then(|()| open.file.flush())
            .map_err(|e| h5err("cannot empty the new stream of", self.sink.path(), e))?;
        self.open = Some(open);
        self.summary.write_seconds += start.elapsed().as_secs_f64();
        Ok(())
    }

    /// Collective: writes this rank's block of the next frame. `frame.data` holds the block
    /// of every field, back to back in layout order, each in C order with the block's shape;
    /// `frame.step` is the step. Every rank calls it once per frame. The ranks first agree
    /// that every frame fits its block, then write, then agree that every rank succeeded:
    /// on a failure anywhere every rank returns an error (the failing one its own, the others
    /// [`Error::OtherRank`] naming it), so the writers of all ranks stop at the same frame
    /// and none waits in a collective call that another will never make.
    fn write(&mut self, frame: &Frame) -> Result<()> {
        let start = Instant::now();
        let path = self.sink.path().display().to_string();
        let open = self.open.as_ref().ok_or(Error::Usage("write called before begin"))?;
        if open.failed {
            // Every rank's `failed` is the same after a write (it follows the agreement).
            return Err(Error::Usage("write called after a failed write: call finish"));
        }
        let n = frame.index;
        let checked = self.check_frame(open, frame);
        let ranges = agree(self.sink.comm(), checked, || format!("checking frame {n} of {path}"))?;
        let fields: Vec<&[u8]> = ranges.into_iter().map(|r| &frame.data[r]).collect();
        let stored = self.store(frame.step, &fields);
        if let Err(e) = agree(self.sink.comm(), stored, || format!("writing frame {n} of {path}")) {
            self.fail();
            return Err(e);
        }
        self.written += 1;
        self.summary.record(frame, start);
        Ok(())
    }

    /// Collective: every rank calls it, whatever happened to its frames. The stream holds
    /// the frames every rank wrote.
    fn finish(&mut self) -> Result<SinkSummary> {
        let start = Instant::now();
        let path: PathBuf = self.sink.path().to_path_buf();
        let open = self.open.take().ok_or(Error::Usage("finish called without begin"))?;
        let mut frames = 0u64;
        self.sink.comm().all_reduce_into(&self.written, &mut frames, SystemOperation::min());
        close(self.sink.comm(), open, &[frames], &path)?;
        self.summary.write_seconds += start.elapsed().as_secs_f64();
        Ok(std::mem::take(&mut self.summary))
    }
}

/// Sets the stream's field and step datasets to `frames` frames. Collective: every rank,
/// the same `frames`.
fn set_frames(open: &Shared, frames: usize) -> hdf5::Result<()> {
    let layout = open.validator.layout();
    for (ds, spec) in open.streams[0].fields.iter().zip(&layout.fields) {
        let (dims, rank) = with_frames(frames, &spec.shape);
        ds.resize(&dims[..rank])?;
    }
    open.streams[0].steps.resize(frames)
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
