//! `kill -9` at random moments: whatever instant a `wgpipe run` dies at, its output opens
//! (with wgpipe's reader, and with `h5dump` for HDF5), holds every frame the run had reported
//! written, stream by stream (`--progress frames` prints the counts per stream with each
//! total), every frame it holds is the uninterrupted run's frame bit for bit, and
//! `wgpipe run --resume` then completes it into the uninterrupted run's output.
//!
//! The kill moments are drawn from a seeded generator (see [`Moment`]): during start-up,
//! right after the output appeared, and while frames are written, so kills land before and
//! during the output's creation, between and inside frame writes, and while the output is
//! finished; two in three after the first frame was reported, and the test fails unless at
//! least half of the kills landed after frames were reported (before, there is nothing to
//! lose). Runs that end before their kill are not counted as kills; their output must then
//! be complete and right. Every sink chains run, kill, `--resume`, kill, ...: a resumed
//! HDF5 run continues its file in place (its streams were laid out whole), so a kill of it
//! is like any other.
//!
//! `WGPIPE_KILL_SEED=N` picks the seed (default below; every failure prints the one used),
//! `WGPIPE_KILLS=N` the number of kills (default 200, spread over the scenarios),
//! `WGPIPE_KILL_SCENARIOS=hdf5+deflate4,raw` runs only the scenarios of those sinks (to
//! reproduce a failure).
//! Needs `h5dump` (Debian: `apt-get install hdf5-tools`).
#![cfg(unix)]
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use wgpipe::storage::{Attributes, open_output};

/// Seed of the kill times when `WGPIPE_KILL_SEED` is unset.
const DEFAULT_SEED: u64 = 0x6b69_6c6c_2d39;
/// Kills when `WGPIPE_KILLS` is unset.
const DEFAULT_KILLS: usize = 200;
/// Sink and noise of each scenario: noise 0 is the exact start pattern, noise > 0 draws the
/// start state from the run's seed, which a resumed stream must draw again identically.
/// `hdf5+deflate` is the HDF5 sink compressing with `deflate:6` (direct chunk writes);
/// `hdf5+deflate4` the same with 4 frames per chunk (`output.chunk_frames = 4`: a chunk is
/// rewritten as it fills, see `hdf5/eoa.rs`); `hdf5+chunk4` uncompressed at 4 frames per
/// chunk (laid out as holes of the file, see `hdf5/preallocate.rs`); `hdf5+when` an output
/// of unknown length (fields kept by `output.when`, whose datasets grow with every frame;
/// the condition holds for every frame, so the frames reported are the frames stored);
/// `hdf5+zfp:rate=8` ZFP encoded on the devices (`output.compress_on = "auto"` picks them
/// for HDF5), its chunks written as they arrive; `zarr+zfp:rate=8` the same streams as Zarr
/// chunks of numcodecs' zfpy codec.
const SCENARIOS: [(&str, f32); 11] = [
    ("hdf5", 0.0),
    ("raw", 0.0),
    ("hdf5", 0.05),
    ("raw", 0.05),
    ("zarr", 0.05),
    ("hdf5+deflate", 0.05),
    ("hdf5+deflate4", 0.05),
    ("hdf5+chunk4", 0.05),
    ("hdf5+when", 0.05),
    ("hdf5+zfp:rate=8", 0.05),
    ("zarr+zfp:rate=8", 0.05),
];
/// Attempts allowed per kill before the test gives up (runs that end before their kill).
const ATTEMPTS_PER_KILL: usize = 6;
/// Kills aimed at the creation of the output land this long after it appeared, at most.
const CREATION_WINDOW: Duration = Duration::from_millis(5);
/// Longest wait for a run to create its output or report a frame.
const WAIT_LIMIT: Duration = Duration::from_secs(30);

