//! `--resume`: which streams of an existing output are already complete, and where the
//! others continue (from their checkpoints, or from frame 0).

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, bail};
use wgpipe::Job;
use wgpipe::checkpoint;
use wgpipe::config::Config;
use wgpipe::storage::{FieldSpec, Output, open_output};

/// What an existing output holds, as far as resuming it matters.
#[derive(Default)]
pub struct Held {
    /// The output, opened once for every check of the resume.
    pub output: Option<Output>,
    /// Streams complete in it: not run again.
    pub complete: BTreeSet<String>,
    /// Frames of each incomplete stream.
    pub frames: BTreeMap<String, u64>,
}

/// What the config's existing output holds (nothing when there is no output yet), after
/// checking that it holds the fields and grid this config writes.
pub fn held_streams(config: &Config) -> anyhow::Result<Held> {
    if config.sink_name() == "null" {
        bail!("--resume needs an output to resume: the null sink stores nothing; set output.sink to hdf5 or raw");
    }
    let path = config.output_path();
    if !path.exists() {
        return Ok(Held::default());
    }
    let out = open_output(&path).with_context(|| format!("cannot resume {}", path.display()))?;
    let writes: Vec<FieldSpec> = config.stored_fields()?;
    if out.fields().len() != writes.len() || out.fields().iter().zip(&writes).any(|(a, b)| !a.same_data(b)) {
        let list = |fields: &[FieldSpec]| {
            fields.iter().map(|f| format!("{} {}", f.name, f.describe())).collect::<Vec<_>>().join(", ")
        };
        bail!(
            "cannot resume {}: it holds fields {}, the config writes {}; \
             resume with the config that wrote it, or choose another output.path",
            path.display(),
            list(out.fields()),
            list(&writes)
        );
    }
    let (complete, incomplete): (Vec<_>, Vec<_>) = out.streams().iter().partition(|s| s.complete);
    let complete = complete.into_iter().map(|s| s.name.clone()).collect();
    let frames = incomplete.into_iter().map(|s| (s.name.clone(), s.frames)).collect();
    Ok(Held { complete, frames, output: Some(out) })
}

/// Whether the last of the first `frames` frames of stream `name` reads back, every field:
/// continuing after it rewrites the chunk that holds it (a frame a kill damaged, as HDF5's
/// compressed chunks of several frames can be, would stop the resume or stay broken).
fn last_kept_reads(out: &Output, name: &str, frames: u64) -> bool {
    let Some(s) = out.streams().iter().position(|s| s.name == name) else { return false };
    let fields = out.fields().len();
    frames > 0 && out.steps(s).is_ok() && (0..fields).all(|f| out.read_field(s, f, frames - 1).is_ok())
}

/// `eprintln!` when the first argument is true.
macro_rules! say {
    ($speaks:expr, $($arg:tt)*) => {
        if $speaks {
            eprintln!($($arg)*);
        }
    };
}

/// `jobs` (the incomplete and missing streams), each continuing from its checkpoint when the
/// run checkpoints and the checkpoint's frames are all in the output, the last of them
/// readable; the others restart from frame 0. Says which on stderr when it `speaks`.
pub fn from_checkpoints(config: &Config, held: &Held, jobs: Vec<Job>, speaks: bool) -> anyhow::Result<Vec<Job>> {
    let Some(checkpoints) = config.checkpoints() else { return Ok(jobs) };
    let mut resumed = Vec::with_capacity(jobs.len());
    for job in jobs {
        let Some(&frames) = held.frames.get(&job.name) else {
            resumed.push(job);
            continue;
        };
        match checkpoint::read(&checkpoints.dir, &job.name)? {
            Some(saved) if saved.frames <= frames => {
                if held.output.as_ref().is_some_and(|o| last_kept_reads(o, &job.name, saved.frames)) {
                    say!(speaks, "stream {}: continuing after {} frames from its checkpoint", job.name, saved.frames);
                    resumed.push(job.resuming(saved));
                } else {
                    say!(
                        speaks,
                        "stream {}: frame {} of the output, the last its checkpoint keeps, does not read back (damaged \
                         by the kill?); restarting the stream from frame 0",
                        job.name,
                        saved.frames - 1
                    );
                    resumed.push(job);
                }
            }
            Some(saved) => {
                say!(
                    speaks,
                    "stream {}: its checkpoint after {} frames is ahead of the {frames} frames in the output; \
                     restarting it from frame 0",
                    job.name,
                    saved.frames
                );
                resumed.push(job);
            }
            None => resumed.push(job),
        }
    }
    Ok(resumed)
}
