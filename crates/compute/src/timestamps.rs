//! GPU time per frame from timestamp queries, where the device has `TIMESTAMP_QUERY`.
//!
//! The host can only time how long it waited for a frame; when the writer is the bottleneck
//! the GPU finishes during that wait and the host's figure understates (or, blocked, overstates)
//! the GPU's work. Each frame's commands are bracketed by two empty compute passes, the first
//! writing a timestamp at its beginning and the second at its end; the two values are resolved
//! and copied into the frame's own staging buffer behind the frame's bytes, so they come back
//! with the frame in the same mapping, without another wait.

use std::time::Duration;

use crate::device::GpuDevice;
use crate::error::Result;

/// Bytes of one resolved timestamp (`wgpu::QUERY_SIZE`).
const QUERY_BYTES: u64 = wgpu::QUERY_SIZE as u64;

/// The query set and resolve buffer of one readback ring.
pub(crate) struct FrameTimer {
    queries: wgpu::QuerySet,
    /// One `QUERY_RESOLVE_BUFFER_ALIGNMENT`-aligned slot of two timestamps per staging buffer.
    resolve: wgpu::Buffer,
    /// Nanoseconds per tick (`Queue::get_timestamp_period`).
    period_ns: f64,
    /// Where the two timestamps sit in each staging buffer.
    staging_offset: u64,
    /// The end of the previous frame's interval, in ticks: a frame's interval is counted from
    /// there if it began earlier, so frames the GPU overlapped are not counted twice.
    last_end: Option<u64>,
}

impl FrameTimer {
    /// Bytes a staging buffer needs behind its first `data_bytes` bytes for the timestamps.
    pub(crate) fn staging_bytes(data_bytes: u64) -> (u64, u64) {
        let offset = data_bytes.next_multiple_of(QUERY_BYTES);
        (offset, offset + 2 * QUERY_BYTES)
    }

    /// A timer for a ring of `slots` staging buffers whose timestamps go at `staging_offset`;
    /// `None` when the device was opened without `TIMESTAMP_QUERY` (or reports no period).
    pub(crate) fn new(gpu: &GpuDevice, slots: usize, staging_offset: u64) -> Result<Option<Self>> {
        let period_ns = f64::from(gpu.queue().get_timestamp_period());
        // Two queries per staging buffer; a ring too large for one query set goes untimed.
        let count = u32::try_from(slots.saturating_mul(2)).unwrap_or(u32::MAX);
        if !gpu.device().features().contains(wgpu::Features::TIMESTAMP_QUERY)
            || period_ns <= 0.0
            || count > wgpu::QUERY_SET_MAX_QUERIES
        {
            return Ok(None);
        }
        let slot_bytes = wgpu::QUERY_RESOLVE_BUFFER_ALIGNMENT;
        let (queries, resolve) = gpu.scoped("creating the timestamp queries", |device| {
            let queries = device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("frame-timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count,
            });
            let resolve = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("frame-timestamps"),
                size: slot_bytes * slots as u64,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            (queries, resolve)
        })?;
        Ok(Some(FrameTimer { queries, resolve, period_ns, staging_offset, last_end: None }))
    }

    /// An empty compute pass writing `index` of the query set at its beginning or end.
    fn mark(&self, encoder: &mut wgpu::CommandEncoder, index: u32, at_end: bool) {
        let writes = wgpu::ComputePassTimestampWrites {
            query_set: &self.queries,
            beginning_of_pass_write_index: (!at_end).then_some(index),
            end_of_pass_write_index: at_end.then_some(index),
        };
        drop(encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("frame-timestamp"),
            timestamp_writes: Some(writes),
        }));
    }

    /// Records the frame's start timestamp into staging slot `slot`'s queries.
    pub(crate) fn begin(&self, encoder: &mut wgpu::CommandEncoder, slot: usize) {
        self.mark(encoder, 2 * slot as u32, false);
    }

    /// Records the frame's end timestamp and the copy of both into `staging`.
    pub(crate) fn end(&self, encoder: &mut wgpu::CommandEncoder, slot: usize, staging: &wgpu::Buffer) {
        let first = 2 * slot as u32;
        self.mark(encoder, first + 1, true);
        let at = slot as u64 * wgpu::QUERY_RESOLVE_BUFFER_ALIGNMENT;
        encoder.resolve_query_set(&self.queries, first..first + 2, &self.resolve, at);
        encoder.copy_buffer_to_buffer(&self.resolve, at, staging, self.staging_offset, 2 * QUERY_BYTES);
    }

    /// The GPU time of the frame whose mapped staging buffer is `mapped`: from its start (or
    /// the previous frame's end, if later) to its end. `None` when the two values make no
    /// interval (a driver that wrote no timestamps leaves zeros).
    pub(crate) fn read(&mut self, mapped: &[u8]) -> Option<Duration> {
        let at = usize::try_from(self.staging_offset).ok()?;
        let value = |k: usize| {
            let bytes = mapped.get(at + 8 * k..at + 8 * k + 8)?;
            Some(u64::from_le_bytes(bytes.try_into().ok()?))
        };
        let (begin, end) = (value(0)?, value(1)?);
        if end <= begin || begin == 0 {
            return None;
        }
        let from = self.last_end.map_or(begin, |last| begin.max(last));
        self.last_end = Some(end);
        let ticks = end.saturating_sub(from);
        Some(Duration::from_nanos((ticks as f64 * self.period_ns) as u64))
    }
}
