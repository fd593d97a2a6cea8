//! `cargo xtask soak`: does a long run leak? Streams `--frames` frames (default 10,000)
//! through each sink at a small grid, the whole pipeline included (GPU readback, buffer pool,
//! channel, writer), while a thread samples resident memory and open descriptors; then checks
//! that neither grew after the warm-up.
//!
//! Memory is compared as the median of the samples of the first tenth of the run after the
//! warm-up against the median of the last tenth, so one sample caught mid-allocation does not
//! decide. Descriptors must not change at all: during the run, after the warm-up, and from
//! before the run to after it (every file closed).

pub(crate) mod args;
mod sample;

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use wgpipe::Pipeline;
use wgpipe::compute::gray_scott::GrayScottParams;
use wgpipe::compute::{DeviceSelector, GpuDevice, open_devices};
use wgpipe::storage::{Compression, NullSink, Sink, SinkOptions, open_sink};

use crate::bench::machine::{filesystem_type, load_average};
use crate::bench::output::ScratchDir;
use sample::{Sample, Sampler};

/// Resident memory any sink may gain from the first to the last tenth of the run after the
/// warm-up: allocator noise. A frame buffer leaked per frame (4 KiB at 32×32) would add
/// 36 MiB over 9,000 frames, and even 128 bytes per frame 1.1 MiB.
const RSS_TOLERANCE_KIB: u64 = 1024;
/// What the HDF5 sinks may gain on top, per frame: the HDF5 library (1.10, this file format)
/// keeps the nodes of each dataset's chunk index (a v1 B-tree, one chunk per frame) in
/// memory, about 380 bytes per chunk, until its caches fill and the growth stops (near
/// 15 MiB, after some 40,000 chunks, with plain hdf5-metno calls and no wgpipe code: the
/// guide's "Reliability" page). 512 bytes per frame covers that and still fails a sink that
/// leaks a frame's worth.
const HDF5_INDEX_BYTES_PER_FRAME: u64 = 512;

/// Resident memory the sink of `kind` may gain over `frames` frames after the warm-up, KiB.
fn rss_allowance_kib(kind: &str, frames: u64) -> u64 {
    let index = if kind == "hdf5" { frames * HDF5_INDEX_BYTES_PER_FRAME / 1024 } else { 0 };
    RSS_TOLERANCE_KIB + index
}

/// The sinks soaked, by name: kind and compression.
const SINKS: [(&str, &str, Compression); 4] = [
    ("null", "null", Compression::None),
    ("raw", "raw", Compression::None),
    ("hdf5", "hdf5", Compression::None),
    ("hdf5+deflate", "hdf5", Compression::Deflate(4)),
];

/// Entry point of `cargo xtask soak`.
pub fn main(args: args::Args) -> Result<ExitCode> {
    let selector = DeviceSelector::parse(&args.devices).context("reading --devices")?;
    let gpus = open_devices(&selector, 1).context("opening the device to soak on")?;
    let scratch = ScratchDir::under(args.out.as_deref(), "soak")?;
    announce(&args, &gpus, scratch.path());
    // One short run first, so that what the first pipeline run sets up once (shader
    // compilation, the driver's threads) is not counted against the first sink.
    run(&gpus, &args, 200, Box::new(NullSink::new()))?;

    let mut table = table_header();
    let mut failures = Vec::new();
    for (name, kind, compression) in SINKS {
        let problems = soak_sink(&gpus, &args, scratch.path(), (name, kind, compression), &mut table)?;
        failures.extend(problems.into_iter().map(|p| format!("{name}: {p}")));
    }
    drop(scratch);
    print!("{table}");
    println!(
        "growth: median RSS of the last tenth of the run minus that of the tenth after the warm-up; allowed: \
         {RSS_TOLERANCE_KIB} KiB, plus {HDF5_INDEX_BYTES_PER_FRAME} bytes per frame for hdf5 (HDF5's chunk index \
         in memory); descriptors must not change"
    );
    if failures.is_empty() {
        println!("soak passed: after the warm-up no sink grew in memory beyond its allowance, nor in descriptors");
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("soak FAILED:\n  {}", failures.join("\n  "));
        Ok(ExitCode::FAILURE)
    }
}

