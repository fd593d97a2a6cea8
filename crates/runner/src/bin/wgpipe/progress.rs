//! The progress reporter: a thread that samples `Progress::snapshot()` and draws indicatif
//! bars (one per device and a total) on a terminal, or prints a plain line every 2 s
//! otherwise (logs, CI), so the pipeline's threads never wait for the display.
//! `--progress frames` instead prints a line each time the count of written frames changes,
//! for scripts and tests that must know what is on disk. `--progress json` prints one JSON
//! object per line (counts, rates, ETA) for batch schedulers and notebooks.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clap::ValueEnum;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use wgpipe::{Progress, ProgressSnapshot};

/// How `wgpipe run` shows progress on stderr (`--progress`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum ProgressMode {
    /// Bars on a terminal, else `plain`.
    #[default]
    Auto,
    /// A line with counts and rates every 2 s.
    Plain,
    /// `written N/TOTAL frames` each time the count changes (sampled every millisecond): every
    /// frame counted there was accepted by the sink (HDF5: written and flushed to the OS).
    Frames,
    /// One JSON object per line every second, at the start and at the end ([`JsonLine`]).
    Json,
    /// Nothing until the summary.
    None,
}

/// A running reporter; [`Reporter::finish`] stops it.
pub struct Reporter {
    done: std::sync::mpsc::Sender<()>,
    thread: Option<JoinHandle<()>>,
}

/// What the reporter needs to turn counts into rates.
#[derive(Clone)]
pub struct Scale {
    /// Device labels, in device order.
    pub labels: Vec<String>,
    /// Cells × steps per frame, for cell-steps/s.
    pub cell_steps_per_frame: f64,
    /// Capacity of the device → writer channel, for the queue fill.
    pub io_buffer: usize,
    /// Stream names, in layout order.
    pub streams: Vec<String>,
}

impl Reporter {
    /// Starts reporting `progress` on stderr the way `mode` says.
    pub fn start(progress: Arc<Progress>, scale: Scale, mode: ProgressMode) -> Self {
        let (done, rx) = channel();
        let thread = std::thread::Builder::new()
            .name("wgpipe-progress".to_owned())
            .spawn(move || match mode {
                ProgressMode::Auto if std::io::stderr().is_terminal() => bars(&progress, &scale, &rx),
                ProgressMode::Auto | ProgressMode::Plain => lines(&progress, &scale, &rx),
                ProgressMode::Frames => written_frames(&progress, &scale.streams, &rx),
                ProgressMode::Json => json_lines(&progress, &scale, &rx),
                ProgressMode::None => {
                    let _ = rx.recv();
                }
            })
            .ok();
        Reporter { done, thread }
    }

