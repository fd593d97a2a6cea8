//! One Zarr store holding a stream whose every frame is split over the MPI ranks (cargo
//! features `zarr` and `mpi`): each rank writes the chunks of its own block.
//!
//! Chunks are one frame of one block (`[1, *block]`), so no two ranks ever write the same
//! file and nothing is collective but the agreement: the blocks must be aligned to one chunk
//! grid (every block but the last along an axis of the largest extent, which holds when each
//! axis divides evenly or leaves a remainder of parts − 1; a last, smaller block writes an edge
//! chunk; a field arriving as ZFP streams is stored as each block's `zfpy` chunk, so its blocks
//! must all have one shape). The schedule:
//!
//! - `begin` (collective): the ranks agree on the chunk grid; rank 0 creates the store (the
//!   serial sink's structure: groups, arrays, attributes), the others then describe the same
//!   arrays without writing. Appending (`--resume`), rank 0 opens the store as the serial sink
//!   does (a continued stream cut to its kept frames, an incomplete one replaced), refusing a
//!   store whose chunks are not this decomposition's blocks: a store continues on the
//!   decomposition that wrote it.
//! - `write` (collective): the ranks agree the frame is accepted; each writes its chunks
//!   (atomically replaced, as in the serial sink), rank 0 the step and the fields of another
//!   rank than the grid's (reductions of the whole grid, the same on every rank, one chunk a
//!   frame); they agree every rank
//!   succeeded; then rank 0 grows the arrays' shapes, steps last, and they agree on that: a
//!   reader or a kill sees a frame only once every rank's chunks are there.
//! - `finish` (collective): the frame count is the least any rank wrote; rank 0 shrinks
//!   shapes grown past it and writes `frames` and `complete`.

use std::sync::Arc;

use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives};
use zarrs::array::ArrayBytes;

use super::schema::{
    ArrayPlan, Root, STEPS_CHUNK, StreamState, field_entries, store_err, store_zfpy_chunk, write_root, write_stream,
};
use super::sink::{StreamArrays, ZarrBackend, set_frames};
use super::store::{AtomicDirStore, sync_tree};
use crate::error::{Error, Result};
use crate::frame::{Fields, Frame};
use crate::options::SinkOptions;
use crate::prepare::{OutputKind, Staged};
use crate::protocol::{Backend, Checked, Outcome};
use crate::ranks::{Block, agree, agree_on_whole, failed_ranks, short_streams};
use crate::schema::{FieldSpec, StreamLayout};
use crate::time::now_rfc3339;
use crate::zfp::Encoding;

/// The backend of [`ZarrBlockSink`].
pub struct ZarrBlockBackend {
    options: SinkOptions,
    comm: SimpleCommunicator,
    block: Block,
    open: Option<BlockOpen>,
}

/// A field split into blocks, as this rank writes it: its part's extent, the chunk extent
/// (the largest rank's part), the chunk indices of its part, and a chunk-sized buffer for a
/// part smaller than a chunk (at the grid's far edge).
struct ChunkedPart {
    shape: Vec<usize>,
    chunk: Vec<usize>,
    indices: Vec<u64>,
    padded: Option<Vec<u8>>,
}

/// State between `begin` and `finish`.
struct BlockOpen {
    store: Arc<AtomicDirStore>,
    root: Root,
    stream: StreamArrays,
    /// Per field of the layout, its chunks when split into blocks (`None`: whole, written
    /// by rank 0).
    parts: Vec<Option<ChunkedPart>>,
    /// Appending: whether the streams kept from the store are complete (rank 0 knows).
    kept_complete: bool,
    /// How each field of the layout arrives (a ZFP stream is stored as its chunk).
    encodings: Vec<Encoding>,
}

/// Writes one stream whose frames are split into blocks, one per MPI rank, into one Zarr
/// store, each rank its own chunks: [`ZarrBlockBackend`] driven through the sink protocol.
///
/// Used like [`crate::MpiBlockSink`]: every rank builds one with its block (`offset` and
/// `shape` per grid axis, C order) and the same options, and calls `begin` (the whole grid's
/// layout, one stream), `write` (its block of every field) and `finish`, collectively.
pub type ZarrBlockSink = Checked<ZarrBlockBackend>;

impl ZarrBlockSink {
    /// A sink writing the block at `offset` of extent `shape` of every frame into the store
    /// `options.path`, together with the other ranks of `comm` (a communicator of its own).
    pub fn new(options: SinkOptions, comm: SimpleCommunicator, offset: &[usize], shape: &[usize]) -> Self {
        Checked::from(ZarrBlockBackend { options, comm, block: Block::new(offset, shape), open: None })
    }

