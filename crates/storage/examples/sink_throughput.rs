//! Measures how fast the raw and HDF5 sinks store large frames, fsync included.
//!
//! ```text
//! cargo run --release -p wgpipe-storage --example sink_throughput -- DIR [FRAMES] [ROWS] [COLS] [SINKS]
//! ```
//! Defaults: 256 frames of 1024×1024 f32 (4 MiB each, 1 GiB in all), sinks `raw,hdf5`.
//! Each sink writes one stream with one field into DIR (replacing an earlier output), with
//! `fsync` on so the time includes getting the data to the disk, and prints MB/s
//! (10^6 bytes per second, as `dd` prints it). Compare with
//! `dd if=/dev/zero of=DIR/dd.bin bs=4M count=256 conv=fdatasync`.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use wgpipe_storage::{DType, Frame, SinkOptions, StreamInfo, StreamLayout, open_sink};

fn arg<T: std::str::FromStr>(args: &[String], i: usize, default: T) -> Result<T> {
    match args.get(i) {
        None => Ok(default),
        Some(s) => s.parse().ok().with_context(|| format!("argument {i} ({s:?}) is not a number")),
    }
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.first().map(PathBuf::from) else {
        bail!("usage: sink_throughput DIR [FRAMES] [ROWS] [COLS] [SINKS]");
    };
    let frames: u64 = arg(&args, 1, 256)?;
    let rows: usize = arg(&args, 2, 1024)?;
    let cols: usize = arg(&args, 3, 1024)?;
    let sinks = args.get(4).map_or("raw,hdf5", String::as_str).to_owned();
    let layout = StreamLayout::new(vec!["u".into()], rows, cols, DType::F32)
        .with_stream(StreamInfo::new("run0").with_expected_frames(frames));
    // Non-trivial data so nothing can shortcut zeros; one buffer reused like the pipeline's pool.
    let data: Vec<u8> = (0..rows * cols).flat_map(|i| (i as f32 * 0.25).to_le_bytes()).collect();
    let total = frames as f64 * layout.frame_bytes() as f64;
    println!(
        "{frames} frames of {rows}x{cols} f32 ({:.1} MiB each) into {}",
        layout.frame_bytes() as f64 / 1048576.0,
        dir.display()
    );
    for kind in sinks.split(',') {
        let path = dir.join(if kind == "hdf5" { "bench.h5" } else { "bench-raw" });
        let options = SinkOptions::new(&path).with_overwrite(true).with_fsync(true);
        let mut sink = open_sink(kind, &options).with_context(|| format!("cannot open sink {kind}"))?;
        let mut frame = Frame::new(&layout, 0, 0, 0, data.clone());
        let start = Instant::now();
        sink.begin(&layout).with_context(|| format!("{kind}: begin"))?;
        for i in 0..frames {
            frame.index = i;
            frame.step = i;
            sink.write(&frame).with_context(|| format!("{kind}: frame {i}"))?;
        }
        let summary = sink.finish().with_context(|| format!("{kind}: finish"))?;
        let secs = start.elapsed().as_secs_f64();
        println!(
            "{kind:>5}: {:.0} MB/s ({:.2} s for {:.0} MB, checksum {:016x})",
            total / secs / 1e6,
            secs,
            total / 1e6,
            summary.checksum
        );
    }
    Ok(())
}