    /// Stops the reporter after one last update.
    pub fn finish(mut self) {
        let _ = self.done.send(());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Rates since the previous sample.
struct Rates {
    cell_steps: f64,
    mb: f64,
}

fn rates(prev: &ProgressSnapshot, now: &ProgressSnapshot, dt: f64, scale: &Scale) -> Rates {
    let dt = dt.max(1e-9);
    Rates {
        cell_steps: (now.computed - prev.computed.min(now.computed)) as f64 * scale.cell_steps_per_frame / dt,
        mb: (now.bytes - prev.bytes.min(now.bytes)) as f64 / 1e6 / dt,
    }
}

/// Frames computed but not yet written: what waits in the channel (and in the writer).
fn queued(s: &ProgressSnapshot) -> u64 {
    s.computed.saturating_sub(s.written)
}

/// Waits up to `period` for the stop signal; true when it came (or the sender is gone).
fn stopped(rx: &Receiver<()>, period: Duration) -> bool {
    !matches!(rx.recv_timeout(period), Err(RecvTimeoutError::Timeout))
}

/// A device label cut to 24 characters, keeping both ends: the index and name start it and
/// the backend ends it, and both tell devices apart.
fn short(label: &str) -> String {
    let chars: Vec<char> = label.chars().collect();
    if chars.len() <= 24 {
        return label.to_owned();
    }
    chars[..11].iter().chain(['…'].iter()).chain(&chars[chars.len() - 12..]).collect()
}

fn bars(progress: &Progress, scale: &Scale, rx: &Receiver<()>) {
    let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(10));
    let style = ProgressStyle::with_template("{prefix:>24} [{bar:30}] {pos:>6}/{len:6} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    let snap = progress.snapshot();
    let per_device = snap.total_frames / (snap.devices.len().max(1) as u64);
    let device_bars: Vec<ProgressBar> = scale
        .labels
        .iter()
        .map(|l| {
            let b = multi.add(ProgressBar::new(per_device).with_style(style.clone()));
            b.set_prefix(short(l));
            b
        })
        .collect();
    let total = multi.add(ProgressBar::new(snap.total_frames).with_style(style));
    total.set_prefix("total written");
    let (mut prev, mut at) = (snap, Instant::now());
    loop {
        let done = stopped(rx, Duration::from_millis(250));
        let now = progress.snapshot();
        let dt = at.elapsed().as_secs_f64();
        for (b, d) in device_bars.iter().zip(&now.devices) {
            // Devices pull jobs from a shared queue: their share is known only at the end.
            b.set_length(b.length().unwrap_or(0).max(d.computed));
            b.set_position(d.computed);
            b.set_message(format!("computed, {} written", d.written));
        }
        let r = rates(&prev, &now, dt, scale);
        total.set_position(now.written);
        total.set_message(format!(
            "{:.2e} cell-steps/s  {:.1} MB/s  queue {}/{}",
            r.cell_steps,
            r.mb,
            queued(&now),
            scale.io_buffer
        ));
        if done {
            break;
        }
        (prev, at) = (now, Instant::now());
    }
    for b in device_bars.iter().chain([&total]) {
        b.abandon();
    }
}

fn lines(progress: &Progress, scale: &Scale, rx: &Receiver<()>) {
    let start = Instant::now();
    let (mut prev, mut at) = (progress.snapshot(), Instant::now());
    while !stopped(rx, Duration::from_secs(2)) {
        let now = progress.snapshot();
        let r = rates(&prev, &now, at.elapsed().as_secs_f64(), scale);
        let devices: Vec<String> = now.devices.iter().map(|d| d.computed.to_string()).collect();
        say!(
            "[{:>6.1} s] written {}/{} frames (computed per device: {}); {:.2e} cell-steps/s, {:.1} MB/s, queue {}/{}",
            start.elapsed().as_secs_f64(),
            now.written,
            now.total_frames,
            devices.join(", "),
            r.cell_steps,
            r.mb,
            queued(&now),
            scale.io_buffer
        );
        (prev, at) = (now, Instant::now());
    }
}

/// One `written N/TOTAL frames` line per change of the written count, after a line of the
/// same counts per stream (`written per stream: NAME=N NAME=N ...`), and a last pair when the
/// run ends. The counters move only after the sink's `write` returned, so a line never claims
/// a frame the output does not hold.
fn written_frames(progress: &Progress, streams: &[String], rx: &Receiver<()>) {
    let mut shown = None;
    loop {
        let done = stopped(rx, Duration::from_millis(1));
        let now = progress.snapshot();
        if shown != Some(now.written) {
            let per_stream: Vec<String> = streams.iter().zip(&now.streams).map(|(s, n)| format!("{s}={n}")).collect();
            // One write for both lines, so a reader never sees half a line from a killed run
            // (the per-stream counts may lag the total by the frames written in between).
            let line = format!(
                "written per stream: {}\nwritten {}/{} frames\n",
                per_stream.join(" "),
                now.written,
                now.total_frames
            );
            let _ = std::io::stderr().write_all(line.as_bytes());
            shown = Some(now.written);
        }
        if done {
            break;
        }
    }
}

/// One device in a [`JsonLine`].
#[derive(Debug, serde::Serialize)]
struct JsonDevice<'a> {
    /// The device label, as in the summary.
    label: &'a str,
    /// Frames computed (read back from the GPU).
    computed: u64,
    /// Frames of this device the sink accepted.
    written: u64,
}

/// One stream in a [`JsonLine`].
#[derive(Debug, serde::Serialize)]
struct JsonStream<'a> {
    /// The stream's name in the output.
    name: &'a str,
    /// Frames of it this run wrote.
    written: u64,
}