/// A batch of three runs on two lavapipe devices, both fields stored: three streams that
/// interleave in the output, each with its own parameters and seed.
fn config(sink: &str, noise: f32) -> String {
    let (sink, compression) = sink.split_once('+').map_or((sink, "none"), |(s, c)| (s, c));
    let (compression, chunk_frames, when) = match compression {
        "deflate" => ("deflate:6", 1, false),
        "deflate4" => ("deflate:6", 4, false),
        "chunk4" => ("none", 4, false),
        "when" => ("none", 1, true),
        other => (other, 1, false),
    };
    let mut c = format!(
        "[grid]\nrows = 32\ncols = 32\n[run]\nframes = 40\nsteps_per_frame = 2\nnoise = {noise}\n\
         [devices]\nselect = \"vulkan\"\ncount = 2\n[output]\nsink = \"{sink}\"\npath = \"out\"\nfields = [\"u\", \"v\"]\n\
         compression = \"{compression}\"\nchunk_frames = {chunk_frames}\n"
    );
    if when {
        // Every frame's v_max is above -1: all kept, their count known only as they come.
        c.push_str("when = \"v_max > -1\"\n[analysis]\nfields = [\"v\"]\n");
    }
    for i in 0..3 {
        c.push_str(&format!("[[runs]]\nname = \"r{i}\"\nkernel.params.feed = 0.0{}\nrun.seed = {}\n", i + 2, 11 * i));
    }
    c
}

/// SplitMix64: the kill times, reproducible from the seed.
struct Rng(u64);

impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v.parse().unwrap_or_else(|_| panic!("{name}={v:?} is not a whole number")),
        Err(_) => default,
    }
}

/// One stream as stored: frames as the bits of every field's values (`None`: the frame
/// exists but does not read), steps (`None`: they do not read), attributes.
#[derive(Debug, Clone, PartialEq)]
struct Stream {
    complete: bool,
    frames: Vec<Option<Vec<u8>>>,
    steps: Option<Vec<u64>>,
    attributes: Attributes,
}

/// Everything an output holds, streams by name.
#[derive(Debug, Clone, PartialEq)]
struct Contents {
    complete: bool,
    attributes: Attributes,
    streams: BTreeMap<String, Stream>,
}

impl Contents {
    fn frames(&self) -> usize {
        self.streams.values().map(|s| s.frames.len()).sum()
    }

    /// Frames of the streams marked complete.
    fn complete_frames(&self) -> usize {
        self.streams.values().filter(|s| s.complete).map(|s| s.frames.len()).sum()
    }
}

/// The first difference between two outputs, in words (`None` when equal).
fn difference(got: &Contents, want: &Contents) -> Option<String> {
    if got.complete != want.complete {
        return Some(format!("output complete: {} instead of {}", got.complete, want.complete));
    }
    if got.attributes != want.attributes {
        return Some(format!("run attributes {:?} instead of {:?}", got.attributes, want.attributes));
    }
    let names = |c: &Contents| c.streams.keys().cloned().collect::<Vec<_>>();
    if names(got) != names(want) {
        return Some(format!("streams {:?} instead of {:?}", names(got), names(want)));
    }
    for (name, (g, w)) in got.streams.iter().zip(want.streams.values()).map(|((n, g), w)| (n, (g, w))) {
        if g.frames.len() != w.frames.len() {
            return Some(format!("{name} holds {} frames instead of {}", g.frames.len(), w.frames.len()));
        }
        if let Some(i) = g.frames.iter().zip(&w.frames).position(|(a, b)| a != b) {
            return Some(format!("frame {i} of {name} differs"));
        }
        if (g.complete, &g.steps, &g.attributes) != (w.complete, &w.steps, &w.attributes) {
            return Some(format!(
                "{name}: complete {}, steps {:?}, attributes {:?} instead of {}, {:?}, {:?}",
                g.complete, g.steps, g.attributes, w.complete, w.steps, w.attributes
            ));
        }
    }
    None
}

