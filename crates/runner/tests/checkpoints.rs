//! Checkpoints and restart mid-stream: a run killed with SIGKILL while it writes resumes
//! (`wgpipe run --resume`) from each stream's newest checkpoint, computes no more than one
//! checkpoint interval per stream beyond the frames it had not reported written, and ends
//! bit-identical to an uninterrupted run; for the 2-D and 3-D Gray-Scott models with noise
//! and a custom WGSL kernel, on HDF5 (plain; deflate), raw and Zarr (3 frames per shard). The
//! 3-D run is killed 50 times, the others 3 times each, each at a moment drawn from
//! `WGPIPE_KILL_SEED`; `WGPIPE_CHECKPOINT_KILLS=N` kills every case N times,
//! `WGPIPE_CHECKPOINT_CASE=TEXT` runs only the cases whose label holds TEXT.
//!
//! The HDF5 outputs that grow frame by frame (deflate with 4 frames per chunk; fields kept by
//! a condition, whose count is unknown) are killed too: restarting inside a chunk of several
//! frames, and cutting both outputs of a thinned run at the checkpoint.
#![cfg(unix)]
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::cli::wgpipe;
use wgpipe::storage::open_output;

/// Frames per stream: enough that a kill after [`KILL_AFTER`] frames lands mid-run.
const FRAMES: u64 = 150;

struct Case {
    label: &'static str,
    /// Kills (and resumes) unless `WGPIPE_CHECKPOINT_KILLS` says otherwise.
    kills: u64,
    /// Frames between checkpoints.
    every: u64,
    /// Streams of the run.
    streams: u64,
    config: String,
}

fn cases() -> Vec<Case> {
    let heat = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shaders-wgsl/heat.wgsl");
    let run = |every: u64, noise: &str| {
        format!(
            "[run]\nframes = {FRAMES}\nsteps_per_frame = 3\nseed = 5\nnoise = {noise}\ncheckpoint_every = {every}\n"
        )
    };
    let two_d = |every: u64, output: &str| {
        format!(
            "[grid]\nrows = 24\ncols = 20\n{}[devices]\nselect = [0]\ncount = 2\n[output]\npath = \"out\"\n{output}\n",
            run(every, "0.05")
        )
    };
    vec![
        Case { label: "2-D, noise, hdf5", kills: 3, every: 5, streams: 2, config: two_d(5, "sink = \"hdf5\"") },
        Case {
            label: "2-D, noise, hdf5 deflate, 4 frames per chunk",
            kills: 3,
            every: 3,
            streams: 2,
            config: two_d(3, "sink = \"hdf5\"\ncompression = \"deflate:4\"\nchunk_frames = 4"),
        },
        Case {
            label: "2-D, noise, hdf5 deflate",
            kills: 3,
            every: 4,
            streams: 2,
            config: two_d(4, "sink = \"hdf5\"\ncompression = \"deflate:4\""),
        },
        Case { label: "2-D, noise, raw", kills: 3, every: 7, streams: 2, config: two_d(7, "sink = \"raw\"") },
        Case {
            // The fields of some frames (the condition holds for about the first half), the
            // reductions of every frame in a second output: both cut at the checkpoint.
            label: "2-D, noise, hdf5, output.every and output.when",
            kills: 3,
            every: 5,
            streams: 2,
            config: two_d(
                5,
                "sink = \"hdf5\"\nfields = [\"u\", \"v\"]\nevery = 9\nwhen = \"v_max > 0.2\"\n[analysis]\n\
                 fields = [\"v\"]\npdf_bins = 4",
            ),
        },
        Case {
            label: "2-D, noise, zarr, 3 frames per shard",
            kills: 3,
            every: 4,
            streams: 2,
            config: two_d(4, "sink = \"zarr\"\nshard_frames = 3"),
        },
        Case {
            label: "3-D, noise, hdf5",
            kills: 50,
            every: 6,
            streams: 1,
            config: format!(
                "[kernel]\nname = \"gray-scott-3d\"\n[kernel.params]\nnoise = 0.01\n[grid]\nshape = [10, 12, 14]\n{}\
                 [devices]\nselect = [0]\n[output]\nsink = \"hdf5\"\npath = \"out\"\n",
                run(6, "0.0")
            ),
        },
        Case {
            label: "custom WGSL kernel (heat), raw",
            kills: 3,
            every: 5,
            streams: 1,
            config: format!(
                "[kernel]\nname = \"heat\"\nwgsl = {:?}\nfields = [\"u\"]\n[kernel.params]\nalpha = 0.2\n\
                 [grid]\nrows = 30\ncols = 30\n{}[devices]\nselect = [0]\n[output]\nsink = \"raw\"\npath = \"out\"\n",
                heat.display().to_string(),
                run(5, "0.1")
            ),
        },
    ]
}

/// Everything an output holds that a reader sees: per stream (by name) its completeness,
/// steps, attributes and the bytes of every field of every frame.
type Contents = (bool, BTreeMap<String, (bool, Vec<u64>, String, Vec<Vec<u8>>)>);