/// What `--progress json` prints per update: one object per line on stderr. Rates are over the
/// interval since the previous line; `eta_s` is from the mean write rate since the start
/// (`null` until a frame is written).
#[derive(Debug, serde::Serialize)]
struct JsonLine<'a> {
    /// Seconds since the reporter started.
    elapsed_s: f64,
    /// Frames the sink accepted, all devices.
    written: u64,
    /// Frames the run will write in all.
    expected: u64,
    /// Frames computed, all devices.
    computed: u64,
    /// Per device, in device order.
    devices: Vec<JsonDevice<'a>>,
    /// Per stream, in the output's order: frames this run wrote.
    streams: Vec<JsonStream<'a>>,
    /// Frames written per second.
    frames_per_s: f64,
    /// Megabytes (10^6) written per second.
    mb_per_s: f64,
    /// Grid cells times steps per second, all devices.
    cell_steps_per_s: f64,
    /// Seconds left at the mean write rate so far.
    eta_s: Option<f64>,
    /// Frames computed but not yet written.
    queue: u64,
    /// The device to writer channel's capacity (`io.io_buffer`).
    queue_capacity: usize,
    /// True on the last line, printed when the run ends.
    done: bool,
}

/// One [`JsonLine`] of `now`, with rates since `prev` (`dt` seconds before).
fn json_line(
    now: &ProgressSnapshot,
    prev: &ProgressSnapshot,
    dt: f64,
    elapsed: f64,
    scale: &Scale,
    done: bool,
) -> String {
    json_object(now, prev, dt, elapsed, scale, done).to_string()
}

/// [`json_line`] as a JSON object: what the monitor's `/api/progress` serves, with its rates
/// over a window of several frames (`prev` the counters when it began, `dt` seconds before)
/// and a few keys of its own added.
pub fn json_object(
    now: &ProgressSnapshot,
    prev: &ProgressSnapshot,
    dt: f64,
    elapsed: f64,
    scale: &Scale,
    done: bool,
) -> serde_json::Value {
    serde_json::to_value(json_fields(now, prev, dt, elapsed, scale, done)).unwrap_or_default()
}

fn json_fields<'a>(
    now: &ProgressSnapshot,
    prev: &ProgressSnapshot,
    dt: f64,
    elapsed: f64,
    scale: &'a Scale,
    done: bool,
) -> JsonLine<'a> {
    let r = rates(prev, now, dt, scale);
    let remaining = now.total_frames.saturating_sub(now.written) as f64;
    let mean = now.written as f64 / elapsed.max(1e-9);
    JsonLine {
        elapsed_s: elapsed,
        written: now.written,
        expected: now.total_frames,
        computed: now.computed,
        devices: now
            .devices
            .iter()
            .zip(&scale.labels)
            .map(|(d, label)| JsonDevice { label, computed: d.computed, written: d.written })
            .collect(),
        streams: now.streams.iter().zip(&scale.streams).map(|(&written, name)| JsonStream { name, written }).collect(),
        frames_per_s: (now.written - prev.written.min(now.written)) as f64 / dt.max(1e-9),
        mb_per_s: r.mb,
        cell_steps_per_s: r.cell_steps,
        eta_s: (now.written > 0).then(|| remaining / mean),
        queue: queued(now),
        queue_capacity: scale.io_buffer,
        done,
    }
}

/// A JSON line at the start, every second, and at the end. Each line goes out in one write, so
/// a reader never sees half a line from a killed run.
fn json_lines(progress: &Progress, scale: &Scale, rx: &Receiver<()>) {
    let start = Instant::now();
    let (mut prev, mut at) = (progress.snapshot(), Instant::now());
    let first = json_line(&prev, &prev, 1.0, 0.0, scale, false);
    let _ = std::io::stderr().write_all(format!("{first}\n").as_bytes());
    loop {
        let done = stopped(rx, Duration::from_secs(1));
        let now = progress.snapshot();
        let line = json_line(&now, &prev, at.elapsed().as_secs_f64(), start.elapsed().as_secs_f64(), scale, done);
        let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
        if done {
            break;
        }
        (prev, at) = (now, Instant::now());
    }
}