/// Reads an output completely through `wgpipe_storage::open_output`.
fn read(path: &Path) -> Result<Contents, String> {
    let out = open_output(path).map_err(|e| format!("open_output: {e}"))?;
    let mut streams = BTreeMap::new();
    for (s, summary) in out.streams().iter().enumerate() {
        // The stored bytes of every field, so equal frames are bit-identical.
        let frame = |i| -> Option<Vec<u8>> {
            let fields = (0..out.fields().len()).map(|f| out.read_field(s, f, i).ok().map(|d| d.bytes));
            fields.collect::<Option<Vec<Vec<u8>>>>().map(|v| v.concat())
        };
        let frames = (0..summary.frames).map(frame).collect();
        let steps = out.steps(s).ok();
        let stream = Stream { complete: summary.complete, frames, steps, attributes: summary.attributes.clone() };
        streams.insert(summary.name.clone(), stream);
    }
    Ok(Contents { complete: out.complete(), attributes: out.attributes().clone(), streams })
}

/// `h5dump` reads the whole file (every dataset and attribute) without an error.
fn h5dump_reads(path: &Path) -> Result<(), String> {
    let out = Command::new("h5dump").arg(path).stdout(Stdio::null()).stderr(Stdio::piped()).output();
    match out {
        Err(e) => Err(format!("cannot run h5dump ({e}): install it (Debian: apt-get install hdf5-tools)")),
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!("h5dump failed ({}): {}", o.status, String::from_utf8_lossy(&o.stderr))),
    }
}

/// A `wgpipe run` child whose stderr a thread collects; `first_frame` receives once the run
/// has reported its first frame written.
struct Run {
    child: Child,
    stderr: JoinHandle<String>,
    first_frame: Receiver<()>,
}

fn start(dir: &Path, resume: bool) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wgpipe"));
    cmd.current_dir(dir).args(["run", "c.toml", "--progress", "frames"]);
    if resume {
        cmd.arg("--resume");
    }
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let mut pipe = BufReader::new(child.stderr.take().unwrap());
    let (tx, first_frame) = channel();
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let mut line = Vec::new();
        while pipe.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
            let line_text = String::from_utf8_lossy(&line);
            if written_count(&line_text).is_some_and(|n| n > 0) {
                let _ = tx.send(());
            }
            text.push_str(&line_text);
            line.clear();
        }
        text
    });
    Run { child, stderr, first_frame }
}

/// N of a whole `written N/TOTAL frames` line.
fn written_count(line: &str) -> Option<usize> {
    line.strip_prefix("written ")?.strip_suffix(" frames\n")?.split_once('/')?.0.parse().ok()
}

/// The last count of `written N/TOTAL frames` lines that were printed whole.
fn reported_written(stderr: &str) -> usize {
    stderr.split_inclusive('\n').filter_map(written_count).max().unwrap_or(0)
}

/// Frames reported written per stream: the `written per stream: NAME=N ...` line before the
/// last whole `written N/TOTAL frames` line (the two are printed in one write).
fn reported_per_stream(stderr: &str) -> BTreeMap<String, usize> {
    let mut last = BTreeMap::new();
    let mut pending = None;
    for line in stderr.split_inclusive('\n') {
        if let Some(list) = line.strip_prefix("written per stream: ").and_then(|l| l.strip_suffix('\n')) {
            pending = Some(
                list.split(' ')
                    .filter_map(|kv| kv.split_once('='))
                    .filter_map(|(k, v)| Some((k.to_owned(), v.parse().ok()?)))
                    .collect::<BTreeMap<String, usize>>(),
            );
        } else if written_count(line).is_some()
            && let Some(p) = pending.take()
        {
            last = p;
        }
    }
    last
}

/// When a kill comes, drawn at random per attempt: a kill can land anywhere by
/// [`Moment::StartUp`] alone, but the windows where the output is created and where frames
/// are written are short next to start-up, so two kinds aim at them.
#[derive(Debug, Clone, Copy)]
enum Moment {
    /// This long after the start.
    StartUp(Duration),
    /// This long after the output appeared on disk (a fresh run creating its output).
    Created(Duration),
    /// This long after the run reported its first frame written.
    Writing(Duration),
}

