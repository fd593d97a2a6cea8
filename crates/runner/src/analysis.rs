//! A run's analysis on the device, by field name: what `[analysis]` and
//! [`crate::PipelineBuilder::analysis`] ask for, resolved against the kernel (its field
//! indices, for [`wgpipe_compute::AnalysisSpec`]) and laid out as fields of the stored frames
//! (names, types, shapes and axis names of [`wgpipe_compute::AnalysisSpec::outputs`]).

use wgpipe_compute::{AnalysisSpec, Grid, KernelSpec, Reduction};
use wgpipe_storage::{DType, FieldSpec};

use crate::error::{Error, Result};

/// Name of the PDF's bin axis in the stored arrays.
pub const BIN_DIM: &str = "bin";

/// Per-frame reductions of a kernel's fields, computed on the device before readback and
/// stored beside the fields: for each field `F`, `F_min`, `F_max`, `F_mean`, `F_sum` (one
/// value per frame), with [`Analysis::pdf_bins`] the PDF per slice along the slowest axis
/// (`F_pdf`, counts shaped `[slices, bins]`, and `F_bins`, the left bin edges), with
/// [`Analysis::downsample`] the field averaged over blocks (`F_ds`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Analysis {
    /// The kernel's fields to reduce, stored or not.
    pub fields: Vec<String>,
    /// Bins of each PDF; 0: no PDF.
    pub pdf_bins: u32,
    /// Block size along each axis of the downsampled fields; 0 or 1: none.
    pub downsample: u32,
}

impl Analysis {
    /// Reductions of `fields`, without PDFs or downsampling.
    pub fn of<S: Into<String>>(fields: impl IntoIterator<Item = S>) -> Self {
        Analysis { fields: fields.into_iter().map(Into::into).collect(), pdf_bins: 0, downsample: 0 }
    }

    /// Adds each field's PDF of `bins` bins per slice (the ADIOS2 tutorial uses 100).
    pub fn with_pdf(mut self, bins: u32) -> Self {
        self.pdf_bins = bins;
        self
    }

    /// Adds each field averaged over blocks of `k` cells along each axis.
    pub fn with_downsample(mut self, k: u32) -> Self {
        self.downsample = k;
        self
    }

    /// Whether nothing is analysed.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Whether `name` is one of the arrays this analysis adds to a frame (`u_min`, `v_pdf`,
    /// ...), by the one naming rule, [`Reduction::name`].
    pub fn is_reduction(&self, name: &str) -> bool {
        self.fields.iter().any(|f| Reduction::ALL.iter().any(|r| r.name(f) == name))
    }

    /// The names of the reductions with one value per frame (`u_min`, `u_max`, `u_mean`,
    /// `u_sum`, ...): what a condition (`output.when`) may compare.
    pub fn scalar_names(&self) -> Vec<String> {
        self.fields.iter().flat_map(|f| Reduction::SCALAR.map(|r| r.name(f))).collect()
    }

    /// The device's spec for `kernel`: field names to indices; errors name an unknown field
    /// and the kernel's fields.
    pub fn spec(&self, kernel: &KernelSpec) -> Result<AnalysisSpec> {
        let fields = kernel.field_indices(&self.fields).map_err(|e| Error::Invalid(format!("analysis: {e}")))?;
        let spec = AnalysisSpec { fields, pdf_bins: self.pdf_bins, downsample: self.downsample };
        spec.check(&kernel.name, kernel.fields.len()).map_err(|e| Error::Invalid(e.to_string()))?;
        Ok(spec)
    }

    /// The stored arrays the analysis adds to each frame of `kernel` on `grid` whose fields
    /// have axes `dims`, in frame order.
    pub fn stored_fields(&self, kernel: &KernelSpec, grid: &Grid, dims: &[String]) -> Result<Vec<FieldSpec>> {
        let spec = self.spec(kernel)?;
        let coarse_dims: Vec<String> = dims.iter().map(|d| format!("{d}_ds")).collect();
        Ok(spec
            .outputs(grid)
            .into_iter()
            .map(|o| {
                let field = &kernel.fields[o.field];
                let dtype = if o.reduction.is_count() { DType::U32 } else { DType::F32 };
                let spec = FieldSpec::new(o.reduction.name(field), dtype, o.shape);
                let (axes, long_name): (Vec<String>, String) = match o.reduction {
                    Reduction::Bins => (vec![BIN_DIM.to_owned()], format!("left edges of the bins of {field}_pdf")),
                    Reduction::Pdf => (
                        vec![dims[0].clone(), BIN_DIM.to_owned()],
                        format!("counts of {field} per bin, per {} slice", dims[0]),
                    ),
                    Reduction::Downsampled => (coarse_dims.clone(), format!("{field} averaged over blocks")),
                    other => (Vec::new(), format!("{} of {field}", other.suffix())),
                };
                spec.with_dims(axes).with_long_name(long_name)
            })
            .collect())
    }
}
