//! Compressed frames through HDF5's direct chunk write: the sink shuffles and deflates the
//! chunks itself, on several threads, and hands HDF5 the finished bytes
//! (`H5Dwrite_chunk`, HDF5 ≥ 1.10.3).
//!
//! Why: HDF5 runs a dataset's filters on the thread that calls it, one chunk after another,
//! under the library's global lock, so `deflate:6` kept one core busy and the run waited on
//! it. Here a frame's chunks are shuffled, then deflated in pieces of [`PIECE`] bytes, in
//! parallel, and only the writes go through HDF5. The dataset keeps its filter pipeline
//! (shuffle, then deflate), and the bytes written are what that pipeline stores: HDF5's byte
//! shuffle, then one zlib stream made of independently compressed pieces (each primed with
//! the 32 KiB before it, as pigz does), which `inflate` reads like any other, so every HDF5
//! reader decompresses it with the standard filters. The pieces depend on the data's size
//! only, so the file is the same whatever the number of threads.
//!
//! Where the threads live: a scoped pool inside [`DirectWriter::prepare`], started for each
//! frame. The sink's promise is that a frame is stored when `write` returns, so no work may
//! run on after it returns, and a pipeline across frames would have to break that promise
//! or wait for the same thing; splitting a chunk into pieces gives every frame of 128 KiB or
//! more parallel work (a 1 MiB frame, one chunk, is sixteen pieces). Starting scoped
//! threads costs tens of microseconds a frame, against tens of milliseconds of `deflate:6`
//! per MiB; smaller frames are compressed on the writer thread alone.
//!
//! Ordering under a kill: the chunk bytes go to the file (`pwrite`, into the page cache)
//! inside `H5Dwrite_chunk`, before the flush that writes the index and the extent that
//! reference them, and each chunk is written once, at an address never used before:
//! direct writes serve one frame per chunk only (`chunk_frames` = 1, the default), so no
//! chunk is ever rewritten or moved, and every file is created without HDF5's free-space
//! manager (file-space strategy `None`, `swmr::create_file`), so freed space is not handed
//! out again, except a block that ends the allocation, whose space the end takes back (HDF5
//! frees and reuses space when it relocates index nodes; with its default strategy a chunk
//! could land on an index node that the file on disk still points to until the flush). Before each flush the sink also writes the superblock's end of allocation
//! past the new chunks (`eoa`): HDF5's flush writes the index before the superblock. With
//! several frames per chunk HDF5 runs the filters itself (on the writer thread): such a
//! chunk is rewritten, compressed, at every frame, and moved while frames already reported
//! live in it.
//!
//! Fields encoded before the sink (ZFP streams made on the GPU, [`crate::Encoding::Zfp`]) take
//! the same path without the compression: their one chunk a frame is the stream, cut to the
//! bytes H5Z-ZFP would have stored, under the dataset's ZFP filter.
//!
//! So do uncompressed outputs laid out at `begin` (`preallocate`): their datasets carry a
//! deflate filter only so that the chunks made at `begin` are small fill chunks (NaN for
//! floats, which readers then see for frames never written), and each frame's chunk is
//! written as its values, with the filter skipped for that chunk (filter mask 1, which HDF5
//! records with the chunk; every HDF5 reader honours it).
//!

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use hdf5::Dataset;
use hdf5::filters::Filter;

use crate::schema::FieldSpec;

/// How a dataset's chunks are laid over one frame of its field.
#[derive(Debug, Clone)]
pub(crate) struct ChunkPlan {
    /// Bytes of one element.
    elem: usize,
    /// Bytes of one frame's part of a chunk (the chunk shape without its frame axis).
    part_bytes: usize,
    /// Per chunk of a frame: its element offset along every field axis, and the bytes of the
    /// frame it covers (contiguous: see [`ChunkPlan::new`]).
    parts: Vec<(Vec<u64>, std::ops::Range<usize>)>,
    /// What makes a chunk's stored bytes.
    coding: Coding,
}

