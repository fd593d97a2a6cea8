//! How the serial HDF5 sink writes an output, decided once at `begin` from the options and
//! the layout: which datasets are laid out or indexed whole, where HDF5's index nodes go,
//! and which chunks the sink writes itself with direct chunk writes (see `direct`).

use super::direct::{ChunkPlan, DirectWriter};
use super::format::chunk_shapes;
use super::preallocate::{self, MAX_INDEXED_CHUNKS};
use super::schema::{Plan, StreamSets};
use crate::error::Result;
use crate::frame::DType;
use crate::options::{Compression, SinkOptions};
use crate::schema::StreamLayout;
use crate::zfp::Encoding;

/// The write path of one output (see the module doc).
#[derive(Debug)]
pub(super) struct WritePath {
    /// Chunk shape of each field's dataset ([`Plan::chunks`]): the options' shapes, small
    /// frames packed several to a chunk when the output is laid out as [`holes`](Self::holes).
    pub chunks: Vec<Vec<usize>>,
    /// Uncompressed, and every stream's frame count known: the streams are laid out whole at
    /// `begin` (see `preallocate`).
    pub preallocated: bool,
    /// Some field arrives encoded before the sink (ZFP): its chunks are written as they
    /// arrive, with direct chunk writes (`check_layout` refuses them on a big-endian host).
    pub encoded: bool,
    /// The sink may write the compressed chunks itself ([`WritePath::direct_writer`]): deflate
    /// with one frame per chunk is compressed by the sink and written with direct chunk writes
    /// (see `direct`); frames arrive as little-endian bytes, which HDF5's native types are
    /// only on a little-endian host. So are the fields encoded before the sink.
    pub direct_candidate: bool,
    /// Compressed streams of known lengths, one frame per chunk, not too many chunks: every
    /// chunk made at `begin` (see `preallocate`, and there why not chunks of several frames).
    /// Deflate's chunks are written directly; blosc's and ZFP's through HDF5's filter, which
    /// writes a whole chunk as direct writes do: new space, then its one index entry changed
    /// in place.
    pub indexed: bool,
    /// Outputs neither laid out nor indexed at `begin` (chunks of several compressed frames,
    /// streams of unknown length) change index entries of frames already stored, in place:
    /// index nodes go on pages of their own (`swmr::Alignment`). So may appends (a continued
    /// stream that grew in its earlier run keeps growing). SWMR files order their writes
    /// themselves.
    pub index_rewritten: bool,
    /// Laid out whole with one frame a chunk: the chunks made at `begin` are fill chunks
    /// under a deflate filter that frames skip (`preallocate`), so that frames never written
    /// read as missing. The plans of those raw chunks, one per field.
    pub raw_plans: Option<Vec<Option<ChunkPlan>>>,
    /// Laid out whole otherwise (more chunks than `begin` may make, several frames a chunk,
    /// a big-endian host): the chunks are allocated as holes of the file, and small frames
    /// packed several to a chunk.
    pub holes: bool,
}

impl WritePath {
    /// The write path of `layout` written with `options`; errors when a field's chunk is past
    /// HDF5's limits.
    pub(super) fn choose(options: &SinkOptions, layout: &StreamLayout) -> Result<WritePath> {
        let chunks = chunk_shapes(layout, options.chunk_frames)?;
        let preallocated = preallocate::applies(options, layout);
        let encoded = layout.fields.iter().any(|f| f.encoding != Encoding::Values);
        let deflate_direct = cfg!(target_endian = "little")
            && matches!(options.compression, Compression::Deflate(_))
            && options.chunk_frames == 1;
        let indexed = (deflate_direct || filtered_one_frame(options, layout))
            && !encoded
            && preallocate::counts_known(options, layout)
            && preallocate::chunk_count(layout, &chunks) <= MAX_INDEXED_CHUNKS;
        let raw_plans = if preallocated { raw_plans(options, layout, &chunks) } else { None };
        let holes = preallocated && raw_plans.is_none();
        let chunks = if holes { packed(layout, &chunks) } else { chunks };
        Ok(WritePath {
            chunks,
            preallocated,
            encoded,
            direct_candidate: deflate_direct || (encoded && cfg!(target_endian = "little")),
            indexed,
            index_rewritten: (options.append || (!preallocated && !indexed)) && !options.swmr,
            raw_plans,
            holes,
        })
    }

    /// Uncompressed fields are stored as raw chunks ([`WritePath::raw_plans`]).
    pub(super) fn raw_chunks(&self) -> bool {
        self.raw_plans.is_some()
    }

