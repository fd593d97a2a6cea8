//! Microbenchmarks of the pipeline's machinery, without a GPU:
//!
//! - per frame: pool take → progress `frame_computed` → channel send → recv → pool give →
//!   progress `frame_written`, with tiny frames so only the machinery is timed; once across
//!   two threads (as in a run, wake-ups included) and once on one thread (the operations'
//!   own cost). Goal ≤ 1 µs per frame.
//! - the runner's sharded [`Progress`] counters against one shared `AtomicU64::fetch_add`
//!   under 1, 2 and 4 threads: what sharding saves when several devices count at once.

use std::fmt::Write as _;
use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use anyhow::{Result, anyhow};
use crossbeam_channel::bounded;
use serde_json::{Value, json};
use wgpipe::{BufferPool, Progress};

use super::stats::Summary;

/// Bytes per frame: small, so copying is not what is measured.
const FRAME_BYTES: usize = 64;
/// Frames per machinery measurement.
const FRAMES: u64 = 100_000;
/// Increments per thread per counter measurement.
const INCREMENTS: u64 = 2_000_000;
/// Repetitions of each measurement (median reported).
const REPEATS: usize = 3;
/// The goal for the machinery's cost per frame.
pub const GOAL_NS: f64 = 1000.0;

/// What the microbenchmarks found.
pub struct MicroResult {
    pub json: Value,
    pub table: String,
}

/// ns per frame with producer and consumer on two threads, channel capacity `io_buffer`.
fn machinery_two_threads(io_buffer: usize) -> Result<f64> {
    let pool = BufferPool::new(FRAME_BYTES, io_buffer + 3);
    let progress = Progress::new(1, FRAMES);
    let (tx, rx) = bounded::<Vec<u8>>(io_buffer);
    let start = Instant::now();
    std::thread::scope(|s| -> Result<()> {
        let (pool_w, progress_w) = (&pool, &progress);
        let writer = s.spawn(move || {
            while let Ok(buf) = rx.recv() {
                let n = buf.len() as u64;
                pool_w.give(buf);
                progress_w.frame_written(0, n);
            }
        });
        for _ in 0..FRAMES {
            let buf = pool.take();
            progress.frame_computed(0);
            tx.send(buf).map_err(|_| anyhow!("the writer thread of the microbenchmark ended early"))?;
        }
        drop(tx);
        writer.join().map_err(|_| anyhow!("the writer thread of the microbenchmark panicked"))
    })?;
    let ns = start.elapsed().as_secs_f64() * 1e9 / FRAMES as f64;
    if progress.snapshot().written != FRAMES {
        return Err(anyhow!("the machinery microbenchmark lost frames"));
    }
    Ok(ns)
}

/// ns per frame for the same operations on one thread (no wake-ups).
fn machinery_one_thread() -> Result<f64> {
    let pool = BufferPool::new(FRAME_BYTES, 4);
    let progress = Progress::new(1, FRAMES);
    let (tx, rx) = bounded::<Vec<u8>>(1);
    let start = Instant::now();
    for _ in 0..FRAMES {
        let buf = pool.take();
        progress.frame_computed(0);
        tx.send(buf).map_err(|_| anyhow!("channel closed"))?;
        let buf = rx.recv().map_err(|_| anyhow!("channel closed"))?;
        let n = buf.len() as u64;
        pool.give(buf);
        progress.frame_written(0, n);
    }
    Ok(start.elapsed().as_secs_f64() * 1e9 / FRAMES as f64)
}

/// ns per increment (per thread) with `threads` threads each counting `INCREMENTS` times,
/// either into their own shard of [`Progress`] or into one shared atomic.
fn counters(threads: usize, sharded: bool) -> f64 {
    let progress = Progress::new(threads, 0);
    let shared = AtomicU64::new(0);
    let barrier = Barrier::new(threads + 1);
    let (progress, shared, barrier) = (&progress, &shared, &barrier);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    barrier.wait();
                    let start = Instant::now();
                    for _ in 0..INCREMENTS {
                        if sharded {
                            progress.frame_computed(t);
                        } else {
                            shared.fetch_add(1, Relaxed);
                        }
                    }
                    start.elapsed().as_secs_f64()
                })
            })
            .collect();
        barrier.wait();
        let slowest = handles.into_iter().filter_map(|h| h.join().ok()).fold(0.0, f64::max);
        slowest * 1e9 / INCREMENTS as f64
    })
}

fn repeat(mut f: impl FnMut() -> Result<f64>) -> Result<Vec<f64>> {
    (0..REPEATS).map(|_| f()).collect()
}

/// Runs every microbenchmark; `io_buffer` is the channel capacity of the two-thread case.
pub fn run(io_buffer: usize) -> Result<MicroResult> {
    let two = repeat(|| machinery_two_threads(io_buffer))?;
    let one = repeat(machinery_one_thread)?;
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let mut t = String::new();
    let (two_s, one_s) = (Summary::of(&two), Summary::of(&one));
    let _ = writeln!(t, "microbenchmarks (no GPU; {FRAME_BYTES}-byte frames, median [min–max] of {REPEATS})");
    let _ = writeln!(
        t,
        "  machinery per frame, two threads (io_buffer {io_buffer}): {} ns  (goal ≤ {GOAL_NS} ns: {})",
        two_s.text(0),
        if two_s.median <= GOAL_NS { "met" } else { "MISSED" }
    );
    let _ = writeln!(t, "  machinery per frame, one thread (no wake-ups):    {} ns", one_s.text(0));
    let _ =
        writeln!(t, "  progress counter, ns per increment per thread ({cpus} CPUs: more threads than CPUs time-share)");
    let _ = writeln!(t, "    {:>8} {:>24} {:>24}", "threads", "sharded Progress", "shared fetch_add");
    let mut rows = Vec::new();
    for threads in [1, 2, 4] {
        let sharded = repeat(|| Ok(counters(threads, true)))?;
        let shared = repeat(|| Ok(counters(threads, false)))?;
        let _ = writeln!(
            t,
            "    {:>8} {:>24} {:>24}",
            threads,
            Summary::of(&sharded).text(2),
            Summary::of(&shared).text(2)
        );
        rows.push(json!({
            "threads": threads,
            "sharded_ns_per_increment": Summary::json(&sharded),
            "shared_fetch_add_ns_per_increment": Summary::json(&shared),
        }));
    }
    let json = json!({
        "frame_bytes": FRAME_BYTES,
        "frames": FRAMES,
        "machinery_ns_per_frame_two_threads": Summary::json(&two),
        "machinery_ns_per_frame_one_thread": Summary::json(&one),
        "machinery_goal_ns": GOAL_NS,
        "machinery_meets_goal": two_s.median <= GOAL_NS,
        "io_buffer": io_buffer,
        "counters": rows,
        "cpus": cpus,
    });
    Ok(MicroResult { json, table: t })
}