/// How a [`ChunkPlan`]'s chunks are made.
#[derive(Debug, Clone, Copy)]
enum Coding {
    /// Shuffled (or not), then deflated at this zlib level.
    Deflate { level: u8, shuffle: bool },
    /// Already coded: the leading `bytes` of the field's bytes are the chunk.
    Encoded { bytes: usize },
    /// Stored as they are, the dataset's one filter skipped for the chunk (filter mask 1):
    /// uncompressed values in a dataset whose deflate filter only makes its unwritten chunks,
    /// fill values, small (see `preallocate`).
    Raw,
}

impl ChunkPlan {
    /// The plan for `spec` stored in chunks of shape `chunk` (`[1, *part]`, as made by
    /// `format::chunk_shape`), or `None` when the chunks hold several frames or the
    /// dataset's filter pipeline is not one this module reproduces (anything but deflate,
    /// optionally after shuffle).
    ///
    /// `chunk_shape` cuts a frame only along its leading axes (`[1, …, 1, k, full, …]`), so
    /// every part is one contiguous range of the frame's bytes; an edge part is shorter and
    /// its chunk is padded with zeros, which no reader sees.
    pub(crate) fn new(spec: &FieldSpec, chunk: &[usize], filters: &[Filter]) -> Option<ChunkPlan> {
        let (shuffle, level) = match filters {
            [Filter::Deflate(l)] => (false, *l),
            [Filter::Shuffle, Filter::Deflate(l)] => (true, *l),
            _ => return None,
        };
        ChunkPlan::with_coding(spec, chunk, Coding::Deflate { level, shuffle })
    }

    /// The plan for `spec`'s values stored as they are, in chunks of shape `chunk` (`[1,
    /// *part]`) of a dataset whose one filter they skip ([`Coding::Raw`]); `None` when the
    /// chunks hold several frames.
    pub(crate) fn raw(spec: &FieldSpec, chunk: &[usize]) -> Option<ChunkPlan> {
        ChunkPlan::with_coding(spec, chunk, Coding::Raw)
    }

    /// The parts of a frame in chunks of shape `chunk`, made by `coding`.
    fn with_coding(spec: &FieldSpec, chunk: &[usize], coding: Coding) -> Option<ChunkPlan> {
        if chunk.first() != Some(&1) {
            return None;
        }
        let elem = spec.dtype.size();
        let part = &chunk[1..];
        let shape = &spec.shape;
        let grid: Vec<usize> = shape.iter().zip(part).map(|(&d, &p)| d.div_ceil(p)).collect();
        // Byte strides of the frame, row-major.
        let mut strides = vec![elem; shape.len()];
        for a in (0..shape.len().saturating_sub(1)).rev() {
            strides[a] = strides[a + 1] * shape[a + 1];
        }
        let count: usize = grid.iter().product();
        let mut parts = Vec::with_capacity(count);
        for c in 0..count {
            let mut rest = c;
            let mut index = vec![0usize; shape.len()];
            for a in (0..shape.len()).rev() {
                index[a] = rest % grid[a];
                rest /= grid[a];
            }
            let offset: Vec<usize> = index.iter().zip(part).map(|(&i, &p)| i * p).collect();
            let start: usize = offset.iter().zip(&strides).map(|(&o, &s)| o * s).sum();
            let clipped: usize =
                offset.iter().zip(part).zip(shape).map(|((&o, &p), &d)| p.min(d - o)).product::<usize>() * elem;
            parts.push((offset.iter().map(|&o| o as u64).collect(), start..start + clipped));
        }
        let part_bytes = part.iter().product::<usize>() * elem;
        Some(ChunkPlan { elem, part_bytes, parts, coding })
    }

    /// Whether its chunks are shuffled before deflate (elements of one byte never are).
    fn shuffles(&self) -> bool {
        matches!(self.coding, Coding::Deflate { shuffle: true, .. }) && self.elem > 1
    }

    /// The zlib level of its deflate (0 for chunks that are not deflated here).
    fn level(&self) -> u8 {
        match self.coding {
            Coding::Deflate { level, .. } => level,
            Coding::Encoded { .. } | Coding::Raw => 0,
        }
    }

    /// The filter mask of its chunks: bit `i` set skips the dataset's filter `i`.
    fn filter_mask(&self) -> u32 {
        match self.coding {
            Coding::Raw => 1,
            Coding::Deflate { .. } | Coding::Encoded { .. } => 0,
        }
    }

