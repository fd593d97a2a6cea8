//! The GPU passes of [`super::AnalysisSpec`] for one [`FieldSim`]: per analysed field, a
//! strided min/max/sum per invocation, one workgroup folding those into the statistics and the
//! bin edges, a histogram per slice (workgroup-local counts, then one atomic add per bin), and
//! the downsampling; all recorded after the frame's steps, the results copied into staging
//! behind the fields (reduce.wgsl says how a field's results are laid out).

use super::AnalysisSpec;
use crate::device::GpuDevice;
use crate::error::{Error, Result};
use crate::field_sim::FieldSim;
use crate::grid::Grid;
use crate::pipeline::{compute_pipeline, wgsl_module};

const SHADER: &str = include_str!("reduce.wgsl");
/// Invocations per workgroup of the reduction and histogram passes (`WG` in the shader).
const WG: u64 = 256;
/// Most workgroups of the first reduction pass: 64 × 256 invocations fill a large GPU, and
/// one workgroup folds their 16 384 partials in 64 reads an invocation.
const MAX_GROUPS: u64 = 64;
/// Fewest cells an invocation of the first pass reduces: fewer partials for small grids.
const CELLS_PER_INVOCATION: u64 = 64;
/// Cells each invocation of the histogram pass counts: whole quads (see reduce.wgsl). 16, not
/// 8 or 32: at 64³ one workgroup then counts one z slice, and on lavapipe both 8 and 32 (with
/// scalar loads) cost more (`cargo xtask bench analysis-cost`).
const ITEMS: u64 = 16;
/// Invocations per workgroup of the downsampling pass.
const DS_WG: u64 = 64;

/// The reductions of one field.
pub(crate) struct FieldPasses {
    /// Per side of the field's ping-pong pair: the bind groups of the passes that read it.
    partial: [wgpu::BindGroup; 2],
    histogram: Option<[wgpu::BindGroup; 2]>,
    downsample: Option<[wgpu::BindGroup; 2]>,
    finish: wgpu::BindGroup,
    /// The bin edges from the min and max in `result` (a block's: the whole grid's).
    edges: Option<wgpu::BindGroup>,
    pub(crate) result: wgpu::Buffer,
}

/// Where a grid's PDF slices lie in the PDF the reducer lays out: a whole grid's are all of
/// it; a block of a split grid counts its slices into the whole grid's PDF from `first`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PdfSlices {
    /// The grid's first slice in the PDF.
    pub first: u64,
    /// Slices of the PDF (the whole grid's along its slowest axis).
    pub total: u64,
}

/// The compiled passes and per-field buffers of an analysis.
pub(crate) struct FieldReducer {
    partial: wgpu::ComputePipeline,
    finish: wgpu::ComputePipeline,
    histogram: Option<wgpu::ComputePipeline>,
    downsample: Option<wgpu::ComputePipeline>,
    edges: Option<wgpu::ComputePipeline>,
    pub(crate) fields: Vec<FieldPasses>,
    groups: u32,
    histogram_groups: [u32; 2],
    downsample_groups: [u32; 2],
    /// Where the counts start in a field's results, and how many bytes they take.
    pub(crate) pdf_at: u64,
    pub(crate) pdf_bytes: u64,
    /// Bytes of one field's results.
    result_bytes: u64,
}

/// `x` as a dispatch size of at most `max` workgroups, else an error naming `what`.
fn dispatch(x: u64, max: u64, what: &str, kernel: &str) -> Result<u32> {
    u32::try_from(x).ok().filter(|&n| u64::from(n) <= max).ok_or_else(|| Error::InvalidKernel {
        kernel: kernel.to_owned(),
        message: format!(
            "{what} needs {x} workgroups along one axis, more than the device's {max}: use a smaller grid"
        ),
    })
}

/// The field's binding and its readers `cell` and `quad` (reduce.wgsl): a `vec4` array when
/// the field's cells and a slice's are multiples of 4, so that each quad is one load; else
/// scalars, four loads a quad (reads past the field clamped to its last cell, which the
/// passes leave out by `PARTIAL_QUADS`).
fn field_binding(cells: u64, slice: u64) -> String {
    let whole = cells.is_multiple_of(4) && slice.is_multiple_of(4);
    let binding = "@group(0) @binding(0) var<storage, read> field: ";
    if whole {
        format!(
            "const PARTIAL_QUADS: bool = false;\n{binding}array<vec4<f32>>;\n\
             fn cell(i: u32) -> f32 {{ return field[i / 4u][i % 4u]; }}\n\
             fn quad(j: u32) -> vec4<f32> {{ return field[j / 4u]; }}\n"
        )
    } else {
        format!(
            "const PARTIAL_QUADS: bool = true;\n{binding}array<f32>;\n\
             fn cell(i: u32) -> f32 {{ return field[i]; }}\n\
             fn quad(j: u32) -> vec4<f32> {{\n\
             \x20   let last = CELLS - 1u;\n\
             \x20   return vec4<f32>(field[min(j, last)], field[min(j + 1u, last)], field[min(j + 2u, last)], \
             field[min(j + 3u, last)]);\n}}\n"
        )
    }
}

