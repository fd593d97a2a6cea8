//! Progress of an MPI job, shown by rank 0 for every rank.
//!
//! Each rank's pipeline counts frames in its own sharded counters; a thread on every rank
//! gathers them across ranks at a fixed period (never per frame), on a communicator of its
//! own. The gathers pair up across ranks by their order, so every rank keeps gathering until
//! every rank's run has ended.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use wgpipe::Progress;
use wgpipe::storage::mpi::topology::SimpleCommunicator;
use wgpipe::storage::mpi::traits::{Communicator, CommunicatorCollectives};

use crate::progress::ProgressMode;

/// Counters gathered per rank: written, total, computed, finished (0/1).
const COUNTERS: usize = 4;

/// The gathering thread; [`Reporter::finish`] ends it once every rank has finished.
pub struct Reporter {
    done: std::sync::mpsc::Sender<()>,
    thread: Option<JoinHandle<()>>,
}

impl Reporter {
    /// Starts gathering `progress` over `comm` (a communicator for this thread alone).
    pub fn start(comm: SimpleCommunicator, progress: Arc<Progress>, mode: ProgressMode) -> Self {
        let (done, rx) = channel();
        let period = match mode {
            ProgressMode::Frames => Duration::from_millis(200),
            _ => Duration::from_secs(2),
        };
        let thread = std::thread::Builder::new()
            .name("wgpipe-mpi-progress".to_owned())
            .spawn(move || gather_loop(&comm, &progress, mode, period, &rx))
            .ok();
        Reporter { done, thread }
    }

    /// Says this rank's run has ended and waits until every rank's has (collective).
    pub fn finish(mut self) {
        let _ = self.done.send(());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn gather_loop(
    comm: &SimpleCommunicator,
    progress: &Progress,
    mode: ProgressMode,
    period: Duration,
    rx: &Receiver<()>,
) {
    let ranks = comm.size().max(1) as usize;
    let show = comm.rank() == 0 && mode != ProgressMode::None;
    let start = Instant::now();
    let mut finished = false;
    let mut shown = None;
    loop {
        if !finished {
            finished = !matches!(rx.recv_timeout(period), Err(RecvTimeoutError::Timeout));
        } else {
            std::thread::sleep(period.min(Duration::from_millis(200)));
        }
        let s = progress.snapshot();
        let mine = [s.written, s.total_frames, s.computed, u64::from(finished)];
        let mut all = vec![0u64; ranks * COUNTERS];
        comm.all_gather_into(&mine[..], &mut all[..]);
        let per_rank: Vec<&[u64]> = all.chunks(COUNTERS).collect();
        let all_done = per_rank.iter().all(|c| c[3] == 1);
        let written: u64 = per_rank.iter().map(|c| c[0]).sum();
        let total: u64 = per_rank.iter().map(|c| c[1]).sum();
        if show && (mode != ProgressMode::Frames || shown != Some(written)) {
            let ranks_text: Vec<String> = per_rank.iter().map(|c| format!("{}/{}", c[0], c[1])).collect();
            match mode {
                ProgressMode::Frames => say!("written {written}/{total} frames"),
                _ => say!(
                    "[{:>6.1} s] written {written}/{total} frames (per rank: {})",
                    start.elapsed().as_secs_f64(),
                    ranks_text.join(", ")
                ),
            }
            shown = Some(written);
        }
        if all_done {
            break;
        }
    }
}