impl Moment {
    /// A random moment, scaled by the uninterrupted run's `timing`.
    fn draw(rng: &mut Rng, timing: &Timing, fresh: bool) -> Moment {
        let kind = rng.next_f64();
        let u = rng.next_f64();
        // Two kills in three after the first frame was reported: the test requires at least
        // half of them to land there, where there are frames to lose.
        if kind < 1.0 / 6.0 || (kind < 1.0 / 3.0 && !fresh) {
            Moment::StartUp(timing.first_frame.mul_f64(u))
        } else if kind < 1.0 / 3.0 {
            Moment::Created(CREATION_WINDOW.mul_f64(u))
        } else {
            Moment::Writing(timing.writing.mul_f64(1.2 * u))
        }
    }

    /// Waits for this moment of `run`, whose output is `path` (returns early if it ended).
    fn wait(self, run: &mut Run, path: &Path) {
        match self {
            Moment::StartUp(d) => std::thread::sleep(d),
            Moment::Created(d) => {
                let at = Instant::now();
                while !path.exists() && at.elapsed() < WAIT_LIMIT {
                    if run.child.try_wait().unwrap().is_some() {
                        return;
                    }
                    std::thread::sleep(Duration::from_micros(100));
                }
                std::thread::sleep(d);
            }
            Moment::Writing(d) => {
                if run.first_frame.recv_timeout(WAIT_LIMIT).is_ok() {
                    std::thread::sleep(d);
                }
            }
        }
    }
}

impl std::fmt::Display for Moment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (what, d) = match self {
            Moment::StartUp(d) => ("after the start", d),
            Moment::Created(d) => ("after the output appeared", d),
            Moment::Writing(d) => ("after the first frame was reported", d),
        };
        write!(f, "{:.1} ms {what}", d.as_secs_f64() * 1e3)
    }
}

/// How long an uninterrupted run takes to its first written frame, and from there to its end.
#[derive(Debug, Clone, Copy)]
struct Timing {
    first_frame: Duration,
    writing: Duration,
}

/// Everything about one attempt, printed with any failure.
struct Attempt<'a> {
    seed: u64,
    sink: &'a str,
    noise: f32,
    number: usize,
    resume: bool,
    moment: Moment,
    stderr: String,
}

impl std::fmt::Display for Attempt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "seed {} (rerun with WGPIPE_KILL_SEED={}), sink {}, noise {}, attempt {}, {}, killed {}\n\
             wgpipe's stderr:\n{}",
            self.seed,
            self.seed,
            self.sink,
            self.noise,
            self.number,
            if self.resume { "run --resume" } else { "run" },
            self.moment,
            self.stderr
        )
    }
}

/// Checks a killed run's output against the uninterrupted one: it opens (HDF5: in `h5dump`
/// too), every frame it holds is the reference's, no frame being written when the kill came
/// shows up broken, complete streams from before are intact, and every stream holds at least
/// the frames the run reported written for it.
///
/// Returns where the kill landed, for the summary: frames reported written, frames the run
/// left (beyond the complete streams from before).
fn check_killed(
    path: &Path,
    sink: &str,
    before: Option<&Contents>,
    reference: &Contents,
    a: &Attempt<'_>,
) -> Option<(usize, usize)> {
    let reported = reported_written(&a.stderr);
    let per_stream = reported_per_stream(&a.stderr);
    assert!(per_stream.values().sum::<usize>() <= reported, "per-stream counts above the total\n{a}");
    if !path.exists() {
        assert!(before.is_none() && reported == 0, "the output is gone after {reported} frames were reported\n{a}");
        return None;
    }
    let dumped = if sink.starts_with("hdf5") { h5dump_reads(path) } else { Ok(()) };
    let got = read(path).unwrap_or_else(|e| panic!("the killed run's output does not open: {e}\n{a}"));
    let mut broken = Vec::new();
    for (name, s) in &got.streams {
        let want = reference.streams.get(name).unwrap_or_else(|| panic!("unexpected stream {name:?}\n{a}"));
        let good = s.frames.iter().zip(&want.frames).take_while(|(g, w)| g == w).count();
        if good < s.frames.len() {
            broken.push((name.clone(), good, s.frames.len() - good));
        }
        // Every frame reported written for this stream is held, bit for bit: no other
        // stream's unreported frame can make up for one lost here.
        let reported_here = per_stream.get(name).copied().unwrap_or(0);
        assert!(good >= reported_here, "{name} holds {good} good frames, {reported_here} were reported written\n{a}");
        let want_steps = &want.steps.as_deref().unwrap_or_default()[..good];
        match s.steps.as_deref() {
            Some(steps) => assert!(steps.get(..good) == Some(want_steps), "steps of {name}: {steps:?}\n{a}"),
            None => assert!(good < s.frames.len(), "the steps of {name} do not read\n{a}"),
        }
        if s.complete {
            assert_eq!(s.frames.len(), want.frames.len(), "{name} is marked complete\n{a}");
        }
    }
    let kept = before.map_or(0, Contents::complete_frames);
    if let Some(before) = before {
        for (name, s) in before.streams.iter().filter(|(_, s)| s.complete) {
            assert_eq!(got.streams.get(name), Some(s), "complete stream {name} changed\n{a}");
        }
    }
    assert!(
        broken.is_empty(),
        "frames differ from the uninterrupted run's (stream, first bad frame, count): {broken:?}\n{a}"
    );
    dumped.unwrap_or_else(|e| panic!("the killed run's HDF5 file is unreadable: {e}\n{a}"));
    for (name, n) in per_stream.iter().filter(|(_, n)| **n > 0) {
        assert!(got.streams.contains_key(name), "stream {name} had {n} frames reported written and is gone\n{a}");
    }
    let held = got.frames();
    assert!(
        held >= kept + reported,
        "the output holds {held} good frames: fewer than the {kept} of complete streams plus the {reported} reported written\n{a}"
    );
    Some((reported, held - kept))
}

