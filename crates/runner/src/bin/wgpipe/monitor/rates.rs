//! The rates the live view shows, averaged over a window that spans several frames.
//!
//! Why not the interval since the previous request: a run that writes a frame a second,
//! asked twice a second, had written nothing in every other interval and showed 0 frames/s.
//! The window here reaches back until it holds [`MIN_FRAMES`] written frames and lasts at
//! least [`MIN_SPAN`] (early in a run: back to the start), and it ends now, so a run that
//! stops writing shows its rates falling instead of the last good value forever.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use wgpipe::ProgressSnapshot;

/// Frames written that a window spans, once the run has written that many.
pub const MIN_FRAMES: u64 = 5;
/// Shortest window: a fast run's rates over two seconds, not over its last five frames.
pub const MIN_SPAN: Duration = Duration::from_secs(2);
/// Most samples kept, whatever the run does (one per poll at most, see [`Window::record`]).
const MAX_SAMPLES: usize = 4096;

/// The counters as they were at some moments, oldest first: enough to find a window's start.
pub struct Window {
    samples: VecDeque<(Instant, ProgressSnapshot)>,
}

/// Where a window starts: the counters then, and how long ago that was.
pub struct Start<'a> {
    pub counters: &'a ProgressSnapshot,
    pub seconds: f64,
}

impl Window {
    /// A window that starts with the run: `counters` at `at`.
    pub fn new(at: Instant, counters: ProgressSnapshot) -> Self {
        Window { samples: VecDeque::from([(at, counters)]) }
    }

    /// Keeps `counters`, taken at `at`, if they differ from the newest sample, and forgets
    /// the samples no window will start at any more: every one older than the newest that
    /// could start a window now (a later window can only start later).
    pub fn record(&mut self, at: Instant, counters: ProgressSnapshot) {
        let changed = self.samples.back().is_none_or(|(_, last)| !same_counts(last, &counters));
        if changed {
            self.samples.push_back((at, counters));
        }
        let Some((_, newest)) = self.samples.back() else { return };
        let written = newest.written;
        while self.samples.len() > 2 && starts_window(&self.samples[1], at, written) {
            self.samples.pop_front();
        }
        while self.samples.len() > MAX_SAMPLES {
            self.samples.pop_front();
        }
    }

    /// The start of the window that ends at `at` with `written` frames written: the newest
    /// sample at least [`MIN_SPAN`] and [`MIN_FRAMES`] back, else the oldest one.
    pub fn start(&self, at: Instant, written: u64) -> Option<Start<'_>> {
        let (then, counters) =
            self.samples.iter().rev().find(|s| starts_window(s, at, written)).or_else(|| self.samples.front())?;
        Some(Start { counters, seconds: at.saturating_duration_since(*then).as_secs_f64() })
    }
}

/// Whether `sample` lies far enough back, from `at` with `written` frames, to start a window.
fn starts_window((then, counters): &(Instant, ProgressSnapshot), at: Instant, written: u64) -> bool {
    at.saturating_duration_since(*then) >= MIN_SPAN && written.saturating_sub(counters.written) >= MIN_FRAMES
}

/// The counts the rates are made of.
fn same_counts(a: &ProgressSnapshot, b: &ProgressSnapshot) -> bool {
    (a.written, a.computed, a.bytes) == (b.written, b.computed, b.bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(written: u64) -> ProgressSnapshot {
        ProgressSnapshot { written, computed: written, bytes: written * 1000, ..ProgressSnapshot::default() }
    }

    fn rate(w: &Window, at: Instant, written: u64) -> f64 {
        let start = w.start(at, written).map(|s| (s.counters.written, s.seconds)).unwrap_or_default();
        (written - start.0) as f64 / start.1
    }

    /// A frame a second, asked every 100 ms: never 0 between frames, 1 frame/s within the
    /// error of a window that ends between two frames.
    #[test]
    fn a_frame_a_second_reads_about_one_frame_a_second_between_frames_too() {
        let t0 = Instant::now();
        let mut w = Window::new(t0, counts(0));
        for tenth in 1..=300u64 {
            let at = t0 + Duration::from_millis(100 * tenth);
            let written = tenth / 10;
            w.record(at, counts(written));
            if tenth >= 10 {
                let r = rate(&w, at, written);
                assert!((0.5..=1.0 + 1e-9).contains(&r), "{r} frames/s at {tenth} tenths");
            }
            if tenth >= 100 {
                let r = rate(&w, at, written);
                assert!(r >= 5.0 / 6.0 - 1e-9, "{r} frames/s at {tenth} tenths: the window spans 5 frames");
            }
        }
        assert!(w.samples.len() <= 8, "{} samples kept", w.samples.len());
    }

    /// A fast run: the window is two seconds, not five frames, and keeps few samples.
    #[test]
    fn a_fast_run_is_averaged_over_two_seconds() {
        let t0 = Instant::now();
        let mut w = Window::new(t0, counts(0));
        for ms in (10..=10_000u64).step_by(10) {
            w.record(t0 + Duration::from_millis(ms), counts(ms / 10));
        }
        let at = t0 + Duration::from_millis(10_000);
        let start = w.start(at, 1000).map(|s| s.seconds).unwrap_or_default();
        assert!((2.0..2.1).contains(&start), "window of {start} s");
        assert!((rate(&w, at, 1000) - 100.0).abs() < 1e-6);
        assert!(w.samples.len() <= 205, "{} samples kept", w.samples.len());
    }

    /// A run that stops writing: its rates fall, the samples stay few.
    #[test]
    fn a_stalled_run_reads_ever_lower_rates() {
        let t0 = Instant::now();
        let mut w = Window::new(t0, counts(0));
        for s in 1..=20u64 {
            w.record(t0 + Duration::from_secs(s), counts(s));
        }
        let mut last = f64::INFINITY;
        for s in 21..=100u64 {
            let at = t0 + Duration::from_secs(s);
            w.record(at, counts(20));
            let r = rate(&w, at, 20);
            assert!(r < last && r > 0.0, "{r} after {last}");
            last = r;
        }
        assert!(w.samples.len() <= 7, "{} samples kept", w.samples.len());
    }
}
