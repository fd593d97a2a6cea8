//! State shared by every thread of a run: the stop flags and the failures seen so far.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::failure::{Failure, FailureKind};

/// Stops a running pipeline from another thread (a Ctrl-C handler, a UI): devices finish the
/// frame in hand, the frames already produced are written, the output is closed, and the run
/// returns [`crate::Error::Interrupted`].
#[derive(Debug, Clone, Default)]
pub struct StopHandle(Arc<AtomicBool>);

impl StopHandle {
    /// Asks the run to stop.
    pub fn stop(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether a stop was asked for.
    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Flags and failures of one run.
#[derive(Debug, Default)]
pub(crate) struct RunState {
    pub user_stop: StopHandle,
    failed: AtomicBool,
    failures: Mutex<Vec<Failure>>,
}

impl RunState {
    pub fn new(user_stop: StopHandle) -> Self {
        RunState { user_stop, ..Default::default() }
    }

    /// Whether devices should stop producing: a user stop, or a failure that ends the run.
    pub fn should_stop(&self) -> bool {
        self.user_stop.is_stopped() || self.failed.load(Ordering::Relaxed)
    }

    /// Whether a failure ended the whole run ([`RunState::fail`]).
    pub fn has_failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Records a failure that ends the whole run (the sink is broken, a thread panicked).
    pub fn fail(&self, thread: &str, message: String) {
        self.fail_as(thread, message, FailureKind::Other);
    }

    /// [`RunState::fail`] for the sink's `error` (`context`: what was being done, if not a
    /// write), kept whole so that the caller of the run can match it.
    pub fn fail_storing(&self, thread: &str, context: Option<&str>, error: wgpipe_storage::Error) {
        let message = match context {
            Some(doing) => format!("{doing}: {error}"),
            None => error.to_string(),
        };
        self.fail_as(thread, message, FailureKind::of_storage(Arc::new(error)));
    }

    fn fail_as(&self, thread: &str, message: String, kind: FailureKind) {
        self.push(Failure { thread: thread.to_owned(), message, kind });
        self.failed.store(true, Ordering::Relaxed);
    }

    /// Records a failure that ends only the thread that saw it (one device lost), with the
    /// device's error in `kind` where it has one.
    pub fn record(&self, thread: &str, message: String, kind: FailureKind) {
        self.push(Failure { thread: thread.to_owned(), message, kind });
    }

    fn push(&self, failure: Failure) {
        self.failures.lock().unwrap_or_else(PoisonError::into_inner).push(failure);
    }

    pub fn take_failures(&self) -> Vec<Failure> {
        std::mem::take(&mut *self.failures.lock().unwrap_or_else(PoisonError::into_inner))
    }
}