    /// This sink, where the layout also holds the grid `grid` downsampled by `factor`, as
    /// [`crate::MpiBlockSink::downsampled`]: the downsampled fields' chunks are the blocks'
    /// coarse cells.
    pub fn downsampled(mut self, grid: &[usize], factor: usize) -> Self {
        self.backend_mut().block.downsample(grid, factor);
        self
    }
}

impl std::fmt::Debug for ZarrBlockBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZarrBlockBackend").field("block", &self.block).finish()
    }
}

impl ZarrBlockBackend {
    /// Local: one stream, this rank's block within every field, options a block store takes.
    fn check_block(&self, layout: &StreamLayout) -> Result<()> {
        self.options.check()?;
        if self.options.shard_frames != 1 {
            return Err(Error::InvalidOptions(
                "a Zarr store written by MPI ranks takes no shard_frames: its chunks are the ranks' blocks".into(),
            ));
        }
        super::sink::check_encoded_fields(layout, 1)?;
        self.block.check(layout)
    }

    /// Collective: per field split into blocks, the chunk extent (the largest part per
    /// axis), checked on every rank to put this rank's part on the chunk grid (a smaller part
    /// only at the grid's far edge). A layout without such a field (the reductions beside a
    /// thinned split run's fields, whole on every rank) places no block.
    fn chunk_grid(&self, layout: &StreamLayout) -> Result<Vec<Option<ChunkedPart>>> {
        let mut misplaced = None;
        let mut parts = Vec::with_capacity(layout.fields.len());
        for f in &layout.fields {
            let Some(part) = self.block.part(f) else {
                parts.push(None);
                continue;
            };
            let mut chunk = vec![0u64; part.shape.len()];
            let mine: Vec<u64> = part.shape.iter().map(|&s| s as u64).collect();
            self.comm.all_reduce_into(&mine[..], &mut chunk[..], SystemOperation::max());
            let chunk: Vec<usize> = chunk.iter().map(|&c| c as usize).collect();
            let aligned = part
                .offset
                .iter()
                .zip(&part.shape)
                .zip(&chunk)
                .zip(&f.shape)
                .all(|(((&o, &s), &c), &n)| c > 0 && o % c == 0 && (s == c || o + s == n));
            if !aligned {
                misplaced.get_or_insert_with(|| misplaced_error(&part.offset, &part.shape, &chunk, f));
            }
            // A ZFP stream is the chunk of its block as it is: it cannot be padded to a chunk
            // of another shape (Zarr readers reshape a chunk's decoded values to the chunk).
            if let Encoding::Zfp(rate) = f.encoding
                && (chunk != part.shape || !rate.zfpy_describes(&part.shape))
            {
                misplaced.get_or_insert_with(|| uneven_encoded_error(&part.shape, &chunk, f));
            }
            let indices = part.offset.iter().zip(&chunk).map(|(&o, &c)| (o / c.max(1)) as u64).collect();
            let cells: usize = chunk.iter().product();
            let padded = (chunk != part.shape).then(|| vec![0u8; cells * f.dtype.size()]);
            parts.push(Some(ChunkedPart { shape: part.shape, chunk, indices, padded }));
        }
        let placed = misplaced.map_or(Ok(()), Err);
        let path = self.options.path.display().to_string();
        agree(&self.comm, placed, || format!("placing the blocks of {path} on one chunk grid"))?;
        Ok(parts)
    }

    /// Rank 0: creates the store (staged, published once whole).
    fn create(&self, layout: &StreamLayout, plan: &ArrayPlan, root: &Root) -> Result<()> {
        let staged = Staged::prepare(&self.options.path, self.options.overwrite, OutputKind::ZarrStore)?;
        std::fs::create_dir(staged.staging()).map_err(|e| Error::io("cannot create directory", staged.staging(), e))?;
        let store = Arc::new(AtomicDirStore::new(staged.staging()));
        write_root(&store, root)?;
        let stream = ZarrBackend::stream_arrays(&store, layout, &layout.streams[0], 0, plan)?;
        ZarrBackend::create_streams(&store, std::slice::from_ref(&stream))?;
        staged.publish(self.options.fsync)
    }
}

/// The error of a block whose part (`offset`, `shape`) of `field` is not on the chunk grid of
/// extent `chunk`.
fn misplaced_error(offset: &[usize], shape: &[usize], chunk: &[usize], field: &FieldSpec) -> Error {
    Error::InvalidLayout(format!(
        "the block at offset {offset:?} of shape {shape:?} of field {} is not on the Zarr chunk grid of blocks \
         {chunk:?}: every block but the last along an axis must have the largest extent; make each axis of {:?} \
         divide evenly by its parts (or leave a remainder of parts - 1)",
        field.name, field.shape
    ))
}