/// The error of an analysis of `cells`-cell fields whose results take `result_words` words,
/// past 32-bit indices.
fn too_large(kernel: &str, cells: u64, result_words: u64) -> Error {
    Error::InvalidKernel {
        kernel: kernel.to_owned(),
        message: format!(
            "the analysis of a {cells}-cell field needs {result_words} words per frame, more than 32-bit \
             indices reach: use fewer bins or a larger analysis.downsample"
        ),
    }
}

/// The downsampling factor `k` along each of `grid`'s axes `[x, y, z]`: the factor applies
/// along the grid's own axes (a 2-D grid is not coarsened along z). Errors for a factor
/// larger than the longest axis.
fn downsample_factors(kernel: &str, grid: &Grid, k: u64) -> Result<[u64; 3]> {
    let longest = grid.shape().iter().copied().max().unwrap_or(1) as u64;
    if k > longest {
        return Err(Error::InvalidKernel {
            kernel: kernel.to_owned(),
            message: format!(
                "analysis downsampling by {k} on the grid {:?}: a block larger than the longest axis ({longest}) \
                 is the whole grid; use at most {longest}",
                grid.shape()
            ),
        });
    }
    let rank = grid.rank();
    Ok([k, if rank >= 2 { k } else { 1 }, if rank >= 3 { k } else { 1 }])
}

/// An analysis laid over one grid: the sizes its shader is specialised for, its dispatches,
/// and where a field's results lie (in 32-bit words).
struct Geometry {
    cells: u64,
    slices: u64,
    /// Cells of one slice (along the grid's slowest axis).
    slice: u64,
    bins: u64,
    /// The grid's axes `[nx, ny, nz]`.
    axes: [u64; 3],
    /// The downsampling factor along each axis ([`downsample_factors`]).
    factors: [u64; 3],
    /// The downsampled grid's axes.
    coarse_axes: [u64; 3],
    /// Workgroups of the first reduction pass.
    groups: u64,
    histogram_groups: [u32; 2],
    downsample_groups: [u32; 2],
    /// Invocations of one row of the downsampling dispatch.
    downsample_row: u64,
    /// Where the bin edges, the counts and the downsampled field start in a field's results.
    bins_at: u64,
    pdf_at: u64,
    ds_at: u64,
    /// Words of one field's results.
    result_words: u64,
    /// The grid's first slice in the PDF.
    pdf_first: u64,
}

impl Geometry {
    /// The geometry of `spec` over `grid` on `gpu`, its slices counted into `pdf`; errors
    /// name `kernel`.
    fn new(gpu: &GpuDevice, kernel: &str, grid: &Grid, spec: &AnalysisSpec, pdf: PdfSlices) -> Result<Self> {
        let max_dim = u64::from(gpu.device().limits().max_compute_workgroups_per_dimension.max(1));
        let cells = grid.cells() as u64;
        let slices = grid.shape()[0] as u64;
        let slice = cells / slices;
        let bins = u64::from(spec.pdf_bins);
        let k = spec.factor() as u64;
        let factors = downsample_factors(kernel, grid, k)?;
        let axes = [grid.nx() as u64, grid.ny() as u64, grid.nz() as u64];
        let coarse_axes = [0, 1, 2].map(|i| axes[i].div_ceil(factors[i]));
        let coarse = if k > 1 { coarse_axes.iter().product() } else { 0 };
        let groups = cells.div_ceil(WG * CELLS_PER_INVOCATION).clamp(1, MAX_GROUPS);
        let histogram_groups = if bins > 0 {
            [
                dispatch(slice.div_ceil(WG * ITEMS), max_dim, "the PDF of one slice", kernel)?,
                dispatch(slices, max_dim, "the PDF's slices", kernel)?,
            ]
        } else {
            [0, 0]
        };
        let ds_groups = coarse.div_ceil(DS_WG).max(1);
        let ds_x = ds_groups.min(max_dim);
        let downsample_groups = [
            dispatch(ds_x, max_dim, "downsampling", kernel)?,
            dispatch(ds_groups.div_ceil(ds_x), max_dim, "downsampling", kernel)?,
        ];
        let (bins_at, pdf_at) = (4, 4 + bins);
        let ds_at = pdf_at + pdf.total * bins;
        let result_words = ds_at + coarse;
        if u32::try_from(result_words).is_err() {
            return Err(too_large(kernel, cells, result_words));
        }
        if pdf.first + slices > pdf.total {
            return Err(Error::InvalidKernel {
                kernel: kernel.to_owned(),
                message: format!(
                    "the grid's {slices} PDF slices from slice {} overrun the PDF's {}",
                    pdf.first, pdf.total
                ),
            });
        }
        let downsample_row = ds_x * DS_WG;
        Ok(Geometry {
            cells,
            slices,
            slice,
            bins,
            axes,
            factors,
            coarse_axes,
            groups,
            histogram_groups,
            downsample_groups,
            downsample_row,
            bins_at,
            pdf_at,
            ds_at,
            result_words,
            pdf_first: pdf.first,
        })
    }

