//! The `wgpipe` binary end to end: runs, devices, render, and every kind of bad input.
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use wgpipe::storage::open_output;

/// Keys that make a run tiny: 16×12, 3 frames, one stream on the first adapter (whatever its
/// backend: the tests run on whatever wgpu finds).
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
    "devices.select=[0]",
];

/// Starts `command` with its output captured.
fn spawn(command: &mut Command) -> std::process::Child {
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

fn wgpipe(dir: &Path, args: &[&str]) -> Output {
    spawn(Command::new(env!("CARGO_BIN_EXE_wgpipe")).current_dir(dir).args(args)).wait_with_output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `args` in a fresh directory holding `files`, expects exit status 1 with stderr holding
/// every one of `expect` (the key and where it was set, for a config error), no panic, and
/// nothing new in the directory.
fn fails(files: &[(&str, &str)], args: &[&str], expect: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let out = wgpipe(dir.path(), args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{args:?}: exit status {}: {err}", out.status);
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
    let o = open_output(dir.path().join("tiny.h5")).unwrap();
    let v = wgpipe::storage::FieldSpec::new("v", wgpipe::storage::DType::F32, [16, 12]);
    assert_eq!(o.fields(), [v.with_units("1").with_long_name("inhibitor v")]);
    assert_eq!(o.streams().len(), 1);
    assert_eq!(o.streams()[0].frames, 3);
    assert!(o.complete() && o.streams()[0].complete);
    assert_eq!(o.steps(0).unwrap(), vec![2, 4, 6]);
}

/// A run whose stdout and stderr readers are gone (`wgpipe run … 2>&1 | head -1`) runs to its
/// end: it writes every frame and exits 0, its messages dropped (they used to panic it).
#[test]
fn a_run_whose_output_pipes_are_closed_finishes_its_frames() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = tiny_args(&["--set", "output.path=closed.h5", "--progress", "frames"]);
    args.extend(["--set", "run.frames=8"]);
    let mut child = spawn(Command::new(env!("CARGO_BIN_EXE_wgpipe")).current_dir(dir.path()).args(&args));
    drop(child.stdout.take());
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert!(status.success(), "exit status {status}");
    let o = open_output(dir.path().join("closed.h5")).unwrap();
    assert!(o.complete() && o.streams()[0].frames == 8, "{:?}", o.streams());
}

/// `--progress json`: every progress line on stderr is one JSON object; the first is at the
/// start (nothing written, no ETA), the last says `done` with every frame written, and the
/// per-device counts add up.
#[test]
fn progress_json_prints_one_parsable_object_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = wgpipe(
        dir.path(),
        &tiny_args(&["--set", "devices.count=2", "--set", "output.sink=null", "--progress", "json"]),
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let lines: Vec<serde_json::Value> = err
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(lines.len() >= 2, "{err}");
    let (first, last) = (&lines[0], &lines[lines.len() - 1]);
    assert_eq!((first["written"].as_u64(), first["expected"].as_u64()), (Some(0), Some(6)), "{first}");
    assert!(first["eta_s"].is_null() && first["done"] == false, "{first}");
    assert_eq!((last["written"].as_u64(), last["computed"].as_u64()), (Some(6), Some(6)), "{last}");
    assert_eq!(last["done"], true, "{last}");
    assert_eq!(last["eta_s"].as_f64(), Some(0.0), "{last}");
    assert_eq!(last["queue"].as_u64(), Some(0), "{last}");
    let devices = last["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 2, "{last}");
    assert_eq!(devices.iter().map(|d| d["written"].as_u64().unwrap()).sum::<u64>(), 6, "{last}");
    assert!(devices.iter().all(|d| d["label"].as_str().is_some_and(|l| !l.is_empty())), "{last}");
    for key in ["frames_per_s", "mb_per_s", "cell_steps_per_s", "elapsed_s"] {
        assert!(lines.iter().all(|l| l[key].as_f64().is_some_and(|x| x >= 0.0)), "{key}: {err}");
    }
    assert_eq!(lines.iter().filter(|l| l["done"] == true).count(), 1, "{err}");
}

#[test]
fn devices_lists_at_least_one_adapter() {
    let out = wgpipe(Path::new("."), &["devices"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.lines().any(|l| l.trim_start_matches(['*', ' ']).starts_with("0 ")), "{stdout}");
    // Every adapter line carries the default's verdict; at least one adapter is taken.
    let rows: Vec<&str> =
        stdout.lines().skip(1).filter(|l| l.trim_start_matches(['*', ' ']).starts_with(char::is_numeric)).collect();
    assert!(!rows.is_empty(), "{stdout}");
    let verdicts = ["hardware adapter", "no hardware adapter exists", "same adapter as", "a hardware adapter exists"];
    assert!(rows.iter().all(|l| verdicts.iter().any(|v| l.contains(v))), "{stdout}");
    assert!(rows.iter().any(|l| l.starts_with('*')), "no adapter marked as the default's: {stdout}");
    assert!(stdout.contains("1 on the others"), "the per-adapter kernel width is explained: {stdout}");
}

/// `wgpipe devices` with no display, no `XDG_RUNTIME_DIR`, and `extra` set.
fn devices_without_a_display(extra: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_wgpipe"));
    for name in ["XDG_RUNTIME_DIR", "NODEVICE_SELECT"].iter().chain(&wgpipe::compute::headless::LAYER_WANTED) {
        command.env_remove(name);
    }
    spawn(command.envs(extra.iter().copied()).arg("devices")).wait_with_output().unwrap()
}

/// Whether Mesa's device-select Vulkan layer is installed (lavapipe's package installs it),
/// in a folder where the Vulkan loader looks for implicit layers.
fn mesa_device_select_layer_installed() -> bool {
    let data_dirs = std::env::var("XDG_DATA_DIRS").unwrap_or_else(|_| "/usr/local/share:/usr/share".to_owned());
    let config_dirs = std::env::var("XDG_CONFIG_DIRS").unwrap_or_else(|_| "/etc/xdg".to_owned());
    let roots = data_dirs.split(':').chain(config_dirs.split(':')).chain(["/etc", "/usr/share", "/usr/local/share"]);
    roots
        .map(|root| Path::new(root).join("vulkan/implicit_layer.d"))
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flatten()
        .filter_map(|entry| std::fs::read_to_string(entry.ok()?.path()).ok())
        .any(|manifest| manifest.contains("VK_LAYER_MESA_device_select"))
}

#[test]
fn a_machine_without_a_display_hears_nothing_from_the_vulkan_layers_display_probe() {
    // Mesa's device-select layer, asked to order GPUs by a Wayland display (here a missing
    // one, named relative to the missing XDG_RUNTIME_DIR), makes libwayland print its error
    // while wgpu enumerates adapters: the control, which shows that the check below can fail
    // where the layer is installed (CI: lavapipe's package installs it). Without the layer
    // nothing prints the message either way.
    if mesa_device_select_layer_installed() {
        let control = devices_without_a_display(&[("WAYLAND_DISPLAY", "wayland-99")]);
        let control = stderr(&control);
        assert!(control.contains("XDG_RUNTIME_DIR is invalid"), "the layer printed nothing to silence: {control}");
    }
    let out = devices_without_a_display(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("XDG_RUNTIME_DIR"), "{}", stderr(&out));
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
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("frame 3 does not exist"), "{}", stderr(&out));
}

/// Decodes a PNG: width, height, RGB bytes.
fn decode_png(p: &Path) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(p).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    (info.width, info.height, buf[..info.buffer_size()].to_vec())
}

/// A 3-D field of u16 (not f32) written through the HDF5 sink: the default is the middle z
/// plane, `--slice` picks any plane of any axis with the other axes in order, `--max` the
/// largest value along an axis.
#[test]
fn render_shows_3d_fields_of_any_dtype_as_slices_and_projections() {
    use wgpipe::storage::{DType, FieldSpec, Frame, Hdf5Sink, Sink, SinkOptions, StreamInfo, StreamLayout};
    let dir = tempfile::tempdir().unwrap();
    let (nz, ny, nx) = (5usize, 3usize, 4usize);
    let layout =
        StreamLayout::new(vec![FieldSpec::new("d", DType::U16, [nz, ny, nx])]).with_stream(StreamInfo::new("s"));
    // Value (z, y, x) = 100 z + 10 y + x: the largest along z is the last plane.
    let values: Vec<u16> =
        (0..nz * ny * nx).map(|i| (100 * (i / (ny * nx)) + 10 * (i / nx % ny) + i % nx) as u16).collect();
    let mut sink = Hdf5Sink::new(SinkOptions::new(dir.path().join("d.h5")));
    sink.begin(&layout).unwrap();
    sink.write(&Frame::new(0, 0, 1, values.iter().flat_map(|v| v.to_le_bytes()).collect())).unwrap();
    sink.finish().unwrap();

    let render = |name: &str, extra: &[&str]| {
        let mut args = vec!["render", "d.h5", "--frame", "0", "--range", "0,500", "-o", name];
        args.extend_from_slice(extra);
        let out = wgpipe(dir.path(), &args);
        assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
        decode_png(&dir.path().join(name))
    };
    let middle = render("mid.png", &[]);
    assert_eq!((middle.0, middle.1), (nx as u32, ny as u32), "a z plane is ny × nx");
    assert_eq!(middle, render("z2.png", &["--slice", "z=2"]), "the default is the middle of z");
    assert_ne!(middle, render("z0.png", &["--slice", "z=0"]));
    assert_eq!(render("max.png", &["--max", "z"]), render("z4.png", &["--slice", "z=4"]));
    let y = render("y1.png", &["--slice", "y=1"]);
    assert_eq!((y.0, y.1), (nx as u32, nz as u32), "a y plane is nz × nx");
    let x = render("x3.png", &["--slice", "x=3"]);
    assert_eq!((x.0, x.1), (ny as u32, nz as u32), "an x plane is nz × ny");
    assert_eq!(render("maxx.png", &["--max", "x"]), x);
    let out = wgpipe(dir.path(), &["render", "d.h5", "--frame", "0", "--slice", "z=5", "-o", "bad.png"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--slice z=5 is outside the field: z runs from 0 to 4"), "{}", stderr(&out));
}

#[test]
fn config_errors_name_key_and_line() {
    fails(
        &[("c.toml", "[grid]\nrows = 8\nrowz = 8\n")],
        &["run", "c.toml"],
        &["c.toml line 3", "grid.rowz", "expected one of `shape`, `rows`, `cols`"],
    );
    fails(
        &[("c.toml", "[run]\nframes = \"many\"\n")],
        &["run", "c.toml"],
        &["c.toml line 2", "run.frames", "invalid type"],
    );
    fails(&[("c.toml", "[grid]\nrows = 0\n")], &["run", "c.toml"], &["c.toml line 2", "grid.rows", "use 1 or more"]);
    fails(&[("c.toml", "\n[run]\nframes = 0\n")], &["run", "c.toml"], &["c.toml line 3", "run.frames"]);
    fails(&[("c.toml", "[io]\nio_buffer = -1\n")], &["run", "c.toml"], &["c.toml line 2", "io.io_buffer"]);
    fails(
        &[("c.toml", "[io]\nmode = \"fast\"\n")],
        &["run", "c.toml"],
        &["c.toml line 2", "io.mode", "one of `auto`, `async`, `sync`"],
    );
    fails(
        &[("c.toml", "[output]\nsink = \"s3\"\n")],
        &["run", "c.toml"],
        &["c.toml line 2", "output.sink", "null, raw, hdf5, zarr, adios2"],
    );
    fails(&[("c.toml", "[grid\n")], &["run", "c.toml"], &["c.toml line 1", "invalid TOML"]);
    fails(&[], &["run", "--set", "grid.rows=0"], &["--set grid.rows=0", "grid.rows"]);
    fails(&[], &["run", "--set", "grid.rowz=1"], &["--set grid.rowz=1", "grid.rowz", "unknown field"]);
    fails(&[], &["run", "missing.toml"], &["cannot read config file missing.toml"]);
}

#[test]
fn kernel_errors_name_the_wgsl_file_and_position() {
    let config = "[kernel]\nwgsl = \"k.wgsl\"\nfields = [\"u\"]\n[output]\nsink = \"null\"\n";
    fails(&[("c.toml", config)], &["run", "c.toml"], &["c.toml line 2", "kernel.wgsl", "k.wgsl"]);
    let bad = "@compute @workgroup_size(8, 8)\nfn main(@builtin(global_invocation_id) id: vec3<u32>) {\n    u_out[0] = nope;\n}\n";
    fails(
        &[("c.toml", config), ("k.wgsl", bad)],
        &["run", "c.toml"],
        &["c.toml line 2", "kernel.wgsl", "k.wgsl:3:", "nope"],
    );
    fails(&[("c.toml", "[kernel]\nname = \"brusselator\"\n")], &["run", "c.toml"], &["kernel.name", "gray-scott"]);
}

#[test]
fn no_matching_device_and_existing_output_are_refused() {
    fails(
        &[],
        &["run", "--set", "devices.select=no-such-gpu"],
        &["devices.select", "no GPU adapter matches", "wgpipe devices"],
    );
    fails(
        &[("output.h5", "keep me")],
        &["run", "--set", "grid.rows=8"],
        &["output.path", "output.h5 already exists", "overwrite"],
    );
}

/// A batch config of `runs` [[runs]] entries writing `path` with the sink `sink`.
fn batch_config(runs: usize, sink: &str, path: &str) -> String {
    let mut c = format!(
        "[grid]\nrows = 16\ncols = 16\n[run]\nframes = 3\nsteps_per_frame = 4\n[devices]\nselect = [0]\ncount = 2\n[output]\nsink = \"{sink}\"\npath = \"{path}\"\n",
    );
    for i in 0..runs {
        c.push_str(&format!("[[runs]]\nname = \"r{i}\"\nkernel.params.feed = 0.0{}\nrun.seed = {i}\n", i + 2));
    }
    c
}

#[test]
fn batch_runs_are_streams_with_their_parameters() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.toml"), "[grid]\nrows = 8\ncols = 8\n[run]\nframes = 2\n[devices]\nselect = [0]\n[output]\npath = \"s.h5\"\n[sweep]\nfeed = [0.02, 0.03]\nkill = [0.05, 0.06]\n").unwrap();
    let out = wgpipe(dir.path(), &["run", "s.toml"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let o = open_output(dir.path().join("s.h5")).unwrap();
    let names: Vec<&str> = o.streams().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["feed0.02_kill0.05", "feed0.02_kill0.06", "feed0.03_kill0.05", "feed0.03_kill0.06"]);
    let s = &o.streams()[3];
    assert_eq!(s.frames, 2);
    assert_eq!(s.attributes.get("kill"), Some(&wgpipe::storage::AttrValue::Float32(0.06)));
}

/// Runs two runs of a batch with `sink` into `path`, then the four of the same batch with
/// `--resume`: only the two missing ones run, the first two are untouched.
fn resume_runs_only_the_missing_runs(sink: &str, path: &str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("two.toml"), batch_config(2, sink, path)).unwrap();
    std::fs::write(dir.path().join("four.toml"), batch_config(4, sink, path)).unwrap();
    let out = wgpipe(dir.path(), &["run", "two.toml"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let before = open_output(dir.path().join(path)).unwrap();
    let first: Vec<Vec<f32>> = (0..2).map(|s| before.read_f32(s, 0, 2).unwrap()).collect();
    drop(before);
    let out = wgpipe(dir.path(), &["run", "four.toml", "--resume"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("2 runs complete, 2 to run"), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("6 frames"), "only the new runs ran");
    let after = open_output(dir.path().join(path)).unwrap();
    let names: Vec<&str> = after.streams().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["r0", "r1", "r2", "r3"]);
    assert!(after.complete() && after.streams().iter().all(|s| s.complete && s.frames == 3));
    for (s, frame) in first.iter().enumerate() {
        assert_eq!(&after.read_f32(s, 0, 2).unwrap(), frame, "stream r{s} changed");
    }
    drop(after);
    let out = wgpipe(dir.path(), &["run", "four.toml", "--resume"]);
    assert!(out.status.success() && stderr(&out).contains("nothing to do"), "{}", stderr(&out));
}

#[test]
fn resume_runs_only_the_missing_runs_of_an_hdf5_file() {
    resume_runs_only_the_missing_runs("hdf5", "out.h5");
}

#[test]
fn resume_runs_only_the_missing_runs_of_a_zarr_store() {
    resume_runs_only_the_missing_runs("zarr", "out.zarr");
}

/// The same run through the Zarr sink and the HDF5 sink stores the same frames and steps;
/// `wgpipe info` describes the store and `wgpipe render` draws its frames.
#[test]
fn a_zarr_store_holds_what_the_hdf5_file_holds_and_info_and_render_read_it() {
    let dir = tempfile::tempdir().unwrap();
    let fields = ["--set", "output.fields=[\"u\", \"v\"]"];
    let h5 = wgpipe(dir.path(), &tiny_args(&[&["--set", "output.path=t.h5"][..], &fields].concat()));
    assert!(h5.status.success(), "{}", stderr(&h5));
    let zarr = ["--set", "output.sink=zarr", "--set", "output.path=t.zarr", "--set", "output.compression=zstd"];
    let out = wgpipe(dir.path(), &tiny_args(&[&zarr[..], &fields].concat()));
    assert!(out.status.success(), "{}", stderr(&out));
    let (a, b) = (open_output(dir.path().join("t.h5")).unwrap(), open_output(dir.path().join("t.zarr")).unwrap());
    assert_eq!(b.format(), wgpipe::storage::OutputFormat::Zarr);
    assert!(b.complete());
    assert_eq!(a.fields(), b.fields());
    assert_eq!(a.streams().len(), b.streams().len());
    for s in 0..a.streams().len() {
        assert_eq!(a.streams()[s].frames, b.streams()[s].frames);
        assert_eq!(a.streams()[s].attributes, b.streams()[s].attributes, "parameters with their types");
        assert_eq!(a.steps(s).unwrap(), b.steps(s).unwrap());
        for f in 0..a.fields().len() {
            for i in 0..a.streams()[s].frames {
                assert_eq!(
                    a.read_field(s, f, i).unwrap(),
                    b.read_field(s, f, i).unwrap(),
                    "stream {s} field {f} frame {i}"
                );
            }
        }
    }
    let info = wgpipe(dir.path(), &["info", "t.zarr"]);
    assert!(info.status.success(), "{}", stderr(&info));
    let text = String::from_utf8_lossy(&info.stdout);
    assert!(text.contains("t.zarr (Zarr v3 store)") && text.contains("complete: yes"), "{text}");
    let render = wgpipe(dir.path(), &["render", "t.zarr", "--frame", "1", "--field", "v", "-o", "z.png"]);
    assert!(render.status.success(), "{}", stderr(&render));
    let (w, h, _) = decode_png(&dir.path().join("z.png"));
    assert_eq!((w, h), (12, 16));
}

#[test]
fn zarr_options_are_checked_at_their_keys() {
    let dir = tempfile::tempdir().unwrap();
    for (set, key, says) in [
        ("output.shard_frames=4", "output.shard_frames", "only the zarr sink has shards"),
        ("output.compression=zstd", "output.compression", "Zarr codec"),
    ] {
        let out = wgpipe(dir.path(), &tiny_args(&["--set", set]));
        assert_eq!(out.status.code(), Some(1), "{set}: {}", stderr(&out));
        assert!(stderr(&out).contains(key) && stderr(&out).contains(says), "{set}: {}", stderr(&out));
    }
    let chunked = ["--set", "output.sink=zarr", "--set", "output.path=c.zarr", "--set", "output.chunk_frames=2"];
    let out = wgpipe(dir.path(), &tiny_args(&chunked));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("output.chunk_frames") && stderr(&out).contains("shard_frames"), "{}", stderr(&out));
    assert!(!dir.path().join("c.zarr").exists());
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_cleanly_and_exits_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let child = spawn(
        Command::new(env!("CARGO_BIN_EXE_wgpipe"))
            .current_dir(dir.path())
            .args(["run", "--set", "grid.rows=16", "--set", "grid.cols=16", "--set", "run.frames=1000000"])
            .args(["--set", "run.steps_per_frame=1", "--set", "devices.select=[0]", "--set", "output.sink=raw"])
            .args(["--set", "output.path=out"]),
    );
    // Wait until frames are being written, then interrupt.
    let steps = dir.path().join("out/stream0.steps.bin");
    let start = std::time::Instant::now();
    while std::fs::metadata(&steps).map(|m| m.len() < 8 * 5).unwrap_or(true) {
        assert!(start.elapsed().as_secs() < 30, "no frames written");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let killed = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted:") && err.contains("frames written"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let o = open_output(dir.path().join("out")).unwrap();
    let written = o.streams()[0].frames;
    assert!(written >= 5 && err.contains(&format!("interrupted: {written} frames written")), "{written}: {err}");
    // The unfinished stream is marked so (a resume redoes it), and every frame it holds reads.
    assert!(!o.streams()[0].complete, "{:?}", o.streams()[0]);
    assert_eq!(o.steps(0).unwrap(), (1..=written).collect::<Vec<u64>>());
    for i in 0..written {
        assert!(o.read_f32(0, 0, i).unwrap().iter().all(|x| x.is_finite()), "frame {i}");
    }
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
    std::fs::write(&config_path, batch_config(2, "hdf5", "out.h5")).unwrap();
    // The first run, through the library: one device, r0's 3 frames and 1 of r1's, then
    // the sink fails.
    let out_path = dir.path().join("out.h5");
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
    let r0 = before.read_f32(0, 0, 2).unwrap();
    drop(before);

    let out = wgpipe(dir.path(), &["run", "two.toml", "--resume"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("1 runs complete, 1 to run"), "{}", stderr(&out));
    let after = open_output(&out_path).unwrap();
    assert!(after.complete() && after.streams().iter().all(|s| s.complete && s.frames == 3), "{:?}", after.streams());
    assert_eq!(after.read_f32(after.stream_index("r0").unwrap(), 0, 2).unwrap(), r0, "r0 untouched");
}

/// Like [`fails`] with `--set` arguments only, and the error must come within a second.
fn fails_fast(sets: &[&str], expect: &[&str]) {
    let mut args = vec!["run"];
    for set in sets {
        args.extend(["--set", set]);
    }
    let start = std::time::Instant::now();
    fails(&[], &args, expect);
    let took = start.elapsed();
    assert!(took < std::time::Duration::from_secs(1), "{args:?}: refused after {took:?}");
}

#[test]
fn impossible_sizes_are_refused_within_a_second_naming_the_key_and_leave_no_output() {
    fails_fast(
        &["grid.rows=100000", "grid.cols=100000"],
        &["--set grid.cols=100000: grid: invalid grid [100000, 100000]", "10000000000 cells", "use a grid of at most"],
    );
    // Beyond what a device holds (lavapipe: 128 MiB per storage buffer) or the host has.
    fails_fast(&["grid.rows=20000", "grid.cols=20000"], &["--set grid.cols=20000: grid: a 20000×20000 grid", "bytes"]);
    fails_fast(
        &["grid.rows=16", "grid.cols=16", "output.chunk_frames=100000000"],
        &[
            "--set output.chunk_frames=100000000: output.chunk_frames: field v (float32 [16, 16]): chunk_frames 100000000",
            "4294967295 bytes per chunk: use chunk_frames 4194303 or less",
        ],
    );
    fails_fast(&["io.io_buffer=100000000"], &["--set io.io_buffer=100000000: io.io_buffer:", "host memory"]);
    fails_fast(
        &["io.staging_buffers=10000000"],
        &["--set io.staging_buffers=10000000: io.staging_buffers:", "host memory"],
    );
    fails_fast(&["devices.count=5000"], &["--set devices.count=5000: devices.count: 5000 is out of range"]);
}

#[test]
fn devices_select_takes_an_integer() {
    let dir = tempfile::tempdir().unwrap();
    let out = wgpipe(
        dir.path(),
        &tiny_args(&["--set", "devices.select=0", "--set", "output.sink=raw", "--set", "output.path=o"]),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(dir.path().join("o/run.json").is_file());
    let accepted = "an adapter index such as 0, or a list of indices such as [0, 1]";
    fails(
        &[],
        &["run", "--set", "devices.select=true"],
        &["--set devices.select=true: devices.select: invalid type", accepted],
    );
    fails(
        &[],
        &["run", "--set", "devices.select=-1"],
        &["--set devices.select=-1: devices.select: invalid value", accepted],
    );
    fails(&[("c.toml", "[devices]\nselect = 1.5\n")], &["run", "c.toml"], &["c.toml line 2: devices.select", accepted]);
}

#[test]
fn output_and_stream_errors_name_their_key_before_any_device_opens() {
    fails(
        &[],
        &["run", "--set", "output.path=/nonexistent/x.h5"],
        &["--set output.path=/nonexistent/x.h5: output.path: directory /nonexistent does not exist"],
    );
    fails(
        &[],
        &["run", "--set", "output.compression=zip"],
        &["--set output.compression=zip: output.compression:", "deflate"],
    );
    if wgpipe::storage::Compression::BloscLz4(5).check_available().is_err() {
        fails(
            &[],
            &["run", "--set", "output.compression=\"blosc-lz4\""],
            &["--set output.compression=\"blosc-lz4\": output.compression:", "--features blosc"],
        );
    }
    fails(
        &[("c.toml", "[[runs]]\nname = \"..\"\n")],
        &["run", "c.toml"],
        &["c.toml line 2: runs[0].name: stream name \"..\" is not allowed"],
    );
    fails(
        &[("c.toml", "[output]\nsink = \"raw\"\npath = \"out\"\n"), ("out", "a file, not a raw output")],
        &["run", "c.toml", "--set", "output.overwrite=true"],
        &["c.toml line 3: output.path: output out cannot be replaced"],
    );
}

/// A tmpfs of `bytes` mounted on `dir` until dropped (needs root; CI runs as root).
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, bytes: u64) -> Self {
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "wgpipe-test"])
            .arg(dir)
            .output();
        match out {
            Ok(o) if o.status.success() => Tmpfs(dir.to_path_buf()),
            Ok(o) => panic!(
                "cannot mount a tmpfs on {}: {}; this test needs root (CI runs as root)",
                dir.display(),
                String::from_utf8_lossy(&o.stderr).trim()
            ),
            Err(e) => panic!("cannot run mount ({e}): install util-linux and run the tests as root"),
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        if !Command::new("umount").arg(&self.0).status().is_ok_and(|s| s.success()) {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

/// `wgpipe run` of the default job with `settings` onto a tmpfs of `bytes`, writing `out.h5`
/// there; returns the output's path and the run's stderr, which must say it failed for a full
/// disk, naming the file.
fn run_onto_a_small_disk(dir: &Path, bytes: u64, settings: &[&str]) -> (PathBuf, String, Tmpfs) {
    let disk = dir.join("disk");
    std::fs::create_dir(&disk).unwrap();
    let tmpfs = Tmpfs::mount(&disk, bytes);
    let path = disk.join("out.h5");
    let output = format!("output.path=\"{}\"", path.display());
    let mut args = vec!["run", "--set", "devices.select=[0]", "--set", &output];
    for s in settings {
        args.extend(["--set", s]);
    }
    let out = wgpipe(dir, &args);
    let err = stderr(&out);
    assert!(!out.status.success(), "the run succeeded on a disk of {bytes} bytes: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("disk full") && err.contains(&path.display().to_string()), "{err}");
    (path, err, tmpfs)
}

/// The default run onto a 6 MiB disk (uncompressed: laid out whole at the start, the frames
/// written into it) and compressed onto a 1 MiB one (the file grows with every frame): each
/// fails saying the disk is full and naming the file, and the file holds every frame the
/// error says was written (before the HDF5 sink reserved space ahead, h5py could read none
/// of them).
#[test]
fn a_full_disk_fails_the_run_and_keeps_every_reported_frame() {
    for (bytes, settings) in [(6u64 << 20, &[][..]), (1 << 20, &["output.compression=\"deflate:1\""][..])] {
        let dir = tempfile::tempdir().unwrap();
        let (path, err, _tmpfs) = run_onto_a_small_disk(dir.path(), bytes, settings);
        assert!(err.contains("disk full: no space left"), "{settings:?}: {err}");
        let written: u64 = err
            .split("run failed after writing ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no frame count in: {err}"));
        assert!(written > 0, "{settings:?}: {err}");
        let o = open_output(&path).unwrap();
        assert_eq!(o.streams()[0].frames, written, "{settings:?}: {err}");
        assert!(!o.complete() && !o.streams()[0].complete);
        for i in 0..written {
            assert_eq!(o.read_f32(0, 0, i).unwrap().len(), 256 * 256, "{settings:?}: frame {i}");
        }
        drop(o);
        let dump = Command::new("h5dump")
            .arg("-H")
            .arg(&path)
            .output()
            .unwrap_or_else(|e| panic!("cannot run h5dump ({e}): install it (Debian: apt-get install hdf5-tools)"));
        assert!(dump.status.success(), "{settings:?}: h5dump -H fails:\n{}", String::from_utf8_lossy(&dump.stderr));
    }
}

/// ZFP encoded on the device (`zfp:rate=8`, one stream a frame written as its chunk) onto a
/// 1 MiB disk, into HDF5, a raw output and a Zarr store: each run fails saying the disk is
/// full and naming what it wrote, and the output holds every frame the error says was written,
/// each decoding to the grid's values (wgpipe's reader: HDF5's ZFP filter, the raw streams' own
/// decoder, zarrs' zfpy codec).
#[test]
fn a_full_disk_fails_a_run_encoding_on_the_device_and_keeps_every_reported_frame() {
    let zfp = ["output.compression=\"zfp:rate=8\"", "output.compress_on=\"device\""];
    for sink in ["hdf5", "raw", "zarr"] {
        let dir = tempfile::tempdir().unwrap();
        let sink_set = format!("output.sink=\"{sink}\"");
        let settings = [zfp[0], zfp[1], sink_set.as_str()];
        let (path, err, _tmpfs) = run_onto_a_small_disk(dir.path(), 1 << 20, &settings);
        let written: u64 = err
            .split("run failed after writing ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{sink}: no frame count in: {err}"));
        assert!(written > 0 && written < 100, "{sink}: {err}");
        let o = open_output(&path).unwrap();
        assert_eq!(o.streams()[0].frames, written, "{sink}: {err}");
        assert!(!o.complete() && !o.streams()[0].complete, "{sink}");
        let rate8 = wgpipe::storage::Encoding::Zfp(wgpipe::storage::ZfpRate::new(8).unwrap());
        assert_eq!(o.stored_encoding(0), rate8, "{sink}: stored as the device's streams");
        for i in 0..written {
            let values = o.read_f32(0, 0, i).unwrap();
            assert_eq!(values.len(), 256 * 256, "{sink}: frame {i}");
            assert!(
                values.iter().all(|v| v.is_finite() && (-0.5..=1.5).contains(v)),
                "{sink}: frame {i} decodes wrong"
            );
        }
    }
}
