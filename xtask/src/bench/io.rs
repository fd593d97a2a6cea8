//! `bench overlap raw|hdf5|zarr`: the non-blocking efficiency ratio of Buettner et al. (2009),
//! async wall / sync wall, at the balance point where computing a frame takes as long as
//! writing it (theory 0.50; they published 0.53 best, 0.67 average), next to the prediction
//! of Ravi et al., t_async ≈ max(t_comp, t_io) + overhead, from t_comp and t_io measured
//! alone.
//!
//! Honest measurement, as the paper asks: every write counts until the data is on the device
//! (`fsync` in the sink's `finish`, inside the wall time), and the page cache is brought to the
//! same state before every timed run (`sync`, then `drop_caches` when allowed).

use std::cell::Cell;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::{Value, json};
use wgpipe::storage::Compression;
use wgpipe::{IoMode, RunReport};

use super::machine::settle_page_cache;
use wgpipe::compute::OutputDType;

use super::cpu_time::Timed;
use super::measure::{
    Workload, capture_frames, compute_only_timed, disk_bytes, durable_sink, output_path, pipeline_as, remove_output,
    write_only_timed_as,
};
use super::stats::Summary;

/// Steps per frame of the two compute-only calibration runs (a line through two points
/// separates the per-step cost from the per-frame readback cost).
const CALIBRATION_STEPS: [u32; 2] = [2, 10];
/// Largest steps_per_frame the calibration may pick (tiny grids on a slow disk).
const MAX_STEPS: u32 = 4096;

/// Runs against one sink kind in one output directory, each on fresh files in a settled
/// page cache, removing what they wrote.
pub struct IoBench<'a> {
    pub w: &'a Workload,
    pub kind: &'a str,
    pub dir: PathBuf,
    /// The sink's compression; changed between runs by `bench compression`.
    pub compression: Cell<Compression>,
    /// Threads compressing each frame (HDF5 with deflate); changed between runs by
    /// `bench compression-threads`.
    pub threads: Cell<usize>,
    /// Frames of a real run, for the write-only runs.
    pub data: Vec<Vec<u8>>,
    runs: Cell<usize>,
    /// How the page cache was settled (the last attempt), for the report.
    pub cache_note: Cell<Option<String>>,
}

impl<'a> IoBench<'a> {
    pub fn new(w: &'a Workload, kind: &'a str, dir: &Path, compression: Compression, threads: usize) -> Result<Self> {
        let data = capture_frames(w, 1)?;
        let dir = dir.to_path_buf();
        let threads = Cell::new(threads);
        let compression = Cell::new(compression);
        Ok(IoBench { w, kind, dir, compression, threads, data, runs: Cell::new(0), cache_note: Cell::new(None) })
    }

    fn next_path(&self) -> PathBuf {
        let n = self.runs.get();
        self.runs.set(n + 1);
        output_path(&self.dir, self.kind, n)
    }

    fn settle(&self) {
        self.cache_note.set(Some(settle_page_cache()));
    }

    /// What the page cache handling was.
    pub fn cache_note(&self) -> String {
        let note = self.cache_note.take();
        self.cache_note.set(note.clone());
        note.unwrap_or_else(|| "no timed run yet".to_owned())
    }

    /// One pipeline run into a fresh, durable output.
    pub fn pipeline(&self, w: &Workload, spf: u32, mode: IoMode, io_buffer: usize, trace: bool) -> Result<RunReport> {
        self.pipeline_as(w, spf, mode, io_buffer, trace, OutputDType::F32)
    }

    /// [`IoBench::pipeline`] storing the fields as `dtype`.
    pub fn pipeline_as(
        &self,
        w: &Workload,
        spf: u32,
        mode: IoMode,
        io_buffer: usize,
        trace: bool,
        dtype: OutputDType,
    ) -> Result<RunReport> {
        let path = self.next_path();
        let sink = durable_sink(self.kind, &path, self.compression.get(), self.threads.get())?;
        self.settle();
        let report = pipeline_as(w, spf, mode, io_buffer, sink, trace, dtype);
        remove_output(&path)?;
        report
    }

    /// t_io: the sink alone, fsync included.
    pub fn write_only(&self) -> Result<f64> {
        self.write_only_of(&self.data, OutputDType::F32)
    }

    /// The sink alone writing `data`, frames whose fields are `dtype`, fsync included.
    pub fn write_only_of(&self, data: &[Vec<u8>], dtype: OutputDType) -> Result<f64> {
        self.write_only_timed_of(data, dtype).map(|t| t.wall)
    }

    /// [`IoBench::write_only_of`] with the CPU time the process used writing.
    fn write_only_timed_of(&self, data: &[Vec<u8>], dtype: OutputDType) -> Result<Timed> {
        let path = self.next_path();
        let sink = durable_sink(self.kind, &path, self.compression.get(), self.threads.get())?;
        self.settle();
        let t = write_only_timed_as(self.w, data, sink, dtype);
        remove_output(&path)?;
        t
    }

