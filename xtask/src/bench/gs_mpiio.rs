//! `bench peers gs-mpiio`: wgpipe's 3-D run beside its peer, the ADIOS2 tutorial's
//! Gray-Scott simulation in C++ with MPI-IO (`gs_mpiio/`, see its README).
//!
//! All run the tutorial's model, `L`³ cells, `frames` output steps of 10 steps each, with
//! wgpipe's default parameters (the tutorial's), and write every output step into one file in
//! the scratch directory; none syncs its file. Five runs rotate their order between
//! repetitions:
//!
//! - gs-mpiio: U in float64 on `ranks` MPI ranks (`mpirun.mpich`; by default one per core),
//!   one `MPI_File_write_all` per step; its time is its process under `mpirun`, MPI's start-up
//!   included (timed on its own too: `mpirun` starting `true` on as many ranks);
//! - wgpipe inside this process: u and v in f32 (the same bytes per step) into its HDF5 sink,
//!   asynchronously, on the first device `--devices` selects, lavapipe on every core
//!   (`LP_NUM_THREADS` as set: give as many ranks as cores for a fair comparison); its time
//!   runs from opening the device to the run's end (this process's start, and from the second
//!   run on the loading of the Vulkan driver, are not in it);
//! - the same with the 3-D kernel as it was before its 8 × 2 × 2 brick (a row of 8 cells per
//!   invocation, `InvocationWidth::Cells(8)`): the brick's gain, in the same rotation;
//! - the same with the brick as it was before it moved whole aligned rows as vec4s (the
//!   kernel bench's `scalar-brick`): the vec4 rows' gain;
//! - the `wgpipe` binary (`--bin`) running `configs/gray-scott-3d.toml` as a user does (with
//!   the in-process runs' `io.mode = "async"` and `--devices`), a process of its own like
//!   gs-mpiio's, everything in its time; its output must hold every frame.
//!
//! Each run's file is removed after it; the ratios are gs-mpiio's time over each wgpipe run's,
//! per repetition: above 1, wgpipe is faster.
//!
//! gs-mpiio is built into the scratch directory from the copied sources with MPICH's C++
//! compiler (`mpicxx.mpich -O3`; Debian: `mpich` and `nlohmann-json3-dev`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use wgpipe::compute::gray_scott_3d::{self, GrayScott3dParams};
use wgpipe::compute::tuning::InvocationWidth;
use wgpipe::compute::{DeviceSelector, open_devices};
use wgpipe::storage::{SinkOptions, open_output, open_sink};

use super::kernel::scalar_brick_3d;
use super::measure::{TUTORIAL_STEPS_PER_FRAME, tutorial_3d};
use super::stats::Summary;

/// The copied C++ sources, compiled together.
const SOURCES: [&str; 4] = ["main.cpp", "gray-scott.cpp", "settings.cpp", "writer.cpp"];

/// Longest a gs-mpiio run may take before the bench gives up on it.
const GS_TIMEOUT: Duration = Duration::from_secs(600);

/// What the comparison found.
pub struct GsResult {
    pub json: Value,
    pub table: String,
}