/// Runs `c.toml` uninterrupted into `dir`; returns its contents and timing.
fn reference_run(dir: &Path) -> (Contents, Timing) {
    let at = Instant::now();
    let run = start(dir, false);
    let first_frame = run.first_frame.recv_timeout(WAIT_LIMIT).map(|()| at.elapsed());
    let out = run.child.wait_with_output().unwrap();
    let took = at.elapsed();
    let stderr = run.stderr.join().unwrap();
    assert!(out.status.success(), "the uninterrupted run failed:\n{stderr}");
    let contents = read(&dir.join("out")).unwrap();
    let shape: Vec<(bool, usize)> = contents.streams.values().map(|s| (s.complete, s.frames.len())).collect();
    assert!(contents.complete && shape == [(true, 40); 3], "the uninterrupted run: {shape:?}");
    let unreadable = contents.streams.values().any(|s| s.steps.is_none() || s.frames.iter().any(Option::is_none));
    assert!(!unreadable, "the uninterrupted run's output does not read back");
    assert_eq!(reported_written(&stderr), 120, "--progress frames reports every frame:\n{stderr}");
    let per_stream: Vec<usize> = reported_per_stream(&stderr).into_values().collect();
    assert_eq!(per_stream, [40; 3], "--progress frames reports every stream's frames:\n{stderr}");
    let first_frame = first_frame.unwrap_or(took);
    (contents, Timing { first_frame, writing: took.saturating_sub(first_frame) })
}

/// Runs `wgpipe run --resume` (a plain run when there is no output yet) to its end and checks
/// that the output is then the uninterrupted run's; `what` names the case in failures.
fn resume_to_the_end(dir: &Path, sink: &str, reference: &Contents, what: &str) {
    let path = dir.join("out");
    let run = start(dir, outputs(&path).iter().any(|p| p.exists()));
    let status = run.child.wait_with_output().unwrap().status;
    let stderr = run.stderr.join().unwrap();
    assert!(status.success(), "{what}: --resume failed:\n{stderr}");
    if sink.starts_with("hdf5") {
        h5dump_reads(&path).unwrap_or_else(|e| panic!("{what}: the resumed file: {e}"));
    }
    if let Some(d) = difference(&read(&path).unwrap(), reference) {
        panic!("{what}: the resumed output differs from the uninterrupted run's: {d}\n{stderr}");
    }
}

