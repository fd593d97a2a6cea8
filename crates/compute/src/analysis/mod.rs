//! Analysis on the device: per-frame reductions of a kernel's fields (min, max, mean, sum),
//! their PDFs per slice along the slowest axis, and downsampled copies, computed in the
//! frame's command buffer after its steps and read back with the frame, so that a run can
//! store a few kilobytes of statistics per frame instead of (or beside) its full fields.
//!
//! This module owns what the reductions are: their names (`u_min`, `u_pdf`, ...), their
//! order in a frame, their shapes and their element types. The runner turns
//! [`AnalysisSpec::outputs`] into the storage layout; `reducer.rs` computes them.
//!
//! The PDF is the ADIOS2 Gray-Scott tutorial's: `bins` bins between the frame's min and max
//! (the whole frame's, the same for every slice), bin width w = (max − min) / bins, left
//! edges min + i·w, a value x counted in bin floor((x − min) / w), the maximum in the last
//! bin, and a constant frame (w = 0) with every value in bin bins / 2.

mod block;
pub(crate) mod reducer;

pub use block::{BlockAnalysis, BlockStatistics};

use crate::error::{Error, Result};
use crate::grid::Grid;

/// The most PDF bins: one workgroup's histogram lives in workgroup memory (4 bytes a bin,
/// within WebGPU's default 16 KiB).
pub const MAX_PDF_BINS: u32 = 2048;

/// What to compute for each frame, on the device.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AnalysisSpec {
    /// Indices of the kernel's fields to reduce (any field of the kernel, stored or not).
    pub fields: Vec<usize>,
    /// Bins of each field's PDF per slice along the slowest axis; 0: no PDF.
    pub pdf_bins: u32,
    /// Downsampling factor along each axis (a coarse cell is the mean of a k × k (× k) block);
    /// 0 or 1: none.
    pub downsample: u32,
}

/// One array the analysis adds to each frame, per analysed field.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reduction {
    /// The field's smallest value (f32, one per frame).
    Min,
    /// The field's largest value (f32, one per frame).
    Max,
    /// The mean of the field's values (f32, one per frame).
    Mean,
    /// The sum of the field's values (f32, one per frame).
    Sum,
    /// The PDF's left bin edges (f32, `[bins]`).
    Bins,
    /// The PDF's counts per slice along the slowest axis (u32, `[slices, bins]`).
    Pdf,
    /// The field downsampled (f32, the grid's shape divided by the factor, rounded up).
    Downsampled,
}

impl Reduction {
    /// Every reduction, in the order [`AnalysisSpec::outputs`] lays out a field's.
    pub const ALL: [Reduction; 7] = [
        Reduction::Min,
        Reduction::Max,
        Reduction::Mean,
        Reduction::Sum,
        Reduction::Bins,
        Reduction::Pdf,
        Reduction::Downsampled,
    ];

    /// The reductions of one value per frame, which conditions (`output.when`) compare.
    pub const SCALAR: [Reduction; 4] = [Reduction::Min, Reduction::Max, Reduction::Mean, Reduction::Sum];

    /// The suffix of the stored array's name: `FIELD_min`, `FIELD_pdf`, ...
    pub fn suffix(self) -> &'static str {
        match self {
            Reduction::Min => "min",
            Reduction::Max => "max",
            Reduction::Mean => "mean",
            Reduction::Sum => "sum",
            Reduction::Bins => "bins",
            Reduction::Pdf => "pdf",
            Reduction::Downsampled => "ds",
        }
    }

    /// The name of this reduction of `field` in the output (`u_min`, `v_pdf`, ...): the one
    /// naming rule of analysis outputs, which triggers (`u_max > 0.3`) also use.
    pub fn name(self, field: &str) -> String {
        format!("{field}_{}", self.suffix())
    }

    /// Whether the values are counts (u32) rather than f32.
    pub fn is_count(self) -> bool {
        self == Reduction::Pdf
    }
}

/// One array of one analysed field, as it follows the fields in each frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnalysisOutput {
    /// Index of the analysed field among the kernel's fields.
    pub field: usize,
    /// What it holds.
    pub reduction: Reduction,
    /// Its shape per frame (empty: one value).
    pub shape: Vec<usize>,
}

impl AnalysisOutput {
    /// Bytes per frame (every element is 4 bytes).
    pub fn bytes(&self) -> usize {
        self.shape.iter().product::<usize>() * 4
    }
}

impl AnalysisSpec {
    /// Whether there is anything to compute.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The downsampling factor, 1 when none.
    pub fn factor(&self) -> usize {
        self.downsample.max(1) as usize
    }

    /// Whether a block of a split grid starting at `offset` holds whole coarse cells: its
    /// offset is a multiple of the factor on every axis, so that no coarse cell straddles two
    /// blocks and each block downsamples its own.
    pub fn starts_coarse_cells(&self, offset: &[usize]) -> bool {
        offset.iter().all(|o| o % self.factor() == 0)
    }

    /// The shape of the downsampled field on `grid`: each axis divided by the factor, rounded
    /// up (the last block of an axis may be partial).
    pub fn coarse_shape(&self, grid: &Grid) -> Vec<usize> {
        grid.shape().iter().map(|n| n.div_ceil(self.factor())).collect()
    }

    /// Every array the analysis adds to a frame on `grid`, in frame order: per analysed
    /// field, its min, max, mean and sum, then (with a PDF) its bin edges and counts, then
    /// (when downsampling) its coarse copy.
    pub fn outputs(&self, grid: &Grid) -> Vec<AnalysisOutput> {
        let mut out = Vec::new();
        let bins = self.pdf_bins as usize;
        for &field in &self.fields {
            for reduction in Reduction::SCALAR {
                out.push(AnalysisOutput { field, reduction, shape: Vec::new() });
            }
            if bins > 0 {
                out.push(AnalysisOutput { field, reduction: Reduction::Bins, shape: vec![bins] });
                out.push(AnalysisOutput { field, reduction: Reduction::Pdf, shape: vec![grid.shape()[0], bins] });
            }
            if self.factor() > 1 {
                out.push(AnalysisOutput { field, reduction: Reduction::Downsampled, shape: self.coarse_shape(grid) });
            }
        }
        out
    }

    /// Bytes the analysis adds to each frame on `grid`.
    pub fn frame_bytes(&self, grid: &Grid) -> usize {
        self.outputs(grid).iter().map(AnalysisOutput::bytes).sum()
    }

    /// Errors unless the spec fits a kernel of `kernel_fields` fields (named `kernel` in
    /// messages): known field indices, each once, at most [`MAX_PDF_BINS`] bins.
    pub fn check(&self, kernel: &str, kernel_fields: usize) -> Result<()> {
        let invalid = |message: String| Err(Error::InvalidKernel { kernel: kernel.to_owned(), message });
        if let Some(bad) = self.fields.iter().find(|&&f| f >= kernel_fields) {
            return invalid(format!(
                "analysis field index {bad} is out of range: the kernel has {kernel_fields} fields"
            ));
        }
        if let Some((i, f)) = self.fields.iter().enumerate().find(|(i, f)| self.fields[..*i].contains(f)) {
            return invalid(format!("analysis field index {f} is listed twice (at {i}): list each field once"));
        }
        if self.pdf_bins > MAX_PDF_BINS {
            return invalid(format!(
                "analysis.pdf_bins = {} is more than {MAX_PDF_BINS}, the most one workgroup's histogram holds",
                self.pdf_bins
            ));
        }
        Ok(())
    }
}
