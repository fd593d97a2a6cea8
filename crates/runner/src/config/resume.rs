//! `--resume`: which streams of an existing output are already complete, and where the
//! others continue (from their checkpoints, or from frame 0).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use wgpipe_storage::{FieldSpec, Output, open_output};

use super::Config;
use crate::error::{Error, Result};
use crate::{Job, checkpoint};

/// An [`Error::Resume`] about the output at `path`.
fn refuse(path: &Path, message: String) -> Error {
    Error::Resume { path: path.to_owned(), message }
}

/// What an existing output holds, as far as resuming it matters.
#[derive(Debug, Default)]
pub(crate) struct Held {
    /// The output, opened once for every check of the resume.
    pub output: Option<Output>,
    /// The reductions' own output, when the run stores the fields of some frames only
    /// (`output.every`, `output.when`): it holds every frame, so the streams' frames and
    /// completeness are read from it.
    pub reductions: Option<Output>,
    /// Streams complete in it: not run again.
    pub complete: BTreeSet<String>,
    /// Frames of each incomplete stream.
    pub frames: BTreeMap<String, u64>,
}

/// The output at `path` opened, after checking that it holds `writes` (`key` names them in
/// the message); `None` when there is none yet.
fn open_checked(path: &Path, writes: &[FieldSpec]) -> Result<Option<Output>> {
    if !path.exists() {
        return Ok(None);
    }
    let out = open_output(path).map_err(|e| refuse(path, e.to_string()))?;
    if out.fields().len() != writes.len() || out.fields().iter().zip(writes).any(|(a, b)| !a.same_data(b)) {
        let list = |fields: &[FieldSpec]| {
            fields.iter().map(|f| format!("{} {}", f.name, f.describe())).collect::<Vec<_>>().join(", ")
        };
        return Err(refuse(
            path,
            format!(
                "it holds fields {}, the config writes {}; resume with the config that wrote it, or choose another \
                 output.path",
                list(out.fields()),
                list(writes)
            ),
        ));
    }
    Ok(Some(out))
}

/// What the config's existing output holds (nothing when there is no output yet), after
/// checking that it holds the fields and grid this config writes.
pub(crate) fn held_streams(config: &Config) -> Result<Held> {
    if config.sink_name() == "null" {
        return Err(refuse(
            &config.output_path(),
            "resuming needs an output to resume: the null sink stores nothing; set output.sink to hdf5 or raw"
                .to_owned(),
        ));
    }
    let Some(output) = open_checked(&config.output_path(), &config.stored_fields()?)? else {
        return Ok(Held::default());
    };
    let reductions = match config.analysis_output_path() {
        Some(path) => match open_checked(&path, &config.reduction_fields()?)? {
            Some(out) => Some(out),
            // Killed between creating the two outputs: nothing to continue.
            None => return Ok(Held { output: Some(output), ..Held::default() }),
        },
        None => None,
    };
    let every_frame = reductions.as_ref().unwrap_or(&output);
    let (mut complete, mut frames) = (BTreeSet::new(), BTreeMap::new());
    for s in every_frame.streams() {
        // With two outputs, a stream is complete in both or in neither: each is marked when
        // the run's end is written, the reductions' first.
        if let Some(reductions) = &reductions {
            let fields_complete = output.streams().iter().any(|f| f.name == s.name && f.complete);
            if fields_complete != s.complete {
                let (done, not) = if s.complete { (reductions, &output) } else { (&output, reductions) };
                return Err(refuse(
                    not.path(),
                    format!(
                        "stream {} is complete in {} but not here, whose end was not written (the run was killed or \
                         failed while it finished); its frames are there, but resuming cannot tell: run the config \
                         again into another output.path",
                        s.name,
                        done.path().display(),
                    ),
                ));
            }
        }
        if s.complete {
            complete.insert(s.name.clone());
        } else {
            frames.insert(s.name.clone(), s.frames);
        }
    }
    Ok(Held { complete, frames, output: Some(output), reductions })
}