/// The outputs of a run writing `path`: the output, and the reductions' own output of a run
/// that keeps its fields by a condition (`PATH.analysis`).
fn outputs(path: &Path) -> [PathBuf; 2] {
    [path.to_path_buf(), PathBuf::from(format!("{}.analysis", path.display()))]
}

/// Removes the outputs of a run writing `path` ([`outputs`]).
fn remove(path: &Path) {
    for path in outputs(path) {
        if path.is_dir() {
            std::fs::remove_dir_all(&path).unwrap();
        } else if path.exists() {
            std::fs::remove_file(&path).unwrap();
        }
    }
}

#[test]
fn killed_runs_keep_their_frames_and_resume_to_the_uninterrupted_result() {
    if let Err(e) = Command::new("h5dump").arg("--version").output() {
        panic!("h5dump is needed to check killed HDF5 files with a standard tool ({e}): apt-get install hdf5-tools");
    }
    let seed = env_number("WGPIPE_KILL_SEED", DEFAULT_SEED);
    let kills = env_number("WGPIPE_KILLS", DEFAULT_KILLS);
    let mut rng = Rng(seed);
    let (mut landed, mut after_frames) = (0, 0);
    let mut outcomes = Vec::new();
    let chosen = std::env::var("WGPIPE_KILL_SCENARIOS").ok();
    let scenarios: Vec<(&str, f32)> = SCENARIOS
        .into_iter()
        .filter(|(sink, _)| chosen.as_deref().is_none_or(|c| c.split(',').any(|name| name == *sink)))
        .collect();
    assert!(!scenarios.is_empty(), "WGPIPE_KILL_SCENARIOS={chosen:?} names none of {SCENARIOS:?}");
    for (k, &(sink, noise)) in scenarios.iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("c.toml"), config(sink, noise)).unwrap();
        let path: PathBuf = dir.path().join("out");
        let (reference, timing) = reference_run(dir.path());
        remove(&path);
        let goal = kills * (k + 1) / scenarios.len();
        let mut attempts = 0;
        while landed < goal {
            attempts += 1;
            assert!(
                attempts <= ATTEMPTS_PER_KILL * goal.max(1),
                "seed {seed}: only {landed} of {goal} kills landed while wgpipe ran ({sink}, noise {noise})"
            );
            let before = path.exists().then(|| read(&path).unwrap());
            // (Also when only the reductions' output was made before the kill.)
            let resume = outputs(&path).iter().any(|p| p.exists());
            let moment = Moment::draw(&mut rng, &timing, !resume);
            let mut run = start(dir.path(), resume);
            moment.wait(&mut run, &path);
            let _ = run.child.kill();
            let status = run.child.wait().unwrap();
            let a = Attempt { seed, sink, noise, number: attempts, resume, moment, stderr: run.stderr.join().unwrap() };
            if status.signal() == Some(9) {
                landed += 1;
                let at = check_killed(&path, sink, before.as_ref(), &reference, &a);
                after_frames += usize::from(at.is_some_and(|(reported, _)| reported > 0));
                outcomes.push(match at {
                    None => format!("{moment}: no output yet"),
                    Some((reported, held)) => format!("{moment}: {reported} reported, {held} held"),
                });
            } else {
                // It ended before the kill: the output must be the uninterrupted one.
                assert!(status.success(), "the run failed: {status}\n{a}");
                if let Some(d) = difference(&read(&path).unwrap(), &reference) {
                    panic!("a run that ended on its own differs from the uninterrupted one: {d}\n{a}");
                }
                remove(&path);
            }
        }
        resume_to_the_end(dir.path(), sink, &reference, &format!("seed {seed}, {sink}, noise {noise}"));
    }
    // Where the kills landed (frames reported written / frames the run had left in the output).
    eprintln!(
        "seed {seed}: {landed} kills landed, {after_frames} after frames were reported:\n  {}",
        outcomes.join("\n  ")
    );
    // Kills before any frame was reported check creation only: most must find frames to lose.
    assert!(
        2 * after_frames >= landed,
        "seed {seed}: only {after_frames} of {landed} kills landed after frames were reported written: \
         the checks above had little to check"
    );
}
