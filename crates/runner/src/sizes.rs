//! The size rules of a run, checked before anything is allocated or created.
//!
//! Every size a user gives (grid, fields, buffers, devices) is turned into bytes with checked
//! arithmetic and compared with what has to hold it, so an impossible run is an error that
//! names the grid, the bytes needed and the limit, and says what to change, instead of an
//! allocation that aborts the process, seconds of host initialisation, or an output file
//! left behind. Each limit belongs to the crate that knows it:
//!
//! - the device's limits (buffer sizes, dispatch) to `wgpipe-compute`
//!   ([`wgpipe_compute::GridFootprint`]);
//! - the sink's limits (an HDF5 chunk) to `wgpipe-storage` ([`Sink::check_layout`]);
//! - host memory to this module, since the runner owns the frame pool and the channel and
//!   starts the staging rings.
//!
//! A run's plan calls [`check`] once the devices are known: `build` once they are open, the
//! config module on devices not opened yet (their limits unknown then), so the command line
//! refuses most impossible runs before touching a GPU.

use wgpipe_compute::{GpuDevice, Grid, GridFootprint, wgpu};
use wgpipe_storage::{Sink, StreamLayout};

use crate::error::{Error, Result};
use crate::pool::BufferPool;
use crate::writer::Envelope;

/// The sizes a run is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunShape {
    /// The field kernels' grid; `None` when frame sources produce the frames.
    pub grid: Option<Grid>,
    /// Fields of the kernels' state.
    pub state_fields: usize,
    /// Fields of each frame.
    pub frame_fields: usize,
    pub staging_buffers: usize,
    pub io_buffer: usize,
    /// Distinct cells per workgroup of the run's kernels (workgroup size, times the widest
    /// `CELLS_PER_INVOCATION_X` a device may run the kernel with, along x): what each dispatch
    /// divides the grid into at the least.
    pub workgroup_sizes: Vec<[u32; 3]>,
}

/// One device of a run, as far as sizes go.
#[derive(Debug, Clone)]
pub(crate) struct DeviceSize {
    label: String,
    /// `None` before the device is opened.
    limits: Option<wgpu::Limits>,
    /// The device's buffers live in host memory (a CPU adapter such as lavapipe).
    host_memory: bool,
}

impl DeviceSize {
    /// An opened device.
    pub(crate) fn of(gpu: &GpuDevice) -> Self {
        DeviceSize {
            label: gpu.label().to_owned(),
            limits: Some(gpu.device().limits()),
            host_memory: gpu.adapter().is_cpu(),
        }
    }

    /// A device not opened yet: its limits are unknown, its memory counted as its own.
    pub(crate) fn unopened() -> Self {
        DeviceSize { label: String::new(), limits: None, host_memory: false }
    }

    /// The device's label (empty before it is opened).
    pub(crate) fn label(&self) -> &str {
        &self.label
    }
}

/// The most host memory a run holds at once, by what holds it (bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct HostMemory {
    /// Frames the pool can hand out at once ([`BufferPool::capacity_for`]): the pool the
    /// pipeline allocates holds exactly these.
    pub pool_frames: usize,
    /// Bytes of one frame.
    pub frame_bytes: u64,
    /// The frame pool's and the channel's own slots.
    pub bookkeeping: u64,
    /// Staging buffers of every device (mapped for reading: host-visible memory).
    pub staging: u64,
    /// Initial states, built on the host by every device thread at the start.
    pub initial: u64,
    /// State buffers of devices whose memory is the host's (CPU adapters).
    pub device_state: u64,
    /// The part of `pool_frames` that is the channel's capacity (`io_buffer`).
    pub channel_frames: u64,
}

/// `a + b + ...`, or `None` on overflow.
fn sum(parts: &[Option<u64>]) -> Option<u64> {
    parts.iter().try_fold(0u64, |acc, p| acc.checked_add((*p)?))
}

