//! What the soak watches, read from `/proc/self`: resident memory (`VmRSS` in `status`) and
//! open descriptors (the entries of `fd`), sampled by a thread while a run goes on.

use std::sync::Arc;
use std::sync::mpsc::{RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};
use wgpipe::Progress;

/// Time between two samples.
pub const PERIOD: Duration = Duration::from_millis(10);

/// One sample: how far the run was and what the process held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// Frames written when the sample was taken.
    pub frames: u64,
    /// Resident set size, KiB.
    pub rss_kib: u64,
    /// Open descriptors.
    pub fds: usize,
}

/// Resident set size of this process in KiB (`VmRSS` of `/proc/self/status`).
pub fn rss_kib() -> Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status").context("cannot read /proc/self/status (Linux only)")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
        .context("no VmRSS line in /proc/self/status")
}

/// Descriptors open in this process, not counting the one used to list them.
pub fn open_fds() -> Result<usize> {
    let entries = std::fs::read_dir("/proc/self/fd").context("cannot list /proc/self/fd (Linux only)")?;
    Ok(entries.count().saturating_sub(1))
}

/// Both at once, at `frames` frames written.
pub fn now(frames: u64) -> Result<Sample> {
    Ok(Sample { frames, rss_kib: rss_kib()?, fds: open_fds()? })
}

/// A thread sampling every [`PERIOD`] until [`Sampler::finish`].
pub struct Sampler {
    stop: Sender<()>,
    thread: JoinHandle<Result<Vec<Sample>>>,
}

impl Sampler {
    /// Starts sampling, reading the frames written from `progress`.
    pub fn start(progress: Arc<Progress>) -> Result<Self> {
        let (stop, rx) = channel();
        let thread = std::thread::Builder::new()
            .name("soak-sampler".to_owned())
            .spawn(move || -> Result<Vec<Sample>> {
                let mut samples = Vec::new();
                loop {
                    samples.push(now(progress.snapshot().written)?);
                    match rx.recv_timeout(PERIOD) {
                        Err(RecvTimeoutError::Timeout) => {}
                        _ => return Ok(samples),
                    }
                }
            })
            .context("cannot start the sampling thread")?;
        Ok(Sampler { stop, thread })
    }

    /// Stops sampling and returns the samples, oldest first.
    pub fn finish(self) -> Result<Vec<Sample>> {
        let _ = self.stop.send(());
        self.thread.join().map_err(|_| anyhow::anyhow!("the sampling thread panicked"))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sees_memory_and_descriptors_come_and_go() -> Result<()> {
        // Other tests of this binary run in parallel threads and open files too, so one
        // attempt can see their descriptors come and go: the count must follow ours in one of
        // a few attempts (a counter that ignored descriptors would fail them all).
        let mut seen = Vec::new();
        for _ in 0..20 {
            let before = open_fds()?;
            let file = std::fs::File::open("/proc/self/status")?;
            let during = open_fds()?;
            drop(file);
            let after = open_fds()?;
            seen.push((before, during, after));
            if during == before + 1 && after == before {
                break;
            }
        }
        assert!(seen.iter().any(|&(b, d, a)| d == b + 1 && a == b), "descriptor counts {seen:?}");
        // The same for memory: a parallel test freeing its own memory between the two reads
        // can hide our 64 MiB in one attempt (seen once in a whole workspace run).
        let mut grew = Vec::new();
        for _ in 0..5 {
            let rss = rss_kib()?;
            let block = vec![1u8; 64 << 20];
            let grown = rss_kib()?;
            drop(std::hint::black_box(block));
            grew.push((rss, grown));
            if grown >= rss + 60 * 1024 {
                break;
            }
        }
        assert!(grew.iter().any(|&(rss, grown)| grown >= rss + 60 * 1024), "64 MiB touched: RSS KiB {grew:?}");
        Ok(())
    }
}