    /// reduce.wgsl specialised for this geometry: its constants, then the field's binding
    /// ([`field_binding`]), then the shader.
    fn shader_source(&self) -> String {
        let [nx, ny, nz] = self.axes;
        let [kx, ky, kz] = self.factors;
        let [cnx, cny, cnz] = self.coarse_axes;
        let bins = self.bins;
        let constants = [
            ("CELLS", self.cells),
            ("QUADS", self.cells.div_ceil(4)),
            ("SLICES", self.slices),
            ("SLICE", self.slice),
            ("BINS", bins),
            ("LOCAL_BINS", bins.max(1)),
            ("LAST_BIN", bins.max(1) - 1),
            ("GROUPS", self.groups),
            ("ITEMS", ITEMS),
            ("BINS_AT", self.bins_at),
            ("PDF_AT", self.pdf_at),
            ("PDF_SLICE0", self.pdf_first),
            ("DS_AT", self.ds_at),
            ("NX", nx),
            ("NY", ny),
            ("NZ", nz),
            ("KX", kx),
            ("KY", ky),
            ("KZ", kz),
            ("CNX", cnx),
            ("CNY", cny),
            ("CNZ", cnz),
            ("DS_ROW", self.downsample_row),
        ];
        let mut source: String = constants.iter().map(|(name, v)| format!("const {name}: u32 = {v}u;\n")).collect();
        source.push_str(&field_binding(self.cells, self.slice));
        source.push_str(SHADER);
        source
    }
}

/// The compiled passes of an analysis: those its PDF and its downsampling need.
struct Pipelines {
    partial: wgpu::ComputePipeline,
    finish: wgpu::ComputePipeline,
    histogram: Option<wgpu::ComputePipeline>,
    downsample: Option<wgpu::ComputePipeline>,
    edges: Option<wgpu::ComputePipeline>,
}

impl Pipelines {
    /// Compiles `source`'s passes, the PDF's with `pdf` and the downsampling with `downsample`.
    /// Each pass binds only some of the shader's buffers, so each takes the layout wgpu
    /// derives from its entry point.
    fn new(device: &wgpu::Device, source: &str, pdf: bool, downsample: bool) -> Self {
        let module = wgsl_module(device, "analysis", source);
        let pipeline = |entry: &str| compute_pipeline(device, &module, None, entry, entry, &[]);
        Pipelines {
            partial: pipeline("partial"),
            finish: pipeline("finish"),
            histogram: pdf.then(|| pipeline("histogram")),
            downsample: downsample.then(|| pipeline("downsample")),
            edges: pdf.then(|| pipeline("edges")),
        }
    }

    /// The passes of one field over `sides` (its buffer read at even and at odd sides), with
    /// partials of `partial_bytes` and results of `result_bytes` of its own.
    fn field(
        &self,
        device: &wgpu::Device,
        sides: &[&wgpu::Buffer; 2],
        partial_bytes: u64,
        result_bytes: u64,
    ) -> FieldPasses {
        let result = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("analysis results"),
            size: result_bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        // One per field, so that the fields' passes of a phase share no buffer and the GPU
        // can run them side by side (`encode_passes`).
        let partials = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("analysis partials"),
            size: partial_bytes,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        let bind = |pipeline: &wgpu::ComputePipeline, entries: &[(u32, &wgpu::Buffer)]| {
            bind_buffers(device, pipeline, entries)
        };
        FieldPasses {
            partial: sides.map(|f| bind(&self.partial, &[(0, f), (1, &partials)])),
            histogram: self.histogram.as_ref().map(|p| sides.map(|f| bind(p, &[(0, f), (3, &result)]))),
            downsample: self.downsample.as_ref().map(|p| sides.map(|f| bind(p, &[(0, f), (2, &result)]))),
            finish: bind(&self.finish, &[(1, &partials), (2, &result)]),
            edges: self.edges.as_ref().map(|p| bind(p, &[(2, &result)])),
            result,
        }
    }
}

