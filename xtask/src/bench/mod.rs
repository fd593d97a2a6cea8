//! `cargo xtask bench`: what the pipeline costs and what overlap buys.
//!
//! - `--sink null`: pipeline vs compute-only loop (`overhead_ratio`), plus [`micro`].
//! - `--sink raw|hdf5`: calibration to compute ≈ write per frame, then the non-blocking
//!   efficiency ratio async/sync ([`io`]), and with `--sweep` the [`sweep`] table.
//! - `--micro`: only the microbenchmarks (no GPU).
//! - `--sink hdf5 --compression deflate --compare-threads A,B`: compression threads A vs B
//!   ([`threads`]).
//! - `--sink raw|hdf5 --compare-dtype`: f32 vs f16 output, bytes and write time ([`dtype`]).
//! - `--sink raw --against posix`: the raw sink vs a plain write loop ([`posix`]).
//! - `--sink hdf5 --against gs-mpiio`: the 3-D run vs the ADIOS2 tutorial's MPI-IO
//!   simulation ([`gs_mpiio`]).
//! - `--reserve-cost`: the HDF5 sink with and without its disk-space reservation ([`reserve`]).
//! - `--zfp-device`: ZFP fixed rate encoded on the GPU vs on the host vs none ([`zfp`]).
//! - `--checkpoint-cost`: a 3-D run without checkpoints, with one every frame, and at Young's
//!   interval ([`checkpoint`]).
//! - `--analysis-cost`: a 3-D run with and without reductions on the device ([`analysis`]).
//! - `--mpi`: weak and strong scaling of a domain split over MPI ranks ([`mpi`], its own
//!   options: `cargo xtask bench --mpi --help`).
//! - `--kernel`: the step kernels alone, and the 2-D Gray-Scott shader against its
//!   predecessor ([`kernel`]); with `--roofline`, each as a fraction of the adapter's copy
//!   bandwidth ([`roofline`]).
//!
//! Every comparison alternates its runs in one process, because absolute times on a shared
//! machine drift more than the effects measured.

mod analysis;
pub(crate) mod args;
mod checkpoint;
mod compression;
mod cpu_time;
mod dtype;
mod gs_mpiio;
mod h5py;
mod io;
mod kernel;
pub(crate) mod machine;
mod measure;
mod micro;
mod mpi;
mod null;
pub(crate) mod output;
mod posix;
mod python;
mod reserve;
mod roofline;
mod stats;
mod sweep;
mod threads;
mod zfp;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::{Map, Value, json};
use wgpipe::IoMode;
use wgpipe::compute::{DeviceSelector, open_devices};

use args::Args;
use measure::Workload;

/// Entry point of `cargo xtask bench ARGS`.
pub fn main(argv: Vec<String>) -> Result<ExitCode> {
    if argv.iter().any(|a| a == "--mpi") {
        return mpi::main(&argv);
    }
    let args = args::parse(&argv)?;
    if args.help {
        println!("{}", args::USAGE);
        return Ok(ExitCode::SUCCESS);
    }
    if (args.sink.is_some() || args.checkpoint_cost || args.analysis_cost || args.zfp_device || args.python)
        && !args.against_posix
        && !args.against_h5py
        && !args.against_gs_mpiio
        && let Some(code) = machine::reexec_with_one_lavapipe_thread(&argv)?
    {
        return Ok(code);
    }
    let mut report = Map::new();
    if args.layout_cost {
        // The HDF5 sink laying its output out whole vs growing it.
        run_hdf5_comparison(&args, &mut report, "layout_cost", (64, 64, 2000), reserve::run_layout)?;
    } else if args.reserve_cost {
        // The HDF5 sink with and without its space reservation.
        run_hdf5_comparison(&args, &mut report, "reserve_cost", (512, 512, 256), reserve::run)?;
    } else if args.checkpoint_cost {
        run_checkpoint_cost(&args, &mut report)?;
    } else if args.analysis_cost {
        run_analysis_cost(&args, &mut report)?;
    } else if args.zfp_device {
        run_zfp_device(&args, &mut report)?;
    } else if args.kernel {
        run_kernel(&args, &mut report)?;
    } else if args.python {
        run_python(&args, &mut report)?;
    } else if args.against_posix {
        run_against(&args, &mut report, "raw_against_posix", posix::run)?;
    } else if args.against_gs_mpiio {
        run_against_gs_mpiio(&args, &mut report)?;
    } else if args.against_h5py {
        run_against(&args, &mut report, "hdf5_against_h5py", h5py::run)?;
    } else if let Some(kind) = args.sink.clone() {
        run_sink(&args, &kind, &mut report)?;
    } else {
        report.insert("machine".to_owned(), machine::describe(&[], None));
    }
    if args.micro || args.sink.as_deref() == Some("null") {
        let m = micro::run(args.io_buffer)?;
        println!("{}", m.table);
        report.insert("micro".to_owned(), m.json);
    }
    if let Some(path) = &args.json {
        output::write_json(path, &Value::Object(report.clone()))?;
        println!("JSON report: {}", path.display());
    }
    Ok(verdict(&report))
}

