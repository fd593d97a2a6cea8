//! `--kernel --roofline`: the adapter's copy bandwidth, and each shipped kernel's effective
//! bandwidth as a fraction of it: how close a step kernel comes to the memory roof, so that
//! the first run on a real GPU gives a roofline figure.
//!
//! The roof is a device-local buffer copy (`copy_buffer_to_buffer`, [`COPY_BYTES`], as many
//! copies per submission as fill [`MIN_TIMING`], submit and wait), counted as read plus
//! write (`2 × bytes`): what a
//! step must move at the least is the same read-once-write-once traffic (the kernel bench's
//! byte model). It is measured before and after the kernels, alternating with nothing else,
//! so that the spread shows the machine's drift over the kernel runs.

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

/// GB/s (read + write) of `reps` timed submissions of [`COPIES`] copies of [`COPY_BYTES`].
pub fn copy_bandwidth(gpu: &GpuDevice, reps: usize) -> Result<Vec<f64>> {
    let device = gpu.device();
    let buffer = |label: &str, usage: wgpu::BufferUsages| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: COPY_BYTES,
            usage,
            mapped_at_creation: false,
        })
    };
    let src = buffer("roofline source", wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST);
    let dst = buffer("roofline destination", wgpu::BufferUsages::COPY_DST);
    // Touch both (a first write allocates lavapipe's memory), then time.
    let submit = |copies: u32| -> Result<f64> {
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("roofline") });
        for _ in 0..copies {
            encoder.copy_buffer_to_buffer(&src, 0, &dst, 0, COPY_BYTES);
        }
        let start = Instant::now();
        let index = gpu.queue().submit([encoder.finish()]);
        gpu.wait(index).context("waiting for the copies")?;
        Ok(start.elapsed().as_secs_f64())
    };
    gpu.queue().write_buffer(&src, 0, &vec![1u8; COPY_BYTES as usize]);
    submit(1)?;
    let first = submit(COPIES)?;
    let scale = (MIN_TIMING / first.max(1e-9)).ceil().clamp(1.0, f64::from(MAX_COPIES / COPIES));
    let copies = COPIES * scale as u32;
    (0..reps).map(|_| submit(copies).map(|s| 2.0 * (COPY_BYTES * u64::from(copies)) as f64 / s / 1e9)).collect()
}

/// The roofline section of the kernel report: the copy bandwidth measured `before` and
/// `after` the kernels, and each case's shipped kernel's effective GB/s (from the kernel
/// bench's `cases`) as a fraction of the median of both.
pub fn report(before: &[f64], after: &[f64], cases: &Value) -> (String, Value) {
    let all: Vec<f64> = before.iter().chain(after).copied().collect();
    let roof = Summary::of(&all).median;
    let mut text = String::new();
    let _ = writeln!(
        text,
        "roofline: buffer copy (read + write) {} GB/s before the kernels, {} GB/s after",
        Summary::of(before).text(2),
        Summary::of(after).text(2)
    );
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
            "  {kernel} {}: {:.0} % [{:.0}–{:.0}] of the copy bandwidth",
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
        "copy_gb_per_s_before": Summary::json(before), "copy_gb_per_s_after": Summary::json(after),
        "roof_gb_per_s": roof, "kernels": fractions,
    });
    (text, json)
}
