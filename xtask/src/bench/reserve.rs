//! `bench reserve-cost`: what the HDF5 sink's disk-space reservation costs, and `bench layout-cost`:
//! what laying an output out whole costs (no GPU).
//!
//! The same frames go through the HDF5 sink two ways (reservation on and off; laid out or growing),
//! alternating which goes first in each repetition (a-b, b-a, ...) so that drift on a
//! shared machine hits both alike. Every run ends with `fsync` in `finish`, inside the timed
//! span: on ext4 the blocks fallocate reserves are "unwritten" extents, converted when the
//! data reaches the disk, so that is where a cost would show. `sync` runs before each run so
//! that no run pays for the previous one's writeback.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result};
use serde_json::{Value, json};
use wgpipe::storage::{DType, Frame, SinkOptions, StreamInfo, StreamLayout, open_sink};

use super::stats::Summary;

/// What the comparison found.
pub struct ReserveResult {
    pub json: Value,
    pub table: String,
}

/// Frames of varied bits (a cheap xorshift): nothing for a filesystem to deduplicate.
pub(super) fn frames(frame_bytes: usize, count: u64) -> Vec<Frame> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..count)
        .map(|i| {
            let data: Vec<u8> = (0..frame_bytes / 8)
                .flat_map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x.to_le_bytes()
                })
                .collect();
            Frame::new(0, i, i + 1, data)
        })
        .collect()
}

/// One way of writing the same frames through the HDF5 sink.
struct Setup {
    /// Key of its figures in the JSON (`seconds_NAME`).
    name: &'static str,
    /// How the table names it.
    label: &'static str,
    layout: StreamLayout,
    reserve: bool,
}

/// Seconds to write `frames` into a new HDF5 file at `path` as `setup` says and fsync it, and
/// of that the seconds `begin` took.
fn timed_run(path: &Path, setup: &Setup, frames: &[Frame]) -> Result<(f64, f64)> {
    let options = SinkOptions::new(path).with_fsync(true).with_reserve_space(setup.reserve);
    let _ = Command::new("sync").status();
    let start = Instant::now();
    let mut sink = open_sink("hdf5", &options)?;
    sink.begin(&setup.layout)?;
    let begun = start.elapsed().as_secs_f64();
    for f in frames {
        sink.write(f)?;
    }
    sink.finish()?;
    let seconds = start.elapsed().as_secs_f64();
    std::fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()))?;
    Ok((seconds, begun))
}

/// `reps` alternating pairs of runs of `count` frames of `rows` x `cols` f32 in `dir`, setup
/// `a` against setup `b`: the time of `a` over `b`, per pair.
fn compare(
    dir: &Path,
    title: &str,
    [a, b]: [Setup; 2],
    (rows, cols, count, reps): (usize, usize, u64, usize),
) -> Result<ReserveResult> {
    let frame_bytes = a.layout.frame_bytes()?;
    let frames = frames(frame_bytes, count);
    let path = dir.join("hdf5-cost.h5");
    let (mut ta, mut tb, mut ba, mut bb) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for rep in 0..reps {
        for first in if rep % 2 == 0 { [true, false] } else { [false, true] } {
            let setup = if first { &a } else { &b };
            let (seconds, begun) = timed_run(&path, setup, &frames)?;
            if first {
                ta.push(seconds);
                ba.push(begun);
            } else {
                tb.push(seconds);
                bb.push(begun);
            }
        }
    }
    let mb = (frame_bytes as u64 * count) as f64 / 1e6;
    let rate = |xs: &[f64]| xs.iter().map(|s| mb / s).collect::<Vec<_>>();
    let ratio: Vec<f64> = ta.iter().zip(&tb).map(|(x, y)| x / y).collect();
    let per_frame_us: Vec<f64> = ta.iter().zip(&tb).map(|(x, y)| (x - y) * 1e6 / count as f64).collect();
    let mut t = String::new();
    let _ = writeln!(
        t,
        "HDF5 sink, {title}: {count} frames of {:.2} MB, fsync in finish, median [min–max] of {reps} pairs",
        frame_bytes as f64 / 1e6
    );
    let _ = writeln!(t, "  {:<14} {} MB/s", format!("{}:", a.label), Summary::of(&rate(&ta)).text(0));
    let _ = writeln!(t, "  {:<14} {} MB/s", format!("{}:", b.label), Summary::of(&rate(&tb)).text(0));
    let _ = writeln!(t, "  time {}/{}: {} (per pair)", a.label, b.label, Summary::of(&ratio).text(3));
    let _ = writeln!(t, "  cost per frame: {} µs", Summary::of(&per_frame_us).text(0));
    let ms = |xs: &[f64]| xs.iter().map(|s| s * 1e3).collect::<Vec<_>>();
    let _ = writeln!(
        t,
        "  begin: {} {} ms, {} {} ms",
        a.label,
        Summary::of(&ms(&ba)).text(1),
        b.label,
        Summary::of(&ms(&bb)).text(1)
    );
    let mut json = json!({
        "rows": rows, "cols": cols, "frames": count, "reps": reps, "fsync": true,
        "cost_per_frame_us": Summary::json(&per_frame_us),
    });
    json[format!("seconds_{}", a.name)] = Summary::json(&ta);
    json[format!("seconds_{}", b.name)] = Summary::json(&tb);
    json[format!("time_ratio_{}_over_{}", a.name, b.name)] = Summary::json(&ratio);
    json[format!("begin_seconds_{}", a.name)] = Summary::json(&ba);
    json[format!("begin_seconds_{}", b.name)] = Summary::json(&bb);
    Ok(ReserveResult { json, table: t })
}

/// `bench reserve-cost`: a file that grows with every frame (no expected frame count), with the
/// reservation on and off.
pub fn run(dir: &Path, rows: usize, cols: usize, count: u64, reps: usize) -> Result<ReserveResult> {
    let layout = StreamLayout::grid2d(["v"], rows, cols, DType::F32).with_stream(StreamInfo::new("s0"));
    let setups = [
        Setup { name: "reserve_on", label: "reserve on", layout: layout.clone(), reserve: true },
        Setup { name: "reserve_off", label: "reserve off", layout, reserve: false },
    ];
    compare(dir, "reserve_space on vs off", setups, (rows, cols, count, reps))
}

/// `bench layout-cost`: the same frames into a file laid out whole at `begin` (the stream's
/// frame count known: no metadata change per frame, two flushes per frame) and into one that
/// grows with every frame (one flush), both with the reservation.
pub fn run_layout(dir: &Path, rows: usize, cols: usize, count: u64, reps: usize) -> Result<ReserveResult> {
    let grid = StreamLayout::grid2d(["v"], rows, cols, DType::F32);
    let setups = [
        Setup {
            name: "laid_out",
            label: "laid out",
            layout: grid.clone().with_stream(StreamInfo::new("s0").with_expected_frames(count)),
            reserve: true,
        },
        Setup { name: "growing", label: "growing", layout: grid.with_stream(StreamInfo::new("s0")), reserve: true },
    ];
    compare(dir, "laid out whole vs growing", setups, (rows, cols, count, reps))
}
