//! `bench zfp-encoder`: the device's ZFP fixed-rate encoder alone, against the zfp C library's
//! `zfp_compress` on one host core, on the same field, and against the adapter's memory roof.
//!
//! The field is the 3-D Gray-Scott model's `v` at `L`³ after [`STEPS`] steps on the device
//! (smooth, with fronts: what a run encodes), encoded where the model left it. Per repetition,
//! in alternating order: the device's time per field, from as many encodes in one submission
//! as fill [`MIN_TIMING`] (the stream cleared and the pass, as `ZfpEncoder::record` records
//! them, submit and wait), and the host's, from as many `zfp_compress` calls as fill it. Before
//! timing, the device's stream must equal zfp's byte for byte: a faster wrong encoder fails the
//! bench.
//!
//! Figures: milliseconds per field each way, the device / host ratio per repetition (on
//! lavapipe with `LP_NUM_THREADS=1` both encoders run on one core), and the device's
//! effective bandwidth under the byte model *the field read once, the stream written once*
//! (`4 + R/8` bytes per value) as a fraction of the faster device-local copy's (`bench kernel
//! --roofline`'s roof): how close the encoder comes to what the memory allows.

use std::fmt::Write as _;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use wgpipe::compute::gray_scott_3d::{self, GrayScott3dParams};
use wgpipe::compute::wgpu;
use wgpipe::compute::zfp::{ZfpBinding, ZfpEncoder, ZfpField, ZfpRate};
use wgpipe::compute::{FieldSim, GpuDevice, Grid};

use super::roofline;
use super::stats::Summary;

/// Steps of the model before its field is encoded: fronts have formed.
const STEPS: u32 = 200;
/// The model's field encoded: `v`.
const FIELD: usize = 1;
/// Seed of the model's noise (any fixed value does).
const SEED: u64 = 7;
/// Shortest timing, each way: submitting and waiting must not count on a GPU, nor the
/// clock's resolution on the host.
const MIN_TIMING: f64 = 0.2;
/// Most encodes per timing.
const MAX_ENCODES: u32 = 1 << 14;

/// What the comparison found.
pub struct ZfpEncoderResult {
    pub json: Value,
    pub table: String,
}

/// The device's side: the model's field on the device, bound to the encoder.
struct DeviceSide<'a> {
    gpu: &'a GpuDevice,
    encoder: ZfpEncoder,
    binding: ZfpBinding,
    /// Keeps the field's buffers alive.
    _sim: FieldSim,
}

impl DeviceSide<'_> {
    /// Seconds of one submission of `encodes` encodes, submit to finish.
    fn time(&self, encodes: u32) -> Result<f64> {
        let mut encoder =
            self.gpu.device().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bench zfp") });
        for _ in 0..encodes {
            self.encoder.record(&mut encoder, &self.binding);
        }
        roofline::time_submission(self.gpu, encoder, "ZFP encodes")
    }
}

/// Runs the comparison on `gpu`: `reps` rotations of the `edge`³ field at `rate`, then the
/// roof.
pub fn run(gpu: &GpuDevice, edge: usize, rate: ZfpRate, reps: usize) -> Result<ZfpEncoderResult> {
    let grid = Grid::new(&[edge, edge, edge]).context("the bench's grid")?;
    let (device, values) = set_up(gpu, &grid, rate)?;
    let host = || host::compress(&values, &grid, rate);
    let stream = host()?;
    let encoded = device.encoder.encode_slice(gpu, ZfpField::squeezed(&grid), rate, &values)?;
    if encoded != stream {
        bail!("the device's stream of the {edge}³ field at rate {} differs from zfp_compress's", rate.bits());
    }
    let device_encodes = calibrate(|n| device.time(n))?;
    let host_encodes = calibrate(|n| timed_host(n, &host))?;
    let (mut device_ms, mut host_ms, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..reps {
        let mut pair = [0.0; 2];
        for way in [rep % 2, 1 - rep % 2] {
            pair[way] = if way == 0 {
                device.time(device_encodes)? / f64::from(device_encodes)
            } else {
                timed_host(host_encodes, &host)? / f64::from(host_encodes)
            };
        }
        device_ms.push(pair[0] * 1e3);
        host_ms.push(pair[1] * 1e3);
        ratio.push(pair[0] / pair[1]);
    }
    let roof = roofline::copy_bandwidth(gpu, reps)?;
    let roof_gbps = roof.roof();
    let cells = grid.cells() as f64;
    let field_bytes = 4.0 * cells;
    let moved = field_bytes + stream.len() as f64;
    let gbps = |ms: &[f64], bytes: f64| -> Vec<f64> { ms.iter().map(|m| bytes / (m * 1e-3) / 1e9).collect() };
    let effective = gbps(&device_ms, moved);
    let fraction: Vec<f64> = effective.iter().map(|g| g / roof_gbps.max(1e-9)).collect();
    let mut t = String::new();
    let _ = writeln!(
        t,
        "ZFP encoder at rate {}: the 3-D model's v at {edge}³ after {STEPS} steps ({} B of f32, a {} B stream); \
         median [min–max] of {reps} rotations",
        rate.bits(),
        field_bytes,
        stream.len()
    );
    let _ = writeln!(t, "  device: {} ms per field ({device_encodes} per timing)", Summary::of(&device_ms).text(3));
    let _ = writeln!(t, "  host (zfp_compress, one core): {} ms per field", Summary::of(&host_ms).text(3));
    let _ = writeln!(t, "  device / host: {}", Summary::of(&ratio).text(3));
    let _ = writeln!(
        t,
        "  device: {} GB/s effective (field read + stream written), {} of the faster copy's {roof_gbps:.1} GB/s",
        Summary::of(&effective).text(2),
        Summary::of(&fraction).text(3)
    );
    let json = json!({
        "model": "gray-scott-3d", "field": "v", "edge": edge, "steps": STEPS, "rate": rate.bits(), "reps": reps,
        "field_bytes": field_bytes, "stream_bytes": stream.len(), "encodes_per_timing": device_encodes,
        "device_ms_per_field": Summary::json(&device_ms),
        "host_ms_per_field": Summary::json(&host_ms),
        "time_ratio_device_over_host": Summary::json(&ratio),
        "host_gb_per_s": Summary::json(&gbps(&host_ms, field_bytes)),
        "device_effective_gb_per_s": Summary::json(&effective),
        "roof_gb_per_s": {"buffer_copy": Summary::json(&roof.buffer), "shader_copy": Summary::json(&roof.shader)},
        "fraction_of_roof": Summary::json(&fraction),
    });
    Ok(ZfpEncoderResult { json, table: t })
}

/// The model run [`STEPS`] steps on `gpu`, its field bound to a 3-D encoder at `rate`, and
/// the field's values on the host.
fn set_up<'a>(gpu: &'a GpuDevice, grid: &Grid, rate: ZfpRate) -> Result<(DeviceSide<'a>, Vec<f32>)> {
    let spec = GrayScott3dParams::default().kernel(SEED);
    let mut sim =
        FieldSim::new(gpu, &spec, grid, &gray_scott_3d::initial_state(grid)).context("setting up the model")?;
    sim.run_steps(STEPS).context("running the model")?;
    let values = sim.read_fields(&[FIELD]).context("reading the model's field back")?;
    let encoder = ZfpEncoder::new(gpu, 3)?;
    let stream = gpu.scoped("allocating the ZFP stream", |device| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("bench zfp stream"),
            size: ZfpField::squeezed(grid).stream_bytes(rate),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    })?;
    let input = sim.current(FIELD).context("the model has no field v")?;
    let binding = encoder.bind(gpu, ZfpField::squeezed(grid), rate, input, &stream)?;
    Ok((DeviceSide { gpu, encoder, binding, _sim: sim }, values))
}