    /// The sink alone writing the captured frames, fsync included: seconds, bytes on disk,
    /// and the largest absolute difference between a value read back and the value written
    /// (0 for lossless compression).
    pub fn write_only_measured(&self) -> Result<(f64, u64, f64)> {
        let path = self.next_path();
        let sink = durable_sink(self.kind, &path, self.compression.get(), self.threads.get())?;
        self.settle();
        let seconds = write_only_timed_as(self.w, &self.data, sink, OutputDType::F32)?.wall;
        let bytes = disk_bytes(&path)?;
        let error = largest_error(&path, &self.data)?;
        remove_output(&path)?;
        Ok((seconds, bytes, error))
    }

    /// t_comp: the compute-only loop (same page-cache treatment, for symmetry).
    pub fn compute_only(&self, w: &Workload, spf: u32) -> Result<f64> {
        self.compute_only_timed(w, spf).map(|t| t.wall)
    }

    /// [`IoBench::compute_only`] with the CPU time the process used computing.
    fn compute_only_timed(&self, w: &Workload, spf: u32) -> Result<Timed> {
        self.settle();
        compute_only_timed(w, spf)
    }
}

/// Where compute time per frame equals write time per frame.
#[derive(Debug, Clone)]
pub struct Calibration {
    /// Write-only seconds per frame (fsync share included).
    pub write_per_frame: f64,
    /// Compute seconds per kernel step.
    pub step_seconds: f64,
    /// Compute seconds per frame that do not depend on the steps (readback, submission).
    pub frame_seconds: f64,
    /// The balanced steps_per_frame (or the user's).
    pub spf: u32,
    /// Whether the user gave steps_per_frame instead.
    pub from_user: bool,
}

impl Calibration {
    /// steps_per_frame that makes compute per frame ≈ `ratio` × write per frame.
    pub fn steps_for(&self, ratio: f64) -> u32 {
        let steps = (ratio * self.write_per_frame - self.frame_seconds) / self.step_seconds;
        steps.round().clamp(1.0, f64::from(MAX_STEPS)) as u32
    }

    /// Whether one step per frame or more can bring compute per frame down to `ratio` × write
    /// per frame; on a slow device (lavapipe) even one step can out-last a frame's write.
    pub fn reachable(&self, ratio: f64) -> bool {
        (ratio * self.write_per_frame - self.frame_seconds) / self.step_seconds >= 0.5
    }

    /// Predicted compute seconds per frame at `spf`.
    pub fn compute_per_frame(&self, spf: u32) -> f64 {
        self.frame_seconds + self.step_seconds * f64::from(spf)
    }

    pub fn json(&self) -> Value {
        json!({
            "write_seconds_per_frame": self.write_per_frame,
            "compute_seconds_per_step": self.step_seconds,
            "compute_seconds_per_frame_fixed": self.frame_seconds,
            "steps_per_frame": self.spf,
            "steps_per_frame_from_user": self.from_user,
            "balance_reachable": self.reachable(1.0),
            "compute_to_io_at_steps_per_frame": self.compute_per_frame(self.spf) / self.write_per_frame,
        })
    }
}

/// Measures write time per frame (write-only run of the sink) and compute time per step
/// (two compute-only runs), and picks the balanced steps_per_frame.
pub fn calibrate(b: &IoBench<'_>, user_spf: Option<u32>) -> Result<Calibration> {
    let frames = b.w.frames as f64;
    // Warm-up: shader compilation and first-touch costs stay out of the fit.
    b.compute_only(b.w, 1)?;
    let writes = [b.write_only()?, b.write_only()?, b.write_only()?];
    let write_per_frame = Summary::of(&writes).median / frames;
    let [s1, s2] = CALIBRATION_STEPS;
    let t1 = Summary::of(&[b.compute_only(b.w, s1)?, b.compute_only(b.w, s1)?]).median / frames;
    let t2 = Summary::of(&[b.compute_only(b.w, s2)?, b.compute_only(b.w, s2)?]).median / frames;
    let step_seconds = ((t2 - t1) / f64::from(s2 - s1)).max(t2 / f64::from(s2) * 0.05).max(1e-9);
    let frame_seconds = (t1 - step_seconds * f64::from(s1)).max(0.0);
    let mut c = Calibration { write_per_frame, step_seconds, frame_seconds, spf: 1, from_user: user_spf.is_some() };
    c.spf = user_spf.unwrap_or_else(|| c.steps_for(1.0));
    Ok(c)
}

/// What one efficiency measurement found.
pub struct EfficiencyResult {
    pub json: Value,
    pub table: String,
    pub efficiency_ratio: f64,
}

