//! `bench peers posix`: the raw sink next to a plain `write` loop of the same bytes
//! (no GPU).
//!
//! Both write the same frames (one stream, one `f32` field) as one file, one `write` per
//! frame, and `fdatasync` at the end, inside the timed span; the raw sink also validates
//! each frame and writes its steps file and metadata, which is what the ratio prices.
//!
//! The raw sink runs twice: with frames whose hash the producer computed, as the runner's
//! device threads hand them over ([`Frame::hash_data`], done before the timed span), and with
//! frames it must hash itself while writing (what a program driving the sink directly gets),
//! so the table shows what moving the hash off the writer's thread saves. The three runs
//! rotate their order between repetitions, `sync` before every run, and each run's output is
//! removed after it.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result};
use serde_json::{Value, json};
use wgpipe::storage::{DType, Frame, SinkOptions, StreamInfo, StreamLayout, open_sink};

use super::reserve::frames;
use super::stats::Summary;

/// Distinct frames written in turn (the frames of a run are these, repeated).
const DISTINCT: u64 = 8;

/// What a comparison against a peer writer found (this one's and `bench peers h5py`'s).
pub struct AgainstResult {
    pub json: Value,
    pub table: String,
}

/// Seconds for the `kind` sink to store `count` frames of `pool` into `path` and fsync; the
/// output (a file or a directory) is removed afterwards.
pub(super) fn sink_run(kind: &str, path: &Path, layout: &StreamLayout, pool: &mut [Frame], count: u64) -> Result<f64> {
    let options = SinkOptions::new(path).with_fsync(true);
    let _ = Command::new("sync").status();
    let start = Instant::now();
    let mut sink = open_sink(kind, &options)?;
    sink.begin(layout)?;
    for i in 0..count {
        let n = pool.len();
        let frame = &mut pool[i as usize % n];
        (frame.index, frame.step) = (i, i + 1);
        sink.write(frame)?;
    }
    sink.finish()?;
    let seconds = start.elapsed().as_secs_f64();
    let removed = if path.is_dir() { std::fs::remove_dir_all(path) } else { std::fs::remove_file(path) };
    removed.with_context(|| format!("cannot remove {}", path.display()))?;
    Ok(seconds)
}

/// Seconds for a plain loop of `write_all` to store the same bytes into `dir/plain.bin` and
/// `fdatasync` it.
pub(super) fn plain_run(dir: &Path, pool: &[Frame], count: u64) -> Result<f64> {
    let path = dir.join("plain.bin");
    let _ = Command::new("sync").status();
    let start = Instant::now();
    let mut file = std::fs::File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
    for i in 0..count {
        file.write_all(&pool[i as usize % pool.len()].data).with_context(|| format!("writing {}", path.display()))?;
    }
    file.sync_data().with_context(|| format!("syncing {}", path.display()))?;
    drop(file);
    let seconds = start.elapsed().as_secs_f64();
    std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
    Ok(seconds)
}

/// Runs `reps` rotations of the three runs, `count` frames of `rows` × `cols` `f32` each, in `dir`.
pub fn run(dir: &Path, rows: usize, cols: usize, count: u64, reps: usize) -> Result<AgainstResult> {
    let layout = StreamLayout::grid2d(["v"], rows, cols, DType::F32).with_stream(StreamInfo::new("s0"));
    let frame_bytes = layout.frame_bytes()?;
    let mut unhashed = frames(frame_bytes, DISTINCT.min(count));
    // Index and step change per write; the cached hash covers the data alone.
    let mut hashed: Vec<Frame> = unhashed.iter().cloned().map(Frame::hash_data).collect();
    let (mut raw, mut raw_hashing, mut plain) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..reps {
        for k in 0..3 {
            match (rep + k) % 3 {
                0 => raw.push(sink_run("raw", &dir.join("raw"), &layout, &mut hashed, count)?),
                1 => raw_hashing.push(sink_run("raw", &dir.join("raw"), &layout, &mut unhashed, count)?),
                _ => plain.push(plain_run(dir, &unhashed, count)?),
            }
        }
    }
    let mb = (frame_bytes as u64 * count) as f64 / 1e6;
    let rate = |xs: &[f64]| xs.iter().map(|s| mb / s).collect::<Vec<_>>();
    // Throughput of a raw run over the plain run of the same repetition: 1.0 is the disk's speed.
    let over_plain = |xs: &[f64]| xs.iter().zip(&plain).map(|(r, p)| p / r).collect::<Vec<_>>();
    let (ratio, ratio_hashing) = (over_plain(&raw), over_plain(&raw_hashing));
    let mut t = String::new();
    let _ = writeln!(
        t,
        "raw sink vs plain write loop: {count} frames of {:.2} MB, fdatasync at the end, median [min–max] of {reps} rotations",
        frame_bytes as f64 / 1e6
    );
    let _ = writeln!(t, "  raw sink, frames hashed by the producer: {} MB/s", Summary::of(&rate(&raw)).text(0));
    let _ = writeln!(t, "  raw sink hashing while writing:          {} MB/s", Summary::of(&rate(&raw_hashing)).text(0));
    let _ = writeln!(t, "  plain write:                             {} MB/s", Summary::of(&rate(&plain)).text(0));
    let _ =
        writeln!(t, "  raw / plain throughput (as the runner writes): {} (goal ≥ 0.97)", Summary::of(&ratio).text(3));
    let _ = writeln!(t, "  raw hashing while writing / plain:             {}", Summary::of(&ratio_hashing).text(3));
    let json = json!({
        "rows": rows, "cols": cols, "frames": count, "reps": reps, "fsync": true,
        "seconds_raw": Summary::json(&raw),
        "seconds_raw_hashing_in_sink": Summary::json(&raw_hashing),
        "seconds_plain": Summary::json(&plain),
        "throughput_ratio_raw_over_plain": Summary::json(&ratio),
        "throughput_ratio_raw_hashing_in_sink_over_plain": Summary::json(&ratio_hashing),
    });
    Ok(AgainstResult { json, table: t })
}