impl HostMemory {
    /// The host memory of `shape` on `devices`, with frames of `frame_bytes` and states of
    /// `state_bytes` (0 for frame sources, whose memory is their own).
    fn of(shape: &RunShape, devices: &[DeviceSize], frame_bytes: u64, state_bytes: u64) -> Option<Self> {
        let n = devices.len() as u64;
        let io = shape.io_buffer as u64;
        let pool_frames = BufferPool::capacity_for(devices.len(), shape.io_buffer)?;
        let slot = std::mem::size_of::<Envelope>() as u64 + 8;
        let bookkeeping = sum(&[(pool_frames as u64).checked_mul(slot), io.checked_mul(slot)])?;
        let staging = n.checked_mul(shape.staging_buffers as u64)?.checked_mul(frame_bytes)?;
        let initial = n.checked_mul(state_bytes)?;
        let cpu = devices.iter().filter(|d| d.host_memory).count() as u64;
        let device_state = cpu.checked_mul(2)?.checked_mul(state_bytes)?;
        Some(HostMemory { pool_frames, frame_bytes, bookkeeping, staging, initial, device_state, channel_frames: io })
    }

    /// Everything together, or `None` on overflow.
    pub(crate) fn total(&self) -> Option<u64> {
        sum(&[
            (self.pool_frames as u64).checked_mul(self.frame_bytes),
            Some(self.bookkeeping),
            Some(self.staging),
            Some(self.initial),
            Some(self.device_state),
        ])
    }
}

/// `1234` → `1234 bytes (1.2 KiB)`: exact, and readable.
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut value = n as f64;
    let mut unit = None;
    for u in UNITS {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = Some(u);
    }
    match unit {
        None => format!("{n} bytes"),
        Some(u) => format!("{n} bytes ({value:.1} {u})"),
    }
}

/// Memory the kernel says a new process could use without swapping (`MemAvailable` of
/// `/proc/meminfo`), or `None` where that file does not exist (not Linux): the host check is
/// then left to the allocator.
pub(crate) fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.trim_start_matches("MemAvailable:").trim().trim_end_matches("kB").trim().parse().ok()?;
    kib.checked_mul(1024)
}

/// Errors unless `need` fits in `available` bytes of host memory (no check when unknown).
pub(crate) fn check_host(shape: &RunShape, devices: usize, need: &HostMemory, available: Option<u64>) -> Result<()> {
    let Some(available) = available else { return Ok(()) };
    let grid = shape.grid.map_or_else(|| "frames".to_owned(), |g| format!("grid {g}"));
    let total = need.total();
    if total.is_some_and(|t| t <= available) {
        return Ok(());
    }
    let frames = (need.pool_frames as u64).checked_mul(need.frame_bytes);
    let shown = |v: Option<u64>| v.map_or_else(|| "more than 2^64 bytes".to_owned(), bytes);
    let mut parts = vec![format!(
        "frame pool {} (frames of {} bytes: 2 per device × {devices} devices + io_buffer {} + 1)",
        shown(frames),
        need.frame_bytes,
        need.channel_frames
    )];
    if need.staging > 0 {
        parts.push(format!("staging {} ({} per device)", bytes(need.staging), shape.staging_buffers));
    }
    parts.push(format!("initial states {}", bytes(need.initial)));
    if need.device_state > 0 {
        parts.push(format!("CPU devices' state {}", bytes(need.device_state)));
    }
    // Name the key whose value costs the most.
    let channel = need.channel_frames.checked_mul(need.frame_bytes);
    let key = match (channel, need.staging) {
        (None, _) => "io.io_buffer",
        (Some(c), s) if c >= s && c.saturating_mul(2) >= total.unwrap_or(u64::MAX) => "io.io_buffer",
        (Some(_), s) if s.saturating_mul(2) >= total.unwrap_or(u64::MAX) => "io.staging_buffers",
        _ => "grid",
    };
    let fix = match key {
        "io.io_buffer" => "lower io_buffer (frames queued for the writer)",
        "io.staging_buffers" => "lower staging_buffers (readback buffers per device)",
        _ => "use a smaller grid, fewer stored fields or fewer devices",
    };
    Err(Error::TooLarge {
        key,
        message: format!(
            "{grid}: the run needs {} of host memory, more than the {} available (MemAvailable): {}: {fix}",
            shown(total),
            bytes(available),
            parts.join(", ")
        ),
    })
}

