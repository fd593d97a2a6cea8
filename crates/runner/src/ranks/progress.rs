//! Every rank's progress, gathered across the ranks of an MPI job while they run.
//!
//! Each rank's pipeline counts frames in its own sharded counters ([`Progress`]); a thread on
//! every rank gathers them at a fixed period (never per frame), on a communicator of its
//! own. The gathers pair up across ranks by their order, so every rank keeps gathering until
//! every rank's run has ended.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::Duration;

use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives};

use crate::progress::Progress;

/// One rank's counts at a gather.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankCounts {
    /// Frames its sink wrote.
    pub written: u64,
    /// Frames its run writes in all.
    pub total: u64,
    /// Frames its devices computed.
    pub computed: u64,
    /// Whether its run has ended.
    pub finished: bool,
}

/// Counters gathered per rank: [`RankCounts`]'s, in order.
const COUNTERS: usize = 4;

/// The thread that gathers every rank's [`RankCounts`]; [`ProgressGather::finish`] ends it
/// once every rank has finished.
#[derive(Debug)]
pub struct ProgressGather {
    done: Sender<()>,
    thread: Option<JoinHandle<()>>,
}

impl ProgressGather {
    /// Starts gathering `progress` over `comm` (a communicator for this thread alone) every
    /// `period`; `show` is called with every rank's counts, in rank order, after each gather.
    pub fn start(
        comm: SimpleCommunicator,
        progress: Arc<Progress>,
        period: Duration,
        show: impl FnMut(&[RankCounts]) + Send + 'static,
    ) -> Self {
        let (done, rx) = channel();
        let thread = std::thread::Builder::new()
            .name("wgpipe-mpi-progress".to_owned())
            .spawn(move || gather_loop(&comm, &progress, period, &rx, show))
            .ok();
        ProgressGather { done, thread }
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
    period: Duration,
    rx: &Receiver<()>,
    mut show: impl FnMut(&[RankCounts]),
) {
    let ranks = comm.size().max(1) as usize;
    let mut finished = false;
    loop {
        if finished {
            std::thread::sleep(period.min(Duration::from_millis(200)));
        } else {
            finished = !matches!(rx.recv_timeout(period), Err(RecvTimeoutError::Timeout));
        }
        let s = progress.snapshot();
        let mine = [s.written, s.total_frames, s.computed, u64::from(finished)];
        let mut all = vec![0u64; ranks * COUNTERS];
        comm.all_gather_into(&mine[..], &mut all[..]);
        let counts: Vec<RankCounts> = all
            .chunks(COUNTERS)
            .map(|c| RankCounts { written: c[0], total: c[1], computed: c[2], finished: c[3] == 1 })
            .collect();
        show(&counts);
        if counts.iter().all(|c| c.finished) {
            break;
        }
    }
}