    /// Bytes of the streams to lay out as holes (`preallocate`), given those continuing
    /// `in_place`.
    pub(super) fn laid_out(&self, layout: &StreamLayout, in_place: &[String]) -> u64 {
        if self.holes { preallocate::output_bytes_bound(layout, &self.chunks, in_place) } else { 0 }
    }

    /// What laying out a compressed output's chunks, or raw chunks' fill, writes at `begin`.
    pub(super) fn fill(&self, layout: &StreamLayout, in_place: &[String]) -> u64 {
        if self.indexed || self.raw_chunks() {
            preallocate::indexed_bytes_bound(layout, &self.chunks, in_place)
        } else {
            0
        }
    }

    /// How [`super::schema::create`] makes the datasets of this path, with `compression`'s
    /// filters, the streams `in_place` continuing where they are.
    pub(super) fn plan(&self, compression: Compression, in_place: Vec<String>) -> Plan {
        Plan {
            full_length: self.preallocated || self.indexed,
            early_allocation: self.preallocated || self.indexed,
            compression,
            raw_chunks: self.raw_chunks(),
            chunks: self.chunks.clone(),
            in_place,
            counts_frames: true,
        }
    }

    /// The writer of the chunks the sink writes itself, on `threads` threads, for `layout`'s
    /// `streams` as made: raw chunks of an output laid out whole, or deflate's and encoded
    /// fields' chunks; `None` when HDF5 runs the filters itself.
    pub(super) fn direct_writer(
        &self,
        layout: &StreamLayout,
        streams: &[StreamSets],
        threads: usize,
    ) -> Option<DirectWriter> {
        let first = streams.first()?;
        if let Some(plans) = &self.raw_plans {
            return Some(DirectWriter::new(plans, streams.len(), threads));
        }
        if !self.direct_candidate {
            return None;
        }
        let plans: Vec<Option<ChunkPlan>> = first
            .fields
            .iter()
            .zip(&layout.fields)
            .zip(&self.chunks)
            .map(|((ds, spec), chunk)| ChunkPlan::encoded(spec).or_else(|| ChunkPlan::new(spec, chunk, &ds.filters())))
            .collect();
        // Deflate: all fields compressed here, or none. Encoded fields always go here; HDF5
        // writes the others beside them (`write_frame_direct`).
        (self.encoded || plans.iter().all(Option::is_some)).then(|| DirectWriter::new(&plans, streams.len(), threads))
    }
}

/// Blosc, or ZFP's fixed accuracy over floats only, with one frame per chunk: compressed by
/// HDF5's filter, and indexable at `begin`.
///
/// (ZFP leaves other element types unfiltered: early allocation would lay them out whole,
/// which the space checks only count for uncompressed outputs.) Not ZFP's fixed rate, nor
/// fields encoded before the sink: HDF5 writes a filtered fill chunk for every chunk it makes
/// at `begin`, and a fixed-rate chunk of zeros is as large as any other (the whole output,
/// written before frame 0).
fn filtered_one_frame(options: &SinkOptions, layout: &StreamLayout) -> bool {
    let all_floats = layout.fields.iter().all(|f| matches!(f.dtype, DType::F32 | DType::F64));
    (options.compression.is_blosc() || (matches!(options.compression, Compression::Zfp(_)) && all_floats))
        && options.chunk_frames == 1
}

/// The raw chunk plans of an output laid out whole ([`WritePath::raw_plans`]): one frame a
/// chunk on a little-endian host, no more chunks than `begin` may make, and every field's
/// chunks raw-codable; else `None` (the output is laid out as holes).
fn raw_plans(options: &SinkOptions, layout: &StreamLayout, chunks: &[Vec<usize>]) -> Option<Vec<Option<ChunkPlan>>> {
    let fits = cfg!(target_endian = "little")
        && options.chunk_frames == 1
        && preallocate::chunk_count(layout, chunks) <= MAX_INDEXED_CHUNKS;
    if !fits {
        return None;
    }
    layout.fields.iter().zip(chunks).map(|(spec, chunk)| ChunkPlan::raw(spec, chunk).map(Some)).collect()
}

/// `chunks` packed for an output laid out as holes, to the most frames any stream expects.
fn packed(layout: &StreamLayout, chunks: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let most = layout.streams.iter().filter_map(|s| s.expected_frames).max().unwrap_or(1);
    preallocate::packed_chunks(layout, chunks, most)
}