/// Checks `shape` on `devices` for `sink`, in this order: what the kernels can index, each
/// opened device's limits, the sink's limits (and names) for the `stored` layout, host memory
/// for frames of the `produced` layout. The two differ for a split domain only: a rank
/// produces its block, the sink stores the whole grid. Returns the host memory the run holds,
/// whose frame pool the pipeline allocates.
pub(crate) fn check(
    shape: &RunShape,
    devices: &[DeviceSize],
    sink: &dyn Sink,
    produced: &StreamLayout,
    stored: &StreamLayout,
) -> Result<HostMemory> {
    let (frame_bytes, state_bytes) = match &shape.grid {
        Some(grid) => {
            let mut footprint = None;
            for &wg in &shape.workgroup_sizes {
                let f = GridFootprint::new(grid, shape.state_fields, shape.frame_fields, wg)?;
                for d in devices {
                    if let Some(limits) = &d.limits {
                        f.check(limits, &d.label)?;
                    }
                }
                footprint = Some(f);
            }
            let Some(footprint) = footprint else {
                return Err(Error::Invalid("no kernel: nothing to size".to_owned()));
            };
            // Frames as stored (f16 output halves them); the footprint's are f32.
            (produced.frame_bytes()? as u64, footprint.state_bytes)
        }
        // A frame source's frames: the layout's size (the source checks its staging buffer).
        None => (produced.frame_bytes()? as u64, 0),
    };
    sink.check_layout(stored)?;
    let need = HostMemory::of(shape, devices, frame_bytes, state_bytes).ok_or_else(|| Error::TooLarge {
        key: "io.io_buffer",
        message: "the host memory the run needs overflows 64-bit arithmetic: lower io_buffer and staging_buffers"
            .to_owned(),
    })?;
    check_host(shape, devices.len(), &need, available_memory())?;
    Ok(need)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(io_buffer: usize) -> RunShape {
        RunShape {
            grid: Some(Grid::new(&[1000, 1000]).unwrap_or_else(|e| panic!("{e}"))),
            state_fields: 2,
            frame_fields: 1,
            staging_buffers: 2,
            io_buffer,
            workgroup_sizes: vec![[16, 16, 1]],
        }
    }

    fn need(shape: &RunShape, devices: &[DeviceSize]) -> HostMemory {
        let grid = shape.grid.unwrap_or_else(|| panic!("a grid"));
        let f = GridFootprint::new(&grid, shape.state_fields, shape.frame_fields, [16, 16, 1]);
        let f = f.unwrap_or_else(|e| panic!("{e}"));
        HostMemory::of(shape, devices, f.frame_bytes, f.state_bytes).unwrap_or_default()
    }

    #[test]
    fn host_memory_counts_pool_staging_initial_and_cpu_device_state() {
        let s = shape(3);
        let cpu = DeviceSize { label: "cpu".into(), limits: None, host_memory: true };
        let n = need(&s, &[DeviceSize::unopened(), cpu]);
        let frame = 4_000_000;
        assert_eq!((n.pool_frames, n.frame_bytes), (2 * 2 + 3 + 1, frame));
        assert_eq!(n.staging, 2 * 2 * frame);
        let state = 2 * frame; // two fields
        assert_eq!(n.initial, 2 * state, "one initial state per device");
        assert_eq!(n.device_state, 2 * state, "the one CPU device holds two states (ping-pong)");
        let total = n.total().unwrap_or_default();
        assert!(check_host(&s, 2, &n, Some(total)).is_ok(), "exactly enough is enough");
        let e = check_host(&s, 2, &n, Some(total - 1)).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.starts_with(&format!("grid 1000×1000: the run needs {} of host memory", bytes(total))), "{e}");
        assert!(e.contains(&format!("more than the {} available", bytes(total - 1))), "{e}");
        assert!(check_host(&s, 2, &n, None).is_ok(), "unknown memory is not checked");
    }

    #[test]
    fn the_largest_cost_names_the_key_to_change() {
        let key = |s: &RunShape| match check_host(s, 1, &need(s, &[DeviceSize::unopened()]), Some(1)) {
            Err(Error::TooLarge { key, .. }) => key,
            other => panic!("{other:?}"),
        };
        assert_eq!(key(&shape(100_000)), "io.io_buffer");
        assert_eq!(key(&RunShape { staging_buffers: 100_000, ..shape(2) }), "io.staging_buffers");
        assert_eq!(key(&shape(2)), "grid");
    }

    #[test]
    fn byte_counts_are_exact_and_readable() {
        assert_eq!(bytes(1000), "1000 bytes");
        assert_eq!(bytes(40_000_000_000), "40000000000 bytes (37.3 GiB)");
    }
}
