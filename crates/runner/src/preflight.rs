//! What building a pipeline checks before anything is allocated or created: kernels and
//! stream names (before any device opens), then fields, counts and sizes once the jobs are
//! known. The config module runs the same checks before it opens a device.

use wgpipe_compute::{Grid, KernelSpec, OutputDType, gray_scott, gray_scott_3d};
use wgpipe_storage::{DType, FieldSpec, Sink, StreamInfo, StreamLayout, check_stream_name};

use crate::builder::PipelineBuilder;
use crate::error::{Error, Result};
use crate::job::Job;
use crate::sizes::{self, DeviceSize, RunShape};

/// The storage type of kernel fields output as `dtype`.
pub fn stored_dtype(dtype: OutputDType) -> DType {
    match dtype {
        OutputDType::F32 => DType::F32,
        OutputDType::F16 => DType::F16,
    }
}

/// Distinct cells per workgroup of `kernels` (the block each dispatch divides the grid into:
/// the workgroup size, times `CELLS_PER_INVOCATION_X` along x), each distinct shader
/// validated once (a batch of many runs of one kernel differs only in parameters).
pub(crate) fn kernel_workgroup_sizes<'a>(kernels: impl IntoIterator<Item = &'a KernelSpec>) -> Result<Vec<[u32; 3]>> {
    let mut checked: Vec<(&KernelSpec, [u32; 3])> = Vec::new();
    for kernel in kernels {
        if checked.iter().any(|(k, _)| k.wgsl == kernel.wgsl && k.fields == kernel.fields) {
            continue;
        }
        checked.push((kernel, kernel.check()?.cells_per_workgroup()));
    }
    let mut sizes: Vec<[u32; 3]> = checked.into_iter().map(|(_, s)| s).collect();
    sizes.sort_unstable();
    sizes.dedup();
    Ok(sizes)
}

/// The grid of `shape`, checked against the rank every kernel is written for, before any
/// device opens.
pub(crate) fn check_grid<'a>(shape: &[usize], kernels: impl IntoIterator<Item = &'a KernelSpec>) -> Result<Grid> {
    let grid = Grid::new(shape)?;
    if let Some(k) = kernels.into_iter().find(|k| k.rank != grid.rank()) {
        return Err(Error::Invalid(format!(
            "kernel {} is written for {}-D grids and the grid {grid} is {}-D: give a grid of rank {} \
             (grid.shape with {} sizes)",
            k.name,
            k.rank,
            grid.rank(),
            k.rank,
            k.rank
        )));
    }
    Ok(grid)
}

/// Errors on an empty job list, a stream name no sink can store (storage's naming rule) or
/// two jobs of one name.
pub(crate) fn check_job_names(jobs: &[Job]) -> Result<()> {
    if jobs.is_empty() {
        return Err(Error::Invalid("the job list is empty".to_owned()));
    }
    for job in jobs {
        check_stream_name(&job.name)?;
    }
    let mut names: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::Invalid(format!("two jobs are named {:?}: stream names must be unique", w[0])));
    }
    Ok(())
}

/// Everything `build` checks once it knows the jobs, before anything is allocated or created:
/// names, fields, then sizes against `devices`, `sink` and the host ([`crate::sizes`]).
/// Returns the layout the sink will be given (without the adapters' names).
pub(crate) fn preflight(
    b: &PipelineBuilder,
    grid: Option<&Grid>,
    jobs: &[Job],
    workgroup_sizes: Vec<[u32; 3]>,
    sink: &dyn Sink,
    devices: &[DeviceSize],
) -> Result<StreamLayout> {
    check_job_names(jobs)?;
    if b.frames.checked_mul(jobs.len() as u64).is_none() {
        return Err(Error::TooLarge {
            key: "run.frames",
            message: format!("{} frames × {} streams overflow a 64-bit count: use fewer frames", b.frames, jobs.len()),
        });
    }
    let kernels: Vec<&KernelSpec> = jobs.iter().filter_map(Job::kernel).collect();
    let (mut layout, state_fields) = match (kernels.first(), grid) {
        (Some(first), Some(grid)) if kernels.len() == jobs.len() => {
            let kernel_fields = &first.fields;
            if let Some((j, k)) = jobs.iter().zip(&kernels).find(|(_, k)| &k.fields != kernel_fields) {
                return Err(Error::Invalid(format!(
                    "job {} has fields {:?} but job {} has {:?}: all jobs of a run share one layout",
                    j.name, k.fields, jobs[0].name, kernel_fields
                )));
            }
            let fields = b.fields.clone().unwrap_or_else(|| kernel_fields.clone());
            first.field_indices(&fields)?;
            let dtype = stored_dtype(b.output_dtype);
            let mut layout =
                StreamLayout::new(fields.iter().map(|f| FieldSpec::new(f.clone(), dtype, grid.shape())).collect());
            // The Gray-Scott models' fields have a long name and units, for netCDF readers.
            if [gray_scott::NAME, gray_scott_3d::NAME].contains(&first.name.as_str()) {
                for f in &mut layout.fields {
                    if let Some((_, long_name, units)) = gray_scott::FIELD_DESCRIPTIONS.iter().find(|d| d.0 == f.name) {
                        f.long_name = Some((*long_name).to_owned());
                        f.units = Some((*units).to_owned());
                    }
                }
            }
            (layout, kernel_fields.len())
        }
        (None, _) => {
            if b.fields.is_some() {
                return Err(Error::Invalid(
                    ".fields(..) chooses a kernel's fields; frames from a frame source hold the fields given to \
                     .frame_layout(..)"
                        .to_owned(),
                ));
            }
            if b.output_dtype != OutputDType::F32 {
                return Err(Error::Invalid(format!(
                    ".output_dtype({}) converts kernels' fields; frames from a frame source hold the types given \
                     to .frame_layout(..)",
                    b.output_dtype
                )));
            }
            let fields = b.frame_layout.clone().unwrap_or_default();
            if fields.is_empty() {
                return Err(Error::Invalid(
                    "jobs from frame sources need their frame layout: call .frame_layout(fields) with each \
                     field's name, dtype and shape"
                        .to_owned(),
                ));
            }
            (StreamLayout::new(fields), 0)
        }
        _ => {
            return Err(Error::Invalid(
                "a run's jobs are either all kernels or all frame sources (they share one frame layout)".to_owned(),
            ));
        }
    };
    for job in jobs {
        let mut info = StreamInfo::new(job.name.clone()).with_expected_frames(b.frames);
        info.attributes = job.attributes.clone();
        if job.kernel().is_some() {
            info.attributes.insert("steps_per_frame".to_owned(), u64::from(b.steps_per_frame).into());
        }
        layout = layout.with_stream(info);
    }
    layout.attributes = b.attributes.clone();
    layout.attributes.insert("wgpipe_version".to_owned(), env!("CARGO_PKG_VERSION").into());
    if let Some(first) = kernels.first() {
        layout.attributes.insert("kernel".to_owned(), first.name.as_str().into());
        layout.attributes.insert("steps_per_frame".to_owned(), u64::from(b.steps_per_frame).into());
    }
    layout.attributes.insert("io_mode".to_owned(), b.mode.name().into());

    let shape = RunShape {
        grid: grid.copied(),
        state_fields,
        frame_fields: layout.fields.len(),
        staging_buffers: b.staging_buffers,
        io_buffer: b.io_buffer,
        workgroup_sizes,
    };
    sizes::check(&shape, devices, sink, &layout)?;
    Ok(layout)
}
