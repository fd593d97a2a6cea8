//! Measures how fast the raw and HDF5 sinks store large frames, fsync included.
//!
//! ```text
//! cargo run --release -p wgpipe-storage --example sink_throughput -- DIR [FRAMES] [ROWS] [COLS] [SINKS] [DATA] [THREADS] [CHUNK_FRAMES]
//! ```
//! Defaults: 256 frames of 1024×1024 f32 (4 MiB each, 1 GiB in all), sinks `raw,hdf5`.
//! Each sink writes one stream with one field into DIR (replacing an earlier output), with
//! `fsync` on so the time includes getting the data to the disk, and prints MB/s
//! (10^6 bytes per second, as `dd` prints it) and the output's size relative to the data.
//! Compare with `dd if=/dev/zero of=DIR/dd.bin bs=4M count=256 conv=fdatasync`.
//!
//! A sink may name an HDF5 compression after `=`, e.g. `hdf5=deflate:6,hdf5=blosc-lz4`
//! (blosc needs `--features blosc`). DATA is `ramp` (default: a float ramp, the same every
//! frame) or `gs` (Gray-Scott-like: smooth spots in [0, 0.5] on a near-zero background,
//! drifting from frame to frame, which is what compression is for). THREADS: compression
//! threads of a deflate HDF5 output (default: `default_compression_threads()`). CHUNK_FRAMES:
//! frames per HDF5 chunk (default 1).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use wgpipe_storage::{Compression, DType, Frame, SinkOptions, StreamInfo, StreamLayout, open_sink};

/// Distinct frames of `gs` data, written in turn.
const GS_FRAMES: usize = 8;

/// A Gray-Scott-like `v` field: smooth spots in [0, 0.5] on a background near zero, moved by
/// `phase` (the simulation's patterns drift slowly from frame to frame).
fn gray_scott_like(rows: usize, cols: usize, phase: f32) -> Vec<u8> {
    let tau = std::f32::consts::TAU;
    let mut v = Vec::with_capacity(rows * cols * 4);
    for r in 0..rows {
        for c in 0..cols {
            let (y, x) = (r as f32, c as f32);
            let a = (tau * x / 37.0 + phase).sin() * (tau * y / 41.0).sin()
                + 0.4 * (tau * (x + 0.7 * y) / 97.0 - phase).sin();
            let spot = (a - 0.35).max(0.0);
            let value = 0.5 * spot / (spot + 0.2) + 1e-4 * (1.0 + (0.37 * x + 0.11 * y).sin());
            v.extend_from_slice(&value.to_le_bytes());
        }
    }
    v
}

fn arg<T: std::str::FromStr>(args: &[String], i: usize, default: T) -> Result<T> {
    match args.get(i) {
        None => Ok(default),
        Some(s) => s.parse().ok().with_context(|| format!("argument {i} ({s:?}) is not a number")),
    }
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.first().map(PathBuf::from) else {
        bail!("usage: sink_throughput DIR [FRAMES] [ROWS] [COLS] [SINKS] [ramp|gs] [THREADS] [CHUNK_FRAMES]");
    };
    let frames: u64 = arg(&args, 1, 256)?;
    let rows: usize = arg(&args, 2, 1024)?;
    let cols: usize = arg(&args, 3, 1024)?;
    let threads: usize = arg(&args, 6, wgpipe_storage::default_compression_threads())?;
    let chunk_frames: usize = arg(&args, 7, 1)?;
    let sinks = args.get(4).map_or("raw,hdf5", String::as_str).to_owned();
    let layout = StreamLayout::grid2d(["u"], rows, cols, DType::F32)
        .with_stream(StreamInfo::new("run0").with_expected_frames(frames));
    // Non-trivial data so nothing can shortcut zeros; buffers reused like the pipeline's pool.
    let data: Vec<Vec<u8>> = match args.get(5).map_or("ramp", String::as_str) {
        "ramp" => vec![(0..rows * cols).flat_map(|i| (i as f32 * 0.25).to_le_bytes()).collect()],
        "gs" => (0..GS_FRAMES).map(|i| gray_scott_like(rows, cols, 0.05 * i as f32)).collect(),
        other => bail!("data {other:?} is unknown: use ramp or gs"),
    };
    let frame_bytes = layout.frame_bytes()? as f64;
    let total = frames as f64 * frame_bytes;
    println!("{frames} frames of {rows}x{cols} f32 ({:.1} MiB each) into {}", frame_bytes / 1048576.0, dir.display());
    for name in sinks.split(',') {
        let (kind, compression) = match name.split_once('=') {
            None => (name, Compression::None),
            Some((kind, c)) => (kind, c.parse::<Compression>().with_context(|| format!("sink {name}"))?),
        };
        // With the level a bare `blosc-zstd` or `deflate` stands for.
        let name = if compression == Compression::None { kind.to_owned() } else { format!("{kind}={compression}") };
        let path = dir.join(if kind == "hdf5" { "bench.h5" } else { "bench-raw" });
        let options = SinkOptions::new(&path)
            .with_overwrite(true)
            .with_fsync(true)
            .with_compression(compression)
            .with_compression_threads(threads)
            .with_chunk_frames(chunk_frames);
        let mut sink = open_sink(kind, &options).with_context(|| format!("cannot open sink {name}"))?;
        let mut pool: Vec<Frame> = data.iter().map(|d| Frame::new(0, 0, 0, d.clone())).collect();
        let start = Instant::now();
        sink.begin(&layout).with_context(|| format!("{name}: begin"))?;
        for i in 0..frames {
            let n = pool.len();
            let frame = &mut pool[i as usize % n];
            frame.index = i;
            frame.step = i;
            sink.write(frame).with_context(|| format!("{name}: frame {i}"))?;
        }
        let summary = sink.finish().with_context(|| format!("{name}: finish"))?;
        let secs = start.elapsed().as_secs_f64();
        let stored = stored_bytes(&path).with_context(|| format!("{name}: size of {}", path.display()))?;
        println!(
            "{name:>16}: {:.0} MB/s ({:.2} s for {:.0} MB, stored {:.3} x, checksum {:016x})",
            total / secs / 1e6,
            secs,
            total / 1e6,
            stored as f64 / total,
            summary.checksum
        );
    }
    Ok(())
}

/// Bytes an output takes: the file, or the sum of a directory's files.
fn stored_bytes(path: &std::path::Path) -> Result<u64> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_dir() {
        return Ok(meta.len());
    }
    let mut sum = 0;
    for entry in std::fs::read_dir(path)? {
        sum += stored_bytes(&entry?.path())?;
    }
    Ok(sum)
}
