//! The benchmarks that run the 2-D model through the pipeline (`overhead`, `overlap`, `dtype`,
//! `compression`, `compression-threads`): their workload on the first device `--devices`
//! selects, announced with the machine's state, and the parameters each report records.

use anyhow::{Context, Result};
use serde_json::{Value, json};
use wgpipe::IoMode;
use wgpipe::compute::{DeviceSelector, open_devices};
use wgpipe::storage::{Compression, default_compression_threads};

use super::args::{CompressingSink, CompressionPair, CompressionThreads, Dtype, DtypeSink, Overhead, Overlap};
use super::args::{Devices, OverlapSink, SinkRun};
use super::io::{self, Calibration, IoBench};
use super::measure::{self, Workload};
use super::{Report, compression, dtype, machine, null, output, run_micro, sweep, threads};

/// `bench overhead`: the pipeline against compute alone (null sink), then the microbenchmarks.
pub fn overhead(a: &Overhead, report: &mut Report) -> Result<()> {
    let io_buffer = a.io_buffer.io_buffer;
    let w = workload(&a.devices, (a.rows, a.cols), a.frames, io_buffer)?;
    let mut params = parameters("null", &w, &a.devices, io_buffer, a.report.reps, Compression::None);
    params["steps_per_frame"] = json!(a.steps_per_frame);
    let r = null::run(&w, a.steps_per_frame, io_buffer, a.report.reps)?;
    println!("{}", r.table);
    report.insert("overhead_ratio".to_owned(), json!(r.overhead_ratio));
    report.insert("null".to_owned(), r.json);
    if let Some(path) = &a.trace {
        output::write_trace(path, &null::traced(&w, a.steps_per_frame, io_buffer)?)?;
        println!("trace of one async run: {}", path.display());
    }
    report.insert("machine".to_owned(), machine::describe(&w.gpus, None));
    report.insert("parameters".to_owned(), params);
    run_micro(io_buffer, report)
}

/// What a benchmark writing into a file sink runs: the sink, how it compresses, the workload.
struct SinkBench<'a> {
    kind: &'static str,
    run: &'a SinkRun,
    io_buffer: usize,
    compression: Compression,
    compression_threads: usize,
}

/// `bench overlap SINK`: the efficiency ratio at the calibrated balance (and `--sweep`'s table).
pub fn overlap(sink: &OverlapSink, report: &mut Report) -> Result<()> {
    let (kind, overlap, compression, threads) = match sink {
        OverlapSink::Raw(o) => ("raw", o, Compression::None, default_compression_threads()),
        OverlapSink::Hdf5(c) => ("hdf5", &c.overlap, c.compressing.compression, c.compressing.threads.get()),
        OverlapSink::Zarr(c) => ("zarr", &c.overlap, c.compressing.compression, c.compressing.threads.get()),
    };
    let bench = SinkBench {
        kind,
        run: &overlap.run,
        io_buffer: overlap.io_buffer.io_buffer,
        compression,
        compression_threads: threads,
    };
    in_scratch(&bench, report, |w, b, params, report| efficiency(overlap, w, b, params, report))
}

/// `bench dtype SINK`: f32 against f16 output.
pub fn dtype(a: &Dtype, report: &mut Report) -> Result<()> {
    let kind = match a.sink {
        DtypeSink::Raw => "raw",
        DtypeSink::Hdf5 => "hdf5",
    };
    let (io_buffer, spf) = (a.io_buffer.io_buffer, a.steps_per_frame);
    let bench = SinkBench {
        kind,
        run: &a.run,
        io_buffer,
        compression: Compression::None,
        compression_threads: default_compression_threads(),
    };
    in_scratch(&bench, report, |_, b, params, report| {
        let r = dtype::run(b, spf, io_buffer, a.run.report.reps)?;
        comparison_found(params, report, "dtype", spf, r.table, r.json);
        Ok(())
    })
}

/// `bench compression SINK A,B`: the same captured frames stored with A and with B.
pub fn compression(a: &CompressionPair, report: &mut Report) -> Result<()> {
    let kind = match a.sink {
        CompressingSink::Hdf5 => "hdf5",
        CompressingSink::Zarr => "zarr",
    };
    let bench = SinkBench {
        kind,
        run: &a.run,
        io_buffer: super::args::DEFAULT_IO_BUFFER,
        compression: Compression::None,
        compression_threads: a.threads.get(),
    };
    in_scratch(&bench, report, |w, b, params, report| {
        b.data = measure::capture_frames(w, a.steps_per_frame)?;
        let r = compression::run(b, a.pair, a.run.report.reps)?;
        comparison_found(params, report, "compression", a.steps_per_frame, r.table, r.json);
        Ok(())
    })
}

/// `bench compression-threads A,B --compression C`: the HDF5 sink compressing on A and on B
/// threads.
pub fn compression_threads(a: &CompressionThreads, report: &mut Report) -> Result<()> {
    let (io_buffer, spf) = (a.io_buffer.io_buffer, a.steps_per_frame);
    let bench = SinkBench {
        kind: "hdf5",
        run: &a.run,
        io_buffer,
        compression: a.compression,
        compression_threads: default_compression_threads(),
    };
    in_scratch(&bench, report, |_, b, params, report| {
        let r = threads::run(b, a.pair, spf, io_buffer, a.run.report.reps)?;
        comparison_found(params, report, "compression_threads", spf, r.table, r.json);
        Ok(())
    })
}

