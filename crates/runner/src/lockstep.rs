//! Runs whose device thread moves in step with other processes' (a grid split over MPI ranks,
//! [`crate::split`]): what the worker asks at each frame boundary.
//!
//! Such a run's frames are written collectively, one per frame by every process, and its
//! steps exchange halos with the neighbours: a process that left early, or handed off one
//! frame more than the others, would leave them waiting forever. So every process's device
//! thread votes once after opening its producer and once after each frame, before handing
//! the frame off: a failure anywhere means nobody hands this frame off and every process
//! ends failed; a stop anywhere (a [`crate::StopHandle`], a writer that failed) means every
//! process hands this frame off and ends there. A process that failed keeps producing (its
//! producer joins the exchanges with empty data) until the vote that tells the others.
//!
//! The vote itself is the run shape's ([`FrameAgreement`]); this module knows nothing of MPI.

use std::sync::Arc;

use crate::run_state::RunState;

/// What one process says at a frame boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Vote {
    /// All went well, and no stop was asked for here.
    Go,
    /// A stop was asked for here (user stop).
    Stop,
    /// This process failed (its producer, or its writer).
    Fail,
}

/// What every process said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tally {
    /// The processes (by rank) that voted [`Vote::Fail`].
    pub failed: Vec<usize>,
    /// Whether any process voted [`Vote::Stop`].
    pub stop: bool,
    /// Processes in the vote.
    pub voters: usize,
}

/// A collective vote among the processes of one run: every process calls
/// [`FrameAgreement::agree`] the same number of times, in the same order.
pub(crate) trait FrameAgreement: Send + Sync {
    /// Collective: tells the others `mine` and returns what everyone said.
    fn agree(&self, mine: Vote) -> Tally;
}

/// What the worker does after a vote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Hand the frame off and go on.
    Go,
    /// Hand the frame off, then end the job.
    Last,
    /// Drop the frame and end the job: a process failed.
    Abandon,
}

/// A run in step with other processes: the vote, and the sizes of this process's share.
#[derive(Clone)]
pub(crate) struct Lockstep {
    pub agreement: Arc<dyn FrameAgreement>,
    /// Bytes of this process's part of a frame (what its producer makes and its sink takes).
    pub frame_bytes: usize,
    /// Cells this process computes, for the report's cell-steps.
    pub cells: u64,
}

impl Lockstep {
    /// Votes `failed` or the run's state (a failure recorded here, a user stop) and turns
    /// the tally into what `thread` does next. A stop elsewhere stops this process's handle
    /// too (so its run ends as interrupted); a failure elsewhere is recorded here, naming
    /// the processes that failed.
    pub fn settle(&self, failed: bool, state: &RunState, thread: &str) -> Verdict {
        let mine = if failed || state.has_failed() {
            Vote::Fail
        } else if state.user_stop.is_stopped() {
            Vote::Stop
        } else {
            Vote::Go
        };
        let tally = self.agreement.agree(mine);
        if !tally.failed.is_empty() {
            if mine != Vote::Fail {
                state.fail(
                    thread,
                    format!(
                        "rank(s) {:?} of {} failed (their error is reported there); every rank stopped",
                        tally.failed, tally.voters
                    ),
                );
            }
            return Verdict::Abandon;
        }
        if tally.stop {
            state.user_stop.stop();
            return Verdict::Last;
        }
        Verdict::Go
    }
}
