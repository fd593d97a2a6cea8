//! `bench kernel --roofline`: the adapter's copy bandwidth, and each shipped kernel's effective
//! bandwidth as a fraction of it: how close a step kernel comes to the memory roof, so that
//! the first run on a real GPU gives a roofline figure.
//!
//! The roof is the faster of two device-local copies of [`COPY_BYTES`], each counted as read
//! plus write (`2 × bytes`): `copy_buffer_to_buffer`, and a compute shader copying `vec4`s,
//! one per invocation ([`SHADER_COPY`]): what a step must move at the least is the same
//! read-once-write-once traffic (the kernel bench's byte model). Both because drivers differ
//! in which is faster: on an NVIDIA H200 under Vulkan the buffer copy moved a fraction of what
//! the GPU's memory gives a shader (docs, "Benchmarks", "Kernels on the H200"). As many copies
//! per submission as fill
//! [`MIN_TIMING`], submit and wait. They are measured before and after the kernels,
//! alternating with nothing else, so that the spread shows the machine's drift over the
//! kernel runs.

use std::fmt::Write as _;
use std::time::Instant;

use anyhow::{Context, Result};
use serde_json::{Value, json};
use wgpipe::compute::GpuDevice;
use wgpipe::compute::wgpu;

use super::stats::Summary;

/// Bytes of each copy: large against caches (lavapipe's and a GPU's), within every
/// adapter's default `max_buffer_size` (256 MiB).
const COPY_BYTES: u64 = 128 << 20;
/// Copies per timed submission at least; more until a timing lasts [`MIN_TIMING`] (a real
/// GPU copies 1 GiB in about a millisecond, where submit-and-wait would count).
const COPIES: u32 = 8;
/// Shortest timing.
const MIN_TIMING: f64 = 0.1;
/// Most copies per submission.
const MAX_COPIES: u32 = 1 << 14;

/// A compute shader copying one `vec4<f32>` per invocation.
const SHADER_COPY: &str = "
@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
    let i = id.x + id.y * n.x * 256u;
    if (i < arrayLength(&src)) {
        dst[i] = src[i];
    }
}
";

/// Workgroups of [`SHADER_COPY`] along x (the rest along y: a dimension holds at most 65535).
const SHADER_COPY_GROUPS_X: u32 = 1024;

/// The roof's two measurements, GB/s (read + write) per timing.
pub struct CopyBandwidth {
    pub buffer: Vec<f64>,
    pub shader: Vec<f64>,
}

impl CopyBandwidth {
    /// The roof: the median of the faster copy's timings, GB/s.
    pub fn roof(&self) -> f64 {
        Summary::of(&self.buffer).median.max(Summary::of(&self.shader).median)
    }
}

/// [`CopyBandwidth`] of `reps` timings each: the buffer copies, then the shader copies.
pub fn copy_bandwidth(gpu: &GpuDevice, reps: usize) -> Result<CopyBandwidth> {
    let buffer = buffer_copy(gpu, reps)?;
    let shader = shader_copy(gpu, reps)?;
    Ok(CopyBandwidth { buffer, shader })
}

/// Two device-local buffers of [`COPY_BYTES`], `src` (with `src_usage`) filled with ones: a
/// first write allocates lavapipe's memory, so that no timing pays for it.
fn buffer_pair(
    gpu: &GpuDevice,
    what: &str,
    src_usage: wgpu::BufferUsages,
    dst_usage: wgpu::BufferUsages,
) -> (wgpu::Buffer, wgpu::Buffer) {
    let buffer = |label: String, usage| {
        gpu.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some(&label),
            size: COPY_BYTES,
            usage,
            mapped_at_creation: false,
        })
    };
    let src = buffer(format!("{what} source"), src_usage | wgpu::BufferUsages::COPY_DST);
    let dst = buffer(format!("{what} destination"), dst_usage);
    gpu.queue().write_buffer(&src, 0, &vec![1u8; COPY_BYTES as usize]);
    (src, dst)
}

/// Seconds from submitting `encoder` to the end of its work.
pub fn time_submission(gpu: &GpuDevice, encoder: wgpu::CommandEncoder, what: &str) -> Result<f64> {
    let start = Instant::now();
    let index = gpu.queue().submit([encoder.finish()]);
    gpu.wait(index).with_context(|| format!("waiting for the {what}"))?;
    Ok(start.elapsed().as_secs_f64())
}