/// The runs of the efficiency measurement, over the rotations.
#[derive(Default)]
struct EfficiencyRuns {
    /// Wall seconds of the async runs, of the sync runs, of compute alone, of writing alone.
    asy: Vec<f64>,
    syn: Vec<f64>,
    comp: Vec<f64>,
    io: Vec<f64>,
    /// CPU seconds of the compute-only and of the write-only runs.
    comp_cpu: Vec<f64>,
    io_cpu: Vec<f64>,
    /// The async runs' seconds the devices spent blocked on a full channel, and the writer
    /// waiting for frames.
    blocked: Vec<f64>,
    waited: Vec<f64>,
    /// The async runs' compute time as their reports give it, and where it comes from.
    computed: Vec<f64>,
    source: &'static str,
}

impl EfficiencyRuns {
    /// Run `which` of a rotation (async, sync, compute-only, write-only) at `spf` steps per
    /// frame, its figures added.
    fn run(&mut self, b: &IoBench<'_>, which: usize, spf: u32, io_buffer: usize) -> Result<()> {
        match which {
            0 => {
                let r = b.pipeline(b.w, spf, IoMode::Async, io_buffer, false)?;
                self.asy.push(r.wall_seconds);
                self.blocked.push(r.devices.iter().map(|d| d.blocked_seconds).sum::<f64>());
                self.waited.push(r.writer.wait_seconds);
                self.computed.push(r.compute_seconds());
                self.source = r.compute_source().name();
            }
            1 => self.syn.push(b.pipeline(b.w, spf, IoMode::Sync, io_buffer, false)?.wall_seconds),
            2 => {
                let t = b.compute_only_timed(b.w, spf)?;
                self.comp.push(t.wall);
                self.comp_cpu.push(t.cpu);
            }
            _ => {
                let t = b.write_only_timed_of(&b.data, OutputDType::F32)?;
                self.io.push(t.wall);
                self.io_cpu.push(t.cpu);
            }
        }
        Ok(())
    }
}

/// What the runs say beside their medians: Ravi et al.'s prediction and, on a CPU adapter,
/// the floor the cores set.
struct Predictions {
    /// max(t_comp, t_io): the async run without overhead.
    asy: f64,
    /// t_comp + t_io: the sync run.
    syn: f64,
    /// The measured async run's median over `asy`.
    overhead: f64,
    cores: usize,
    /// Where the adapter computes on the CPU, compute and writing share the cores: an async
    /// run takes at least their CPU time spread over them. (Elsewhere the compute-only CPU
    /// time is the host's waiting, which a driver may spend spinning: no floor.)
    floor: Option<f64>,
    floor_ratio: Option<f64>,
}

impl Predictions {
    fn of(b: &IoBench<'_>, r: &EfficiencyRuns) -> Predictions {
        let (tc, tio) = (Summary::of(&r.comp).median, Summary::of(&r.io).median);
        let asy = tc.max(tio);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let cpu = Summary::of(&r.comp_cpu).median + Summary::of(&r.io_cpu).median;
        let cpu_adapter = b.w.gpus.iter().all(|g| g.adapter().is_cpu());
        let floor = cpu_adapter.then(|| asy.max(cpu / cores as f64));
        let floor_ratio = floor.map(|f| f / Summary::of(&r.syn).median);
        Predictions { asy, syn: tc + tio, overhead: Summary::of(&r.asy).median - asy, cores, floor, floor_ratio }
    }
}

/// Alternates async, sync, compute-only and write-only runs `reps` times (rotating the
/// order), then compares async/sync with the theory and with Ravi et al.'s prediction.
pub fn efficiency(b: &IoBench<'_>, cal: &Calibration, io_buffer: usize, reps: usize) -> Result<EfficiencyResult> {
    let mut r = EfficiencyRuns::default();
    for rep in 0..reps {
        for k in 0..4 {
            r.run(b, (rep + k) % 4, cal.spf, io_buffer)?;
        }
    }
    let ratios: Vec<f64> = r.asy.iter().zip(&r.syn).map(|(a, s)| a / s).collect();
    let p = Predictions::of(b, &r);
    let json = efficiency_json(&r, &ratios, &p, cal.spf, io_buffer, reps);
    let table = efficiency_table(b, &r, &ratios, &p, (cal.spf, io_buffer, reps));
    Ok(EfficiencyResult { json, table, efficiency_ratio: Summary::of(&ratios).median })
}