/// A comparison's table printed, its figures under `key`, its steps per frame in `params`.
fn comparison_found(params: &mut Value, report: &mut Report, key: &str, spf: u32, table: String, json: Value) {
    params["steps_per_frame"] = json!(spf);
    println!("{table}");
    report.insert(key.to_owned(), json);
}

/// The workload of `bench`, its sink writing into a scratch directory under `--out`, handed
/// to `measure`; then the machine and the parameters go into `report`.
fn in_scratch(
    bench: &SinkBench<'_>,
    report: &mut Report,
    measure: impl FnOnce(&Workload, &mut IoBench<'_>, &mut Value, &mut Report) -> Result<()>,
) -> Result<()> {
    let run = bench.run;
    let w = workload(&run.devices, (run.rows, run.cols), run.frames, bench.io_buffer)?;
    let mut params = parameters(bench.kind, &w, &run.devices, bench.io_buffer, run.report.reps, bench.compression);
    params["compression_threads"] = json!(bench.compression_threads);
    let scratch = output::ScratchDir::under(run.scratch.out.as_deref(), "bench")?;
    println!("writing to {} ({})", scratch.path().display(), machine::filesystem_type(scratch.path()));
    let mut b = IoBench::new(&w, bench.kind, scratch.path(), bench.compression, bench.compression_threads)?;
    measure(&w, &mut b, &mut params, report)?;
    report.insert("machine".to_owned(), machine::describe(&w.gpus, Some(scratch.path())));
    report.insert("parameters".to_owned(), params);
    Ok(())
}

/// The parameters every pipeline benchmark's report records.
fn parameters(
    kind: &str,
    w: &Workload,
    devices: &Devices,
    io_buffer: usize,
    reps: usize,
    compression: Compression,
) -> Value {
    json!({
        "sink": kind, "rows": w.rows, "cols": w.cols, "frames": w.frames, "devices": devices.devices,
        "io_buffer": io_buffer, "reps": reps, "compression": compression.to_string(), "fields": w.fields,
        "staging_buffers": w.staging,
    })
}

/// The workload on `shape` (rows, cols) of `frames` frames, on the first device `--devices`
/// selects, announced with the machine's state.
fn workload(devices: &Devices, shape: (usize, usize), frames: u64, io_buffer: usize) -> Result<Workload> {
    let selector = DeviceSelector::parse(&devices.devices).context("reading --devices")?;
    let gpus = open_devices(&selector, 1).context("opening the devices to benchmark")?;
    let w = Workload { gpus, rows: shape.0, cols: shape.1, frames, fields: vec!["v".to_owned()], staging: 2 };
    println!("{}", machine::lp_threads_note());
    for g in &w.gpus {
        println!("device: {}", g.label());
    }
    println!(
        "grid {}x{}, {} frames of {:.2} MB per device, io_buffer {io_buffer}, load average {}",
        w.rows,
        w.cols,
        w.frames,
        w.frame_bytes() as f64 / 1e6,
        machine::load_average().map_or("unknown".to_owned(), |l| format!("{l:.2}"))
    );
    Ok(w)
}

/// The non-blocking efficiency ratio at the calibrated balance, `--sweep`'s table, and the
/// trace of one async run.
fn efficiency(o: &Overlap, w: &Workload, b: &IoBench<'_>, params: &mut Value, report: &mut Report) -> Result<()> {
    let (io_buffer, reps) = (o.io_buffer.io_buffer, o.run.report.reps);
    let cal = io::calibrate(b, o.steps_per_frame)?;
    print_calibration(&cal);
    params["steps_per_frame"] = json!(cal.spf);
    report.insert("calibration".to_owned(), cal.json());
    let e = io::efficiency(b, &cal, io_buffer, reps)?;
    println!("{}", e.table);
    report.insert("efficiency_ratio".to_owned(), json!(e.efficiency_ratio));
    report.insert(b.kind.to_owned(), e.json);
    if o.sweep {
        run_sweep(b, &cal, reps, report)?;
    }
    if let Some(path) = &o.trace {
        output::write_trace(path, &b.pipeline(w, cal.spf, IoMode::Async, io_buffer, true)?)?;
        println!("trace of one async run: {}", path.display());
    }
    let cache = b.cache_note();
    println!("page cache: {cache}");
    report.insert("page_cache".to_owned(), json!(cache));
    Ok(())
}

/// The calibration's line, and a note when balance is out of reach.
fn print_calibration(cal: &Calibration) {
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
}

/// `--sweep`'s table, stored under `sweep`, and the cells where auto lost.
fn run_sweep(b: &IoBench<'_>, cal: &Calibration, reps: usize, report: &mut Report) -> Result<()> {
    let s = sweep::run(b, cal, reps)?;
    println!("{}", s.table);
    report.insert("sweep".to_owned(), s.json);
    for cell in &s.auto_too_slow {
        eprintln!(
            "auto more than {:.0} % slower than the best fixed mode: {cell}",
            (sweep::AUTO_TOLERANCE - 1.0) * 100.0
        );
    }
    Ok(())
}