/// Whether the last of the first `frames` frames of stream `name` reads back, every field:
/// continuing after it rewrites the chunk that holds it (a frame a kill damaged, as HDF5's
/// compressed chunks of several frames can be, would stop the resume or stay broken).
fn last_kept_reads(out: &Output, name: &str, frames: u64) -> bool {
    let Some(s) = out.streams().iter().position(|s| s.name == name) else { return false };
    let fields = out.fields().len();
    frames > 0 && out.steps(s).is_ok() && (0..fields).all(|f| out.read_field(s, f, frames - 1).is_ok())
}

/// Of a stream continuing after `frames` frames, how many the fields output keeps when the
/// reductions have their own output: those whose step is at most that of the last frame
/// kept (`Some(0)` when the fields output has none of the stream); `None` when the outputs
/// cannot say (a step unreadable).
fn kept_fields(held: &Held, name: &str, frames: u64) -> Option<u64> {
    let (Some(fields), Some(reductions)) = (&held.output, &held.reductions) else { return Some(frames) };
    let stream = |out: &Output| out.streams().iter().position(|s| s.name == name);
    let last = *reductions.steps(stream(reductions)?).ok()?.get(usize::try_from(frames.checked_sub(1)?).ok()?)?;
    match stream(fields) {
        None => Some(0),
        Some(s) => Some(fields.steps(s).ok()?.iter().filter(|&&step| step <= last).count() as u64),
    }
}

/// Whether a stream's checkpoint after `frames` frames can be continued: those frames (and,
/// with a reductions output, the fields frames kept among them) are in the outputs, the
/// last of each reading back. Returns the fields frames kept.
fn continuable(held: &Held, name: &str, frames: u64) -> Option<u64> {
    let kept = kept_fields(held, name, frames)?;
    let fields = held.output.as_ref()?;
    match &held.reductions {
        Some(reductions) => (last_kept_reads(reductions, name, frames)
            && (kept == 0 || last_kept_reads(fields, name, kept)))
        .then_some(kept),
        None => last_kept_reads(fields, name, frames).then_some(kept),
    }
}

/// `jobs` (the incomplete and missing streams), each continuing from its checkpoint when the
/// run checkpoints and the checkpoint's frames are all in the output, the last of them
/// readable; the others restart from frame 0. Says which in `notes`. Also returns, per
/// continuing stream, the frames the fields output keeps (with `output.every`/`output.when`,
/// fewer than the checkpoint's).
pub(crate) fn from_checkpoints(
    config: &Config,
    held: &Held,
    jobs: Vec<Job>,
    notes: &mut Vec<String>,
) -> Result<(Vec<Job>, BTreeMap<String, u64>)> {
    let mut kept = BTreeMap::new();
    let Some(checkpoints) = config.checkpoints() else { return Ok((jobs, kept)) };
    let mut resumed = Vec::with_capacity(jobs.len());
    for job in jobs {
        let Some(&frames) = held.frames.get(&job.name) else {
            resumed.push(job);
            continue;
        };
        match checkpoint::read(&checkpoints.dir, &job.name)? {
            Some(saved) if saved.frames <= frames => match continuable(held, &job.name, saved.frames) {
                Some(fields) => {
                    notes.push(format!(
                        "stream {}: continuing after {} frames from its checkpoint",
                        job.name, saved.frames
                    ));
                    kept.insert(job.name.clone(), fields);
                    resumed.push(job.resuming(saved));
                }
                None => {
                    notes.push(format!(
                        "stream {}: the last of the {} frames its checkpoint keeps does not read back from the \
                         output{} (damaged by the kill?); restarting the stream from frame 0",
                        job.name,
                        saved.frames,
                        if held.reductions.is_some() { "s (fields and reductions)" } else { "" }
                    ));
                    resumed.push(job);
                }
            },
            Some(saved) => {
                notes.push(format!(
                    "stream {}: its checkpoint after {} frames is ahead of the {frames} frames in the output; \
                     restarting it from frame 0",
                    job.name, saved.frames
                ));
                resumed.push(job);
            }
            None => resumed.push(job),
        }
    }
    Ok((resumed, kept))
}
