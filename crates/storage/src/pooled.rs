//! Frames lent by their producer: a sink that keeps a frame's bytes after `write` returns
//! (handing them to another thread, or to Python as arrays without a copy) takes the frame
//! itself, and its buffer goes back to the producer's pool whenever and wherever it is dropped.

use std::ops::Deref;
use std::sync::Arc;

use crate::frame::Frame;

/// Where a frame's buffer goes back to when its holder is done with it (a run's buffer pool),
/// so that a steady run allocates nothing per frame even when a sink keeps frames for a while.
pub trait Recycle: Send + Sync {
    /// Takes back a frame's buffer (or drops it, when the pool is full).
    fn recycle(&self, data: Vec<u8>);
}

/// A frame whose buffer goes back to its [`Recycle`] when dropped, on every path: after a
/// write, after an error, on another thread, or when the last Python array viewing it goes.
///
/// It dereferences to the [`Frame`]; [`PooledFrame::into_frame`] keeps the bytes for good.
pub struct PooledFrame {
    frame: Frame,
    home: Option<Arc<dyn Recycle>>,
}

impl PooledFrame {
    /// `frame`, whose buffer goes back to `home` when this is dropped.
    pub fn new(frame: Frame, home: Arc<dyn Recycle>) -> Self {
        PooledFrame { frame, home: Some(home) }
    }

    /// `frame` with no pool: its buffer is freed when this is dropped.
    pub fn unpooled(frame: Frame) -> Self {
        PooledFrame { frame, home: None }
    }

    /// The frame, taken out of the pool's accounting: its buffer is not given back.
    pub fn into_frame(mut self) -> Frame {
        self.home = None;
        std::mem::replace(&mut self.frame, Frame::new(0, 0, 0, Vec::new()))
    }
}

impl From<Frame> for PooledFrame {
    fn from(frame: Frame) -> Self {
        PooledFrame::unpooled(frame)
    }
}

impl Deref for PooledFrame {
    type Target = Frame;

    fn deref(&self) -> &Frame {
        &self.frame
    }
}

impl std::fmt::Debug for PooledFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PooledFrame")
            .field("stream", &self.frame.stream)
            .field("index", &self.frame.index)
            .field("step", &self.frame.step)
            .field("bytes", &self.frame.data.len())
            .field("pooled", &self.home.is_some())
            .finish()
    }
}

impl Drop for PooledFrame {
    fn drop(&mut self) {
        if let Some(home) = self.home.take() {
            home.recycle(std::mem::take(&mut self.frame.data));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    struct Shelf(Mutex<Vec<Vec<u8>>>);

    impl Recycle for Shelf {
        fn recycle(&self, data: Vec<u8>) {
            self.0.lock().unwrap().push(data);
        }
    }

    fn shelved(shelf: &Shelf) -> Vec<Vec<u8>> {
        shelf.0.lock().unwrap().clone()
    }

    #[test]
    fn the_buffer_goes_home_when_dropped_on_any_thread_and_not_when_kept() {
        let shelf = Arc::new(Shelf::default());
        let home: Arc<dyn Recycle> = shelf.clone();
        let frame = PooledFrame::new(Frame::new(0, 1, 2, vec![7; 16]), Arc::clone(&home));
        assert_eq!((frame.index, frame.data.len()), (1, 16), "derefs to the frame");
        std::thread::spawn(move || drop(frame)).join().unwrap();
        assert_eq!(shelved(&shelf), [vec![7; 16]]);

        let kept = PooledFrame::new(Frame::new(0, 2, 3, vec![9; 4]), home).into_frame();
        assert_eq!(kept.data, [9; 4]);
        assert_eq!(shelved(&shelf).len(), 1, "a frame taken out of the pool does not go back");
        drop(PooledFrame::unpooled(kept));
        assert_eq!(shelved(&shelf).len(), 1);
    }
}