    /// The plan of a field encoded before the sink (`chunk` is `[1, *shape]`): one chunk a
    /// frame, its stream as it arrives, cut to the bytes the dataset's filter stores. `None`
    /// for fields that arrive as values.
    pub(crate) fn encoded(spec: &FieldSpec) -> Option<ChunkPlan> {
        let crate::Encoding::Zfp(rate) = spec.encoding else { return None };
        let bytes = usize::try_from(rate.chunk_bytes(&spec.shape)?).ok()?;
        let part_bytes = spec.bytes()?;
        let parts = vec![(vec![0; spec.shape.len()], 0..part_bytes)];
        Some(ChunkPlan { elem: spec.dtype.size(), part_bytes, parts, coding: Coding::Encoded { bytes } })
    }
}

/// HDF5's byte shuffle (filter 2) of `src`, elements of `elem` bytes, into `dst`: byte `j`
/// of every element first, for `j` in `0..elem`; trailing bytes that make no whole element
/// stay at the end, as HDF5 leaves them.
pub(crate) fn shuffle(src: &[u8], elem: usize, dst: &mut Vec<u8>) {
    dst.clear();
    dst.resize(src.len(), 0);
    let n = src.len() / elem;
    if elem <= 1 || n <= 1 {
        dst.copy_from_slice(src);
        return;
    }
    for (j, plane) in dst[..n * elem].chunks_exact_mut(n).enumerate() {
        for (d, s) in plane.iter_mut().zip(src[j..].iter().step_by(elem)) {
            *d = *s;
        }
    }
    dst[n * elem..].copy_from_slice(&src[n * elem..]);
}

/// Bytes of uncompressed input per deflate piece: the unit of parallel work. Fixed (not a
/// function of the thread count), so the stored bytes are the same whatever the number of
/// threads. 64 KiB makes a 1 MiB chunk sixteen pieces, so the threads end a frame together
/// (pieces of Gray-Scott fields take very different times: two threads gained clearly more
/// over one with sixteen pieces than with four of 256 KiB, `cargo xtask bench
/// compression-threads 1,2 --compression deflate:6 --out /dev/shm`). Each piece is primed with
/// the 32 KiB before it, so the files are no larger than with fewer pieces.
pub(crate) const PIECE: usize = 64 << 10;
/// Deflate's window: each piece is primed with this much of the input before it.
const WINDOW: usize = 32 << 10;

/// One piece of a chunk's zlib stream: raw deflate of `input[range]`, primed with the 32 KiB
/// before it and ended with a sync flush (the last piece: the final block), and the Adler-32
/// of those bytes. Concatenated behind a zlib header, with the combined Adler-32 after
/// them, the pieces make one ordinary zlib stream (the pigz construction), which HDF5's
/// deflate filter (`inflate`) reads like any other.
fn deflate_piece(
    input: &[u8],
    range: std::ops::Range<usize>,
    level: u8,
    z: &mut flate2::Compress,
    out: &mut Vec<u8>,
) -> Result<u32, String> {
    let last = range.end == input.len();
    let src = &input[range.clone()];
    if range.start > 0 {
        z.set_dictionary(&input[range.start.saturating_sub(WINDOW)..range.start])
            .map_err(|e| format!("deflate (level {level}): cannot prime a piece: {e}"))?;
    }
    out.clear();
    // zlib's deflateBound for a raw stream, plus the sync flush's empty block.
    out.reserve(src.len() + (src.len() >> 12) + (src.len() >> 14) + (src.len() >> 25) + 32);
    let flush = if last { flate2::FlushCompress::Finish } else { flate2::FlushCompress::Sync };
    let status = z
        .compress_vec(src, out, flush)
        .map_err(|e| format!("deflate (level {level}) failed on {} bytes: {e}", src.len()))?;
    let done = if last { status == flate2::Status::StreamEnd } else { z.total_in() == src.len() as u64 };
    if !done {
        return Err(format!("deflate (level {level}) stopped early ({status:?}) on {} bytes", src.len()));
    }
    Ok(zlib_rs::adler32::adler32(1, src))
}