fn contents(path: &Path) -> Contents {
    let out = open_output(path).unwrap();
    let mut streams = BTreeMap::new();
    for (s, summary) in out.streams().iter().enumerate() {
        let frames = (0..summary.frames)
            .map(|i| (0..out.fields().len()).flat_map(|f| out.read_field(s, f, i).unwrap().bytes).collect())
            .collect();
        let attributes = format!("{:?}", summary.attributes);
        streams.insert(summary.name.clone(), (summary.complete, out.steps(s).unwrap(), attributes, frames));
    }
    (out.complete(), streams)
}

/// N of `written N/TOTAL frames` lines, and TOTAL, from the last such line of `stderr`.
fn written(stderr: &str) -> Option<(u64, u64)> {
    stderr.lines().rev().find_map(|l| {
        let (n, total) = l.strip_prefix("written ")?.strip_suffix(" frames")?.split_once('/')?;
        Some((n.parse().ok()?, total.parse().ok()?))
    })
}

/// Runs `wgpipe run c.toml --progress frames` in `dir` and kills it with SIGKILL once it has
/// reported `after` frames written; returns what it had reported then (`None`: it ended
/// first).
fn run_and_kill(dir: &Path, after: u64) -> Option<u64> {
    let (mut child, lines) = common::cli::spawn_with_stderr(dir, &["run", "c.toml", "--progress", "frames"]);
    let mut reported = 0;
    for line in lines.iter() {
        if let Some((n, _)) = written(&line) {
            reported = n;
            if n >= after {
                child.kill().unwrap();
                break;
            }
        }
    }
    let status = child.wait().unwrap();
    status.code().is_none().then_some(reported)
}

fn seed() -> u64 {
    std::env::var("WGPIPE_KILL_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(7)
}

#[test]
fn killed_checkpointed_runs_resume_from_their_checkpoints_bit_identical() {
    let kills: Option<u64> = std::env::var("WGPIPE_CHECKPOINT_KILLS").ok().and_then(|s| s.parse().ok());
    let mut rng = seed();
    let (mut landed, mut restarts) = (0, 0);
    let only = std::env::var("WGPIPE_CHECKPOINT_CASE").unwrap_or_default();
    for case in cases().into_iter().filter(|c| c.label.contains(&only)) {
        let kills = kills.unwrap_or(case.kills);
        let label = case.label;
        let root = tempfile::tempdir().unwrap();
        let reference = root.path().join("reference");
        std::fs::create_dir(&reference).unwrap();
        std::fs::write(reference.join("c.toml"), &case.config).unwrap();
        let out = wgpipe(&reference, &["run", "c.toml"]);
        assert!(out.status.success(), "{label}: {}", String::from_utf8_lossy(&out.stderr));
        // The output, and the reductions' own output where the run thins its fields.
        let outputs: Vec<&str> = ["out", "out.analysis"].into_iter().filter(|o| reference.join(o).exists()).collect();
        let want: Vec<Contents> = outputs.iter().map(|o| contents(&reference.join(o))).collect();
        assert!(!reference.join("out.checkpoints").exists(), "{label}: a complete run keeps no checkpoint");
        let total = FRAMES * case.streams;
        for k in 0..kills {
            let dir = root.path().join(format!("killed-{k}"));
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("c.toml"), &case.config).unwrap();
            // Somewhere in the middle third of the run, drawn from the seed.
            rng = rng.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let after = total / 3 + (rng >> 33) % (total / 3);
            let what = format!("{label}, kill {k} after {after} frames (WGPIPE_KILL_SEED={})", seed());
            let Some(reported) = run_and_kill(&dir, after) else { panic!("{what}: the run ended before its kill") };
            assert!(dir.join("out.checkpoints").is_dir(), "{what}: no checkpoint directory");
            let resumed = wgpipe(&dir, &["run", "c.toml", "--resume", "--progress", "frames"]);
            let err = String::from_utf8_lossy(&resumed.stderr);
            assert!(resumed.status.success(), "{what}: the resume failed:\n{err}");
            let continued: u64 = err.matches(" from its checkpoint").count() as u64;
            // A stream restarts from frame 0 only when a kill damaged the last frame its
            // checkpoint keeps; the outputs killed here never lose a reported frame.
            let restarted: u64 = err.matches("restarting the stream from frame 0").count() as u64;
            assert!(restarted == 0, "{what}: a stream restarted:\n{err}");
            restarts += restarted;
            assert_eq!(
                continued + restarted,
                case.streams,
                "{what}: every stream continues from its checkpoint:\n{err}"
            );
            let (done, planned) = written(&err).unwrap_or_else(|| panic!("{what}: no progress:\n{err}"));
            assert_eq!(done, planned, "{what}");
            // No more than one interval per stream beyond what had not been reported.
            let bound = total - reported + case.streams * case.every + restarted * FRAMES;
            assert!(
                planned <= bound && (planned < total || restarted > 0),
                "{what}: the resume computed {planned} frames; at most {bound} (reported {reported})"
            );
            for (o, want) in outputs.iter().zip(&want) {
                assert!(
                    contents(&dir.join(o)) == *want,
                    "{what}: the resumed output {o} differs from the uninterrupted run's"
                );
            }
            assert!(!dir.join("out.checkpoints").exists(), "{what}: the completed run removes its checkpoints");
            std::fs::remove_dir_all(&dir).unwrap();
            landed += 1;
        }
    }
    eprintln!(
        "{landed} kills, each resumed to the uninterrupted output: every stream from its checkpoint but {restarts} \
         (a damaged HDF5 frame: restarted from frame 0)"
    );
}