/// A bind group of `pipeline`'s group 0 with each of `entries`' buffers at its binding.
fn bind_buffers(
    device: &wgpu::Device,
    pipeline: &wgpu::ComputePipeline,
    entries: &[(u32, &wgpu::Buffer)],
) -> wgpu::BindGroup {
    let entries: Vec<wgpu::BindGroupEntry<'_>> = entries
        .iter()
        .map(|(binding, buffer)| wgpu::BindGroupEntry { binding: *binding, resource: buffer.as_entire_binding() })
        .collect();
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("analysis"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    })
}

impl FieldReducer {
    /// Compiles the passes of `spec` for `sim`'s grid (checked by [`AnalysisSpec::check`]).
    pub(crate) fn new(sim: &FieldSim, spec: &AnalysisSpec) -> Result<Self> {
        let kernel = &sim.spec().name;
        spec.check(kernel, sim.spec().fields.len())?;
        let field_buffers: Vec<[&wgpu::Buffer; 2]> = spec
            .fields
            .iter()
            .map(|&f| match (sim.side_buffer(f, 0), sim.side_buffer(f, 1)) {
                (Some(a), Some(b)) => Ok([a, b]),
                _ => Err(Error::InvalidKernel {
                    kernel: kernel.clone(),
                    message: format!("analysis field index {f} is out of range"),
                }),
            })
            .collect::<Result<_>>()?;
        let pdf = PdfSlices { first: 0, total: sim.grid().shape()[0] as u64 };
        Self::over(sim.gpu(), kernel, sim.grid(), &field_buffers, spec, pdf)
    }

    /// Compiles the passes of `spec` over `field_buffers` (per analysed field, its buffer read
    /// at even and at odd sides) holding `grid`'s cells, on `gpu`; `kernel` names it in errors.
    pub(crate) fn over(
        gpu: &GpuDevice,
        kernel: &str,
        grid: &Grid,
        field_buffers: &[[&wgpu::Buffer; 2]],
        spec: &AnalysisSpec,
        pdf: PdfSlices,
    ) -> Result<Self> {
        let geometry = Geometry::new(gpu, kernel, grid, spec, pdf)?;
        let source = geometry.shader_source();
        let result_bytes = geometry.result_words * 4;
        let built = gpu.scoped("compiling the analysis passes", |device| {
            let pipelines = Pipelines::new(device, &source, geometry.bins > 0, spec.factor() > 1);
            let partial_bytes = geometry.groups * WG * 16;
            let fields: Vec<FieldPasses> =
                field_buffers.iter().map(|sides| pipelines.field(device, sides, partial_bytes, result_bytes)).collect();
            (pipelines, fields)
        })?;
        let (Pipelines { partial, finish, histogram, downsample, edges }, fields) = built;
        Ok(FieldReducer {
            partial,
            finish,
            histogram,
            downsample,
            edges,
            fields,
            groups: u32::try_from(geometry.groups)
                .map_err(|_| too_large(kernel, geometry.cells, geometry.result_words))?,
            histogram_groups: geometry.histogram_groups,
            downsample_groups: geometry.downsample_groups,
            pdf_at: geometry.pdf_at * 4,
            pdf_bytes: pdf.total * geometry.bins * 4,
            result_bytes,
        })
    }

    /// Whether the fields are downsampled (a factor above 1).
    pub(crate) fn downsamples(&self) -> bool {
        self.downsample.is_some()
    }

    /// Bytes the analysis adds behind the fields in staging.
    pub(crate) fn frame_bytes(&self) -> u64 {
        self.result_bytes * self.fields.len() as u64
    }

    /// Records every pass over side `side` of the fields, then copies the results into
    /// `staging` from byte `at`, field after field.
    pub(crate) fn encode(&self, encoder: &mut wgpu::CommandEncoder, side: usize, staging: &wgpu::Buffer, at: u64) {
        self.encode_passes(encoder, side, Phases { statistics: true, edges: false, counts: true, downsample: true });
        self.encode_copy(encoder, staging, at);
    }

