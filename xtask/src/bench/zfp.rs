//! `bench zfp-device`: ZFP fixed-rate compression on the device against the same rate on the
//! host and against no compression, side by side in one process.
//!
//! The 3-D Gray-Scott model (the tutorial's, `L`³, 10 steps per frame, both fields) writes
//! HDF5 (or a Zarr store: `--sink zarr`) with fsync in `finish`, asynchronously, three ways per
//! repetition in rotating order (so that drift hits all alike): uncompressed; `zfp:rate=R`
//! compressed on the writer thread (the host: HDF5's H5Z-ZFP filter, Zarr's zfpy codec through
//! zarrs); `zfp:rate=R` encoded on the GPU before readback (the device), only the streams read
//! back. Per way: wall time per frame, bytes read back
//! per frame, bytes on disk. Then the largest absolute error of a value read back at rates 4,
//! 8, 12 and 16 (the device's files against the uncompressed run's).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{Value, json};
use wgpipe::compute::GpuDevice;
use wgpipe::storage::{Compression, SinkOptions, ZfpRate, open_output, open_sink};

use super::measure::{TUTORIAL_STEPS_PER_FRAME, disk_bytes, remove_output, tutorial_3d};
use super::stats::Summary;

/// The rates of the error table.
const ERROR_RATES: [u32; 4] = [4, 8, 12, 16];

/// The three ways, in the table's order.
const WAYS: [&str; 3] = ["none", "host", "device"];

/// What the comparison found.
pub struct ZfpResult {
    pub json: Value,
    pub table: String,
}

/// Where and how the runs store: the sink's name and its outputs' extension.
#[derive(Debug, Clone, Copy)]
struct Store<'a> {
    sink: &'a str,
    dir: &'a Path,
}

impl Store<'_> {
    /// The output named `name` (`zfp-host`, ...), with the sink's extension.
    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.join(format!("{name}.{}", if self.sink == "zarr" { "zarr" } else { "h5" }))
    }
}

/// One run of `frames` frames of the `edge`³ model to `path` through `sink`, stored as `way`
/// says at `rate`: its wall time and the output's bytes. The output stays (the caller removes
/// it).
fn timed_run(
    gpu: &GpuDevice,
    (sink, path): (&str, &Path),
    edge: usize,
    frames: u64,
    way: &str,
    rate: ZfpRate,
) -> Result<(f64, u64)> {
    let compression = if way == "none" { Compression::None } else { Compression::ZfpRate(rate) };
    let options = SinkOptions::new(path).with_fsync(true).with_overwrite(true).with_compression(compression);
    let sink = open_sink(sink, &options).with_context(|| format!("opening the {sink} sink"))?;
    let mut builder = tutorial_3d(gpu, edge, frames, sink);
    if way == "device" {
        builder = builder.zfp_on_device(wgpipe::compute::zfp::ZfpRate::new(rate.bits())?);
    }
    let report = builder.run().with_context(|| format!("running the 3-D model, ZFP {way}"))?;
    let bytes = disk_bytes(path).with_context(|| format!("cannot measure {}", path.display()))?;
    Ok((report.wall_seconds, bytes))
}

/// The largest absolute difference between every value of `a` and `b` (same layout).
fn largest_error(a: &Path, b: &Path, frames: u64) -> Result<f64> {
    let (a, b) = (open_output(a)?, open_output(b)?);
    let mut worst = 0.0f64;
    for field in 0..a.fields().len() {
        for i in 0..frames {
            let (x, y) = (a.read_f32(0, field, i)?, b.read_f32(0, field, i)?);
            for (p, q) in x.iter().zip(&y) {
                worst = worst.max(f64::from((p - q).abs()));
            }
        }
    }
    Ok(worst)
}

