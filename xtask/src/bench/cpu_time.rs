//! The process's CPU time (every thread's, user and system), to measure what a run costs the
//! cores beside how long it takes: where the adapter computes on the CPU, compute and the
//! writer's compression threads share the same cores, and the sum of their CPU time over the
//! cores bounds how far async can overlap them (the efficiency bench's "cores' floor").

use anyhow::{Context, Result};
use nix::sys::resource::{UsageWho, getrusage};

/// Seconds of CPU time this process has used so far, all its threads together.
pub fn process_cpu_seconds() -> Result<f64> {
    let usage = getrusage(UsageWho::RUSAGE_SELF).context("reading this process's CPU time (getrusage)")?;
    let seconds = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 * 1e-6;
    Ok(seconds(usage.user_time()) + seconds(usage.system_time()))
}

/// Wall and CPU seconds of one timed region.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timed {
    pub wall: f64,
    pub cpu: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_loop_counts_its_cpu_time_in_seconds() {
        // Other tests' threads may add CPU time meanwhile, never more than the other cores';
        // other processes may take some of this thread's. A unit error (µs as ms) fails.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let before = process_cpu_seconds().unwrap_or(f64::NAN);
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed().as_millis() < 200 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let wall = start.elapsed().as_secs_f64();
        let busy = process_cpu_seconds().unwrap_or(f64::NAN) - before;
        assert!(busy > 0.25 * wall && busy < cores * wall + 0.05, "{wall} s of spinning counted {busy} s of CPU");
    }
}
