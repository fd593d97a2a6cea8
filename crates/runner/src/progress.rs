//! Progress as sharded per-device counters.
//!
//! Each device has a shard of two cache-line-padded halves: the compute half, stored to only
//! by that device's thread, and the I/O half, stored to only by whichever thread writes that
//! device's frames (the writer thread in async mode, the device thread itself in sync mode; in auto mode
//! either, one at a time: every write, and its counting, happens under the writer's mutex).
//! One writer per counter means plain `Relaxed` load + store instead of a read-modify-write,
//! and padding means no hot-path store touches a cache line another thread writes. Readers
//! sum the shards with dirty reads: a snapshot may be a frame behind, never torn.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering, Ordering::Relaxed};

use crossbeam_utils::CachePadded;

/// Counters stored to by the device thread only.
#[derive(Debug, Default)]
struct ComputeHalf {
    computed: AtomicU64,
}

/// Counters stored to by the thread that writes this device's frames only.
#[derive(Debug, Default)]
struct IoHalf {
    written: AtomicU64,
    bytes: AtomicU64,
}

#[derive(Debug, Default)]
struct Shard {
    compute: CachePadded<ComputeHalf>,
    io: CachePadded<IoHalf>,
}

/// Increments a counter that only the calling thread stores to.
#[inline]
fn bump(counter: &AtomicU64, by: u64) {
    counter.store(counter.load(Relaxed) + by, Relaxed);
}

/// Run progress, shared by the pipeline's threads and any reporter.
#[derive(Debug)]
pub struct Progress {
    shards: Box<[Shard]>,
    /// Frames written per stream (layout order), each stored to only by the thread writing
    /// that stream's frames (one at a time: a stream is one job on one device).
    streams: Box<[CachePadded<AtomicU64>]>,
    finished: CachePadded<AtomicUsize>,
    total_frames: u64,
}

/// One device's counts at the moment of reading.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceProgress {
    /// Frames read back from the GPU.
    pub computed: u64,
    /// Frames the sink has accepted.
    pub written: u64,
    /// Payload bytes the sink has accepted.
    pub bytes: u64,
}

/// The sum over all shards.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProgressSnapshot {
    /// Per device, in device order.
    pub devices: Vec<DeviceProgress>,
    /// Frames computed by all devices.
    pub computed: u64,
    /// Frames written for all devices.
    pub written: u64,
    /// Bytes written for all devices.
    pub bytes: u64,
    /// Devices whose thread has ended.
    pub finished_devices: usize,
    /// Frames the whole run will produce.
    pub total_frames: u64,
    /// Frames written per stream, in the layout's stream order (this run's frames: a stream
    /// continued from a checkpoint counts from 0 here).
    pub streams: Vec<u64>,
}

impl Progress {
    /// Counters for `devices` devices and a run of `total_frames` frames.
    pub fn new(devices: usize, total_frames: u64) -> Self {
        Progress {
            shards: (0..devices).map(|_| Shard::default()).collect(),
            streams: Box::new([]),
            finished: CachePadded::new(AtomicUsize::new(0)),
            total_frames,
        }
    }

    /// The same counters, also counting frames written per stream for `streams` streams.
    pub fn with_streams(mut self, streams: usize) -> Self {
        self.streams = (0..streams).map(|_| CachePadded::new(AtomicU64::new(0))).collect();
        self
    }

    /// One frame of stream `s` was written. Call only from the thread writing `s`'s frames,
    /// after [`Progress::frame_written`] for the same frame: a snapshot then never shows more
    /// frames per stream than in all (released here, acquired first by the snapshot).
    #[inline]
    pub fn stream_written(&self, s: usize) {
        if let Some(counter) = self.streams.get(s) {
            counter.store(counter.load(Relaxed) + 1, Ordering::Release);
        }
    }

    /// Number of device shards.
    pub fn devices(&self) -> usize {
        self.shards.len()
    }

    /// Device `d` read back one frame. Call from device `d`'s thread only.
    #[inline]
    pub fn frame_computed(&self, d: usize) {
        if let Some(s) = self.shards.get(d) {
            bump(&s.compute.computed, 1);
        }
    }