    /// Records the passes of `phases` over side `side` of the fields, in one compute pass;
    /// the counts are zeroed first.
    pub(crate) fn encode_passes(&self, encoder: &mut wgpu::CommandEncoder, side: usize, phases: Phases) {
        let side = side % 2;
        if phases.counts && self.pdf_bytes > 0 {
            for field in &self.fields {
                encoder.clear_buffer(&field.result, self.pdf_at, Some(self.pdf_bytes));
            }
        }
        let mut pass = encoder
            .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("analysis"), timestamp_writes: None });
        // Phase by phase, every field's dispatch of a phase one after the other: they share
        // no buffer, so no barrier separates them and a GPU runs them side by side (the
        // dispatches of a 64³ frame's analysis are too small to fill it one by one).
        let each = |pass: &mut wgpu::ComputePass<'_>,
                    pipeline: Option<&wgpu::ComputePipeline>,
                    group: &dyn Fn(&FieldPasses) -> Option<&wgpu::BindGroup>,
                    groups: [u32; 2]| {
            let Some(pipeline) = pipeline else { return };
            for field in &self.fields {
                if let Some(group) = group(field) {
                    pass.set_pipeline(pipeline);
                    pass.set_bind_group(0, group, &[]);
                    pass.dispatch_workgroups(groups[0], groups[1], 1);
                }
            }
        };
        let downsample = |pass: &mut wgpu::ComputePass<'_>| {
            each(pass, self.downsample.as_ref(), &|f| f.downsample.as_ref().map(|g| &g[side]), self.downsample_groups)
        };
        if phases.statistics {
            each(&mut pass, Some(&self.partial), &|f| Some(&f.partial[side]), [self.groups, 1]);
            // Downsampling reads the field alone and writes its own part of the results: it
            // runs beside the partial sums (no barrier between them), one phase fewer for a
            // GPU to wait on.
            if phases.downsample {
                downsample(&mut pass);
            }
            each(&mut pass, Some(&self.finish), &|f| Some(&f.finish), [1, 1]);
        }
        if phases.edges {
            each(&mut pass, self.edges.as_ref(), &|f| f.edges.as_ref(), [1, 1]);
        }
        if phases.counts {
            each(
                &mut pass,
                self.histogram.as_ref(),
                &|f| f.histogram.as_ref().map(|g| &g[side]),
                self.histogram_groups,
            );
        }
        if phases.downsample && !phases.statistics {
            downsample(&mut pass);
        }
    }

    /// Copies every field's results into `staging` from byte `at`, field after field.
    pub(crate) fn encode_copy(&self, encoder: &mut wgpu::CommandEncoder, staging: &wgpu::Buffer, at: u64) {
        for (i, field) in self.fields.iter().enumerate() {
            encoder.copy_buffer_to_buffer(
                &field.result,
                0,
                staging,
                at + i as u64 * self.result_bytes,
                self.result_bytes,
            );
        }
    }
}

/// Which passes [`FieldReducer::encode_passes`] records: a whole grid's frame records the
/// statistics, the counts and the downsampled fields together; a block of a split grid records
/// the statistics, then (once the ranks have combined them) the edges and the counts, then
/// (as the frame's results go to staging) its part of the downsampled fields.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Phases {
    /// Min, max, sum and mean, then the bin edges from them.
    pub statistics: bool,
    /// The bin edges from the min and max already in the results.
    pub edges: bool,
    /// The PDF's counts.
    pub counts: bool,
    /// The downsampled field.
    pub downsample: bool,
}

/// The order [`FieldReducer`] lays a field's results out in, which must be
/// [`AnalysisSpec::outputs`]'s: checked by a unit test.
#[cfg(test)]
const RESULT_ORDER: [super::Reduction; 7] = [
    super::Reduction::Min,
    super::Reduction::Max,
    super::Reduction::Mean,
    super::Reduction::Sum,
    super::Reduction::Bins,
    super::Reduction::Pdf,
    super::Reduction::Downsampled,
];

#[cfg(test)]
mod tests {
    use super::RESULT_ORDER;
    use crate::analysis::AnalysisSpec;
    use crate::grid::Grid;

    #[test]
    fn outputs_follow_the_order_of_the_results() -> crate::error::Result<()> {
        let grid = Grid::new(&[4, 6, 8])?;
        let spec = AnalysisSpec { fields: vec![1, 0], pdf_bins: 10, downsample: 3 };
        let outputs = spec.outputs(&grid);
        assert_eq!(outputs.len(), 14);
        for (i, o) in outputs.iter().enumerate() {
            assert_eq!(o.reduction, RESULT_ORDER[i % 7]);
            assert_eq!(o.field, if i < 7 { 1 } else { 0 });
        }
        assert_eq!(outputs[5].shape, vec![4, 10]);
        assert_eq!(outputs[6].shape, vec![2, 2, 3]);
        assert_eq!(spec.frame_bytes(&grid), 2 * 4 * (4 + 10 + 40 + 12));
        Ok(())
    }
}
