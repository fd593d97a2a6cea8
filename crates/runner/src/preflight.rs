//! What building a pipeline checks before anything is allocated or created: kernels and
//! stream names (before any device opens), then fields, counts and sizes once the jobs are
//! known. The config module runs the same checks before it opens a device.

use wgpipe_compute::{Grid, KernelSpec, gray_scott};
use wgpipe_storage::{DType, Sink, StreamInfo, StreamLayout, check_stream_name};

use crate::builder::PipelineBuilder;
use crate::error::{Error, Result};
use crate::job::Job;
use crate::sizes::{self, DeviceSize, RunShape};

/// Distinct workgroup sizes of `kernels`, each distinct shader validated once (a batch of
/// many runs of one kernel differs only in parameters).
pub(crate) fn kernel_workgroup_sizes<'a>(kernels: impl IntoIterator<Item = &'a KernelSpec>) -> Result<Vec<[u32; 3]>> {
    let mut checked: Vec<(&KernelSpec, [u32; 3])> = Vec::new();
    for kernel in kernels {
        if checked.iter().any(|(k, _)| k.wgsl == kernel.wgsl && k.fields == kernel.fields) {
            continue;
        }
        checked.push((kernel, kernel.check()?.workgroup_size));
    }
    let mut sizes: Vec<[u32; 3]> = checked.into_iter().map(|(_, s)| s).collect();
    sizes.sort_unstable();
    sizes.dedup();
    Ok(sizes)
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
    jobs: &[Job],
    workgroup_sizes: Vec<[u32; 3]>,
    sink: &dyn Sink,
    devices: &[DeviceSize],
) -> Result<StreamLayout> {
    check_job_names(jobs)?;
    let kernel_fields = &jobs[0].kernel.fields;
    if let Some(j) = jobs.iter().find(|j| &j.kernel.fields != kernel_fields) {
        return Err(Error::Invalid(format!(
            "job {} has fields {:?} but job {} has {:?}: all jobs of a run share one layout",
            j.name, j.kernel.fields, jobs[0].name, kernel_fields
        )));
    }
    let fields = b.fields.clone().unwrap_or_else(|| kernel_fields.clone());
    jobs[0].kernel.field_indices(&fields)?;
    if b.frames.checked_mul(jobs.len() as u64).is_none() {
        return Err(Error::TooLarge {
            key: "run.frames",
            message: format!("{} frames × {} streams overflow a 64-bit count: use fewer frames", b.frames, jobs.len()),
        });
    }

    let mut layout = StreamLayout::grid2d(fields.iter().cloned(), b.rows, b.cols, DType::F32);
    if jobs[0].kernel.name == gray_scott::NAME {
        for f in &mut layout.fields {
            if let Some((_, long_name, units)) = gray_scott::FIELD_DESCRIPTIONS.iter().find(|d| d.0 == f.name) {
                f.long_name = Some((*long_name).to_owned());
                f.units = Some((*units).to_owned());
            }
        }
    }
    for job in jobs {
        let mut info = StreamInfo::new(job.name.clone()).with_expected_frames(b.frames);
        info.attributes = job.attributes.clone();
        info.attributes.insert("steps_per_frame".to_owned(), u64::from(b.steps_per_frame).into());
        layout = layout.with_stream(info);
    }
    layout.attributes = b.attributes.clone();
    layout.attributes.insert("wgpipe_version".to_owned(), env!("CARGO_PKG_VERSION").into());
    layout.attributes.insert("kernel".to_owned(), jobs[0].kernel.name.as_str().into());
    layout.attributes.insert("steps_per_frame".to_owned(), u64::from(b.steps_per_frame).into());
    layout.attributes.insert("io_mode".to_owned(), b.mode.name().into());

    let shape = RunShape {
        grid: Grid::new(&[b.rows, b.cols])?,
        state_fields: kernel_fields.len(),
        frame_fields: fields.len(),
        staging_buffers: b.staging_buffers,
        io_buffer: b.io_buffer,
        workgroup_sizes,
    };
    sizes::check(&shape, devices, sink, &layout)?;
    Ok(layout)
}