/// Encodes per timing: as many as fill [`MIN_TIMING`], by `time(n)`'s seconds for `n`.
fn calibrate(time: impl Fn(u32) -> Result<f64>) -> Result<u32> {
    time(1)?;
    let mut n = 1;
    loop {
        let seconds = time(n)?;
        if seconds >= MIN_TIMING || n >= MAX_ENCODES {
            return Ok(n);
        }
        let factor = (MIN_TIMING / seconds.max(1e-9)).ceil().clamp(2.0, 1024.0) as u32;
        n = n.saturating_mul(factor).min(MAX_ENCODES);
    }
}

/// Seconds of `n` calls of `compress`.
fn timed_host(n: u32, compress: &impl Fn() -> Result<Vec<u8>>) -> Result<f64> {
    let start = Instant::now();
    for _ in 0..n {
        std::hint::black_box(compress()?);
    }
    Ok(start.elapsed().as_secs_f64())
}

/// The zfp C library's fixed-rate compression, as the device's stream must equal it.
mod host {
    #![expect(unsafe_code, reason = "the host's encoder is the zfp C library, called through zfp-sys")]

    use anyhow::{Result, bail};
    use wgpipe::compute::Grid;
    use wgpipe::compute::zfp::ZfpRate;

    /// `values` (the 3-D `grid`, x fastest) as `zfp_compress` writes them with
    /// `zfp_stream_set_rate(rate, float, 3, align = 0)`.
    pub fn compress(values: &[f32], grid: &Grid, rate: ZfpRate) -> Result<Vec<u8>> {
        use zfp_sys::*;
        if values.len() != grid.cells() {
            bail!("{} values for a grid of {} cells", values.len(), grid.cells());
        }
        let float = zfp_type_zfp_type_float;
        // zfp reads the values through a mutable pointer but does not write them.
        let ptr = values.as_ptr().cast_mut().cast::<std::ffi::c_void>();
        // SAFETY: `values` holds every cell of the grid and outlives the field and the stream;
        // `buffer` holds zfp_stream_maximum_size bytes, all that zfp_compress may write.
        let (written, mut buffer) = unsafe {
            let field = zfp_field_3d(ptr, float, grid.nx(), grid.ny(), grid.nz());
            let zfp = zfp_stream_open(std::ptr::null_mut());
            zfp_stream_set_rate(zfp, f64::from(rate.bits()), float, 3, 0);
            let size = zfp_stream_maximum_size(zfp, field);
            let mut buffer = vec![0u8; size];
            let stream = stream_open(buffer.as_mut_ptr().cast(), size);
            zfp_stream_set_bit_stream(zfp, stream);
            zfp_stream_rewind(zfp);
            let written = zfp_compress(zfp, field);
            zfp_field_free(field);
            zfp_stream_close(zfp);
            stream_close(stream);
            (written, buffer)
        };
        if written == 0 {
            bail!("zfp_compress failed on the {grid} grid at rate {}", rate.bits());
        }
        buffer.truncate(written);
        Ok(buffer)
    }
}
