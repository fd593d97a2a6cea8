//! The `wgpipe` binary end to end: runs, devices, render, and every kind of bad input.
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{PoisonError, RwLock, RwLockReadGuard};

use wgpipe::storage::open_output;

/// Keys that make a run tiny: 16×16, 3 frames, lavapipe only.
const TINY: &[&str] = &[
    "--set",
    "grid.rows=16",
    "--set",
    "grid.cols=12",
    "--set",
    "run.frames=3",
    "--set",
    "run.steps_per_frame=2",
    "--set",
    "devices.select=vulkan",
];

/// HDF5 opens files without close-on-exec, so a `wgpipe` child spawned while another test of
/// this binary has an HDF5 file open in-process inherits it, and with it HDF5's file lock,
/// until the child exits: the other test then cannot reopen its own file ("unable to lock
/// file"). In-process HDF5 access holds this for reading; spawning holds it for writing.
static SPAWN: RwLock<()> = RwLock::new(());

/// Held while this test has HDF5 files open in-process (no child may be spawned meanwhile).
fn no_child_spawned() -> RwLockReadGuard<'static, ()> {
    SPAWN.read().unwrap_or_else(PoisonError::into_inner)
}

/// Starts `command` while no test holds an HDF5 file open in-process.
fn spawn(command: &mut Command) -> std::process::Child {
    let _spawning = SPAWN.write().unwrap_or_else(PoisonError::into_inner);
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

fn wgpipe(dir: &Path, args: &[&str]) -> Output {
    spawn(Command::new(env!("CARGO_BIN_EXE_wgpipe")).current_dir(dir).args(args)).wait_with_output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `args` in a fresh directory holding `files`, expects a failure whose stderr holds
/// every one of `expect`, no panic, and nothing new in the directory.
fn fails(files: &[(&str, &str)], args: &[&str], expect: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let out = wgpipe(dir.path(), args);
    let err = stderr(&out);
    assert!(!out.status.success(), "{args:?} succeeded: {err}");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    for e in expect {
        assert!(err.contains(e), "{args:?}: stderr lacks {e:?}:\n{err}");
    }
    let mut left: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    left.sort();
    let mut given: Vec<String> = files.iter().map(|(n, _)| (*n).to_owned()).collect();
    given.sort();
    assert_eq!(left, given, "{args:?} left files behind");
}

fn tiny_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["run"];
    v.extend_from_slice(TINY);
    v.extend_from_slice(extra);
    v
}

#[test]
fn run_with_overrides_writes_an_hdf5_file_with_every_frame() {
    let dir = tempfile::tempdir().unwrap();
    let out = wgpipe(dir.path(), &tiny_args(&["--set", "output.path=tiny.h5"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("overlap:") && stdout.contains("output: tiny.h5"), "{stdout}");
    let _guard = no_child_spawned();
    let o = open_output(dir.path().join("tiny.h5")).unwrap();
    assert_eq!(o.shape(), [16, 12]);
    assert_eq!(o.fields(), ["v"]);
    assert_eq!(o.streams().len(), 1);
    assert_eq!(o.streams()[0].frames, 3);
    assert!(o.complete() && o.streams()[0].complete);
    assert_eq!(o.steps(0).unwrap(), vec![2, 4, 6]);
}

#[test]
fn devices_lists_at_least_one_adapter() {
    let out = wgpipe(Path::new("."), &["devices"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.lines().any(|l| l.trim_start().starts_with("0 ")), "{stdout}");
}

#[test]
fn render_writes_pngs_of_the_grid_size() {
    let dir = tempfile::tempdir().unwrap();
    let out = wgpipe(
        dir.path(),
        &tiny_args(&["--set", "output.sink=raw", "--set", "output.path=raw", "--set", "output.fields=[\"u\", \"v\"]"]),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let decode = |p: PathBuf| {
        let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(p).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        (info.width, info.height, info.color_type, buf[..info.buffer_size()].to_vec())
    };
    let out = wgpipe(dir.path(), &["render", "raw", "--frame", "2", "--field", "u", "-o", "f.png"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (w, h, color, pixels) = decode(dir.path().join("f.png"));
    assert_eq!((w, h, color), (12, 16, png::ColorType::Rgb));
    assert!(pixels.chunks(3).any(|p| p != &pixels[..3]), "the frame is not uniform");
    let out = wgpipe(dir.path(), &["render", "raw", "--all", "--range", "0,1", "-o", "seq"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for i in 0..3 {
        assert_eq!(decode(dir.path().join(format!("seq/frame_{i:05}.png"))).0, 12);
    }
    let out = wgpipe(dir.path(), &["render", "raw", "--frame", "3", "-o", "g.png"]);
    assert!(!out.status.success() && stderr(&out).contains("frame 3 does not exist"), "{}", stderr(&out));
}

#[test]
fn config_errors_name_key_and_line() {
    fails(
        &[("c.toml", "[grid]\nrows = 8\nrowz = 8\n")],
        &["run", "c.toml"],
        &["c.toml line 3", "grid.rowz", "`rows` or `cols`"],
    );
    fails(
        &[("c.toml", "[run]\nframes = \"many\"\n")],
        &["run", "c.toml"],
        &["c.toml line 2", "run.frames", "invalid type"],
    );
    fails(&[("c.toml", "[grid]\nrows = 0\n")], &["run", "c.toml"], &["c.toml line 2", "grid.rows", "use 1 or more"]);
    fails(&[("c.toml", "\n[run]\nframes = 0\n")], &["run", "c.toml"], &["c.toml line 3", "run.frames"]);
    fails(&[("c.toml", "[io]\nio_buffer = -1\n")], &["run", "c.toml"], &["c.toml line 2", "io.io_buffer"]);
    fails(&[("c.toml", "[io]\nmode = \"fast\"\n")], &["run", "c.toml"], &["io.mode", "`async` or `sync`"]);
    fails(
        &[("c.toml", "[output]\nsink = \"s3\"\n")],
        &["run", "c.toml"],
        &["c.toml line 2", "output.sink", "null, raw, hdf5"],
    );
    fails(&[("c.toml", "[grid\n")], &["run", "c.toml"], &["c.toml line 1", "invalid TOML"]);
    fails(&[], &["run", "--set", "grid.rows=0"], &["--set grid.rows=0", "grid.rows"]);
    fails(&[], &["run", "--set", "grid.rowz=1"], &["--set grid.rowz=1", "unknown field"]);
    fails(&[], &["run", "missing.toml"], &["cannot read config file missing.toml"]);
}

#[test]
fn kernel_errors_name_the_wgsl_file_and_position() {
    let config = "[kernel]\nwgsl = \"k.wgsl\"\nfields = [\"u\"]\n[output]\nsink = \"null\"\n";
    fails(&[("c.toml", config)], &["run", "c.toml"], &["c.toml line 2", "kernel.wgsl", "k.wgsl"]);
    let bad = "@compute @workgroup_size(8, 8)\nfn main(@builtin(global_invocation_id) id: vec3<u32>) {\n    u_out[0] = nope;\n}\n";
    fails(&[("c.toml", config), ("k.wgsl", bad)], &["run", "c.toml"], &["k.wgsl:3:", "nope"]);
    fails(&[("c.toml", "[kernel]\nname = \"brusselator\"\n")], &["run", "c.toml"], &["kernel.name", "gray-scott"]);
}

#[test]
fn no_matching_device_and_existing_output_are_refused() {
    fails(
        &[],
        &["run", "--set", "devices.select=no-such-gpu"],
        &["devices.select", "no GPU adapter matches", "wgpipe devices"],
    );
    fails(&[("output.h5", "keep me")], &["run", "--set", "grid.rows=8"], &["output.h5 already exists", "overwrite"]);
}

/// A batch config of `runs` [[runs]] entries writing `out.h5`.
fn batch_config(runs: usize) -> String {
    let mut c = String::from(
        "[grid]\nrows = 16\ncols = 16\n[run]\nframes = 3\nsteps_per_frame = 4\n[devices]\nselect = \"vulkan\"\ncount = 2\n[output]\npath = \"out.h5\"\n",
    );
    for i in 0..runs {
        c.push_str(&format!("[[runs]]\nname = \"r{i}\"\nkernel.params.feed = 0.0{}\nrun.seed = {i}\n", i + 2));
    }
    c
}

#[test]
fn batch_runs_are_streams_with_their_parameters() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.toml"), "[grid]\nrows = 8\ncols = 8\n[run]\nframes = 2\n[devices]\nselect = \"vulkan\"\n[output]\npath = \"s.h5\"\n[sweep]\nfeed = [0.02, 0.03]\nkill = [0.05, 0.06]\n").unwrap();
    let out = wgpipe(dir.path(), &["run", "s.toml"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let _guard = no_child_spawned();
    let o = open_output(dir.path().join("s.h5")).unwrap();
    let names: Vec<&str> = o.streams().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["feed0.02_kill0.05", "feed0.02_kill0.06", "feed0.03_kill0.05", "feed0.03_kill0.06"]);
    let s = &o.streams()[3];
    assert_eq!(s.frames, 2);
    assert_eq!(s.attributes.get("kill"), Some(&wgpipe::storage::AttrValue::Float(f64::from(0.06f32))));
}

#[test]
fn resume_runs_only_the_missing_runs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("two.toml"), batch_config(2)).unwrap();
    std::fs::write(dir.path().join("four.toml"), batch_config(4)).unwrap();
    let out = wgpipe(dir.path(), &["run", "two.toml"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let guard = no_child_spawned();
    let before = open_output(dir.path().join("out.h5")).unwrap();
    let first: Vec<Vec<f32>> = (0..2).map(|s| before.read_frame(s, 0, 2).unwrap()).collect();
    drop(before);
    drop(guard);
    let out = wgpipe(dir.path(), &["run", "four.toml", "--resume"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("2 runs complete, 2 to run"), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("6 frames"), "only the new runs ran");
    let guard = no_child_spawned();
    let after = open_output(dir.path().join("out.h5")).unwrap();
    let names: Vec<&str> = after.streams().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["r0", "r1", "r2", "r3"]);
    assert!(after.complete() && after.streams().iter().all(|s| s.complete && s.frames == 3));
    for (s, frame) in first.iter().enumerate() {
        assert_eq!(&after.read_frame(s, 0, 2).unwrap(), frame, "stream r{s} changed");
    }
    drop(after);
    drop(guard);
    let out = wgpipe(dir.path(), &["run", "four.toml", "--resume"]);
    assert!(out.status.success() && stderr(&out).contains("nothing to do"), "{}", stderr(&out));
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_cleanly_and_exits_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let child = spawn(
        Command::new(env!("CARGO_BIN_EXE_wgpipe"))
            .current_dir(dir.path())
            .args(["run", "--set", "grid.rows=16", "--set", "grid.cols=16", "--set", "run.frames=1000000"])
            .args(["--set", "run.steps_per_frame=1", "--set", "devices.select=vulkan", "--set", "output.sink=raw"])
            .args(["--set", "output.path=out"]),
    );
    // Wait until frames are being written, then interrupt.
    let steps = dir.path().join("out/stream0.steps.bin");
    let start = std::time::Instant::now();
    while std::fs::metadata(&steps).map(|m| m.len() < 8 * 5).unwrap_or(true) {
        assert!(start.elapsed().as_secs() < 30, "no frames written");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let killed = {
        let _spawning = SPAWN.write().unwrap_or_else(PoisonError::into_inner);
        Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap()
    };
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted:") && err.contains("frames written"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let o = open_output(dir.path().join("out")).unwrap();
    let written = o.streams()[0].frames;
    assert!(written >= 5 && err.contains(&format!("interrupted: {written} frames written")), "{written}: {err}");
}

/// Passes writes to `inner` until `left` runs out, then fails, like a disk filling up.
struct FailingSink {
    inner: Box<dyn wgpipe::storage::Sink>,
    left: u32,
}

impl wgpipe::storage::Sink for FailingSink {
    fn begin(&mut self, layout: &wgpipe::storage::StreamLayout) -> wgpipe::storage::Result<()> {
        self.inner.begin(layout)
    }
    fn write(&mut self, frame: &wgpipe::storage::Frame) -> wgpipe::storage::Result<()> {
        if self.left == 0 {
            return Err(wgpipe::storage::Error::Usage("injected failure"));
        }
        self.left -= 1;
        self.inner.write(frame)
    }
    fn finish(&mut self) -> wgpipe::storage::Result<wgpipe::storage::SinkSummary> {
        self.inner.finish()
    }
}

#[test]
fn resume_rewrites_a_stream_left_incomplete_by_a_failed_run() {
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("two.toml");
    std::fs::write(&config_path, batch_config(2)).unwrap();
    // The first run, through the library: one device, r0's 3 frames and 1 of r1's, then
    // the sink fails.
    let out_path = dir.path().join("out.h5");
    let guard = no_child_spawned(); // the library run and the reader below open out.h5 here
    let sets = ["devices.count=1".to_owned(), format!("output.path=\"{}\"", out_path.display())];
    let config = wgpipe::config::Config::load(Some(&config_path), &sets).unwrap();
    let (selector, count) = config.devices();
    let gpus = wgpipe::compute::open_devices(&selector, count).unwrap();
    let jobs = config.jobs(gpus.len(), |_| false);
    let inner = wgpipe::storage::open_sink(config.sink_name(), config.sink_options()).unwrap();
    let failed = config.builder().gpus(gpus).jobs(jobs).sink(FailingSink { inner, left: 4 }).run();
    assert!(matches!(failed, Err(wgpipe::Error::Failed { .. })), "{failed:?}");
    let before = open_output(&out_path).unwrap();
    let state: Vec<(bool, u64)> = before.streams().iter().map(|s| (s.complete, s.frames)).collect();
    assert_eq!(state, [(true, 3), (false, 1)]);
    let r0 = before.read_frame(0, 0, 2).unwrap();
    drop(before);
    drop(guard);

    let out = wgpipe(dir.path(), &["run", "two.toml", "--resume"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("1 runs complete, 1 to run"), "{}", stderr(&out));
    let _guard = no_child_spawned();
    let after = open_output(&out_path).unwrap();
    assert!(after.complete() && after.streams().iter().all(|s| s.complete && s.frames == 3), "{:?}", after.streams());
    assert_eq!(after.read_frame(after.stream_index("r0").unwrap(), 0, 2).unwrap(), r0, "r0 untouched");
}
