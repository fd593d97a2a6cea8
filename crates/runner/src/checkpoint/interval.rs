//! Choosing the checkpoint interval: Young's formula (Daly's first-order optimum).
//!
//! With checkpoints costing δ seconds and failures arriving every M seconds on average, the
//! interval τ = sqrt(2 δ M) minimises the expected time lost: checkpoint time (δ per τ)
//! plus recomputation after a failure (τ/2 on average). In frames, τ over the time per frame.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::Interval;

/// Frames between checkpoints for a checkpoint cost `cost`, a time per frame `frame` and a
/// mean time between failures `mtbf`: Young's interval rounded to whole frames, at least 1.
pub fn young_daly_frames(cost: Duration, frame: Duration, mtbf: Duration) -> u64 {
    let tau = (2.0 * cost.as_secs_f64() * mtbf.as_secs_f64()).sqrt();
    let frames = tau / frame.as_secs_f64().max(1e-9);
    if frames.is_finite() { (frames.round() as u64).max(1) } else { u64::MAX }
}

/// The measured cost of a checkpoint, shared by the writer (which measures it) and the
/// device threads (which then choose their interval).
#[derive(Debug, Default)]
pub(crate) struct AutoInterval {
    /// Nanoseconds the first checkpoint took to write; 0 until it is written.
    cost_nanos: AtomicU64,
}

impl AutoInterval {
    /// Records what writing a checkpoint took (the first one measured counts).
    pub fn measured(&self, took: Duration) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX).max(1);
        let _ = self.cost_nanos.compare_exchange(0, nanos, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// The cost of a checkpoint, once one was written.
    pub fn cost(&self) -> Option<Duration> {
        match self.cost_nanos.load(Ordering::Relaxed) {
            0 => None,
            n => Some(Duration::from_nanos(n)),
        }
    }
}

/// One stream's checkpoint interval on its device thread: fixed, or for `Auto` one checkpoint
/// with the first frame (whose cost the writer measures), none while the time per frame is
/// measured over the next frames, then Young's interval.
pub(crate) struct Schedule {
    interval: Interval,
    auto: Arc<AutoInterval>,
    /// When the first frame came back, and frames since.
    timing: Option<(Instant, u64)>,
    chosen: Option<u64>,
}

/// Frames timed before the auto interval is chosen.
const TIMED_FRAMES: u64 = 2;

impl Schedule {
    pub fn new(interval: Interval, auto: Arc<AutoInterval>) -> Self {
        Schedule { interval, auto, timing: None, chosen: None }
    }

    /// The interval to start with: the fixed one, or `None` for `Auto`, which saves a state
    /// with the first frame only (the measurement) until it knows its interval.
    pub fn initial(&self) -> Option<u64> {
        match self.interval {
            Interval::Every(n) => Some(n),
            Interval::Auto { .. } => None,
        }
    }

    /// Called after each frame came back; a new interval to apply, if it changes.
    pub fn after_frame(&mut self) -> Option<u64> {
        let Interval::Auto { mtbf_seconds } = self.interval else { return None };
        let Some((first, frames)) = &mut self.timing else {
            self.timing = Some((Instant::now(), 0));
            return None;
        };
        *frames += 1;
        if self.chosen.is_some() || *frames < TIMED_FRAMES {
            return None;
        }
        let cost = self.auto.cost()?;
        let period = first.elapsed() / u32::try_from(*frames).unwrap_or(u32::MAX);
        let n = young_daly_frames(cost, period, Duration::from_secs_f64(mtbf_seconds));
        self.chosen = Some(n);
        Some(n)
    }

    /// The interval `Auto` chose, once chosen.
    pub fn chosen(&self) -> Option<u64> {
        self.chosen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn young_daly_in_frames() {
        let ms = Duration::from_millis;
        // δ = 50 ms, M = 1 h: τ = sqrt(2 · 0.05 · 3600) = 18.97 s, at 100 ms a frame 190 frames.
        assert_eq!(young_daly_frames(ms(50), ms(100), Duration::from_secs(3600)), 190);
        // Never 0, and a free frame does not divide by zero.
        assert_eq!(young_daly_frames(ms(0), ms(100), Duration::from_secs(3600)), 1);
        assert!(young_daly_frames(ms(5), Duration::ZERO, Duration::from_secs(60)) > 1_000_000);
    }
}