/// The soak's first line: what runs where, and the machine's state.
fn announce(args: &args::Args, gpus: &[GpuDevice], dir: &Path) {
    println!(
        "soak: {} frames of {}x{} per sink on {}, warm-up {} frames, a sample every {} ms, \
         writing to {} ({}), load average {}",
        args.frames,
        args.rows,
        args.cols,
        gpus.iter().map(GpuDevice::label).collect::<Vec<_>>().join(", "),
        args.frames / 10,
        sample::PERIOD.as_millis(),
        dir.display(),
        filesystem_type(dir),
        load_average().map_or("unknown".to_owned(), |l| format!("{l:.2}"))
    );
}

/// The header line of the soak's table.
fn table_header() -> String {
    let mut table = String::new();
    let _ = writeln!(
        table,
        "{:<13} {:>7} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10}  {:>24}  verdict",
        "sink",
        "wall s",
        "frames/s",
        "RSS before",
        "RSS early",
        "RSS late",
        "growth",
        "allowed",
        "fds before/early/late/after"
    );
    table
}

/// Soaks one sink of [`SINKS`] (name, kind, compression) in `dir`, adding its row to `table`:
/// what grew, in words (empty when nothing did).
fn soak_sink(
    gpus: &[GpuDevice],
    args: &args::Args,
    dir: &Path,
    (name, kind, compression): (&str, &str, Compression),
    table: &mut String,
) -> Result<Vec<String>> {
    let sink: Box<dyn Sink> = if kind == "null" {
        Box::new(NullSink::new())
    } else {
        let path = dir.join(format!("soak-{name}"));
        let options = SinkOptions::new(&path).with_compression(compression).with_overwrite(true);
        open_sink(kind, &options).with_context(|| format!("opening the {name} sink at {}", path.display()))?
    };
    let warmup = args.frames / 10;
    let before = sample::now(0)?;
    let at = Instant::now();
    let samples = run(gpus, args, args.frames, sink)?;
    let wall = at.elapsed().as_secs_f64();
    let after = sample::now(args.frames)?;
    let allowed = rss_allowance_kib(kind, args.frames - warmup).saturating_add(args.rss_slack_kib);
    let v = Verdict::of(&samples, before, after, warmup, args.frames)
        .with_context(|| format!("{name}: no sample after the warm-up (the run was too short): use more --frames"))?;
    let problems = v.problems(allowed);
    let _ = writeln!(
        table,
        "{:<13} {:>7.2} {:>9.0} {:>6} KiB {:>6} KiB {:>6} KiB {:>6} KiB {:>6} KiB  {:>24}  {}",
        name,
        wall,
        args.frames as f64 / wall,
        before.rss_kib,
        v.early_rss,
        v.late_rss,
        v.late_rss as i64 - v.early_rss as i64,
        allowed,
        format!("{}/{}/{}/{}", before.fds, v.early_fds, v.late_fds, after.fds),
        if problems.is_empty() { "ok".to_owned() } else { problems.join("; ") }
    );
    Ok(problems)
}

/// One Gray-Scott run of `frames` frames into `sink` (one step per frame: the soak is about
/// the frames, not the kernel), sampled throughout.
fn run(gpus: &[GpuDevice], args: &args::Args, frames: u64, sink: Box<dyn Sink>) -> Result<Vec<Sample>> {
    let pipeline = Pipeline::builder()
        .gpus(gpus.to_vec())
        .grid(args.rows, args.cols)
        .frames(frames)
        .steps_per_frame(1)
        .gray_scott(GrayScottParams::default(), 1, 0.02)
        .sink(sink)
        .build()
        .context("setting up the soak run")?;
    let sampler = Sampler::start(pipeline.progress())?;
    let report = pipeline.run();
    let samples = sampler.finish()?;
    let report = report.context("the soak run failed")?;
    anyhow::ensure!(
        report.written_frames() == frames,
        "the soak run wrote {} of {frames} frames",
        report.written_frames()
    );
    Ok(samples)
}

/// What the samples of one sink show.
#[derive(Debug, Clone, PartialEq)]
struct Verdict {
    early_rss: u64,
    late_rss: u64,
    early_fds: usize,
    /// The fewest descriptors open in the last tenth: a leak keeps what it opened, while a
    /// sink's short-lived descriptors (a metadata file replaced atomically) come and go and
    /// a sample may catch one, which is no growth.
    late_fds: usize,
    before_fds: usize,
    after_fds: usize,
}