/// The error of a field arriving as ZFP streams whose block of `shape` is not a whole chunk of
/// extent `chunk` (an edge block smaller than the others).
fn uneven_encoded_error(shape: &[usize], chunk: &[usize], field: &FieldSpec) -> Error {
    Error::InvalidLayout(format!(
        "field {} arrives as {} and this rank's block of it is {shape:?}, not the chunk {chunk:?} of the \
         largest block: a ZFP stream is stored as its block's whole chunk, so every block must have one shape; \
         choose a decomposition that divides each axis of {:?} evenly, or let the values arrive (wgpipe: \
         output.compress_on = \"host\")",
        field.name,
        field.encoding.describe(),
        field.shape
    ))
}

/// Copies a block of `shape` (elements of `size` bytes, C order) into the chunk-sized `buffer`
/// of extent `chunk`, at its origin: a block at the grid's far edge, smaller than a chunk,
/// written as the edge chunk (Zarr ignores what lies beyond the array).
fn pad_into(buffer: &mut [u8], chunk: &[usize], shape: &[usize], size: usize, bytes: &[u8]) {
    let rank = shape.len();
    let row = shape[rank - 1] * size;
    let rows: usize = shape[..rank - 1].iter().product();
    for r in 0..rows {
        // The row's indices in the block, then its start in the chunk.
        let (mut at, mut rest) = (0, r);
        for axis in (0..rank - 1).rev() {
            at += (rest % shape[axis]) * chunk[axis + 1..].iter().product::<usize>();
            rest /= shape[axis];
        }
        buffer[at * size..at * size + row].copy_from_slice(&bytes[r * row..(r + 1) * row]);
    }
}

impl Backend for ZarrBlockBackend {
    fn check_layout(&self, layout: &StreamLayout) -> Result<()> {
        self.check_block(layout)
    }

    /// Appending: rank 0 cuts a continued stream to its kept frames in `begin`.
    fn continues_streams(&self) -> bool {
        self.options.append
    }

    /// Frames are this rank's block of every field.
    fn frame_layout(&self, layout: &StreamLayout) -> Option<StreamLayout> {
        Some(self.block.frame_layout(layout))
    }

    fn begin(&mut self, layout: &StreamLayout) -> Result<()> {
        let path = self.options.path.display().to_string();
        agree(&self.comm, self.check_block(layout), || format!("checking the blocks of {path}"))?;
        let parts = self.chunk_grid(layout)?;
        let frame_chunks = layout
            .fields
            .iter()
            .zip(&parts)
            .filter_map(|(f, p)| Some((f.name.clone(), p.as_ref()?.chunk.iter().map(|&c| c as u64).collect())))
            .collect();
        let plan = ArrayPlan { compression: self.options.compression, shard_frames: 1, frame_chunks };
        let root = Root {
            created: now_rfc3339(),
            fields: field_entries(&layout.fields),
            streams: vec![layout.streams[0].name.clone()],
            attributes: layout.attributes.clone(),
            complete: false,
        };
        // Appending, rank 0 opens the store below instead.
        let created =
            if self.comm.rank() == 0 && !self.options.append { self.create(layout, &plan, &root) } else { Ok(()) };
        agree(&self.comm, created, || format!("creating {path}"))?;
        // Appending: rank 0 opens (or creates) the store as the serial sink does, with this
        // chunk grid, and keeps what it read (the root, the stream's steps chunk).
        let opened = if self.options.append && self.comm.rank() == 0 {
            ZarrBackend::open_store(&self.options, layout, plan.clone()).map(Some)
        } else {
            Ok(None)
        };
        let opened = agree(&self.comm, opened, || format!("opening {path} to continue it"))?;
        let store = Arc::new(AtomicDirStore::new(&self.options.path));
        let (root, stream, kept_complete) = match opened {
            Some(mut open) if !open.streams.is_empty() => {
                let stream = open.streams.swap_remove(0);
                (open.root, Ok(stream), open.kept_complete)
            }
            _ => (root, ZarrBackend::stream_arrays(&store, layout, &layout.streams[0], 0, &plan), true),
        };
        let stream = agree(&self.comm, stream, || format!("describing the arrays of {path}"))?;
        let encodings = layout.fields.iter().map(|f| f.encoding).collect();
        self.open = Some(BlockOpen { store, root, stream, parts, kept_complete, encodings });
        Ok(())
    }

