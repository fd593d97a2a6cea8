//! The analysis of one block of a grid split over processes ([`BlockAnalysis`]): the same
//! passes as a whole grid's (`reducer.rs`), run in three steps so that the processes can
//! combine what each found between them.
//!
//! A PDF's bins span the whole frame's min and max, which no block knows alone. So a block
//! first computes its min, max and sum ([`BlockAnalysis::statistics`], one GPU round trip);
//! the caller combines them over the blocks and gives the whole grid's back
//! ([`BlockAnalysis::set_whole`]); the block then counts its cells into the whole grid's bins,
//! each of its slices at its place in the whole grid's PDF ([`BlockAnalysis::counts`], one
//! round trip); the caller sums the counts over the blocks (blocks side by side share slices)
//! and the results go to staging behind the block's fields ([`BlockAnalysis::encode_results`]).
//! Every block then holds the whole grid's reductions: min, max and the PDF are exactly the
//! whole grid's (the same bin edges from the same min and max, computed by the same shader);
//! the sum and the mean are sums of the blocks' sums, so they differ from a whole grid's in
//! the last bits. A downsampled field is not combined: each block computes its own coarse
//! cells (its offset must be a multiple of the factor, so none straddles two blocks) and
//! stores them as its block of the coarse field, bit for bit the whole grid's.
//!
//! How the blocks talk (MPI) is the caller's: this module knows only one block.

use super::AnalysisSpec;
use super::reducer::{FieldReducer, PdfSlices, Phases};
use crate::device::GpuDevice;
use crate::error::{Error, Result};
use crate::halo::BlockSim;

/// One field's statistics over a block, or over the whole grid once combined.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockStatistics {
    /// The smallest value.
    pub min: f32,
    /// The largest value.
    pub max: f32,
    /// The sum of the values.
    pub sum: f32,
}

impl BlockStatistics {
    /// What a block that holds no value adds to a combination (a process that failed still
    /// takes part): nothing.
    pub const NONE: BlockStatistics = BlockStatistics { min: f32::INFINITY, max: f32::NEG_INFINITY, sum: 0.0 };
}

/// The analysis of [`AnalysisSpec`] on one block of a split grid; see the module docs.
pub struct BlockAnalysis {
    gpu: GpuDevice,
    /// The kernel's name, for errors.
    kernel: String,
    reducer: FieldReducer,
    /// Indices of the analysed fields among the kernel's.
    fields: Vec<usize>,
    /// Per analysed field, the block's own cells (no ghosts), contiguous, which the passes read.
    interiors: Vec<wgpu::Buffer>,
    /// What the host reads back: each field's statistics, then each field's counts.
    readback: wgpu::Buffer,
}

impl std::fmt::Debug for BlockAnalysis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockAnalysis").field("fields", &self.fields).finish()
    }
}

/// Bytes of a field's statistics in its results: min, max, mean, sum.
const STATISTICS_BYTES: u64 = 16;

