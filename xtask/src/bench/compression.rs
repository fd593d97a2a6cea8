//! `bench compression hdf5|zarr A,B`: the HDF5 (or Zarr) sink storing the same captured frames
//! with compression A and with B, side by side in one process: the writer's throughput
//! (write-only runs, fsync in `finish` included, MB/s of uncompressed frames), the bytes on
//! disk, and the largest absolute error of a value read back (0 when lossless: a lossy
//! codec's bound is checked against it). Alternating A and B (A first in even repetitions,
//! B first in odd ones), so that drift on a shared machine hits both alike.

use std::fmt::Write as _;

use anyhow::{Result, bail};
use serde_json::{Value, json};
use wgpipe::storage::Compression;

use super::io::IoBench;
use super::stats::Summary;

/// Steps between the captured frames unless `--steps-per-frame` says otherwise.
pub const STEPS_PER_FRAME: u32 = 200;

/// What the comparison found.
pub struct CompressionResult {
    pub json: Value,
    pub table: String,
}

/// One compression's figures over the repetitions.
#[derive(Default)]
struct Figures {
    mb_per_s: Vec<f64>,
    bytes: Vec<f64>,
    error: f64,
}

/// Runs the comparison of `pair.0` against `pair.1`.
pub fn run(b: &IoBench<'_>, pair: (Compression, Compression), reps: usize) -> Result<CompressionResult> {
    let (ca, cb) = pair;
    let raw = (b.w.frame_bytes() as u64 * b.w.frames * b.w.gpus.len() as u64) as f64;
    let order = |rep: usize| if rep.is_multiple_of(2) { [ca, cb] } else { [cb, ca] };
    let (mut fa, mut fb) = (Figures::default(), Figures::default());
    for rep in 0..reps {
        for c in order(rep) {
            b.compression.set(c);
            let (seconds, bytes, error) = b.write_only_measured()?;
            let f = if c == ca { &mut fa } else { &mut fb };
            f.mb_per_s.push(raw / 1e6 / seconds);
            f.bytes.push(bytes as f64);
            f.error = f.error.max(error);
        }
    }
    for (c, f) in [(ca, &fa), (cb, &fb)] {
        let bound = match c {
            Compression::Zfp(t) => t.get(),
            _ => 0.0,
        };
        if f.error > bound {
            bail!("{c}: a value read back differs by {} from the value written (bound {bound})", f.error);
        }
    }
    let speedup: Vec<f64> = fb.mb_per_s.iter().zip(&fa.mb_per_s).map(|(b, a)| b / a).collect();
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{} {ca} vs {cb}: {} frames of {:.2} MB x {} stream(s), median [min–max] of {reps} alternating reps",
        b.kind,
        b.w.frames,
        b.w.frame_bytes() as f64 / 1e6,
        b.w.gpus.len()
    );
    for (c, f) in [(ca, &fa), (cb, &fb)] {
        let ratio: Vec<f64> = f.bytes.iter().map(|n| raw / n).collect();
        let _ = writeln!(
            t,
            "  {c:<24} writer {} MB/s, on disk {} MB (ratio {}), largest error {:.3e}",
            Summary::of(&f.mb_per_s).text(1),
            Summary::of(&f.bytes.iter().map(|n| n / 1e6).collect::<Vec<_>>()).text(2),
            Summary::of(&ratio).text(2),
            f.error
        );
    }
    let _ = writeln!(t, "  writer throughput {cb} / {ca}: {}", Summary::of(&speedup).text(2));
    let entry = |f: &Figures| {
        json!({
            "writer_mb_per_s": Summary::json(&f.mb_per_s),
            "bytes_on_disk": Summary::json(&f.bytes),
            "largest_abs_error": f.error,
        })
    };
    let json = json!({
        "sink": b.kind,
        "compressions": [ca.to_string(), cb.to_string()],
        "reps": reps,
        "uncompressed_bytes": raw,
        ca.to_string(): entry(&fa),
        cb.to_string(): entry(&fb),
        "writer_speedup": Summary::json(&speedup),
    });
    Ok(CompressionResult { json, table: t })
}