    /// One frame of device `d` was written. Call only from the thread writing `d`'s frames.
    #[inline]
    pub fn frame_written(&self, d: usize, bytes: u64) {
        if let Some(s) = self.shards.get(d) {
            bump(&s.io.written, 1);
            bump(&s.io.bytes, bytes);
        }
    }

    /// Frames of device `d` written so far (a dirty read: never ahead of the sink).
    pub(crate) fn written_by(&self, d: usize) -> u64 {
        self.shards.get(d).map_or(0, |s| s.io.written.load(Relaxed))
    }

    /// A device thread ended (shared counter: touched once per device, not per frame).
    pub fn device_finished(&self) {
        self.finished.fetch_add(1, Relaxed);
    }

    /// Reads every shard (dirty reads, no locking).
    pub fn snapshot(&self) -> ProgressSnapshot {
        // The streams first: every frame they count was counted in its device's total before
        // (`stream_written`), so the totals read next are never below their sum.
        let streams = self.streams.iter().map(|c| c.load(Ordering::Acquire)).collect();
        let devices: Vec<DeviceProgress> = self
            .shards
            .iter()
            .map(|s| DeviceProgress {
                computed: s.compute.computed.load(Relaxed),
                written: s.io.written.load(Relaxed),
                bytes: s.io.bytes.load(Relaxed),
            })
            .collect();
        ProgressSnapshot {
            computed: devices.iter().map(|d| d.computed).sum(),
            written: devices.iter().map(|d| d.written).sum(),
            bytes: devices.iter().map(|d| d.bytes).sum(),
            devices,
            finished_devices: self.finished.load(Relaxed),
            total_frames: self.total_frames,
            streams,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A snapshot taken while the writer counts never shows more frames per stream than in
    /// all: the `written per stream` line printed before the total must not pass it (the kill
    /// test caught one that did, when the snapshot read the totals first).
    #[test]
    fn a_snapshot_never_counts_more_frames_per_stream_than_in_all() {
        let p = Progress::new(1, 0).with_streams(3);
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 0..1_000_000 {
                    p.frame_written(0, 1);
                    p.stream_written(i % 3);
                }
                done.store(true, Ordering::Release);
            });
            let mut snapshots = 0u64;
            while !done.load(Ordering::Acquire) || snapshots == 0 {
                let snap = p.snapshot();
                let per_stream: u64 = snap.streams.iter().sum();
                assert!(per_stream <= snap.written, "{per_stream} frames per stream, {} in all", snap.written);
                snapshots += 1;
            }
        });
        assert_eq!(p.snapshot().streams, [333_334, 333_333, 333_333]);
    }

    #[test]
    fn shards_sum_and_stay_apart() {
        let p = Progress::new(3, 10).with_streams(2);
        std::thread::scope(|s| {
            for d in 0..3 {
                let p = &p;
                s.spawn(move || {
                    for _ in 0..1000 * (d + 1) {
                        p.frame_computed(d);
                    }
                    p.device_finished();
                });
            }
        });
        p.frame_written(1, 64);
        p.frame_written(1, 64);
        p.stream_written(1);
        p.stream_written(7);
        let snap = p.snapshot();
        assert_eq!(snap.streams, [0, 1], "an unknown stream is not counted");
        assert_eq!(snap.computed, 6000);
        assert_eq!(snap.devices[2].computed, 3000);
        assert_eq!(snap.devices[1], DeviceProgress { computed: 2000, written: 2, bytes: 128 });
        assert_eq!((snap.written, snap.bytes, snap.finished_devices, snap.total_frames), (2, 128, 3, 10));
        // The halves of one shard and neighbouring shards sit on different cache lines.
        let a = &p.shards[0].compute as *const _ as usize;
        let b = &p.shards[0].io as *const _ as usize;
        let c = &p.shards[1].compute as *const _ as usize;
        assert!(b - a >= 64 && c - b >= 64);
    }
}