impl BlockAnalysis {
    /// Compiles the passes of `spec` for `sim`'s block. Errors as the whole grid's analysis
    /// does, for a grid that is not 3-D, and when downsampling, for a block that does not start
    /// at a multiple of the factor (a coarse cell would straddle two blocks). The block's
    /// downsampled fields are its own coarse cells: the whole grid's from the block's offset
    /// divided by the factor, as many as its extent divided by the factor, rounded up.
    pub fn new(sim: &BlockSim, spec: &AnalysisSpec) -> Result<Self> {
        let kernel = &sim.spec().name;
        spec.check(kernel, sim.spec().fields.len())?;
        let block = sim.block();
        if block.global().rank() != 3 {
            return Err(Error::InvalidKernel {
                kernel: kernel.clone(),
                message: format!(
                    "the analysis of a split grid supports 3-D grids; {} is {}-D (block sinks tell the whole grid's \
                     reductions from the blocks of fields by their number of axes, which a 1-D grid's bin edges share)",
                    block.global(),
                    block.global().rank()
                ),
            });
        }
        let k = spec.factor();
        if !spec.starts_coarse_cells(block.offset()) {
            return Err(Error::InvalidKernel {
                kernel: kernel.clone(),
                message: format!(
                    "analysis.downsample = {k} on a grid split over processes needs every block to start at a \
                     multiple of {k} on every axis, so that each coarse cell lies in one block; the block at {:?} \
                     does not: choose a decomposition whose blocks do, or another factor",
                    block.offset()
                ),
            });
        }
        let gpu = sim.gpu().clone();
        let cell_bytes = (block.cells() * 4) as u64;
        let interiors: Vec<wgpu::Buffer> = gpu.scoped("allocating the block's analysis buffers", |device| {
            spec.fields
                .iter()
                .map(|_| {
                    device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("analysed block"),
                        size: cell_bytes,
                        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                        mapped_at_creation: false,
                    })
                })
                .collect()
        })?;
        let buffers: Vec<[&wgpu::Buffer; 2]> = interiors.iter().map(|b| [b, b]).collect();
        let pdf = PdfSlices { first: block.offset()[0] as u64, total: block.global().shape()[0] as u64 };
        let reducer = FieldReducer::over(&gpu, kernel, block.grid(), &buffers, spec, pdf)?;
        let per_field = STATISTICS_BYTES.max(reducer.pdf_bytes);
        let readback = gpu.scoped("allocating the block's analysis readback", |device| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("analysis readback"),
                size: per_field * interiors.len() as u64,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })?;
        Ok(BlockAnalysis { gpu, kernel: kernel.clone(), reducer, fields: spec.fields.clone(), interiors, readback })
    }

    /// Bytes the analysis adds behind the block's fields in a frame: the whole grid's
    /// reductions ([`AnalysisSpec::outputs`] of the whole grid), but the downsampled fields,
    /// which hold the block's coarse cells.
    pub fn frame_bytes(&self) -> u64 {
        self.reducer.frame_bytes()
    }

    /// How many fields are analysed.
    pub fn fields(&self) -> usize {
        self.fields.len()
    }

    /// Counts of each field's PDF: the whole grid's slices × bins (0 without a PDF).
    pub fn pdf_len(&self) -> usize {
        (self.reducer.pdf_bytes / 4) as usize
    }

    /// The block's statistics of each analysed field, as `sim` holds it now (after the
    /// frame's steps): one GPU round trip.
    pub fn statistics(&self, sim: &BlockSim) -> Result<Vec<BlockStatistics>> {
        let mut encoder = self.gpu.device().create_command_encoder(&Default::default());
        for (&f, interior) in self.fields.iter().zip(&self.interiors) {
            sim.encode_block_copy(&mut encoder, &[f], interior);
        }
        self.reducer.encode_passes(
            &mut encoder,
            0,
            Phases { statistics: true, edges: false, counts: false, downsample: false },
        );
        for (i, field) in self.reducer.fields.iter().enumerate() {
            encoder.copy_buffer_to_buffer(
                &field.result,
                0,
                &self.readback,
                i as u64 * STATISTICS_BYTES,
                STATISTICS_BYTES,
            );
        }
        let words: Vec<f32> = self.read(encoder, self.fields.len() as u64 * STATISTICS_BYTES)?;
        Ok(words.chunks_exact(4).map(|w| BlockStatistics { min: w[0], max: w[1], sum: w[3] }).collect())
    }

    /// Gives the block the whole grid's statistics of each field (combined over the blocks),
    /// for its results and the PDF's bins; `cells`: the whole grid's, for the mean.
    pub fn set_whole(&self, whole: &[BlockStatistics], cells: u64) -> Result<()> {
        if whole.len() != self.fields.len() {
            return Err(self.mismatch(format!("{} fields' statistics", whole.len())));
        }
        for (s, field) in whole.iter().zip(&self.reducer.fields) {
            let mean = (f64::from(s.sum) / cells.max(1) as f64) as f32;
            self.gpu.queue().write_buffer(&field.result, 0, bytemuck::cast_slice(&[s.min, s.max, mean, s.sum]));
        }
        Ok(())
    }

    /// The block's counts of each field's PDF in the whole grid's bins (after
    /// [`BlockAnalysis::set_whole`]), laid out as the whole grid's PDF, zero outside the
    /// block's slices: one GPU round trip (none without a PDF). Reads the block copied by
    /// [`BlockAnalysis::statistics`].
    pub fn counts(&self) -> Result<Vec<Vec<u32>>> {
        let len = self.pdf_len();
        if len == 0 {
            return Ok(vec![Vec::new(); self.fields.len()]);
        }
        let mut encoder = self.gpu.device().create_command_encoder(&Default::default());
        self.reducer.encode_passes(
            &mut encoder,
            0,
            Phases { statistics: false, edges: true, counts: true, downsample: false },
        );
        let bytes = self.reducer.pdf_bytes;
        for (i, field) in self.reducer.fields.iter().enumerate() {
            encoder.copy_buffer_to_buffer(&field.result, self.reducer.pdf_at, &self.readback, i as u64 * bytes, bytes);
        }
        let counts: Vec<u32> = self.read(encoder, self.fields.len() as u64 * bytes)?;
        Ok(counts.chunks_exact(len).map(<[u32]>::to_vec).collect())
    }

    /// Puts the whole grid's counts of each field (summed over the blocks) into the results,
    /// records the block's downsampling, then the copy of the results into `staging` from byte
    /// `at`, field after field, as a whole grid's frame lays them out (a downsampled field
    /// holding the block's coarse cells).
    pub fn encode_results(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        counts: &[Vec<u32>],
        staging: &wgpu::Buffer,
        at: u64,
    ) -> Result<()> {
        let len = self.pdf_len();
        if counts.len() != self.fields.len() || counts.iter().any(|c| c.len() != len) {
            return Err(self.mismatch(format!("{} fields' counts", counts.len())));
        }
        if len > 0 {
            for (c, field) in counts.iter().zip(&self.reducer.fields) {
                self.gpu.queue().write_buffer(&field.result, self.reducer.pdf_at, bytemuck::cast_slice(c));
            }
        }
        // The block's part of each downsampled field (its coarse cells lie in the block, whose
        // offset is a multiple of the factor), from the block copied by `statistics`.
        if self.reducer.downsamples() {
            let downsample = Phases { statistics: false, edges: false, counts: false, downsample: true };
            self.reducer.encode_passes(encoder, 0, downsample);
        }
        self.reducer.encode_copy(encoder, staging, at);
        Ok(())
    }

    /// A caller's combination that does not fit this analysis.
    fn mismatch(&self, given: String) -> Error {
        Error::InvalidKernel {
            kernel: self.kernel.clone(),
            message: format!(
                "its block's analysis was given {given}: give one per analysed field ({}), with {} counts each",
                self.fields.len(),
                self.pdf_len()
            ),
        }
    }

    /// Submits `encoder`, which fills the first `bytes` of the readback buffer, and reads
    /// them as 4-byte values.
    fn read<T: bytemuck::Pod>(&self, encoder: wgpu::CommandEncoder, bytes: u64) -> Result<Vec<T>> {
        self.gpu.submit_and_read(encoder, &self.readback, |view| bytemuck::pod_collect_to_vec(&view[..bytes as usize]))
    }
}