/// Runs the comparison through the sink `sink` (hdf5 or zarr) in `dir` on `gpu`: `reps`
/// rotations at `rate`, then the error table.
pub fn run(
    gpu: &GpuDevice,
    (sink, dir): (&str, &Path),
    edge: usize,
    frames: u64,
    rate: ZfpRate,
    reps: usize,
) -> Result<ZfpResult> {
    let store = Store { sink, dir };
    let mut walls: [Vec<f64>; 3] = Default::default();
    let mut disk: [u64; 3] = [0; 3];
    for rep in 0..reps {
        for k in 0..3 {
            let way = (k + rep) % 3;
            let path = store.path(&format!("zfp-{}", WAYS[way]));
            let (wall, bytes) = timed_run(gpu, (sink, &path), edge, frames, WAYS[way], rate)?;
            walls[way].push(wall * 1e3 / frames as f64);
            disk[way] = bytes;
            remove_output(&path)?;
        }
    }
    let ratio = |i: usize| walls[i].iter().zip(&walls[0]).map(|(a, b)| a / b).collect::<Vec<f64>>();
    let device_over_host: Vec<f64> = walls[2].iter().zip(&walls[1]).map(|(d, h)| d / h).collect();
    let shape = [edge; 3];
    let raw = 2 * 4 * (edge * edge * edge) as u64;
    let streams = 2 * rate.stream_bytes(&shape).context("stream size")?;
    let readback = [raw, raw, streams];
    // The error at each rate: one device run per rate against one uncompressed run.
    let plain = store.path("zfp-error-none");
    timed_run(gpu, (sink, &plain), edge, frames, "none", rate)?;
    let mut errors = Vec::new();
    for bits in ERROR_RATES {
        let path = store.path(&format!("zfp-error-{bits}"));
        timed_run(gpu, (sink, &path), edge, frames, "device", ZfpRate::new(bits)?)?;
        errors.push(largest_error(&plain, &path, frames)?);
        remove_output(&path)?;
    }
    remove_output(&plain)?;

    let mut t = String::new();
    let _ = writeln!(
        t,
        "ZFP fixed rate {rate} on the device vs the host, 3-D model ({edge}³, u and v, {frames} frames of \
         {TUTORIAL_STEPS_PER_FRAME} steps, {sink}, fsync in finish, async); median [min–max] of {reps} rotations"
    );
    for (k, way) in WAYS.iter().enumerate() {
        let _ = writeln!(
            t,
            "  {way:<7} wall per frame {} ms, read back per frame {} B, on disk {} B",
            Summary::of(&walls[k]).text(2),
            readback[k],
            disk[k]
        );
    }
    let _ = writeln!(t, "  host / none:    {}", Summary::of(&ratio(1)).text(3));
    let _ = writeln!(t, "  device / none:  {}", Summary::of(&ratio(2)).text(3));
    let _ = writeln!(t, "  device / host:  {}", Summary::of(&device_over_host).text(3));
    for (bits, e) in ERROR_RATES.iter().zip(&errors) {
        let _ = writeln!(
            t,
            "  rate {bits:>2}: largest absolute error {e:.3e}, {} B read back per frame",
            2 * ZfpRate::new(*bits)?.stream_bytes(&shape).unwrap_or(0)
        );
    }
    let json = json!({
        "model": "gray-scott-3d", "edge": edge, "frames": frames, "steps_per_frame": TUTORIAL_STEPS_PER_FRAME,
        "reps": reps, "sink": sink, "fsync": true, "rate": rate.bits(),
        "wall_ms_per_frame": {"none": Summary::json(&walls[0]), "host": Summary::json(&walls[1]), "device": Summary::json(&walls[2])},
        "time_ratio_host_over_none": Summary::json(&ratio(1)),
        "time_ratio_device_over_none": Summary::json(&ratio(2)),
        "time_ratio_device_over_host": Summary::json(&device_over_host),
        "bytes_read_back_per_frame": {"none": readback[0], "host": readback[1], "device": readback[2]},
        "bytes_on_disk": {"none": disk[0], "host": disk[1], "device": disk[2]},
        "largest_error_by_rate": ERROR_RATES.iter().zip(&errors).map(|(r, e)| json!({"rate": r, "error": e})).collect::<Vec<_>>(),
    });
    Ok(ZfpResult { json, table: t })
}