/// The efficiency measurement's JSON.
fn efficiency_json(
    r: &EfficiencyRuns,
    ratios: &[f64],
    p: &Predictions,
    spf: u32,
    io_buffer: usize,
    reps: usize,
) -> Value {
    json!({
        "efficiency_ratio": Summary::json(ratios),
        "async_seconds": Summary::json(&r.asy),
        "sync_seconds": Summary::json(&r.syn),
        "t_comp_seconds": Summary::json(&r.comp),
        "t_io_seconds": Summary::json(&r.io),
        "compute_to_io_ratio": Summary::of(&r.comp).median / Summary::of(&r.io).median,
        "ravi_predicted_async_seconds": p.asy,
        "ravi_predicted_sync_seconds": p.syn,
        "ravi_predicted_ratio": p.asy / p.syn,
        "async_overhead_seconds": p.overhead,
        "t_comp_cpu_seconds": Summary::json(&r.comp_cpu),
        "t_io_cpu_seconds": Summary::json(&r.io_cpu),
        "cores": p.cores,
        "cores_floor_async_seconds": p.floor,
        "cores_floor_ratio": p.floor_ratio,
        "device_blocked_seconds": Summary::json(&r.blocked),
        "writer_wait_seconds": Summary::json(&r.waited),
        "async_compute_seconds": Summary::json(&r.computed),
        "compute_source": r.source,
        "theory_at_balance": 0.5,
        "published_best": 0.53,
        "published_average": 0.67,
        "steps_per_frame": spf,
        "io_buffer": io_buffer,
        "reps": reps,
    })
}

/// The efficiency measurement's table; `settings` are steps per frame, io_buffer and reps.
fn efficiency_table(
    b: &IoBench<'_>,
    r: &EfficiencyRuns,
    ratios: &[f64],
    p: &Predictions,
    settings: (u32, usize, usize),
) -> String {
    let (spf, io_buffer, reps) = settings;
    let (asy, syn, tc, tio) = (Summary::of(&r.asy), Summary::of(&r.syn), Summary::of(&r.comp), Summary::of(&r.io));
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{} sink: async vs sync at {spf} steps/frame, io_buffer {io_buffer}, {reps} rotations, median [min–max]",
        b.kind
    );
    let _ = writeln!(t, "  async wall          {} s", asy.text(4));
    let _ = writeln!(t, "  sync wall           {} s", syn.text(4));
    let _ = writeln!(t, "  t_comp (alone)      {} s", tc.text(4));
    let _ = writeln!(t, "  t_io (alone, fsync) {} s   compute/I-O = {:.2}", tio.text(4), tc.median / tio.median);
    let _ = writeln!(
        t,
        "  efficiency_ratio = async / sync = {}   theory at balance 0.50; Buettner 2009: 0.53 best, 0.67 average",
        Summary::of(ratios).text(3)
    );
    let _ = writeln!(
        t,
        "  Ravi et al.: t_async ≈ max(t_comp, t_io) + overhead = {:.4} s + overhead -> ratio {:.3} \
         without overhead; measured overhead {:.4} s",
        p.asy,
        p.asy / p.syn,
        p.overhead
    );
    if let (Some(floor), Some(ratio)) = (p.floor, p.floor_ratio) {
        let _ = writeln!(
            t,
            "  cores' floor (a CPU adapter): async >= max(t_comp, t_io, (CPU of compute alone {:.4} s + of writing \
             alone {:.4} s) / {} cores) = {floor:.4} s, {ratio:.3} of the median sync; async took {:.3}x that",
            Summary::of(&r.comp_cpu).median,
            Summary::of(&r.io_cpu).median,
            p.cores,
            asy.median / floor
        );
    }
    let _ = writeln!(
        t,
        "  device blocked on send {:.4} s, writer waiting for frames {:.4} s (medians)",
        Summary::of(&r.blocked).median,
        Summary::of(&r.waited).median
    );
    t
}

/// The largest |read − written| over every value of every frame of the output at `path`,
/// whose stream `s` frame `i` was written from `data[i % data.len()]` (f32 fields in order).
fn largest_error(path: &Path, data: &[Vec<u8>]) -> Result<f64> {
    let out = wgpipe::storage::open_output(path)?;
    let mut worst = 0.0f64;
    for s in 0..out.streams().len() {
        for i in 0..out.streams()[s].frames {
            let Some(written) = data.get(i as usize % data.len().max(1)) else { continue };
            let mut at = 0;
            for f in 0..out.fields().len() {
                let read = out.read_f32(s, f, i)?;
                for (k, r) in read.iter().enumerate() {
                    let b = written.get(at + 4 * k..at + 4 * k + 4).unwrap_or_default();
                    let v = b.try_into().map(f32::from_le_bytes).unwrap_or(f32::NAN);
                    // NaN (a value lost, or bytes missing) counts as an unbounded error.
                    let error = f64::from((r - v).abs());
                    worst = if error.is_nan() { f64::INFINITY } else { worst.max(error) };
                }
                at += 4 * read.len();
            }
        }
    }
    Ok(worst)
}
