//! `bench compression-threads A,B`: the HDF5 sink compressing each frame on A and on B threads
//! (deflate: wgpipe's pool and direct chunk writes; blosc: c-blosc's pool inside the filter),
//! side by side in one process.
//!
//! Two measurements, each alternating A and B (A first in even repetitions, B first in odd
//! ones) so that drift on a shared machine hits both alike:
//! - writer throughput: the same captured frames through the sink alone, fsync in `finish`
//!   included (MB/s of uncompressed frames);
//! - the I/O-bound pipeline: an async run at the given steps per frame (default 1, where
//!   the writer, not the kernel, sets the pace), wall time.

use std::fmt::Write as _;

use anyhow::Result;
use serde_json::{Value, json};
use wgpipe::IoMode;

use super::io::IoBench;
use super::stats::Summary;

/// What the comparison found.
pub struct ThreadsResult {
    pub json: Value,
    pub table: String,
}

/// Runs the comparison of `threads.0` against `threads.1` compression threads.
pub fn run(b: &IoBench<'_>, threads: (usize, usize), spf: u32, io_buffer: usize, reps: usize) -> Result<ThreadsResult> {
    let (ta, tb) = threads;
    let mb = (b.w.frame_bytes() as u64 * b.w.frames) as f64 / 1e6;
    let order = |rep: usize| if rep.is_multiple_of(2) { [ta, tb] } else { [tb, ta] };
    let (mut wa, mut wb) = (Vec::new(), Vec::new());
    for rep in 0..reps {
        for t in order(rep) {
            b.threads.set(t);
            let seconds = b.write_only()?;
            if t == ta { wa.push(mb / seconds) } else { wb.push(mb / seconds) }
        }
    }
    let (mut pa, mut pb) = (Vec::new(), Vec::new());
    for rep in 0..reps {
        for t in order(rep) {
            b.threads.set(t);
            let wall = b.pipeline(b.w, spf, IoMode::Async, io_buffer, false)?.wall_seconds;
            if t == ta { pa.push(wall) } else { pb.push(wall) }
        }
    }
    // Per repetition, so that each ratio compares runs made next to each other.
    let speedup: Vec<f64> = wb.iter().zip(&wa).map(|(b, a)| b / a).collect();
    let wall_ratio: Vec<f64> = pa.iter().zip(&pb).map(|(a, b)| a / b).collect();
    let mut t = String::new();
    let _ = writeln!(
        t,
        "hdf5 {}: {ta} vs {tb} compression threads, {} frames of {:.2} MB, median [min–max] of {reps} alternating reps",
        b.compression.get(),
        b.w.frames,
        b.w.frame_bytes() as f64 / 1e6
    );
    let _ = writeln!(t, "  writer throughput, {ta} thread(s):  {} MB/s", Summary::of(&wa).text(1));
    let _ = writeln!(t, "  writer throughput, {tb} thread(s):  {} MB/s", Summary::of(&wb).text(1));
    let _ = writeln!(t, "  throughput {tb}/{ta}:               {}", Summary::of(&speedup).text(2));
    let _ = writeln!(t, "  async wall at {spf} step(s)/frame, {ta} thread(s): {} s", Summary::of(&pa).text(3));
    let _ = writeln!(t, "  async wall at {spf} step(s)/frame, {tb} thread(s): {} s", Summary::of(&pb).text(3));
    let _ = writeln!(t, "  wall {ta}/{tb}:                     {}", Summary::of(&wall_ratio).text(2));
    let json = json!({
        "compression": b.compression.get().to_string(),
        "threads": [ta, tb],
        "reps": reps,
        "steps_per_frame": spf,
        "writer_mb_per_s": { ta.to_string(): Summary::json(&wa), tb.to_string(): Summary::json(&wb) },
        "writer_speedup": Summary::json(&speedup),
        "async_wall_seconds": { ta.to_string(): Summary::json(&pa), tb.to_string(): Summary::json(&pb) },
        "async_wall_ratio": Summary::json(&wall_ratio),
    });
    Ok(ThreadsResult { json, table: t })
}
