//! The layout a run's sink receives: each frame's fields (the kernels' chosen fields on the
//! grid, or a frame source's), every stream with its metadata, and the run's attributes.

use wgpipe_compute::zfp::ZfpRate;
use wgpipe_compute::{Grid, KernelSpec, OutputDType, gray_scott, gray_scott_3d};
use wgpipe_storage::{DType, Encoding, FieldSpec, StreamInfo, StreamLayout};

use crate::error::{Error, Result};
use crate::job::Job;
use crate::settings::Settings;

/// The storage type of kernel fields output as `dtype`.
pub fn stored_dtype(dtype: OutputDType) -> DType {
    match dtype {
        OutputDType::F32 => DType::F32,
        OutputDType::F16 => DType::F16,
    }
}

/// Marks the kernel fields of `layout` (all it holds so far) as arriving ZFP-encoded at
/// `rate`; errors unless they are f32.
fn encode_on_device(layout: &mut StreamLayout, dtype: OutputDType, rate: ZfpRate) -> Result<()> {
    if dtype != OutputDType::F32 {
        return Err(Error::Invalid(format!(
            "ZFP on the device encodes f32 fields, and the fields are output as {dtype}: use .output_dtype(OutputDType::F32) \
             (output.dtype = \"f32\")"
        )));
    }
    let stored = wgpipe_storage::ZfpRate::new(rate.bits()).map_err(|e| Error::Invalid(e.to_string()))?;
    for f in &mut layout.fields {
        f.encoding = Encoding::Zfp(stored);
    }
    Ok(())
}

/// The layout of `jobs` on `grid` (without the adapters' names, which the plan adds), the
/// number of fields of the kernels' state (0 for frame sources), and how many of the layout's
/// fields are the kernels' fields on the grid (the analysis's reductions follow them). Errors
/// when the jobs do not share one frame layout or `settings` asks for fields they lack.
pub(crate) fn stream_layout(
    settings: &Settings,
    grid: Option<&Grid>,
    jobs: &[Job],
) -> Result<(StreamLayout, usize, usize)> {
    let kernels: Vec<&KernelSpec> = jobs.iter().filter_map(Job::kernel).collect();
    let (mut layout, state_fields, grid_fields) = match (kernels.first(), grid) {
        (Some(first), Some(grid)) if kernels.len() == jobs.len() => {
            let kernel_fields = &first.fields;
            if let Some((j, k)) = jobs.iter().zip(&kernels).find(|(_, k)| &k.fields != kernel_fields) {
                return Err(Error::Invalid(format!(
                    "job {} has fields {:?} but job {} has {:?}: all jobs of a run share one layout",
                    j.name, k.fields, jobs[0].name, kernel_fields
                )));
            }
            let fields = settings.fields.clone().unwrap_or_else(|| kernel_fields.clone());
            first.field_indices(&fields)?;
            let dtype = stored_dtype(settings.output_dtype);
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
            if let Some(rate) = settings.zfp_on_device {
                encode_on_device(&mut layout, settings.output_dtype, rate)?;
            }
            let grid_fields = layout.fields.len();
            if !settings.analysis.is_empty() {
                let dims = FieldSpec::new("grid", dtype, grid.shape()).dims;
                layout.fields.extend(settings.analysis.stored_fields(first, grid, &dims)?);
            }
            (layout, kernel_fields.len(), grid_fields)
        }
        (None, _) => frame_source_layout(settings)?,
        _ => {
            return Err(Error::Invalid(
                "a run's jobs are either all kernels or all frame sources (they share one frame layout)".to_owned(),
            ));
        }
    };
    for job in jobs {
        let mut info =
            StreamInfo::new(job.name.clone()).with_expected_frames(settings.frames).with_kept_frames(job.kept_frames());
        info.attributes = job.attributes.clone();
        if job.kernel().is_some() {
            info.attributes.insert("steps_per_frame".to_owned(), u64::from(settings.steps_per_frame).into());
        }
        layout = layout.with_stream(info);
    }
    layout.attributes = settings.attributes.clone();
    layout.attributes.insert("wgpipe_version".to_owned(), env!("CARGO_PKG_VERSION").into());
    if let Some(first) = kernels.first() {
        layout.attributes.insert("kernel".to_owned(), first.name.as_str().into());
        layout.attributes.insert("steps_per_frame".to_owned(), u64::from(settings.steps_per_frame).into());
    }
    layout.attributes.insert("io_mode".to_owned(), settings.mode.name().into());
    Ok((layout, state_fields, grid_fields))
}

/// The layout of jobs from frame sources: the fields given to `.frame_layout(..)`, as they
/// are (0 kernel state fields, all of them the "grid" fields), the kernel-only settings refused.
fn frame_source_layout(settings: &Settings) -> Result<(StreamLayout, usize, usize)> {
    if settings.fields.is_some() {
        return Err(Error::Invalid(
            ".fields(..) chooses a kernel's fields; frames from a frame source hold the fields given to \
             .frame_layout(..)"
                .to_owned(),
        ));
    }
    if settings.zfp_on_device.is_some() {
        return Err(Error::Invalid(
            ".zfp_on_device(..) encodes kernels' fields; frames from a frame source hold what it made: \
             encode them in the source (wgpipe_compute::zfp::ZfpEncoder) and declare them with \
             FieldSpec::with_encoding"
                .to_owned(),
        ));
    }
    if settings.output_dtype != OutputDType::F32 {
        return Err(Error::Invalid(format!(
            ".output_dtype({}) converts kernels' fields; frames from a frame source hold the types given \
             to .frame_layout(..)",
            settings.output_dtype
        )));
    }
    if !settings.analysis.is_empty() {
        return Err(Error::Invalid(
            ".analysis(..) reduces a kernel's fields on the device; a frame source computes its own \
             frames: add the reductions to its frame layout instead"
                .to_owned(),
        ));
    }
    let fields = settings.frame_layout.clone().unwrap_or_default();
    if fields.is_empty() {
        return Err(Error::Invalid(
            "jobs from frame sources need their frame layout: call .frame_layout(fields) with each \
             field's name, dtype and shape"
                .to_owned(),
        ));
    }
    let n = fields.len();
    Ok((StreamLayout::new(fields), 0, n))
}