/// The zlib-rs level that compresses the pieces of a dataset whose deflate filter says
/// `level`: the same, but 2 for 1. zlib-rs's level 1 is zlib-ng's "quick" algorithm, whose
/// streams, cut into pieces primed with the bytes before them, the zlib that HDF5 uses
/// refused on smooth data ("invalid distance code", "invalid stored block lengths": every
/// frame of the default run with `deflate:1` unreadable) while zlib-rs's own inflate took
/// them. Level 2 is deflate_fast, the algorithm zlib itself runs for level 1; the filter
/// still records level 1 (a level is not part of the stream format).
fn compressor_level(level: u8) -> u32 {
    if level == 1 { 2 } else { u32::from(level) }
}

/// The zlib header zlib's `compress2` writes for `level` (deflate, 32 KiB window, no preset
/// dictionary, the level class in FLEVEL).
fn zlib_header(level: u8) -> [u8; 2] {
    let flevel: u16 = match level {
        0 | 1 => 0,
        2..=5 => 1,
        6 => 2,
        _ => 3,
    };
    let mut h: u16 = (0x78 << 8) | (flevel << 6);
    h += 31 - h % 31;
    h.to_be_bytes()
}

/// Work of one frame, run on the pool: first shuffle each chunk that needs it, then deflate
/// every piece of every chunk.
enum Job<'a> {
    Shuffle { input: &'a [u8], elem: usize, out: &'a mut Vec<u8> },
    Piece { input: &'a [u8], range: std::ops::Range<usize>, level: u8, out: &'a mut Vec<u8>, adler: &'a mut u32 },
}

/// Per-thread state (none kept across jobs: see [`Worker::run`]).
struct Worker;

impl Worker {
    fn new() -> Self {
        Worker
    }

    /// A fresh compressor for every piece: a reused one (`reset` + a preset dictionary) made
    /// output that depended on which pieces the same thread had compressed before, so the
    /// stored bytes changed with the thread count and from run to run (valid streams all,
    /// but not the reproducible chunks this module promises); a new one costs an allocation
    /// per piece.
    fn run(&mut self, job: &mut Job<'_>) -> Result<(), String> {
        match job {
            Job::Shuffle { input, elem, out } => {
                shuffle(input, *elem, out);
                Ok(())
            }
            Job::Piece { input, range, level, out, adler } => {
                let mut z = flate2::Compress::new(flate2::Compression::new(compressor_level(*level)), false);
                **adler = deflate_piece(input, range.clone(), *level, &mut z, out)?;
                Ok(())
            }
        }
    }
}

/// Runs `jobs` on up to `workers.len()` threads (the calling one included); inline when
/// there is less than two pieces' worth of work, where starting threads costs more.
fn run_all(jobs: &mut [Job<'_>], workers: &mut [Worker], bytes: usize) -> Result<(), String> {
    let threads = if bytes < 2 * PIECE { 1 } else { workers.len().min(jobs.len()).max(1) };
    if threads == 1 {
        let w = &mut workers[0];
        return jobs.iter_mut().try_for_each(|j| w.run(j));
    }
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<&mut Job<'_>>> = jobs.iter_mut().map(Mutex::new).collect();
    let first_error = Mutex::new(None);
    let work = |w: &mut Worker| {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(slot) = slots.get(i) else { break };
            let mut job = slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Err(e) = w.run(&mut job) {
                first_error.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get_or_insert(e);
            }
        }
    };
    let (mine, others) = workers[..threads].split_at_mut(1);
    std::thread::scope(|s| {
        for w in others.iter_mut() {
            s.spawn(|| work(w));
        }
        work(&mut mine[0]);
    });
    first_error.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner).map_or(Ok(()), Err)
}

/// Buffers of one chunk being compressed.
#[derive(Debug, Default, Clone)]
struct ChunkBufs {
    /// The shuffled chunk (unused without shuffle).
    shuffled: Vec<u8>,
    /// Deflated pieces and their Adler-32.
    pieces: Vec<(Vec<u8>, u32)>,
    /// The finished zlib stream.
    out: Vec<u8>,
}