    fn write(&mut self, frame: &Frame, fields: Fields<'_>) -> Result<Option<u64>> {
        let path = self.options.path.display().to_string();
        let n = frame.index;
        agree(&self.comm, Ok(()), || format!("checking frame {n} of {path}"))?;
        let root = self.comm.rank() == 0;
        let open = self.open.as_mut().ok_or(Error::Usage("write called before begin"))?;
        let whole = open.parts.iter().zip(fields.iter()).filter(|(part, _)| part.is_none());
        agree_on_whole(&self.comm, whole.map(|(_, bytes)| bytes), || format!("checking frame {n} of {path}"))?;
        let stored = (|| -> Result<()> {
            for (f, bytes) in fields.iter().enumerate() {
                let array = &open.stream.fields[f];
                let Some(part) = open.parts.get_mut(f).and_then(Option::as_mut) else {
                    // Whole on every rank (a reduction of the whole grid): rank 0 writes it,
                    // one chunk per frame.
                    if root {
                        let indices: Vec<u64> =
                            std::iter::once(n).chain(array.shape()[1..].iter().map(|_| 0)).collect();
                        let node = array.path().as_str();
                        array
                            .store_chunk(&indices, ArrayBytes::new_flen(bytes))
                            .map_err(|e| store_err(&open.store, "cannot write frame to", node, e))?;
                    }
                    continue;
                };
                let indices: Vec<u64> = std::iter::once(n).chain(part.indices.iter().copied()).collect();
                if let Encoding::Zfp(rate) = open.encodings[f] {
                    // The block's stream after zfp's header: its chunk, as in the serial sink.
                    store_zfpy_chunk(&open.store, array, &indices, (rate, &part.shape), bytes)?;
                    continue;
                }
                let data: &[u8] = match part.padded.as_mut() {
                    Some(padded) => {
                        let size = bytes.len() / part.shape.iter().product::<usize>().max(1);
                        pad_into(padded, &part.chunk, &part.shape, size, bytes);
                        padded
                    }
                    None => bytes,
                };
                let node = array.path().as_str();
                array
                    .store_chunk(&indices, ArrayBytes::new_flen(data))
                    .map_err(|e| store_err(&open.store, "cannot write frame to", node, e))?;
            }
            if root {
                let (chunk, slot) = (n / STEPS_CHUNK, (n % STEPS_CHUNK) as usize);
                if slot == 0 {
                    open.stream.steps_chunk.fill(0);
                }
                open.stream.steps_chunk[slot] = frame.step;
                let node = open.stream.steps.path().as_str();
                open.stream
                    .steps
                    .store_chunk(&[chunk], open.stream.steps_chunk.as_slice())
                    .map_err(|e| store_err(&open.store, "cannot write the step to", node, e))?;
            }
            Ok(())
        })();
        agree(&self.comm, stored, || format!("writing frame {n} of {path}"))?;
        let grown = if root {
            let store = open.store.clone();
            let s = &mut open.stream;
            s.fields.iter_mut().chain([&mut s.steps]).try_for_each(|a| set_frames(&store, a, n + 1))
        } else {
            Ok(())
        };
        agree(&self.comm, grown, || format!("publishing frame {n} of {path}")).map(|()| None)
    }

    /// Collective: the other ranks learn of the refusal in their `write`'s first agreement.
    fn refused(&mut self, _error: &Error) -> bool {
        failed_ranks(&self.comm, false);
        false
    }

    fn finish(&mut self, outcome: &Outcome<'_>) -> Result<()> {
        let path = self.options.path.display().to_string();
        let mut open = self.open.take().ok_or(Error::Usage("finish called without begin"))?;
        let mine = outcome.frames().first().copied().unwrap_or(0);
        let mut frames = 0u64;
        self.comm.all_reduce_into(&mine, &mut frames, SystemOperation::min());
        let failed = !failed_ranks(&self.comm, !outcome.failed()).is_empty();
        // A run stopped early on any rank (a thinned stream whose fields expect no count)
        // leaves the stream incomplete, so that `--resume` continues it.
        let short = short_streams(&self.comm, 1, outcome.short());
        let finished = if self.comm.rank() == 0 {
            (|| -> Result<()> {
                let store = open.store.clone();
                let s = &mut open.stream;
                for a in s.fields.iter_mut().chain([&mut s.steps]) {
                    if a.shape()[0] != frames {
                        set_frames(&store, a, frames)?;
                    }
                }
                let all = Outcome::new(outcome.layout(), std::slice::from_ref(&frames), failed).with_short(&short);
                let complete = all.stream_complete(0, frames);
                write_stream(&store, &s.info, StreamState { index: s.index, frames: Some(frames), complete })?;
                open.root.complete = complete && open.kept_complete;
                write_root(&store, &open.root)?;
                // Every rank's chunks are written (agreed at each frame): one sync of the tree.
                if self.options.fsync { sync_tree(&self.options.path) } else { Ok(()) }
            })()
        } else {
            Ok(())
        };
        agree(&self.comm, finished, || format!("finishing {path}"))
    }
}