/// GB/s (read + write) of `reps` timed submissions of [`COPIES`] shader copies of [`COPY_BYTES`].
fn shader_copy(gpu: &GpuDevice, reps: usize) -> Result<Vec<f64>> {
    let device = gpu.device();
    let storage = wgpu::BufferUsages::STORAGE;
    let (src, dst) = buffer_pair(gpu, "roofline shader", storage, storage);
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("roofline shader copy"),
        source: wgpu::ShaderSource::Wgsl(SHADER_COPY.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("roofline shader copy"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("roofline shader copy"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry { binding: 0, resource: src.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 1, resource: dst.as_entire_binding() },
        ],
    });
    let vec4s = u32::try_from(COPY_BYTES / 16).context("copy size")?;
    let groups_y = vec4s.div_ceil(256 * SHADER_COPY_GROUPS_X);
    let submit = |copies: u32| -> Result<f64> {
        let mut encoder =
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("roofline shader copy") });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            for _ in 0..copies {
                pass.dispatch_workgroups(SHADER_COPY_GROUPS_X, groups_y, 1);
            }
        }
        time_submission(gpu, encoder, "shader copies")
    };
    timed(submit, reps)
}

/// `reps` timings of `submit` with as many copies as fill [`MIN_TIMING`], as GB/s (read +
/// write).
fn timed(submit: impl Fn(u32) -> Result<f64>, reps: usize) -> Result<Vec<f64>> {
    submit(1)?;
    let first = submit(COPIES)?;
    let scale = (MIN_TIMING / first.max(1e-9)).ceil().clamp(1.0, f64::from(MAX_COPIES / COPIES));
    let copies = COPIES * scale as u32;
    (0..reps).map(|_| submit(copies).map(|s| 2.0 * (COPY_BYTES * u64::from(copies)) as f64 / s / 1e9)).collect()
}

/// GB/s (read + write) of `reps` timed submissions of [`COPIES`] copies of [`COPY_BYTES`].
fn buffer_copy(gpu: &GpuDevice, reps: usize) -> Result<Vec<f64>> {
    let (src, dst) = buffer_pair(gpu, "roofline", wgpu::BufferUsages::COPY_SRC, wgpu::BufferUsages::COPY_DST);
    let submit = |copies: u32| -> Result<f64> {
        let mut encoder =
            gpu.device().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("roofline") });
        for _ in 0..copies {
            encoder.copy_buffer_to_buffer(&src, 0, &dst, 0, COPY_BYTES);
        }
        time_submission(gpu, encoder, "copies")
    };
    timed(submit, reps)
}

/// The roofline section of the kernel report: the copy bandwidths measured `before` and
/// `after` the kernels, and each case's shipped kernel's effective GB/s (from the kernel
/// bench's `cases`) as a fraction of the roof: the median of the faster copy's timings.
pub fn report(before: &CopyBandwidth, after: &CopyBandwidth, cases: &Value) -> (String, Value) {
    let both = |f: fn(&CopyBandwidth) -> &Vec<f64>| -> Vec<f64> { f(before).iter().chain(f(after)).copied().collect() };
    let roof = CopyBandwidth { buffer: both(|c| &c.buffer), shader: both(|c| &c.shader) }.roof();
    let mut text = String::new();
    for (label, b, a) in
        [("buffer copy", &before.buffer, &after.buffer), ("shader copy", &before.shader, &after.shader)]
    {
        let _ = writeln!(
            text,
            "roofline: {label} (read + write) {} GB/s before the kernels, {} GB/s after",
            Summary::of(b).text(2),
            Summary::of(a).text(2)
        );
    }
    let mut fractions = Vec::new();
    for case in cases.as_array().map(Vec::as_slice).unwrap_or_default() {
        let kernel = case["kernel"].as_str().unwrap_or("?");
        let grid: Vec<String> =
            case["grid"].as_array().map(Vec::as_slice).unwrap_or_default().iter().map(Value::to_string).collect();
        let gbps = &case["variants"]["current"]["effective_gb_per_s"];
        let (median, min, max) = (gbps["median"].as_f64(), gbps["min"].as_f64(), gbps["max"].as_f64());
        let (Some(median), Some(min), Some(max)) = (median, min, max) else { continue };
        if roof <= 0.0 {
            continue;
        }
        let _ = writeln!(
            text,
            "  {kernel} {}: {:.0} % [{:.0}–{:.0}] of the faster copy's bandwidth",
            grid.join("x"),
            100.0 * median / roof,
            100.0 * min / roof,
            100.0 * max / roof
        );
        fractions.push(json!({
            "kernel": kernel, "grid": case["grid"], "fraction_of_copy": { "median": median / roof, "min": min / roof, "max": max / roof },
        }));
    }
    let json = json!({
        "copy_bytes": COPY_BYTES, "min_seconds_per_timing": MIN_TIMING,
        "copy_gb_per_s_before": Summary::json(&before.buffer), "copy_gb_per_s_after": Summary::json(&after.buffer),
        "shader_copy_gb_per_s_before": Summary::json(&before.shader),
        "shader_copy_gb_per_s_after": Summary::json(&after.shader),
        "roof_gb_per_s": roof, "kernels": fractions,
    });
    (text, json)
}
