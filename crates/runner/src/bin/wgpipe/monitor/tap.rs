//! The monitor's view of the frames: a sink that passes every call to the run's own sink and,
//! after a frame is stored, keeps a copy of it for the page when one was asked for, at most a
//! few times a second and only if the slot is free at that moment (`try_lock`): the writer
//! never waits for the server, whatever a browser does.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wgpipe::storage::{Frame, Result, Sink, SinkSummary, StreamLayout};

/// Shortest time between two copies of a frame: the page refreshes twice a second.
const COPY_PERIOD: Duration = Duration::from_millis(250);

/// What the tap shares with the server.
#[derive(Default)]
pub struct Latest {
    /// The layout the sink began with.
    pub layout: Mutex<Option<StreamLayout>>,
    /// The newest frame copied, with when it was copied.
    pub frame: Mutex<Option<Frame>>,
    /// Set by the server when a page asked for a frame since the last copy.
    pub wanted: AtomicBool,
}

/// The run's sink, with a copy of the newest frame kept for the monitor.
pub struct TapSink {
    inner: Box<dyn Sink>,
    latest: Arc<Latest>,
    copied: Option<Instant>,
}

impl TapSink {
    pub fn new(inner: Box<dyn Sink>, latest: Arc<Latest>) -> Self {
        TapSink { inner, latest, copied: None }
    }
}

impl Sink for TapSink {
    fn check_layout(&self, layout: &StreamLayout) -> Result<()> {
        self.inner.check_layout(layout)
    }

    fn begin(&mut self, layout: &StreamLayout) -> Result<()> {
        self.inner.begin(layout)?;
        if let Ok(mut slot) = self.latest.layout.lock() {
            *slot = Some(layout.clone());
        }
        Ok(())
    }

    fn write(&mut self, frame: &Frame) -> Result<()> {
        self.inner.write(frame)?;
        let due = self.copied.is_none_or(|t| t.elapsed() >= COPY_PERIOD);
        if due
            && self.latest.wanted.load(Ordering::Relaxed)
            && let Ok(mut slot) = self.latest.frame.try_lock()
        {
            *slot = Some(frame.clone());
            self.latest.wanted.store(false, Ordering::Relaxed);
            self.copied = Some(Instant::now());
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        self.inner.finish()
    }
}
