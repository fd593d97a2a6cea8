//! Recycled host buffers: frames travel by ownership and their bytes come back here, so a
//! steady run allocates nothing per frame.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender, TrySendError, bounded};
use wgpipe_storage::{Frame, PooledFrame, Recycle};

/// A pool of equally sized byte buffers, shared by the device threads (which take) and the
/// thread that writes frames (which gives back).
///
/// Buffers are allocated only when none is free. A run's pool holds
/// [`BufferPool::capacity_for`] buffers, as many as can be out at once, so allocation stops
/// after the first frames.
#[derive(Debug, Clone)]
pub struct BufferPool {
    give: Sender<Vec<u8>>,
    take: Receiver<Vec<u8>>,
    size: usize,
}

impl BufferPool {
    /// A pool of `size`-byte buffers holding at most `capacity` idle ones.
    pub fn new(size: usize, capacity: usize) -> Self {
        let (give, take) = bounded(capacity.max(1));
        BufferPool { give, take, size }
    }

    /// The most frames a run of `devices` device threads and a channel of `io_buffer` frames
    /// has out at once: one being filled and one being handed off per device, the channel's,
    /// and one being written (`devices × 2 + io_buffer + 1`); `None` on overflow. The pipeline
    /// sizes its pool by it, and the host-memory check counts it.
    pub fn capacity_for(devices: usize, io_buffer: usize) -> Option<usize> {
        devices.checked_mul(2)?.checked_add(io_buffer)?.checked_add(1)
    }

    /// A buffer of the pool's size: a recycled one when available, else a new one.
    pub fn take(&self) -> Vec<u8> {
        match self.take.try_recv() {
            Ok(buf) => buf,
            Err(_) => vec![0u8; self.size],
        }
    }

    /// Returns a buffer for reuse; buffers of another size, or beyond capacity, are dropped.
    pub fn give(&self, buf: Vec<u8>) {
        if buf.len() != self.size {
            return;
        }
        match self.give.try_send(buf) {
            Ok(()) | Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {}
        }
    }

    /// Idle buffers in the pool now.
    pub fn idle(&self) -> usize {
        self.take.len()
    }

    /// Bytes of every buffer: one frame.
    pub fn frame_bytes(&self) -> usize {
        self.size
    }
}

/// A buffer lent by a [`BufferPool`] to the thread filling it: it goes back to the pool when
/// dropped, on every path (an error, a stop, a producer with no more frames), unless it
/// became a frame ([`LentBuffer::into_frame`]), which gives it back in turn when dropped.
pub(crate) struct LentBuffer {
    data: Vec<u8>,
    pool: Arc<BufferPool>,
}

impl LentBuffer {
    /// A buffer of `pool`'s (recycled, or new when none is idle).
    pub fn take(pool: &Arc<BufferPool>) -> Self {
        LentBuffer { data: pool.take(), pool: Arc::clone(pool) }
    }

    /// The frame these bytes are, still the pool's: see [`PooledFrame`].
    pub fn into_frame(mut self, make: impl FnOnce(Vec<u8>) -> Frame) -> PooledFrame {
        let frame = make(std::mem::take(&mut self.data));
        PooledFrame::new(frame, Arc::clone(&self.pool) as Arc<dyn Recycle>)
    }
}

impl Deref for LentBuffer {
    type Target = Vec<u8>;

    fn deref(&self) -> &Vec<u8> {
        &self.data
    }
}

impl DerefMut for LentBuffer {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.data
    }
}

impl Drop for LentBuffer {
    fn drop(&mut self) {
        // Empty once it became a frame.
        if !self.data.is_empty() {
            self.pool.give(std::mem::take(&mut self.data));
        }
    }
}

/// A sink that keeps a frame past its write ([`wgpipe_storage::Sink::write_pooled`]) gives
/// the buffer back here when it drops the frame.
impl Recycle for BufferPool {
    fn recycle(&self, data: Vec<u8>) {
        self.give(data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recycles_buffers_up_to_capacity() {
        let pool = BufferPool::new(16, 2);
        let a = pool.take();
        let ptr = a.as_ptr();
        pool.give(a);
        let b = pool.take();
        assert_eq!(b.as_ptr(), ptr, "the same allocation comes back");
        pool.give(b);
        pool.give(vec![0; 16]);
        pool.give(vec![0; 16]);
        assert_eq!(pool.idle(), 2, "capacity bounds the idle buffers");
        pool.give(vec![0; 8]);
        assert_eq!(pool.idle(), 2, "wrong-sized buffers are not pooled");
    }

    #[test]
    fn a_lent_buffer_comes_back_when_dropped_and_when_its_frame_is() {
        let pool = Arc::new(BufferPool::new(16, 4));
        drop(LentBuffer::take(&pool));
        assert_eq!(pool.idle(), 1, "dropped unused");
        let lent = LentBuffer::take(&pool);
        assert_eq!(pool.idle(), 0);
        let frame = lent.into_frame(|data| Frame::new(0, 0, 0, data));
        assert_eq!((frame.data.len(), pool.idle()), (16, 0), "the frame holds the bytes");
        drop(frame);
        assert_eq!(pool.idle(), 1, "back with the frame");
    }

    #[test]
    fn a_runs_capacity_is_two_frames_per_device_the_channels_and_one_being_written() {
        assert_eq!(BufferPool::capacity_for(3, 4), Some(3 * 2 + 4 + 1));
        assert_eq!(BufferPool::capacity_for(1, 0), Some(3));
        assert_eq!(BufferPool::capacity_for(usize::MAX / 2, 1), None);
    }
}
