//! No reported frame lost to a kill: uncompressed HDF5 outputs whose frame counts are known
//! are laid out whole at `begin`, so that storing a frame changes no metadata but its own
//! chunks' index entries, in place, or none at all.
//!
//! Why: HDF5 1.10 has no journal. A file that grows with every frame changes metadata with
//! every frame (the datasets' extents, chunk index nodes, the superblock's end of
//! allocation), and a flush writes them one block after another: a kill in the middle of a
//! flush can leave an index node pointing past the end of allocation the superblock on disk
//! still has ("addr overflow ... eoa"), which loses frames the sink had reported stored
//! (`kill_stress`: 1 to 3 per 1000 kills) and once in a while the whole file.
//!
//! How: every stream's datasets are created holding its expected frames, every chunk made
//! and indexed (HDF5's early allocation, the MPI batch sink's plan), the `steps` entries
//! filled with [`NO_STEP`](super::schema::NO_STEP), and the structure flushed before the
//! first frame. A frame's fields, a flush, then its `steps` entry, a flush: a kill at any
//! moment leaves every frame whose step reached the file whole (its fields reached the file
//! first); the first `NO_STEP` entry is where every wgpipe reader and `--resume` stop. The
//! stream's `frames` attribute is overwritten in place with the step, so a killed file says
//! how many frames it holds. `finish` shrinks a stream that stopped early to its frames, so
//! other readers (h5py) see exactly them; that shrink, like the attributes `finish` writes,
//! is metadata written in place: a kill in the middle of `finish` itself is the one moment
//! this design does not cover.
//!
//! What a frame's chunks are at `begin`, and so what a killed run's frames never written read
//! as (a killed run's datasets stay full length):
//!
//! - One frame a chunk (the default), up to [`MAX_INDEXED_CHUNKS`]: **fill chunks**. The
//!   field datasets carry a deflate filter that only the fill chunks go through (NaN for
//!   floats, netCDF's fill value for most integers: `schema`'s `Unwritten`; a few bytes a
//!   chunk), and a frame's chunk is written as its values with that filter skipped (filter
//!   mask 1, `direct`'s raw chunks): new space at the end of the file, then its one index
//!   entry changed in place, as a compressed frame's chunk below. Frames never written read as
//!   the fill value, which the datasets' `_FillValue` names, so xarray shows them as missing
//!   (NaN) without knowing wgpipe. (`crash.rs` kills writers and reads their files with h5py
//!   and xarray.)
//! - Several frames a chunk (`chunk_frames`, and small frames packed, [`packed_chunks`]), more
//!   chunks than that, or a big-endian host: **holes**. Every chunk is allocated in the file's
//!   address space without being written (the file is sparse), and a frame is written into its
//!   space: storing it changes no metadata at all. Frames never written read as zeros; their
//!   steps say which they are.
//!
//! Appending (`--resume`): a stream still laid out whole (its run was killed) continues in
//! place, its `steps` entries from the kept frames on marked again, and nothing else changes
//! (`schema::appends_in_place`). Any other append (a stream cut by `finish`, new streams,
//! changed attributes, a compressed file) changes the structure, and `sink` makes it on a
//! copy renamed over the file (`copy`). Measured with `kill_stress` (2000 kills each): 0
//! reported frames lost and 0 files that do not open, new, appended after a kill, and
//! appended after a stop; laying a stopped run out again in place instead left 62 of 2000
//! files that did not open.
//!
//! Cost, for holes: two flushes per frame instead of one, but with nothing but data to
//! write; `begin` makes every chunk's index entry; the file's apparent size is the whole
//! run's from the start (`ls`; `du` counts what is written). Fill chunks cost what a
//! compressed output's chunks made at `begin` cost (below). `cargo xtask bench layout-cost`
//! measures the default against a growing file.
//!
//! Disk space: holes are allocated in the file's address space, not on the disk (HDF5
//! writes no fill value there), and fill chunks take a few bytes each, so a run stopped
//! early leaves almost nothing allocated for the frames it never wrote, and a large
//! `run.frames` used as "until I stop it" costs disk only for what is written. A full disk
//! can therefore only fail a frame's data or its chunk's new space, before its step (the
//! frame is marked not written and the file stays whole); the sink checks the free space
//! before each frame to say so between frames, and keeps `finish`'s room allocated past the
//! end of the file (`reserve`). With holes, the file's length is the whole output's from
//! `begin` on, so a file size limit (`ulimit -f`) that it would pass refuses the run before
//! anything is written ([`output_bytes_bound`]); with fill chunks the file grows frame by
//! frame, and the limit stops the run between frames as a full disk does.
//!
//! Compressed outputs of known lengths get the same structure, with one difference: a
//! compressed chunk's size is known only once it is written. At `begin` every chunk is made
//! (HDF5's early allocation stores each as its compressed fill value, a few bytes to a few
//! KiB) and indexed, and the datasets have their full extents. A frame's chunk then takes new
//! space at the end of the file (the file-space strategy `None` never hands out space freed
//! since, see `direct`), written before the flush that changes the chunk's one entry in its
//! chunk index node; that node already exists and is rewritten in place, with every other
//! entry unchanged. So no extent changes and no index node splits while frames arrive: the
//! metadata a kill could leave half-written describes the frame in flight only, whose step
//! is not written yet. (Growing instead, a frame changed the datasets' extents and inserted
//! index entries, splitting nodes that also describe earlier frames: `kill_stress` lost a
//! reported frame in 3 of 2000 kills; made at `begin`, 0 of 2000, and 0 of 2000 appends.) The
//! cost: `begin` writes every chunk's fill value and index entry ([`indexed_bytes_bound`]),
//! and a frame two flushes.
//!
//! Only for one frame per chunk (deflate's direct chunk writes of `direct`, and blosc and
//! ZFP, whose chunks HDF5's filter writes whole, as new space and one changed entry:
//! `kill_stress`, 2000 kills, 6 and 3 reported frames lost growing, 0 made at `begin`): a
//! chunk of several
//! frames is rewritten whole, compressed, at every frame, and HDF5 frees its old space
//! before it allocates the new; when the old chunk ends the file, freeing it shrinks the
//! file (HDF5 does that whatever the file-space strategy) and the new chunk is written over
//! it before the index that still points there is flushed. Made at `begin` such chunks lost
//! a reported frame in 10 of 2000 kills (growing: 6 of 2000), so they still grow.
//!
//! Not here either: SWMR files (HDF5's own write ordering) and streams of unknown length;
//! they grow with every frame as before (the guide's Reliability page has the kill counts of
//! each).