/// Compresses the chunks `inputs` (each with its plan's shuffle and level) into their
/// `bufs[i].out`, on the pool.
fn compress_chunks(
    inputs: &[(&[u8], &ChunkPlan)],
    bufs: &mut [&mut ChunkBufs],
    workers: &mut [Worker],
) -> Result<(), String> {
    let bytes: usize = inputs.iter().map(|(i, _)| i.len()).sum();
    let mut shuffles: Vec<Job<'_>> = Vec::new();
    for ((input, plan), b) in inputs.iter().zip(bufs.iter_mut()) {
        if plan.shuffles() {
            shuffles.push(Job::Shuffle { input, elem: plan.elem, out: &mut b.shuffled });
        }
    }
    run_all(&mut shuffles, workers, bytes)?;
    drop(shuffles);
    let mut pieces: Vec<Job<'_>> = Vec::new();
    for ((input, plan), b) in inputs.iter().zip(bufs.iter_mut()) {
        let ChunkBufs { shuffled, pieces: outs, .. } = &mut **b;
        let src: &[u8] = if plan.shuffles() { shuffled } else { input };
        let count = src.len().div_ceil(PIECE).max(1);
        outs.resize_with(count, Default::default);
        for (k, (out, adler)) in outs.iter_mut().enumerate() {
            let range = k * PIECE..((k + 1) * PIECE).min(src.len());
            pieces.push(Job::Piece { input: src, range, level: plan.level(), out, adler });
        }
    }
    run_all(&mut pieces, workers, bytes)?;
    drop(pieces);
    for ((input, plan), b) in inputs.iter().zip(bufs.iter_mut()) {
        let ChunkBufs { pieces, out, .. } = &mut **b;
        out.clear();
        out.extend_from_slice(&zlib_header(plan.level()));
        let mut adler = 1u32;
        let mut at = 0usize;
        for (piece, a) in pieces.iter() {
            out.extend_from_slice(piece);
            let len = (input.len() - at).min(PIECE);
            adler = zlib_rs::adler32::adler32_combine(adler, *a, len as u64);
            at += len;
        }
        out.extend_from_slice(&adler.to_be_bytes());
    }
    Ok(())
}

/// What one field of one stream holds between frames.
#[derive(Debug)]
struct FieldState {
    plan: ChunkPlan,
    /// Edge chunks: the part padded to the chunk's size.
    padded: Vec<Vec<u8>>,
    /// Compression buffers, one per part (chunk of a frame).
    bufs: Vec<ChunkBufs>,
}

/// A chunk to hand to HDF5: field (of the frame's stream), chunk offset, stored bytes, and
/// the filters they skip ([`write_chunk`]).
pub(crate) struct ChunkWrite<'a> {
    pub(crate) field: usize,
    pub(crate) offset: Vec<u64>,
    pub(crate) bytes: &'a [u8],
    pub(crate) filter_mask: u32,
}

/// Compresses the chunks of every frame of a file's compressed datasets, in parallel.
pub(crate) struct DirectWriter {
    /// Per stream, per field: `None` for a field HDF5 writes itself (its filters run there).
    fields: Vec<Vec<Option<FieldState>>>,
    workers: Vec<Worker>,
}

impl std::fmt::Debug for DirectWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectWriter").field("fields", &self.fields).field("threads", &self.workers.len()).finish()
    }
}

impl DirectWriter {
    /// A writer for `streams` streams with the fields' `plans` (`None`: a field HDF5 writes
    /// itself), compressing on `threads` threads (at least one: the caller's).
    pub(crate) fn new(plans: &[Option<ChunkPlan>], streams: usize, threads: usize) -> Self {
        let fields = (0..streams)
            .map(|_| {
                plans
                    .iter()
                    .map(|plan| {
                        plan.as_ref().map(|plan| FieldState {
                            padded: vec![Vec::new(); plan.parts.len()],
                            bufs: vec![ChunkBufs::default(); plan.parts.len()],
                            plan: plan.clone(),
                        })
                    })
                    .collect()
            })
            .collect();
        DirectWriter { fields, workers: (0..threads.max(1)).map(|_| Worker::new()).collect() }
    }

    /// Whether field `field` is one HDF5 writes itself (no plan here).
    pub(crate) fn leaves_to_hdf5(&self, field: usize) -> bool {
        self.fields.first().is_some_and(|fields| fields.get(field).is_some_and(Option::is_none))
    }