/// Failure when a measurement found what must fail the bench (after its JSON is written):
/// `--sweep`'s cells where auto lost to the best fixed mode beyond tolerance and spread.
fn verdict(report: &Map<String, Value>) -> ExitCode {
    let slow = report.get("sweep").and_then(|s| s["auto_too_slow"].as_array()).is_some_and(|c| !c.is_empty());
    if slow { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// The bench's scratch directory under `--out`, announced with its filesystem and the load
/// average (the GPU-free benches have no calibration line to show the machine's state).
fn scratch_with_load(args: &Args) -> Result<output::ScratchDir> {
    let scratch = output::ScratchDir::under(args.out.as_deref(), "bench")?;
    println!(
        "writing to {} ({}), load average {}",
        scratch.path().display(),
        machine::filesystem_type(scratch.path()),
        machine::load_average().map_or("unknown".to_owned(), |l| format!("{l:.2}"))
    );
    Ok(scratch)
}

/// The signature of [`reserve::run`] and [`reserve::run_layout`]: dir, rows, cols, frames, reps.
type Hdf5Comparison = fn(&std::path::Path, usize, usize, u64, usize) -> Result<reserve::ReserveResult>;

/// One of the GPU-free HDF5 sink comparisons (`--reserve-cost`, `--layout-cost`) in `--out`,
/// with `defaults` for rows, cols and frames, its figures stored under `key`.
fn run_hdf5_comparison(
    args: &Args,
    report: &mut Map<String, Value>,
    key: &str,
    defaults: (usize, usize, u64),
    compare: Hdf5Comparison,
) -> Result<()> {
    let scratch = scratch_with_load(args)?;
    let (rows, cols, frames) =
        (args.rows.unwrap_or(defaults.0), args.cols.unwrap_or(defaults.1), args.frames.unwrap_or(defaults.2));
    let r = compare(scratch.path(), rows, cols, frames, args.reps)?;
    println!("{}", r.table);
    report.insert(key.to_owned(), r.json);
    report.insert("machine".to_owned(), machine::describe(&[], Some(scratch.path())));
    Ok(())
}

/// `--python`: the Python package against the Rust paths, in `--out`.
fn run_python(args: &Args, report: &mut Map<String, Value>) -> Result<()> {
    let scratch = scratch_with_load(args)?;
    let binary = args.bin.clone().unwrap_or_else(|| std::path::PathBuf::from("target/release/wgpipe"));
    let bench = python::PythonBench {
        python: args.python_bin.as_deref().unwrap_or("python3"),
        binary: &binary,
        dir: scratch.path(),
        shape: (args.rows.unwrap_or(1024), args.cols.unwrap_or(1024)),
        frames: args.frames.unwrap_or(100),
        steps: u64::from(args.steps_per_frame.unwrap_or(1)),
        reps: args.reps,
    };
    let r = python::run(&bench)?;
    println!("{}", r.table);
    report.insert("python".to_owned(), r.json);
    report.insert("machine".to_owned(), machine::describe(&[], Some(scratch.path())));
    Ok(())
}

/// The device `--devices` selects (its first adapter), announced with lavapipe's thread count;
/// never empty.
fn bench_devices(args: &Args) -> Result<Vec<wgpipe::compute::GpuDevice>> {
    let selector = DeviceSelector::parse(&args.devices).context("reading --devices")?;
    let gpus = open_devices(&selector, 1).context("opening the device to benchmark")?;
    if gpus.is_empty() {
        anyhow::bail!("--devices selected no device");
    }
    println!("{}", machine::lp_threads_note());
    Ok(gpus)
}

/// `--zfp-device`: ZFP fixed rate on the device, on the host and not at all, in `--out`.
fn run_zfp_device(args: &Args, report: &mut Map<String, Value>) -> Result<()> {
    let scratch = scratch_with_load(args)?;
    let gpus = bench_devices(args)?;
    let gpu = &gpus[0];
    let rate = match args.compression {
        wgpipe::storage::Compression::ZfpRate(rate) => rate,
        _ => wgpipe::storage::ZfpRate::new(8)?,
    };
    let r = zfp::run(gpu, scratch.path(), args.rows.unwrap_or(64), args.frames.unwrap_or(20), rate, args.reps)?;
    println!("{}", r.table);
    report.insert("zfp_device".to_owned(), r.json);
    report.insert("machine".to_owned(), machine::describe(&gpus, Some(scratch.path())));
    Ok(())
}

/// `--checkpoint-cost`: the 3-D model with and without checkpoints, in `--out`.
fn run_checkpoint_cost(args: &Args, report: &mut Map<String, Value>) -> Result<()> {
    let scratch = scratch_with_load(args)?;
    let gpus = bench_devices(args)?;
    let gpu = &gpus[0];
    let edge = args.rows.unwrap_or(48);
    let r = checkpoint::run(gpu, scratch.path(), edge, args.frames.unwrap_or(60), args.reps)?;
    println!("{}", r.table);
    report.insert("checkpoint_cost".to_owned(), r.json);
    report.insert("machine".to_owned(), machine::describe(&gpus, Some(scratch.path())));
    Ok(())
}

/// `--against gs-mpiio`: the 3-D run beside the ADIOS2 tutorial's MPI-IO simulation, in
/// `--out`, lavapipe on every core (gs-mpiio's ranks use them all too).
fn run_against_gs_mpiio(args: &Args, report: &mut Map<String, Value>) -> Result<()> {
    let scratch = scratch_with_load(args)?;
    let selector = DeviceSelector::parse(&args.devices).context("reading --devices")?;
    println!("{}", machine::lp_threads_note());
    let (edge, frames) = (args.rows.unwrap_or(64), args.frames.unwrap_or(100));
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"), PathBuf::from);
    let bin = args.bin.clone().unwrap_or_else(|| target.join("release/wgpipe"));
    let ranks = args.ranks.unwrap_or(cores);
    let r = gs_mpiio::run(&args.devices, &bin, scratch.path(), edge, frames, ranks, args.reps)?;
    println!("{}", r.table);
    report.insert("against_gs_mpiio".to_owned(), r.json);
    let gpus = open_devices(&selector, 1).context("opening the device to describe it")?;
    report.insert("machine".to_owned(), machine::describe(&gpus, Some(scratch.path())));
    Ok(())
}

/// `--analysis-cost`: the 3-D model with and without analysis on the device.
fn run_analysis_cost(args: &Args, report: &mut Map<String, Value>) -> Result<()> {
    let gpus = bench_devices(args)?;
    let gpu = &gpus[0];
    let edge = args.rows.unwrap_or(64);
    let r = analysis::run(gpu, edge, args.frames.unwrap_or(40), args.reps)?;
    println!("{}", r.table);
    report.insert("analysis_cost".to_owned(), r.json);
    report.insert("machine".to_owned(), machine::describe(&gpus, None));
    Ok(())
}

/// The `--candidate` or `--candidate-3d` shaders with their labels: "candidate" for one, else
/// "candidate-" and the file's stem, so that several measured side by side stay apart.
fn candidates(paths: &[PathBuf], flag: &str) -> Result<Vec<(String, wgpipe::compute::WgslSource)>> {
    let mut out: Vec<(String, wgpipe::compute::WgslSource)> = Vec::new();
    for path in paths {
        let wgsl = wgpipe::compute::WgslSource::from_file(path).with_context(|| format!("reading {flag}"))?;
        let label = if paths.len() == 1 {
            "candidate".to_owned()
        } else {
            format!("candidate-{}", path.file_stem().map_or("?".into(), |s| s.to_string_lossy()))
        };
        if out.iter().any(|(l, _)| *l == label) {
            anyhow::bail!("two {flag} files are named {label:?}: give them different file names");
        }
        out.push((label, wgsl));
    }
    Ok(out)
}

/// `--kernel`: the step kernels on the first selected device.
fn run_kernel(args: &Args, report: &mut Map<String, Value>) -> Result<()> {
    let candidates_2d = candidates(&args.candidate, "--candidate")?;
    let candidates_3d = candidates(&args.candidate_3d, "--candidate-3d")?;
    let gpus = bench_devices(args)?;
    let gpu = &gpus[0];
    println!(
        "device: {}, load average {}",
        gpu.label(),
        machine::load_average().map_or("unknown".to_owned(), |l| format!("{l:.2}"))
    );
    let grid_2d = match (args.rows, args.cols) {
        (None, None) => None,
        (rows, cols) => Some((rows.unwrap_or(1024), cols.unwrap_or(1024))),
    };
    let before = if args.roofline { Some(roofline::copy_bandwidth(gpu, args.reps)?) } else { None };
    let r = kernel::run(gpu, args.reps, &candidates_2d, &candidates_3d, grid_2d, args.large)?;
    println!("{}", r.table);
    if let Some(before) = before {
        let after = roofline::copy_bandwidth(gpu, args.reps)?;
        let (text, json) = roofline::report(&before, &after, &r.json["cases"]);
        println!("{text}");
        report.insert("roofline".to_owned(), json);
    }
    report.insert("kernel".to_owned(), r.json);
    report.insert("machine".to_owned(), machine::describe(std::slice::from_ref(gpu), None));
    Ok(())
}

/// The signature of a comparison against a peer writer: `(dir, rows, cols, frames, reps)`.
type AgainstRun = fn(&Path, usize, usize, u64, usize) -> Result<posix::AgainstResult>;

/// `--against posix|h5py`: a sink vs a peer writer of the same frames (default 1024², 128
/// frames), in `--out`, its figures under `key`.
fn run_against(args: &Args, report: &mut Map<String, Value>, key: &str, run: AgainstRun) -> Result<()> {
    let scratch = scratch_with_load(args)?;
    let (rows, cols, frames) = (args.rows.unwrap_or(1024), args.cols.unwrap_or(1024), args.frames.unwrap_or(128));
    let r = run(scratch.path(), rows, cols, frames, args.reps)?;
    println!("{}", r.table);
    report.insert(key.to_owned(), r.json);
    report.insert("machine".to_owned(), machine::describe(&[], Some(scratch.path())));
    Ok(())
}

/// The GPU benchmarks of one sink.
fn run_sink(args: &Args, kind: &str, report: &mut Map<String, Value>) -> Result<()> {
    let w = sink_workload(args, kind)?;
    let mut params = json!({
        "sink": kind, "rows": w.rows, "cols": w.cols, "frames": w.frames, "devices": args.devices,
        "io_buffer": args.io_buffer, "reps": args.reps, "compression": args.compression.to_string(), "fields": w.fields, "staging_buffers": w.staging,
    });
    if kind == "null" {
        run_null(args, &w, &mut params, report)?;
    } else {
        run_file_sink(args, kind, &w, &mut params, report)?;
    }
    report.insert("parameters".to_owned(), params);
    Ok(())
}

/// The workload of `--sink KIND` (its grid and frames, on the first device `--devices`
/// selects), announced with the machine's state.
fn sink_workload(args: &Args, kind: &str) -> Result<Workload> {
    let selector = DeviceSelector::parse(&args.devices).context("reading --devices")?;
    let gpus = open_devices(&selector, 1).context("opening the devices to benchmark")?;
    let is_null = kind == "null";
    let side = if is_null { 128 } else { 512 };
    let w = Workload {
        gpus,
        rows: args.rows.unwrap_or(side),
        cols: args.cols.unwrap_or(side),
        frames: args.frames.unwrap_or(if is_null { 30 } else { 24 }),
        fields: vec!["v".to_owned()],
        staging: 2,
    };
    println!("{}", machine::lp_threads_note());
    for g in &w.gpus {
        println!("device: {}", g.label());
    }
    println!(
        "grid {}x{}, {} frames of {:.2} MB per device, io_buffer {}, load average {}",
        w.rows,
        w.cols,
        w.frames,
        w.frame_bytes() as f64 / 1e6,
        args.io_buffer,
        machine::load_average().map_or("unknown".to_owned(), |l| format!("{l:.2}"))
    );
    Ok(w)
}

/// `--sink null`: the pipeline against compute alone.
fn run_null(args: &Args, w: &Workload, params: &mut Value, report: &mut Map<String, Value>) -> Result<()> {
    let spf = args.steps_per_frame.unwrap_or(16);
    params["steps_per_frame"] = json!(spf);
    let r = null::run(w, spf, args.io_buffer, args.reps)?;
    println!("{}", r.table);
    report.insert("overhead_ratio".to_owned(), json!(r.overhead_ratio));
    report.insert("null".to_owned(), r.json);
    if let Some(path) = &args.trace {
        output::write_trace(path, &null::traced(w, spf, args.io_buffer)?)?;
        println!("trace of one async run: {}", path.display());
    }
    report.insert("machine".to_owned(), machine::describe(&w.gpus, None));
    Ok(())
}

/// `--sink raw|hdf5|zarr`: one of the comparisons asked for, else the efficiency ratio (and
/// the sweep), in a scratch directory under `--out`.
fn run_file_sink(
    args: &Args,
    kind: &str,
    w: &Workload,
    params: &mut Value,
    report: &mut Map<String, Value>,
) -> Result<()> {
    let scratch = output::ScratchDir::under(args.out.as_deref(), "bench")?;
    println!("writing to {} ({})", scratch.path().display(), machine::filesystem_type(scratch.path()));
    let mut b = io::IoBench::new(w, kind, scratch.path(), args.compression, args.compression_threads)?;
    params["compression_threads"] = json!(args.compression_threads);
    match comparison(args, w, &mut b)? {
        Some((key, spf, table, json)) => {
            params["steps_per_frame"] = json!(spf);
            println!("{table}");
            report.insert(key.to_owned(), json);
        }
        None => run_efficiency(args, kind, w, &b, params, report)?,
    }
    report.insert("machine".to_owned(), machine::describe(&w.gpus, Some(&PathBuf::from(scratch.path()))));
    drop(scratch);
    Ok(())
}

/// The comparison `--compare-dtype`, `--compare-compression` or `--compare-threads` asked
/// for, if one was: its report key, steps per frame, table and JSON.
fn comparison(
    args: &Args,
    w: &Workload,
    b: &mut io::IoBench<'_>,
) -> Result<Option<(&'static str, u32, String, Value)>> {
    if args.compare_dtype {
        let spf = args.steps_per_frame.unwrap_or(1);
        let r = dtype::run(b, spf, args.io_buffer, args.reps)?;
        return Ok(Some(("dtype", spf, r.table, r.json)));
    }
    if let Some(pair) = args.compare_compression {
        // Frames of an evolved pattern (the first steps' are nearly uniform and would
        // flatter every codec).
        let spf = args.steps_per_frame.unwrap_or(compression::STEPS_PER_FRAME);
        b.data = measure::capture_frames(w, spf)?;
        let r = compression::run(b, pair, args.reps)?;
        return Ok(Some(("compression", spf, r.table, r.json)));
    }
    if let Some(pair) = args.compare_threads {
        let spf = args.steps_per_frame.unwrap_or(1);
        let r = threads::run(b, pair, spf, args.io_buffer, args.reps)?;
        return Ok(Some(("compression_threads", spf, r.table, r.json)));
    }
    Ok(None)
}

/// The non-blocking efficiency ratio at the calibrated balance (and `--sweep`'s table).
fn run_efficiency(
    args: &Args,
    kind: &str,
    w: &Workload,
    b: &io::IoBench<'_>,
    params: &mut Value,
    report: &mut Map<String, Value>,
) -> Result<()> {
    let cal = io::calibrate(b, args.steps_per_frame)?;
    println!(
        "calibration: write {:.2} ms/frame (fsync included), compute {:.3} ms/step + {:.3} ms/frame -> {} steps/frame{}",
        cal.write_per_frame * 1e3,
        cal.step_seconds * 1e3,
        cal.frame_seconds * 1e3,
        cal.spf,
        if cal.from_user { " (given with --steps-per-frame)" } else { "" }
    );
    if !cal.reachable(1.0) && !cal.from_user {
        println!(
            "note: balance is unreachable here: one step per frame already computes {:.1}x as long as the \
             frame takes to write, so what follows is the compute-bound regime (theory: max(c,w)/(c+w), not 0.50)",
            cal.compute_per_frame(1) / cal.write_per_frame
        );
    }
    params["steps_per_frame"] = json!(cal.spf);
    report.insert("calibration".to_owned(), cal.json());
    let e = io::efficiency(b, &cal, args.io_buffer, args.reps)?;
    println!("{}", e.table);
    report.insert("efficiency_ratio".to_owned(), json!(e.efficiency_ratio));
    report.insert(kind.to_owned(), e.json);
    if args.sweep {
        let s = sweep::run(b, &cal, args.reps)?;
        println!("{}", s.table);
        report.insert("sweep".to_owned(), s.json);
        for cell in &s.auto_too_slow {
            eprintln!(
                "auto more than {:.0} % slower than the best fixed mode: {cell}",
                (sweep::AUTO_TOLERANCE - 1.0) * 100.0
            );
        }
    }
    if let Some(path) = &args.trace {
        output::write_trace(path, &b.pipeline(w, cal.spf, IoMode::Async, args.io_buffer, true)?)?;
        println!("trace of one async run: {}", path.display());
    }
    let cache = b.cache_note();
    println!("page cache: {cache}");
    report.insert("page_cache".to_owned(), json!(cache));
    Ok(())
}