use crate::options::{Compression, SinkOptions};
use crate::schema::StreamLayout;

use super::schema::STEPS_CHUNK;
use super::swmr::Alignment;

/// Bytes of chunk index per chunk, at most: a v1 B-tree node holds up to 64 entries of at
/// most 8 bytes per axis plus 16, and nodes split half full; a generous bound.
const INDEX_BYTES_PER_CHUNK: u64 = 256;
/// Index bytes per dataset besides its entries (the root node, object header growth).
const INDEX_BYTES_PER_DATASET: u64 = 64 << 10;

/// Whether an output with these options and this layout is laid out whole at `begin`:
/// uncompressed, not SWMR, and every stream's frame count known.
pub(crate) fn applies(options: &SinkOptions, layout: &StreamLayout) -> bool {
    // Fields encoded before the sink are compressed ones: one chunk a frame, never packed.
    let encoded = layout.fields.iter().any(|f| f.encoding != crate::Encoding::Values);
    options.compression == Compression::None && !encoded && counts_known(options, layout)
}

/// Whether every stream's frame count is known (and the file is not SWMR, whose writes HDF5
/// orders itself): the condition for making every chunk at `begin`.
pub(crate) fn counts_known(options: &SinkOptions, layout: &StreamLayout) -> bool {
    !options.swmr && !layout.streams.is_empty() && layout.streams.iter().all(|s| s.expected_frames.is_some())
}