    /// Prepares frame `n` of `stream` (its fields' bytes from `field_bytes`): compresses
    /// the chunks it completes, in parallel, and returns every chunk write it needs, in field
    /// order (none for the fields HDF5 writes itself). Nothing is written yet, so the caller
    /// can reserve the bytes first.
    pub(crate) fn prepare<'a>(
        &'a mut self,
        stream: usize,
        n: u64,
        field_bytes: &[&'a [u8]],
    ) -> Result<Vec<ChunkWrite<'a>>, String> {
        let states = &mut self.fields[stream];
        let mut inputs: Vec<(&[u8], &ChunkPlan)> = Vec::new();
        let mut bufs: Vec<&mut ChunkBufs> = Vec::new();
        for (st, &bytes) in states.iter_mut().zip(field_bytes) {
            let Some(FieldState { plan, padded, bufs: field_bufs }) = st else { continue };
            if let Coding::Encoded { .. } = plan.coding {
                continue;
            }
            for ((_, range), (pad, b)) in plan.parts.iter().zip(padded.iter_mut().zip(field_bufs.iter_mut())) {
                let src = bytes.get(range.clone()).ok_or_else(|| format!("frame too short for chunk {range:?}"))?;
                let input: &[u8] = if src.len() < plan.part_bytes {
                    pad.clear();
                    pad.extend_from_slice(src);
                    pad.resize(plan.part_bytes, 0);
                    pad
                } else {
                    src
                };
                // Raw chunks are stored as they are (edge chunks padded, as HDF5 pads them).
                if let Coding::Deflate { .. } = plan.coding {
                    inputs.push((input, plan));
                    bufs.push(b);
                }
            }
        }
        compress_chunks(&inputs, &mut bufs, &mut self.workers)?;
        drop((inputs, bufs));
        let mut writes = Vec::new();
        for (i, st) in self.fields[stream].iter().enumerate() {
            let Some(st) = st else { continue };
            for (((offset, range), b), pad) in st.plan.parts.iter().zip(&st.bufs).zip(&st.padded) {
                let offset = std::iter::once(n).chain(offset.iter().copied()).collect();
                let field = || field_bytes.get(i).copied().unwrap_or_default();
                let bytes = match st.plan.coding {
                    Coding::Deflate { .. } => &b.out[..],
                    Coding::Encoded { bytes } => field()
                        .get(range.start..range.start + bytes)
                        .ok_or_else(|| format!("field {i}'s encoded stream is shorter than its {bytes} bytes"))?,
                    Coding::Raw if range.len() < st.plan.part_bytes => &pad[..],
                    Coding::Raw => {
                        field().get(range.clone()).ok_or_else(|| format!("frame too short for chunk {range:?}"))?
                    }
                };
                writes.push(ChunkWrite { field: i, offset, bytes, filter_mask: st.plan.filter_mask() });
            }
        }
        Ok(writes)
    }
}

