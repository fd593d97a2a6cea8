//! The process's CPU time (every thread's, user and system), to measure what a run costs the
//! cores beside how long it takes: where the adapter computes on the CPU, compute and the
//! writer's compression threads share the same cores, and the sum of their CPU time over the
//! cores bounds how far async can overlap them (the efficiency bench's "cores' floor").

use std::time::Instant;

use anyhow::{Context, Result};
use nix::sys::resource::{UsageWho, getrusage};
use nix::sys::time::TimeVal;

/// `t` in seconds.
fn seconds(t: TimeVal) -> f64 {
    t.tv_sec() as f64 + t.tv_usec() as f64 * 1e-6
}

/// Seconds of CPU time this process has used so far, all its threads together.
pub fn process_cpu_seconds() -> Result<f64> {
    let usage = getrusage(UsageWho::RUSAGE_SELF).context("reading this process's CPU time (getrusage)")?;
    Ok(seconds(usage.user_time()) + seconds(usage.system_time()))
}

/// Wall and CPU seconds of one timed region, or of several added up.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timed {
    pub wall: f64,
    pub cpu: f64,
}

impl Timed {
    /// Runs `f`, adding the wall and CPU time it took to these.
    pub fn time<T>(&mut self, f: impl FnOnce() -> T) -> Result<T> {
        let (start, cpu) = (Instant::now(), process_cpu_seconds()?);
        let out = f();
        self.cpu += process_cpu_seconds()? - cpu;
        self.wall += start.elapsed().as_secs_f64();
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CPU seconds of the calling thread alone.
    fn thread_cpu_seconds() -> f64 {
        getrusage(UsageWho::RUSAGE_THREAD).map_or(f64::NAN, |u| seconds(u.user_time()))
    }

    /// Spins until this thread has used `seconds` of CPU time.
    fn spin(seconds: f64) {
        let until = thread_cpu_seconds() + seconds;
        let mut x = 0u64;
        while thread_cpu_seconds() < until {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
    }

    #[test]
    fn the_process_counts_every_threads_cpu_time_in_seconds() {
        // A spinner on another thread, joined: its CPU time is final and the process's. (Other
        // tests' threads may add more meanwhile; an error of units, µs read as ms, or a count
        // of the calling thread alone, fails.)
        let before = process_cpu_seconds().unwrap_or(f64::NAN);
        let mut timed = Timed::default();
        let joined = timed.time(|| std::thread::spawn(|| spin(0.15)).join());
        assert!(matches!(joined, Ok(Ok(()))));
        let after = process_cpu_seconds().unwrap_or(f64::NAN);
        assert!(after - before >= 0.15, "a thread's 0.15 s of CPU counted {} s", after - before);
        assert!(timed.cpu >= 0.15 && timed.cpu < 10.0, "{timed:?}");
        assert!(timed.wall > 0.0 && timed.wall < 10.0, "{timed:?}");
    }
}
