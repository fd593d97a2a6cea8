//! Frames handed to Python as they are stored: a sink decorator that, after the run's sink
//! stored a frame, passes the frame itself (its pooled buffer, no copy) to `Pipeline.frames()`
//! through a bounded channel. A full channel blocks the writer, which blocks the devices:
//! a slow Python loop slows the GPU instead of filling memory.
//!
//! The decorator is in place from the pipeline's build (so that every check runs then); the
//! channel is opened only when Python asks for frames before the run starts, so that a run
//! nobody takes frames from never waits for a reader.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded};
use wgpipe::storage::{Frame, PooledFrame, Result, Sink, SinkSummary, StreamLayout};

/// The receiving end, shared by the run (which closes it when the run is left) and the
/// iterator (which takes frames from it).
pub struct Tap {
    frames: Mutex<Option<Receiver<PooledFrame>>>,
}

/// What waiting for a frame gave.
pub enum Next {
    /// A frame.
    Frame(PooledFrame),
    /// None arrived in time.
    Waiting,
    /// No more will come: the output was finished, or the tap closed.
    Ended,
}

impl Tap {
    /// Waits up to `timeout` for the next frame.
    pub fn next(&self, timeout: Duration) -> Next {
        let frames = self.frames.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(rx) = frames.as_ref() else { return Next::Ended };
        match rx.recv_timeout(timeout) {
            Ok(frame) => Next::Frame(frame),
            Err(RecvTimeoutError::Timeout) => Next::Waiting,
            Err(RecvTimeoutError::Disconnected) => Next::Ended,
        }
    }

    /// Stops taking frames: the frames waiting go back to the pool and the sink stops
    /// handing them on (the run goes on storing every frame).
    pub fn close(&self) {
        drop(self.frames.lock().unwrap_or_else(PoisonError::into_inner).take());
    }
}

/// Where a [`TapSink`] finds its channel when the run begins: empty unless
/// [`TapSlot::open`] was called before.
#[derive(Default)]
pub struct TapSlot {
    sender: Mutex<Option<Sender<PooledFrame>>>,
}

impl TapSlot {
    /// Opens the channel, `depth` frames deep, and returns its receiving end.
    pub fn open(&self, depth: usize) -> Arc<Tap> {
        let (tx, rx) = bounded(depth);
        *self.sender.lock().unwrap_or_else(PoisonError::into_inner) = Some(tx);
        Arc::new(Tap { frames: Mutex::new(Some(rx)) })
    }
}

/// A sink that hands every frame `inner` stored to a [`Tap`], when one was opened.
pub struct TapSink {
    inner: Box<dyn Sink>,
    slot: Arc<TapSlot>,
    frames: Option<Sender<PooledFrame>>,
}

impl TapSink {
    /// `inner`, handing its stored frames to whatever tap `slot` opens before the run begins.
    pub fn new(inner: Box<dyn Sink>) -> (Self, Arc<TapSlot>) {
        let slot = Arc::new(TapSlot::default());
        (TapSink { inner, slot: Arc::clone(&slot), frames: None }, slot)
    }

    /// Hands `frame` on, waiting while the tap is full (closing the tap wakes the wait);
    /// drops it (its buffer back to the pool) once the tap is closed, and hands nothing on
    /// after that.
    fn hand_on(&mut self, frame: PooledFrame) {
        if let Some(tx) = &self.frames
            && tx.send(frame).is_err()
        {
            self.frames = None;
        }
    }
}

impl Sink for TapSink {
    fn check_layout(&self, layout: &StreamLayout) -> Result<()> {
        self.inner.check_layout(layout)
    }

    fn frame_layout(&self, layout: &StreamLayout) -> Option<StreamLayout> {
        self.inner.frame_layout(layout)
    }

    fn begin(&mut self, layout: &StreamLayout) -> Result<()> {
        self.frames = self.slot.sender.lock().unwrap_or_else(PoisonError::into_inner).take();
        self.inner.begin(layout)
    }

    fn write(&mut self, frame: &Frame) -> Result<()> {
        self.inner.write(frame)?;
        if self.frames.is_some() {
            self.hand_on(PooledFrame::unpooled(frame.clone()));
        }
        Ok(())
    }

    fn write_pooled(&mut self, frame: PooledFrame) -> Result<()> {
        if self.frames.is_none() {
            return self.inner.write_pooled(frame);
        }
        self.inner.write(&frame)?;
        self.hand_on(frame);
        Ok(())
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        // No more frames: the iterator ends once it has taken those waiting.
        self.frames = None;
        self.inner.finish()
    }

    fn fail(&mut self) {
        self.inner.fail();
    }

    fn leave_incomplete(&mut self, stream: usize) {
        self.inner.leave_incomplete(stream);
    }
}