/// Writes one chunk's stored bytes, made by the dataset's filter pipeline but the filters
/// `filter_mask` skips (bit `i`: filter `i`; HDF5 records the mask with the chunk and its
/// readers skip those filters), into `ds` at element offset `offset` (one entry per dataset
/// axis, a multiple of the chunk shape). The chunk must lie within the dataset's extent.
#[expect(unsafe_code, reason = "hdf5-metno 0.15 has no safe wrapper of H5Dwrite_chunk")]
pub(crate) fn write_chunk(ds: &Dataset, offset: &[u64], bytes: &[u8], filter_mask: u32) -> hdf5::Result<()> {
    if offset.len() != ds.ndim() {
        return Err(format!("chunk offset {offset:?} has {} axes, the dataset {}", offset.len(), ds.ndim()).into());
    }
    let offset: Vec<hdf5_sys::h5::hsize_t> = offset.to_vec();
    hdf5::sync::sync(|| {
        // SAFETY: `ds` is an open dataset (borrowed for the call), `offset` holds one entry
        // per dataset axis as H5Dwrite_chunk reads, and `bytes` is valid for `bytes.len()`
        // bytes, which the library only reads; the HDF5 lock is held (`sync`).
        let status = unsafe {
            hdf5_sys::h5d::H5Dwrite_chunk(
                ds.id(),
                hdf5_sys::h5p::H5P_DEFAULT,
                filter_mask,
                offset.as_ptr(),
                bytes.len(),
                bytes.as_ptr().cast(),
            )
        };
        hdf5::h5check(status).map(drop)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::DType;

    #[test]
    fn shuffle_groups_byte_planes_and_keeps_the_tail() {
        let src: Vec<u8> = (0..10).collect();
        let mut dst = Vec::new();
        shuffle(&src, 4, &mut dst);
        assert_eq!(dst, [0, 4, 1, 5, 2, 6, 3, 7, 8, 9]);
        shuffle(&src, 1, &mut dst);
        assert_eq!(dst, src);
    }

    /// The pieced zlib stream of several pieces inflates to the input (zlib checks the
    /// Adler-32), and does not depend on the number of threads.
    #[test]
    fn pieced_zlib_streams_inflate_to_the_input_whatever_the_threads() {
        for level in 1..=9 {
            pieced_stream_inflates(level);
        }
    }

    fn pieced_stream_inflates(level: u8) {
        let spec = FieldSpec::new("u", DType::F32, vec![700, 300]);
        let plan = ChunkPlan::new(&spec, &[1, 700, 300], &[Filter::Shuffle, Filter::Deflate(level)]);
        let Some(plan) = plan else { panic!("deflate pipeline refused") };
        let input: Vec<u8> = (0..700 * 300u32).flat_map(|i| ((i % 977) as f32 * 0.5).to_le_bytes()).collect();
        assert!(input.len() > 3 * PIECE);
        let mut streams = Vec::new();
        for threads in [1, 3] {
            let mut workers: Vec<Worker> = (0..threads).map(|_| Worker::new()).collect();
            let mut b = ChunkBufs::default();
            compress_chunks(&[(&input, &plan)], &mut [&mut b], &mut workers).unwrap_or_else(|e| panic!("{e}"));
            assert!(b.pieces.len() >= 4);
            streams.push(b.out);
        }
        assert_eq!(streams[0], streams[1]);
        let mut inflated = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::ZlibDecoder::new(&streams[0][..]), &mut inflated)
            .unwrap_or_else(|e| panic!("level {level}: inflate: {e}"));
        let mut shuffled = Vec::new();
        shuffle(&input, 4, &mut shuffled);
        assert!(inflated == shuffled, "level {level}: inflated stream differs from the shuffled input");
        assert!(streams[0].len() < input.len() / 2, "{} bytes", streams[0].len());
    }

    #[test]
    fn parts_are_contiguous_and_cover_the_frame() {
        let spec = FieldSpec::new("u", DType::F32, vec![1001, 2048]);
        let chunk = crate::hdf5::format::chunk_shape(&spec.shape, 4, 1).unwrap_or_default();
        let plan = ChunkPlan::new(&spec, &chunk, &[Filter::Shuffle, Filter::Deflate(6)]);
        let plan = plan.as_ref().map(|p| (p.parts.clone(), p.part_bytes));
        let Some((parts, part_bytes)) = plan else { panic!("deflate pipeline refused") };
        // 1001 rows of 8 KiB: two parts of 501 rows, the second one row short (padded).
        assert_eq!(parts.len(), 2);
        assert_eq!(part_bytes, 501 * 2048 * 4);
        assert_eq!(parts[1].1.len(), 500 * 2048 * 4);
        let mut end = 0;
        for (offset, range) in &parts {
            assert_eq!(range.start, end);
            assert_eq!(range.start, offset[0] as usize * 2048 * 4);
            assert!(range.len() <= part_bytes);
            end = range.end;
        }
        assert_eq!(end, 1001 * 2048 * 4);
        assert!(ChunkPlan::new(&spec, &chunk, &[Filter::Shuffle]).is_none());
        let three = crate::hdf5::format::chunk_shape(&spec.shape, 4, 3).unwrap_or_default();
        assert!(ChunkPlan::new(&spec, &three, &[Filter::Deflate(6)]).is_none(), "several frames per chunk");
    }
}