#[test]
fn a_checkpoint_of_another_run_is_refused_and_a_fresh_run_replaces_old_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let config = |feed: &str| {
        format!(
            "[grid]\nrows = 16\ncols = 16\n[kernel.params]\nfeed = {feed}\n[run]\nframes = {FRAMES}\nsteps_per_frame = 2\n\
             checkpoint_every = 4\n[devices]\nselect = [0]\n[output]\nsink = \"raw\"\npath = \"out\"\n"
        )
    };
    std::fs::write(dir.path().join("c.toml"), config("0.03")).unwrap();
    run_and_kill(dir.path(), FRAMES / 2).unwrap();
    // `wgpipe info` says where the stream would resume.
    let info = String::from_utf8_lossy(&wgpipe(dir.path(), &["info", "out"]).stdout).into_owned();
    let saved = wgpipe::checkpoint::read(&dir.path().join("out.checkpoints"), "stream0").unwrap().unwrap();
    assert!(info.contains(&format!("checkpoint: after {} frames (step {})", saved.frames, saved.step)), "{info}");
    // Another feed rate: the checkpoint is not this run's.
    std::fs::write(dir.path().join("c.toml"), config("0.04")).unwrap();
    let out = wgpipe(dir.path(), &["run", "c.toml", "--resume"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("checkpoint of stream \"stream0\" was saved by another run") && err.contains("0.04"), "{err}");
    // A fresh run over it (overwrite) starts from frame 0 and leaves no stale checkpoint.
    let out = wgpipe(dir.path(), &["run", "c.toml", "--set", "output.overwrite=true"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!dir.path().join("out.checkpoints").exists());
}

/// `run.checkpoint = "auto"`: the first frame's checkpoint measures the cost, then Young's
/// interval sqrt(2 × cost × MTBF) is used: a checkpoint with every frame for a tiny MTBF,
/// none after the measurement for a huge one; the summary says what was chosen.
#[test]
fn auto_checkpoints_follow_young_daly() {
    let dir = tempfile::tempdir().unwrap();
    let frames = 60;
    for (mtbf, expect_every_frame) in [("1e-9", true), ("1e12", false)] {
        let config = format!(
            "[grid]\nrows = 16\ncols = 16\n[run]\nframes = {frames}\nsteps_per_frame = 2\ncheckpoint = \"auto\"\n\
             mtbf = {mtbf}\n[devices]\nselect = [0]\n[output]\nsink = \"raw\"\npath = \"out-{mtbf}\"\n"
        );
        std::fs::write(dir.path().join("c.toml"), config).unwrap();
        let out = wgpipe(dir.path(), &["run", "c.toml"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
        let line = stdout.lines().find(|l| l.starts_with("checkpoints: ")).unwrap_or_else(|| panic!("{stdout}"));
        let written: u64 = line["checkpoints: ".len()..].split(' ').next().unwrap().parse().unwrap();
        let every: u64 = line.split("every ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
        if expect_every_frame {
            assert_eq!(every, 1, "{line}");
            // Every frame but the last, less those decided while the first checkpoint was
            // measured: up to the 2 staging buffers, the 2 frames of the channel (io_buffer),
            // the one being written and the one being computed (how many depends on the
            // machine's load: 53 of 60 seen with both cores busy elsewhere).
            assert!((frames - 8..frames).contains(&written), "{line}");
        } else {
            assert!(every > frames, "{line}");
            // Only the measurement: the first frame's.
            assert_eq!(written, 1, "{line}");
        }
    }
}

/// A checkpoint directory that cannot be used (here a file stands at its path) stops the run
/// before anything is written, with an error naming it; nothing is left half-made.
#[test]
fn an_unusable_checkpoint_directory_is_named_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[grid]\nrows = 8\ncols = 8\n[run]\nframes = {FRAMES}\ncheckpoint_every = 3\n[devices]\nselect = [0]\n\
         [output]\nsink = \"raw\"\npath = \"out\"\n"
    );
    std::fs::write(dir.path().join("c.toml"), config).unwrap();
    std::fs::write(dir.path().join("out.checkpoints"), b"in the way").unwrap();
    let out = wgpipe(dir.path(), &["run", "c.toml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("out.checkpoints") && err.contains("not a directory") && !err.contains("panicked"), "{err}");
    assert!(!dir.path().join("out").exists(), "no output is created");
}