/// Most chunks a compressed output makes at `begin`; beyond, it grows frame by frame as
/// before. Making a chunk costs microseconds and about 100 bytes of file (`cargo xtask bench
/// layout-cost` times a `begin` that makes every chunk), so this caps `begin` at seconds: a huge
/// `run.frames` meant as "until I stop it", times every field and reduction, would otherwise
/// spend minutes before the first frame.
pub(crate) const MAX_INDEXED_CHUNKS: u64 = 1 << 20;

/// Chunks of every field of every stream of `layout` for its expected frames (those a
/// stream keeps from an earlier run included: an upper bound).
pub(crate) fn chunk_count(layout: &StreamLayout, chunks: &[Vec<usize>]) -> u64 {
    let frames: u64 = layout.streams.iter().map(|s| s.expected_frames.unwrap_or(0)).fold(0, u64::saturating_add);
    layout.fields.iter().zip(chunks).fold(0u64, |sum, (f, chunk)| sum.saturating_add(chunks_for(frames, f, chunk).0))
}

/// Bytes making every chunk of a compressed output at `begin` writes, at most: per chunk its
/// compressed fill value (zeros: deflate stores about 1 byte per 258, plus its framing) and
/// an index entry, per dataset its index, and the `steps` entries; nothing for the streams
/// `in_place`.
pub(crate) fn indexed_bytes_bound(layout: &StreamLayout, chunks: &[Vec<usize>], in_place: &[String]) -> u64 {
    // Chunks made at `begin` are not page-aligned (`swmr::Alignment`).
    let alignment = Alignment::for_output(false);
    laid_out_bytes(layout, chunks, in_place, alignment, |chunk_bytes| (chunk_bytes / 128).saturating_add(64))
}

/// Bytes of every chunk of every field (`stored(chunk_bytes)` each, padded as `alignment`
/// places it, plus its index entry), the `steps` chunks and the datasets' indexes, for every
/// stream of `layout` but those `in_place`, over the frames it does not keep from an earlier
/// run.
fn laid_out_bytes(
    layout: &StreamLayout,
    chunks: &[Vec<usize>],
    in_place: &[String],
    alignment: Alignment,
    stored: impl Fn(u64) -> u64,
) -> u64 {
    let stream = |expected: u64| -> u64 {
        let fields = layout.fields.iter().zip(chunks).fold(0u64, |sum, (f, chunk)| {
            let (count, chunk_bytes) = chunks_for(expected, f, chunk);
            let one = alignment.padded(stored(chunk_bytes)).saturating_add(INDEX_BYTES_PER_CHUNK);
            sum.saturating_add(count.saturating_mul(one)).saturating_add(INDEX_BYTES_PER_DATASET)
        });
        let steps_chunk = alignment.padded(STEPS_CHUNK as u64 * 8).saturating_add(INDEX_BYTES_PER_CHUNK);
        let steps = expected.div_ceil(STEPS_CHUNK as u64).saturating_mul(steps_chunk);
        fields.saturating_add(steps).saturating_add(INDEX_BYTES_PER_DATASET)
    };
    layout
        .streams
        .iter()
        .filter(|s| !in_place.contains(&s.name))
        .map(|s| stream(s.expected_frames.unwrap_or(0).saturating_sub(s.kept_frames)))
        .fold(0u64, u64::saturating_add)
}

/// Chunks of field `f`, chunked as `chunk`, holding `frames` frames, and the bytes of one.
fn chunks_for(frames: u64, f: &crate::schema::FieldSpec, chunk: &[usize]) -> (u64, u64) {
    let (per_frame, chunk_bytes) = super::schema::chunk_row(f, chunk);
    let frames_per_chunk = chunk.first().copied().unwrap_or(1).max(1) as u64;
    (frames.div_ceil(frames_per_chunk).saturating_mul(per_frame as u64), chunk_bytes as u64)
}

/// Smallest chunk of an output laid out whole: a field whose frame is smaller packs this
/// many bytes' worth of frames into each chunk. Every chunk of a laid-out output is made at
/// `begin` with an index entry of its own, so one-value reductions at one frame per chunk
/// (4 bytes each) would put tens of bytes of index beside each value, for every frame the
/// run may reach (a 3-D run of 100000 frames analysing u and v: 800000 such chunks, 44 MB
/// more on disk and 0.44 s more of `begin` than with packed chunks). A frame's write then changes part of a chunk:
/// bytes that hold earlier frames are written again, unchanged.
const MIN_CHUNK_BYTES: usize = 4096;