impl Verdict {
    /// Early: the samples of the tenth of the run right after `warmup` frames (or the first
    /// sample after it); late: those of the last tenth (or the last sample). `None` when no
    /// sample was taken after the warm-up.
    fn of(samples: &[Sample], before: Sample, after: Sample, warmup: u64, frames: u64) -> Option<Verdict> {
        let tenth = (frames / 10).max(1);
        let window = |lo: u64, hi: u64| samples.iter().filter(move |s| s.frames >= lo && s.frames < hi);
        let or_else =
            |v: Vec<Sample>, one: Option<&Sample>| if v.is_empty() { one.copied().into_iter().collect() } else { v };
        let after_warmup: Vec<Sample> = window(warmup, u64::MAX).copied().collect();
        let early = or_else(window(warmup, warmup + tenth).copied().collect(), after_warmup.first());
        let late = or_else(window(frames - tenth, u64::MAX).copied().collect(), after_warmup.last());
        let median = |v: &[Sample]| -> Option<u64> {
            let mut r: Vec<u64> = v.iter().map(|s| s.rss_kib).collect();
            r.sort_unstable();
            r.get(r.len() / 2).copied()
        };
        Some(Verdict {
            early_rss: median(&early)?,
            late_rss: median(&late)?,
            early_fds: early.first()?.fds,
            late_fds: late.iter().map(|s| s.fds).min()?,
            before_fds: before.fds,
            after_fds: after.fds,
        })
    }

    /// What grew, in words, with `allowed_kib` of resident memory allowed; empty when
    /// nothing grew.
    fn problems(&self, allowed_kib: u64) -> Vec<String> {
        let mut p = Vec::new();
        let growth = self.late_rss.saturating_sub(self.early_rss);
        if growth > allowed_kib {
            p.push(format!(
                "resident memory grew {growth} KiB after the warm-up ({} -> {} KiB), more than the {allowed_kib} KiB allowed",
                self.early_rss, self.late_rss
            ));
        }
        if self.late_fds > self.early_fds {
            p.push(format!("open descriptors grew during the run, from {} to {}", self.early_fds, self.late_fds));
        }
        if self.after_fds != self.before_fds {
            p.push(format!(
                "{} descriptors open after the run, {} before: the run left {} open",
                self.after_fds,
                self.before_fds,
                self.after_fds as i64 - self.before_fds as i64
            ));
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(frames: u64, rss_kib: u64, fds: usize) -> Sample {
        Sample { frames, rss_kib, fds }
    }

    #[test]
    fn flags_growth_in_memory_and_descriptors_only() {
        let flat: Vec<Sample> = (0..100).map(|i| s(i * 10, 50_000 + i % 3, 12)).collect();
        let v = Verdict::of(&flat, s(0, 40_000, 12), s(1000, 50_000, 12), 100, 1000).unwrap_or_else(|| unreachable!());
        assert!(v.problems(1024).is_empty(), "{:?}", v.problems(1024));

        let leaking: Vec<Sample> = (0..100).map(|i| s(i * 10, 50_000 + i * 40, 12 + (i as usize) / 50)).collect();
        let v =
            Verdict::of(&leaking, s(0, 40_000, 12), s(1000, 54_000, 13), 100, 1000).unwrap_or_else(|| unreachable!());
        let p = v.problems(1024).join("\n");
        assert!(p.contains("resident memory grew") && p.contains("descriptors grew"), "{p}");
        assert!(p.contains("left 1 open"), "{p}");

        assert!(v.problems(8192).iter().all(|p| !p.contains("memory")), "within a larger allowance");
        assert_eq!(Verdict::of(&flat[..5], s(0, 1, 1), s(1, 1, 1), 100, 1000), None, "no sample after the warm-up");
        let sparse = [s(0, 10, 3), s(150, 20, 3), s(500, 30, 4)];
        let v = Verdict::of(&sparse, s(0, 1, 3), s(1000, 1, 3), 100, 1000).unwrap_or_else(|| unreachable!());
        assert_eq!((v.early_rss, v.late_rss, v.early_fds, v.late_fds), (20, 30, 3, 4), "nearest samples stand in");
        // A descriptor open at one sample only, mid-run, is no leak.
        let blip: Vec<Sample> = (0..100).map(|i| s(i * 10, 50_000, if i == 40 { 13 } else { 12 })).collect();
        let v = Verdict::of(&blip, s(0, 40_000, 12), s(1000, 50_000, 12), 100, 1000).unwrap_or_else(|| unreachable!());
        assert!(v.problems(1024).is_empty(), "{:?}", v.problems(1024));
        assert_eq!(rss_allowance_kib("raw", 9000), RSS_TOLERANCE_KIB);
        assert_eq!(rss_allowance_kib("hdf5", 9000), RSS_TOLERANCE_KIB + 4500);
    }
}