/// Builds gs-mpiio into `dir` and returns the executable's path.
fn build(dir: &Path) -> Result<PathBuf> {
    let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bench/gs_mpiio");
    let exe = dir.join("gs-mpiio");
    let output = Command::new("mpicxx.mpich")
        .args(["-O3", "-std=c++11", "-DMPICH_SKIP_MPICXX", "-o"])
        .arg(&exe)
        .args(SOURCES.iter().map(|s| sources.join(s)))
        .output()
        .context(
            "gs-mpiio is built with MPICH's C++ compiler, mpicxx.mpich, which did not start: install MPICH \
             (Debian: apt-get install mpich nlohmann-json3-dev)",
        )?;
    if !output.status.success() {
        bail!(
            "building gs-mpiio from {} failed ({}); it needs MPICH and nlohmann/json.hpp (Debian: apt-get install \
             mpich nlohmann-json3-dev):\n{}",
            sources.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(exe)
}

/// gs-mpiio's settings file for the model wgpipe runs: the same parameters, grid and steps.
fn settings(edge: usize, frames: u64, output: &Path) -> Value {
    let p = GrayScott3dParams::default();
    json!({
        "L": edge,
        "Du": p.rates.du,
        "Dv": p.rates.dv,
        "F": p.rates.feed,
        "k": p.rates.kill,
        "dt": p.rates.dt,
        "noise": p.noise,
        "plotgap": TUTORIAL_STEPS_PER_FRAME,
        "steps": frames * u64::from(TUTORIAL_STEPS_PER_FRAME),
        "output": output.display().to_string(),
        "adios_config": "unused",
    })
}

/// Runs `command` under coreutils' `timeout` ([`GS_TIMEOUT`]: a signal to `mpirun`, which
/// passes it to the ranks) in `dir`: its wall seconds and what it printed on stdout. `what`
/// names it in errors.
fn timed(command: &[&std::ffi::OsStr], dir: &Path, what: &str) -> Result<(f64, String)> {
    let start = Instant::now();
    let out = Command::new("timeout")
        .arg(GS_TIMEOUT.as_secs().to_string())
        .args(command)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .output()
        .with_context(|| format!("{what} did not start (coreutils' timeout runs it)"))?;
    let wall = start.elapsed().as_secs_f64();
    if out.status.code() == Some(124) {
        bail!("{what} ran over {} s: stopped", GS_TIMEOUT.as_secs());
    }
    if !out.status.success() {
        bail!("{what} failed ({}):\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    }
    Ok((wall, String::from_utf8_lossy(&out.stdout).into_owned()))
}

/// Runs `program args` under `mpirun.mpich -n ranks` in `dir`: its wall seconds and stdout.
fn mpirun(ranks: usize, program: &Path, args: &[&Path], dir: &Path) -> Result<(f64, String)> {
    let ranks_text = ranks.to_string();
    let mut command: Vec<&std::ffi::OsStr> = vec!["mpirun.mpich".as_ref(), "-n".as_ref(), ranks_text.as_ref()];
    command.push(program.as_os_str());
    command.extend(args.iter().map(|a| a.as_os_str()));
    timed(&command, dir, &format!("mpirun.mpich -n {ranks} {} (MPICH: apt-get install mpich)", program.display()))
}

/// Where a run spent its time, in seconds: computing (gs-mpiio: its steps with their halo
/// exchange; wgpipe: the GPU's time from timestamp queries, or the device threads' when the
/// adapter has none), reading frames back to the host (wgpipe's device threads beyond the
/// GPU's time; gs-mpiio has no such part) and writing.
#[derive(Debug, Clone, Copy, Default)]
struct Parts {
    compute: f64,
    readback: f64,
    write: f64,
}

/// gs-mpiio's own account of its time: the line `wgpipe-bench seconds: compute C write W`
/// its `main.cpp` prints (the slowest rank's totals).
fn gs_parts(stdout: &str) -> Result<Parts> {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("wgpipe-bench seconds: "))
        .context("gs-mpiio printed no `wgpipe-bench seconds:` line (its main.cpp times its steps and writes)")?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let number = |key: &str| -> Result<f64> {
        let at = words.iter().position(|w| *w == key).with_context(|| format!("no {key} in {line:?}"))?;
        let value = words.get(at + 1).with_context(|| format!("no {key} value in {line:?}"))?;
        value.parse().with_context(|| format!("{key} {value:?} is not a number"))
    };
    Ok(Parts { compute: number("compute")?, readback: 0.0, write: number("write")? })
}

/// Where a wgpipe run spent its time, from its report.
fn wgpipe_parts(report: &wgpipe::RunReport) -> Parts {
    let device: f64 = report.devices.iter().map(|d| d.compute_seconds).sum();
    let compute = report.compute_seconds();
    Parts { compute, readback: (device - compute).max(0.0), write: report.write_seconds() }
}

/// One gs-mpiio run on `ranks` ranks: its wall seconds, its account of its time and the bytes
/// of its file.
fn gs_run(exe: &Path, dir: &Path, edge: usize, frames: u64, ranks: usize) -> Result<(f64, Parts, u64)> {
    let output = dir.join("gs");
    let settings_path = dir.join("gs-settings.json");
    std::fs::write(&settings_path, settings(edge, frames, &output).to_string())
        .with_context(|| format!("writing {}", settings_path.display()))?;
    let (wall, stdout) = mpirun(ranks, exe, &[&settings_path], dir)?;
    let parts = gs_parts(&stdout)?;
    // It writes U to `output`.u: a header of three u64 and every step's L³ doubles.
    let file = dir.join("gs.u");
    let bytes = std::fs::metadata(&file).with_context(|| format!("gs-mpiio wrote no {}", file.display()))?.len();
    let expected = (edge as u64)
        .checked_pow(3)
        .and_then(|cells| cells.checked_mul(frames.checked_mul(8)?))
        .and_then(|b| b.checked_add(24))
        .context("the grid's bytes overflow u64: give a smaller --edge")?;
    if bytes != expected {
        bail!("gs-mpiio wrote {bytes} bytes to {}, expected {expected}", file.display());
    }
    std::fs::remove_file(&file).with_context(|| format!("cannot remove {}", file.display()))?;
    Ok((wall, parts, bytes))
}

/// The 3-D kernel a wgpipe run computes with: the shipped one, or one of its predecessors.
#[derive(Clone, Copy)]
enum Kernel3d {
    Shipped,
    /// A plain row of 8 cells per invocation, before the brick.
    RowOf8,
    /// The brick of scalar loads and stores, before its rows of vec4s.
    ScalarBrick,
}

/// One wgpipe run with `kernel`: its wall seconds, where it spent them and the bytes of its
/// file.
fn wgpipe_run(
    devices: &DeviceSelector,
    dir: &Path,
    edge: usize,
    frames: u64,
    kernel: Kernel3d,
) -> Result<(f64, Parts, u64)> {
    let path = dir.join("wgpipe.h5");
    let start = Instant::now();
    let gpus = open_devices(devices, 1).context("opening the device to benchmark")?;
    let gpu = gpus.first().context("--devices selected no device")?;
    let sink = open_sink("hdf5", &SinkOptions::new(&path).with_overwrite(true)).context("opening the HDF5 sink")?;
    let mut builder = tutorial_3d(gpu, edge, frames, sink);
    let shipped = GrayScott3dParams::default().kernel(1);
    let predecessor = match kernel {
        Kernel3d::Shipped => None,
        Kernel3d::RowOf8 => Some(shipped.with_invocation_width(InvocationWidth::Cells(8))),
        Kernel3d::ScalarBrick => Some(scalar_brick_3d(&shipped)?),
    };
    if let Some(kernel) = predecessor {
        builder = builder.kernel(kernel, |_, grid| gray_scott_3d::initial_state(grid));
    }
    let report = builder.run().context("running the 3-D model")?;
    let wall = start.elapsed().as_secs_f64();
    if report.written_frames() != frames {
        bail!("wgpipe wrote {} frames of {frames}", report.written_frames());
    }
    let bytes = std::fs::metadata(&path).with_context(|| format!("wgpipe wrote no {}", path.display()))?.len();
    std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
    Ok((wall, wgpipe_parts(&report), bytes))
}

/// One run of the `wgpipe` binary `bin` on the 3-D config, as a user starts it, with the
/// in-process runs' I/O mode (async) and `devices` (`--devices`): its wall seconds and the
/// bytes of its file, which must hold `frames` frames.
fn binary_run(bin: &Path, devices: &str, dir: &Path, edge: usize, frames: u64) -> Result<(f64, u64)> {
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/gray-scott-3d.toml");
    let path = dir.join("wgpipe-run.h5");
    let sets = [
        format!("grid.shape=[{edge}, {edge}, {edge}]"),
        format!("run.frames={frames}"),
        format!("run.steps_per_frame={TUTORIAL_STEPS_PER_FRAME}"),
        format!("output.path={}", path.display()),
        "output.overwrite=true".to_owned(),
        "io.mode=\"async\"".to_owned(),
        format!("devices.select=\"{devices}\""),
    ];
    let mut command: Vec<&std::ffi::OsStr> =
        vec![bin.as_os_str(), "run".as_ref(), config.as_os_str(), "--progress".as_ref(), "none".as_ref()];
    for s in &sets {
        command.push("--set".as_ref());
        command.push(s.as_ref());
    }
    let what = format!("{} run (build it first: cargo build --release -p wgpipe; or give --bin)", bin.display());
    let (wall, _) = timed(&command, dir, &what)?;
    let held = open_output(&path)
        .with_context(|| format!("reading {} after {what}", path.display()))?
        .streams()
        .iter()
        .map(|s| s.frames)
        .collect::<Vec<u64>>();
    if held != [frames] {
        bail!("{what} wrote {held:?} frames to {}, expected [{frames}]", path.display());
    }
    let bytes = std::fs::metadata(&path).with_context(|| format!("{what} wrote no {}", path.display()))?.len();
    std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
    Ok((wall, bytes))
}

/// One comparison: where and what it runs.
pub struct Comparison<'a> {
    /// `--devices`: the adapters the wgpipe runs select.
    pub devices: &'a str,
    /// The `wgpipe` binary run as a process of its own.
    pub bin: &'a Path,
    /// The scratch directory every run writes into.
    pub dir: &'a Path,
    /// Cells along each edge of the grid.
    pub edge: usize,
    /// Output steps of [`TUTORIAL_STEPS_PER_FRAME`] steps.
    pub frames: u64,
    /// gs-mpiio's MPI ranks.
    pub ranks: usize,
    /// Rotations of the five runs.
    pub reps: usize,
}

/// Every run's wall seconds, over the rotations, and the bytes each kind of run wrote.
#[derive(Default)]
struct Walls {
    gs: Vec<f64>,
    ours: Vec<f64>,
    rows: Vec<f64>,
    bricks: Vec<f64>,
    binary: Vec<f64>,
    /// `mpirun` starting `true`: MPI's start-up alone, part of every gs-mpiio time.
    start: Vec<f64>,
    /// Where gs-mpiio and wgpipe (its shipped kernel) spent their time, run by run.
    gs_parts: Vec<Parts>,
    our_parts: Vec<Parts>,
    gs_bytes: u64,
    our_bytes: u64,
    binary_bytes: u64,
}

impl Walls {
    /// gs-mpiio's time over each of `walls`, rotation by rotation: above 1, wgpipe is faster.
    fn gs_over(&self, walls: &[f64]) -> Vec<f64> {
        self.gs.iter().zip(walls).map(|(g, w)| g / w).collect()
    }
}

/// Runs the comparison: `reps` rotations of the five runs in `c.dir`.
pub fn run(c: &Comparison<'_>) -> Result<GsResult> {
    let devices = DeviceSelector::parse(c.devices).context("reading --devices")?;
    // Each run starts in `dir`: paths given relative to this process's directory must not
    // change meaning there.
    let dir = std::path::absolute(c.dir).with_context(|| format!("resolving {}", c.dir.display()))?;
    let bin = std::path::absolute(c.bin).with_context(|| format!("resolving {}", c.bin.display()))?;
    let exe = build(&dir)?;
    let mut w = Walls::default();
    for rep in 0..c.reps {
        for k in 0..5 {
            rotation_run(c, &devices, (&exe, &bin, &dir), (k + rep) % 5, &mut w)?;
        }
        w.start.push(mpirun(c.ranks, Path::new("true"), &[], &dir)?.0);
    }
    Ok(GsResult { table: table(c, &w), json: figures(c, &bin, &w) })
}

/// Run `which` of a rotation (gs-mpiio, wgpipe with its shipped kernel, with the row of 8,
/// with the scalar brick, the binary), its time and bytes into `w`; `paths` are gs-mpiio's
/// executable, the wgpipe binary and the scratch directory.
fn rotation_run(
    c: &Comparison<'_>,
    devices: &DeviceSelector,
    paths: (&Path, &Path, &Path),
    which: usize,
    w: &mut Walls,
) -> Result<()> {
    let (exe, bin, dir) = paths;
    match which {
        0 => {
            let (wall, parts, bytes) = gs_run(exe, dir, c.edge, c.frames, c.ranks)?;
            w.gs.push(wall);
            w.gs_parts.push(parts);
            w.gs_bytes = bytes;
        }
        1 => {
            let (wall, parts, bytes) = wgpipe_run(devices, dir, c.edge, c.frames, Kernel3d::Shipped)?;
            w.ours.push(wall);
            w.our_parts.push(parts);
            w.our_bytes = bytes;
        }
        2 => w.rows.push(wgpipe_run(devices, dir, c.edge, c.frames, Kernel3d::RowOf8)?.0),
        3 => w.bricks.push(wgpipe_run(devices, dir, c.edge, c.frames, Kernel3d::ScalarBrick)?.0),
        _ => {
            let (wall, bytes) = binary_run(bin, c.devices, dir, c.edge, c.frames)?;
            w.binary.push(wall);
            w.binary_bytes = bytes;
        }
    }
    Ok(())
}

/// The comparison's table.
fn table(c: &Comparison<'_>, w: &Walls) -> String {
    let (edge, frames, ranks, reps) = (c.edge, c.frames, c.ranks, c.reps);
    let steps = frames * u64::from(TUTORIAL_STEPS_PER_FRAME);
    let s = |walls: &[f64]| Summary::of(walls).text(2);
    let r = |walls: &[f64]| Summary::of(&w.gs_over(walls)).text(3);
    let mut t = String::new();
    let _ = writeln!(
        t,
        "the 3-D Gray-Scott, {edge}³, {steps} steps, {frames} output steps: median [min–max] of {reps} rotations"
    );
    let _ =
        writeln!(t, "  gs-mpiio on {ranks} ranks (float64 U, MPI-IO): {} s, {} MB", s(&w.gs), w.gs_bytes / 1_000_000);
    let _ = writeln!(t, "  wgpipe (f32 u and v, HDF5):             {} s, {} MB", s(&w.ours), w.our_bytes / 1_000_000);
    let _ = writeln!(t, "  wgpipe, the row of 8 before the brick:   {} s", s(&w.rows));
    let _ = writeln!(t, "  wgpipe, the brick before its vec4 rows:  {} s", s(&w.bricks));
    let _ = writeln!(
        t,
        "  the wgpipe binary, whole process:         {} s, {} MB",
        s(&w.binary),
        w.binary_bytes / 1_000_000
    );
    let _ = writeln!(t, "  mpirun starting `true` on {ranks} ranks:    {} s", s(&w.start));
    for (who, parts) in [("gs-mpiio", &w.gs_parts), ("wgpipe", &w.our_parts)] {
        let part = |f: fn(&Parts) -> f64| s(&parts.iter().map(f).collect::<Vec<_>>());
        let _ = writeln!(
            t,
            "  {who:<8} compute {} s, readback {} s, write {} s",
            part(|p| p.compute),
            part(|p| p.readback),
            part(|p| p.write)
        );
    }
    let _ = writeln!(t, "  gs-mpiio / wgpipe: {}x (above 1: wgpipe is faster)", r(&w.ours));
    let _ = writeln!(t, "  gs-mpiio / wgpipe with the row of 8: {}x", r(&w.rows));
    let _ = writeln!(t, "  gs-mpiio / wgpipe with the scalar brick: {}x", r(&w.bricks));
    let _ = writeln!(t, "  gs-mpiio / the wgpipe binary: {}x", r(&w.binary));
    t
}

/// The comparison's JSON.
fn figures(c: &Comparison<'_>, bin: &Path, w: &Walls) -> Value {
    json!({
        "edge": c.edge,
        "frames": c.frames,
        "steps": c.frames * u64::from(TUTORIAL_STEPS_PER_FRAME),
        "ranks": c.ranks,
        "reps": c.reps,
        "gs_mpiio_seconds": Summary::json(&w.gs),
        "wgpipe_seconds": Summary::json(&w.ours),
        "wgpipe_row_of_8_seconds": Summary::json(&w.rows),
        "wgpipe_scalar_brick_seconds": Summary::json(&w.bricks),
        "mpirun_start_seconds": Summary::json(&w.start),
        "wgpipe_binary": bin.display().to_string(),
        "wgpipe_binary_seconds": Summary::json(&w.binary),
        "wgpipe_binary_bytes": w.binary_bytes,
        "gs_mpiio_over_wgpipe_binary": Summary::json(&w.gs_over(&w.binary)),
        "gs_mpiio_over_wgpipe": Summary::json(&w.gs_over(&w.ours)),
        "gs_mpiio_over_wgpipe_row_of_8": Summary::json(&w.gs_over(&w.rows)),
        "gs_mpiio_over_wgpipe_scalar_brick": Summary::json(&w.gs_over(&w.bricks)),
        "gs_mpiio_bytes": w.gs_bytes,
        "wgpipe_bytes": w.our_bytes,
        "gs_mpiio_parts_seconds": parts_json(&w.gs_parts),
        "wgpipe_parts_seconds": parts_json(&w.our_parts),
    })
}

/// Each part's seconds over the runs, as `Summary::json`.
fn parts_json(parts: &[Parts]) -> Value {
    let of = |f: fn(&Parts) -> f64| Summary::json(&parts.iter().map(f).collect::<Vec<_>>());
    json!({ "compute": of(|p| p.compute), "readback": of(|p| p.readback), "write": of(|p| p.write) })
}