/// Chunk shapes of an output laid out whole: `chunks` (the options' shapes, one per field)
/// with the frames of a field whose chunk is smaller than [`MIN_CHUNK_BYTES`] packed to
/// about that size (never more frames than `frames`, the most any stream expects).
pub(crate) fn packed_chunks(layout: &StreamLayout, chunks: &[Vec<usize>], frames: u64) -> Vec<Vec<usize>> {
    let most = usize::try_from(frames).unwrap_or(usize::MAX).max(1);
    layout
        .fields
        .iter()
        .zip(chunks)
        .map(|(f, chunk)| {
            let mut chunk = chunk.clone();
            let part: usize = chunk[1..].iter().product::<usize>() * f.dtype.size();
            let cf = chunk[0].max(1);
            if part > 0 && part * cf < MIN_CHUNK_BYTES {
                chunk[0] = MIN_CHUNK_BYTES.div_ceil(part).min(most).max(cf);
            }
            chunk
        })
        .collect()
}

/// Bytes laying out every stream of `layout` whole adds to a file's length, at most: every
/// chunk of every field for the stream's expected frames but those it keeps from an earlier
/// run (their chunks exist), the `steps` chunks, and the chunk indexes; nothing for the
/// streams `in_place` (already laid out in the file). Checked against the file size limit
/// at `begin`.
pub(crate) fn output_bytes_bound(layout: &StreamLayout, chunks: &[Vec<usize>], in_place: &[String]) -> u64 {
    laid_out_bytes(layout, chunks, in_place, Alignment::for_output(false), |chunk_bytes| chunk_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::DType;
    use crate::schema::{FieldSpec, StreamInfo};

    #[test]
    fn chunks_are_counted_over_every_stream_and_field() {
        let layout = StreamLayout::new(vec![FieldSpec::new("u", DType::F32, [10, 6])])
            .with_stream(StreamInfo::new("a").with_expected_frames(5))
            .with_stream(StreamInfo::new("b").with_expected_frames(3));
        // Two chunks per frame (5 rows each), one frame per chunk: 8 frames, 16 chunks.
        assert_eq!(chunk_count(&layout, &[vec![1, 5, 6]]), 16);
        let long = StreamLayout::new(vec![FieldSpec::new("u", DType::F32, [10, 6])])
            .with_stream(StreamInfo::new("a").with_expected_frames(MAX_INDEXED_CHUNKS));
        assert!(chunk_count(&long, &[vec![1, 5, 6]]) > MAX_INDEXED_CHUNKS);
    }

    #[test]
    fn the_bound_covers_every_chunk_of_every_expected_frame() {
        let layout = StreamLayout::new(vec![FieldSpec::new("u", DType::F32, [10, 6])])
            .with_stream(StreamInfo::new("a").with_expected_frames(5))
            .with_stream(StreamInfo::new("b").with_expected_frames(3));
        // Two chunks of 5 x 6 f32 per frame, two frames per chunk: 3 + 2 chunk rows.
        let bound = output_bytes_bound(&layout, &[vec![2, 5, 6]], &[]);
        assert!(output_bytes_bound(&layout, &[vec![2, 5, 6]], &["a".into(), "b".into()]) == 0);
        let chunks = (3 + 2) * 2 * (2 * 5 * 6 * 4);
        assert!(bound >= chunks + 2 * STEPS_CHUNK as u64 * 8, "{bound}");
        assert!(bound < chunks + 2 * STEPS_CHUNK as u64 * 8 + (1 << 20), "{bound}: not a tight bound");
        let open_ended = layout.clone().with_stream(StreamInfo::new("c"));
        assert!(!applies(&SinkOptions::new("x"), &open_ended));
        assert!(applies(&SinkOptions::new("x"), &layout));
        assert!(!applies(&SinkOptions::new("x").with_compression(Compression::Deflate(1)), &layout));
    }
}
