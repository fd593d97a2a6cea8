//! Optional timeline of a run: what each thread did when, for Chrome's trace viewer and
//! Perfetto, to see compute and I/O overlap (or fail to). This module records the spans;
//! [`crate::chrome_trace`] writes a finished run's spans out.
//!
//! Each thread records into its own vector (no sharing, no locks); the vectors come back in
//! the thread's report when it ends. Recording is off unless asked for
//! ([`crate::PipelineBuilder::trace`]) and costs one branch per span when off.

use std::time::{Duration, Instant};

/// What a span of a thread's time was spent on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpanKind {
    /// Device thread: waiting for the GPU to finish a frame's steps.
    Compute,
    /// Device thread: copying a mapped frame out of the staging buffer, hashing it as it goes.
    Readback,
    /// Device thread: blocked handing a frame to a full channel (backpressure).
    Blocked,
    /// Writer (or device thread in sync mode): inside the sink's `write`.
    Write,
    /// Writer thread: waiting for the next frame.
    Wait,
}

impl SpanKind {
    /// Lower-case name used in trace files.
    pub fn name(self) -> &'static str {
        match self {
            SpanKind::Compute => "compute",
            SpanKind::Readback => "readback",
            SpanKind::Blocked => "blocked-on-send",
            SpanKind::Write => "write",
            SpanKind::Wait => "wait",
        }
    }
}

/// One interval of one thread's time, relative to the start of the run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    /// What the time went to.
    pub kind: SpanKind,
    /// Start, from the start of the run.
    pub start: Duration,
    /// Length.
    pub duration: Duration,
}

/// A thread's recorder.
#[derive(Debug, Clone)]
pub(crate) struct Recorder {
    origin: Instant,
    spans: Option<Vec<Span>>,
}

impl Recorder {
    pub fn new(origin: Instant, enabled: bool) -> Self {
        Recorder { origin, spans: enabled.then(Vec::new) }
    }

    /// Records a span that ended now and lasted `duration`.
    #[inline]
    pub fn ended_now(&mut self, kind: SpanKind, duration: Duration) {
        if let Some(spans) = &mut self.spans {
            let start = self.origin.elapsed().saturating_sub(duration);
            spans.push(Span { kind, start, duration });
        }
    }

    /// Records a span from `start` lasting `duration`.
    #[inline]
    pub fn at(&mut self, kind: SpanKind, start: Instant, duration: Duration) {
        if let Some(spans) = &mut self.spans {
            spans.push(Span { kind, start: start.saturating_duration_since(self.origin), duration });
        }
    }

    pub fn into_spans(self) -> Vec<Span> {
        self.spans.unwrap_or_default()
    }
}
